/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client: completions. Every completion's id is checked against what is
 * outstanding (generation, kind, slot, use count) before it is acted on
 * (invariant 4). A reply may arrive before the completion of the Send that
 * carried its call: send contexts are released by Send completions alone
 * (invariant 2), never by replies.
 */
#include "base/clock.h"
#include "rpc/call_priv.h"
#include "rpcrdma/clnt.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define POLL_BATCH 32

/* Reposts a receive buffer after its message was handled. */
static void clnt_post_recv(struct rr_clnt *c, uint32_t i)
{
	if (!rr__clnt_dead(c))
		rr__clnt_post_recv_on(c, i);
}

/* Posts receive buffer i on the current QP, connected or connecting. */
void rr__clnt_post_recv_on(struct rr_clnt *c, uint32_t i)
{
	struct rr_sge sge = {.addr = (uintptr_t)rr_bufpool_at(&c->recvbufs, i),
			     .length = c->recvbufs.size,
			     .lkey = rr_mr_lkey(c->recvbufs.mr)};
	struct rr_recv_wr wr = {.sg_list = &sge, .num_sge = 1};

	wr.wr_id = rr_wrid(c->gen, RR_WRK_RECV, i, ++c->recv_seq[i]);
	if (rr_qp_post_recv(c->qp, &wr, NULL)) {
		rr__clnt_conn_lost(c, -ECONNRESET);
		return;
	}
	c->recv_out[i] = true;
}

/* A signaled completion retires every send-queue entry posted before it. */
static void sq_retire(struct rr_clnt *c, uint64_t mark)
{
	if (mark > c->sq_retired)
		c->sq_retired = mark;
	while (c->sctx_head != c->sctx_tail) {
		struct clnt_sendctx *sc = &c->sctx[c->sctx_head % c->nsctx];

		if (sc->sq_mark > c->sq_retired)
			break;
		sc->busy = false;
		c->sctx_head++;
	}
}

/* RPC reply header and results; the caller's result buffer gets them. */
int rr__clnt_decode_reply(struct rr_clnt *c, struct clnt_req *r,
			  const uint8_t *rpc, size_t len)
{
	int rc = rr__reply_take(r->call, r->xid, rpc, len);

	if (rc == -EPROTO)
		c->st.bad_headers++;
	return rc;
}

/* The write list of a reply: only our one chunk, at most its length. */
static int check_write_list(struct rr_clnt *c, struct clnt_req *r,
			    const struct rr_rdma_hdr *h)
{
	if (!h->nwrite)
		return 0;
	if (!r->has_res_chunk || h->nwrite != 1 || h->writes[0].nsegs != 1 ||
	    h->writes[0].segs[0].handle != r->mws[r->has_arg_chunk].rkey ||
	    h->writes[0].segs[0].length > r->res_span.len) {
		c->st.bad_headers++;
		return -EPROTO;
	}
	r->call->res_bulk_len = h->writes[0].segs[0].length;
	return 0;
}

/* RDMA_NOMSG: the reply sits in our reply chunk, read after the fence. */
static int check_reply_chunk(struct rr_clnt *c, struct clnt_req *r,
			     const struct rr_rdma_hdr *h)
{
	if (!r->has_reply_chunk || !h->has_reply || h->reply.nsegs != 1 ||
	    h->reply.segs[0].length > r->reply_span.len) {
		c->st.bad_headers++;
		return -EPROTO;
	}
	r->reply_in_chunk = true;
	r->reply_chunk_len = h->reply.segs[0].length;
	return 0;
}

/*
 * Send With Invalidate must name one of this call's live windows. With
 * registration per call it was not invited: counted as bad, and the
 * region is still deregistered, as always.
 */
static int check_remote_inv(struct rr_clnt *c, struct clnt_req *r,
			    const struct rr_wc *wc)
{
	if (!(wc->flags & RR_WC_WITH_INV))
		return 0;
	for (uint32_t i = 0; i < r->nmw; i++) {
		if (r->mws[i].live && r->mws[i].rkey == wc->invalidated_rkey) {
			if (c->per_call) {
				c->st.bad_remote_invs++;
				return 0;
			}
			r->mws[i].live = false;
			c->st.remote_invs++;
			return 0;
		}
	}
	c->st.bad_remote_invs++;
	return -EPROTO;
}

static struct clnt_req *req_of_xid(struct rr_clnt *c, uint32_t xid)
{
	uint32_t i = xid & 0xffff;
	struct clnt_req *r = i < c->nreqs ? &c->reqs[i] : NULL;

