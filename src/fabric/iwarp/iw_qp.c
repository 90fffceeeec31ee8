/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Queue pairs: creation, posting, completion accounting, and the error
 * transition that flushes every work request not yet retired.
 *
 * Accounting (architecture.md invariant 4): a posted send WR is in exactly one
 * of the SQ ring, the transmit batch, or the ORQ (a Read awaiting its response)
 * until it completes; a receive is in the RQ ring. The flush walks all of them,
 * so every WR gets exactly one completion or is covered by a later one
 * (successful unsignaled WRs, retired by the next completion).
 */
#include "fabric/iwarp/iw.h"
#include "base/alloc.h"

#include "base/log.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Caller holds rx_mu and tx_mu, or is the last user of the QP. */
static void ring_close(struct iw_qp *qp)
{
	rr__shm_link_close(&qp->link);
	if (qp->ring_fd >= 0)
		close(qp->ring_fd);
	qp->ring_fd = -1;
	qp->ring = false;
}

static void qp_free(struct iw_qp *qp)
{
	if (qp->fd >= 0)
		close(qp->fd);
	ring_close(qp);
	pthread_mutex_destroy(&qp->tx_mu);
	pthread_mutex_destroy(&qp->rx_mu);
	pthread_mutex_destroy(&qp->rq_mu);
	pthread_mutex_destroy(&qp->arm_mu);
	free(qp->sq);
	free(qp->sq_sge);
	free(qp->rq);
	free(qp->rq_sge);
	free(qp);
}

void rr__iw_qp_put(struct iw_qp *qp)
{
	if (rr_ref_put(&qp->ref))
		qp_free(qp);
}

static int qp_alloc_queues(struct iw_qp *qp, const struct rr_qp_attr *a)
{
	qp->sq = rr_calloc(a->sq_depth, sizeof(*qp->sq));
	qp->sq_sge = rr_calloc((size_t)a->sq_depth * a->max_send_sge,
			       sizeof(*qp->sq_sge));
	qp->rq = rr_calloc(a->rq_depth, sizeof(*qp->rq));
	qp->rq_sge = rr_calloc((size_t)a->rq_depth * a->max_recv_sge,
			       sizeof(*qp->rq_sge));
	if (!qp->sq || !qp->sq_sge || !qp->rq || !qp->rq_sge)
		return -ENOMEM;
	for (uint32_t i = 0; i < a->sq_depth; i++)
		qp->sq[i].sge = &qp->sq_sge[(size_t)i * a->max_send_sge];
	for (uint32_t i = 0; i < a->rq_depth; i++)
		qp->rq[i].sge = &qp->rq_sge[(size_t)i * a->max_recv_sge];
	return 0;
}

/*
 * The state of a QP that has never connected: for a new QP and for one
 * being reset. Its memory (queues, SGE arrays, event reserve), locks,
 * references and attachments stay. Caller holds every lock of the QP, or
 * nobody else can see it yet.
 */
static void qp_fresh(struct iw_qp *qp)
{
	const struct rr_qp_attr *a = &qp->base.attr;

	qp->fd = -1;
	qp->in_epoll = false;
	qp->crc = false;
	qp->ird = a->ird;
	qp->ord = a->ord;
	qp->fpdu_max = 0;
	qp->cm_next = NULL;
	qp->cm_phase = 0;
	qp->cm_deadline_ms = 0;
	qp->cm_len = qp->cm_done = 0;
	memset(&qp->peer, 0, sizeof(qp->peer));
	qp->peer_pid = 0;
	qp->cma = false;
	qp->cm_err = 0;
	atomic_store(&qp->ring_tx_wait, false);
	qp->sq_head = qp->sq_tail = 0;
	atomic_store(&qp->sq_free, (int)a->sq_depth);
	qp->unsig_done = 0;
	memset(&qp->tx, 0, sizeof(qp->tx));
	for (int i = 0; i < 3; i++)
		qp->tx.msn[i] = 1;
	atomic_store(&qp->orq_head, 0);
	atomic_store(&qp->orq_tail, 0);
	qp->pulls_out = 0;
	atomic_store(&qp->irq_head, 0);
	atomic_store(&qp->irq_tail, 0);
	qp->term_pending = false;
	atomic_store(&qp->rx_kick, 0);
	qp->handed = false;
	atomic_store(&qp->hand_ms, IW_HANDBACK_MS);
	qp->taken_ms = 0;
	qp->want_out = false;
	qp->armed = 0;
	rr__iw_rx_reset(&qp->rx);
	qp->rq_head = qp->rq_tail = 0;
	atomic_store(&qp->rq_free, (int)a->rq_depth);
	qp->err_status = RR_WC_SUCCESS;
	atomic_store_explicit(&qp->state, RR_QPS_INIT, memory_order_release);
}

