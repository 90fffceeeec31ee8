/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation-failure sweep (architecture.md invariant 6, issue 4).
 *
 * A scenario runs in one process: a server and a client (iwarp, or
 * RR_PROVIDER) on 127.0.0.1, a call of every shape (tests/rpcrdma/
 * shapes.h), a forced reconnect, another call of every shape, shutdown of
 * both. It runs once with the injector counting (K allocation attempts at
 * S sites), then once for each N in 1..K with the Nth attempt failing,
 * then once for each site no run has failed yet (its first attempt
 * failing), so that every site of the scenario, and every site the error
 * paths reached, has been made to fail at least once.
 *
 * Each run is a child forked from this process, which never starts a
 * thread, so the fork copies no locks held by others. A run passes when
 * it ends, within RUN_TMO_MS, by exiting 0: whatever failed was reported
 * as an error and unwound, no call returned wrong bytes, both sides'
 * counters balance (teardown_unbalanced, unknown completions), and under
 * ASan LeakSanitizer found no leak at its exit (a leak makes the exit
 * status non-zero, as does a sanitizer report of any kind).
 *
 * The sweep fails when a run fails, or when fewer sites were made to fail
 * than the counting run attempted. It prints the runs, the sites and what
 * the failures led to. A run's stderr is kept and printed when it fails.
 * The forking, judging and bookkeeping are tests/lib/sweep.c's, shared
 * with the NFS sweep.
 */
#include "shapes.h"
#include "sweep.h"

#include <rpcrdma/alloc_inject.h>
#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RUN_TMO_MS  60000 /* one run; a slow ASan run takes a second */
#define CALL_TMO_MS 5000

enum fatal {
	F_BYTES = 1,	   /* a call succeeded with wrong bytes */
	F_UNBALANCED = 2,  /* a connection torn down undrained */
	F_UNKNOWN_CQE = 4, /* a completion no one issued */
	F_BAD_INV = 8,	   /* Send With Invalidate of a wrong key accepted */
};

/* The scenario's figures in rr_t_sweep_report.extra. */
enum { X_CALLS, X_RECONNECTS, X_ROUND_ATTEMPTS };

/* ------------------------------------------------------ the scenario */

/*
 * RR_PROVIDER=faults with RR_TEST_FAULT_PLAN=1: both sides' wrappers are
 * active (held Send completions, shuffled batches, the send-buffer guard),
 * so their rings and guard are among the sites swept.
 */
static const struct rr_fault_plan plan = {.seed = 9,
					  .delay_send_cqe_ppm = 300000,
					  .reorder_ppm = 300000,
					  .guard_sends = true};
static const struct rr_device_opts plan_opts = {.faults = &plan};

static const struct rr_device_opts *dev_opts(void)
{
	const char *p = getenv("RR_TEST_FAULT_PLAN");

	return p && *p == '1' ? &plan_opts : NULL;
}

static void *svc_main(void *arg)
{
	rr_svc_run(arg);
	return NULL;
}

static void calls(struct rr_clnt *c, struct shapes_mem *m, uint32_t seed,
		  struct rr_t_sweep_report *r)
{
	struct shapes_result res;

	shapes_round(c, m, seed, true, &res);
	if (res.rc == -EBADMSG)
		rr_t_sweep_fatal(r, F_BYTES, "a call returned wrong bytes");
	rr_t_sweep_note(r, res.shape ? res.shape : "", res.rc);
}

static void check_stats(const struct rr_xprt_stats *st, bool client,
			struct rr_t_sweep_report *r)
{
	if (st->teardown_unbalanced)
		rr_t_sweep_fatal(r, F_UNBALANCED,
				 "a connection torn down undrained");
	if (client && st->unknown_cqes)
		rr_t_sweep_fatal(r, F_UNKNOWN_CQE,
				 "a completion no one issued");
	if (client && st->bad_remote_invs)
		rr_t_sweep_fatal(r, F_BAD_INV,
				 "a Send With Invalidate of a wrong key");
	if (client) {
		r->extra[X_CALLS] = st->calls;
		r->extra[X_RECONNECTS] = st->connects ? st->connects - 1 : 0;
	}
}

