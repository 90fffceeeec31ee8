/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client transport: connection setup, the public calls, and who makes
 * progress. A synchronous caller drives the completion queue itself while
 * no one else does (so a reply costs it one wake-up); other callers wait
 * on their own condition variable and are handed the role when the driver
 * leaves. The client's own thread drives only for asynchronous calls that
 * nobody else is driving.
 */
#include "base/alloc.h"
#include "base/clock.h"
#include "rpc/api.h"
#include "rpc/call_priv.h"
#include "rpcrdma/clnt.h"

#include "base/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define DRIVE_SLICE_MS 100
#define BG_SLICE_MS    10 /* short: a thread asking to drive waits this long */
#define BG_PARK_MS     1000 /* idle this long, the thread sleeps untimed */

static void opts_defaults(struct rr_clnt_opts *o, const struct rr_clnt_opts *in)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	if (!o->credits)
		o->credits = 128;
	if (o->credits > 4096)
		o->credits = 4096;
	if (!o->inline_size)
		o->inline_size = RR_INLINE_OURS;
	if (!o->max_bulk)
		o->max_bulk = 1u << 20;
	if (!o->bounce_bufs)
		o->bounce_bufs = 4;
	if (o->bounce_bufs > 32)
		o->bounce_bufs = 32;
	if (!o->timeout_ms)
		o->timeout_ms = -1;
	rr__backoff_opts(&o->connect_timeout_ms, &o->reconnect_max_ms);
	if (!o->cb_credits)
		o->cb_credits = CLNT_CB_DEFAULT;
	if (o->cb_credits > CLNT_CB_MAX)
		o->cb_credits = CLNT_CB_MAX;
}

static int resolve(const char *host, uint16_t port, struct clnt_peer *p)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	char ps[8];

	snprintf(ps, sizeof(ps), "%u", port);
	if (!host || getaddrinfo(host, ps, &hints, &ai))
		return -EHOSTUNREACH;
	if (ai->ai_addrlen > sizeof(p->ss)) {
		freeaddrinfo(ai);
		return -EHOSTUNREACH;
	}
	memcpy(&p->ss, ai->ai_addr, ai->ai_addrlen);
	p->len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* The server, then those to fail over to: resolved once, here. */
static int resolve_peers(struct rr_clnt *c, const char *host, uint16_t port)
{
	const struct rr_failover_server *f = c->o.failover;
	uint32_t n = c->o.nfailover;
	int rc;

	c->o.failover = NULL; /* the caller's array is not kept */
	if (n > RR_FAILOVER_MAX || (n && !f))
		return -EINVAL;
	rc = resolve(host, port, &c->peers[0]);
	for (uint32_t i = 0; !rc && i < n; i++)
		rc = resolve(f[i].host, f[i].port, &c->peers[i + 1]);
	c->npeers = rc ? 0 : n + 1;
	return rc;
}

/*
 * The reserve: everything a connection needs, made once for the client's
 * life (reconnecting allocates nothing: clnt_conn.c). ORDER: the counts
 * are set only once their arrays exist, so that a client whose creation
 * failed here can be walked by the teardown (the allocation sweep,
 * tests/rpcrdma/alloc_sweep.c, found it walking a NULL array).
 */
static int alloc_pools(struct rr_clnt *c)
{
	uint32_t n = c->o.credits, nsctx = n + CLNT_SIGNAL_EVERY;
	uint32_t nrecv = n + 4 + c->cb.credits; /* the server's calls too */
	int rc;

	c->reqs = rr_calloc(n, sizeof(*c->reqs));
	c->free_reqs = rr_calloc(n, sizeof(*c->free_reqs));
	c->sctx = rr_calloc(nsctx, sizeof(*c->sctx));
	c->recv_seq = rr_calloc(nrecv, sizeof(*c->recv_seq));
	c->recv_out = rr_calloc(nrecv, sizeof(*c->recv_out));
	if (!c->reqs || !c->free_reqs || !c->sctx || !c->recv_seq ||
	    !c->recv_out)
		return -ENOMEM;
	c->nreqs = n;
	c->nsctx = nsctx;
	c->nrecv = nrecv;
	for (uint32_t i = 0; i < n; i++) {
		c->reqs[i].idx = i;
		c->free_reqs[c->nfree_reqs++] = n - 1 - i;
		for (uint32_t m = 0; m < CLNT_MAX_MW; m++) {
			rc = rr_mw_alloc(c->pd, &c->reqs[i].mws[m].mw);
			if (rc)
				return rc;
		}
	}
	rc = rr__bufpool_init(&c->sendbufs, c->pd, c->nsctx, c->o.inline_size,
			      0);
	if (!rc)
		rc = rr__bufpool_init(&c->recvbufs, c->pd, c->nrecv,
				      c->o.inline_size, RR_ACCESS_LOCAL_WRITE);
	if (!rc)
		rc = rr__bufpool_init(&c->bounce, c->pd, c->o.bounce_bufs,
				      c->o.max_bulk + 8 + 512,
				      RR_ACCESS_LOCAL_WRITE |
					      RR_ACCESS_REMOTE_READ |
					      RR_ACCESS_REMOTE_WRITE);
	c->bounce_free =
		c->o.bounce_bufs == 32 ? ~0u : (1u << c->o.bounce_bufs) - 1;
	c->st.registered_bytes = (uint64_t)c->nsctx * c->o.inline_size +
				 (uint64_t)c->nrecv * c->o.inline_size +
				 (uint64_t)c->o.bounce_bufs * c->bounce.size;
	return rc ? rc : rr__clnt_cb_alloc(c);
}

