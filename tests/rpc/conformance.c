// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What every ONC RPC transport promises alike, written once against the
 * transport-neutral client (<rpcrdma/oncrpc.h>, "any transport") and run
 * over each transport, as tests/fabric does for providers:
 *
 *   conformance rdma         RPC-over-RDMA over RR_PROVIDER (default iwarp)
 *   conformance rdma-faults  the same with the faults provider over iwarp
 *                            on both sides, injecting what a transport must
 *                            absorb (rr_t_benign_faults)
 *   conformance tcp          record marking over TCP
 *
 * The server is the shared test program (tprog.h) in a child process
 * (tserver.h), with RR_TEST_SVC_THREADS workers (default 4). Each case
 * has its own time limit: a case that overruns it fails by name.
 * Where the transports differ by design, the case checks the documented
 * difference: a DDP-eligible result lands in res_bulk only where
 * rr_rpc_clnt_ddp says so, otherwise inline at the end of res.
 *
 * RR_TEST_ADDR=IPv4 puts both ends on that address instead of 127.0.0.1
 * (RoCE cannot route the loopback address). RR_TEST_REGISTRATION=per_call
 * makes the RDMA client register memory per call.
 *
 * conformance XPRT [PATTERN [SKIP]]: only the cases matching PATTERN.
 */
#include "clock.h"
#include "limit.h"
#include "tprog.h"
#include "tserver.h"

#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CALL_TMO_MS 30000 /* every call's default: nothing hangs */
#define SENTINEL    0xa5
#define SLACK	    64 /* sentinel bytes checked past a result */
#define BIG_CAP	    (256u << 10)
#define NASYNC	    64
#define ASYNC_LEN   64
#define NKILL	    24

/* ------------------------------------------------------ the transport */

static struct {
	const char *name;
	enum rr_t_xprt xprt;
	const char *provider; /* RDMA */
	bool faults;	      /* RDMA: inject rr_t_benign_faults() */
	uint32_t svc_threads;
	enum rr_registration registration;
} g;

/* How a case wants its client and server. */
enum {
	F_LIMIT2 = 1,	    /* two calls in flight: credits / max_in_flight */
	F_SOFT = 2,	    /* soft */
	F_NO_RECONNECT = 4, /* no_reconnect */
};

struct tcase {
	const char *name;
	unsigned limit_s;
	unsigned flags;
};

static const char *test_addr(void)
{
	const char *a = getenv("RR_TEST_ADDR");

	return a && *a ? a : "127.0.0.1";
}

struct fx {
	const struct tcase *tc;
	struct rr_t_server sv;
	struct rr_rpc_clnt *c;
	struct rr_clnt *rdma; /* the same client, over RDMA; else NULL */
};

static struct fx *g_fx; /* the case running */
static struct rr_fault_plan g_plan;
static struct rr_device_opts g_dopts = {.inner = "iwarp", .faults = &g_plan};

static int clnt_new_rdma(struct fx *f, unsigned flags, struct rr_rpc_clnt **out,
			 struct rr_clnt **rdma)
{
	struct rr_clnt_opts o = {.provider = g.provider,
				 .timeout_ms = CALL_TMO_MS,
				 .soft = flags & F_SOFT,
				 .no_reconnect = flags & F_NO_RECONNECT,
				 .registration = g.registration};
	struct rr_clnt *c;
	int rc;

	if (g.faults) {
		o.provider = "faults";
		rr_t_benign_faults(&g_plan, 0xc11e0000u + (uint64_t)getpid());
		o.dev_opts = &g_dopts;
	}
	rc = rr_clnt_create(test_addr(), f->sv.port, &o, &c);
	if (rc)
		return rc;
	*out = rr_clnt_rpc(c);
	if (rdma)
		*rdma = c;
	return 0;
}

static int clnt_new_tcp(struct fx *f, unsigned flags, struct rr_rpc_clnt **out)
{
	struct rr_tcp_clnt_opts o = {.timeout_ms = CALL_TMO_MS,
				     .max_in_flight = flags & F_LIMIT2 ? 2 : 0,
				     .soft = flags & F_SOFT,
				     .no_reconnect = flags & F_NO_RECONNECT};
	struct rr_tcp_clnt *c;
	int rc;

	rc = rr_tcp_clnt_create(test_addr(), f->sv.port, &o, &c);
	if (!rc)
		*out = rr_tcp_clnt_rpc(c);
	return rc;
}

static int clnt_new(struct fx *f, unsigned flags, struct rr_rpc_clnt **out,
		    struct rr_clnt **rdma)
{
	if (rdma)
		*rdma = NULL;
	if (g.xprt == RR_T_TCP)
		return clnt_new_tcp(f, flags, out);
	return clnt_new_rdma(f, flags, out, rdma);
}

/* ------------------------------------------------------------ fixture */