int rr__iw_qp_create(struct rr_pd *pd, const struct rr_qp_attr *a,
		     struct rr_qp **out)
{
	struct iw_qp *qp = rr_calloc(1, sizeof(*qp));
	int rc;

	if (!qp)
		return -ENOMEM;
	qp->fd = -1;
	qp->ring_fd = -1;
	pthread_mutex_init(&qp->tx_mu, NULL);
	pthread_mutex_init(&qp->rx_mu, NULL);
	pthread_mutex_init(&qp->rq_mu, NULL);
	pthread_mutex_init(&qp->arm_mu, NULL);
	rc = qp_alloc_queues(qp, a);
	if (rc)
		goto err;
	qp->base = (struct rr_qp){.pd = pd, .attr = *a};
	qp->poll.kind = IW_POLL_QP;
	rr_ref_init(&qp->ref);
	qp->dev = to_iw_dev(pd->dev);
	qp->scq = to_iw_cq(a->send_cq);
	qp->rcq = to_iw_cq(a->recv_cq);
	qp->evch = to_iw_evch(a->evch);
	qp_fresh(qp);
	rc = rr__iw_cq_attach(qp->scq, qp, a->sq_depth);
	if (rc)
		goto err;
	rc = rr__iw_cq_attach(qp->rcq, qp, a->rq_depth);
	if (rc) {
		rr__iw_cq_detach(qp->scq, qp, a->sq_depth);
		goto err;
	}
	atomic_fetch_add(&to_iw_pd(pd)->users, 1);
	*out = &qp->base;
	return 0;
err:
	qp_free(qp);
	return rc;
}

enum rr_qp_state rr__iw_qp_get_state(const struct rr_qp *q)
{
	return (enum rr_qp_state)iw_qp_state(to_iw_qp((struct rr_qp *)q));
}

/* Caller holds tx_mu. */
void rr__iw_qp_complete_send(struct iw_qp *qp, const struct iw_wqe *w,
			     enum rr_wc_status st, uint32_t byte_len)
{
	struct rr_wc wc = {.wr_id = w->wr_id,
			   .qp = &qp->base,
			   .status = st,
			   .opcode = rr__wc_opcode_of(w->opcode),
			   .byte_len = byte_len};
	uint32_t retire;

	if (st == RR_WC_SUCCESS && !(w->flags & RR_SEND_SIGNALED)) {
		qp->unsig_done++;
		return;
	}
	retire = 1 + qp->unsig_done;
	qp->unsig_done = 0;
	rr__iw_cq_push(qp->scq, &wc, retire);
}

static void recv_complete(struct iw_qp *qp, uint64_t wr_id,
			  enum rr_wc_status st)
{
	struct rr_wc wc = {.wr_id = wr_id,
			   .qp = &qp->base,
			   .status = st,
			   .opcode = RR_WC_RECV};

	rr__iw_cq_push(qp->rcq, &wc, 0);
}

