/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the control socket answers: every counter, as text or JSON. */
#ifndef NFSRDMAD_REPORT_H
#define NFSRDMAD_REPORT_H

#include "control.h"
#include "counters.h"

#include <rpcrdma/nfs3_server.h>
#include <rpcrdma/oncrpc.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A listener: the transports count over all their connections. */
struct report_xprt {
	const char *name;
	struct rr_rpc_svc *svc;
};

/* every listener nfsrdmad runs: RDMA, NFS, MOUNT, NLM and NSM on TCP */
#define REPORT_MAX_XPRTS 6

struct report_src {
	struct nfsrdmad_counters *ctr;
	struct report_xprt x[REPORT_MAX_XPRTS];
	int nx;
	struct rr_nfs3_exporter *nfs;
	struct tool_control *ctl;
	uint64_t start_ms; /* CLOCK_MONOTONIC */
	bool count_allocs; /* the reports list them (alloc_count.h) */
};

/* An tool_render_fn; arg is a struct report_src. */
void nfsrdmad_report(void *arg, FILE *f, bool json);
uint64_t nfsrdmad_report_now_ms(void);

#endif