static int setup(void **state)
{
	const struct tcase *tc = *state;
	struct rr_t_server_opts so = {.xprt = g.xprt,
				      .provider = g.provider,
				      .faults = g.faults,
				      .threads = g.svc_threads,
				      .addr = test_addr(),
				      .credits = tc->flags & F_LIMIT2 ? 2 : 0};
	struct fx *f = calloc(1, sizeof(*f));
	int rc;

	rr_t_limit_start(tc->name, tc->limit_s);
	if (!f)
		return -1;
	f->tc = tc;
	g_fx = f;
	if (rr_t_server_start(&f->sv, &so)) {
		free(f);
		return -1;
	}
	rc = clnt_new(f, tc->flags, &f->c, &f->rdma);
	if (rc) {
		fprintf(stderr, "client over %s: %d\n", g.name, rc);
		rr_t_server_stop(&f->sv);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static struct rr_xprt_stats stats_of(struct rr_rpc_clnt *c)
{
	struct rr_xprt_stats st;

	assert_int_equal(rr_rpc_clnt_stats(c, &st), 0);
	return st;
}

/* One side's counters that moved, by name, for a failure to explain. */
static void print_moved(const char *side, const struct rr_xprt_stats *st)
{
	fprintf(stderr, "  %s:", side);
#define X(f)                                                                   \
	if (st->f)                                                             \
		fprintf(stderr, " " #f " %llu", (unsigned long long)st->f);
	RR_XPRT_STATS_FIELDS(X)
#undef X
	fputc('\n', stderr);
}

/*
 * A call failed: what each side counted, so that a rare failure shows
 * whether the call, its reply or a completion went missing.
 */
static void print_both_sides(void)
{
	struct rr_xprt_stats st;

	if (g_fx && g_fx->c && !rr_rpc_clnt_stats(g_fx->c, &st))
		print_moved("client", &st);
	if (g_fx && !rr_t_server_stats(&g_fx->sv, &st))
		print_moved("server", &st);
}

/*
 * Connections the server ended because no first call came on them, on a
 * kernel device (verbs). On siw (Linux 6.1) a message that reaches the
 * passive side just after its MPA reply waits unread (src/fabric/verbs/
 * v.h), so the client's first call, holding its one credit, waits until
 * the server's first-call deadline ends the connection; the client then
 * reconnects. That is the only way a case here loses a connection it did
 * not ask to lose, so each such loss must be matched by one of these. Our
 * own providers must never stall so: for them this is 0.
 */
static uint64_t first_call_stalls(void)
{
	struct rr_xprt_stats st;

	if (g.xprt != RR_T_RDMA || !g.provider ||
	    strcmp(g.provider, "verbs") != 0 || !g_fx ||
	    rr_t_server_stats(&g_fx->sv, &st))
		return 0;
	return st.conn_timeouts;
}

/*
 * Connections the client lost, less those a kernel device's stalls cost
 * it. A stall on a connection the client never saw up is no loss of its:
 * hence the floor at 0.
 */
static uint64_t lost_by_the_case(const struct rr_xprt_stats *st)
{
	uint64_t stalls = first_call_stalls();

	if (stalls)
		print_message("%llu first calls stalled on the device\n",
			      (unsigned long long)stalls);
	return st->conn_lost > stalls ? st->conn_lost - stalls : 0;
}

/* The case lost want connections; else both sides' counters say why. */
static void expect_lost(const struct rr_xprt_stats *st, uint64_t want)
{
	uint64_t lost = lost_by_the_case(st);

	if (lost == want)
		return;
	print_both_sides();
	fail_msg("%llu connections lost, not %llu", (unsigned long long)lost,
		 (unsigned long long)want);
}

static void expect_lost_now(struct rr_rpc_clnt *c, uint64_t want)
{
	struct rr_xprt_stats st = stats_of(c);

	expect_lost(&st, want);
}

static bool faulty(void)
{
	return g.faults;
}

/* The faults provider found no Send buffer reused before its completion. */
static int faults_clean(struct rr_clnt *c)
{
	struct rr_fault_stats fs;

	if (!faulty())
		return 0;
	if (rr_faults_stats(rr_clnt_device(c), &fs))
		return -1;
	fprintf(stderr,
		"  faults: %llu send completions held, %llu batches "
		"shuffled, %llu duplicated\n",
		(unsigned long long)fs.send_cqes_delayed,
		(unsigned long long)fs.batches_reordered,
		(unsigned long long)fs.cqes_duplicated);
	return fs.send_bufs_modified ? -1 : 0;
}

/*
 * RDMA: every work request completed or flushed once at teardown. Both:
 * no state machine moved where it may not (base/fsm.h).
 */
static int clnt_end(struct rr_rpc_clnt *c, struct rr_clnt *rdma)
{
	struct rr_xprt_stats st;
	int rc = 0;

	if (rr_rpc_clnt_stats(c, &st) || st.state_violations) {
		fprintf(stderr,
			"client state machine moved where it may not\n");
		rc = -1;
	}

	if (rdma && (rr_clnt_shutdown(rdma) || rr_clnt_stats(rdma, &st) ||
		     st.teardown_unbalanced || faults_clean(rdma))) {
		fprintf(stderr, "client torn down unclean\n");
		rc = -1;
	}
	if (rr_rpc_clnt_destroy(c))
		rc = -1;
	return rc;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc = 0;

	if (f->c && clnt_end(f->c, f->rdma))
		rc = -1;
	if (rr_t_server_stop(&f->sv))
		rc = -1;
	free(f);
	rr_t_limit_end();
	return rc;
}

/* Completions the faults provider delivered twice (each seen as stale). */
static uint64_t dup_cqes(void)
{
	struct rr_fault_stats fs;

	if (!faulty())
		return 0;
	assert_non_null(g_fx->rdma);
	assert_int_equal(rr_faults_stats(rr_clnt_device(g_fx->rdma), &fs), 0);
	return fs.cqes_duplicated;
}

/*
 * What holds after each case: every reply matched a call, none was
 * malformed; over RDMA every completion was ours and current (but for
 * the second copies the faults provider made) and, when the case moved
 * chunks, every window bound was made invalid again.
 */
static void check_clean(struct rr_rpc_clnt *c, bool chunks)
{
	struct rr_xprt_stats st = stats_of(c);

	assert_int_equal(st.bad_xids, 0);
	assert_int_equal(st.bad_headers, 0);
	if (g.xprt != RR_T_RDMA)
		return;
	assert_int_equal(st.unknown_cqes, 0);
	if (st.conn_lost) /* copies on a connection torn down go with it */
		assert_true(st.stale_cqes <= dup_cqes());
	else
		assert_int_equal(st.stale_cqes, dup_cqes());
	assert_int_equal(st.bad_remote_invs, 0);
	if (chunks) {
		assert_true(st.regs > 0);
		assert_true(st.local_invs + st.remote_invs + st.sync_invs +
				    st.loss_fences >=
			    st.regs);
	}
	if (chunks && g.registration == RR_REG_PER_CALL) {
		assert_true(st.sync_invs > 0);
		assert_int_equal(st.local_invs + st.remote_invs, 0);
	}
}

static struct rr_call mkcall(uint32_t proc, void *res, size_t res_cap)
{
	return (struct rr_call){.prog = RR_T_PROG,
				.vers = RR_T_VERS,
				.proc = proc,
				.res = res,
				.res_cap = res_cap};
}

/* A NULL call's outcome: success with empty results, or the case fails. */
static void null_result_ok(const struct rr_call *call, int rc)
{
	if (rc) {
		print_both_sides();
		fail_msg("NULL: rc %d", rc);
	}
	assert_int_equal(call->reply_stat, RR_MSG_ACCEPTED);
	assert_int_equal(call->accept_stat, RR_SUCCESS);
	assert_int_equal(call->res_len, 0);
}

static void null_ok(struct rr_rpc_clnt *c)
{
	uint8_t res[16];
	struct rr_call call = mkcall(RR_T_NULL, res, sizeof(res));

	null_result_ok(&call, rr_rpc_clnt_call(c, &call));
}

/* A buffer with SLACK sentinel bytes after cap, to catch overruns. */
static uint8_t *buf_new(size_t cap)
{
	uint8_t *b = malloc(cap + SLACK);

	assert_non_null(b);
	memset(b, SENTINEL, cap + SLACK);
	return b;
}

static void assert_sentinel(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != SENTINEL)
			fail_msg("byte %zu past the result was overwritten", i);
}

static void assert_pattern(const uint8_t *p, size_t len, size_t size)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != rr_t_pat(i))
			fail_msg("size %zu: byte %zu is %#x, want %#x", size, i,
				 p[i], rr_t_pat(i));
}

static uint32_t call_u32(struct rr_rpc_clnt *c, uint32_t proc)
{
	uint8_t res[8];
	struct rr_call call = mkcall(proc, res, sizeof(res));

	assert_int_equal(rr_rpc_clnt_call(c, &call), 0);
	assert_int_equal(call.res_len, 4);
	return rr_t_get32(res);
}

static void big_ok(struct rr_rpc_clnt *c, uint32_t n)
{
	uint8_t *res = buf_new(BIG_CAP);
	uint8_t args[4];
	struct rr_call call = mkcall(RR_T_BIG, res, BIG_CAP);

	rr_t_put32(args, n);
	call.args = args;
	call.args_len = 4;
	assert_int_equal(rr_rpc_clnt_call(c, &call), 0);
	assert_int_equal(rr_t_get32(res), n);
	assert_pattern(res + 4, n, n);
	free(res);
}

/* ------------------------------------------------------ asynchronous */

struct async_log {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t driver; /* the thread in rr_rpc_clnt_progress */
	uint32_t ndone, here;
	uint32_t order[NASYNC];
	uint32_t count[NASYNC];
	int rc[NASYNC];
};

struct async_slot {
	struct async_log *log;
	uint32_t idx;
	struct rr_call call;
	uint8_t args[ASYNC_LEN];
	uint8_t res[ASYNC_LEN];
};

