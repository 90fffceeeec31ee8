/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client: liveness. An RDMA connection has no keepalive of its own: a
 * server that stalls, or whose host goes away without a word on the
 * fabric, leaves the QP looking healthy, and calls wait out their own
 * timeouts, or forever. So when no reply has arrived for keepalive_ms on a
 * connection that is up, the client sends a NULL call (procedure 0 of the
 * program and version last used, or of those in the options) and, if that
 * gets no reply within keepalive_timeout_ms, treats the connection as
 * lost. That is the path of any loss (clnt_conn.c): calls waiting for
 * replies go again on the next connection, with their xids. The Linux
 * client, for want of a keepalive, drops an RDMA connection when a call's
 * retransmit timer fires (xprt_rdma_timer, after a minute by default);
 * the probe finds a silent server without waiting for an application's
 * call to time out, and on an idle connection too.
 *
 * The probe is an ordinary asynchronous call. It waits for a credit and a
 * request slot like any other, behind the calls already waiting, and gives
 * them back the same way whatever its end (reply, timeout, loss, shutdown):
 * it can neither overrun the server's grant nor leak a slot. Any reply,
 * even an error, shows a live server; only silence condemns.
 *
 * The client's own thread runs the timer (rr__clnt_ka_tick, from bg_main);
 * each reply stamps last_rx_ms (clnt_reply.c). Caller holds c->mu unless
 * said otherwise.
 */
#include "rpcrdma/clnt.h"

#include "base/clock.h"
#include "base/log.h"

#include <errno.h>

void rr__clnt_ka_init(struct rr_clnt *c)
{
	rr__ka_init(&c->ka.p, &c->o.keepalive_ms, &c->o.keepalive_timeout_ms,
		    c->o.keepalive_prog, c->o.keepalive_vers);
}

void rr__clnt_ka_note(struct rr_clnt *c, const struct rr_call *call)
{
	rr__ka_note(&c->ka.p, call);
}

/* The probe's end, without c->mu (a callback). */
static void ka_done(struct rr_call *call, int rc, void *arg)
{
	struct rr_clnt *c = arg;
	bool up;

	(void)call;
	pthread_mutex_lock(&c->mu);
	if (rc == -ETIMEDOUT)
		c->st.keepalive_timeouts++;
	up = !rr__clnt_dead(c) && !rr__clnt_stopping(c);
	if (rr__ka_end(&c->ka.p, rc, up, c->gen)) {
		rr_warn_rl("rpcrdma: no reply to a keepalive probe in %d ms: "
			   "reconnecting",
			   c->o.keepalive_timeout_ms);
		rr__clnt_conn_lost(c, -ECONNRESET);
	}
	pthread_mutex_unlock(&c->mu);
	rr__clnt_run_callbacks(c); /* of the calls the loss completed */
}

static void ka_probe(struct rr_clnt *c)
{
	c->st.keepalive_probes++;
	if (rr__clnt_start(c, rr__ka_probe(&c->ka.p, c->gen), ka_done, c, NULL))
		c->ka.p.busy = false;
}

/*
 * Sends a probe when one is due. Returns the milliseconds until the next
 * look (-1: keepalive is off); while there is nothing to watch (no
 * connection, a probe out, no program yet) that is one period, so a
 * connection that comes up later is watched from then on.
 */
int rr__clnt_ka_tick(struct rr_clnt *c)
{
	uint64_t now, due;

	if (c->o.keepalive_ms <= 0)
		return -1;
	if (rr__clnt_stopping(c) || rr__clnt_dead(c) || !rr__ka_ready(&c->ka.p))
		return c->o.keepalive_ms;
	now = rr_mono_ms();
	if (c->ka.gen_seen != c->gen) { /* a new connection: idle from now */
		c->ka.gen_seen = c->gen;
		c->ka.last_rx_ms = now;
	}
	due = c->ka.last_rx_ms + (uint64_t)c->o.keepalive_ms;
	if (now < due)
		return (int)(due - now);
	ka_probe(c);
	return c->o.keepalive_ms;
}
