/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Queue pairs and posting.
 *
 * A QP is put in INIT at once (port 1, the only port of the devices we
 * meet; the handshake corrects it with rdma_cm's attributes), because the
 * contract lets receives be posted before the connection exists.
 *
 * Work requests posted in ERROR (the drain markers) are followed by one
 * more transition to ERROR: rxe on Linux 6.1 flushes the receive queue
 * only when its responder runs, and posting a receive does not run it.
 */
#include "fabric/verbs/v.h"
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define V_MAX_SGE    64
#define V_INLINE_ASK 64

static void release_windows(struct v_qp *qp);

static int cq_reserve(struct v_cq *c, int64_t slots)
{
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	if (slots > 0 && c->base.depth - c->reserved < (uint64_t)slots)
		rc = -ENOSPC;
	else
		c->reserved = (uint32_t)((int64_t)c->reserved + slots);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int reserve(const struct rr_qp_attr *a)
{
	struct v_cq *s = to_v_cq(a->send_cq), *r = to_v_cq(a->recv_cq);
	int rc = cq_reserve(s, a->sq_depth);

	if (!rc) {
		rc = cq_reserve(r, a->rq_depth);
		if (rc)
			cq_reserve(s, -(int64_t)a->sq_depth);
	}
	return rc;
}

static void unreserve(const struct rr_qp_attr *a)
{
	cq_reserve(to_v_cq(a->send_cq), -(int64_t)a->sq_depth);
	cq_reserve(to_v_cq(a->recv_cq), -(int64_t)a->rq_depth);
}

static struct ibv_qp *make_qp(struct v_pd *pd, const struct rr_qp_attr *a,
			      uint32_t *inline_out)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = to_v_cq(a->send_cq)->cq,
		.recv_cq = to_v_cq(a->recv_cq)->cq,
		.cap = {.max_send_wr = a->sq_depth,
			.max_recv_wr = a->rq_depth,
			.max_send_sge = a->max_send_sge,
			.max_recv_sge = a->max_recv_sge,
			.max_inline_data = V_INLINE_ASK},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *q = ibv_create_qp(pd->pd, &ia);

	if (!q) { /* inline is an optimisation: do without it */
		ia.cap.max_inline_data = 0;
		q = ibv_create_qp(pd->pd, &ia);
	}
	if (q)
		*inline_out = ia.cap.max_inline_data;
	return q;
}

static int to_init(struct ibv_qp *q)
{
	struct ibv_qp_attr at = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags =
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
	};

	return rr__v_ibv_rc(ibv_modify_qp(q, &at,
					  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						  IBV_QP_PORT |
						  IBV_QP_ACCESS_FLAGS));
}

static void qp_free(struct v_qp *qp)
{
	rr__v_ring_fini(&qp->sq);
	rr__v_ring_fini(&qp->rq);
	free(qp);
}

int rr__v_qp_create(struct rr_pd *pd, const struct rr_qp_attr *a,
		    struct rr_qp **out)
{
	struct v_qp *qp = rr_calloc(1, sizeof(*qp));
	int rc;

	if (!qp)
		return -ENOMEM;
	rc = rr__v_ring_init(&qp->sq, a->sq_depth);
	if (!rc)
		rc = rr__v_ring_init(&qp->rq, a->rq_depth);
	if (!rc)
		rc = reserve(a);
	if (rc) {
		qp_free(qp);
		return rc;
	}
	qp->qp = make_qp(to_v_pd(pd), a, &qp->max_inline);
	rc = rr__v_ptr_rc(qp->qp);
	if (!rc && (rc = to_init(qp->qp)))
		ibv_destroy_qp(qp->qp);
	if (rc) {
		unreserve(a);
		qp_free(qp);
		return rc;
	}
	qp->kind = V_QP;
	qp->dev = to_v_dev(pd->dev);
	qp->evch = to_v_evch(a->evch);
	pthread_mutex_init(&qp->mu, NULL);
	atomic_init(&qp->state, RR_QPS_INIT);
	atomic_init(&qp->down, false);
	qp->base.pd = pd;
	qp->base.attr = *a;
	rr__v_cq_watch(to_v_cq(a->send_cq), qp->evch, true);
	rr__v_cq_watch(to_v_cq(a->recv_cq), qp->evch, true);
	*out = &qp->base;
	return 0;
}