static void async_done(struct rr_call *call, int rc, void *arg)
{
	struct async_slot *s = arg;
	struct async_log *l = s->log;

	(void)call;
	pthread_mutex_lock(&l->mu);
	if (l->ndone < NASYNC)
		l->order[l->ndone] = s->idx;
	l->ndone++;
	if (pthread_equal(pthread_self(), l->driver))
		l->here++;
	l->count[s->idx]++;
	l->rc[s->idx] = rc;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

/* n ECHO calls of their own bytes, not issued yet. */
static struct async_slot *async_new(struct async_log *l, uint32_t n,
				    uint32_t seed)
{
	struct async_slot *s = calloc(n, sizeof(*s));

	assert_non_null(s);
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->driver = pthread_self();
	for (uint32_t i = 0; i < n; i++) {
		s[i].log = l;
		s[i].idx = i;
		rr_t_fill_seeded(s[i].args, ASYNC_LEN, i + seed);
		memset(s[i].res, SENTINEL, ASYNC_LEN);
		s[i].call = mkcall(RR_T_ECHO, s[i].res, ASYNC_LEN);
		s[i].call.args = s[i].args;
		s[i].call.args_len = ASYNC_LEN;
	}
	return s;
}

static void async_free(struct async_log *l, struct async_slot *s)
{
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(s);
}

static void async_issue(struct rr_rpc_clnt *c, struct async_slot *s)
{
	int rc = rr_rpc_clnt_call_async(c, &s->call, async_done, s);

	if (rc)
		fail_msg("call_async %u: %d", s->idx, rc);
}

static uint32_t async_ndone(struct async_log *l)
{
	uint32_t n;

	pthread_mutex_lock(&l->mu);
	n = l->ndone;
	pthread_mutex_unlock(&l->mu);
	return n;
}

/* Waits up to tmo_ms for a callback run by another thread. */
static void async_wait_change(struct async_log *l, uint32_t seen, int tmo_ms)
{
	struct timespec ts = rr_t_realtime_in(tmo_ms);

	pthread_mutex_lock(&l->mu);
	while (l->ndone == seen)
		if (pthread_cond_timedwait(&l->cv, &l->mu, &ts))
			break;
	pthread_mutex_unlock(&l->mu);
}

/*
 * Drives the client from this thread until want callbacks ran, failing
 * after tmo_ms. A client that is down for good (-ECONNRESET) or driven
 * by another thread (-EBUSY) leaves the callbacks to others: wait.
 */
static void async_drive(struct rr_rpc_clnt *c, struct async_log *l,
			uint32_t want, int tmo_ms)
{
	uint64_t end = rr_t_now_ms() + (uint64_t)tmo_ms;
	uint32_t n;

	while ((n = async_ndone(l)) < want) {
		int rc;

		if (rr_t_now_ms() >= end)
			fail_msg("%u of %u async calls completed in %d ms", n,
				 want, tmo_ms);
		rc = rr_rpc_clnt_progress(c, 200);
		if (rc == -EBUSY || rc == -ECONNRESET)
			async_wait_change(l, n, 200);
		else if (rc && rc != -ETIMEDOUT)
			fail_msg("progress: %d", rc);
	}
}

static void echo_ok(const struct async_slot *s)
{
	if (s->log->count[s->idx] != 1 || s->log->rc[s->idx]) {
		print_both_sides();
		fail_msg("call %u: %u callbacks, rc %d", s->idx,
			 s->log->count[s->idx], s->log->rc[s->idx]);
	}
	assert_int_equal(s->call.res_len, ASYNC_LEN);
	assert_memory_equal(s->res, s->args, ASYNC_LEN);
}

/* ========================================================== the cases */

static void null_call_succeeds_with_empty_results(void **state)
{
	struct fx *f = *state;

	null_ok(f->c);
	null_ok(f->c);
	assert_int_equal(stats_of(f->c).calls, 2);
	expect_lost_now(f->c, 0);
	check_clean(f->c, false);
}

/*
 * Up to the smaller of the servers' room for XDR results (256 KiB over
 * RDMA; a record of 1 MiB + 64 KiB over TCP).
 */
static void echo_returns_the_argument_bytes_at_every_size(void **state)
{
	static const size_t sizes[] = {0,    1,	    3,	    100,
				       1000, 3000,  4000,   4096,
				       5000, 65536, 200000, BIG_CAP};
	struct fx *f = *state;

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], cap = n ? n : 4;
		uint8_t *args = malloc(n + 1), *res = buf_new(cap);
		struct rr_call call = mkcall(RR_T_ECHO, res, cap);
		int rc;

		assert_non_null(args);
		rr_t_fill_seeded(args, n, (uint32_t)k);
		call.args = n ? args : NULL;
		call.args_len = n;
		rc = rr_rpc_clnt_call(f->c, &call);
		if (rc)
			fail_msg("ECHO %zu: rc %d", n, rc);
		assert_int_equal(call.accept_stat, RR_SUCCESS);
		assert_int_equal(call.res_len, n);
		assert_memory_equal(res, args, n);
		assert_sentinel(res + cap, SLACK);
		free(args);
		free(res);
	}
	check_clean(f->c, true); /* RDMA: the large ones need chunks */
}

static const uint32_t bulk_sizes[] = {0,    1,	  3,	1000,  3900,
				      4000, 4096, 5000, 65536, RR_T_MAX_BULK};
#define NSIZES (sizeof(bulk_sizes) / sizeof(bulk_sizes[0]))

/* One READ of size; the bulk where rr_rpc_clnt_ddp says it lands. */
static void read_one(struct rr_rpc_clnt *c, uint32_t size, uint8_t *res,
		     size_t res_cap, uint8_t *bulk)
{
	bool ddp = rr_rpc_clnt_ddp(c);
	struct rr_call call = mkcall(RR_T_READ, res, res_cap);
	uint8_t args[4];
	int rc;

	rr_t_put32(args, size);
	call.args = args;
	call.args_len = 4;
	call.res_bulk = bulk;
	call.res_bulk_cap = RR_T_MAX_BULK;
	memset(res, SENTINEL, res_cap + SLACK);
	memset(bulk, SENTINEL, RR_T_MAX_BULK + SLACK);
	rc = rr_rpc_clnt_call(c, &call);
	if (rc)
		fail_msg("READ %u: rc %d", size, rc);
	assert_int_equal(call.accept_stat, RR_SUCCESS);
	assert_int_equal(rr_t_get32(res), size);
	if (ddp) {
		assert_int_equal(call.res_len, 4);
		if (call.res_bulk_len != size)
			fail_msg("READ %u: res_bulk_len %zu", size,
				 call.res_bulk_len);
		assert_pattern(bulk, size, size);
		assert_sentinel(bulk + size, SLACK);
		return;
	}
	assert_int_equal(call.res_bulk_len, 0);
	assert_int_equal(call.res_len, 4 + size + rr_t_xdr_pad(size));
	assert_pattern(res + 4, size, size);
	assert_sentinel(bulk, SLACK);
}

static void read_bulk_lands_in_res_bulk_or_inline_as_documented(void **state)
{
	struct fx *f = *state;
	size_t res_cap = 8 + RR_T_MAX_BULK;
	uint8_t *bulk = buf_new(RR_T_MAX_BULK), *res = buf_new(res_cap);

	print_message("ddp over %s: %s\n", g.name,
		      rr_rpc_clnt_ddp(f->c) ? "yes" : "no");
	assert_int_equal(rr_rpc_clnt_ddp(f->c), g.xprt == RR_T_RDMA);
	assert_string_equal(rr_rpc_clnt_netid(f->c),
			    g.xprt == RR_T_RDMA ? "rdma" : "tcp");
	assert_int_equal(rr_rpc_clnt_mem_reg(f->c, bulk, RR_T_MAX_BULK + SLACK),
			 0);
	for (size_t k = 0; k < NSIZES; k++)
		read_one(f->c, bulk_sizes[k], res, res_cap, bulk);
	assert_int_equal(rr_rpc_clnt_mem_unreg(f->c, bulk), 0);
	free(bulk);
	free(res);
	check_clean(f->c, true);
}

