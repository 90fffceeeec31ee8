/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The test program (tprog.h) served by a child process over either
 * transport, for tests that need a real peer they can stop, freeze or
 * kill. The child is this test binary run again (fork, then exec of
 * /proc/self/exe, so it starts no threads in a copy of a threaded
 * parent): main calls rr_t_server_main() first.
 *
 * Parent and child share a control socket: the child says it is ready
 * with its port; the parent asks for its counters or its connections
 * (rr_rpc_svc_conns), or tells it to stop,
 * and gets the last counters and the exit status back. Every wait is
 * bounded (RR_T_SERVER_TMO_MS); none is for time alone.
 */
#ifndef RR_TEST_LIB_TSERVER_H
#define RR_TEST_LIB_TSERVER_H

#include <rpcrdma/oncrpc.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RR_T_SERVER_TMO_MS 10000

struct rr_fault_plan;

enum rr_t_xprt { RR_T_RDMA, RR_T_TCP };

struct rr_t_server_opts {
	enum rr_t_xprt xprt;
	const char *provider; /* RDMA: NULL for the fabric's default */
	/*
	 * RDMA: the faults provider over iwarp, injecting
	 * rr_t_benign_faults(): faults the transport must absorb.
	 */
	bool faults;
	uint32_t threads; /* worker pool; 0: handlers inline */
	uint32_t credits; /* RDMA: granted to each client; 0: default */
	uint16_t port;	  /* 0: an ephemeral one */
	const char *addr; /* IPv4; NULL: 127.0.0.1 */
	/*
	 * TCP: the child's RLIMIT_NOFILE (0: inherited), and then no
	 * admission limit nor first-call deadline, so that running out of
	 * descriptors is what stops it accepting.
	 */
	uint32_t nofile;
	/* Also version 3 of the program, NULL only: PROG_MISMATCH names
	 * 1..3. */
	bool vers3;
	/*
	 * READ's results come from memory the server registered
	 * (rr_rpc_svc_mem_reg), written to the client with no copy.
	 */
	bool reg_results;
};

struct rr_t_server {
	struct rr_t_server_opts o;
	pid_t pid; /* 0 once reaped */
	int ctl;   /* -1 when closed */
	uint16_t port;
	bool have_stats; /* st holds the counters it sent when it stopped */
	struct rr_xprt_stats st;
};

/*
 * In main before anything else: when argv is the fixture's, serves until
 * told to stop and exits; otherwise returns at once.
 */
void rr_t_server_main(int argc, char **argv);

/* 0 once the child serves (sv->port), or a negative errno. */
int rr_t_server_start(struct rr_t_server *sv, const struct rr_t_server_opts *o);
/* The same options and port again, after rr_t_server_kill. */
int rr_t_server_restart(struct rr_t_server *sv);
/* The running child's counters (all connections). */
int rr_t_server_stats(struct rr_t_server *sv, struct rr_xprt_stats *out);
/*
 * Stops it (it finishes the calls running, drains, reports its counters)
 * and reaps it: 0 when it exited cleanly with every connection drained
 * (teardown_unbalanced 0) and no state machine moved where it may not
 * (state_violations 0). 0 too when it was already gone.
 */
int rr_t_server_stop(struct rr_t_server *sv);
/*
 * The running child's answer to rr_rpc_svc_conns with capacity cap (at
 * most RR_T_CONNS_MAX): rc, and the connections with their strings
 * copied here (info.netid and info.state point into the entry).
 */
#define RR_T_CONNS_MAX 8
struct rr_t_conns {
	int32_t rc;
	uint32_t shown, hidden;
	struct rr_t_conn {
		struct rr_svc_conn_info info;
		char netid[8], state[16];
	} c[RR_T_CONNS_MAX];
};
int rr_t_server_conns(struct rr_t_server *sv, uint8_t cap,
		      struct rr_t_conns *out);
/* SIGSTOP, SIGCONT, SIGKILL; each waits for the state change. 0 or -1. */
int rr_t_server_freeze(struct rr_t_server *sv);
int rr_t_server_thaw(struct rr_t_server *sv);
int rr_t_server_kill(struct rr_t_server *sv);

/*
 * How long a Send completion the faults provider holds may wait for a
 * receive: with no bound, a server whose send queue waits on the held
 * completion, facing a client that waits for its reply, waited for ever
 * (1 run in about 170 of rpc-conformance-rdma-faults under TSan). Far
 * above a reply's round trip, so the reply still comes first.
 */
#define RR_T_SEND_CQE_DELAY_MAX_MS 50

/*
 * Faults a correct transport absorbs without a call failing: Send
 * completions after the reply, reordered and duplicated completions, and
 * a check that no Send buffer is reused early.
 */
void rr_t_benign_faults(struct rr_fault_plan *p, uint64_t seed);

#endif
