/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Handlers that cannot block, run where the call was received
 * (rr_svc_prog.nowait_procs), on both server transports: the RDMA server
 * (iwarp on 127.0.0.1) and the TCP server, each in this process with its
 * loop in a thread of ours, so a handler can tell which thread runs it and
 * the servers' counters can be read.
 *
 * The test program (prog TPROG, vers 1); results of HERE, DEFER, PLAIN and
 * DRC are three words: the argument plus one, whether the handler ran
 * with rr_svc_req_nowait() true, and whether it ran on the loop's thread.
 *   0 NULL
 *   1 HERE     nowait: answers wherever it runs
 *   2 DEFER    nowait: answers RR_SVC_DEFER while nowait, else answers
 *   3 PLAIN    not nowait
 *   4 DRC      nowait and in drc_procs: must never be tried nowait
 *   5 BADDEFER not nowait, yet answers RR_SVC_DEFER: a broken handler
 *   6 BULK     nowait: args seed; results seed, then BULK_LEN bytes of the
 *              seed's pattern as the DDP-eligible item; odd seeds defer
 *   7 SINK     not nowait: args of any length; results their length
 *
 * Each group runs with a pool of two workers; the last two without one,
 * where nothing is tried nowait (every handler runs in the loop anyway).
 */
#include "clock.h"
#include <rpcrdma/alloc_inject.h>
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "tcp_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define BULK_LEN    4096
#define RES_CAP	    (BULK_LEN + 64)
#define CALL_TMO_MS 30000
#define NBULK	    256
#define DEPTH	    48

enum {
	P_NULL,
	P_HERE,
	P_DEFER,
	P_PLAIN,
	P_DRC,
	P_BADDEFER,
	P_BULK,
	P_SINK,
	P_NPROCS
};

#define BIT(p) (UINT64_C(1) << (p))

struct env {
	bool tcp;
	uint32_t threads;
	struct rr_svc *rdma;
	struct rr_tcp_svc *tsvc;
	pthread_t loop;
	atomic_int loop_tid;
	atomic_uint defer_tries; /* DEFER and BULK calls that deferred */
	uint16_t port;
	struct rr_clnt *c;
	struct rr_tcp_clnt *tc;
};

static int tid(void)
{
	return (int)syscall(SYS_gettid);
}

/* ============================================================ server */