	if (!r || r->xid != xid ||
	    (r->state != REQ_SENT && r->state != REQ_ABANDONED &&
	     r->state != REQ_FENCING_OWED))
		return NULL;
	return r;
}

static int handle_msg(struct rr_clnt *c, struct clnt_req *r,
		      const struct rr_rdma_hdr *h, const uint8_t *buf, int hl,
		      uint32_t len)
{
	int rc;

	if (h->proc == RR_RDMA_ERROR) {
		/* ERR_CHUNK: what we offered could not carry the reply. */
		c->st.rdma_errors_received++;
		return h->err == RR_ERR_VERS ? -EPROTONOSUPPORT : -EMSGSIZE;
	}
	rc = check_write_list(c, r, h);
	if (rc)
		return rc;
	if (h->proc == RR_RDMA_NOMSG)
		return check_reply_chunk(c, r, h);
	return rr__clnt_decode_reply(c, r, buf + hl, len - (uint32_t)hl);
}

static void handle_reply(struct rr_clnt *c, uint32_t i, const struct rr_wc *wc)
{
	const uint8_t *buf = rr_bufpool_at(&c->recvbufs, i);
	struct rr_rdma_hdr *h = &c->rhdr;
	struct clnt_req *r;
	int hl = rr__rdma_hdr_decode(buf, wc->byte_len, h), rc;

	if (hl < 0) {
		c->st.bad_headers++;
		clnt_post_recv(c, i);
		return;
	}
	/* The server's call: its rdma_credit is not our grant. */
	if (rr__clnt_cb_recv(c, i, h, hl, wc->byte_len))
		return;
	rr__backoff_reset(&c->backoff);
	c->ka.last_rx_ms = rr_mono_ms(); /* alive (clnt_keepalive.c) */
	/* RFC 8166 3.3: the grant; 0 counts as 1, never beyond our slots. */
	c->granted = h->credits
			     ? (h->credits < c->nreqs ? h->credits : c->nreqs)
			     : 1;
	r = req_of_xid(c, h->xid);
	if (!r) {
		c->st.bad_xids++;
		clnt_post_recv(c, i);
		return;
	}
	if (check_remote_inv(c, r, wc)) {
		/* This call fails (not sent again); the connection goes. */
		if (r->state == REQ_SENT) {
			rr__clnt_req_move(c, r, REQ_FENCING);
			r->final_rc = -EPROTO;
		}
		rr__clnt_conn_lost(c, -EPROTO);
		return;
	}
	if (r->state != REQ_SENT) {
		/* The reply owed to a call already returned: drop it. */
		if (r->state == REQ_FENCING_OWED)
			rr__clnt_req_move(c, r, REQ_FENCING);
		clnt_post_recv(c, i);
		if (r->state == REQ_ABANDONED)
			rr__clnt_req_finish(c, r);
		return;
	}
	if (c->sctx[r->sctx].busy)
		c->st.reply_before_send_cqe++;
	rc = handle_msg(c, r, h, buf, hl, wc->byte_len);
	/*
	 * ORDER: fenced before the receive is reposted. A repost that fails
	 * loses the connection, which sends calls still SENT again: this
	 * one has its reply, it must not be among them.
	 */
	rr__clnt_fence(c, r, rc);
	clnt_post_recv(c, i);
}

static void handle_linv(struct rr_clnt *c, struct clnt_req *r)
{
	sq_retire(c, r->linv_mark);
	r->nlinv_out = 0;
	for (uint32_t i = 0; i < r->nmw; i++)
		r->mws[i].live = false;
	rr__clnt_req_finish(c, r);
}

/*
 * An error completion (or a drain marker): nothing is acted upon, but
 * each queue's count goes down by the one request it accounts for.
 */
static void account_error(struct rr_clnt *c, unsigned kind, uint32_t slot,
			  uint32_t seq)
{
	if (kind == RR_WRK_DRAIN) {
		if (!c->drain_posted) {
			c->st.unknown_cqes++;
		} else if (slot == 0 && !c->drain_sq) {
			c->drain_sq = true;
			sq_retire(c, c->sq_posted);
		} else if (slot == 1) {
			c->drain_rq = true;
		}
		return;
	}
	if (kind == RR_WRK_RECV) {
		if (slot < c->nrecv && c->recv_out[slot] &&
		    c->recv_seq[slot] == seq)
			c->recv_out[slot] = false;
		return;
	}
	if (kind == RR_WRK_SEND && slot < c->nsctx) {
		if (c->sctx[slot].seq != seq || c->sctx[slot].cqe_seen)
			return;
		c->sctx[slot].cqe_seen = true;
	}
	if (kind == RR_WRK_CB_SEND && !rr__clnt_cb_send_done(c, slot, seq))
		return;
	if (c->sq_retired < c->sq_posted)
		sq_retire(c, c->sq_retired + 1);
}

