/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Calls in both directions on one RPC-over-RDMA connection (RFC 8167): a
 * server handler calls its client back during a forward call, and the
 * client's handler answers. Over iwarp, and over the faults provider on
 * both sides (Send completions held past their replies, batches
 * shuffled, completions duplicated) when RR_BIDI_FAULTS=1 (=nodup: none
 * duplicated, for tests/trace, which would see the copies).
 *
 *  - synchronously from a worker: the forward reply carries the result;
 *  - asynchronously from the loop thread (where the synchronous call is
 *    refused -EDEADLK), many more than the client's backward credits:
 *    each completes once, none is lost, none is dropped by the client;
 *  - the client drops its connection while serving a callback: the
 *    callback fails -ENOTCONN once, a later call on the same handle fails
 *    at once, and the forward call, sent again, is served on the next;
 *  - a client that serves nothing answers PROG_UNAVAIL (-EREMOTEIO);
 *  - a client that takes no callbacks at all drops it: it times out, or,
 *    without a timeout, the server's shutdown ends it.
 */
#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#include "../lib/daemon.h"

#define FWD_PROG   0x20000077
#define CB_PROG	   0x40000077
#define NASYNC	   64
#define CB_CREDITS 4

enum {
	FWD_NULL,
	FWD_CB_SYNC,
	FWD_CB_ASYNC,
	FWD_CB_RESULTS,
	FWD_CB_CANCEL,
	FWD_NPROCS
};
enum { CB_NULL, CB_TWICE, CB_HANGUP, CB_NPROCS };

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* ------------------------------------------------------------ server */

struct async_call {
	struct rr_call call;
	uint8_t args[4], res[4];
	uint32_t idx;
	int ndone, rc;
};

static struct {
	pthread_mutex_t mu;
	uint32_t notconn; /* sync callbacks that failed -ENOTCONN */
	int again_rc;	  /* a second call on that handle */
	int deadlk_rc;	  /* a sync callback from the loop thread */
	uint32_t nasync, adone, aok, abad;
	struct rr_svc_conn *aconn;
	struct async_call acalls[NASYNC];
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint32_t reply32(struct rr_svc_req *r, const uint32_t *v, size_t n)
{
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);

	for (size_t i = 0; i < n; i++)
		put32(res + 4 * i, v[i]);
	rr_svc_set_res(r, 4 * n, NULL, 0);
	return RR_SUCCESS;
}

/* args: client proc, value, timeout_ms. res: rc, accept_stat, result. */
static uint32_t fwd_cb_sync(struct rr_svc_req *r, void *a)
{
	size_t n;
	const uint8_t *args = rr_svc_args(r, &n);
	struct rr_svc_conn *conn = rr_svc_req_conn(r);
	uint8_t cargs[4], cres[4] = {0};
	struct rr_call call = {.vers = 1,
			       .args = cargs,
			       .args_len = 4,
			       .res = cres,
			       .res_cap = 4};
	int rc;

	(void)a;
	/* The handle names the caller as the request does. */
	if (n < 12 || !conn || !rr_svc_conn_peer(conn) ||
	    rr_svc_conn_peer(conn)->sa_family != AF_INET) {
		rr_svc_conn_put(conn);
		return RR_GARBAGE_ARGS;
	}
	call.prog = CB_PROG;
	call.proc = get32(args);
	call.timeout_ms = (int)get32(args + 8);
	put32(cargs, get32(args + 4));
	rc = rr_svc_conn_call(conn, &call);
	if (rc == -ENOTCONN) {
		int again = rr_svc_conn_call(conn, &call);

		pthread_mutex_lock(&g.mu);
		g.notconn++;
		g.again_rc = again;
		pthread_mutex_unlock(&g.mu);
	}
	rr_svc_conn_put(conn);
	return reply32(r,
		       (uint32_t[]){(uint32_t)rc, call.accept_stat,
				    call.res_len == 4 ? get32(cres) : 0},
		       3);
}