int rr__v_qp_destroy(struct rr_qp *q)
{
	struct v_qp *qp = to_v_qp(q);
	struct v_cq *s = to_v_cq(q->attr.send_cq),
		    *r = to_v_cq(q->attr.recv_cq);
	int rc;

	/* the id first: it tells the peer, and takes pending events along */
	if (qp->id)
		rdma_destroy_id(qp->id);
	qp->id = NULL;
	pthread_mutex_lock(&qp->mu);
	release_windows(qp);
	pthread_mutex_unlock(&qp->mu);
	rc = rr__v_ibv_rc(ibv_destroy_qp(qp->qp));
	if (rc)
		return rc;
	rr__v_cq_purge(s, qp);
	if (r != s)
		rr__v_cq_purge(r, qp);
	rr__v_evch_purge(qp->evch, qp);
	unreserve(&q->attr);
	rr__v_cq_watch(s, qp->evch, false);
	rr__v_cq_watch(r, qp->evch, false);
	pthread_mutex_destroy(&qp->mu);
	qp_free(qp);
	return 0;
}

static void rings_reset(struct v_qp *qp)
{
	struct v_cq *s = to_v_cq(qp->base.attr.send_cq),
		    *r = to_v_cq(qp->base.attr.recv_cq);

	pthread_mutex_lock(&s->mu);
	rr__v_ring_reset(&qp->sq);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&r->mu);
	rr__v_ring_reset(&qp->rq);
	pthread_mutex_unlock(&r->mu);
}

/*
 * rr_qp_reset, the honest fallback: a device QP in ERROR does not go back
 * to a state rdma_cm can connect again (its id belongs to the old
 * connection), so the device QP is replaced, and connect makes a new id;
 * rdma-core allocates both, as it does for the windows release_windows
 * replaces. What is ours (this wrapper, its rings) is kept. The new device
 * QP is made first: if that fails the old one stays, in ERROR, and the
 * reset may be tried again.
 */
int rr__v_qp_reset(struct rr_qp *q)
{
	struct v_qp *qp = to_v_qp(q);
	struct v_cq *s = to_v_cq(q->attr.send_cq);
	struct v_cq *r = to_v_cq(q->attr.recv_cq);
	uint32_t inl = 0;
	struct ibv_qp *fresh = make_qp(to_v_pd(q->pd), &q->attr, &inl);
	int rc = rr__v_ptr_rc(fresh);

	if (!rc && (rc = to_init(fresh)))
		ibv_destroy_qp(fresh);
	if (rc)
		return rc;
	if (qp->id)
		rdma_destroy_id(qp->id);
	qp->id = NULL;
	pthread_mutex_lock(&qp->mu);
	atomic_store(&qp->state, RR_QPS_ERROR);
	release_windows(qp);
	pthread_mutex_unlock(&qp->mu);
	rc = rr__v_ibv_rc(ibv_destroy_qp(qp->qp));
	if (rc) {
		ibv_destroy_qp(fresh);
		return rc;
	}
	rr__v_cq_purge(s, qp);
	if (r != s)
		rr__v_cq_purge(r, qp);
	rr__v_evch_purge(qp->evch, qp);
	pthread_mutex_lock(&qp->mu);
	qp->qp = fresh;
	qp->max_inline = inl;
	qp->pdata_len = 0;
	rings_reset(qp);
	atomic_store(&qp->sq_drained, false);
	atomic_store(&qp->rq_drained, false);
	atomic_store(&qp->down, false);
	atomic_store(&qp->state, RR_QPS_INIT);
	pthread_mutex_unlock(&qp->mu);
	return 0;
}

enum rr_qp_state rr__v_qp_state(const struct rr_qp *q)
{
	return (enum rr_qp_state)atomic_load(
		&to_v_qp((struct rr_qp *)q)->state);
}

int rr__v_qp_to_error(struct v_qp *qp)
{
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};

	return rr__v_ibv_rc(ibv_modify_qp(qp->qp, &at, IBV_QP_STATE));
}

