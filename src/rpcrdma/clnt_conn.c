/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client: the connection's life. Connecting and reconnecting are one path:
 *
 *   BACKOFF --(time)--> CONNECTING --(ESTABLISHED)--> UP
 *   CONNECTING --(refused, unreachable, timeout)--> DRAINING
 *   UP --(error, flush, disconnect)--> DRAINING --(drained)--> BACKOFF
 *
 * Losing the connection fences every call's memory at once (rr_mw_fence:
 * its windows' keys are dead on any connection, without a work request).
 * A call still waiting for its reply keeps its slot and xid and is sent
 * again on the next connection (unless the client is soft or shutting
 * down), so a server with a duplicate request cache answers it instead of
 * running it twice. The QP is drained (every request completes or flushes
 * exactly once: invariant 4), then reset for the next connection; each
 * connection gets a new generation in its work request ids, and credits
 * start again at one (RFC 8166 section 3.3). The first retry is
 * immediate; later ones back off exponentially up to reconnect_max_ms,
 * and the first reply on a new connection resets that.
 *
 * Forward progress without fresh memory (invariant 6): everything a
 * connection needs was made with the client (the QP and its queues, the
 * CQ, the windows, send contexts, receive buffers, request slots), and
 * the provider keeps a QP's CM events in the QP. Reset and fence allocate
 * nothing (iwarp, faults), so a reconnect works when every allocation
 * fails. A provider that cannot reset (verbs may fail to, for rdma-core
 * allocates) gets its QP destroyed and a new one made on the next try.
 *
 * Nothing here blocks: whoever drives the client (rr__clnt_drive) steps this
 * machine. Caller holds c->mu throughout.
 */
#include "rpc/call_priv.h"
#include "rpcrdma/clnt.h"

#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <string.h>

/* The connection is gone, its QP reset: nothing of it completes now. */
static void forget_qp(struct rr_clnt *c)
{
	if (c->qp && rr_qp_reset(c->qp)) {
		rr_warn_rl("rpcrdma: QP not reset: a new one next time");
		rr_qp_destroy(c->qp);
		c->qp = NULL;
	}
	c->qp_in_use = false;
	for (uint32_t i = 0; i < c->nrecv; i++)
		c->recv_out[i] = false;
	for (uint32_t i = 0; i < c->nsctx; i++)
		c->sctx[i].busy = false;
	rr__clnt_cb_forget(c);
	c->sctx_head = c->sctx_tail = 0;
	c->sq_posted = c->sq_retired = 0;
	c->unsignaled = 0;
	c->drain_posted = c->drain_sq = c->drain_rq = false;
}

static void backoff(struct rr_clnt *c)
{
	if (rr__clnt_stopping(c) || c->o.no_reconnect) {
		rr__clnt_conn_move(c, CLNT_DOWN);
		rr__clnt_fail_all(c, -ECONNRESET);
		return;
	}
	rr__clnt_conn_move(c, CLNT_BACKOFF);
	c->retry_ms = rr__backoff_next(&c->backoff, c->state_ms,
				       c->o.reconnect_max_ms);
}

/*
 * The QP (made the first time only), its receives posted, the connection
 * asked for.
 */
static int clnt_conn_start(struct rr_clnt *c)
{
	struct rr_qp_attr a = c->qp_attr;
	uint8_t pd[RR_CPARAMS_LEN];
	int rc;

	a.context = c;
	if (!c->qp) {
		rc = rr_qp_create(c->pd, &a, &c->qp);
		if (rc)
			return rc;
	}
	c->qp_in_use = true;
	c->gen = (uint16_t)(c->gen + 1) ? (uint16_t)(c->gen + 1) : 1;
	for (uint32_t i = 0; i < c->nrecv; i++)
		rr__clnt_post_recv_on(c, i);
	/*
	 * Windows welcome Send With Invalidate (it saves a LOCAL_INV per
	 * call); a region registered per call may refuse it (rxe does).
	 */
	rr__xprt_cparams(pd, c->o.inline_size, !c->per_call);
	rc = rr_qp_connect(c->qp, (struct sockaddr *)&c->peers[c->peer_idx].ss,
			   c->peers[c->peer_idx].len, pd, sizeof(pd));
	if (rc)
		return rc; /* the caller drains what was posted */
	rr__clnt_conn_move(c, CLNT_CONNECTING);
	c->st.connects++;
	return 0;
}