static void async_setup(struct async_call *ac, uint32_t idx)
{
	*ac = (struct async_call){.idx = idx};
	put32(ac->args, idx);
	ac->call = (struct rr_call){.prog = CB_PROG,
				    .vers = 1,
				    .proc = CB_TWICE,
				    .args = ac->args,
				    .args_len = 4,
				    .res = ac->res,
				    .res_cap = 4};
}

static void async_done(struct rr_call *call, int rc, void *arg)
{
	struct async_call *ac = (struct async_call *)call;
	struct rr_svc_conn *last = NULL;

	(void)arg;
	pthread_mutex_lock(&g.mu);
	ac->rc = rc;
	if (++ac->ndone != 1 || rc || call->res_len != 4 ||
	    get32(ac->res) != 2 * ac->idx + 1)
		g.abad++;
	else
		g.aok++;
	if (++g.adone == g.nasync) {
		last = g.aconn;
		g.aconn = NULL;
	}
	pthread_mutex_unlock(&g.mu);
	rr_svc_conn_put(last);
}

/* Inline, in the loop thread: args n (at most NASYNC). No results. */
static uint32_t fwd_cb_async(struct rr_svc_req *r, void *a)
{
	size_t len;
	const uint8_t *args = rr_svc_args(r, &len);
	uint32_t n = len >= 4 ? get32(args) : 0;
	struct rr_call probe = {.prog = CB_PROG, .vers = 1};

	(void)a;
	if (!n || n > NASYNC)
		return RR_GARBAGE_ARGS;
	pthread_mutex_lock(&g.mu);
	g.nasync = n;
	g.adone = g.aok = g.abad = 0;
	g.aconn = rr_svc_req_conn(r);
	pthread_mutex_unlock(&g.mu);
	g.deadlk_rc = rr_svc_conn_call(g.aconn, &probe);
	for (uint32_t i = 0; i < n; i++) {
		struct async_call *ac = &g.acalls[i];

		async_setup(ac, i);
		if (rr_svc_conn_call_async(g.aconn, &ac->call, async_done,
					   NULL))
			return RR_SYSTEM_ERR;
	}
	return reply32(r, NULL, 0);
}

/* res: done, ok, bad, the -EDEADLK check. */
static uint32_t fwd_cb_results(struct rr_svc_req *r, void *a)
{
	uint32_t v[4];

	(void)a;
	pthread_mutex_lock(&g.mu);
	v[0] = g.adone;
	v[1] = g.aok;
	v[2] = g.abad;
	v[3] = (uint32_t)g.deadlk_rc;
	pthread_mutex_unlock(&g.mu);
	return reply32(r, v, 4);
}

static struct {
	struct async_call gone; /* the callback cancelled on the wire */
	int ndone, rc;
} cx;

static void cancelled_done(struct rr_call *call, int rc, void *arg)
{
	(void)call;
	(void)arg;
	pthread_mutex_lock(&g.mu);
	cx.ndone++;
	cx.rc = rc;
	pthread_mutex_unlock(&g.mu);
}

/*
 * Inline, in the loop thread, so nothing is read meanwhile: a callback
 * goes out on the client's one credit and is cancelled at once, then a
 * second is issued, to follow when that credit comes back. res: the
 * rc of the first call, of its cancel, of a second cancel, of the
 * second call (whose end fwd_cb_results counts).
 */
static uint32_t fwd_cb_cancel(struct rr_svc_req *r, void *a)
{
	struct rr_svc_conn *conn = rr_svc_req_conn(r);
	int rc[4];

	(void)a;
	pthread_mutex_lock(&g.mu);
	g.nasync = 1;
	g.adone = g.aok = g.abad = 0;
	g.aconn = conn;
	cx.ndone = 0;
	cx.rc = 1;
	pthread_mutex_unlock(&g.mu);
	async_setup(&cx.gone, 7);
	async_setup(&g.acalls[0], 0);
	rc[0] = rr_svc_conn_call_async(conn, &cx.gone.call, cancelled_done,
				       NULL);
	rc[1] = rr_svc_conn_cancel(conn, &cx.gone.call);
	rc[2] = rr_svc_conn_cancel(conn, &cx.gone.call);
	rc[3] = rr_svc_conn_call_async(conn, &g.acalls[0].call, async_done,
				       NULL);
	return reply32(r,
		       (uint32_t[]){(uint32_t)rc[0], (uint32_t)rc[1],
				    (uint32_t)rc[2], (uint32_t)rc[3]},
		       4);
}

