/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Invariant 3, the send queue: a call is posted only when the queue has
 * room for every work request it will need (its REGs, its Send and the
 * LOCAL_INVs that fence it later). With a queue of 8 and calls that need
 * 5 each, calls must wait their turn rather than overrun the provider's
 * queue (which refuses with -ENOMEM and would cost the connection).
 */
#include "tprog.h"

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

#define PROG   RR_T_PROG /* its ECHO (proc 1) */
#define NCALLS 40
#define LEN    6000 /* > 4 KiB inline: a read chunk out, a reply chunk back */

struct slot {
	struct rr_call call;
	uint8_t args[LEN];
	uint8_t res[LEN + 512];
};

static int ndone, nbad;

static void on_done(struct rr_call *call, int rc, void *arg)
{
	struct slot *s = (struct slot *)call;

	(void)arg;
	if (rc || call->res_len != LEN || memcmp(s->res, s->args, LEN))
		nbad++;
	ndone++;
}

static void *serve(void *arg)
{
	rr_svc_run(arg);
	return NULL;
}

static void calls_wait_for_send_queue_room(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const struct rr_svc_prog *prog = rr_t_prog();
	struct rr_clnt_opts copts = {.sq_depth = 8};
	static struct slot slots[NCALLS];
	struct rr_xprt_stats st, sst;
	struct rr_svc *svc;
	struct rr_clnt *c;
	pthread_t t;
	uint16_t port;

	(void)state;
	assert_int_equal(
		rr_svc_create((struct sockaddr *)&sin, sizeof(sin), NULL, &svc),
		0);
	assert_int_equal(rr_svc_register(svc, prog), 0);
	assert_int_equal(rr_svc_port(svc, &port), 0);
	assert_int_equal(pthread_create(&t, NULL, serve, svc), 0);
	assert_int_equal(rr_clnt_create("127.0.0.1", port, &copts, &c), 0);
	for (int i = 0; i < NCALLS; i++) {
		struct slot *s = &slots[i];

		for (int k = 0; k < LEN; k++)
			s->args[k] = (uint8_t)(i * 7 + k);
		s->call = (struct rr_call){.prog = PROG,
					   .vers = 1,
					   .proc = 1,
					   .args = s->args,
					   .args_len = LEN,
					   .res = s->res,
					   .res_cap = sizeof(s->res)};
		assert_int_equal(rr_clnt_call_async(c, &s->call, on_done, NULL),
				 0);
	}
	while (ndone < NCALLS) {
		int rc = rr_clnt_progress(c, 10000);

		if (rc == -ETIMEDOUT) {
			rr_clnt_stats(c, &st);
			fail_msg("stuck after %d calls: sq_waits %lu "
				 "credit_waits "
				 "%lu regs %lu linv %lu conn_lost %lu",
				 ndone, (unsigned long)st.sq_waits,
				 (unsigned long)st.credit_waits,
				 (unsigned long)st.regs,
				 (unsigned long)st.local_invs,
				 (unsigned long)st.conn_lost);
		}
	}
	assert_int_equal(nbad, 0);
	assert_int_equal(rr_clnt_stats(c, &st), 0);
	print_message("send-queue waits %lu, regs %lu, local invs %lu\n",
		      (unsigned long)st.sq_waits, (unsigned long)st.regs,
		      (unsigned long)st.local_invs);
	assert_true(st.sq_waits > 0);
	assert_int_equal(st.conn_lost, 0);
	assert_int_equal(rr_clnt_shutdown(c), 0);
	assert_int_equal(rr_clnt_stats(c, &sst), 0);
	assert_int_equal(sst.teardown_unbalanced, 0);
	assert_int_equal(rr_clnt_destroy(c), 0);
	rr_svc_stop(svc);
	pthread_join(t, NULL);
	assert_int_equal(rr_svc_shutdown(svc), 0);
	assert_int_equal(rr_svc_stats(svc, &sst), 0);
	/* Invariant 4: each queue drained to zero at teardown. */
	assert_int_equal(sst.teardown_unbalanced, 0);
	assert_int_equal(rr_svc_destroy(svc), 0);
}