static void up(struct rr_clnt *c, const struct rr_cm_event *ev)
{
	bool peer_inv;

	rr__xprt_negotiate(ev->private_data, ev->private_data_len,
			   c->o.inline_size, &c->inline_send, &c->inline_recv,
			   &peer_inv);
	rr_dbg("rpcrdma: up: inline send %u recv %u (peer's data: %u bytes)",
	       c->inline_send, c->inline_recv, ev->private_data_len);
	c->granted = 1; /* until the server's first grant (RFC 8166 3.3.1) */
	rr__clnt_conn_move(c, CLNT_UP);
	if (c->st.connects > 1)
		rr_info_rl("rpcrdma: reconnected (attempt %llu)",
			   (unsigned long long)c->st.connects);
}

/*
 * The receives posted for the attempt flush like those of any lost
 * connection, and are drained the same way before the QP is reset
 * (invariant 4): a reset drops what was not polled.
 */
/* After a failed attempt the next tries the next server (failover). */
static void connect_failed(struct rr_clnt *c, int why)
{
	c->last_connect_rc = why;
	c->peer_idx = (c->peer_idx + 1) % c->npeers;
	if (!c->qp_in_use) {
		backoff(c);
		return;
	}
	rr_qp_disconnect(c->qp);
	rr__clnt_conn_move(c, CLNT_DRAINING);
}

static void cm_events(struct rr_clnt *c)
{
	struct rr_cm_event ev;

	while (rr_evch_get(c->ch, &ev, 0) == 0) {
		if (ev.qp != c->qp)
			continue; /* a QP already destroyed */
		if (c->conn_state == CLNT_CONNECTING &&
		    ev.type == RR_CM_ESTABLISHED)
			up(c, &ev);
		else if (c->conn_state == CLNT_CONNECTING)
			connect_failed(c,
				       ev.type == RR_CM_REJECTED
					       ? -ECONNREFUSED
					       : (ev.status ? ev.status
							    : -EHOSTUNREACH));
		else if (ev.type == RR_CM_DISCONNECTED ||
			 ev.type == RR_CM_QP_ERROR)
			rr__clnt_conn_lost(c, -ECONNRESET);
	}
}

void rr__clnt_post_drain(struct rr_clnt *c)
{
	if (rr_qp_drain(c->qp, rr_wrid(c->gen, RR_WRK_DRAIN, 0, 0),
			rr_wrid(c->gen, RR_WRK_DRAIN, 1, 0)))
		return; /* -ENOMEM: flushes to poll first */
	c->drain_posted = true;
	c->sq_posted++;
}

bool rr__clnt_drained(const struct rr_clnt *c)
{
	if (!c->drain_sq || !c->drain_rq || c->sq_posted != c->sq_retired)
		return false;
	for (uint32_t i = 0; i < c->nrecv; i++)
		if (c->recv_out[i])
			return false;
	return true;
}

/* The old QP is drained (or gave up draining): on to the next. */
static void drain_step(struct rr_clnt *c)
{
	uint64_t now = rr_mono_ms();

	if (!c->drain_posted)
		rr__clnt_post_drain(c);
	if (!rr__clnt_drained(c) && now - c->state_ms < CLNT_DRAIN_MS)
		return;
	if (!rr__clnt_drained(c)) {
		c->st.teardown_unbalanced++;
		rr_err_rl("rpcrdma: connection torn down undrained: sends %llu "
			  "outstanding, markers %s/%s",
			  (unsigned long long)(c->sq_posted - c->sq_retired),
			  c->drain_sq ? "back" : "out",
			  c->drain_rq ? "back" : "out");
	}
	forget_qp(c);
	backoff(c);
}

/*
 * One step of the machine: CM events, then the timers. Returns how long
 * the caller may wait for completions before stepping again (-1: no limit).
 */
int rr__clnt_conn_step(struct rr_clnt *c)
{
	uint64_t now;
	int rc;

	if (c->qp_in_use)
		cm_events(c);
	now = rr_mono_ms();
	switch (c->conn_state) {
	case CLNT_UP:
	case CLNT_DOWN:
	case CLNT_NSTATES:
		return -1;
	case CLNT_DRAINING:
		drain_step(c);
		return 10;
	case CLNT_CONNECTING:
		if (now - c->state_ms >= (uint64_t)c->o.connect_timeout_ms)
			connect_failed(c, -ETIMEDOUT);
		return 10;
	case CLNT_BACKOFF:
		/* Nobody needs a connection: stay idle until somebody does. */
		if (!c->wait_head && !c->resend_head)
			return -1;
		if (now < c->retry_ms)
			return (int)(c->retry_ms - now);
		rc = clnt_conn_start(c);
		if (rc)
			connect_failed(c, rc);
		return 10;
	}
	return -1;
}