/* One step of the handshake with the attributes rdma_cm computed. */
int rr__v_qp_modify_cm(struct v_qp *qp, enum ibv_qp_state to, int rd_atomic)
{
	struct ibv_qp_attr at = {.qp_state = to};
	int mask = 0, rc;

	rc = rr__v_cm_rc(rdma_init_qp_attr(qp->id, &at, &mask));
	if (rc)
		return rc;
	if (to == IBV_QPS_RTR)
		at.max_dest_rd_atomic = (uint8_t)rd_atomic;
	if (to == IBV_QPS_RTS)
		at.max_rd_atomic = (uint8_t)rd_atomic;
	rc = rr__v_ibv_rc(ibv_modify_qp(qp->qp, &at, mask));
	V_TRACE("qp %u -> %d rc %d mask %#x access %#x rd_atomic %u/%u\n",
		getpid(), qp->qp->qp_num, to, rc, mask, at.qp_access_flags,
		at.max_rd_atomic, at.max_dest_rd_atomic);
	return rc;
}

/* ----------------------------------------------------------------- posting */

static uint32_t sge_copy(struct ibv_sge *dst, const struct rr_sge *src,
			 uint32_t n)
{
	uint32_t total = 0;

	for (uint32_t i = 0; i < n; i++) {
		dst[i] = (struct ibv_sge){src[i].addr, src[i].length,
					  src[i].lkey};
		total += src[i].length;
	}
	return total;
}

static int fill_reg(struct ibv_send_wr *w, const struct rr_send_wr *wr,
		    uint32_t *rkey)
{
	struct v_mw *mw = (struct v_mw *)wr->reg.mw;
	unsigned acc = wr->reg.access;

	if (!mw || !mw->mw || !wr->reg.mr ||
	    (acc & ~(RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE)))
		return -EINVAL;
	*rkey = ibv_inc_rkey(mw->base.rkey);
	w->opcode = IBV_WR_BIND_MW;
	w->bind_mw.mw = mw->mw;
	w->bind_mw.rkey = *rkey;
	w->bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = ((struct v_mr *)wr->reg.mr)->mr,
		.addr = wr->reg.addr,
		.length = wr->reg.length,
		.mw_access_flags =
			((acc & RR_ACCESS_REMOTE_READ) ? IBV_ACCESS_REMOTE_READ
						       : 0) |
			((acc & RR_ACCESS_REMOTE_WRITE)
				 ? IBV_ACCESS_REMOTE_WRITE
				 : 0),
	};
	return 0;
}

static int fill_send(struct v_qp *qp, struct ibv_send_wr *w,
		     const struct rr_send_wr *wr, uint32_t total,
		     uint32_t *rkey)
{
	static const enum ibv_wr_opcode ops[] = {
		[RR_WR_SEND] = IBV_WR_SEND,
		[RR_WR_SEND_WITH_INV] = IBV_WR_SEND_WITH_INV,
		[RR_WR_RDMA_WRITE] = IBV_WR_RDMA_WRITE,
		[RR_WR_RDMA_READ] = IBV_WR_RDMA_READ,
		[RR_WR_LOCAL_INV] = IBV_WR_LOCAL_INV,
	};
	bool swi = wr->opcode == RR_WR_SEND_WITH_INV;
	bool quirks = to_v_dev(qp->base.pd->dev)->swi_quirks;

	if (wr->flags & RR_SEND_SIGNALED)
		w->send_flags |= IBV_SEND_SIGNALED;
	if (wr->flags & RR_SEND_SOLICITED)
		w->send_flags |= IBV_SEND_SOLICITED;
	if (wr->opcode == RR_WR_REG)
		return fill_reg(w, wr, rkey);
	if ((unsigned)wr->opcode > RR_WR_LOCAL_INV)
		return -EINVAL;
	w->opcode = ops[wr->opcode];
	if (wr->opcode == RR_WR_RDMA_WRITE || wr->opcode == RR_WR_RDMA_READ) {
		w->wr.rdma.remote_addr = wr->rdma.remote_addr;
		w->wr.rdma.rkey = wr->rdma.rkey;
	}
	if (wr->opcode == RR_WR_SEND_WITH_INV || wr->opcode == RR_WR_LOCAL_INV)
		w->invalidate_rkey = wr->invalidate_rkey;
	if (swi && quirks)
		w->wr.rdma.rkey = wr->invalidate_rkey;
	if (wr->opcode != RR_WR_RDMA_READ && wr->opcode != RR_WR_LOCAL_INV &&
	    !(swi && quirks) && total && total <= qp->max_inline)
		w->send_flags |= IBV_SEND_INLINE;
	return 0;
}