static uint32_t answer(struct rr_svc_req *r, struct env *e)
{
	size_t len, cap;
	const uint8_t *a = rr_svc_args(r, &len);
	uint8_t *res = rr_svc_res_buf(r, &cap);

	if (len != 4)
		return RR_GARBAGE_ARGS;
	rr_t_put32(res, rr_t_get32(a) + 1);
	rr_t_put32(res + 4, rr_svc_req_nowait(r));
	rr_t_put32(res + 8, tid() == atomic_load(&e->loop_tid));
	return rr_svc_set_res(r, 12, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static uint32_t h_answer(struct rr_svc_req *r, void *arg)
{
	return answer(r, arg);
}

static uint32_t h_defer(struct rr_svc_req *r, void *arg)
{
	struct env *e = arg;

	if (rr_svc_req_nowait(r)) {
		atomic_fetch_add(&e->defer_tries, 1);
		return RR_SVC_DEFER;
	}
	return answer(r, e);
}

static uint32_t h_baddefer(struct rr_svc_req *r, void *arg)
{
	(void)r;
	(void)arg;
	return RR_SVC_DEFER;
}

static uint32_t h_bulk(struct rr_svc_req *r, void *arg)
{
	struct env *e = arg;
	size_t len, cap, bcap;
	const uint8_t *a = rr_svc_args(r, &len);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint8_t *bulk = rr_svc_bulk_buf(r, &bcap);
	uint32_t seed;

	if (len != 4 || bcap < BULK_LEN)
		return RR_GARBAGE_ARGS;
	seed = rr_t_get32(a);
	if ((seed & 1) && rr_svc_req_nowait(r)) {
		atomic_fetch_add(&e->defer_tries, 1);
		return RR_SVC_DEFER;
	}
	rr_t_fill_seeded(bulk, BULK_LEN, seed);
	rr_t_put32(res, seed);
	return rr_svc_set_res(r, 4, bulk, BULK_LEN) ? RR_SYSTEM_ERR
						    : RR_SUCCESS;
}

static uint32_t h_sink(struct rr_svc_req *r, void *arg)
{
	size_t len, cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	(void)rr_svc_args(r, &len);
	rr_t_put32(res, (uint32_t)len);
	return rr_svc_set_res(r, 4, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static const rr_svc_fn procs[P_NPROCS] = {
	[P_NULL] = rr_t_null, [P_HERE] = h_answer, [P_DEFER] = h_defer,
	[P_PLAIN] = h_answer, [P_DRC] = h_answer,  [P_BADDEFER] = h_baddefer,
	[P_BULK] = h_bulk,    [P_SINK] = h_sink,
};

static void *loop_main(void *arg)
{
	struct env *e = arg;

	atomic_store(&e->loop_tid, tid());
	if (e->tcp)
		rr_tcp_svc_run(e->tsvc);
	else
		rr_svc_run(e->rdma);
	return NULL;
}

static int start_server(struct env *e)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_prog p = {.prog = TPROG,
				.vers = 1,
				.nprocs = P_NPROCS,
				.procs = procs,
				.arg = e,
				.drc_procs = BIT(P_DRC),
				.nowait_procs = BIT(P_NULL) | BIT(P_HERE) |
						BIT(P_DEFER) | BIT(P_DRC) |
						BIT(P_BULK)};
	struct rr_svc_opts so = {.threads = e->threads};
	struct rr_tcp_svc_opts to = {.threads = e->threads};
	int rc;

	if (e->tcp) {
		rc = rr_tcp_svc_create((struct sockaddr *)&sin, sizeof(sin),
				       &to, &e->tsvc);
		if (!rc)
			rc = rr_tcp_svc_register(e->tsvc, &p);
		if (!rc)
			rc = rr_tcp_svc_port(e->tsvc, &e->port);
	} else {
		rc = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &so,
				   &e->rdma);
		if (!rc)
			rc = rr_svc_register(e->rdma, &p);
		if (!rc)
			rc = rr_svc_port(e->rdma, &e->port);
	}
	if (!rc)
		rc = -pthread_create(&e->loop, NULL, loop_main, e);
	return rc;
}

static int setup(void **state, bool tcp, uint32_t threads)
{
	struct env *e = calloc(1, sizeof(*e));
	struct rr_clnt_opts co = {.timeout_ms = CALL_TMO_MS};
	struct rr_tcp_clnt_opts tco = {.timeout_ms = CALL_TMO_MS};
	int rc;

	if (!e)
		return -1;
	e->tcp = tcp;
	e->threads = threads;
	rc = start_server(e);
	if (!rc && tcp)
		rc = rr_tcp_clnt_create("127.0.0.1", e->port, &tco, &e->tc);
	else if (!rc)
		rc = rr_clnt_create("127.0.0.1", e->port, &co, &e->c);
	if (rc) {
		fprintf(stderr, "setup: %s\n", strerror(-rc));
		return -1;
	}
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	if (e->tcp) {
		rr_tcp_clnt_destroy(e->tc);
		rr_tcp_svc_stop(e->tsvc);
		pthread_join(e->loop, NULL);
		rr_tcp_svc_destroy(e->tsvc);
	} else {
		rr_clnt_destroy(e->c);
		rr_svc_stop(e->rdma);
		pthread_join(e->loop, NULL);
		rr_svc_destroy(e->rdma);
	}
	free(e);
	return 0;
}

static int setup_rdma_pool(void **s)
{
	return setup(s, false, 2);
}

static int setup_tcp_pool(void **s)
{
	return setup(s, true, 2);
}

static int setup_rdma_inline(void **s)
{
	return setup(s, false, 0);
}

static int setup_tcp_inline(void **s)
{
	return setup(s, true, 0);
}

/* ============================================================ client */

static int do_call(struct env *e, struct rr_call *c)
{
	return e->tcp ? rr_tcp_clnt_call(e->tc, c) : rr_clnt_call(e->c, c);
}

/* Calls proc with arg; out: its three words. The call's return code. */
static int call3(struct env *e, uint32_t proc, uint32_t arg, uint32_t out[3])
{
	uint8_t a[4], res[64];
	struct rr_call c = {.prog = TPROG,
			    .vers = 1,
			    .proc = proc,
			    .args = a,
			    .args_len = 4,
			    .res = res,
			    .res_cap = sizeof(res)};
	int rc;

	rr_t_put32(a, arg);
	rc = do_call(e, &c);
	if (rc)
		return rc;
	assert_int_equal(c.res_len, 12);
	for (int i = 0; i < 3; i++)
		out[i] = rr_t_get32(res + 4 * i);
	return 0;
}

static struct rr_xprt_stats stats(struct env *e)
{
	struct rr_xprt_stats st;

	if (e->tcp)
		assert_int_equal(rr_tcp_svc_stats(e->tsvc, &st), 0);
	else
		assert_int_equal(rr_svc_stats(e->rdma, &st), 0);
	return st;
}

/* ============================================================= tests */

static void a_nowait_call_runs_on_the_thread_that_received_it(void **state)
{
	struct env *e = *state;
	struct rr_xprt_stats before = stats(e), after;
	uint32_t w[3];

	for (uint32_t i = 0; i < 10; i++) {
		assert_int_equal(call3(e, P_HERE, i, w), 0);
		assert_int_equal(w[0], i + 1);
		assert_int_equal(w[1], 1); /* told it must not block */
		assert_int_equal(w[2], 1); /* on the loop's thread */
	}
	after = stats(e);
	assert_int_equal(after.inline_calls - before.inline_calls, 10);
	assert_int_equal(after.deferred_calls, before.deferred_calls);
}

static void a_deferred_call_is_answered_once_by_a_worker(void **state)
{
	struct env *e = *state;
	struct rr_xprt_stats before = stats(e), after;
	unsigned tries = atomic_load(&e->defer_tries);
	uint32_t w[3];

	for (uint32_t i = 0; i < 10; i++) {
		assert_int_equal(call3(e, P_DEFER, 100 + i, w), 0);
		assert_int_equal(w[0], 101 + i);
		assert_int_equal(w[1], 0); /* the second run may block */
		assert_int_equal(w[2], 0); /* in a worker */
	}
	after = stats(e);
	assert_int_equal(atomic_load(&e->defer_tries) - tries, 10);
	assert_int_equal(after.deferred_calls - before.deferred_calls, 10);
	assert_int_equal(after.inline_calls, before.inline_calls);
	assert_int_equal(after.calls - before.calls, 10);
}

static void other_procedures_run_in_workers_as_before(void **state)
{
	struct env *e = *state;
	struct rr_xprt_stats before = stats(e), after;
	uint32_t w[3];

	assert_int_equal(call3(e, P_PLAIN, 7, w), 0);
	assert_int_equal(w[0], 8);
	assert_int_equal(w[1], 0);
	assert_int_equal(w[2], 0);
	/* a duplicate request cache's procedure is never tried early */
	assert_int_equal(call3(e, P_DRC, 9, w), 0);
	assert_int_equal(w[0], 10);
	assert_int_equal(w[1], 0);
	assert_int_equal(w[2], 0);
	after = stats(e);
	assert_int_equal(after.inline_calls, before.inline_calls);
	assert_int_equal(after.deferred_calls, before.deferred_calls);
}

static void deferring_outside_nowait_is_a_system_error(void **state)
{
	struct env *e = *state;
	uint8_t a[4] = {0}, res[64];
	struct rr_call c = {.prog = TPROG,
			    .vers = 1,
			    .proc = P_BADDEFER,
			    .args = a,
			    .args_len = 4,
			    .res = res,
			    .res_cap = sizeof(res)};

	assert_int_equal(do_call(e, &c), -EREMOTEIO);
	assert_int_equal(c.reply_stat, RR_MSG_ACCEPTED);
	assert_int_equal(c.accept_stat, RR_SYSTEM_ERR);
}

/* ------------------------------------------- many in flight, with bulk */

struct bulk_call {
	struct rr_call c;
	uint8_t args[4];
	uint8_t res[RES_CAP];
	uint8_t bulk[BULK_LEN];
	uint32_t seed;
	int rc;
	bool done;
};

struct flight {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t done, issued;
};

static struct flight fl = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			   0, 0};

static void bulk_done(struct rr_call *call, int rc, void *arg)
{
	struct bulk_call *b = arg;

	(void)call;
	pthread_mutex_lock(&fl.mu);
	b->rc = rc;
	b->done = true;
	fl.done++;
	pthread_cond_signal(&fl.cv);
	pthread_mutex_unlock(&fl.mu);
}

static int issue(struct env *e, struct bulk_call *b, uint32_t seed)
{
	memset(b, 0, sizeof(*b));
	b->seed = seed;
	rr_t_put32(b->args, seed);
	b->c = (struct rr_call){.prog = TPROG,
				.vers = 1,
				.proc = P_BULK,
				.args = b->args,
				.args_len = 4,
				.res = b->res,
				.res_cap = sizeof(b->res),
				.res_bulk = e->tcp ? NULL : b->bulk,
				.res_bulk_cap = e->tcp ? 0 : BULK_LEN};
	if (e->tcp)
		return rr_tcp_clnt_call_async(e->tc, &b->c, bulk_done, b);
	return rr_clnt_call_async(e->c, &b->c, bulk_done, b);
}

/* The seed's pattern, wherever the transport put the item. */
static void check_bulk(const struct env *e, const struct bulk_call *b)
{
	uint8_t want[BULK_LEN];
	const uint8_t *got;

	assert_int_equal(b->rc, 0);
	assert_int_equal(rr_t_get32(b->res), b->seed);
	if (e->tcp) { /* inline, right after the results */
		assert_int_equal(b->c.res_len, 4 + BULK_LEN);
		got = b->res + 4;
	} else {
		assert_int_equal(b->c.res_len, 4);
		assert_int_equal(b->c.res_bulk_len, BULK_LEN);
		got = b->bulk;
	}
	rr_t_fill_seeded(want, BULK_LEN, b->seed);
	assert_memory_equal(got, want, BULK_LEN);
}

/*
 * DEPTH calls in flight at a time, NBULK in all, half of them deferred:
 * replies answered here and by workers interleave, and the RDMA server
 * posts those of one pass of its loop together.
 */
static void many_calls_in_flight_each_get_their_own_answer(void **state)
{
	struct env *e = *state;
	struct bulk_call *b = calloc(NBULK, sizeof(*b));
	struct rr_xprt_stats before = stats(e), after;
	uint64_t end = rr_t_now_ms() + CALL_TMO_MS;

	assert_non_null(b);
	fl.done = fl.issued = 0;
	pthread_mutex_lock(&fl.mu);
	while (fl.done < NBULK && rr_t_now_ms() < end) {
		while (fl.issued < NBULK && fl.issued - fl.done < DEPTH) {
			uint32_t i = fl.issued++;

			pthread_mutex_unlock(&fl.mu);
			assert_int_equal(issue(e, &b[i], 1000 + i), 0);
			pthread_mutex_lock(&fl.mu);
		}
		if (fl.done < NBULK) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&fl.cv, &fl.mu, &ts);
		}
	}
	pthread_mutex_unlock(&fl.mu);
	assert_int_equal(fl.done, NBULK);
	for (uint32_t i = 0; i < NBULK; i++)
		check_bulk(e, &b[i]);
	after = stats(e);
	assert_int_equal(after.calls - before.calls, NBULK);
	if (e->threads) {
		assert_int_equal(after.inline_calls - before.inline_calls,
				 NBULK / 2);
		assert_int_equal(after.deferred_calls - before.deferred_calls,
				 NBULK / 2);
	}
	free(b);
}