static const rr_svc_fn fwd_procs[FWD_NPROCS] = {NULL, fwd_cb_sync, fwd_cb_async,
						fwd_cb_results, fwd_cb_cancel};

/* ------------------------------------------------------------ client */

static struct rr_clnt *g_clnt;
static int hangups; /* CB_HANGUP calls that dropped the connection */

static uint32_t cb_twice(struct rr_svc_req *r, void *a)
{
	size_t n;
	const uint8_t *args = rr_svc_args(r, &n);

	(void)a;
	if (n != 4)
		return RR_GARBAGE_ARGS;
	return reply32(r, (uint32_t[]){2 * get32(args) + 1}, 1);
}

/* The first one drops the connection before its reply can go. */
static uint32_t cb_hangup(struct rr_svc_req *r, void *a)
{
	if (!hangups++)
		rr_clnt_disconnect(g_clnt);
	return cb_twice(r, a);
}

static const rr_svc_fn cb_procs[CB_NPROCS] = {NULL, cb_twice, cb_hangup};

/* ----------------------------------------------------------- fixture */

struct env {
	struct rr_svc *svc;
	struct rr_clnt *c;
	pthread_t loop;
	struct rr_fault_plan plan;
	struct rr_device_opts dopts;
};

/* RR_BIDI_FAULTS: 1, the faults below; "nodup", none duplicated. */
static bool faults(void)
{
	const char *v = getenv("RR_BIDI_FAULTS");

	return v && (*v == '1' || !strcmp(v, "nodup"));
}

static uint32_t dup_ppm(void)
{
	const char *v = getenv("RR_BIDI_FAULTS");

	return v && !strcmp(v, "nodup") ? 0 : 20000;
}

static void *serve(void *arg)
{
	rr_svc_run(arg);
	return NULL;
}

static void env_up(struct env *e, uint32_t threads, int cb_credits, bool serves)
{
	/* RR_BIDI_PORT: a fixed port, for a capture to dissect (tests/wire) */
	const char *fixed = getenv("RR_BIDI_PORT");
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(fixed ? (uint16_t)atoi(fixed) : 0),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_prog fwd = {FWD_PROG, 1, FWD_NPROCS, fwd_procs, NULL};
	struct rr_svc_prog cb = {CB_PROG, 1, CB_NPROCS, cb_procs, NULL};
	struct rr_svc_opts so = {.threads = threads, .credits = 16};
	struct rr_clnt_opts co = {.credits = 8, .cb_credits = cb_credits};
	uint16_t port;

	memset(e, 0, sizeof(*e));
	if (faults()) {
		e->plan = (struct rr_fault_plan){.seed = 17,
						 .delay_send_cqe_ppm = 500000,
						 .reorder_ppm = 300000,
						 .dup_cqe_ppm = dup_ppm(),
						 .guard_sends = true};
		e->dopts = (struct rr_device_opts){.inner = "iwarp",
						   .faults = &e->plan};
		so.provider = co.provider = "faults";
		so.dev_opts = co.dev_opts = &e->dopts;
	}
	assert_int_equal(rr_svc_create((struct sockaddr *)&sin, sizeof(sin),
				       &so, &e->svc),
			 0);
	assert_int_equal(rr_svc_register(e->svc, &fwd), 0);
	assert_int_equal(rr_svc_port(e->svc, &port), 0);
	assert_int_equal(pthread_create(&e->loop, NULL, serve, e->svc), 0);
	assert_int_equal(rr_clnt_create("127.0.0.1", port, &co, &e->c), 0);
	g_clnt = e->c;
	hangups = 0;
	if (serves)
		assert_int_equal(rr_rpc_clnt_serve(rr_clnt_rpc(e->c), &cb), 0);
}