static void write_delivers_the_bulk_argument_exactly(void **state)
{
	struct fx *f = *state;
	uint8_t *data = malloc(RR_T_MAX_BULK);
	uint8_t res[16];

	assert_non_null(data);
	assert_int_equal(rr_rpc_clnt_mem_reg(f->c, data, RR_T_MAX_BULK), 0);
	for (size_t k = 0; k < NSIZES; k++) {
		uint32_t size = bulk_sizes[k];
		uint8_t args[4];
		struct rr_call call = mkcall(RR_T_WRITE, res, sizeof(res));
		int rc;

		rr_t_fill_seeded(data, size, (uint32_t)k + 100);
		rr_t_put32(args, size);
		call.args = args;
		call.args_len = 4;
		call.arg_bulk = data;
		call.arg_bulk_len = size;
		rc = rr_rpc_clnt_call(f->c, &call);
		if (rc)
			fail_msg("WRITE %u: rc %d accept %u", size, rc,
				 call.accept_stat);
		assert_int_equal(call.res_len, 8);
		assert_int_equal(rr_t_get32(res), size);
		if (rr_t_get32(res + 4) != rr_t_fnv1a(data, size))
			fail_msg("WRITE %u: server saw checksum %#x, sent %#x",
				 size, rr_t_get32(res + 4),
				 rr_t_fnv1a(data, size));
	}
	assert_int_equal(rr_rpc_clnt_mem_unreg(f->c, data), 0);
	free(data);
	check_clean(f->c, true);
}

static void big_xdr_results_arrive_exactly(void **state)
{
	static const uint32_t ns[] = {0, 100, 3500, 20000, 200000};
	struct fx *f = *state;
	uint8_t *res = buf_new(BIG_CAP);

	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		uint32_t n = ns[k];
		uint8_t args[4];
		struct rr_call call = mkcall(RR_T_BIG, res, BIG_CAP);
		int rc;

		memset(res, SENTINEL, BIG_CAP + SLACK);
		rr_t_put32(args, n);
		call.args = args;
		call.args_len = 4;
		rc = rr_rpc_clnt_call(f->c, &call);
		if (rc)
			fail_msg("BIG %u: rc %d", n, rc);
		assert_int_equal(call.res_len, 4 + n + rr_t_xdr_pad(n));
		assert_int_equal(call.res_bulk_len, 0);
		assert_int_equal(rr_t_get32(res), n);
		assert_pattern(res + 4, n, n);
		assert_sentinel(res + call.res_len, SLACK);
	}
	free(res);
	check_clean(f->c, true);
}

static void handler_sees_the_auth_sys_identity_of_the_call(void **state)
{
	struct fx *f = *state;
	struct rr_cred cred = {.uid = 1234,
			       .gid = 99,
			       .ngids = 16,
			       .gids = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
					15, 16, 17, 18, 0xfffffffeu},
			       .machine = "conformance"};
	uint8_t res[128];
	struct rr_call call = mkcall(RR_T_WHOAMI, res, sizeof(res));

	call.cred = &cred;
	assert_int_equal(rr_rpc_clnt_call(f->c, &call), 0);
	assert_int_equal(call.res_len, 12 + 4 * 16);
	assert_int_equal(rr_t_get32(res), 1234);
	assert_int_equal(rr_t_get32(res + 4), 99);
	assert_int_equal(rr_t_get32(res + 8), 16);
	for (uint32_t i = 0; i < 16; i++)
		assert_int_equal(rr_t_get32(res + 12 + 4 * i), cred.gids[i]);
	cred.ngids = 0;
	cred.machine = NULL; /* gethostname() */
	assert_int_equal(rr_rpc_clnt_call(f->c, &call), 0);
	assert_int_equal(call.res_len, 12);
	assert_int_equal(rr_t_get32(res + 8), 0);
	check_clean(f->c, false);
}

static void handler_sees_no_identity_without_credentials(void **state)
{
	struct fx *f = *state;
	uint8_t res[128];
	struct rr_call call = mkcall(RR_T_WHOAMI, res, sizeof(res));

	assert_int_equal(rr_rpc_clnt_call(f->c, &call), 0);
	assert_int_equal(call.res_len, 12);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rr_t_get32(res + 4 * i), RR_T_NO_CRED);
	check_clean(f->c, false);
}

/* ------------------------------------------------------- RPC errors */

static void call_rejected(struct rr_rpc_clnt *c, uint32_t prog, uint32_t vers,
			  uint32_t proc, uint32_t accept)
{
	uint8_t res[64];
	struct rr_call call = mkcall(proc, res, sizeof(res));
	int rc;

	call.prog = prog;
	call.vers = vers;
	rc = rr_rpc_clnt_call(c, &call);
	if (rc != -EREMOTEIO)
		fail_msg("prog %#x vers %u proc %u: rc %d, want -EREMOTEIO",
			 prog, vers, proc, rc);
	assert_int_equal(call.reply_stat, RR_MSG_ACCEPTED);
	assert_int_equal(call.accept_stat, accept);
	assert_int_equal(call.res_len, 0);
}

static void call_to_an_unknown_program_is_prog_unavail(void **state)
{
	struct fx *f = *state;

	call_rejected(f->c, RR_T_PROG + 1, 1, 0, RR_PROG_UNAVAIL);
	null_ok(f->c);
	check_clean(f->c, false);
}

/* RFC 5531: PROG_MISMATCH carries the lowest and highest version served. */
static void
call_to_a_wrong_version_is_prog_mismatch_with_the_range(void **state)
{
	struct fx *f = *state;
	uint8_t res[64];
	struct rr_call call = mkcall(RR_T_NULL, res, sizeof(res));

	call_rejected(f->c, RR_T_PROG, 2, 0, RR_PROG_MISMATCH);
	call.vers = 2;
	assert_int_equal(rr_rpc_clnt_call(f->c, &call), -EREMOTEIO);
	assert_int_equal(call.accept_stat, RR_PROG_MISMATCH);
	if (call.mismatch_low != 1 || call.mismatch_high != 1)
		fail_msg("PROG_MISMATCH for vers 2 names %u..%u, want 1..1",
			 call.mismatch_low, call.mismatch_high);
	call.vers = 7;
	assert_int_equal(rr_rpc_clnt_call(f->c, &call), -EREMOTEIO);
	assert_int_equal(call.accept_stat, RR_PROG_MISMATCH);
	if (call.mismatch_low != 1 || call.mismatch_high != 1)
		fail_msg("PROG_MISMATCH for vers 7 names %u..%u, want 1..1",
			 call.mismatch_low, call.mismatch_high);
	null_ok(f->c);
	check_clean(f->c, false);
}

static void call_to_an_unknown_procedure_is_proc_unavail(void **state)
{
	struct fx *f = *state;

	call_rejected(f->c, RR_T_PROG, RR_T_VERS, RR_T_NPROCS, RR_PROC_UNAVAIL);
	call_rejected(f->c, RR_T_PROG, RR_T_VERS, 1000, RR_PROC_UNAVAIL);
	null_ok(f->c);
	check_clean(f->c, false);
}