/* Caller holds rx_mu and tx_mu. */
static void flush_sends(struct iw_qp *qp)
{
	enum rr_wc_status first = qp->err_status;
	uint32_t depth = qp->base.attr.sq_depth;

	/* Oldest first: a Read awaiting its response, then the batch. */
	while (atomic_load(&qp->orq_head) != atomic_load(&qp->orq_tail)) {
		uint32_t h = atomic_load(&qp->orq_head);
		struct iw_orq *o = &qp->orq[h % IW_MAX_ORD];
		struct iw_wqe w = {.wr_id = o->wr_id,
				   .opcode = o->opcode,
				   .flags = RR_SEND_SIGNALED};

		rr__iw_qp_complete_send(qp, &w, first, 0);
		first = RR_WC_WR_FLUSH_ERR;
		atomic_store(&qp->orq_head, h + 1);
	}
	for (uint32_t i = 0; i < qp->tx.ndone; i++) {
		rr__iw_qp_complete_send(qp, &qp->tx.done[i], first, 0);
		first = RR_WC_WR_FLUSH_ERR;
	}
	qp->tx.ndone = 0;
	qp->tx.iovcnt = qp->tx.iov_first = qp->tx.nfpdu = 0;
	while (qp->sq_tail != qp->sq_head) {
		rr__iw_qp_complete_send(qp, &qp->sq[qp->sq_tail % depth], first,
					0);
		first = RR_WC_WR_FLUSH_ERR;
		qp->sq_tail++;
	}
	atomic_store(&qp->irq_head, atomic_load(&qp->irq_tail));
	qp->pulls_out = 0;
}

static void flush_recvs(struct iw_qp *qp)
{
	uint32_t depth = qp->base.attr.rq_depth;

	pthread_mutex_lock(&qp->rq_mu);
	while (qp->rq_tail != qp->rq_head) {
		recv_complete(qp, qp->rq[qp->rq_tail % depth].wr_id,
			      RR_WC_WR_FLUSH_ERR);
		qp->rq_tail++;
	}
	pthread_mutex_unlock(&qp->rq_mu);
}

/*
 * The error transition. Caller holds rx_mu (never tx_mu). st is the status
 * of the oldest outstanding send (e.g. a remote access error reported by a
 * Terminate); ev is the CM event to report, or -1 for none (destroy).
 */
void rr__iw_qp_fail(struct iw_qp *qp, enum rr_wc_status st,
		    enum rr_cm_event_type ev, int status)
{
	int old = atomic_exchange(&qp->state, RR_QPS_ERROR);

	pthread_mutex_lock(&qp->tx_mu);
	if (old != RR_QPS_ERROR)
		qp->err_status = st;
	flush_sends(qp);
	pthread_mutex_unlock(&qp->tx_mu);
	flush_recvs(qp);
	if (qp->fd >= 0)
		shutdown(qp->fd, SHUT_RDWR);
	if (old != RR_QPS_ERROR && (int)ev >= 0)
		rr__iw_qp_event(qp, ev, status, NULL, 0);
}

/*
 * For paths that hold tx_mu and so cannot take rx_mu: mark the QP failed and
 * shut the socket down; the resulting hang-up makes the progress thread run
 * the receive path, which sees ERROR and flushes.
 */
static void qp_fail_async(struct iw_qp *qp)
{
	if (qp->fd >= 0)
		shutdown(qp->fd, SHUT_RDWR);
}

void rr__iw_qp_rx_try(struct iw_qp *qp, bool drain)
{
	for (;; drain = true) { /* a kick came from an edge: drain for it */
		if (pthread_mutex_trylock(&qp->rx_mu)) {
			atomic_store(&qp->rx_kick, 1);
			/* The holder may have let go before seeing the kick. */
			if (pthread_mutex_trylock(&qp->rx_mu))
				return;
		}
		atomic_store(&qp->rx_kick, 0);
		if (iw_qp_state(qp) == RR_QPS_RTS)
			rr__iw_rx_run(qp, drain);
		pthread_mutex_unlock(&qp->rx_mu);
		if (!atomic_load(&qp->rx_kick))
			return;
	}
}

