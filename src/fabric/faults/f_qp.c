/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Queue pairs and posting interception.
 *
 * A send chain is copied into a bounded array (F_CHUNK requests at a time,
 * REG objects translated to the inner ones) and posted in pieces under the
 * QP's posting lock, so pieces of concurrent posts do not interleave.
 *
 * A request picked for a fault is swallowed: the inner QP is disconnected
 * (flushing everything outstanding there) and the request's error
 * completion is synthesized into the wrapper send CQ. The requests behind
 * it in the same chain were accepted by the call, so they complete with
 * RR_WC_WR_FLUSH_ERR as well, as on a QP that errors while they are queued.
 * Synthesized error completions are delivered for unsignaled requests too.
 */
#include "fabric/faults/f.h"
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>

#define F_CHUNK 64

enum f_fault { F_NONE, F_FLUSH, F_REG, F_INV };

struct post {
	struct f_qp *qp;
	int n;
	struct rr_send_wr wr[F_CHUNK];	  /* translated copies */
	struct rr_send_wr *user[F_CHUNK]; /* the user's, for *bad */
};

int rr__f_qp_create(struct rr_pd *pd, const struct rr_qp_attr *attr,
		    struct rr_qp **out)
{
	struct f_device *dev = to_f_dev(pd->dev);
	struct f_qp *qp = rr_calloc(1, sizeof(*qp));
	struct rr_qp_attr in = *attr;
	uint64_t idx;
	int rc;

	if (!qp)
		return -ENOMEM;
	in.send_cq = to_f_cq(attr->send_cq)->inner;
	in.recv_cq = to_f_cq(attr->recv_cq)->inner;
	in.evch = to_f_evch(attr->evch)->inner;
	in.context = qp; /* completions and events find the wrapper */
	rc = rr_qp_create(to_f_pd(pd)->inner, &in, &qp->inner);
	if (rc) {
		free(qp);
		return rc;
	}
	qp->base = (struct rr_qp){.pd = pd, .attr = *attr};
	qp->dev = dev;
	qp->scq = to_f_cq(attr->send_cq);
	qp->rcq = to_f_cq(attr->recv_cq);
	pthread_mutex_init(&qp->mu, NULL);
	pthread_mutex_lock(&dev->mu);
	idx = dev->nqps++;
	pthread_mutex_unlock(&dev->mu);
	qp->rng_post = rr__f_stream(dev->plan.seed, 'P', idx);
	qp->rng_cqe = rr__f_stream(dev->plan.seed, 'C', idx);
	rc = rr__f_guard_init(qp);
	if (!rc) {
		rc = rr__f_hold_init(qp);
		if (rc)
			rr__f_guard_fini(qp);
	}
	if (rc) {
		rr_qp_destroy(qp->inner);
		pthread_mutex_destroy(&qp->mu);
		free(qp);
		return rc;
	}
	rr__f_hold_link(qp);
	*out = &qp->base;
	return 0;
}

/*
 * The wrapper CQs stay locked while the inner QP goes (or is reset), so no
 * poll is translating one of its completions meanwhile; then what the
 * wrapper still holds for it is dropped.
 */
static int inner_gone(struct f_qp *qp, int (*op)(struct rr_qp *))
{
	struct f_cq *a = qp->scq, *b = qp->rcq;
	int rc;

	if (b < a) {
		a = qp->rcq;
		b = qp->scq;
	}
	pthread_mutex_lock(&a->mu);
	if (b != a)
		pthread_mutex_lock(&b->mu);
	rc = op(qp->inner);
	if (!rc) {
		rr__f_cq_purge(a, &qp->base);
		if (b != a)
			rr__f_cq_purge(b, &qp->base);
	}
	if (b != a)
		pthread_mutex_unlock(&b->mu);
	pthread_mutex_unlock(&a->mu);
	return rc;
}

/*
 * The inner QP is reset, the wrapper's accounting of the old connection
 * is dropped with its completions: nothing is allocated either side.
 */
int rr__f_qp_reset(struct rr_qp *q)
{
	struct f_qp *qp = to_f_qp(q);
	int rc = inner_gone(qp, rr_qp_reset);

	if (rc)
		return rc;
	pthread_mutex_lock(&qp->mu);
	atomic_store(&qp->sq_used, 0);
	atomic_store(&qp->unsig_out, 0);
	rr__f_guard_reset(qp);
	rr__f_hold_drop(qp);
	pthread_mutex_unlock(&qp->mu);
	return 0;
}

int rr__f_qp_destroy(struct rr_qp *q)
{
	struct f_qp *qp = to_f_qp(q);
	int rc;

	rr__f_hold_unlink(qp);
	rc = inner_gone(qp, rr_qp_destroy);
	if (rc) {
		rr__f_hold_link(qp);
		return rc;
	}
	rr__f_guard_fini(qp);
	rr__f_hold_fini(qp);
	pthread_mutex_destroy(&qp->mu);
	free(qp);
	return 0;
}