/* Allocation attempts since counting began at the sites of file (a suffix). */
static uint64_t allocs_in(const char *file)
{
	struct rr_alloc_inject_stats st;
	struct rr_alloc_site_info si;
	uint64_t n = 0;

	rr_alloc_inject_stats(&st);
	for (uint32_t i = 0; i < st.nsites; i++)
		if (!rr_alloc_inject_site(i, &si) && strstr(si.file, file))
			n += si.attempts;
	return n;
}

#define BATCH 32

/*
 * One read's worth of BULK calls (one write), answered in the loop and
 * corked together: their 4 KiB results are copied into the output queue.
 * Lent instead, each took a 1 MiB spare for the bulk buffer it left, and
 * the pool keeps few: every one beyond was a fresh 1 MiB allocation (in
 * nfsrdmad a mapping, page faults and a TLB shootdown), which cut 4 KiB
 * reads at depth 16 to a fifth.
 */
static void small_bulk_replies_take_no_fresh_buffers(void **state)
{
	struct env *e = *state;
	uint8_t msgs[BATCH * 64], want[BULK_LEN], *rec;
	struct raw_reply rr;
	size_t off = 0;
	int fd = raw_connect(e->port);

	assert_true(fd >= 0);
	for (uint32_t i = 0; i < BATCH; i++) {
		uint8_t arg[4];
		size_t n;

		rr_t_put32(arg, 2 * i); /* even: answered where received */
		n = raw_call_msg(msgs + off + 4, 7000 + i, 2, TPROG, 1, P_BULK,
				 arg, sizeof(arg));
		rr_t_put32(msgs + off, (uint32_t)n | 0x80000000u);
		off += 4 + n;
	}
	rr_alloc_inject_count();
	assert_true(rr_t_write_all(fd, msgs, off));
	for (uint32_t i = 0; i < BATCH; i++) {
		ssize_t len =
			raw_read_record(fd, &rec, 2 * RES_CAP, CALL_TMO_MS);

		assert_true(len > 0);
		assert_true(raw_parse_reply(rec, (size_t)len, &rr));
		assert_int_equal(rr.xid, 7000 + i);
		assert_int_equal(rr.accept, 0);
		assert_int_equal((size_t)len, rr.res_off + 4 + BULK_LEN);
		rr_t_fill_seeded(want, BULK_LEN, 2 * i);
		assert_memory_equal(rec + rr.res_off + 4, want, BULK_LEN);
		free(rec);
	}
	rr_alloc_inject_off();
	assert_int_equal(allocs_in("rpc/spares.c"), 0);
	close(fd);
}