/*
 * The progress thread's entry to the receive path. ORDER: rx_skipped is set
 * before app_waiters is read again; a leaving waiter decrements app_waiters
 * before reading rx_skipped (both seq_cst), so one of them does the work.
 */
void rr__iw_qp_rx_progress(struct iw_qp *qp)
{
	if (atomic_load(&qp->app_waiters)) {
		atomic_store(&qp->rx_skipped, 1);
		if (atomic_load(&qp->app_waiters))
			return;
	}
	rr__iw_qp_rx_try(qp, true);
}

/*
 * The events a connected QP's socket is registered for, recomputed under
 * arm_mu whenever an input of the decision changes. Caller holds arm_mu.
 * ORDER: EPOLL_CTL_MOD reports readiness that is already there, so input
 * or send space that appeared while an event was off is not lost.
 */
static void arm_update(struct iw_qp *qp)
{
	uint32_t ev = EPOLLET | EPOLLRDHUP;

	if (!qp->handed)
		ev |= EPOLLIN;
	if (qp->want_out && !qp->ring) /* rings: the peer rings for space */
		ev |= EPOLLOUT;
	if (qp->in_epoll && ev != qp->armed)
		rr__iw_epoll_mod(qp->dev, qp->fd, &qp->poll, ev);
	qp->armed = ev;
}

void rr__iw_qp_arm_established(struct iw_qp *qp)
{
	pthread_mutex_lock(&qp->arm_mu);
	qp->armed = IW_QP_EVENTS;
	arm_update(qp);
	pthread_mutex_unlock(&qp->arm_mu);
}

/* Caller holds arm_mu; input is being handed again after a take-back. */
static void hand_ms_adapt(struct iw_qp *qp)
{
	uint32_t ms = atomic_load(&qp->hand_ms);
	uint64_t away;

	if (!qp->taken_ms)
		return;
	away = rr__iw_now_ms() - qp->taken_ms;
	if (away < IW_HANDBACK_RESET_MS)
		ms = ms * 2 > IW_HANDBACK_MAX_MS ? IW_HANDBACK_MAX_MS : ms * 2;
	else
		ms = IW_HANDBACK_MS;
	atomic_store(&qp->hand_ms, ms);
}

/* A thread is about to poll the socket in rr_cq_wait. */
void rr__iw_qp_waiter_enter(struct iw_qp *qp)
{
	struct iw_device *dev = qp->dev;

	pthread_mutex_lock(&qp->arm_mu);
	atomic_fetch_add(&qp->app_waiters, 1);
	if (!qp->handed) {
		hand_ms_adapt(qp);
		qp->handed = true;
		arm_update(qp);
		bool first = false;

		pthread_mutex_lock(&dev->mu);
		if (!qp->hand_listed) {
			rr_ref_get(&qp->ref);
			qp->hand_listed = true;
			qp->hand_next = dev->handed;
			first = !dev->handed;
			dev->handed = qp;
		}
		pthread_mutex_unlock(&dev->mu);
		/* The loop may sleep with no timer: it must start the clock. */
		if (first)
			rr__iw_wake(dev);
	}
	pthread_mutex_unlock(&qp->arm_mu);
}

void rr__iw_qp_waiter_leave(struct iw_qp *qp)
{
	atomic_store(&qp->app_left_ms, rr__iw_now_ms());
	atomic_fetch_sub(&qp->app_waiters, 1);
}

/* Caller holds dev->mu; drops the list's reference via *put. */
static bool unlist_handed(struct iw_qp *qp)
{
	if (!qp->hand_listed)
		return false;
	for (struct iw_qp **pp = &qp->dev->handed; *pp;
	     pp = &(*pp)->hand_next) {
		if (*pp == qp) {
			*pp = qp->hand_next;
			break;
		}
	}
	qp->hand_listed = false;
	return true;
}