/*
 * The same, with the device counting: every LOCAL_INV (or bind) is held
 * by the faults provider until the client has nothing else to do, so the
 * slots calls reserved for their invalidations are really taken while
 * other calls want room. The device refuses (and counts) any post beyond
 * its queue: it must count none, and the connection must stay.
 */
static void no_overrun_with(struct rr_fault_plan plan)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const struct rr_svc_prog *prog = rr_t_prog();
	struct rr_device_opts dopts = {.faults = &plan};
	struct rr_clnt_opts copts = {
		.sq_depth = 8, .provider = "faults", .dev_opts = &dopts};
	static struct slot slots[NCALLS];
	struct rr_fault_stats fs;
	struct rr_xprt_stats st;
	struct rr_svc *svc;
	struct rr_clnt *c;
	uint32_t releases = 0;
	pthread_t t;
	uint16_t port;

	ndone = nbad = 0;
	assert_int_equal(
		rr_svc_create((struct sockaddr *)&sin, sizeof(sin), NULL, &svc),
		0);
	assert_int_equal(rr_svc_register(svc, prog), 0);
	assert_int_equal(rr_svc_port(svc, &port), 0);
	assert_int_equal(pthread_create(&t, NULL, serve, svc), 0);
	assert_int_equal(rr_clnt_create("127.0.0.1", port, &copts, &c), 0);
	for (int i = 0; i < NCALLS; i++) {
		struct slot *s = &slots[i];

		for (int k = 0; k < LEN; k++)
			s->args[k] = (uint8_t)(i * 5 + k);
		s->call = (struct rr_call){.prog = PROG,
					   .vers = 1,
					   .proc = 1,
					   .args = s->args,
					   .args_len = LEN,
					   .res = s->res,
					   .res_cap = sizeof(s->res),
					   .timeout_ms = 20000};
		assert_int_equal(rr_clnt_call_async(c, &s->call, on_done, NULL),
				 0);
	}
	while (ndone < NCALLS) {
		/* Idle: only held invalidations stand in the way. */
		if (rr_clnt_progress(c, 20) == -ETIMEDOUT &&
		    rr_faults_release(rr_clnt_device(c)) > 0)
			releases++;
		assert_true(releases < 10 * NCALLS);
	}
	assert_int_equal(rr_faults_stats(rr_clnt_device(c), &fs), 0);
	assert_int_equal(rr_clnt_stats(c, &st), 0);
	print_message("held invalidations %lu, held binds %lu, releases %u, "
		      "overruns %lu, send-queue waits %lu\n",
		      (unsigned long)fs.invs_held, (unsigned long)fs.regs_held,
		      releases, (unsigned long)fs.sq_overruns,
		      (unsigned long)st.sq_waits);
	assert_true(plan.hold_invs ? fs.invs_held > 0 : fs.regs_held > 0);
	assert_int_equal(fs.sq_overruns, 0);
	assert_int_equal(st.conn_lost, 0);
	assert_int_equal(nbad, 0);
	assert_int_equal(rr_clnt_shutdown(c), 0);
	assert_int_equal(rr_clnt_destroy(c), 0);
	rr_svc_stop(svc);
	pthread_join(t, NULL);
	assert_int_equal(rr_svc_shutdown(svc), 0);
	assert_int_equal(rr_svc_destroy(svc), 0);
}

static void device_never_sees_its_send_queue_overrun(void **state)
{
	(void)state;
	no_overrun_with(
		(struct rr_fault_plan){.seed = 3,
				       .hold_invs = true,
				       .delay_send_cqe_ppm = RR_PPM_ALWAYS});
}

/*
 * The same with every bind held instead: a REG keeps its slot from its
 * post until a later signalled completion retires it, though the REG
 * itself is never signalled; the client must count it all that time.
 */
static void held_binds_keep_their_send_queue_slots(void **state)
{
	(void)state;
	no_overrun_with(
		(struct rr_fault_plan){.seed = 4,
				       .hold_regs = true,
				       .delay_send_cqe_ppm = RR_PPM_ALWAYS});
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(calls_wait_for_send_queue_room, CASE_S, NULL,
			     NULL),
		RR_T_LIMITED(device_never_sees_its_send_queue_overrun, CASE_S,
			     NULL, NULL),
		RR_T_LIMITED(held_binds_keep_their_send_queue_slots, CASE_S,
			     NULL, NULL),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
