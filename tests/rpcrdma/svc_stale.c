/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Invariant 4 on the server (issue 20): a completion naming one of the
 * connection's posted receives, but with another connection's generation
 * or an older use of the buffer, is counted as stale and not acted on:
 * the buffer is not read as a call, the connection goes on serving.
 * The server runs over the "faults" provider, which injects it.
 */
#include "clock.h"
#include "tprog.h"
#include "rpcrdma/xprt.h"

#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define PROG RR_T_PROG /* its ECHO (proc 1) */

static void *serve(void *arg)
{
	rr_svc_run(arg);
	return NULL;
}

static int echo(struct rr_clnt *c)
{
	uint8_t a[16] = "stale-or-not", r[64];
	struct rr_call call = {.prog = PROG,
			       .vers = 1,
			       .proc = 1,
			       .args = a,
			       .args_len = sizeof(a),
			       .res = r,
			       .res_cap = sizeof(r),
			       .timeout_ms = 5000};
	int rc = rr_clnt_call(c, &call);

	return rc ? rc : (call.res_len == sizeof(a) && !memcmp(a, r, 16)) - 1;
}

static struct rr_xprt_stats sstats(struct rr_svc *s)
{
	struct rr_xprt_stats st;

	assert_int_equal(rr_svc_stats(s, &st), 0);
	return st;
}

/* f rewrites the id of the newest posted receive; what it makes is injected. */
static void stale_recv_is_ignored(uint64_t (*f)(uint64_t))
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const struct rr_svc_prog *prog = rr_t_prog();
	struct rr_fault_plan plan = {.seed = 9, .hold_invs = true};
	struct rr_device_opts dopts = {.faults = &plan};
	struct rr_svc_opts so = {.provider = "faults", .dev_opts = &dopts};
	struct rr_xprt_stats before, after;
	struct rr_wc wc = {
		.opcode = RR_WC_RECV, .status = RR_WC_SUCCESS, .byte_len = 28};
	struct rr_clnt *c;
	struct rr_svc *svc;
	uint64_t ids[8], end;
	pthread_t t;
	uint16_t port;

	assert_int_equal(
		rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &so, &svc),
		0);
	assert_int_equal(rr_svc_register(svc, prog), 0);
	assert_int_equal(rr_svc_port(svc, &port), 0);
	assert_int_equal(pthread_create(&t, NULL, serve, svc), 0);
	/* A first connection comes and goes: the second has generation 2. */
	assert_int_equal(rr_clnt_create("127.0.0.1", port, NULL, &c), 0);
	assert_int_equal(echo(c), 0);
	assert_int_equal(rr_clnt_destroy(c), 0);
	assert_int_equal(rr_clnt_create("127.0.0.1", port, NULL, &c), 0);
	assert_int_equal(echo(c), 0);
	assert_true(rr_faults_recent_recvs(rr_svc_device(svc), ids, 8) >= 1);
	assert_true(rr_wrid_gen(ids[0]) >= 2);
	before = sstats(svc);
	wc.wr_id = f(ids[0]);
	assert_int_equal(rr_faults_inject(rr_svc_device(svc), &wc), 0);
	end = rr_t_now_ms() + 5000;
	do
		after = sstats(svc);
	while (after.stale_cqes == before.stale_cqes &&
	       after.bad_headers == before.bad_headers && rr_t_now_ms() < end);
	assert_int_equal(after.stale_cqes, before.stale_cqes + 1);
	assert_int_equal(after.bad_headers, before.bad_headers);
	for (int i = 0; i < 20; i++)
		assert_int_equal(echo(c), 0);
	assert_int_equal(sstats(svc).conn_lost, after.conn_lost);
	assert_int_equal(rr_clnt_destroy(c), 0);
	rr_svc_stop(svc);
	pthread_join(t, NULL);
	assert_int_equal(rr_svc_shutdown(svc), 0);
	assert_int_equal(sstats(svc).teardown_unbalanced, 0);
	assert_int_equal(rr_svc_destroy(svc), 0);
}

static uint64_t previous_gen(uint64_t id)
{
	return rr_wrid(rr_wrid_gen(id) - 1, rr_wrid_kind(id), rr_wrid_slot(id),
		       rr_wrid_seq(id));
}

static uint64_t previous_seq(uint64_t id)
{
	return rr_wrid(rr_wrid_gen(id), rr_wrid_kind(id), rr_wrid_slot(id),
		       rr_wrid_seq(id) - 1);
}

static void receive_of_previous_connection_is_not_acted_on(void **state)
{
	(void)state;
	stale_recv_is_ignored(previous_gen);
}

static void receive_of_previous_use_is_not_acted_on(void **state)
{
	(void)state;
	stale_recv_is_ignored(previous_seq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(receive_of_previous_connection_is_not_acted_on,
			     CASE_S, NULL, NULL),
		RR_T_LIMITED(receive_of_previous_use_is_not_acted_on, CASE_S,
			     NULL, NULL),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