static void iw_qp_unhand(struct iw_qp *qp)
{
	bool put;

	pthread_mutex_lock(&qp->dev->mu);
	put = unlist_handed(qp);
	pthread_mutex_unlock(&qp->dev->mu);
	if (put)
		rr__iw_qp_put(qp);
}

/*
 * Caller holds arm_mu. True when the list's reference must be dropped.
 * *due: lowered to the milliseconds until qp may be taken back.
 */
static bool take_back_one(struct iw_qp *qp, uint64_t now, int *due)
{
	uint64_t ms = atomic_load(&qp->hand_ms);
	uint64_t left = atomic_load(&qp->app_left_ms);
	bool put;

	if (!qp->handed)
		return false;
	if (atomic_load(&qp->app_waiters) || now - left < ms) {
		uint64_t in =
			atomic_load(&qp->app_waiters) ? ms : left + ms - now;

		if (in < (uint64_t)*due)
			*due = (int)in;
		return false;
	}
	/* ORDER: re-enabling EPOLLIN reports input already queued. */
	qp->handed = false;
	qp->taken_ms = now;
	arm_update(qp);
	pthread_mutex_lock(&qp->dev->mu);
	put = unlist_handed(qp);
	pthread_mutex_unlock(&qp->dev->mu);
	return put;
}

/*
 * Progress thread: watch again the sockets no application waits on.
 * Returns the milliseconds until the next of them may be due.
 */
int rr__iw_qp_take_back(struct iw_device *dev)
{
	struct iw_qp *batch[16];
	uint64_t now = rr__iw_now_ms();
	int n = 0, due = IW_HANDBACK_MAX_MS;

	pthread_mutex_lock(&dev->mu);
	for (struct iw_qp *qp = dev->handed; qp && n < 16; qp = qp->hand_next) {
		rr_ref_get(&qp->ref);
		batch[n++] = qp;
	}
	pthread_mutex_unlock(&dev->mu);
	for (int i = 0; i < n; i++) {
		bool put;

		pthread_mutex_lock(&batch[i]->arm_mu);
		put = take_back_one(batch[i], now, &due);
		pthread_mutex_unlock(&batch[i]->arm_mu);
		if (put)
			rr__iw_qp_put(batch[i]);
		rr__iw_qp_put(batch[i]);
	}
	/* more than a batch: those left out are looked at soon */
	return n == 16 && due > IW_HANDBACK_MS ? IW_HANDBACK_MS : due;
}

/* Caller holds tx_mu. */
void rr__iw_qp_want_out(struct iw_qp *qp, bool on)
{
	if (qp->want_out == on)
		return;
	pthread_mutex_lock(&qp->arm_mu);
	qp->want_out = on;
	arm_update(qp);
	pthread_mutex_unlock(&qp->arm_mu);
}

void rr__iw_tx_error(struct iw_qp *qp)
{
	qp_fail_async(qp);
}

static uint32_t fpdu_payload_max(int fd)
{
	int mss = 0;
	socklen_t len = sizeof(mss);
	uint32_t max = 65535 + 2 - IW_UNTAGGED_HDR_LEN;

	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) == 0 &&
	    mss > 512) {
		uint32_t m =
			(uint32_t)mss - IW_UNTAGGED_HDR_LEN - 3 - IW_CRC_LEN;

		if (m < max)
			max = m;
	}
	return max & ~3u;
}

/* Handshake done: the stream now carries FPDUs. */
void rr__iw_qp_set_established(struct iw_qp *qp, int fd)
{
	int one = 1;

	qp->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	qp->fpdu_max = fpdu_payload_max(fd);
	qp->cma = qp->dev->shm && qp->peer_pid > 0;
	qp->ring = qp->link.map != NULL;
	atomic_store(&qp->bell_seen, qp->ring); /* bells may be there already */
	atomic_store(&qp->state, RR_QPS_RTS);
}

/* ------------------------------------------------------------- posting */