static int choose_registration(struct rr_clnt *c,
			       const struct rr_device_attr *da)
{
	enum rr_registration r = c->o.registration;

	if (r == RR_REG_AUTO)
		r = da->mw_bind & RR_MW_BIND_WR ? RR_REG_WINDOWS
						: RR_REG_PER_CALL;
	if ((r == RR_REG_WINDOWS && !(da->mw_bind & RR_MW_BIND_WR)) ||
	    (r == RR_REG_PER_CALL && !(da->mw_bind & RR_MW_BIND_SYNC)))
		return -EOPNOTSUPP;
	c->per_call = r == RR_REG_PER_CALL;
	return 0;
}

static int open_fabric(struct rr_clnt *c)
{
	uint32_t sq = c->o.credits * (2 * CLNT_MAX_MW + 1) + 16;
	uint32_t cb_sends = 2 * c->cb.credits; /* beyond sq: replies to it */
	struct rr_device_attr da;
	int rc;

	rc = rr_device_open(c->o.provider, c->o.dev_opts, &c->dev);
	if (rc)
		return rc;
	rr_device_query(c->dev, &da);
	rc = choose_registration(c, &da);
	if (rc)
		return rc;
	if (c->o.sq_depth)
		sq = c->o.sq_depth < 2 * CLNT_MAX_MW + 1 ? 2 * CLNT_MAX_MW + 1
							 : c->o.sq_depth;
	if (sq + cb_sends > da.max_qp_wr)
		sq = da.max_qp_wr - cb_sends;
	c->sq_depth = sq;
	rc = rr_pd_alloc(c->dev, &c->pd);
	if (!rc)
		rc = rr_evch_create(c->dev, &c->ch);
	if (!rc)
		rc = rr_cq_create(c->dev,
				  sq + cb_sends + c->o.credits + 4 +
					  c->cb.credits,
				  &c->cq);
	if (rc)
		return rc;
	/* Each connection gets a QP of these (clnt_conn.c). */
	c->qp_attr = (struct rr_qp_attr){
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.evch = c->ch,
		.sq_depth = sq + cb_sends,
		.rq_depth = c->o.credits + 4 + c->cb.credits,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.ord = 0,
		/* The server pulls read chunks from us. */
		.ird = (uint16_t)(da.max_ird < 128 ? da.max_ird : 128)};
	return 0;
}

static void *bg_main(void *arg);

/*
 * Where a client's xids start: random, so that two clients of one host
 * made in the same second (a remount) do not send the same xids, which a
 * server's duplicate request cache, keyed by host and xid, would answer
 * from the first one's replies (a WRITE then never written).
 */
static uint32_t first_xid_seq(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v))
		return v;
	return (uint32_t)rr_mono_ms() ^ ((uint32_t)getpid() << 12);
}