/* Both sides torn down with every queue drained (invariant 4). */
static void env_down(struct env *e, struct rr_xprt_stats *cst,
		     struct rr_xprt_stats *sst)
{
	struct rr_xprt_stats st;
	struct rr_fault_stats fs;

	if (faults()) {
		/* invariant 2: no send buffer reused before its completion */
		assert_int_equal(rr_faults_stats(rr_clnt_device(e->c), &fs), 0);
		assert_int_equal(fs.send_bufs_modified, 0);
		assert_int_equal(rr_faults_stats(rr_svc_device(e->svc), &fs),
				 0);
		assert_int_equal(fs.send_bufs_modified, 0);
	}
	assert_int_equal(rr_clnt_shutdown(e->c), 0);
	assert_int_equal(rr_clnt_stats(e->c, cst), 0);
	assert_int_equal(cst->teardown_unbalanced, 0);
	/* every move of both directions' machines was allowed (base/fsm.h) */
	assert_int_equal(cst->state_violations, 0);
	assert_int_equal(rr_clnt_destroy(e->c), 0);
	rr_svc_stop(e->svc);
	pthread_join(e->loop, NULL);
	assert_int_equal(rr_svc_shutdown(e->svc), 0);
	assert_int_equal(rr_svc_stats(e->svc, &st), 0);
	assert_int_equal(st.teardown_unbalanced, 0);
	assert_int_equal(st.state_violations, 0);
	assert_int_equal(rr_svc_destroy(e->svc), 0);
	*sst = st;
	print_message("client: cb_calls %lu dropped %lu stale %lu; server: "
		      "cb_calls %lu timeouts %lu credit_waits %lu bad_xids "
		      "%lu\n",
		      (unsigned long)cst->cb_calls,
		      (unsigned long)cst->cb_dropped,
		      (unsigned long)cst->stale_cqes,
		      (unsigned long)st.cb_calls, (unsigned long)st.cb_timeouts,
		      (unsigned long)st.cb_credit_waits,
		      (unsigned long)st.cb_bad_xids);
}

/* A forward call; its results into res[0..nres). */
static int fwd_call(struct env *e, uint32_t proc, const uint32_t *args,
		    size_t nargs, uint32_t *res, size_t nres)
{
	uint8_t a[16], r[16];
	struct rr_call call = {.prog = FWD_PROG,
			       .vers = 1,
			       .proc = proc,
			       .args = a,
			       .args_len = 4 * nargs,
			       .res = r,
			       .res_cap = sizeof(r),
			       .timeout_ms = 20000};
	int rc;

	for (size_t i = 0; i < nargs; i++)
		put32(a + 4 * i, args[i]);
	rc = rr_clnt_call(e->c, &call);
	if (rc)
		return rc;
	if (call.res_len != 4 * nres)
		return -EBADMSG;
	for (size_t i = 0; i < nres; i++)
		res[i] = get32(r + 4 * i);
	return 0;
}

/* ------------------------------------------------------------- tests */

static void sync_callback_from_a_worker(void **state)
{
	struct rr_xprt_stats cst, sst;
	struct env e;
	uint32_t res[3];

	(void)state;
	env_up(&e, 2, 0, true);
	for (uint32_t i = 0; i < 200; i++) {
		assert_int_equal(fwd_call(&e, FWD_CB_SYNC,
					  (uint32_t[]){CB_TWICE, i, 0}, 3, res,
					  3),
				 0);
		assert_int_equal((int)res[0], 0);
		assert_int_equal(res[1], RR_SUCCESS);
		assert_int_equal(res[2], 2 * i + 1);
	}
	env_down(&e, &cst, &sst);
	assert_int_equal(cst.cb_calls, 200);
	assert_int_equal(cst.cb_dropped, 0);
	assert_int_equal(sst.cb_calls, 200);
	assert_int_equal(sst.cb_bad_xids, 0);
}