static void handler_garbage_args_reaches_the_caller(void **state)
{
	struct fx *f = *state;

	call_rejected(f->c, RR_T_PROG, RR_T_VERS, RR_T_WRITE, RR_GARBAGE_ARGS);
	call_rejected(f->c, RR_T_PROG, RR_T_VERS, RR_T_READ, RR_GARBAGE_ARGS);
	null_ok(f->c);
	check_clean(f->c, false);
	assert_true(stats_of(f->c).calls >= 3);
}

/* Results over res_cap: -EMSGSIZE, res untouched past it, no harm done. */
static void results_larger_than_res_cap_fail_with_emsgsize(void **state)
{
	struct fx *f = *state;
	uint8_t args[3000], small[100 + SLACK];
	size_t cap = 100000;
	uint8_t *res = buf_new(cap), big[4];
	struct rr_call echo = mkcall(RR_T_ECHO, small, 100);
	struct rr_call bigc = mkcall(RR_T_BIG, res, cap);
	int rc1, rc2, rc3;

	memset(small, SENTINEL, sizeof(small));
	rr_t_fill_seeded(args, sizeof(args), 1);
	echo.args = args;
	echo.args_len = sizeof(args);
	rc1 = rr_rpc_clnt_call(f->c, &echo);
	assert_sentinel(small + 100, SLACK);
	null_ok(f->c);
	rr_t_put32(big, 200000);
	bigc.args = big;
	bigc.args_len = 4;
	rc2 = rr_rpc_clnt_call(f->c, &bigc);
	assert_sentinel(res + cap, SLACK);
	null_ok(f->c);
	memset(res, SENTINEL, 1000 + SLACK);
	rr_t_put32(big, 20000);
	bigc.res_cap = 1000;
	rc3 = rr_rpc_clnt_call(f->c, &bigc);
	assert_sentinel(res + 1000, SLACK);
	free(res);
	print_message("ECHO 3000 into 100: rc %d; BIG 200000 into 100000: "
		      "rc %d; BIG 20000 into 1000: rc %d\n",
		      rc1, rc2, rc3);
	null_ok(f->c);
	big_ok(f->c, 200000);
	check_clean(f->c, true);
	assert_int_equal(rc1, -EMSGSIZE);
	assert_int_equal(rc2, -EMSGSIZE);
	assert_int_equal(rc3, -EMSGSIZE);
	expect_lost_now(f->c, 0); /* it carries on */
}

/* ------------------------------------------------- many in flight */

/*
 * More calls than may be in flight (two credits over RDMA, two calls on
 * the wire over TCP): the rest wait their turn, in issue order, and each
 * completes exactly once. In issue order, two at a time: when call k
 * completes, all but one of the calls before it have. A server that
 * answers in order (inline handlers; RDMA's pool, whose two calls of a
 * connection finish in turn) makes that the issue order exactly, unless
 * the faults provider shuffles the completions.
 */
static bool answers_in_order(void)
{
	if (faulty())
		return false;
	return g.svc_threads == 0 || g.xprt == RR_T_RDMA;
}

static void async_calls_beyond_the_limit_complete_once_in_order(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s = async_new(&log, NASYNC, 1000);
	struct rr_xprt_stats st;

	for (uint32_t i = 0; i < NASYNC; i++)
		async_issue(f->c, &s[i]);
	async_drive(f->c, &log, NASYNC, 60000);
	for (uint32_t i = 0; i < NASYNC; i++)
		echo_ok(&s[i]);
	for (uint32_t i = 0; i < NASYNC; i++)
		if (log.order[i] > i + 1 ||
		    (answers_in_order() && log.order[i] != i))
			fail_msg("completion %u was call %u", i, log.order[i]);
	st = stats_of(f->c);
	print_message("credit_waits %llu\n",
		      (unsigned long long)st.credit_waits);
	assert_true(st.credit_waits > 0);
	assert_int_equal(st.calls, NASYNC);
	null_ok(f->c);
	assert_int_equal(async_ndone(&log), NASYNC);
	check_clean(f->c, false);
	async_free(&log, s);
}

/*
 * A caller in progress runs the callbacks itself, not another thread.
 * Not all of them: a reply that comes while the client's own thread is
 * reading is delivered there, which a loaded machine makes common (3 of
 * 64 were seen). None at all would mean the caller never reads.
 */
static void progress_runs_callbacks_in_the_calling_thread(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s = async_new(&log, NASYNC, 2000);

	for (uint32_t i = 0; i < NASYNC; i++)
		async_issue(f->c, &s[i]);
	async_drive(f->c, &log, NASYNC, 60000);
	for (uint32_t i = 0; i < NASYNC; i++)
		echo_ok(&s[i]);
	print_message("%u of %u callbacks in the driving thread\n", log.here,
		      NASYNC);
	if (log.here == 0)
		fail_msg("only %u of %u callbacks ran in the driving thread",
			 log.here, NASYNC);
	/* Nothing in flight: progress waits out its time and says so. */
	assert_int_equal(rr_rpc_clnt_progress(f->c, 20), -ETIMEDOUT);
	expect_lost_now(f->c, 0);
	check_clean(f->c, false);
	async_free(&log, s);
}

/*
 * rr_rpc_clnt_progress_fd: the other descriptor alone ends it (-EAGAIN),
 * neither lets it time out, and with the descriptor quiet it reads the
 * replies and runs their callbacks, in this thread too.
 */
static void progress_fd_returns_for_its_descriptor_and_for_replies(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s = async_new(&log, NASYNC, 3000);
	uint64_t end = rr_t_now_ms() + 60000;
	int pfd[2];
	char ch = 'x';

	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(write(pfd[1], &ch, 1), 1);
	assert_int_equal(rr_rpc_clnt_progress_fd(f->c, 20000, pfd[0]), -EAGAIN);
	assert_int_equal(read(pfd[0], &ch, 1), 1);
	assert_int_equal(rr_rpc_clnt_progress_fd(f->c, 20, pfd[0]), -ETIMEDOUT);
	for (uint32_t i = 0; i < NASYNC; i++)
		async_issue(f->c, &s[i]);
	while (async_ndone(&log) < NASYNC) {
		int rc = rr_rpc_clnt_progress_fd(f->c, 200, pfd[0]);

		if (rc && rc != -ETIMEDOUT)
			fail_msg("progress_fd: %d", rc);
		if (rr_t_now_ms() >= end)
			fail_msg("%u of %u async calls completed",
				 async_ndone(&log), NASYNC);
	}
	for (uint32_t i = 0; i < NASYNC; i++)
		echo_ok(&s[i]);
	print_message("%u of %u callbacks in the driving thread\n", log.here,
		      NASYNC);
	if (log.here == 0)
		fail_msg("no callback ran in the thread in progress_fd");
	assert_int_equal(rr_rpc_clnt_progress_fd(f->c, 0, -1), -EINVAL);
	close(pfd[0]);
	close(pfd[1]);
	check_clean(f->c, false);
	async_free(&log, s);
}

/* ------------------------------------------- timeouts, cancellation */

static struct rr_call sleep_call(uint8_t *args, uint32_t ms, uint8_t *res,
				 size_t cap)
{
	struct rr_call call = mkcall(RR_T_SLEEP, res, cap);

	rr_t_put32(args, ms);
	call.args = args;
	call.args_len = 4;
	return call;
}

/*
 * A handler that takes longer than the call may wait: -ETIMEDOUT on
 * time, counted; the caller owns res again, and the late reply must
 * neither land there nor confuse the calls that follow.
 */
