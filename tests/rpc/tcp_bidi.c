/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Calls in both directions on one TCP connection (RFC 5531 section 11):
 * the server's handlers call their client back over the connection the
 * forward call came on (rr_svc_req_conn, rr_svc_conn_call), and the
 * client serves those calls (rr_rpc_clnt_serve). The server's loop runs
 * in a thread of this process, on 127.0.0.1 with an ephemeral port; the
 * clients are our TCP client or a raw peer written here from RFC 5531
 * (tcp_common.h), which can misbehave on purpose.
 *
 * Forward program (TPROG, vers 1), served by the server:
 *   0 NULL
 *   1 SYNC   args x, timeout_ms: calls back INC(x) and waits; results
 *            rc, accept_stat, the callback's result (a worker's call)
 *   2 START  args x: rr_svc_conn_call must say -EDEADLK (the loop
 *            thread), then INC(x) is called back asynchronously;
 *            results the synchronous call's rc
 *   3 RESULT results done, rc, value of START's callback
 *   4 MANY   args n: n ORDER(i) callbacks at once, waited for; results
 *            completions, whether in issue order, whether any twice
 *   5 CANCEL calls back INC(0) asynchronously and cancels it at once;
 *            results the cancel's rc, the callback's rc, a second
 *            cancel's rc
 * Callback program (CBPROG, vers 1), served by the client:
 *   1 INC    x -> x + 1
 *   2 ORDER  i -> i, noting the order they arrive in
 */
#include <rpcrdma/oncrpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "tcp_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define CBPROG	 0x20000098u
#define MANY_MAX 64
#define WAIT_MS	 10000
#define REC_CAP	 4096
#define CB_LIMIT 4

enum { F_NULL, F_SYNC, F_START, F_RESULT, F_MANY, F_CANCEL, F_NPROCS };
enum { CB_NULL, CB_INC, CB_ORDER, CB_NPROCS };

/* ====================================================== server side */

/* What the server's handlers saw, for tests whose client cannot say. */
struct seen {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool sync_done;
	int sync_rc;
	/* START's asynchronous callback */
	struct rr_call acall;
	uint8_t aargs[4], ares[4];
	struct rr_svc_conn *aconn;
	bool adone;
	int arc;
	/* MANY */
	uint32_t order[MANY_MAX], ndone, times[MANY_MAX];
};

static struct seen g_seen = {.mu = PTHREAD_MUTEX_INITIALIZER,
			     .cv = PTHREAD_COND_INITIALIZER};

static void seen_reset(void)
{
	pthread_mutex_lock(&g_seen.mu);
	g_seen.sync_done = g_seen.adone = false;
	g_seen.sync_rc = g_seen.arc = 0;
	g_seen.ndone = 0;
	memset(g_seen.times, 0, sizeof(g_seen.times));
	pthread_mutex_unlock(&g_seen.mu);
}

/* Waits for cond (under g_seen.mu) up to WAIT_MS; false on timeout. */
static bool seen_wait(bool (*cond)(void))
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&g_seen.mu);
	while (!(ok = cond()))
		if (pthread_cond_timedwait(&g_seen.cv, &g_seen.mu, &ts))
			break;
	ok = cond();
	pthread_mutex_unlock(&g_seen.mu);
	return ok;
}