enum rr_qp_state rr__f_qp_state(const struct rr_qp *q)
{
	return rr_qp_state(to_f_qp((struct rr_qp *)q)->inner);
}

int rr__f_connect(struct rr_qp *q, const struct sockaddr *addr,
		  socklen_t addrlen, const void *pdata, size_t len)
{
	return rr_qp_connect(to_f_qp(q)->inner, addr, addrlen, pdata, len);
}

/* What is parked never reached the inner QP: it is flushed here. */
int rr__f_disconnect(struct rr_qp *q)
{
	struct f_qp *qp = to_f_qp(q);
	int rc = rr_qp_disconnect(qp->inner);

	pthread_mutex_lock(&qp->mu);
	rr__f_hold_flush(qp);
	pthread_mutex_unlock(&qp->mu);
	return rc;
}

/* The marker takes a send slot here as any request does. */
int rr__f_drain(struct rr_qp *q, uint64_t sq_wr_id, uint64_t rq_wr_id)
{
	struct f_qp *qp = to_f_qp(q);
	int rc;

	pthread_mutex_lock(&qp->mu);
	rr__f_hold_flush(qp); /* its flushes precede the marker */
	if (qp->dev->active)
		atomic_fetch_add(&qp->sq_used, 1);
	rc = rr_qp_drain(qp->inner, sq_wr_id, rq_wr_id);
	if (rc && qp->dev->active)
		atomic_fetch_sub(&qp->sq_used, 1);
	pthread_mutex_unlock(&qp->mu);
	return rc;
}

/* Receives carry no object pointers: the user's chain goes as it is. */
int rr__f_post_recv(struct rr_qp *q, struct rr_recv_wr *wr,
		    struct rr_recv_wr **bad)
{
	struct f_qp *qp = to_f_qp(q);
	int rc = rr_qp_post_recv(qp->inner, wr, bad);

	if (!rc && qp->dev->active)
		rr__f_note_recv(qp, wr);
	return rc;
}

/* ------------------------------------------------------------- posting */

static enum f_fault decide(struct f_qp *qp, const struct rr_send_wr *wr)
{
	const struct rr_fault_plan *p = &qp->dev->plan;

	if (!qp->dev->active)
		return F_NONE;
	if (rr__f_roll(&qp->rng_post, p->flush_wr_ppm))
		return F_FLUSH;
	if (wr->opcode == RR_WR_REG &&
	    rr__f_roll(&qp->rng_post, p->fail_reg_ppm))
		return F_REG;
	if (wr->opcode == RR_WR_LOCAL_INV &&
	    rr__f_roll(&qp->rng_post, p->fail_inv_ppm))
		return F_INV;
	return F_NONE;
}

/* The REG objects become the inner ones; keys pass through. */
static int translate(struct f_qp *qp, const struct rr_send_wr *u,
		     struct rr_send_wr *w)
{
	struct rr_device *dev = qp->base.pd->dev;

	*w = *u;
	if (u->opcode != RR_WR_REG)
		return 0;
	if ((u->reg.mw && u->reg.mw->pd->dev != dev) ||
	    (u->reg.mr && u->reg.mr->pd->dev != dev))
		return -EINVAL;
	if (u->reg.mw)
		w->reg.mw = to_f_mw(u->reg.mw)->inner;
	if (u->reg.mr)
		w->reg.mr = to_f_mr(u->reg.mr)->inner;
	return 0;
}