static void timed_out(struct rr_rpc_clnt *c, struct rr_call *call,
		      const char *what)
{
	uint64_t t0 = rr_t_now_ms(), dt;
	int rc;

	call->timeout_ms = 300;
	rc = rr_rpc_clnt_call(c, call);
	dt = rr_t_now_ms() - t0;
	print_message("%s: timed out after %llu ms\n", what,
		      (unsigned long long)dt);
	if (rc != -ETIMEDOUT)
		fail_msg("%s, timeout 300: rc %d after %llu ms", what, rc,
			 (unsigned long long)dt);
	assert_true(dt >= 290);
	assert_true(dt < 5000);
}

/*
 * A handler that takes longer than the call may wait, or a server that
 * stopped: -ETIMEDOUT on time, counted; the caller owns res again, and
 * the late reply must neither land there nor confuse the calls that
 * follow.
 */
static void a_call_outlasting_its_timeout_fails_with_etimedout(void **state)
{
	struct fx *f = *state;
	uint8_t args[100], res[100 + SLACK];
	struct rr_call call = sleep_call(args, 1000, res, 100);

	null_ok(f->c); /* RDMA: the grant is in */
	timed_out(f->c, &call, "SLEEP 1000");
	assert_int_equal(stats_of(f->c).timeouts, 1);
	memset(res, SENTINEL, sizeof(res));
	null_ok(f->c); /* behind the late reply, on an inline server */
	null_ok(f->c);
	assert_sentinel(res, sizeof(res));

	call = mkcall(RR_T_ECHO, res, 100);
	rr_t_fill_seeded(args, sizeof(args), 6);
	call.args = args;
	call.args_len = sizeof(args);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	timed_out(f->c, &call, "ECHO to a stopped server");
	assert_int_equal(stats_of(f->c).timeouts, 2);
	memset(res, SENTINEL, sizeof(res));
	assert_int_equal(rr_t_server_thaw(&f->sv), 0);
	null_ok(f->c);
	null_ok(f->c);
	assert_sentinel(res, sizeof(res));
	big_ok(f->c, 20000);
	assert_int_equal(stats_of(f->c).timeouts, 2);
	expect_lost_now(f->c, 0);
	check_clean(f->c, true);
}

/* Cancels s: -ECANCELED once, then -ENOENT; the n-th cancel counted. */
static void cancel_once(struct rr_rpc_clnt *c, struct async_slot *s, uint64_t n)
{
	struct async_log *l = s->log;

	assert_int_equal(async_ndone(l), 0);
	assert_int_equal(rr_rpc_clnt_cancel(c, &s->call), 0);
	async_drive(c, l, 1, 5000);
	assert_int_equal(l->count[0], 1);
	if (l->rc[0] != -ECANCELED)
		fail_msg("cancelled call: rc %d", l->rc[0]);
	assert_int_equal(rr_rpc_clnt_cancel(c, &s->call), -ENOENT);
	assert_int_equal(stats_of(c).cancels, n);
	memset(s->res, SENTINEL, ASYNC_LEN);
}

/*
 * Cancelled while its handler runs, or while the server is stopped:
 * -ECANCELED once, then -ENOENT; the late reply lands nowhere.
 */
static void a_cancelled_call_completes_once_with_ecanceled(void **state)
{
	struct fx *f = *state;
	struct async_log log, log2;
	struct async_slot *s = async_new(&log, 1, 7);
	struct async_slot *e = async_new(&log2, 1, 8);
	uint8_t args[4];

	null_ok(f->c);
	s->call = sleep_call(args, 500, s->res, ASYNC_LEN);
	async_issue(f->c, s);
	cancel_once(f->c, s, 1);
	null_ok(f->c);
	null_ok(f->c);
	assert_sentinel(s->res, ASYNC_LEN);
	assert_int_equal(log.count[0], 1);

	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	async_issue(f->c, e);
	cancel_once(f->c, e, 2);
	assert_int_equal(rr_t_server_thaw(&f->sv), 0);
	null_ok(f->c);
	null_ok(f->c);
	assert_sentinel(e->res, ASYNC_LEN);
	assert_int_equal(log2.count[0], 1);
	assert_int_equal(stats_of(f->c).cancels, 2);
	expect_lost_now(f->c, 0);
	check_clean(f->c, false);
	async_free(&log, s);
	async_free(&log2, e);
}

/* ---------------------------------------------- lost connections */

/* NKILL calls in flight, ECHO, READ with res_bulk and WRITE mixed. */
struct kill_bufs {
	uint8_t *rbuf, *wbuf;
	uint8_t args[NKILL][4];
};

static void kill_calls_issue(struct rr_rpc_clnt *c, struct async_slot *s,
			     struct kill_bufs *b)
{
	for (uint32_t i = 0; i < NKILL; i++) {
		struct rr_call *call = &s[i].call;

		if (i % 3 == 1) { /* RDMA: a write chunk in flight */
			call->proc = RR_T_READ;
			rr_t_put32(b->args[i], 65536);
			call->args = b->args[i];
			call->args_len = 4;
			call->res_bulk = b->rbuf + (size_t)i * 65536;
			call->res_bulk_cap = 65536;
		} else if (i % 3 == 2) { /* RDMA: a read chunk in flight */
			call->proc = RR_T_WRITE;
			rr_t_put32(b->args[i], 65536);
			call->args = b->args[i];
			call->args_len = 4;
			call->arg_bulk = b->wbuf;
			call->arg_bulk_len = 65536;
		}
		async_issue(c, &s[i]);
	}
}

/* no_reconnect: the server dies, each call fails once, and so do later. */
static void killed_server_fails_every_call_in_flight_exactly_once(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s = async_new(&log, NKILL, 0);
	struct kill_bufs b = {.rbuf = malloc(NKILL * 65536),
			      .wbuf = malloc(65536)};
	uint8_t res[16];
	struct rr_call after = mkcall(RR_T_NULL, res, sizeof(res));
	struct rr_xprt_stats st;
	int rc;

	assert_non_null(b.rbuf);
	assert_non_null(b.wbuf);
	assert_int_equal(rr_rpc_clnt_mem_reg(f->c, b.rbuf, NKILL * 65536), 0);
	assert_int_equal(rr_rpc_clnt_mem_reg(f->c, b.wbuf, 65536), 0);
	rr_t_fill_seeded(b.wbuf, 65536, 8);
	null_ok(f->c);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	kill_calls_issue(f->c, s, &b);
	assert_int_equal(rr_t_server_kill(&f->sv), 0);
	async_drive(f->c, &log, NKILL, 20000);
	for (uint32_t i = 0; i < NKILL; i++)
		if (log.count[i] != 1 || log.rc[i] != -ECONNRESET)
			fail_msg("call %u: %u callbacks, rc %d", i,
				 log.count[i], log.rc[i]);
	rc = rr_rpc_clnt_call(f->c, &after);
	if (rc != -ECONNRESET)
		fail_msg("call after the server died: rc %d", rc);
	st = stats_of(f->c);
	assert_int_equal(st.conn_lost, 1);
	assert_int_equal(st.connects, 1);
	check_clean(f->c, false); /* a lost connection's windows are freed */
	assert_int_equal(clnt_end(f->c, f->rdma), 0);
	f->c = NULL;
	for (uint32_t i = 0; i < NKILL; i++)
		assert_int_equal(log.count[i], 1);
	async_free(&log, s);
	free(b.rbuf);
	free(b.wbuf);
}

/*
 * A soft client's NULL: a call whose first-call stall (first_call_stalls)
 * ended its connection fails, as it should on a soft client; the next
 * goes out on a new connection.
 */