/*
 * ibv_mw.rkey must name the key the next bind replaces: the device checks
 * it, and ibverbs leaves type 2 keys to us. The QP remembers the window,
 * because a window bound through a QP holds that QP in rxe.
 */
static void bound(struct v_qp *qp, struct v_mw *mw, uint32_t rkey)
{
	mw->mw->rkey = rkey;
	__atomic_store_n(&mw->base.rkey, rkey, __ATOMIC_RELEASE);
	if (mw->bound == qp)
		return;
	if (mw->bound) /* rebound through another QP: forget the first */
		rr__v_mw_unlink(mw);
	mw->bound = qp;
	mw->bnext = qp->bound_mws;
	qp->bound_mws = mw;
}

/*
 * rxe's QP destroy waits for every window bound through the QP to let go
 * of it, and a window in an ERROR QP cannot be invalidated any more; so
 * the windows are replaced by fresh (invalid) ones before the QP goes.
 */
static void release_windows(struct v_qp *qp)
{
	struct v_mw *mw;

	while ((mw = qp->bound_mws)) {
		struct ibv_pd *pd = mw->mw->pd;
		struct ibv_mw *fresh;

		qp->bound_mws = mw->bnext;
		mw->bound = NULL;
		mw->bnext = NULL;
		ibv_dealloc_mw(mw->mw);
		fresh = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		if (fresh) {
			mw->mw = fresh;
			__atomic_store_n(&mw->base.rkey, fresh->rkey,
					 __ATOMIC_RELEASE);
		} else {
			mw->mw = NULL; /* rr_mw_free copes; REG will fail */
		}
	}
}

void rr__v_mw_unlink(struct v_mw *mw)
{
	struct v_qp *qp = mw->bound;
	struct v_mw **pp;

	if (!qp)
		return;
	for (pp = &qp->bound_mws; *pp; pp = &(*pp)->bnext)
		if (*pp == mw) {
			*pp = mw->bnext;
			break;
		}
	mw->bound = NULL;
	mw->bnext = NULL;
}

/*
 * A chain of sends goes to the device in one ibv_post_send: rxe and siw
 * ring the doorbell with a system call per ibv_post_send, so a call's REG
 * and Send, or a reply's Writes and Send, cost one instead of one each.
 */
#define V_POST_BATCH 16

struct v_batch {
	struct ibv_send_wr w[V_POST_BATCH];
	struct ibv_sge sge[2 * V_MAX_SGE];
	uint32_t rkey[V_POST_BATCH];
	struct rr_send_wr *wr[V_POST_BATCH];
	uint32_t n, nsge;
};