static int send_wr_check(struct iw_qp *qp, const struct rr_send_wr *wr)
{
	const struct rr_qp_attr *a = &qp->base.attr;
	uint64_t total;

	if (wr->num_sge > a->max_send_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	switch (wr->opcode) {
	case RR_WR_SEND:
	case RR_WR_SEND_WITH_INV:
	case RR_WR_RDMA_WRITE:
		break;
	case RR_WR_RDMA_READ:
		if (wr->num_sge != 1)
			return -EINVAL; /* one sink STag per Read Request */
		break;
	case RR_WR_LOCAL_INV:
		return 0;
	case RR_WR_REG:
		if (!wr->reg.mw || !wr->reg.mr ||
		    wr->reg.mw->pd != qp->base.pd ||
		    (wr->reg.access & ~(unsigned)(RR_ACCESS_REMOTE_READ |
						  RR_ACCESS_REMOTE_WRITE)))
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
	if (rr__iw_sge_check(qp->dev, qp->base.pd, wr->sg_list, wr->num_sge,
			     wr->opcode == RR_WR_RDMA_READ, &total))
		return -EINVAL;
	return total > UINT32_MAX ? -EINVAL : 0;
}

static void wqe_fill(struct iw_qp *qp, struct iw_wqe *w,
		     const struct rr_send_wr *wr)
{
	struct rr_sge *sge = w->sge;

	*w = (struct iw_wqe){.wr_id = wr->wr_id,
			     .opcode = (uint8_t)wr->opcode,
			     .flags = (uint8_t)wr->flags,
			     .num_sge = wr->num_sge,
			     .inval_rkey = wr->invalidate_rkey,
			     .sge = sge};
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		sge[i] = wr->sg_list[i];
		w->length += wr->sg_list[i].length;
	}
	if (wr->opcode == RR_WR_RDMA_WRITE || wr->opcode == RR_WR_RDMA_READ) {
		w->remote_addr = wr->rdma.remote_addr;
		w->rkey = wr->rdma.rkey;
	} else if (wr->opcode == RR_WR_REG) {
		struct iw_mw *mw = to_iw_mw(wr->reg.mw);

		/* The new key is visible at once so it can be advertised. */
		w->rkey = mw->idx << 8 | mw->next_key++;
		__atomic_store_n(&mw->base.rkey, w->rkey, __ATOMIC_RELEASE);
		w->mw = mw;
		w->mr = to_iw_mr(wr->reg.mr);
		w->reg_addr = wr->reg.addr;
		w->length = wr->reg.length;
		w->reg_access = wr->reg.access;
	}
	(void)qp;
}

int rr__iw_post_send(struct rr_qp *q, struct rr_send_wr *wr,
		     struct rr_send_wr **bad)
{
	struct iw_qp *qp = to_iw_qp(q);
	uint32_t depth = q->attr.sq_depth;
	int rc = 0;

	pthread_mutex_lock(&qp->tx_mu);
	if (iw_qp_state(qp) != RR_QPS_RTS)
		rc = -ENOTCONN;
	for (; wr && !rc; wr = wr->next) {
		rc = send_wr_check(qp, wr);
		if (rc)
			break;
		if (atomic_load(&qp->sq_free) <= 0) {
			rc = -ENOMEM;
			break;
		}
		atomic_fetch_sub(&qp->sq_free, 1);
		wqe_fill(qp, &qp->sq[qp->sq_head % depth], wr);
		qp->sq_head++;
	}
	if (rc && bad)
		*bad = wr;
	rr__iw_tx_run(qp);
	pthread_mutex_unlock(&qp->tx_mu);
	return rc;
}

int rr__iw_post_recv(struct rr_qp *q, struct rr_recv_wr *wr,
		     struct rr_recv_wr **bad)
{
	struct iw_qp *qp = to_iw_qp(q);
	uint32_t depth = q->attr.rq_depth;
	int rc = 0;

	pthread_mutex_lock(&qp->rq_mu);
	if (iw_qp_state(qp) == RR_QPS_ERROR)
		rc = -ENOTCONN;
	for (; wr && !rc; wr = wr->next) {
		struct iw_rwqe *r = &qp->rq[qp->rq_head % depth];
		uint64_t total;

		if (wr->num_sge > q->attr.max_recv_sge ||
		    (wr->num_sge && !wr->sg_list) ||
		    rr__iw_sge_check(qp->dev, q->pd, wr->sg_list, wr->num_sge,
				     true, &total)) {
			rc = -EINVAL;
			break;
		}
		if (atomic_load(&qp->rq_free) <= 0) {
			rc = -ENOMEM;
			break;
		}
		atomic_fetch_sub(&qp->rq_free, 1);
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		r->length = total;
		memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(*r->sge));
		qp->rq_head++;
	}
	if (rc && bad)
		*bad = wr;
	pthread_mutex_unlock(&qp->rq_mu);
	return rc;
}