static void soft_null_ok(struct rr_rpc_clnt *c)
{
	uint8_t res[16];
	struct rr_call call = mkcall(RR_T_NULL, res, sizeof(res));
	uint64_t stalls = first_call_stalls();
	int rc;

	while ((rc = rr_rpc_clnt_call(c, &call)) == -ECONNRESET &&
	       first_call_stalls() > stalls)
		stalls = first_call_stalls();
	null_result_ok(&call, rc);
}

/*
 * soft: the calls that had gone out fail with -ECONNRESET as soon as the
 * server is gone, not at their timeouts; the client itself reconnects
 * for the calls that follow.
 */
static void soft_client_fails_calls_sent_when_the_server_dies(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s = async_new(&log, 4, 30);
	uint64_t t0, dt;

	soft_null_ok(f->c); /* siw may stall its first call (above) */
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	for (uint32_t i = 0; i < 4; i++)
		async_issue(f->c, &s[i]);
	t0 = rr_t_now_ms();
	assert_int_equal(rr_t_server_kill(&f->sv), 0);
	async_drive(f->c, &log, 4, 5000);
	dt = rr_t_now_ms() - t0;
	print_message("errors after %llu ms\n", (unsigned long long)dt);
	if (dt > 2000)
		fail_msg("soft: the errors took %llu ms",
			 (unsigned long long)dt);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(log.count[i], 1);
		assert_int_equal(log.rc[i], -ECONNRESET);
	}
	assert_int_equal(rr_t_server_restart(&f->sv), 0);
	soft_null_ok(f->c);
	assert_int_equal(stats_of(f->c).retransmits, 0);
	assert_true(stats_of(f->c).conn_lost >= 1);
	check_clean(f->c, false);
	async_free(&log, s);
}

/*
 * The server dies with calls in flight; a new one comes up on the same
 * port. The client reconnects by itself and sends those calls again with
 * their xids: each completes exactly once, with the right bytes.
 */
static void calls_in_flight_complete_once_on_a_restarted_server(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s = async_new(&log, NASYNC, 77);
	struct rr_xprt_stats st;

	null_ok(f->c); /* RDMA: the grant, so that all go out at once */
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	for (uint32_t i = 0; i < NASYNC; i++)
		async_issue(f->c, &s[i]);
	assert_int_equal(rr_t_server_kill(&f->sv), 0);
	assert_int_equal(rr_t_server_restart(&f->sv), 0);
	async_drive(f->c, &log, NASYNC, CALL_TMO_MS);
	for (uint32_t i = 0; i < NASYNC; i++)
		echo_ok(&s[i]);
	st = stats_of(f->c);
	/*
	 * Over TCP the first retry may reach the dying server before its
	 * listener closed: that connection dies too.
	 */
	if (g.xprt == RR_T_TCP)
		assert_true(st.conn_lost >= 1);
	else
		expect_lost(&st, 1);
	assert_int_equal(st.teardown_unbalanced, 0);
	/* An attempt may come before the new server listens: refused. */
	assert_true(st.connects >= 2);
	assert_true(st.retransmits >= 1);
	null_ok(f->c);
	check_clean(f->c, false);
	async_free(&log, s);
}

/*
 * The connection drops while a non-idempotent call runs; the client sends
 * it again on its new connection. The server's duplicate request cache
 * holds the copy until the first run ends, then answers it with that
 * run's reply: the procedure ran once, and the caller sees its result.
 */
static void a_call_sent_again_after_a_disconnect_runs_once(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s;
	uint8_t res[16];
	struct rr_call rel = mkcall(RR_T_RELEASE, res, sizeof(res));
	uint64_t end = rr_t_now_ms() + CALL_TMO_MS;
	struct rr_rpc_clnt *other;
	struct rr_xprt_stats st;

	if (g.svc_threads < 3) {
		/* COUNT, its copy and RELEASE run at once */
		print_message("skipped: needs RR_TEST_SVC_THREADS >= 3\n");
		skip();
	}
	s = async_new(&log, 1, 0);
	null_ok(f->c);
	s->call = mkcall(RR_T_COUNT, s->res, ASYNC_LEN);
	async_issue(f->c, s);
	while (call_u32(f->c, RR_T_PEEK) != 1) /* round trips: no spinning */
		assert_true(rr_t_now_ms() < end);
	assert_int_equal(rr_rpc_clnt_disconnect(f->c), 0);
	/* Another client lets the first run end. */
	assert_int_equal(clnt_new(f, 0, &other, NULL), 0);
	assert_int_equal(rr_rpc_clnt_call(other, &rel), 0);
	assert_int_equal(rr_rpc_clnt_destroy(other), 0);
	async_drive(f->c, &log, 1, CALL_TMO_MS);
	assert_int_equal(log.count[0], 1);
	assert_int_equal(log.rc[0], 0);
	assert_int_equal(s->call.res_len, 4);
	assert_int_equal(rr_t_get32(s->res), 1);
	assert_int_equal(call_u32(f->c, RR_T_PEEK), 1);
	st = stats_of(f->c);
	expect_lost(&st, 1);
	assert_true(st.retransmits >= 1);
	check_clean(f->c, false);
	async_free(&log, s);
}

/* --------------------------------------------------------- counters */

/*
 * The counters both transports document: calls completed, connects (the
 * first included), conn_lost; timeouts and cancels stay 0 when nothing
 * timed out or was cancelled. The server counts the calls it served.
 */
static void counters_count_calls_connects_and_losses(void **state)
{
	struct fx *f = *state;
	struct rr_xprt_stats st, sst;
	uint64_t stalls;

	for (int i = 0; i < 5; i++)
		null_ok(f->c);
	st = stats_of(f->c);
	stalls = first_call_stalls(); /* each: one more connect, one resend */
	assert_int_equal(st.calls, 5);
	assert_int_equal(st.connects, 1 + stalls);
	expect_lost(&st, 0);
	assert_int_equal(st.timeouts, 0);
	assert_int_equal(st.cancels, 0);
	assert_int_equal(st.retransmits, stalls);
	assert_int_equal(rr_t_server_stats(&f->sv, &sst), 0);
	assert_int_equal(sst.calls, 5);
	assert_int_equal(rr_rpc_clnt_disconnect(f->c), 0);
	null_ok(f->c);
	st = stats_of(f->c);
	stalls = first_call_stalls();
	assert_int_equal(st.calls, 6);
	assert_int_equal(st.connects, 2 + stalls);
	expect_lost(&st, 1);
	assert_int_equal(rr_t_server_stats(&f->sv, &sst), 0);
	assert_int_equal(sst.calls, 6);
	check_clean(f->c, false);
}

/* ------------------------------------------------- server connections */

/* The entry with calls answered, or NULL. */
static const struct rr_svc_conn_info *conn_with(const struct rr_t_conns *cs,
						uint64_t calls)
{
	for (uint32_t i = 0; i < cs->shown; i++)
		if (cs->c[i].info.calls == calls &&
		    cs->c[i].info.replies == calls)
			return &cs->c[i].info;
	return NULL;
}

/* Whether the server lists exactly the connections with these calls. */
static bool conns_are(const struct rr_t_conns *cs, const uint64_t *calls,
		      uint32_t n)
{
	if (cs->rc || cs->shown != n || cs->hidden)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!conn_with(cs, calls[i]))
			return false;
	return true;
}