static void client_part(uint16_t port, struct shapes_mem *m,
			struct rr_t_sweep_report *r)
{
	struct rr_clnt_opts o = {.provider = getenv("RR_PROVIDER"),
				 .dev_opts = dev_opts(),
				 .credits = 4,
				 .max_bulk = SHAPES_MAX_BULK,
				 .bounce_bufs = 2,
				 .timeout_ms = CALL_TMO_MS,
				 .connect_timeout_ms = CALL_TMO_MS,
				 .reconnect_max_ms = 100};
	struct rr_alloc_inject_stats before, after;
	struct rr_xprt_stats st;
	struct rr_clnt *c;
	int rc = rr_clnt_create("127.0.0.1", port, &o, &c);

	rr_t_sweep_note(r, "client create", rc);
	if (rc)
		return;
	rc = rr_clnt_mem_reg(c, m->reg, sizeof(m->reg));
	rr_t_sweep_note(r, "client memory registration", rc);
	m->reg_ok = rc == 0;
	/* Both sides' steady state: a round of calls allocates nothing. */
	rr_alloc_inject_stats(&before);
	calls(c, m, 1, r);
	rr_alloc_inject_stats(&after);
	r->extra[X_ROUND_ATTEMPTS] = after.attempts - before.attempts;
	rr_t_sweep_note(r, "forced disconnect", rr_clnt_disconnect(c));
	calls(c, m, 2, r);
	if (m->reg_ok)
		rr_t_sweep_note(r, "client memory unregistration",
				rr_clnt_mem_unreg(c, m->reg));
	rr_t_sweep_note(r, "client shutdown", rr_clnt_shutdown(c));
	rr_clnt_stats(c, &st);
	check_stats(&st, true, r);
	rr_t_sweep_note(r, "client destroy", rr_clnt_destroy(c));
}

static void scenario(void *arg, struct rr_t_sweep_report *r)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_opts so = {.provider = getenv("RR_PROVIDER"),
				 .dev_opts = dev_opts(),
				 .credits = 8,
				 .max_bulk = SHAPES_MAX_BULK,
				 .max_conns = 4,
				 .threads = 1,
				 .drc_entries = 64};
	struct shapes_mem *m = calloc(1, sizeof(*m));
	struct rr_xprt_stats st;
	struct rr_svc *s;
	pthread_t loop;
	uint16_t port;
	int rc;

	(void)arg;
	if (!m)
		exit(2);
	rc = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &so, &s);
	rr_t_sweep_note(r, "server create", rc);
	if (rc) {
		free(m);
		return;
	}
	rc = rr_svc_register(s, &shapes_prog);
	if (!rc)
		rc = rr_svc_port(s, &port);
	rr_t_sweep_note(r, "server register", rc);
	if (!rc && pthread_create(&loop, NULL, svc_main, s) == 0) {
		client_part(port, m, r);
		rr_svc_stop(s);
		pthread_join(loop, NULL);
	}
	rr_t_sweep_note(r, "server shutdown", rr_svc_shutdown(s));
	rr_svc_stats(s, &st);
	check_stats(&st, false, r);
	rr_t_sweep_note(r, "server destroy", rr_svc_destroy(s));
	free(m);
}

/* The counting run: what the scenario did, and no allocation per call. */
static int counted(void *arg, const struct rr_t_sweep_report *r,
		   uint32_t nsites)
{
	(void)arg;
	printf("scenario: %llu allocation attempts at %u sites, %llu calls, "
	       "%llu reconnects; %llu attempts by a round of calls of every "
	       "shape\n",
	       (unsigned long long)r->attempts, nsites,
	       (unsigned long long)r->extra[X_CALLS],
	       (unsigned long long)r->extra[X_RECONNECTS],
	       (unsigned long long)r->extra[X_ROUND_ATTEMPTS]);
	if (r->extra[X_ROUND_ATTEMPTS]) {
		fprintf(stderr, "calls allocate: the steady state must not\n");
		return 1;
	}
	return 0;
}

int main(void)
{
	const struct rr_t_sweep sw = {.name = "rpc over rdma",
				      .scenario = scenario,
				      .run_tmo_ms = RUN_TMO_MS,
				      .every_attempt = true,
				      .counted = counted};

	return rr_t_sweep_run(&sw);
}