/*
 * Connection lost or unusable. Fence: the QP goes to error (no further
 * access through it), and every window a call still exposes is fenced
 * (rr_mw_fence), so its rkey is dead for any connection. Calls that had their
 * reply complete; calls waiting for one are sent again on the next
 * connection, or fail with rc when the client is soft or stopping.
 */
void rr__clnt_conn_lost(struct rr_clnt *c, int rc)
{
	bool resend = !rr__clnt_stopping(c) && !c->o.no_reconnect && !c->o.soft;

	if (rr__clnt_dead(c))
		return;
	c->st.conn_lost++;
	/* UP always has its QP in use (clnt_conn_start) */
	rr_qp_disconnect(c->qp);
	rr__clnt_conn_move(c, CLNT_DRAINING);
	for (uint32_t i = 0; i < c->nreqs; i++) {
		struct clnt_req *r = &c->reqs[i];

		if (r->state == REQ_FREE || r->state == REQ_RESEND)
			continue;
		rr__clnt_req_unexpose(c, r);
		if (r->state == REQ_FENCING_OWED) /* its reply can never come */
			rr__clnt_req_move(c, r, REQ_FENCING);
		if (r->state == REQ_SENT && resend &&
		    !rr__call_priv(r->call)->cancel) {
			rr__clnt_req_resend(c, r);
			continue;
		}
		if (r->state == REQ_SENT)
			r->final_rc = rc;
		rr__clnt_req_finish(c, r);
	}
	if (!resend)
		rr__clnt_fail_all(c, rc);
}

/* One attempt at the first connection, to peer_idx, waited for. */
static int conn_first_to(struct rr_clnt *c)
{
	uint64_t end = rr_mono_ms() + (uint64_t)c->o.connect_timeout_ms;
	struct rr_cm_event ev;
	int rc = clnt_conn_start(c);

	while (!rc) {
		uint64_t now = rr_mono_ms();

		rc = now < end ? rr_evch_get(c->ch, &ev, (int)(end - now))
			       : -ETIMEDOUT;
		if (rc || ev.qp != c->qp)
			continue;
		if (ev.type == RR_CM_ESTABLISHED) {
			up(c, &ev);
			return 0;
		}
		rc = ev.type == RR_CM_REJECTED
			     ? -ECONNREFUSED
			     : (ev.status ? ev.status : -ECONNREFUSED);
	}
	if (c->qp_in_use) {
		rr__clnt_drain_now(c);
		forget_qp(c);
	}
	return rc;
}

/*
 * Attempts at one server when the connection manager says the local
 * address is in use: siw binds its TCP socket to the port the CM chose,
 * which an earlier connection's socket may still hold (a CLI running
 * command after command meets it). Each attempt gets a new port.
 */
#define FIRST_INUSE_TRIES 3

static int conn_first_peer(struct rr_clnt *c)
{
	int rc = conn_first_to(c);

	for (int t = 1; rc == -EADDRINUSE && t < FIRST_INUSE_TRIES; t++) {
		if (c->conn_state != CLNT_BACKOFF)
			rr__clnt_conn_move(c, CLNT_BACKOFF);
		rc = conn_first_to(c);
	}
	return rc;
}

/*
 * The first connection: as any other, but waited for, and not retried
 * beyond one attempt at each server (a few when the local port was in
 * use). A client that never had a connection reports why the last
 * attempt failed.
 */
int rr__clnt_conn_first(struct rr_clnt *c)
{
	int rc = -EHOSTUNREACH;

	for (uint32_t i = 0; i < c->npeers; i++) {
		c->peer_idx = i;
		rc = conn_first_peer(c);
		if (!rc)
			return 0;
		/* CONNECTING again, from here (an attempt that never left
		 * BACKOFF is there already) */
		if (i + 1 < c->npeers && c->conn_state != CLNT_BACKOFF)
			rr__clnt_conn_move(c, CLNT_BACKOFF);
	}
	c->peer_idx = 0;
	rr__clnt_conn_move(c, CLNT_DOWN);
	return rc;
}