static void fail_conns(const struct rr_t_conns *cs, uint32_t want)
{
	char seen[256] = "";
	size_t len = 0;

	for (uint32_t i = 0; i < cs->shown && len < sizeof(seen); i++)
		len += (size_t)snprintf(
			seen + len, sizeof(seen) - len, " %llu/%llu",
			(unsigned long long)cs->c[i].info.calls,
			(unsigned long long)cs->c[i].info.replies);
	fail_msg("server lists %u connections (rc %d, %u more; calls/replies"
		 "%s), want %u",
		 cs->shown, cs->rc, cs->hidden, seen, want);
}

/*
 * Asks until the server lists them: a reply can reach the client before
 * the server counts it sent, and a close reaches the server after the
 * client returns. Fails past the deadline with what it saw last.
 */
static void wait_conns(struct fx *f, const uint64_t *calls, uint32_t n,
		       struct rr_t_conns *cs)
{
	uint64_t end = rr_t_now_ms() + RR_T_SERVER_TMO_MS;

	for (;;) {
		assert_int_equal(rr_t_server_conns(&f->sv, RR_T_CONNS_MAX, cs),
				 0);
		if (conns_are(cs, calls, n))
			return;
		if (rr_t_now_ms() > end)
			fail_conns(cs, n);
		poll(NULL, 0, 10); /* a pause between asks, not a wait */
	}
}

static void conn_looks_right(const struct rr_svc_conn_info *i,
			     const char *netid)
{
	const struct sockaddr_in *sin = (const void *)&i->peer;
	char addr[INET_ADDRSTRLEN];
	struct timespec now;

	assert_string_equal(i->netid, netid);
	assert_string_equal(i->state, "up");
	assert_int_equal(sin->sin_family, AF_INET);
	inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr));
	assert_string_equal(addr, test_addr());
	assert_int_not_equal(sin->sin_port, 0);
	assert_true(i->bytes_in > 0 && i->bytes_out > 0);
	assert_int_equal(i->errors, 0);
	assert_true(i->age_ms < 60000);
	clock_gettime(CLOCK_REALTIME, &now);
	assert_true(i->since_ms <= (uint64_t)now.tv_sec * 1000 + 1000 &&
		    i->since_ms + 60000 > (uint64_t)now.tv_sec * 1000);
	if (!strcmp(netid, "rdma"))
		assert_true(i->credits_granted > 0);
	else
		assert_int_equal(i->credits_granted, 0);
	assert_int_equal(i->credits_used, 0); /* every call answered */
}

/*
 * rr_rpc_svc_conns: each live connection with the calls it carried, its
 * peer and transport, bounded by the caller's capacity; one that closes
 * leaves the list, and a reconnect starts from zero.
 */
static void server_lists_each_connection_until_it_closes(void **state)
{
	struct fx *f = *state;
	const char *netid = rr_rpc_clnt_netid(f->c);
	const struct sockaddr_in *p3, *p5;
	struct rr_rpc_clnt *b;
	struct rr_t_conns cs;

	for (int i = 0; i < 3; i++)
		null_ok(f->c);
	assert_int_equal(clnt_new(f, 0, &b, NULL), 0);
	for (int i = 0; i < 5; i++)
		null_ok(b);
	wait_conns(f, (const uint64_t[]){3, 5}, 2, &cs);
	conn_looks_right(conn_with(&cs, 3), netid);
	conn_looks_right(conn_with(&cs, 5), netid);
	p3 = (const void *)&conn_with(&cs, 3)->peer;
	p5 = (const void *)&conn_with(&cs, 5)->peer;
	assert_int_not_equal(p3->sin_port, p5->sin_port);
	assert_int_equal(rr_t_server_conns(&f->sv, 1, &cs), 0);
	assert_int_equal(cs.rc, 0);
	assert_int_equal(cs.shown, 1);
	assert_int_equal(cs.hidden, 1);
	assert_int_equal(rr_t_server_conns(&f->sv, 0, &cs), 0);
	assert_int_equal(cs.shown + cs.hidden, 2);

	assert_int_equal(rr_rpc_clnt_destroy(b), 0);
	wait_conns(f, (const uint64_t[]){3}, 1, &cs);
	assert_int_equal(rr_rpc_clnt_disconnect(f->c), 0);
	wait_conns(f, NULL, 0, &cs);
	null_ok(f->c);
	wait_conns(f, (const uint64_t[]){1}, 1, &cs);
	conn_looks_right(&cs.c[0].info, netid);
}

/* ------------------------------------------------------------- main */

#define C(fn, secs, flags)                                                     \
	cmocka_unit_test_prestate_setup_teardown(                              \
		fn, setup, teardown, (&(struct tcase){#fn, secs, flags}))

static int pick_transport(const char *name)
{
	const char *threads = getenv("RR_TEST_SVC_THREADS");
	const char *reg = getenv("RR_TEST_REGISTRATION");

	g.name = name;
	g.svc_threads = threads ? (uint32_t)atoi(threads) : 4;
	if (reg && !strcmp(reg, "per_call"))
		g.registration = RR_REG_PER_CALL;
	if (!strcmp(name, "tcp"))
		g.xprt = RR_T_TCP;
	else if (!strcmp(name, "rdma"))
		g.provider = getenv("RR_PROVIDER");
	else if (!strcmp(name, "rdma-faults"))
		g.faults = true;
	else
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	rr_t_server_main(argc, argv);

	const struct CMUnitTest tests[] = {
		C(null_call_succeeds_with_empty_results, 20, 0),
		C(echo_returns_the_argument_bytes_at_every_size, 30, 0),
		C(read_bulk_lands_in_res_bulk_or_inline_as_documented, 30, 0),
		C(write_delivers_the_bulk_argument_exactly, 30, 0),
		C(big_xdr_results_arrive_exactly, 30, 0),
		C(handler_sees_the_auth_sys_identity_of_the_call, 20, 0),
		C(handler_sees_no_identity_without_credentials, 20, 0),
		C(call_to_an_unknown_program_is_prog_unavail, 20, 0),
		C(call_to_a_wrong_version_is_prog_mismatch_with_the_range, 20,
		  0),
		C(call_to_an_unknown_procedure_is_proc_unavail, 20, 0),
		C(handler_garbage_args_reaches_the_caller, 20, 0),
		C(results_larger_than_res_cap_fail_with_emsgsize, 30, 0),
		C(async_calls_beyond_the_limit_complete_once_in_order, 60,
		  F_LIMIT2),
		C(progress_runs_callbacks_in_the_calling_thread, 60, 0),
		C(progress_fd_returns_for_its_descriptor_and_for_replies, 60,
		  0),
		C(a_call_outlasting_its_timeout_fails_with_etimedout, 30, 0),
		C(a_cancelled_call_completes_once_with_ecanceled, 30, 0),
		C(killed_server_fails_every_call_in_flight_exactly_once, 40,
		  F_NO_RECONNECT),
		C(soft_client_fails_calls_sent_when_the_server_dies, 40,
		  F_SOFT),
		C(calls_in_flight_complete_once_on_a_restarted_server, 60, 0),
		C(a_call_sent_again_after_a_disconnect_runs_once, 60, 0),
		C(counters_count_calls_connects_and_losses, 30, 0),
		C(server_lists_each_connection_until_it_closes, 40, 0),
	};

	if (argc < 2 || pick_transport(argv[1])) {
		fprintf(stderr,
			"usage: %s rdma|rdma-faults|tcp [PATTERN "
			"[SKIP]]\n",
			argv[0]);
		return 2;
	}
	rr_t_limit_context(g.name);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 2)
		cmocka_set_test_filter(argv[2]);
	if (argc > 3)
		cmocka_set_skip_filter(argv[3]);
	return cmocka_run_group_tests_name(g.name, tests, NULL, NULL);
}