static void async_callbacks_beyond_the_credit(void **state)
{
	struct rr_xprt_stats cst, sst;
	uint64_t end = rr_t_now_ms() + 20000;
	struct env e;
	uint32_t res[4] = {0};

	(void)state;
	env_up(&e, 0, CB_CREDITS, true);
	assert_int_equal(
		fwd_call(&e, FWD_CB_ASYNC, (uint32_t[]){NASYNC}, 1, NULL, 0),
		0);
	/* Each forward call also lets the callbacks in meanwhile be read. */
	while (res[0] < NASYNC && rr_t_now_ms() < end)
		assert_int_equal(fwd_call(&e, FWD_CB_RESULTS, NULL, 0, res, 4),
				 0);
	assert_int_equal(res[0], NASYNC);
	assert_int_equal(res[1], NASYNC);
	assert_int_equal(res[2], 0);
	assert_int_equal((int)res[3], -EDEADLK);
	env_down(&e, &cst, &sst);
	assert_int_equal(cst.cb_calls, NASYNC);
	assert_int_equal(cst.cb_dropped, 0);
	assert_int_equal(sst.cb_calls, NASYNC);
	assert_true(sst.cb_credit_waits > 0);
	for (int i = 0; i < NASYNC; i++)
		assert_int_equal(g.acalls[i].ndone, 1);
}

static void callback_while_the_client_disconnects(void **state)
{
	struct rr_xprt_stats cst, sst;
	struct env e;
	uint32_t res[3];

	(void)state;
	env_up(&e, 1, 0, true);
	g.notconn = 0;
	g.again_rc = 0;
	/* Sent again on the next connection, where the callback answers. */
	assert_int_equal(fwd_call(&e, FWD_CB_SYNC,
				  (uint32_t[]){CB_HANGUP, 5, 0}, 3, res, 3),
			 0);
	assert_int_equal((int)res[0], 0);
	assert_int_equal(res[2], 11);
	assert_int_equal(hangups, 2);
	env_down(&e, &cst, &sst);
	assert_int_equal(g.notconn, 1);
	assert_int_equal(g.again_rc, -ENOTCONN);
	assert_true(cst.connects >= 2);
}

static void callback_to_a_client_serving_nothing(void **state)
{
	struct rr_xprt_stats cst, sst;
	struct env e;
	uint32_t res[3];

	(void)state;
	env_up(&e, 1, 0, false);
	assert_int_equal(fwd_call(&e, FWD_CB_SYNC, (uint32_t[]){CB_TWICE, 1, 0},
				  3, res, 3),
			 0);
	assert_int_equal((int)res[0], -EREMOTEIO);
	assert_int_equal(res[1], RR_PROG_UNAVAIL);
	env_down(&e, &cst, &sst);
	assert_int_equal(cst.cb_dropped, 0);
}

static void callback_to_a_client_taking_none_times_out(void **state)
{
	struct rr_xprt_stats cst, sst;
	struct env e;
	uint32_t res[3];

	(void)state;
	env_up(&e, 1, -1, false);
	assert_int_equal(
		rr_rpc_clnt_serve(rr_clnt_rpc(e.c),
				  &(struct rr_svc_prog){CB_PROG, 1, CB_NPROCS,
							cb_procs, NULL}),
		-EOPNOTSUPP);
	assert_int_equal(fwd_call(&e, FWD_CB_SYNC,
				  (uint32_t[]){CB_TWICE, 1, 200}, 3, res, 3),
			 0);
	assert_int_equal((int)res[0], -ETIMEDOUT);
	env_down(&e, &cst, &sst);
	assert_int_equal(cst.cb_dropped, 1);
	assert_int_equal(sst.cb_timeouts, 1);
}

/*
 * A callback cancelled on the wire returns at once, but its credit stays
 * taken until its late reply comes (the client counts it till then): the
 * next callback waits for it, and the late reply is no stray.
 */