static void dispatch(struct rr_clnt *c, const struct rr_wc *wc)
{
	uint64_t id = wc->wr_id;
	uint32_t slot = rr_wrid_slot(id), seq = rr_wrid_seq(id);
	unsigned kind = rr_wrid_kind(id);

	if (rr_wrid_gen(id) != c->gen) {
		c->st.stale_cqes++;
		return;
	}
	if (wc->status != RR_WC_SUCCESS || rr__clnt_dead(c)) {
		if (!rr__clnt_dead(c))
			rr_info_rl("rpcrdma: %s on a %u completion: connection "
				   "lost",
				   rr_wc_status_str(wc->status), kind);
		account_error(c, kind, slot, seq);
		rr__clnt_conn_lost(c, -ECONNRESET);
		return;
	}
	if (kind == RR_WRK_RECV && slot < c->nrecv && c->recv_out[slot] &&
	    c->recv_seq[slot] == seq) {
		/* ORDER: cleared before the buffer is reposted in there. */
		c->recv_out[slot] = false;
		handle_reply(c, slot, wc);
	} else if (kind == RR_WRK_SEND && slot < c->nsctx &&
		   c->sctx[slot].seq == seq && !c->sctx[slot].cqe_seen) {
		/* Possibly already retired by a later completion. */
		c->sctx[slot].cqe_seen = true;
		sq_retire(c, c->sctx[slot].sq_mark);
	} else if (kind == RR_WRK_LINV && slot < c->nreqs &&
		   c->reqs[slot].seq == seq && c->reqs[slot].nlinv_out) {
		handle_linv(c, &c->reqs[slot]);
	} else if (kind == RR_WRK_CB_SEND) {
		uint64_t mark =
			slot < c->cb.nslots ? c->cb.slots[slot].sq_mark : 0;

		if (rr__clnt_cb_send_done(c, slot, seq))
			sq_retire(c, mark);
		else
			c->st.stale_cqes++;
	} else if (kind >= RR_WRK_SEND && kind <= RR_WRK_LINV) {
		c->st.stale_cqes++; /* a use already completed: duplicate/late
				     */
	} else {
		c->st.unknown_cqes++;
	}
}

/* Calls waiting to be sent again: nothing of theirs is exposed now. */
static void expire_resends(struct rr_clnt *c, uint64_t now)
{
	struct clnt_req **pp = &c->resend_head;

	c->resend_tail = NULL;
	while (*pp) {
		struct clnt_req *r = *pp;
		bool cancel = rr__call_priv(r->call)->cancel;

		if (!cancel && !(r->deadline_ms && now >= r->deadline_ms)) {
			c->resend_tail = r;
			pp = &r->rnext;
			continue;
		}
		*pp = r->rnext;
		if (cancel)
			c->st.cancels++;
		else
			c->st.timeouts++;
		r->final_rc = cancel ? -ECANCELED : -ETIMEDOUT;
		rr__clnt_req_move(c, r, REQ_FENCING);
		c->in_flight++; /* rr__clnt_req_finish gives the slot back */
		rr__clnt_req_finish(c, r);
	}
}

/* Calls never sent (no credit, or no connection) time out too. */
static void expire_queued(struct rr_clnt *c, uint64_t now)
{
	struct rr_call *call = c->wait_head;

	while (call) {
		struct rr_call *next = rr__call_priv(call)->next;

		if (rr__call_priv(call)->deadline_ms &&
		    now >= rr__call_priv(call)->deadline_ms) {
			c->st.timeouts++;
			rr__clnt_unqueue(c, call, -ETIMEDOUT);
		}
		call = next;
	}
}

/* Calls past their deadline are fenced and returned; the slot stays owed. */
static void check_timeouts(struct rr_clnt *c)
{
	uint64_t now = rr_mono_ms();

	for (uint32_t i = 0; i < c->nreqs; i++) {
		struct clnt_req *r = &c->reqs[i];
		bool cancel = r->call && rr__call_priv(r->call)->cancel;

		if (r->state != REQ_SENT ||
		    !(cancel || (r->deadline_ms && now >= r->deadline_ms)))
			continue;
		if (cancel)
			c->st.cancels++;
		else
			c->st.timeouts++;
		rr__clnt_req_move(c, r, REQ_FENCING_OWED);
		rr__clnt_fence(c, r, cancel ? -ECANCELED : -ETIMEDOUT);
	}
	expire_resends(c, now);
	expire_queued(c, now);
}

