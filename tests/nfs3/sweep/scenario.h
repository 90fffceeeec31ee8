/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NFS allocation sweep's scenario (scenario.c) as its driver
 * (alloc_sweep.c) sees it: one call runs it in this process, armed by the
 * driver, and fills a report the driver sends from the forked run to the
 * sweeping parent.
 */
#ifndef RR_TEST_NFS_SWEEP_SCENARIO_H
#define RR_TEST_NFS_SWEEP_SCENARIO_H

#include "sweep.h"

#include <stdint.h>

enum fatal {
	F_BYTES = 1,	   /* a read gave back other bytes than written */
	F_AFTER = 2,	   /* disarmed, a fresh mount's calls failed */
	F_UNBALANCED = 4,  /* an RDMA connection torn down undrained */
	F_SETUP = 8,	   /* the test's own set-up failed (no injection) */
	F_UNKNOWN_CQE = 16 /* the client saw a completion no one issued */
};

/* The scenario's figures in rr_t_sweep_report.extra. */
enum { X_CALLS /* NFS calls the server answered */ };

/*
 * Serves a fresh export under top, runs the client's part armed (the
 * caller armed the injector), disarms, checks that a new mount works and
 * tears everything down. proto: "rdma" or "tcp".
 */
void scenario(const char *top, const char *proto, struct rr_t_sweep_report *r);

#endif
