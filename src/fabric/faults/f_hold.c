/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Parked requests (plan.hold_invs, plan.hold_regs) and the test-control
 * calls.
 *
 * A LOCAL_INV is parked instead of posted: the key it names stays valid
 * at the inner provider until the test releases it, which opens the
 * window the transport must never let a caller into (a result returned
 * while the peer can still reach its memory). A REG is parked likewise:
 * its window is bound only at release, the window a transport that
 * trusts a bind only once it completed would leave open. A send queue executes
 * in order, so once one request is parked every later one of the same QP is
 * parked behind it; a receive queue and the peer's RDMA operations on us
 * go on meanwhile, as on hardware whose send queue stalls.
 *
 * Parked requests were accepted by the post that carried them: they keep
 * their send-queue slots (f_qp.sq_used), and their completions come from
 * the inner provider once released, or are synthesized as flushed when
 * the QP leaves RTS first. Their SGE lists are copied, since the caller's
 * may not outlive the post.
 */
#include "fabric/faults/f.h"
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct f_park {
	struct rr_send_wr wr; /* translated: REG names the inner objects */
	struct f_mw *mw;      /* REG: the wrapper window, to show its key */
};

struct f_hold {
	struct f_park *e;
	struct rr_sge *sges; /* cap * max_sge */
	uint32_t n, cap, max_sge;
};

int rr__f_hold_init(struct f_qp *qp)
{
	const struct rr_qp_attr *a = &qp->base.attr;
	struct f_hold *h;

	if (!qp->dev->plan.hold_invs && !qp->dev->plan.hold_regs)
		return 0;
	h = rr_calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->cap = a->sq_depth ? a->sq_depth : 1;
	h->max_sge = a->max_send_sge ? a->max_send_sge : 1;
	h->e = rr_calloc(h->cap, sizeof(*h->e));
	h->sges = rr_calloc((size_t)h->cap * h->max_sge, sizeof(*h->sges));
	if (!h->e || !h->sges) {
		free(h->e);
		free(h->sges);
		free(h);
		return -ENOMEM;
	}
	qp->hold = h;
	return 0;
}

void rr__f_hold_fini(struct f_qp *qp)
{
	if (!qp->hold)
		return;
	free(qp->hold->e);
	free(qp->hold->sges);
	free(qp->hold);
	qp->hold = NULL;
}

/* Caller holds qp->mu. */
bool rr__f_hold_wants(struct f_qp *qp, const struct rr_send_wr *wr)
{
	const struct rr_fault_plan *plan = &qp->dev->plan;

	if (!qp->hold)
		return false;
	return qp->hold->n ||
	       (plan->hold_invs && wr->opcode == RR_WR_LOCAL_INV) ||
	       (plan->hold_regs && wr->opcode == RR_WR_REG);
}

/* Caller holds qp->mu; post_one checked the queue's room already. */
int rr__f_hold_park(struct f_qp *qp, const struct rr_send_wr *user,
		    const struct rr_send_wr *t)
{
	struct f_hold *h = qp->hold;
	struct f_park *p;
	struct rr_sge *sg;

	if (h->n == h->cap || t->num_sge > h->max_sge)
		return h->n == h->cap ? -ENOMEM : -EINVAL;
	p = &h->e[h->n];
	sg = &h->sges[(size_t)h->n * h->max_sge];
	p->wr = *t;
	p->wr.next = NULL;
	if (t->num_sge)
		memcpy(sg, t->sg_list, t->num_sge * sizeof(*sg));
	p->wr.sg_list = sg;
	p->mw = user->opcode == RR_WR_REG && user->reg.mw
			? to_f_mw(user->reg.mw)
			: NULL;
	h->n++;
	if (user->opcode == RR_WR_LOCAL_INV)
		F_COUNT(qp->dev, invs_held);
	else if (user->opcode == RR_WR_REG)
		F_COUNT(qp->dev, regs_held);
	return 0;
}

static void flush_one(struct f_qp *qp, const struct rr_send_wr *wr)
{
	struct rr_wc wc = {.wr_id = wr->wr_id,
			   .qp = &qp->base,
			   .status = RR_WC_WR_FLUSH_ERR,
			   .opcode = rr__wc_opcode_of(wr->opcode)};

	/* Its slot was taken when it was parked. */
	rr__f_cq_synth(qp->scq, &wc, NULL);
	F_COUNT(qp->dev, wrs_parked_flushed);
}

/* Caller holds qp->mu. */
void rr__f_hold_flush(struct f_qp *qp)
{
	struct f_hold *h = qp->hold;

	if (!h)
		return;
	for (uint32_t i = 0; i < h->n; i++)
		flush_one(qp, &h->e[i].wr);
	h->n = 0;
}

/* Caller holds qp->mu: the QP was reset, its completions went with it. */
void rr__f_hold_drop(struct f_qp *qp)
{
	if (qp->hold)
		qp->hold->n = 0;
}