static void a_cancelled_callback_keeps_its_credit_until_its_reply(void **state)
{
	struct rr_xprt_stats cst, sst;
	uint64_t end = rr_t_now_ms() + 20000;
	struct env e;
	uint32_t res[4] = {0};

	(void)state;
	env_up(&e, 0, 1, true);
	assert_int_equal(fwd_call(&e, FWD_CB_CANCEL, NULL, 0, res, 4), 0);
	assert_int_equal((int)res[0], 0);
	assert_int_equal((int)res[1], 0);
	assert_int_equal((int)res[2], -ENOENT);
	assert_int_equal((int)res[3], 0);
	memset(res, 0, sizeof(res));
	while (res[0] < 1 && rr_t_now_ms() < end)
		assert_int_equal(fwd_call(&e, FWD_CB_RESULTS, NULL, 0, res, 4),
				 0);
	assert_int_equal(res[0], 1);
	assert_int_equal(res[1], 1); /* the second got its right answer */
	assert_int_equal(cx.ndone, 1);
	assert_int_equal(cx.rc, -ECANCELED);
	env_down(&e, &cst, &sst);
	assert_int_equal(sst.cancels, 1);
	assert_int_equal(sst.cb_calls, 2);
	assert_int_equal(sst.cb_bad_xids, 0);
	assert_true(sst.cb_credit_waits >= 1);
	assert_int_equal(cst.cb_calls, 2);
	assert_int_equal(cst.cb_dropped, 0);
}

static void fwd_done(struct rr_call *call, int rc, void *arg)
{
	(void)call;
	*(int *)arg = rc;
}

/*
 * A handler waits for a callback that has no timeout and no answer (the
 * client takes none): the server's shutdown ends it (-ENOTCONN) before
 * it waits for its workers, instead of hanging.
 */
static void shutdown_ends_a_callback_waiting_forever(void **state)
{
	struct rr_xprt_stats cst, sst;
	uint64_t end = rr_t_now_ms() + 10000;
	uint8_t a[12], r[16];
	struct rr_call call = {.prog = FWD_PROG,
			       .vers = 1,
			       .proc = FWD_CB_SYNC,
			       .args = a,
			       .args_len = 12,
			       .res = r,
			       .res_cap = sizeof(r)};
	int rc = 1;
	struct env e;

	(void)state;
	env_up(&e, 1, -1, false);
	g.notconn = 0;
	put32(a, CB_TWICE);
	put32(a + 4, 1);
	put32(a + 8, (uint32_t)-1); /* no timeout */
	assert_int_equal(rr_clnt_call_async(e.c, &call, fwd_done, &rc), 0);
	do { /* until the client has dropped the callback */
		rr_clnt_progress(e.c, 100);
		assert_int_equal(rr_clnt_stats(e.c, &cst), 0);
	} while (!cst.cb_dropped && rr_t_now_ms() < end);
	assert_int_equal(cst.cb_dropped, 1);
	rr_svc_stop(e.svc);
	pthread_join(e.loop, NULL);
	assert_int_equal(rr_svc_shutdown(e.svc), 0);
	assert_int_equal(g.notconn, 1);
	assert_int_equal(g.again_rc, -ENOTCONN);
	assert_int_equal(rr_clnt_shutdown(e.c), 0);
	/* The handler's reply (saying so) may have come in meanwhile. */
	if (rc == 0)
		assert_int_equal((int)get32(r), -ENOTCONN);
	else
		assert_true(rc == -ECANCELED || rc == -ECONNRESET);
	assert_int_equal(rr_clnt_destroy(e.c), 0);
	assert_int_equal(rr_svc_stats(e.svc, &sst), 0);
	assert_int_equal(sst.teardown_unbalanced, 0);
	assert_int_equal(rr_svc_destroy(e.svc), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(sync_callback_from_a_worker, CASE_S, NULL, NULL),
		RR_T_LIMITED(async_callbacks_beyond_the_credit, CASE_S, NULL,
			     NULL),
		RR_T_LIMITED(callback_while_the_client_disconnects, CASE_S,
			     NULL, NULL),
		RR_T_LIMITED(callback_to_a_client_serving_nothing, CASE_S, NULL,
			     NULL),
		RR_T_LIMITED(callback_to_a_client_taking_none_times_out, CASE_S,
			     NULL, NULL),
		RR_T_LIMITED(shutdown_ends_a_callback_waiting_forever, CASE_S,
			     NULL, NULL),
		RR_T_LIMITED(
			a_cancelled_callback_keeps_its_credit_until_its_reply,
			CASE_S, NULL, NULL),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
