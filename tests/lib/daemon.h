/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad as a child process for tests: started on ephemeral ports on
 * 127.0.0.1 (read back from its "ready" banner), its stderr kept in a file
 * so a test can tell a log flood, its peak RSS read from /proc, and a
 * SIGTERM stop that reports the exit status.
 */
#ifndef RR_TEST_LIB_DAEMON_H
#define RR_TEST_LIB_DAEMON_H

#include "clock.h"

#include <stdint.h>
#include <sys/types.h>

struct rr_t_daemon {
	pid_t pid;
	int out;			     /* its stdout */
	uint16_t rdma, tcp, mount, nlm, nsm; /* 0: not served */
	char log[256];			     /* where its stderr goes */
};

/* Resource limits for the daemon; 0: inherited. */
struct rr_t_limits {
	long nofile; /* RLIMIT_NOFILE */
	long fsize;  /* RLIMIT_FSIZE, bytes */
};

/*
 * Starts bin serving exp (NULL: argv_extra says, --exports), state in
 * state_dir, with extra arguments argv_extra (NULL-terminated, may be NULL)
 * under lim (may be NULL). 0 once it is ready, or a negative errno.
 */
int rr_t_daemon_start(struct rr_t_daemon *d, const char *bin, const char *exp,
		      const char *state_dir, const char *const *argv_extra,
		      const struct rr_t_limits *lim);
/* SIGTERM and wait: its exit status, or -1 when killed after 10 s. */
int rr_t_daemon_stop(struct rr_t_daemon *d);
/* A KiB field of the running daemon's /proc status (VmPeak...), or -1. */
long rr_t_daemon_status_kb(const struct rr_t_daemon *d, const char *field);
/*
 * Its own allocations so far, read from its control socket's stats (it
 * must have been started with RPCRDMA_COUNT_ALLOCS=1), or -1.
 */
long rr_t_daemon_allocs(const struct rr_t_daemon *d);
/* Peak resident set (VmHWM) of the running daemon in KiB, or -1. */
long rr_t_daemon_peak_rss_kb(const struct rr_t_daemon *d);
/*
 * A counter of the running daemon: SIGUSR1 makes it print every counter
 * of each transport by name; this waits (10 s at most) for the line of
 * transport xprt ("nfs3 over tcp", "nfs3+mount3 over rdma") to appear in
 * its log and returns the value of name there, or -1.
 */
long rr_t_daemon_counter(const struct rr_t_daemon *d, const char *xprt,
			 const char *name);
/* Bytes it has written to stderr so far. */
long rr_t_daemon_log_bytes(const struct rr_t_daemon *d);
/*
 * For a test that failed talking to it: whether it still runs (or how it
 * ended: a sanitizer's exit code, a signal) and the end of its log, on
 * stderr. It is not reaped: rr_t_daemon_stop still can.
 */
void rr_t_daemon_tell(const struct rr_t_daemon *d);

#endif
