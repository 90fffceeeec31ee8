/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Liveness, both clients (rr_clnt_opts / rr_tcp_clnt_opts keepalive_ms):
 * a server process that is stopped (SIGSTOP) keeps its sockets open, so
 * neither TCP nor the RDMA connection sees anything wrong; the client's
 * NULL probe, unanswered, must find it within a bound, count it, drop the
 * connection and, once the server runs again (SIGCONT), complete the
 * calls that were waiting. A healthy idle server is probed and kept; a
 * probe waits for a credit like any call and gives it back.
 *
 * A server child (tserver.h) serves the shared test program (tprog.h:
 * NULL, ECHO) over RPC-over-RDMA (provider RR_PROVIDER, default iwarp)
 * or over TCP; every test runs once per transport.
 *
 * Waits are bounded and wait for events: callbacks, replies, the child's
 * state, or a client counter polled every few milliseconds up to a bound.
 */
#include "clock.h"
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "tcp_common.h"
#include "tserver.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define CALL_TMO_MS 30000
#define ECHO_LEN    1000
#define KA_MS	    200
#define KA_TMO_MS   500
/*
 * The probe is due KA_MS after the last reply and given up KA_TMO_MS
 * later; timers count whole milliseconds, hence the slack.
 */
#define DETECT_MIN_MS (KA_MS + KA_TMO_MS - 10)
#define DETECT_MAX_MS 5000

/* ========================================================= transports */

struct kopts {
	int keepalive_ms, keepalive_timeout_ms;
	uint32_t in_flight; /* credits, or max_in_flight */
	int timeout_ms;
};

/* The two clients behind one face, so each test runs on both. */
struct xport {
	const char *name;
	int (*create)(uint16_t port, const struct kopts *o, void **out);
	int (*call)(void *c, struct rr_call *call);
	int (*call_async)(void *c, struct rr_call *call, rr_call_done_fn done,
			  void *arg);
	int (*stats)(void *c, struct rr_xprt_stats *st);
	int (*destroy)(void *c);
	enum rr_t_xprt xprt;
};

static int rdma_create(uint16_t port, const struct kopts *o, void **out)
{
	struct rr_clnt_opts co = {.provider = getenv("RR_PROVIDER"),
				  .timeout_ms = o->timeout_ms,
				  .connect_timeout_ms = 1000,
				  .reconnect_max_ms = 400,
				  .credits = o->in_flight,
				  .keepalive_ms = o->keepalive_ms,
				  .keepalive_timeout_ms =
					  o->keepalive_timeout_ms};

	return rr_clnt_create("127.0.0.1", port, &co, (struct rr_clnt **)out);
}

static int rdma_call(void *c, struct rr_call *call)
{
	return rr_clnt_call(c, call);
}

static int rdma_call_async(void *c, struct rr_call *call, rr_call_done_fn done,
			   void *arg)
{
	return rr_clnt_call_async(c, call, done, arg);
}

static int rdma_stats(void *c, struct rr_xprt_stats *st)
{
	return rr_clnt_stats(c, st);
}

static int rdma_destroy(void *c)
{
	return rr_clnt_destroy(c);
}

static int tcp_create(uint16_t port, const struct kopts *o, void **out)
{
	struct rr_tcp_clnt_opts to = {.timeout_ms = o->timeout_ms,
				      .connect_timeout_ms = 1000,
				      .reconnect_max_ms = 400,
				      .max_in_flight = o->in_flight,
				      .keepalive_ms = o->keepalive_ms,
				      .keepalive_timeout_ms =
					      o->keepalive_timeout_ms};

	return rr_tcp_clnt_create("127.0.0.1", port, &to,
				  (struct rr_tcp_clnt **)out);
}

static int tcp_call(void *c, struct rr_call *call)
{
	return rr_tcp_clnt_call(c, call);
}

static int tcp_call_async(void *c, struct rr_call *call, rr_call_done_fn done,
			  void *arg)
{
	return rr_tcp_clnt_call_async(c, call, done, arg);
}

static int tcp_stats(void *c, struct rr_xprt_stats *st)
{
	return rr_tcp_clnt_stats(c, st);
}

static int tcp_destroy(void *c)
{
	return rr_tcp_clnt_destroy(c);
}

static const struct xport xrdma = {.name = "rdma",
				   .create = rdma_create,
				   .call = rdma_call,
				   .call_async = rdma_call_async,
				   .stats = rdma_stats,
				   .destroy = rdma_destroy,
				   .xprt = RR_T_RDMA};
static const struct xport xtcp = {.name = "tcp",
				  .create = tcp_create,
				  .call = tcp_call,
				  .call_async = tcp_call_async,
				  .stats = tcp_stats,
				  .destroy = tcp_destroy,
				  .xprt = RR_T_TCP};

static const struct xport *g_x; /* of the group running */

/* ============================================================ fixture */

struct fx {
	struct rr_t_server sv;
	void *c;
};