#define SINK_LEN (256u << 10)

static void sink(struct env *e, const uint8_t *args)
{
	uint8_t res[16];
	struct rr_call c = {.prog = TPROG,
			    .vers = 1,
			    .proc = P_SINK,
			    .args = args,
			    .args_len = SINK_LEN,
			    .res = res,
			    .res_cap = sizeof(res)};

	assert_int_equal(do_call(e, &c), 0);
	assert_int_equal(c.res_len, 4);
	assert_int_equal(rr_t_get32(res), SINK_LEN);
}

/*
 * Large calls one at a time, run by workers: each call's record must be
 * back among the spares before its reply leaves, or the next call (sent
 * as soon as the reply is in) may find none and its record grows by
 * reallocation, a mapping and copies per call. The worker used to give
 * the record back after the reply, racing the client.
 */
static void large_calls_reuse_their_records(void **state)
{
	struct env *e = *state;
	uint8_t *args = calloc(1, SINK_LEN);
	uint64_t n;

	assert_non_null(args);
	for (int i = 0; i < 4; i++) /* the spares fill */
		sink(e, args);
	rr_alloc_inject_count();
	for (int i = 0; i < 200; i++)
		sink(e, args);
	rr_alloc_inject_off();
	n = allocs_in("rpc/tcp_record.c");
	fprintf(stderr, "200 calls of %u KiB: %llu record allocations\n",
		SINK_LEN >> 10, (unsigned long long)n);
	assert_int_equal(n, 0);
	free(args);
}