/* Caller holds qp->mu. Posts in order; what cannot go is flushed. */
static int release_qp(struct f_qp *qp)
{
	struct f_hold *h = qp->hold;
	int sent = 0;

	if (!h)
		return 0;
	for (uint32_t i = 0; i < h->n; i++) {
		struct f_park *p = &h->e[i];
		struct rr_send_wr *bad = NULL;

		if (rr_qp_state(qp->inner) != RR_QPS_RTS ||
		    rr_qp_post_send(qp->inner, &p->wr, &bad)) {
			flush_one(qp, &p->wr);
			continue;
		}
		if (p->mw)
			__atomic_store_n(&p->mw->base.rkey,
					 rr_mw_rkey(p->mw->inner),
					 __ATOMIC_RELEASE);
		F_COUNT(qp->dev, wrs_released);
		sent++;
	}
	h->n = 0;
	return sent;
}

void rr__f_hold_link(struct f_qp *qp)
{
	struct f_device *dev = qp->dev;

	pthread_mutex_lock(&dev->qps_mu);
	qp->dev_next = dev->qps;
	dev->qps = qp;
	pthread_mutex_unlock(&dev->qps_mu);
}

void rr__f_hold_unlink(struct f_qp *qp)
{
	struct f_device *dev = qp->dev;

	pthread_mutex_lock(&dev->qps_mu);
	for (struct f_qp **pp = &dev->qps; *pp; pp = &(*pp)->dev_next) {
		if (*pp == qp) {
			*pp = qp->dev_next;
			break;
		}
	}
	pthread_mutex_unlock(&dev->qps_mu);
}

/* A receive of an active device was posted: remembered for tests. */
void rr__f_note_recv(struct f_qp *qp, const struct rr_recv_wr *wr)
{
	pthread_mutex_lock(&qp->mu);
	for (; wr; wr = wr->next)
		qp->recent_recv[qp->nrecv_posted++ % 8] = wr->wr_id;
	pthread_mutex_unlock(&qp->mu);
}

static struct f_device *control_dev(struct rr_device *d)
{
	return d && d->ops == &rr__faults_ops && to_f_dev(d)->active
		       ? to_f_dev(d)
		       : NULL;
}

int rr_faults_release(struct rr_device *d)
{
	struct f_device *dev = control_dev(d);
	int n = 0;

	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->qps_mu);
	for (struct f_qp *qp = dev->qps; qp; qp = qp->dev_next) {
		pthread_mutex_lock(&qp->mu);
		n += release_qp(qp);
		pthread_mutex_unlock(&qp->mu);
	}
	pthread_mutex_unlock(&dev->qps_mu);
	return n;
}

int rr_faults_held_invs(struct rr_device *d, uint64_t *wr_ids, uint32_t *rkeys,
			int max)
{
	struct f_device *dev = control_dev(d);
	int n = 0;

	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->qps_mu);
	for (struct f_qp *qp = dev->qps; qp; qp = qp->dev_next) {
		pthread_mutex_lock(&qp->mu);
		for (uint32_t i = 0; qp->hold && i < qp->hold->n; i++) {
			const struct rr_send_wr *w = &qp->hold->e[i].wr;

			if (w->opcode != RR_WR_LOCAL_INV)
				continue;
			if (n < max && wr_ids)
				wr_ids[n] = w->wr_id;
			if (n < max && rkeys)
				rkeys[n] = w->invalidate_rkey;
			n++;
		}
		pthread_mutex_unlock(&qp->mu);
	}
	pthread_mutex_unlock(&dev->qps_mu);
	return n;
}

int rr_faults_inject(struct rr_device *d, const struct rr_wc *wc)
{
	struct f_device *dev = control_dev(d);
	struct rr_wc w;
	int rc = -ENOENT;

	if (!dev || !wc)
		return -EINVAL;
	w = *wc;
	pthread_mutex_lock(&dev->qps_mu);
	if (dev->qps) {
		struct f_qp *qp = dev->qps;

		w.qp = &qp->base;
		rc = rr__f_cq_inject(w.opcode == RR_WC_RECV ? qp->rcq : qp->scq,
				     &w);
	}
	pthread_mutex_unlock(&dev->qps_mu);
	return rc;
}

int rr_faults_recent_recvs(struct rr_device *d, uint64_t *wr_ids, int max)
{
	struct f_device *dev = control_dev(d);
	int n = 0;

	if (!dev || (max && !wr_ids))
		return -EINVAL;
	pthread_mutex_lock(&dev->qps_mu);
	if (dev->qps) {
		struct f_qp *qp = dev->qps;

		pthread_mutex_lock(&qp->mu);
		for (uint32_t k = qp->nrecv_posted; k && n < max && n < 8; k--)
			wr_ids[n++] = qp->recent_recv[(k - 1) % 8];
		pthread_mutex_unlock(&qp->mu);
	}
	pthread_mutex_unlock(&dev->qps_mu);
	return n;
}