static int setup(void **state)
{
	struct rr_t_server_opts so = {.xprt = g_x->xprt,
				      .provider = getenv("RR_PROVIDER")};
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || rr_t_server_start(&f->sv, &so)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static struct rr_xprt_stats stats_of(struct fx *f)
{
	struct rr_xprt_stats st;

	assert_int_equal(g_x->stats(f->c, &st), 0);
	return st;
}

static void print_stats(const struct rr_xprt_stats *s)
{
	fprintf(stderr,
		"  %s client: calls %llu timeouts %llu credit_waits %llu "
		"conn_lost %llu connects %llu retransmits %llu probes %llu "
		"probe_timeouts %llu bad_xids %llu\n",
		g_x->name, (unsigned long long)s->calls,
		(unsigned long long)s->timeouts,
		(unsigned long long)s->credit_waits,
		(unsigned long long)s->conn_lost,
		(unsigned long long)s->connects,
		(unsigned long long)s->retransmits,
		(unsigned long long)s->keepalive_probes,
		(unsigned long long)s->keepalive_timeouts,
		(unsigned long long)s->bad_xids);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct rr_xprt_stats st = {0};
	int rc = 0;

	if (f->c) {
		if (!g_x->stats(f->c, &st))
			print_stats(&st);
		if (st.bad_xids || st.bad_headers || st.teardown_unbalanced) {
			fprintf(stderr, "unaccounted replies or requests\n");
			rc = -1;
		}
		if (g_x->destroy(f->c))
			rc = -1;
	}
	if (rr_t_server_stop(&f->sv))
		rc = -1;
	free(f);
	return rc;
}

static void clnt_new(struct fx *f, int ka_ms, int ka_tmo_ms, uint32_t in_flight)
{
	struct kopts o = {.keepalive_ms = ka_ms,
			  .keepalive_timeout_ms = ka_tmo_ms,
			  .in_flight = in_flight,
			  .timeout_ms = CALL_TMO_MS};
	int rc = g_x->create(f->sv.port, &o, &f->c);

	if (rc)
		fail_msg("%s client: %d", g_x->name, rc);
}

static struct rr_call mkcall(uint32_t proc, void *res, size_t cap)
{
	return (struct rr_call){.prog = RR_T_PROG,
				.vers = RR_T_VERS,
				.proc = proc,
				.res = res,
				.res_cap = cap};
}

static void null_ok(struct fx *f)
{
	struct rr_call call = mkcall(RR_T_NULL, NULL, 0);

	assert_int_equal(g_x->call(f->c, &call), 0);
}

/*
 * Polls the client's counters until pick(st) reaches want; returns the
 * milliseconds it took. The event is the client's own decision, which no
 * callback announces; the poll is bounded.
 */
static uint64_t wait_count(struct fx *f, size_t field, uint64_t want,
			   uint64_t since)
{
	for (;;) {
		struct rr_xprt_stats st = stats_of(f);
		uint64_t v, now = rr_t_now_ms();
		struct timespec nap = {0, 5 * 1000000};

		memcpy(&v, (const char *)&st + field, sizeof(v));
		if (v >= want)
			return now - since;
		if (now - since > DETECT_MAX_MS * 2) {
			print_stats(&st);
			fail_msg("counter at %llu, want %llu, after %llu ms",
				 (unsigned long long)v,
				 (unsigned long long)want,
				 (unsigned long long)(now - since));
		}
		nanosleep(&nap, NULL);
	}
}

#define WAIT_COUNT(f, member, want, since)                                     \
	wait_count((f), offsetof(struct rr_xprt_stats, member), (want), (since))

/* One asynchronous ECHO and what became of it. */
struct echo {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rr_call call;
	uint8_t args[ECHO_LEN], res[ECHO_LEN];
	int rc;
	uint32_t done;
};

static void echo_done(struct rr_call *call, int rc, void *arg)
{
	struct echo *e = arg;

	(void)call;
	pthread_mutex_lock(&e->mu);
	e->rc = rc;
	e->done++;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

static void echo_start(struct fx *f, struct echo *e, uint32_t seed)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	rr_t_fill_seeded(e->args, ECHO_LEN, seed);
	e->call = mkcall(RR_T_ECHO, e->res, ECHO_LEN);
	e->call.args = e->args;
	e->call.args_len = ECHO_LEN;
	assert_int_equal(g_x->call_async(f->c, &e->call, echo_done, e), 0);
}

/* Waits for the callback (bounded); the bytes must be the arguments. */
static void echo_end(struct echo *e)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += CALL_TMO_MS / 1000;
	pthread_mutex_lock(&e->mu);
	while (!e->done)
		if (pthread_cond_timedwait(&e->cv, &e->mu, &ts))
			break;
	pthread_mutex_unlock(&e->mu);
	if (e->done != 1 || e->rc)
		fail_msg("echo: %u callbacks, rc %d", e->done, e->rc);
	assert_int_equal(e->call.res_len, ECHO_LEN);
	assert_memory_equal(e->res, e->args, ECHO_LEN);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
}

/* ============================================================== tests */