static uint32_t set_words(struct rr_svc_req *r, const uint32_t *w, size_t n)
{
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);

	for (size_t i = 0; i < n; i++)
		rr_t_put32(res + 4 * i, w[i]);
	return rr_svc_set_res(r, 4 * n, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static uint32_t f_sync(struct rr_svc_req *r, void *arg)
{
	size_t len;
	const uint8_t *a = rr_svc_args(r, &len);
	struct rr_svc_conn *conn = rr_svc_req_conn(r);
	uint8_t res[4] = {0};
	struct rr_call call = {.prog = CBPROG,
			       .vers = 1,
			       .proc = CB_INC,
			       .args = a,
			       .args_len = 4,
			       .res = res,
			       .res_cap = sizeof(res)};
	uint32_t w[3];
	int rc;

	(void)arg;
	if (len != 8 || !conn) {
		rr_svc_conn_put(conn);
		return RR_GARBAGE_ARGS;
	}
	call.timeout_ms = (int)rr_t_get32(a + 4);
	rc = rr_svc_conn_call(conn, &call);
	if (!rr_svc_conn_peer(conn))
		rc = -EFAULT; /* the client's address must be known */
	rr_svc_conn_put(conn);
	pthread_mutex_lock(&g_seen.mu);
	g_seen.sync_done = true;
	g_seen.sync_rc = rc;
	pthread_cond_broadcast(&g_seen.cv);
	pthread_mutex_unlock(&g_seen.mu);
	w[0] = (uint32_t)rc;
	w[1] = call.accept_stat;
	w[2] = rc ? 0 : rr_t_get32(res);
	return set_words(r, w, 3);
}

/* Runs on the loop thread, which reads the reply. */
static void start_done(struct rr_call *call, int rc, void *arg)
{
	(void)call;
	(void)arg;
	pthread_mutex_lock(&g_seen.mu);
	g_seen.adone = true;
	g_seen.arc = rc;
	rr_svc_conn_put(g_seen.aconn);
	g_seen.aconn = NULL;
	pthread_mutex_unlock(&g_seen.mu);
}

static uint32_t f_start(struct rr_svc_req *r, void *arg)
{
	size_t len;
	const uint8_t *a = rr_svc_args(r, &len);
	struct rr_call probe = {.prog = CBPROG, .vers = 1, .proc = CB_NULL};
	struct rr_svc_conn *conn = rr_svc_req_conn(r);
	uint32_t w;
	int rc;

	(void)arg;
	if (len != 4 || !conn) {
		rr_svc_conn_put(conn);
		return RR_GARBAGE_ARGS;
	}
	w = (uint32_t)rr_svc_conn_call(conn, &probe);
	pthread_mutex_lock(&g_seen.mu);
	memcpy(g_seen.aargs, a, 4);
	g_seen.acall = (struct rr_call){.prog = CBPROG,
					.vers = 1,
					.proc = CB_INC,
					.args = g_seen.aargs,
					.args_len = 4,
					.res = g_seen.ares,
					.res_cap = 4};
	g_seen.aconn = conn;
	pthread_mutex_unlock(&g_seen.mu);
	rc = rr_svc_conn_call_async(conn, &g_seen.acall, start_done, NULL);
	if (rc) {
		rr_svc_conn_put(conn);
		w = (uint32_t)rc;
	}
	return set_words(r, &w, 1);
}

static uint32_t f_result(struct rr_svc_req *r, void *arg)
{
	uint32_t w[3];

	(void)arg;
	pthread_mutex_lock(&g_seen.mu);
	w[0] = g_seen.adone;
	w[1] = (uint32_t)g_seen.arc;
	w[2] = rr_t_get32(g_seen.ares);
	pthread_mutex_unlock(&g_seen.mu);
	return set_words(r, w, 3);
}

struct many_call {
	struct rr_call call;
	uint8_t args[4], res[4];
	uint32_t i;
};

static void many_done(struct rr_call *call, int rc, void *arg)
{
	struct many_call *m = arg;

	(void)call;
	pthread_mutex_lock(&g_seen.mu);
	if (!rc && rr_t_get32(m->res) == m->i)
		g_seen.order[g_seen.ndone] = m->i;
	else
		g_seen.order[g_seen.ndone] = UINT32_MAX;
	g_seen.ndone++;
	g_seen.times[m->i]++;
	pthread_cond_broadcast(&g_seen.cv);
	pthread_mutex_unlock(&g_seen.mu);
}

static uint32_t g_many_n;

static bool many_all_done(void)
{
	return g_seen.ndone >= g_many_n;
}

static uint32_t f_many(struct rr_svc_req *r, void *arg)
{
	static struct many_call m[MANY_MAX];
	size_t len;
	const uint8_t *a = rr_svc_args(r, &len);
	struct rr_svc_conn *conn = rr_svc_req_conn(r);
	uint32_t n = len == 4 ? rr_t_get32(a) : 0, w[3] = {0, 1, 0};

	(void)arg;
	if (!n || n > MANY_MAX || !conn) {
		rr_svc_conn_put(conn);
		return RR_GARBAGE_ARGS;
	}
	seen_reset();
	g_many_n = n;
	for (uint32_t i = 0; i < n; i++) {
		m[i] = (struct many_call){.i = i};
		rr_t_put32(m[i].args, i);
		m[i].call = (struct rr_call){.prog = CBPROG,
					     .vers = 1,
					     .proc = CB_ORDER,
					     .args = m[i].args,
					     .args_len = 4,
					     .res = m[i].res,
					     .res_cap = 4};
		assert_int_equal(rr_svc_conn_call_async(conn, &m[i].call,
							many_done, &m[i]),
				 0);
	}
	seen_wait(many_all_done);
	rr_svc_conn_put(conn);
	pthread_mutex_lock(&g_seen.mu);
	w[0] = g_seen.ndone;
	for (uint32_t i = 0; i < g_seen.ndone; i++) {
		w[1] &= g_seen.order[i] == i;
		w[2] |= g_seen.times[i] != 1;
	}
	pthread_mutex_unlock(&g_seen.mu);
	return set_words(r, w, 3);
}

static void cancel_done(struct rr_call *call, int rc, void *arg)
{
	(void)call;
	*(int *)arg = rc; /* runs in rr_svc_conn_cancel, on this thread */
}

static uint32_t f_cancel(struct rr_svc_req *r, void *arg)
{
	struct rr_svc_conn *conn = rr_svc_req_conn(r);
	uint8_t args[4] = {0}, res[4];
	struct rr_call call = {.prog = CBPROG,
			       .vers = 1,
			       .proc = CB_INC,
			       .args = args,
			       .args_len = 4,
			       .res = res,
			       .res_cap = 4};
	int done_rc = 1;
	uint32_t w[3];

	(void)arg;
	if (!conn)
		return RR_SYSTEM_ERR;
	w[0] = (uint32_t)rr_svc_conn_call_async(conn, &call, cancel_done,
						&done_rc);
	if (!w[0])
		w[0] = (uint32_t)rr_svc_conn_cancel(conn, &call);
	w[1] = (uint32_t)done_rc;
	w[2] = (uint32_t)rr_svc_conn_cancel(conn, &call);
	rr_svc_conn_put(conn);
	return set_words(r, w, 3);
}

static const rr_svc_fn f_procs[F_NPROCS] = {rr_t_null, f_sync, f_start,
					    f_result,  f_many, f_cancel};
static const struct rr_svc_prog f_prog = {
	.prog = TPROG, .vers = 1, .nprocs = F_NPROCS, .procs = f_procs};

struct srv {
	struct rr_tcp_svc *s;
	pthread_t th;
	uint16_t port;
};

static void *srv_main(void *arg)
{
	struct srv *v = arg;

	rr_tcp_svc_run(v->s);
	return NULL;
}

static uint16_t g_fixed_port; /* --wire: a port a capture can filter on */

static void srv_start(struct srv *v, uint32_t threads, uint32_t cb_limit)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(g_fixed_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_tcp_svc_opts o = {.threads = threads,
				    .cb_max_in_flight = cb_limit};

	assert_int_equal(rr_tcp_svc_create((struct sockaddr *)&sin, sizeof(sin),
					   &o, &v->s),
			 0);
	assert_int_equal(rr_tcp_svc_register(v->s, &f_prog), 0);
	assert_int_equal(rr_tcp_svc_port(v->s, &v->port), 0);
	assert_int_equal(pthread_create(&v->th, NULL, srv_main, v), 0);
}

static void srv_stop(struct srv *v, struct rr_xprt_stats *st)
{
	rr_tcp_svc_stop(v->s);
	pthread_join(v->th, NULL);
	if (st)
		rr_tcp_svc_stats(v->s, st);
	rr_tcp_svc_destroy(v->s);
}

/* ====================================================== client side */

static atomic_uint g_order_next; /* ORDER: the index expected next */
static atomic_uint g_order_bad;

static uint32_t cb_null(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return rr_svc_set_res(r, 0, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static uint32_t cb_word(struct rr_svc_req *r, uint32_t add)
{
	size_t len;
	const uint8_t *a = rr_svc_args(r, &len);
	uint32_t w;

	if (len != 4)
		return RR_GARBAGE_ARGS;
	w = rr_t_get32(a) + add;
	return set_words(r, &w, 1);
}

static uint32_t cb_inc(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return cb_word(r, 1);
}

static uint32_t cb_order(struct rr_svc_req *r, void *arg)
{
	size_t len;
	const uint8_t *a = rr_svc_args(r, &len);

	(void)arg;
	if (len == 4 && rr_t_get32(a) != atomic_fetch_add(&g_order_next, 1))
		atomic_fetch_add(&g_order_bad, 1);
	return cb_word(r, 0);
}

static const rr_svc_fn cb_procs[CB_NPROCS] = {cb_null, cb_inc, cb_order};
static const struct rr_svc_prog cb_prog = {
	.prog = CBPROG, .vers = 1, .nprocs = CB_NPROCS, .procs = cb_procs};

static struct rr_tcp_clnt *clnt_open(uint16_t port, bool serve)
{
	struct rr_tcp_clnt_opts o = {.timeout_ms = WAIT_MS};
	struct rr_tcp_clnt *c;

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", port, &o, &c), 0);
	if (serve)
		assert_int_equal(
			rr_rpc_clnt_serve(rr_tcp_clnt_rpc(c), &cb_prog), 0);
	return c;
}

/* A forward call with up to two argument words; results into w. */
static int fcall(struct rr_tcp_clnt *c, uint32_t proc, const uint32_t *a,
		 size_t na, uint32_t *w, size_t nw)
{
	uint8_t args[8], res[16];
	struct rr_call call = {.prog = TPROG,
			       .vers = 1,
			       .proc = proc,
			       .args = args,
			       .args_len = 4 * na,
			       .res = res,
			       .res_cap = sizeof(res)};
	int rc;

	for (size_t i = 0; i < na; i++)
		rr_t_put32(args + 4 * i, a[i]);
	rc = rr_tcp_clnt_call(c, &call);
	if (!rc && call.res_len != 4 * nw)
		return -EPROTO;
	for (size_t i = 0; !rc && i < nw; i++)
		w[i] = rr_t_get32(res + 4 * i);
	return rc;
}

/* =========================================================== tests */

/* A worker's handler waits for its callback; the reply carries it. */
static void test_sync_from_worker(void **state)
{
	struct srv v;
	struct rr_xprt_stats ss, cs;
	uint32_t a[2] = {41, 0}, w[3];
	struct rr_tcp_clnt *c;

	(void)state;
	srv_start(&v, 2, 0);
	c = clnt_open(v.port, true);
	for (uint32_t i = 0; i < 20; i++) {
		a[0] = 41 + i;
		assert_int_equal(fcall(c, F_SYNC, a, 2, w, 3), 0);
		assert_int_equal((int)w[0], 0);
		assert_int_equal(w[1], RR_SUCCESS);
		assert_int_equal(w[2], 42 + i);
	}
	rr_tcp_clnt_stats(c, &cs);
	rr_tcp_clnt_destroy(c);
	srv_stop(&v, &ss);
	assert_int_equal(cs.cb_calls, 20);
	assert_int_equal(cs.cb_replies, 20);
	assert_int_equal(ss.cb_calls, 20);
	assert_int_equal(ss.cb_replies, 20);
	assert_int_equal(ss.cb_bad_xids, 0);
	assert_int_equal(ss.calls, 20);
}

/*
 * Without workers the handler runs on the loop thread: a synchronous
 * callback would wait for itself (-EDEADLK); an asynchronous one
 * completes there once the loop reads the reply, which the stream
 * carries before the next forward call.
 */
static void test_async_from_loop(void **state)
{
	struct srv v;
	uint32_t a = 99, w[3];
	struct rr_tcp_clnt *c;

	(void)state;
	seen_reset();
	srv_start(&v, 0, 0);
	c = clnt_open(v.port, true);
	assert_int_equal(fcall(c, F_START, &a, 1, w, 1), 0);
	assert_int_equal((int)w[0], -EDEADLK);
	assert_int_equal(fcall(c, F_RESULT, NULL, 0, w, 3), 0);
	assert_int_equal(w[0], 1);
	assert_int_equal((int)w[1], 0);
	assert_int_equal(w[2], 100);
	rr_tcp_clnt_destroy(c);
	srv_stop(&v, NULL);
}

/* More callbacks than may fly at once: each completes once, in order. */
static void test_many_beyond_limit(void **state)
{
	struct srv v;
	struct rr_xprt_stats ss;
	uint32_t n = 50, w[3];
	struct rr_tcp_clnt *c;

	(void)state;
	atomic_store(&g_order_next, 0);
	atomic_store(&g_order_bad, 0);
	srv_start(&v, 2, CB_LIMIT);
	c = clnt_open(v.port, true);
	assert_int_equal(fcall(c, F_MANY, &n, 1, w, 3), 0);
	assert_int_equal(w[0], n);
	assert_int_equal(w[1], 1); /* in issue order */
	assert_int_equal(w[2], 0); /* none twice */
	assert_int_equal(atomic_load(&g_order_next), n);
	assert_int_equal(atomic_load(&g_order_bad), 0);
	rr_tcp_clnt_destroy(c);
	srv_stop(&v, &ss);
	assert_int_equal(ss.cb_calls, n);
	assert_int_equal(ss.cb_replies, n);
}

/* ---------------------------------------------------- raw peers */

static void raw_call(int fd, uint32_t xid, uint32_t proc, const uint32_t *a,
		     size_t na)
{
	uint8_t msg[64], args[16];

	for (size_t i = 0; i < na; i++)
		rr_t_put32(args + 4 * i, a[i]);
	assert_true(raw_send_record(
		fd, msg,
		raw_call_msg(msg, xid, 2, TPROG, 1, proc, args, 4 * na)));
}

/* An accepted SUCCESS reply to xid with one result word. */
static void raw_reply(int fd, uint32_t xid, uint32_t word)
{
	uint8_t m[28];
	uint32_t w[7] = {xid, 1, 0, 0, 0, 0, word};

	for (int i = 0; i < 7; i++)
		rr_t_put32(m + 4 * i, w[i]);
	assert_true(raw_send_record(fd, m, sizeof(m)));
}

/* Reads one record; its msg_type and xid; the bytes in *rec (freed). */
static uint32_t raw_next(int fd, uint8_t **rec, ssize_t *len, uint32_t *xid)
{
	*len = raw_read_record(fd, rec, REC_CAP, WAIT_MS);
	assert_true(*len >= 8);
	*xid = rr_t_get32(*rec);
	return rr_t_get32(*rec + 4);
}

/* The server sent a CALL to CBPROG: its xid and first argument word. */
static uint32_t raw_take_cb(int fd, uint32_t *arg0)
{
	uint8_t *rec;
	ssize_t len;
	uint32_t xid;

	assert_int_equal(raw_next(fd, &rec, &len, &xid), 0); /* CALL */
	assert_true(len >= 44);
	assert_int_equal(rr_t_get32(rec + 8), 2);	/* rpcvers */
	assert_int_equal(rr_t_get32(rec + 12), CBPROG); /* prog */
	*arg0 = rr_t_get32(rec + 40);			/* AUTH_NONE both */
	free(rec);
	return xid;
}

/* Whether a record arrives within ms (a bound, not a wait for one). */
static bool raw_quiet(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms) == 0;
}

/* The server sends no more than cb_max_in_flight callbacks at once. */
static void test_limit_on_the_wire(void **state)
{
	struct srv v;
	uint32_t n = 10, xids[10], arg, seen = 0, xid;
	uint8_t *rec;
	ssize_t len;
	int fd;

	(void)state;
	srv_start(&v, 2, CB_LIMIT);
	fd = raw_connect(v.port);
	assert_true(fd >= 0);
	raw_call(fd, 7, F_MANY, &n, 1);
	for (; seen < CB_LIMIT; seen++) {
		xids[seen] = raw_take_cb(fd, &arg);
		assert_int_equal(arg, seen);
	}
	assert_true(raw_quiet(fd, 300)); /* the fifth waits for a reply */
	for (uint32_t i = 0; i < CB_LIMIT; i++)
		raw_reply(fd, xids[i], i);
	for (;;) {
		uint32_t type = raw_next(fd, &rec, &len, &xid);

		if (type == 1) { /* the forward reply */
			struct raw_reply r;

			assert_int_equal(xid, 7);
			assert_true(raw_parse_reply(rec, (size_t)len, &r));
			assert_int_equal(rr_t_get32(rec + r.res_off), n);
			assert_int_equal(rr_t_get32(rec + r.res_off + 4), 1);
			free(rec);
			break;
		}
		assert_int_equal(rr_t_get32(rec + 40), seen);
		free(rec);
		raw_reply(fd, xid, seen++);
	}
	assert_int_equal(seen, n);
	close(fd);
	srv_stop(&v, NULL);
}

static bool sync_seen(void)
{
	return g_seen.sync_done;
}

/* The client goes away with a callback on the wire: -ENOTCONN, once. */
static void test_disconnect_mid_callback(void **state)
{
	struct srv v;
	struct rr_xprt_stats ss;
	uint32_t a[2] = {5, 0}, arg;
	int fd;

	(void)state;
	seen_reset();
	srv_start(&v, 2, 0);
	fd = raw_connect(v.port);
	assert_true(fd >= 0);
	raw_call(fd, 9, F_SYNC, a, 2);
	raw_take_cb(fd, &arg);
	assert_int_equal(arg, 5);
	close(fd);
	assert_true(seen_wait(sync_seen));
	assert_int_equal(g_seen.sync_rc, -ENOTCONN);
	srv_stop(&v, &ss);
	assert_int_equal(ss.cb_calls, 1);
	assert_int_equal(ss.cb_replies, 0);
	assert_int_equal(ss.cb_timeouts, 0);
}

/* A client that serves no program answers PROG_UNAVAIL. */
static void test_client_serves_nothing(void **state)
{
	struct srv v;
	struct rr_xprt_stats cs;
	uint32_t a[2] = {1, 0}, w[3];
	struct rr_tcp_clnt *c;

	(void)state;
	srv_start(&v, 1, 0);
	c = clnt_open(v.port, false);
	assert_int_equal(fcall(c, F_SYNC, a, 2, w, 3), 0);
	assert_int_equal((int)w[0], -EREMOTEIO);
	assert_int_equal(w[1], RR_PROG_UNAVAIL);
	rr_tcp_clnt_stats(c, &cs);
	assert_int_equal(cs.cb_calls, 1);
	assert_int_equal(cs.cb_replies, 1);
	rr_tcp_clnt_destroy(c);
	srv_stop(&v, NULL);
}

/*
 * A callback nobody answers times out; its late reply, and one naming
 * no callback ever sent, are counted and dropped.
 */
static void test_timeout_and_stray_replies(void **state)
{
	struct srv v;
	struct rr_xprt_stats ss;
	uint32_t a[2] = {3, 200}, arg, xid, cbxid;
	struct raw_reply r;
	uint8_t *rec;
	ssize_t len;
	uint64_t t0;
	int fd;

	(void)state;
	srv_start(&v, 1, 0);
	fd = raw_connect(v.port);
	assert_true(fd >= 0);
	t0 = rr_t_now_ms();
	raw_call(fd, 11, F_SYNC, a, 2);
	cbxid = raw_take_cb(fd, &arg);
	assert_int_equal(raw_next(fd, &rec, &len, &xid), 1);
	assert_true(rr_t_now_ms() - t0 >= 200);
	assert_int_equal(xid, 11);
	assert_true(raw_parse_reply(rec, (size_t)len, &r));
	assert_int_equal((int)rr_t_get32(rec + r.res_off), -ETIMEDOUT);
	free(rec);
	raw_reply(fd, cbxid, 4);	   /* late */
	raw_reply(fd, cbxid ^ 0x5a5a, 4);  /* never sent */
	raw_call(fd, 12, F_NULL, NULL, 0); /* read after both */
	assert_int_equal(raw_next(fd, &rec, &len, &xid), 1);
	assert_int_equal(xid, 12);
	free(rec);
	close(fd);
	srv_stop(&v, &ss);
	assert_int_equal(ss.cb_timeouts, 1);
	assert_int_equal(ss.cb_bad_xids, 2);
	assert_int_equal(ss.cb_replies, 0);
}

/*
 * A callback cancelled on the wire completes once, -ECANCELED; its reply,
 * arriving after, is a stray.
 */
static void test_cancel(void **state)
{
	struct srv v;
	struct rr_xprt_stats ss;
	uint32_t arg, xid, cbxid;
	struct raw_reply r;
	uint8_t *rec;
	ssize_t len;
	int fd;

	(void)state;
	srv_start(&v, 1, 0);
	fd = raw_connect(v.port);
	assert_true(fd >= 0);
	raw_call(fd, 13, F_CANCEL, NULL, 0);
	cbxid = raw_take_cb(fd, &arg);
	assert_int_equal(raw_next(fd, &rec, &len, &xid), 1);
	assert_int_equal(xid, 13);
	assert_true(raw_parse_reply(rec, (size_t)len, &r));
	assert_int_equal((int)rr_t_get32(rec + r.res_off), 0);
	assert_int_equal((int)rr_t_get32(rec + r.res_off + 4), -ECANCELED);
	assert_int_equal((int)rr_t_get32(rec + r.res_off + 8), -ENOENT);
	free(rec);
	raw_reply(fd, cbxid, 1);
	raw_call(fd, 14, F_NULL, NULL, 0);
	assert_int_equal(raw_next(fd, &rec, &len, &xid), 1);
	assert_int_equal(xid, 14);
	free(rec);
	close(fd);
	srv_stop(&v, &ss);
	assert_int_equal(ss.cancels, 1);
	assert_int_equal(ss.cb_calls, 1);
	assert_int_equal(ss.cb_bad_xids, 1);
}

/* ------------------------------------- a raw server, our client */

static int raw_listen(uint16_t *port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

static void raw_cb_call(int fd, uint32_t xid, uint32_t rpcvers, uint32_t prog,
			uint32_t proc, uint32_t x)
{
	uint8_t msg[64], args[4];

	rr_t_put32(args, x);
	assert_true(raw_send_record(
		fd, msg,
		raw_call_msg(msg, xid, rpcvers, prog, 1, proc, args, 4)));
}

static void expect_reply(int fd, uint32_t want_xid, struct raw_reply *r,
			 uint8_t **rec, ssize_t *len)
{
	uint32_t xid;

	assert_int_equal(raw_next(fd, rec, len, &xid), 1);
	assert_int_equal(xid, want_xid);
	assert_true(raw_parse_reply(*rec, (size_t)*len, r));
}

/*
 * Stray and malformed messages from a server: counted, answered where
 * RFC 5531 has an answer, and the client carries on serving.
 */
static void test_client_hostile_server(void **state)
{
	struct rr_xprt_stats cs;
	struct rr_tcp_clnt *c;
	struct raw_reply r;
	uint8_t bad[12], *rec;
	ssize_t len;
	uint16_t port;
	int lfd, fd;

	(void)state;
	lfd = raw_listen(&port);
	c = clnt_open(port, true);
	fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	raw_reply(fd, 0xdead, 1); /* answers nothing */
	rr_t_put32(bad, 21);
	rr_t_put32(bad + 4, 0);
	rr_t_put32(bad + 8, 2); /* a CALL cut short after rpcvers */
	assert_true(raw_send_record(fd, bad, sizeof(bad)));
	rr_t_put32(bad + 4, 7); /* neither CALL nor REPLY */
	assert_true(raw_send_record(fd, bad, sizeof(bad)));
	raw_cb_call(fd, 22, 3, CBPROG, CB_INC, 1);
	raw_cb_call(fd, 23, 2, 0x1234, CB_INC, 1);
	raw_cb_call(fd, 24, 2, CBPROG, 9, 1);
	raw_cb_call(fd, 25, 2, CBPROG, CB_INC, 1);
	expect_reply(fd, 22, &r, &rec, &len);
	assert_int_equal(r.stat, RR_MSG_DENIED);
	assert_int_equal(r.reject, RR_RPC_MISMATCH);
	free(rec);
	expect_reply(fd, 23, &r, &rec, &len);
	assert_int_equal(r.accept, RR_PROG_UNAVAIL);
	free(rec);
	expect_reply(fd, 24, &r, &rec, &len);
	assert_int_equal(r.accept, RR_PROC_UNAVAIL);
	free(rec);
	expect_reply(fd, 25, &r, &rec, &len);
	assert_int_equal(r.accept, RR_SUCCESS);
	assert_int_equal(rr_t_get32(rec + r.res_off), 2);
	free(rec);
	rr_tcp_clnt_stats(c, &cs);
	assert_int_equal(cs.bad_xids, 1);
	assert_int_equal(cs.bad_headers, 2);
	assert_int_equal(cs.cb_calls, 4);
	assert_int_equal(cs.cb_replies, 4);
	close(fd);
	close(lfd);
	rr_tcp_clnt_destroy(c);
}

/*
 * tcp_bidi --wire PORT: only the first test, its server on PORT, for
 * tests/wire/tcp_bidi_check.sh to capture.
 */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(test_sync_from_worker, CASE_S, NULL, NULL),
		RR_T_LIMITED(test_async_from_loop, CASE_S, NULL, NULL),
		RR_T_LIMITED(test_many_beyond_limit, CASE_S, NULL, NULL),
		RR_T_LIMITED(test_limit_on_the_wire, CASE_S, NULL, NULL),
		RR_T_LIMITED(test_disconnect_mid_callback, CASE_S, NULL, NULL),
		RR_T_LIMITED(test_client_serves_nothing, CASE_S, NULL, NULL),
		RR_T_LIMITED(test_timeout_and_stray_replies, CASE_S, NULL,
			     NULL),
		RR_T_LIMITED(test_cancel, CASE_S, NULL, NULL),
		RR_T_LIMITED(test_client_hostile_server, CASE_S, NULL, NULL),
	};

	if (argc == 3 && !strcmp(argv[1], "--wire")) {
		g_fixed_port = (uint16_t)atoi(argv[2]);
		cmocka_set_test_filter("test_sync_from_worker");
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