/* ------------------------------------------------------ close, destroy */

int rr__iw_disconnect(struct rr_qp *q)
{
	struct iw_qp *qp = to_iw_qp(q);

	pthread_mutex_lock(&qp->rx_mu);
	rr__iw_qp_fail(qp, RR_WC_WR_FLUSH_ERR, RR_CM_DISCONNECTED, 0);
	pthread_mutex_unlock(&qp->rx_mu);
	return 0;
}

/*
 * ORDER: whatever the error transition has not flushed yet is flushed
 * here first, under the same locks, so each marker follows every earlier
 * request of its queue into the CQ.
 */
int rr__iw_drain(struct rr_qp *q, uint64_t sq_wr_id, uint64_t rq_wr_id)
{
	struct iw_qp *qp = to_iw_qp(q);
	struct iw_wqe w = {.wr_id = sq_wr_id,
			   .opcode = RR_WR_SEND,
			   .flags = RR_SEND_SIGNALED};
	int rc = 0;

	pthread_mutex_lock(&qp->rx_mu);
	pthread_mutex_lock(&qp->tx_mu);
	pthread_mutex_lock(&qp->rq_mu);
	if (iw_qp_state(qp) != RR_QPS_ERROR)
		rc = -EINVAL;
	else if (atomic_load(&qp->sq_free) <= 0 ||
		 atomic_load(&qp->rq_free) <= 0)
		rc = -ENOMEM;
	pthread_mutex_unlock(&qp->rq_mu);
	if (!rc) {
		flush_sends(qp);
		atomic_fetch_sub(&qp->sq_free, 1);
		rr__iw_qp_complete_send(qp, &w, RR_WC_WR_FLUSH_ERR, 0);
	}
	pthread_mutex_unlock(&qp->tx_mu);
	if (!rc) {
		flush_recvs(qp);
		atomic_fetch_sub(&qp->rq_free, 1);
		recv_complete(qp, rq_wr_id, RR_WC_WR_FLUSH_ERR);
	}
	pthread_mutex_unlock(&qp->rx_mu);
	return rc;
}

/* Both CQs of a QP (one when they are the same), in address order. */
static void cqs_lock(struct iw_qp *qp)
{
	struct iw_cq *a = qp->scq < qp->rcq ? qp->scq : qp->rcq;
	struct iw_cq *b = qp->scq < qp->rcq ? qp->rcq : qp->scq;

	pthread_mutex_lock(&a->mu);
	if (b != a)
		pthread_mutex_lock(&b->mu);
}

static void cqs_unlock(struct iw_qp *qp)
{
	pthread_mutex_unlock(&qp->scq->mu);
	if (qp->rcq != qp->scq)
		pthread_mutex_unlock(&qp->rcq->mu);
}

/*
 * Caller holds every lock of the QP: the old connection's completions go
 * (with the CQ locks held no poll gives their slots back meanwhile, so the
 * queues can be counted full again), and so does a hand-over listing that
 * a thread in rr_cq_wait made after iw_qp_unhand. Returns the old socket.
 */