/*
 * A call waits on a stopped server: the probe, unanswered, drops the
 * connection within the keepalive bound (not the call's 30 s), and the
 * call completes once the server runs again.
 */
static void a_stopped_server_is_found_while_a_call_waits(void **state)
{
	struct fx *f = *state;
	struct echo e;
	uint64_t t0, dt;

	clnt_new(f, KA_MS, KA_TMO_MS, 0);
	t0 = rr_t_now_ms(); /* before the last reply */
	null_ok(f);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	echo_start(f, &e, 1);
	dt = WAIT_COUNT(f, keepalive_timeouts, 1, t0);
	fprintf(stderr, "  %s: found in %llu ms\n", g_x->name,
		(unsigned long long)dt);
	if (dt < DETECT_MIN_MS || dt > DETECT_MAX_MS)
		fail_msg("found after %llu ms, want %d..%d",
			 (unsigned long long)dt, DETECT_MIN_MS, DETECT_MAX_MS);
	assert_true(stats_of(f).conn_lost >= 1);
	assert_true(stats_of(f).keepalive_probes >= 1);
	assert_int_equal(rr_t_server_thaw(&f->sv), 0);
	echo_end(&e);
	null_ok(f);
	assert_true(stats_of(f).retransmits >= 1);
}

/* With nothing in flight, the probe finds the stopped server all the same. */
static void a_stopped_server_is_found_on_an_idle_connection(void **state)
{
	struct fx *f = *state;
	uint64_t t0, dt;

	clnt_new(f, KA_MS, KA_TMO_MS, 0);
	t0 = rr_t_now_ms(); /* before the last reply */
	null_ok(f);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	dt = WAIT_COUNT(f, conn_lost, 1, t0);
	fprintf(stderr, "  %s: found in %llu ms\n", g_x->name,
		(unsigned long long)dt);
	if (dt < DETECT_MIN_MS || dt > DETECT_MAX_MS)
		fail_msg("found after %llu ms, want %d..%d",
			 (unsigned long long)dt, DETECT_MIN_MS, DETECT_MAX_MS);
	assert_int_equal(stats_of(f).keepalive_timeouts, 1);
	assert_int_equal(rr_t_server_thaw(&f->sv), 0);
	null_ok(f); /* on a new connection */
	assert_true(stats_of(f).connects >= 2);
}

/* A healthy idle server answers the probes; its connection stays. */
static void an_idle_healthy_server_is_probed_and_kept(void **state)
{
	struct fx *f = *state;
	struct rr_xprt_stats st;

	clnt_new(f, 100, 5000, 0);
	null_ok(f);
	WAIT_COUNT(f, keepalive_probes, 3, rr_t_now_ms());
	st = stats_of(f);
	assert_int_equal(st.keepalive_timeouts, 0);
	assert_int_equal(st.conn_lost, 0);
	assert_int_equal(st.connects, 1);
	null_ok(f);
}

/*
 * One credit (one slot), held by a call to a stopped server: the probe
 * waits for it behind that call, as any call would, and times out
 * waiting. After the server runs again the one credit still serves call
 * after call: the probe gave back whatever it took.
 */
static void a_probe_waits_for_the_only_credit_and_gives_it_back(void **state)
{
	struct fx *f = *state;
	struct echo e, more[4];
	uint64_t t0;

	clnt_new(f, KA_MS, KA_TMO_MS, 1);
	null_ok(f);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	t0 = rr_t_now_ms();
	echo_start(f, &e, 2);
	WAIT_COUNT(f, keepalive_timeouts, 1, t0);
	assert_true(stats_of(f).credit_waits >= 1);
	assert_int_equal(rr_t_server_thaw(&f->sv), 0);
	echo_end(&e);
	for (int i = 0; i < 10; i++)
		null_ok(f);
	for (uint32_t i = 0; i < 4; i++)
		echo_start(f, &more[i], 10 + i);
	for (uint32_t i = 0; i < 4; i++)
		echo_end(&more[i]);
	null_ok(f);
}

#define T(fn) RR_T_LIMITED(fn, CASE_S, setup, teardown)

static const struct CMUnitTest tests[] = {
	T(a_stopped_server_is_found_while_a_call_waits),
	T(a_stopped_server_is_found_on_an_idle_connection),
	T(an_idle_healthy_server_is_probed_and_kept),
	T(a_probe_waits_for_the_only_credit_and_gives_it_back),
};

/*
 * keepalive [PATTERN [SKIP]]: cmocka filters on the test names.
 */
int main(int argc, char **argv)
{
	int failed = 0;

	rr_t_server_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	if (argc > 2)
		cmocka_set_skip_filter(argv[2]);
	g_x = &xrdma;
	rr_t_limit_context("rdma");
	failed += cmocka_run_group_tests_name("rdma", tests, NULL, NULL);
	g_x = &xtcp;
	rr_t_limit_context("tcp");
	failed += cmocka_run_group_tests_name("tcp", tests, NULL, NULL);
	return failed ? 1 : 0;
}