/* Without a pool every handler runs in the loop, as one that may block. */
static void without_a_pool_nothing_is_tried_nowait(void **state)
{
	struct env *e = *state;
	struct rr_xprt_stats st;
	uint32_t w[3];

	assert_int_equal(call3(e, P_HERE, 1, w), 0);
	assert_int_equal(w[1], 0);
	assert_int_equal(w[2], 1);
	assert_int_equal(call3(e, P_DEFER, 2, w), 0);
	assert_int_equal(w[0], 3);
	assert_int_equal(w[1], 0);
	assert_int_equal(atomic_load(&e->defer_tries), 0);
	st = stats(e);
	assert_int_equal(st.inline_calls, 0);
	assert_int_equal(st.deferred_calls, 0);
}

#define POOL_TESTS(setup_fn)                                                   \
	RR_T_LIMITED(a_nowait_call_runs_on_the_thread_that_received_it,        \
		     CASE_S, setup_fn, teardown),                              \
		RR_T_LIMITED(a_deferred_call_is_answered_once_by_a_worker,     \
			     CASE_S, setup_fn, teardown),                      \
		RR_T_LIMITED(other_procedures_run_in_workers_as_before,        \
			     CASE_S, setup_fn, teardown),                      \
		RR_T_LIMITED(deferring_outside_nowait_is_a_system_error,       \
			     CASE_S, setup_fn, teardown),                      \
		RR_T_LIMITED(many_calls_in_flight_each_get_their_own_answer,   \
			     CASE_S, setup_fn, teardown)