/* Adds wr to b under a queue slot of its own; -ENOSPC: b is full. */
static int batch_add(struct v_qp *qp, struct v_batch *b, struct rr_send_wr *wr)
{
	struct ibv_send_wr *w = &b->w[b->n];
	struct ibv_sge *sge = &b->sge[b->nsge];
	struct v_slot *s;
	uint32_t total;
	int rc;

	if (wr->num_sge > qp->base.attr.max_send_sge ||
	    wr->num_sge > V_MAX_SGE || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	if (b->n == V_POST_BATCH || b->nsge + wr->num_sge > 2 * V_MAX_SGE)
		return -ENOSPC;
	*w = (struct ibv_send_wr){0};
	total = sge_copy(sge, wr->sg_list, wr->num_sge);
	rc = fill_send(qp, w, wr, total, &b->rkey[b->n]);
	s = rc ? NULL : rr__v_slot_take(&qp->sq, b->n);
	if (!s) {
		V_TRACE("qp %u post op %d refused: %d (used %u of %u)\n",
			getpid(), qp->qp->qp_num, wr->opcode, rc ? rc : -ENOMEM,
			rr__v_ring_used(&qp->sq), qp->sq.size);
		return rc ? rc : -ENOMEM;
	}
	rr__v_slot_fill(s, qp, wr->wr_id, total, (uint8_t)wr->opcode,
			!!(wr->flags & RR_SEND_SIGNALED));
	rr__v_slot_publish(&qp->sq, s, b->n);
	w->wr_id = (uintptr_t)s;
	w->sg_list = sge;
	w->num_sge = (int)wr->num_sge;
	if (b->n)
		b->w[b->n - 1].next = w;
	b->wr[b->n++] = wr;
	b->nsge += wr->num_sge;
	return 0;
}

static void trace_posted(const struct v_qp *qp, const struct v_batch *b,
			 uint32_t i)
{
	const struct rr_send_wr *wr = b->wr[i];

	V_TRACE("qp %u post op %d len %u rkey %#x raddr %#llx flags %#x inv "
		"%#x\n",
		getpid(), qp->qp->qp_num, wr->opcode,
		((struct v_slot *)(uintptr_t)b->w[i].wr_id)->len,
		wr->opcode == RR_WR_REG ? b->rkey[i] : wr->rdma.rkey,
		(unsigned long long)wr->rdma.remote_addr, b->w[i].send_flags,
		wr->invalidate_rkey);
}

/*
 * Posts b; what the device took (all, or those before its bad one) keeps
 * its slots, the rest gives them back. Returns the count taken.
 */
static uint32_t batch_post(struct v_qp *qp, struct v_batch *b, int *rc)
{
	struct ibv_send_wr *bad = NULL;
	uint32_t done = b->n;

	*rc = b->n ? rr__v_ibv_rc(ibv_post_send(qp->qp, b->w, &bad)) : 0;
	if (*rc)
		done = bad ? (uint32_t)(bad - b->w) : 0;
	rr__v_slot_commit(&qp->sq, b->n, done);
	for (uint32_t i = 0; i < done; i++) {
		trace_posted(qp, b, i);
		if (b->wr[i]->opcode == RR_WR_REG)
			bound(qp, (struct v_mw *)b->wr[i]->reg.mw, b->rkey[i]);
	}
	if (*rc)
		V_TRACE("qp %u post op %d failed: %d (used %u of %u)\n",
			getpid(), qp->qp->qp_num, b->wr[done]->opcode, *rc,
			rr__v_ring_used(&qp->sq), qp->sq.size);
	return done;
}

/* Posts wr onwards in batches; on failure *bad is the first not posted. */
static int post_sends(struct v_qp *qp, struct rr_send_wr *wr,
		      struct rr_send_wr **bad)
{
	struct v_batch b;
	uint32_t done;
	int rc = 0, prc;

	if (atomic_load(&qp->state) != RR_QPS_RTS)
		rc = -ENOTCONN;
	while (wr && !rc) {
		b.n = b.nsge = 0;
		while (wr && !(rc = batch_add(qp, &b, wr)))
			wr = wr->next;
		if (rc == -ENOSPC)
			rc = 0;
		done = batch_post(qp, &b, &prc);
		if (done < b.n) {
			wr = b.wr[done];
			rc = prc;
		}
	}
	if (rc && bad)
		*bad = wr;
	return rc;
}

int rr__v_post_send(struct rr_qp *q, struct rr_send_wr *wr,
		    struct rr_send_wr **bad)
{
	struct v_qp *qp = to_v_qp(q);
	int rc;

	pthread_mutex_lock(&qp->mu);
	rc = post_sends(qp, wr, bad);
	pthread_mutex_unlock(&qp->mu);
	return rc;
}

static int post_one_recv(struct v_qp *qp, const struct rr_recv_wr *wr)
{
	struct ibv_sge sge[V_MAX_SGE];
	struct ibv_recv_wr w = {0}, *bad;
	struct v_slot *s;
	int rc;

	if (atomic_load(&qp->state) == RR_QPS_ERROR)
		return -ENOTCONN;
	if (wr->num_sge > qp->base.attr.max_recv_sge ||
	    wr->num_sge > V_MAX_SGE || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	s = rr__v_slot_take(&qp->rq, 0);
	if (!s)
		return -ENOMEM;
	rr__v_slot_fill(s, qp, wr->wr_id,
			sge_copy(sge, wr->sg_list, wr->num_sge), RR_V_RECV,
			true);
	rr__v_slot_publish(&qp->rq, s, 0);
	w.wr_id = (uintptr_t)s;
	w.sg_list = sge;
	w.num_sge = (int)wr->num_sge;
	rc = rr__v_ibv_rc(ibv_post_recv(qp->qp, &w, &bad));
	rr__v_slot_commit(&qp->rq, 1, !rc);
	if (rc)
		return rc;
	V_TRACE("qp %u post recv len %u\n", getpid(), qp->qp->qp_num, s->len);
	return 0;
}

int rr__v_post_recv(struct rr_qp *q, struct rr_recv_wr *wr,
		    struct rr_recv_wr **bad)
{
	struct v_qp *qp = to_v_qp(q);
	int rc = 0;

	pthread_mutex_lock(&qp->mu);
	for (; wr && !rc; wr = rc ? wr : wr->next) {
		rc = post_one_recv(qp, wr);
		if (rc && bad)
			*bad = wr;
	}
	pthread_mutex_unlock(&qp->mu);
	return rc;
}

/* A marker: an empty signaled request that can only complete flushed. */
static int post_markers(struct v_qp *qp, uint64_t sq_wr_id, uint64_t rq_wr_id)
{
	struct ibv_send_wr sw = {.opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *sbad;
	struct ibv_recv_wr rw = {0}, *rbad;
	struct v_slot *s = rr__v_slot_take(&qp->sq, 0),
		      *r = rr__v_slot_take(&qp->rq, 0);
	int rc;

	if (!s || !r)
		return -ENOMEM;
	rr__v_slot_fill(s, qp, sq_wr_id, 0, RR_WR_SEND, true);
	rr__v_slot_fill(r, qp, rq_wr_id, 0, RR_V_RECV, true);
	rr__v_slot_publish(&qp->sq, s, 0);
	rr__v_slot_publish(&qp->rq, r, 0);
	sw.wr_id = (uintptr_t)s;
	rw.wr_id = (uintptr_t)r;
	rc = rr__v_ibv_rc(ibv_post_recv(qp->qp, &rw, &rbad));
	rr__v_slot_commit(&qp->rq, 1, !rc);
	if (!rc)
		rc = rr__v_ibv_rc(ibv_post_send(qp->qp, &sw, &sbad));
	rr__v_slot_commit(&qp->sq, 1, !rc);
	return rc;
}

/* Markers that never reach the device (v_device.soft_drain). */
static int soft_drain(struct v_qp *qp, uint64_t sq_wr_id, uint64_t rq_wr_id)
{
	struct v_slot *s, *r;
	int rc;

	pthread_mutex_lock(&qp->mu);
	s = rr__v_slot_take(&qp->sq, 0);
	r = rr__v_slot_take(&qp->rq, 0);
	rc = s && r ? rr__v_qp_to_error(qp) : -ENOMEM;
	if (!rc) {
		rr__v_slot_fill(s, qp, sq_wr_id, 0, RR_WR_SEND, true);
		rr__v_slot_fill(r, qp, rq_wr_id, 0, RR_V_RECV, true);
		rr__v_slot_publish(&qp->sq, s, 0);
		rr__v_slot_publish(&qp->rq, r, 0);
		rr__v_slot_commit(&qp->sq, 1, 1);
		rr__v_slot_commit(&qp->rq, 1, 1);
	}
	pthread_mutex_unlock(&qp->mu);
	if (rc)
		return rc;
	rr__v_cq_soft_flush(to_v_cq(qp->base.attr.send_cq), s);
	rr__v_cq_soft_flush(to_v_cq(qp->base.attr.recv_cq), r);
	return 0;
}

int rr__v_drain(struct rr_qp *q, uint64_t sq_wr_id, uint64_t rq_wr_id)
{
	struct v_qp *qp = to_v_qp(q);
	int rc;

	V_TRACE("qp %u drain\n", getpid(), qp->qp->qp_num);
	if (atomic_load(&qp->state) != RR_QPS_ERROR)
		return -EINVAL;
	if (qp->dev->soft_drain)
		return soft_drain(qp, sq_wr_id, rq_wr_id);
	pthread_mutex_lock(&qp->mu);
	rc = post_markers(qp, sq_wr_id, rq_wr_id);
	if (!rc)
		rc = rr__v_qp_to_error(qp);
	pthread_mutex_unlock(&qp->mu);
	return rc;
}