int rr_clnt_create(const char *host, uint16_t port,
		   const struct rr_clnt_opts *opts, struct rr_clnt **out)
{
	struct rr_clnt *c = rr_calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->rpc.ops = &rr__clnt_rpc_ops;
	opts_defaults(&c->o, opts);
	c->cb.credits = c->o.cb_credits > 0 ? (uint32_t)c->o.cb_credits : 0;
	rr__clnt_ka_init(c);
	pthread_mutex_init(&c->mu, NULL);
	rr_cond_init_mono(&c->bg_cv);
	gethostname(c->machine, sizeof(c->machine) - 1);
	c->xid_seq = first_xid_seq();
	c->gen = 1;
	rc = resolve_peers(c, host, port);
	if (!rc)
		rc = open_fabric(c);
	if (!rc)
		rc = alloc_pools(c);
	if (!rc)
		rc = rr__clnt_conn_first(c);
	if (!rc)
		rc = -pthread_create(&c->bg, NULL, bg_main, c);
	if (rc) {
		c->bg = 0;
		c->life = CLNT_STOPPING;
		rr_clnt_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

static void free_fabric(struct rr_clnt *c)
{
	if (c->qp)
		rr_qp_destroy(c->qp);
	for (uint32_t i = 0; c->reqs && i < c->nreqs; i++)
		for (uint32_t m = 0; m < CLNT_MAX_MW; m++)
			if (c->reqs[i].mws[m].mw)
				rr_mw_free(c->reqs[i].mws[m].mw);
	rr__bufpool_fini(&c->sendbufs);
	rr__bufpool_fini(&c->recvbufs);
	rr__bufpool_fini(&c->bounce);
	rr__clnt_cb_free(c);
	for (uint32_t i = 0; i < c->nregs; i++)
		rr_mr_dereg(c->regs[i].mr);
	if (c->cq)
		rr_cq_destroy(c->cq);
	if (c->ch)
		rr_evch_destroy(c->ch);
	if (c->pd)
		rr_pd_free(c->pd);
	if (c->dev)
		rr_device_close(c->dev);
}

int rr_clnt_shutdown(struct rr_clnt *c)
{
	if (!c)
		return -EINVAL;
	if (c->life == CLNT_SHUT)
		return 0;
	pthread_mutex_lock(&c->mu);
	c->life = CLNT_SHUT;
	rr__clnt_fail_all(c, -ECANCELED);
	pthread_cond_broadcast(&c->bg_cv);
	pthread_mutex_unlock(&c->mu);
	rr__clnt_run_callbacks(c);
	if (c->bg)
		pthread_join(c->bg, NULL);
	c->bg = 0;
	/*
	 * A connection still being made was not disconnected (the client was
	 * already dead): its QP must reach ERROR for the drain to finish.
	 */
	if (c->qp_in_use && rr_qp_state(c->qp) != RR_QPS_ERROR)
		rr_qp_disconnect(c->qp);
	if (c->qp_in_use)
		rr__clnt_drain(c);
	rr__clnt_run_callbacks(c);
	return 0;
}

int rr_clnt_destroy(struct rr_clnt *c)
{
	if (!c)
		return -EINVAL;
	rr_clnt_shutdown(c);
	free_fabric(c);
	free(c->reqs);
	free(c->free_reqs);
	free(c->sctx);
	free(c->recv_seq);
	free(c->recv_out);
	pthread_cond_destroy(&c->bg_cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return 0;
}

/*
 * Every call fails with rc: those in flight (fenced first), those waiting
 * to be sent again, those not sent yet. For shutdown and for a connection
 * lost for good. Caller holds mu.
 */
void rr__clnt_fail_all(struct rr_clnt *c, int rc)
{
	rr__clnt_conn_lost(c, rc);
	while (c->resend_head) {
		struct clnt_req *r = c->resend_head;

		c->resend_head = r->rnext;
		r->final_rc = rc;
		rr__clnt_req_move(c, r, REQ_FENCING);
		c->in_flight++; /* rr__clnt_req_finish gives the slot back */
		rr__clnt_req_finish(c, r);
	}
	c->resend_tail = NULL;
	while (c->wait_head)
		rr__clnt_unqueue(c, c->wait_head, rc);
}

/* ---------------------------------------------------------- progress */

static void hand_over(struct rr_clnt *c)
{
	struct clnt_waiter *w = c->sync_waiters;

	c->last_drive_ms = rr_mono_ms();
	if (w)
		pthread_cond_signal(&w->cv);
}

static void waiter_unlink(struct rr_clnt *c, struct clnt_waiter *w)
{
	for (struct clnt_waiter **pp = &c->sync_waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return;
		}
}

/* Caller holds mu: sleeps up to ms on bg_cv (forever when ms < 0). */
static void bg_sleep(struct rr_clnt *c, int ms)
{
	struct timespec ts;

	if (ms < 0) {
		pthread_cond_wait(&c->bg_cv, &c->mu);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&c->bg_cv, &c->mu, &ts);
}

/*
 * The client's own thread drives only for asynchronous calls that nobody
 * has driven for BG_SLICE_MS: an application that calls rr_clnt_progress
 * (or makes synchronous calls) keeps the role and its one wake-up per
 * reply; one that does not still sees its calls complete.
 *
 * Between calls it keeps a timed sleep for BG_PARK_MS rather than an
 * untimed one, so that a caller issuing one call at a time does not have
 * to wake it (a futex call and a thread switch) for every call.
 */
static void *bg_main(void *arg)
{
	struct rr_clnt *c = arg;

	pthread_setname_np(pthread_self(), "rr-clnt");

	pthread_mutex_lock(&c->mu);
	while (!rr__clnt_stopping(c)) {
		int ka = rr__clnt_ka_tick(c); /* a probe, when one is due */
		/* The server's calls come at any time: we keep reading. */
		bool wanted = c->async_out || c->cb.serving;

		if (!wanted && rr_mono_ms() - c->last_async_ms >= BG_PARK_MS) {
			c->bg_parked = true;
			bg_sleep(c, ka);
			c->bg_parked = false;
			continue;
		}
		if (!wanted) {
			bg_sleep(c, BG_SLICE_MS);
			continue;
		}
		if (c->driving || c->sync_waiters ||
		    rr_mono_ms() - c->last_drive_ms < BG_SLICE_MS) {
			bg_sleep(c, BG_SLICE_MS);
			continue;
		}
		c->driving = true;
		pthread_mutex_unlock(&c->mu);
		rr__clnt_drive(c, BG_SLICE_MS, -1);
		pthread_mutex_lock(&c->mu);
		c->driving = false;
		if (c->sync_waiters)
			hand_over(c);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Caller holds mu; returns with it held once w is done. */
static void wait_done(struct rr_clnt *c, struct clnt_waiter *w)
{
	while (!w->done) {
		if (!c->driving && !rr__clnt_stopping(c)) {
			c->driving = true;
			pthread_mutex_unlock(&c->mu);
			rr__clnt_drive(c, DRIVE_SLICE_MS, -1);
			pthread_mutex_lock(&c->mu);
			c->driving = false;
			continue;
		}
		w->next = c->sync_waiters;
		c->sync_waiters = w;
		pthread_cond_wait(&w->cv, &c->mu);
		waiter_unlink(c, w);
	}
	if (!c->driving)
		hand_over(c);
}

int rr_clnt_call(struct rr_clnt *c, struct rr_call *call)
{
	struct clnt_waiter w = {.done = false};
	int rc;

	if (!c || !call || (call->args_len && !call->args))
		return -EINVAL;
	pthread_cond_init(&w.cv, NULL);
	pthread_mutex_lock(&c->mu);
	rr__clnt_ka_note(c, call);
	rc = rr__clnt_start(c, call, NULL, NULL, &w);
	if (!rc) {
		wait_done(c, &w);
		rc = w.rc;
	}
	pthread_mutex_unlock(&c->mu);
	rr__clnt_run_callbacks(c);
	pthread_cond_destroy(&w.cv);
	return rc;
}

int rr_clnt_call_async(struct rr_clnt *c, struct rr_call *call,
		       rr_call_done_fn done, void *arg)
{
	int rc;

	if (!c || !call || !done || (call->args_len && !call->args))
		return -EINVAL;
	pthread_mutex_lock(&c->mu);
	if (!c->async_out) {
		/* A burst starts: give the caller a slice to drive. */
		c->last_drive_ms = rr_mono_ms();
		c->last_async_ms = c->last_drive_ms;
	}
	rr__clnt_ka_note(c, call);
	rc = rr__clnt_start(c, call, done, arg, NULL);
	if (!rc && c->bg_parked)
		pthread_cond_signal(&c->bg_cv); /* start its timer */
	pthread_mutex_unlock(&c->mu);
	rr__clnt_run_callbacks(c);
	return rc;
}

int rr_clnt_cancel(struct rr_clnt *c, struct rr_call *call)
{
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	if (!rr__clnt_unqueue(c, call, -ECANCELED)) {
		if (rr__call_priv(call)->req) /* fenced by the driver */
			rr__call_priv(call)->cancel = true;
		else
			rc = -ENOENT;
	} else {
		c->st.cancels++;
	}
	pthread_mutex_unlock(&c->mu);
	rr__clnt_run_callbacks(c);
	return rc;
}

/*
 * Caller holds mu. Waits until this thread may drive, or until calls
 * completed (driven by someone else), or until the deadline. Returns 1
 * when this thread now drives, 0 when calls completed, -ETIMEDOUT.
 */
static int take_role(struct rr_clnt *c, uint64_t calls, uint64_t deadline)
{
	struct clnt_waiter w = {.done = false};
	int rc = 1;

	pthread_cond_init(&w.cv, NULL);
	while (c->driving && rc == 1) {
		struct timespec ts = {.tv_sec = (time_t)(deadline / 1000),
				      .tv_nsec = (long)(deadline % 1000) *
						 1000000};

		w.next = c->sync_waiters;
		c->sync_waiters = &w;
		if (pthread_cond_timedwait(&w.cv, &c->mu, &ts) == ETIMEDOUT)
			rc = -ETIMEDOUT;
		waiter_unlink(c, &w);
		if (c->completed != calls || rr__clnt_down(c))
			rc = 0;
	}
	pthread_cond_destroy(&w.cv);
	if (rc == 1)
		c->driving = true;
	else if (!c->driving)
		hand_over(c); /* woken to drive, not driving: the next may */
	return rc;
}

/*
 * Drives until a call completes (a reply may take more than one round:
 * its LOCAL_INVs complete later) or the time is up. 0 or -ETIMEDOUT; with
 * fd >= 0, -EAGAIN once fd is readable.
 */
static int drive_until(struct rr_clnt *c, uint64_t calls, int timeout_ms,
		       int fd)
{
	uint64_t end =
		rr_mono_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);

	for (;;) {
		uint64_t now = rr_mono_ms();
		int left =
			timeout_ms < 0 ? -1 : (int)(end > now ? end - now : 0);
		int rc = rr__clnt_drive(c, left, fd);
		bool done;

		if (rc < 0 && rc != -ETIMEDOUT)
			return rc;
		pthread_mutex_lock(&c->mu);
		done = c->completed != calls || rr__clnt_down(c);
		pthread_mutex_unlock(&c->mu);
		if (done)
			return 0;
		if (timeout_ms >= 0 && rr_mono_ms() >= end)
			return -ETIMEDOUT;
	}
}

static uint64_t realtime_ms(int timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 +
	       (uint64_t)(timeout_ms < 0 ? 3600 * 1000 : timeout_ms);
}

int rr_clnt_progress(struct rr_clnt *c, int timeout_ms)
{
	uint64_t calls;
	int rc;

	pthread_mutex_lock(&c->mu);
	calls = c->completed;
	rc = take_role(c, calls, realtime_ms(timeout_ms));
	if (rc != 1) {
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	pthread_mutex_unlock(&c->mu);
	rc = drive_until(c, calls, timeout_ms, -1);
	pthread_mutex_lock(&c->mu);
	c->driving = false;
	hand_over(c);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* Takes the role only when it is free (oncrpc.h says why). */
int rr__clnt_progress_fd(struct rr_clnt *c, int timeout_ms, int fd)
{
	uint64_t calls;
	int rc;

	pthread_mutex_lock(&c->mu);
	if (c->driving) {
		pthread_mutex_unlock(&c->mu);
		return rr__rpc_wait_fd(fd, timeout_ms);
	}
	c->driving = true;
	calls = c->completed;
	pthread_mutex_unlock(&c->mu);
	rc = drive_until(c, calls, timeout_ms, fd);
	pthread_mutex_lock(&c->mu);
	c->driving = false;
	hand_over(c);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int rr_clnt_disconnect(struct rr_clnt *c)
{
	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->mu);
	rr__clnt_conn_lost(c, -ECONNRESET);
	pthread_mutex_unlock(&c->mu);
	rr__clnt_run_callbacks(c);
	return 0;
}

int rr_clnt_stats(struct rr_clnt *c, struct rr_xprt_stats *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->st;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

struct rr_device *rr_clnt_device(struct rr_clnt *c)
{
	return c->dev;
}

int rr_clnt_mem_reg(struct rr_clnt *c, void *addr, size_t len)
{
	struct rr_mr *mr;
	int rc;

	pthread_mutex_lock(&c->mu);
	if (c->nregs == sizeof(c->regs) / sizeof(c->regs[0])) {
		pthread_mutex_unlock(&c->mu);
		return -ENOSPC;
	}
	rc = rr_mr_reg(c->pd, addr, len,
		       RR_ACCESS_LOCAL_WRITE | RR_ACCESS_REMOTE_READ |
			       RR_ACCESS_REMOTE_WRITE,
		       &mr);
	if (!rc) {
		c->regs[c->nregs++] = (struct clnt_memreg){addr, len, mr};
		c->st.registered_bytes += len;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int rr_clnt_mem_unreg(struct rr_clnt *c, void *addr)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&c->mu);
	for (uint32_t i = 0; i < c->nregs; i++) {
		if (c->regs[i].addr != addr)
			continue;
		rc = rr_mr_dereg(c->regs[i].mr);
		if (!rc) {
			c->st.registered_bytes -= c->regs[i].len;
			c->regs[i] = c->regs[--c->nregs];
		}
		break;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}