/* In completion order, until none is left (callbacks may complete more). */
void rr__clnt_run_callbacks(struct rr_clnt *c)
{
	struct rr_call_list l;

	for (;;) {
		pthread_mutex_lock(&c->mu);
		l = c->cb_done;
		c->cb_done = (struct rr_call_list){0};
		pthread_mutex_unlock(&c->mu);
		if (!l.n)
			return;
		rr__call_list_run(&l);
	}
}

/*
 * A failed first connect, at creation: no thread drives the client yet,
 * so the flushes of the receives the attempt posted are polled here,
 * bounded, until the drain markers are back (invariant 4), before the
 * QP is reset.
 */
void rr__clnt_drain_now(struct rr_clnt *c)
{
	uint64_t end = rr_mono_ms() + CLNT_DRAIN_MS;
	struct rr_wc wc[POLL_BATCH];

	rr_qp_disconnect(c->qp);
	while (!rr__clnt_drained(c) && rr_mono_ms() < end) {
		int n;

		if (!c->drain_posted)
			rr__clnt_post_drain(c);
		rr_cq_wait(c->cq, 10);
		n = rr_cq_poll(c->cq, wc, POLL_BATCH);
		for (int i = 0; i < n; i++)
			dispatch(c, &wc[i]);
	}
	if (!rr__clnt_drained(c))
		c->st.teardown_unbalanced++;
}

/*
 * One round of progress in the calling thread: wait for completions (the
 * provider may read the socket in this very thread), dispatch them, run
 * timers, start queued calls. Returns the number of completions handled,
 * or -EAGAIN when fd (>= 0) turned readable.
 */
int rr__clnt_drive(struct rr_clnt *c, int timeout_ms, int fd)
{
	struct rr_wc wc[POLL_BATCH];
	int n, rc, step;

	/* While (re)connecting, the machine's timers bound the wait. */
	pthread_mutex_lock(&c->mu);
	step = c->conn_state == CLNT_UP ? -1 : rr__clnt_conn_step(c);
	pthread_mutex_unlock(&c->mu);
	if (step >= 0 && (timeout_ms < 0 || step < timeout_ms))
		timeout_ms = step;
	rc = rr_cq_wait_fd(c->cq, timeout_ms, fd);
	/* fd readable: the timeouts are still checked, and the queue kicked */
	if (rc && rc != -ETIMEDOUT && rc != -EAGAIN)
		return rc;
	n = rr_cq_poll(c->cq, wc, POLL_BATCH);
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < n; i++)
		dispatch(c, &wc[i]);
	if (rr__clnt_dead(c))
		rr__clnt_conn_step(c);
	check_timeouts(c);
	rr__clnt_kick_queue(c);
	pthread_mutex_unlock(&c->mu);
	rr__clnt_run_callbacks(c);
	rr__clnt_cb_run(c);
	return n < 0 || rc != -EAGAIN ? n : rc;
}

/*
 * Teardown (invariant 4): the QP is in ERROR; the drain markers follow
 * every request into the CQ, and each queue must come back to zero
 * outstanding. No other thread drives the client any more.
 */
void rr__clnt_drain(struct rr_clnt *c)
{
	uint64_t deadline = rr_mono_ms() + CLNT_DRAIN_MS;
	struct rr_wc wc[POLL_BATCH];

	pthread_mutex_lock(&c->mu);
	while (!rr__clnt_drained(c) && rr_mono_ms() < deadline) {
		int n;

		if (!c->drain_posted)
			rr__clnt_post_drain(c);
		pthread_mutex_unlock(&c->mu);
		rr_cq_wait(c->cq, 10);
		n = rr_cq_poll(c->cq, wc, POLL_BATCH);
		pthread_mutex_lock(&c->mu);
		for (int i = 0; i < n; i++)
			dispatch(c, &wc[i]);
	}
	if (!rr__clnt_drained(c)) {
		c->st.teardown_unbalanced++;
		rr_err_rl("rpcrdma: client torn down undrained: sends %llu "
			  "outstanding, markers %s/%s",
			  (unsigned long long)(c->sq_posted - c->sq_retired),
			  c->drain_sq ? "back" : "out",
			  c->drain_rq ? "back" : "out");
	}
	pthread_mutex_unlock(&c->mu);
}