static int reset_locked(struct iw_qp *qp)
{
	struct rr_qp *q = &qp->base;
	int fd = qp->fd;
	bool put;

	rr__iw_cq_purge_locked(qp->scq, q);
	if (qp->rcq != qp->scq)
		rr__iw_cq_purge_locked(qp->rcq, q);
	pthread_mutex_lock(&qp->dev->mu);
	put = unlist_handed(qp);
	pthread_mutex_unlock(&qp->dev->mu);
	if (put)
		rr_ref_put(&qp->ref); /* never the last: the user holds one */
	ring_close(qp);
	qp_fresh(qp);
	return fd;
}

/*
 * Destroy and reset both start here: the QP fails (flushing what is
 * posted), leaves the CM's lists and the progress thread, and once a
 * progress-loop pass has gone by no thread is reading its socket.
 */
static void quiesce(struct iw_qp *qp)
{
	pthread_mutex_lock(&qp->rx_mu);
	rr__iw_qp_fail(qp, RR_WC_WR_FLUSH_ERR, (enum rr_cm_event_type) - 1, 0);
	pthread_mutex_unlock(&qp->rx_mu);
	rr__iw_cm_unlist(qp);
	iw_qp_unhand(qp);
	if (qp->in_epoll) {
		rr__iw_epoll_del(qp->dev, qp->fd);
		rr__iw_epoch_barrier(qp->dev);
	}
}

/*
 * Destroy up to the point where memory would be freed, then the QP is as
 * new (qp_fresh). ORDER: the error transition first (no more traffic, no
 * more events: a QP reports only its first one), then the progress thread
 * is made to forget the socket (epoll, epoch), then the events and
 * completions of the old connection are dropped under the locks every
 * path into the QP takes, in the documented order (rx, tx, rq, then the
 * CQs, whose waiters take arm_mu under them, then arm_mu). A thread still
 * in poll() on the old socket holds its own reference to it and is woken
 * by the shutdown; when it comes back it finds the QP out of RTS. One that
 * read the descriptor but has not reached poll() yet may poll whatever
 * file the number names next: it wakes spuriously at worst (it polls the
 * CQ's eventfd too, and rechecks the QP's state before reading).
 */
int rr__iw_qp_reset(struct rr_qp *q)
{
	struct iw_qp *qp = to_iw_qp(q);
	int fd;

	quiesce(qp);
	rr__iw_evch_purge(qp->evch, q);
	pthread_mutex_lock(&qp->rx_mu);
	pthread_mutex_lock(&qp->tx_mu);
	pthread_mutex_lock(&qp->rq_mu);
	cqs_lock(qp);
	pthread_mutex_lock(&qp->arm_mu);
	fd = reset_locked(qp);
	pthread_mutex_unlock(&qp->arm_mu);
	cqs_unlock(qp);
	pthread_mutex_unlock(&qp->rq_mu);
	pthread_mutex_unlock(&qp->tx_mu);
	pthread_mutex_unlock(&qp->rx_mu);
	if (fd >= 0)
		close(fd);
	return 0;
}

int rr__iw_qp_destroy(struct rr_qp *q)
{
	struct iw_qp *qp = to_iw_qp(q);
	const struct rr_qp_attr *a = &q->attr;

	quiesce(qp);
	rr__iw_cq_detach(qp->scq, qp, a->sq_depth);
	rr__iw_cq_detach(qp->rcq, qp, a->rq_depth);
	rr__iw_cq_purge(qp->scq, q);
	if (qp->rcq != qp->scq)
		rr__iw_cq_purge(qp->rcq, q);
	rr__iw_evch_purge(qp->evch, q);
	atomic_fetch_sub(&to_iw_pd(q->pd)->users, 1);
	rr__iw_qp_put(qp);
	return 0;
}
