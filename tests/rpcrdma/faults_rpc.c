/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The client transport over the faults provider. Every Send completion is
 * held until after the reply (invariant 2: a reply before its Send
 * completion is normal and handled once), polled batches are shuffled, and
 * the send-buffer guard checks that no send buffer is reused before a
 * completion covering its Send was delivered.
 */
#include <rpcrdma/faults.h>
#include "tprog.h"

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

#define PROG   RR_T_PROG /* its ECHO (proc 1) */
#define NCALLS 3000
#define DEPTH  16

struct slot {
	struct rr_call call;
	uint8_t args[512];
	uint8_t res[512];
	uint32_t n;
	bool busy;
};

struct run {
	struct slot slots[DEPTH];
	uint32_t issued, done, bad;
};

static void on_done(struct rr_call *call, int rc, void *arg)
{
	struct run *run = arg;
	struct slot *s = (struct slot *)call;

	if (rc || call->res_len != s->n || memcmp(s->res, s->args, s->n))
		run->bad++;
	s->busy = false;
	run->done++;
}

static void issue(struct rr_clnt *c, struct run *run, struct slot *s)
{
	s->n = 8 + (run->issued * 37) % 500;
	for (uint32_t i = 0; i < s->n; i++)
		s->args[i] = (uint8_t)(run->issued + i);
	s->call = (struct rr_call){.prog = PROG,
				   .vers = 1,
				   .proc = 1,
				   .args = s->args,
				   .args_len = s->n,
				   .res = s->res,
				   .res_cap = sizeof(s->res)};
	s->busy = true;
	run->issued++;
	assert_int_equal(rr_clnt_call_async(c, &s->call, on_done, run), 0);
}

static void *serve(void *arg)
{
	rr_svc_run(arg);
	return NULL;
}

static void run_calls(const struct rr_fault_plan *planp,
		      struct rr_xprt_stats *stp, struct rr_fault_stats *fsp)
{
	struct rr_fault_plan plan = *planp;
	struct rr_device_opts dopts = {.inner = "iwarp", .faults = &plan};
	/* Few credits: few send contexts, so early reuse would show. */
	struct rr_clnt_opts copts = {
		.provider = "faults", .dev_opts = &dopts, .credits = 4};
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const struct rr_svc_prog *prog = rr_t_prog();
	static struct run run;
	struct rr_fault_stats fs;
	struct rr_xprt_stats st, sst;
	struct rr_svc *svc;
	struct rr_clnt *c;
	pthread_t t;
	uint16_t port;

	memset(&run, 0, sizeof(run));
	assert_int_equal(
		rr_svc_create((struct sockaddr *)&sin, sizeof(sin), NULL, &svc),
		0);
	assert_int_equal(rr_svc_register(svc, prog), 0);
	assert_int_equal(rr_svc_port(svc, &port), 0);
	assert_int_equal(pthread_create(&t, NULL, serve, svc), 0);
	assert_int_equal(rr_clnt_create("127.0.0.1", port, &copts, &c), 0);
	while (run.done < NCALLS) {
		for (int i = 0; i < DEPTH && run.issued < NCALLS; i++)
			if (!run.slots[i].busy)
				issue(c, &run, &run.slots[i]);
		int rc = rr_clnt_progress(c, 10000);

		assert_true(rc == 0 || rc == -ETIMEDOUT);
	}
	assert_int_equal(run.bad, 0);
	assert_int_equal(rr_clnt_stats(c, &st), 0);
	assert_int_equal(rr_faults_stats(rr_clnt_device(c), &fs), 0);
	print_message("calls %lu, replies before their Send completed %lu, "
		      "send completions held %lu, batches shuffled %lu\n",
		      (unsigned long)st.calls,
		      (unsigned long)st.reply_before_send_cqe,
		      (unsigned long)fs.send_cqes_delayed,
		      (unsigned long)fs.batches_reordered);
	assert_int_equal(st.calls, NCALLS);
	assert_int_equal(rr_clnt_shutdown(c), 0);
	assert_int_equal(rr_clnt_stats(c, &sst), 0);
	assert_int_equal(sst.teardown_unbalanced, 0);
	assert_int_equal(sst.state_violations, 0);
	assert_int_equal(rr_clnt_destroy(c), 0);
	rr_svc_stop(svc);
	pthread_join(t, NULL);
	assert_int_equal(rr_svc_shutdown(svc), 0);
	assert_int_equal(rr_svc_stats(svc, &sst), 0);
	/* Invariant 4: each queue drained to zero at teardown. */
	assert_int_equal(sst.teardown_unbalanced, 0);
	assert_int_equal(sst.state_violations, 0);
	assert_int_equal(rr_svc_destroy(svc), 0);
	*stp = st;
	*fsp = fs;
}

static void replies_before_send_completions_are_handled_once(void **state)
{
	struct rr_fault_plan plan = {.seed = 7,
				     .delay_send_cqe_ppm = RR_PPM_ALWAYS,
				     .reorder_ppm = 300000,
				     .guard_sends = true};
	struct rr_fault_stats fs;
	struct rr_xprt_stats st;

	(void)state;
	run_calls(&plan, &st, &fs);
	assert_true(st.reply_before_send_cqe > 0);
	assert_true(fs.send_cqes_delayed > 0);
	assert_int_equal(fs.send_bufs_modified, 0);
	assert_int_equal(st.unknown_cqes, 0);
}

/* Invariant 4: a completion delivered twice is counted, never acted on. */
static void duplicate_completions_are_counted_not_acted_on(void **state)
{
	struct rr_fault_plan plan = {.seed = 11,
				     .dup_cqe_ppm = 100000,
				     .reorder_ppm = 200000,
				     .guard_sends = true};
	struct rr_fault_stats fs;
	struct rr_xprt_stats st;

	(void)state;
	run_calls(&plan, &st, &fs);
	print_message("duplicates injected %lu, counted stale %lu\n",
		      (unsigned long)fs.cqes_duplicated,
		      (unsigned long)st.stale_cqes);
	assert_true(fs.cqes_duplicated > 100);
	assert_int_equal(st.stale_cqes, fs.cqes_duplicated);
	assert_int_equal(st.unknown_cqes, 0);
	assert_int_equal(fs.send_bufs_modified, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(replies_before_send_completions_are_handled_once,
			     CASE_S, NULL, NULL),
		RR_T_LIMITED(duplicate_completions_are_counted_not_acted_on,
			     CASE_S, NULL, NULL),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