/* What the inner provider would refuse at post time, for a swallowed WR. */
static int swallow_check(struct f_qp *qp, const struct rr_send_wr *wr)
{
	const unsigned remote = RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE;
	const struct rr_qp_attr *a = &qp->base.attr;

	if (wr->num_sge > a->max_send_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	switch (wr->opcode) {
	case RR_WR_SEND:
	case RR_WR_SEND_WITH_INV:
	case RR_WR_RDMA_WRITE:
	case RR_WR_RDMA_READ:
	case RR_WR_LOCAL_INV:
		return 0;
	case RR_WR_REG:
		if (!wr->reg.mw || !wr->reg.mr ||
		    wr->reg.mw->pd != qp->base.pd || (wr->reg.access & ~remote))
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

static void sq_take(struct f_qp *qp, const struct rr_send_wr *wr, int sign)
{
	if (!qp->dev->active)
		return;
	atomic_fetch_add(&qp->sq_used, sign);
	if (!(wr->flags & RR_SEND_SIGNALED))
		atomic_fetch_add(&qp->unsig_out, sign);
}

/* After a REG went to the inner QP, the wrapper shows the key it installs. */
static void refresh_rkeys(struct post *p, int posted)
{
	for (int i = 0; i < posted; i++) {
		struct f_mw *mw;

		if (p->wr[i].opcode != RR_WR_REG || !p->user[i]->reg.mw)
			continue;
		mw = to_f_mw(p->user[i]->reg.mw);
		__atomic_store_n(&mw->base.rkey, rr_mw_rkey(mw->inner),
				 __ATOMIC_RELEASE);
	}
}

/* Posts the collected piece; on failure *failed names the user's WR. */
static int flush_piece(struct post *p, struct rr_send_wr **failed)
{
	struct rr_send_wr *ibad = NULL;
	int rc, posted = p->n;

	if (!p->n)
		return 0;
	for (int i = 0; i < p->n; i++)
		p->wr[i].next = i + 1 < p->n ? &p->wr[i + 1] : NULL;
	rc = rr_qp_post_send(p->qp->inner, p->wr, &ibad);
	if (rc) {
		posted = ibad >= p->wr && ibad < p->wr + p->n
				 ? (int)(ibad - p->wr)
				 : 0;
		*failed = p->user[posted];
		for (int i = posted; i < p->n; i++)
			sq_take(p->qp, p->user[i], -1);
	}
	refresh_rkeys(p, posted);
	p->n = 0;
	return rc;
}

static int synth(struct f_qp *qp, const struct rr_send_wr *wr,
		 enum rr_wc_status st, bool disconnect)
{
	struct rr_wc wc = {.wr_id = wr->wr_id,
			   .qp = &qp->base,
			   .status = st,
			   .opcode = rr__wc_opcode_of(wr->opcode)};
	int rc;

	/* Taken first: the completion may be polled at once. Always
	 * delivered, so it never counts as unsignaled. */
	if (qp->dev->active)
		atomic_fetch_add(&qp->sq_used, 1);
	rc = rr__f_cq_synth(qp->scq, &wc, disconnect ? qp->inner : NULL);
	if (rc && qp->dev->active)
		atomic_fetch_sub(&qp->sq_used, 1);
	return rc;
}

static int swallow(struct post *p, struct rr_send_wr *wr, enum f_fault f,
		   struct rr_send_wr **failed)
{
	static const enum rr_wc_status st[] = {
		[F_FLUSH] = RR_WC_WR_FLUSH_ERR,
		[F_REG] = RR_WC_MW_BIND_ERR,
		[F_INV] = RR_WC_LOC_PROT_ERR,
	};
	struct f_device *dev = p->qp->dev;
	int rc = flush_piece(p, failed);

	if (rc)
		return rc;
	rc = swallow_check(p->qp, wr);
	if (!rc)
		rc = synth(p->qp, wr, st[f], true);
	if (rc)
		return rc;
	if (f == F_FLUSH)
		F_COUNT(dev, wrs_flushed);
	else if (f == F_REG)
		F_COUNT(dev, regs_failed);
	else
		F_COUNT(dev, invs_failed);
	return 0;
}

/* One request of the chain; *dead once one was swallowed. */
static int post_one(struct post *p, struct rr_send_wr *wr, bool *dead,
		    struct rr_send_wr **failed)
{
	struct f_qp *qp = p->qp;
	enum f_fault f;
	int rc;

	if (qp->dev->active &&
	    atomic_load(&qp->sq_used) >= (int)qp->base.attr.sq_depth) {
		F_COUNT(qp->dev, sq_overruns);
		return -ENOMEM;
	}
	if (*dead)
		return synth(qp, wr, RR_WC_WR_FLUSH_ERR, false);
	f = decide(qp, wr);
	if (f != F_NONE) {
		rc = swallow(p, wr, f, failed);
		*dead = rc == 0;
		return rc;
	}
	rc = translate(qp, wr, &p->wr[p->n]);
	if (rc)
		return rc;
	if (rr__f_hold_wants(qp, wr)) {
		/* ORDER: what was collected before it goes first. */
		struct rr_send_wr t = p->wr[p->n];

		rc = flush_piece(p, failed);
		if (!rc)
			rc = rr__f_hold_park(qp, wr, &t);
		if (rc)
			return rc;
		sq_take(qp, wr, 1);
		rr__f_guard_post(qp, wr);
		return 0;
	}
	p->user[p->n++] = wr;
	sq_take(qp, wr, 1);
	rr__f_guard_post(qp, wr);
	return p->n == F_CHUNK ? flush_piece(p, failed) : 0;
}

int rr__f_post_send(struct rr_qp *q, struct rr_send_wr *wr,
		    struct rr_send_wr **bad)
{
	struct f_qp *qp = to_f_qp(q);
	struct rr_send_wr *failed = wr;
	struct post p;
	bool dead = false;
	int rc = 0, prc;

	p.qp = qp;
	p.n = 0;
	pthread_mutex_lock(&qp->mu);
	if (rr_qp_state(qp->inner) != RR_QPS_RTS)
		rc = -ENOTCONN;
	for (; wr && !rc; wr = wr->next) {
		failed = wr;
		rc = post_one(&p, wr, &dead, &failed);
	}
	/* What was collected precedes the refused request: it goes anyway. */
	prc = flush_piece(&p, &failed);
	if (prc)
		rc = prc;
	pthread_mutex_unlock(&qp->mu);
	if (rc && bad)
		*bad = failed;
	return rc;
}