int main(void)
{
	const struct CMUnitTest rdma[] = {POOL_TESTS(setup_rdma_pool)};
	const struct CMUnitTest tcp[] = {
		POOL_TESTS(setup_tcp_pool),
		RR_T_LIMITED(small_bulk_replies_take_no_fresh_buffers, CASE_S,
			     setup_tcp_pool, teardown),
		RR_T_LIMITED(large_calls_reuse_their_records, CASE_S,
			     setup_tcp_pool, teardown),
	};
	const struct CMUnitTest no_pool[] = {
		RR_T_LIMITED(without_a_pool_nothing_is_tried_nowait, CASE_S,
			     setup_rdma_inline, teardown),
		RR_T_LIMITED(without_a_pool_nothing_is_tried_nowait, CASE_S,
			     setup_tcp_inline, teardown),
		RR_T_LIMITED(many_calls_in_flight_each_get_their_own_answer,
			     CASE_S, setup_rdma_inline, teardown),
	};
	int rc = 0;

	rr_t_limit_context("rdma, two workers");
	rc |= cmocka_run_group_tests_name("rdma, two workers", rdma, NULL,
					  NULL);
	rr_t_limit_context("tcp, two workers");
	rc |= cmocka_run_group_tests_name("tcp, two workers", tcp, NULL, NULL);
	rr_t_limit_context("no pool");
	rc |= cmocka_run_group_tests_name("no pool", no_pool, NULL, NULL);
	return rc ? 1 : 0;
}
