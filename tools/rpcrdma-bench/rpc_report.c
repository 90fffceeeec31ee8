// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Text summary, JSON and goal verdicts of "rpcrdma-bench rpc". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_limits.h"
#include "rpc_bench.h"

#define MIB		 (1024.0 * 1024.0)
#define GOAL_NULL_P50	 1.0 /* our p50 / libtirpc's, at most */
#define GOAL_READ_CALLS	 1.5 /* calls/s ratio, 4 KiB READ at depth 16 */
#define GOAL_READ_MBPS	 1.0 /* MB/s ratio, READ of 1 MiB and more */
#define GOAL_MEMORY	 (8.0 * MIB)
#define GOAL_SMALL_READ	 4096u
#define GOAL_READ_DEPTH	 16u
#define GOAL_LARGE_READ	 (1u << 20)
#define GOAL_READ_FABRIC 0.9 /* MB/s ratio to the fabric's RDMA Write */
#define DEFAULT_MAX_BULK (1u << 20)
#define RPC_MAX_GOALS	 6 /* four ratios at most, two of memory */

/* Non-zero counters only: a failure report should be short. */
void rpc_print_stats(FILE *f, const struct rr_xprt_stats *s)
{
	const char *sep = " ";

#define X(name)                                                                \
	if (s->name) {                                                         \
		fprintf(f, "%s%s=%llu", sep, #name,                            \
			(unsigned long long)s->name);                          \
		sep = ", ";                                                    \
	}
	RR_XPRT_STATS_FIELDS(X)
#undef X
}

/* -------------------------------------------------------------- the goals */

struct rpc_goal {
	const char *what;
	bool mib; /* value and target are bytes, shown in MiB */
	struct bjson_goal g;
};

/*
 * The memory goal is about the defaults: 128 credits, 4 KiB inline, one
 * connection.
 */
static bool default_config(const struct rpc_opts *o)
{
	return o->b.size <= DEFAULT_MAX_BULK && rpc_conns(o) == 1;
}

static uint64_t server_conn_bytes(const struct rpc_memory *m)
{
	return m->server_rss > m->server_rss_idle
		       ? m->server_rss - m->server_rss_idle
		       : 0;
}

static unsigned ratio_goals(const struct rpc_opts *o,
			    const struct bench_figures *us,
			    const struct bench_figures *tcp, struct rpc_goal *g)
{
	unsigned n = 0;

	if (!us->valid || !tcp->valid)
		return 0;
	if (o->proc == BENCHPROC_NULL && o->b.depth == 1)
		g[n++] = (struct rpc_goal){"null p50 / libtirpc p50",
					   false,
					   {"ratio.p50_us", "libtirpc",
					    bench_ratio(us->p50, tcp->p50),
					    GOAL_NULL_P50, true}};
	if (o->proc == BENCHPROC_READ && o->b.size == GOAL_SMALL_READ &&
	    o->b.depth == GOAL_READ_DEPTH)
		g[n++] = (struct rpc_goal){
			"read 4 KiB depth 16 calls/s / libtirpc",
			false,
			{"ratio.ops_per_s", "libtirpc",
			 bench_ratio(us->msgs, tcp->msgs), GOAL_READ_CALLS,
			 false}};
	if (o->proc == BENCHPROC_READ && o->b.size >= GOAL_LARGE_READ)
		g[n++] = (struct rpc_goal){"read >= 1 MiB MB/s / libtirpc",
					   false,
					   {"ratio.MBps", "libtirpc",
					    bench_ratio(us->mbps, tcp->mbps),
					    GOAL_READ_MBPS, false}};
	return n;
}

static unsigned memory_goals(const struct rpc_opts *o,
			     const struct rpc_memory *m, struct rpc_goal *g)
{
	unsigned n = 0;

	if (!default_config(o))
		return 0;
	if (m->client_valid)
		g[n++] = (struct rpc_goal){
			"client memory (VmRSS after connecting)",
			true,
			{"client_rss_bytes", NULL, (double)m->client_rss,
			 GOAL_MEMORY, true}};
	if (m->server_valid)
		g[n++] = (struct rpc_goal){"server connection (VmRSS growth)",
					   true,
					   {"server_connection_rss_bytes", NULL,
					    (double)server_conn_bytes(m),
					    GOAL_MEMORY, true}};
	return n;
}

/*
 * shm: the physical limits of the bulk data, measured after both phases
 * (copy_limits.h): a READ's results are RDMA Written into the client,
 * which pulls them (process_vm_readv); a WRITE's arguments are RDMA Read
 * by the server, and the client pushes them (process_vm_writev).
 */
struct rpc_limits {
	bool valid, read;
	struct bench_result mem, cma;
	bool fab_valid; /* the fabric's own RDMA, below */
	struct bench_result fab;
};

static void limits_measure(const struct rpc_opts *o, struct rpc_limits *l)
{
	struct bench_opts b = o->b;
	int err;

	if (strcmp(o->b.provider, "shm") ||
	    (o->proc != BENCHPROC_READ && o->proc != BENCHPROC_WRITE))
		return;
	l->read = o->proc == BENCHPROC_READ;
	b.op = l->read ? BENCH_OP_WRITE : BENCH_OP_READ;
	bench_hist_reset(&l->mem.hist);
	bench_hist_reset(&l->cma.hist);
	err = bench_limits_run(&b, &l->mem, &l->cma);
	if (err)
		fprintf(stderr, "rpcrdma-bench rpc: limits: %s\n",
			strerror(-err));
	l->valid = err == 0;
}

/*
 * The fabric's own one-sided rate for the bulk data, same size, depth,
 * provider and CPUs, after the other phases: a READ's results move as an
 * RDMA Write into the client, a WRITE's arguments as an RDMA Read from
 * it. What the RPC layer adds (the call, its reply, the window bound and
 * invalidated for each call) is the gap between the two.
 */
static void fabric_measure(const struct rpc_opts *o, struct rpc_limits *l)
{
	struct bench_opts b = o->b;
	int err;

	if (o->b.baseline_only || !o->b.size ||
	    (o->proc != BENCHPROC_READ && o->proc != BENCHPROC_WRITE))
		return;
	b.op = o->proc == BENCHPROC_READ ? BENCH_OP_WRITE : BENCH_OP_READ;
	b.port = 0;
	bench_hist_reset(&l->fab.hist);
	err = bench_fabric_run(&b, &l->fab);
	if (err)
		fprintf(stderr, "rpcrdma-bench rpc: fabric phase: %s\n",
			strerror(-err));
	l->fab_valid = err == 0;
}

static const char *fabric_name(const struct rpc_opts *o)
{
	return o->proc == BENCHPROC_READ ? "fabric_rdma_write"
					 : "fabric_rdma_read";
}

static unsigned fabric_goal(const struct rpc_opts *o,
			    const struct bench_figures *us,
			    const struct rpc_limits *l, struct rpc_goal *g)
{
	struct bench_figures fab = bench_figures(&l->fab);

	/* The fabric phase has one QP: judged against one connection. */
	if (!l->fab_valid || !us->valid || !fab.valid ||
	    o->proc != BENCHPROC_READ || o->b.size < GOAL_LARGE_READ ||
	    rpc_conns(o) != 1)
		return 0;
	*g = (struct rpc_goal){"read >= 1 MiB MB/s / fabric RDMA Write",
			       false,
			       {"ratio.MBps", fabric_name(o),
				bench_ratio(us->mbps, fab.mbps),
				GOAL_READ_FABRIC, false}};
	return 1;
}

/* ------------------------------------------------------------------- text */

static void text_row(const char *name, const struct bench_figures *f)
{
	if (f->valid)
		printf("%-8s %12.0f %12.1f %10.2f %10.2f\n", name, f->msgs,
		       f->mbps, f->p50, f->p99);
}

static void text_fabric(const struct rpc_opts *o,
			const struct bench_figures *us,
			const struct rpc_limits *l)
{
	struct bench_figures fab = bench_figures(&l->fab);

	if (!l->fab_valid || !fab.valid)
		return;
	printf("%-8s %12.0f %12.1f %10.2f %10.2f (%s of %u B, no RPC, one "
	       "QP)\n",
	       "fabric", fab.msgs, fab.mbps, fab.p50, fab.p99,
	       o->proc == BENCHPROC_READ ? "RDMA Write" : "RDMA Read",
	       o->b.size);
	printf("%-8s %12.3f %12.3f %10s %10s (%s / fabric)\n", "ratio",
	       bench_ratio(us->msgs, fab.msgs), bench_ratio(us->mbps, fab.mbps),
	       "", "", o->b.provider);
}

static void text_limits(const struct bench_figures *us,
			const struct rpc_limits *l)
{
	struct bench_figures mem = bench_figures(&l->mem);
	struct bench_figures cma = bench_figures(&l->cma);
	const char *name = copy_limits_cma_name(l->read);

	if (!l->valid)
		return;
	printf("%-8s %12.0f %12.1f %10.2f %10.2f\n", "memcpy", mem.msgs,
	       mem.mbps, mem.p50, mem.p99);
	printf("%-8s %12.0f %12.1f %10.2f %10.2f (%s)\n", "cma", cma.msgs,
	       cma.mbps, cma.p50, cma.p99, name);
	printf("%-8s %12s %12.3f %10s %10s (shm / memcpy)\n", "ratio", "",
	       bench_ratio(us->mbps, mem.mbps), "", "");
	printf("%-8s %12s %12.3f %10s %10s (shm / %s)\n", "ratio", "",
	       bench_ratio(us->mbps, cma.mbps), "", "", name);
}

static void text_memory(const struct rpc_memory *m)
{
	if (m->client_valid)
		printf("memory: client %.2f MiB VmRSS after connecting "
		       "(+%.2f MiB for rr_clnt_create), %.2f MiB registered\n",
		       m->client_rss / MIB,
		       ((double)m->client_rss - (double)m->client_rss_before) /
			       MIB,
		       m->client_registered / MIB);
	if (m->server_valid)
		printf("memory: server connection +%.2f MiB VmRSS (%.2f MiB "
		       "in all), %.2f MiB registered (%.2f MiB before it)\n",
		       server_conn_bytes(m) / MIB, m->server_rss / MIB,
		       m->server_registered / MIB,
		       m->server_registered_idle / MIB);
}

static void text_goal(const struct rpc_goal *g)
{
	double div = g->mib ? MIB : 1;

	printf("goal %s %s %.2f%s: %.2f%s, %s\n", g->what,
	       g->g.at_most ? "<=" : ">=", g->g.target / div,
	       g->mib ? " MiB" : "x", g->g.value / div, g->mib ? " MiB" : "x",
	       bjson_goal_met(&g->g) ? "met" : "MISSED");
}

static void text_report(const struct rpc_opts *o, const struct rpc_result *ours,
			const struct rpc_result *base,
			const struct rpc_limits *lim, const struct rpc_goal *g,
			unsigned ngoals)
{
	struct bench_figures us = bench_figures(&ours->r);
	struct bench_figures tcp = bench_figures(&base->r);
	unsigned i;

	printf("rpc %s: size %u B, depth %u, %.1f s per phase, provider %s, "
	       "addr %s, server handlers %s",
	       rpc_proc_name(o->proc), o->b.size, o->b.depth, o->b.seconds,
	       o->b.provider, o->b.addr_str,
	       o->svc_threads ? "in a pool of " : "inline");
	if (o->svc_threads)
		printf("%u", o->svc_threads);
	printf(bench_pinned(&o->b) ? ", client on CPU 0, server on CPU 1\n"
				   : ", unpinned\n");
	printf("%-8s %12s %12s %10s %10s\n", "", "calls/s", "MB/s", "p50 us",
	       "p99 us");
	text_row(o->b.provider, &us);
	text_row("tirpc", &tcp);
	if (us.valid && tcp.valid)
		printf("%-8s %12.3f %12.3f %10.3f %10.3f\n", "ratio",
		       bench_ratio(us.msgs, tcp.msgs),
		       bench_ratio(us.mbps, tcp.mbps),
		       bench_ratio(us.p50, tcp.p50),
		       bench_ratio(us.p99, tcp.p99));
	text_fabric(o, &us, lim);
	text_limits(&us, lim);
	printf("MB = 10^6 bytes of data (echo counts it once); latency = "
	       "arguments encoded to results decoded and checked\n"
	       "connections: ours %u (%u call%s in flight), tirpc %u (%u "
	       "thread%s, one call at a time on each connection)\n",
	       rpc_conns(o), o->b.depth, o->b.depth == 1 ? "" : "s",
	       rpc_tirpc_conns(o), o->b.depth, o->b.depth == 1 ? "" : "s");
	text_memory(&ours->mem);
	for (i = 0; i < ngoals; i++)
		text_goal(&g[i]);
	if (ours->have_stats) {
		printf("client counters:");
		rpc_print_stats(stdout, &ours->stats);
		printf("\n");
	}
	if (ours->have_svc_stats) {
		printf("server counters:");
		rpc_print_stats(stdout, &ours->svc_stats);
		printf("\n");
	}
}

/* ------------------------------------------------------------------- json */

static void json_counters(struct jw *j, const char *key, bool valid,
			  const struct rr_xprt_stats *s)
{
	if (!valid) {
		jw_null(j, key);
		return;
	}
	jw_obj(j, key);
#define X(name) jw_u64(j, #name, s->name);
	RR_XPRT_STATS_FIELDS(X)
#undef X
	jw_obj_end(j);
}

static void json_u64(struct jw *j, const char *key, bool valid, uint64_t v)
{
	if (valid)
		jw_u64(j, key, v);
	else
		jw_null(j, key);
}

static void json_memory(struct jw *j, const struct rpc_memory *m)
{
	jw_obj(j, "memory");
	json_u64(j, "client_registered_bytes", m->client_valid,
		 m->client_registered);
	json_u64(j, "client_rss_bytes", m->client_valid, m->client_rss);
	json_u64(j, "client_rss_before_bytes", m->client_valid,
		 m->client_rss_before);
	json_u64(j, "server_registered_bytes", m->server_valid,
		 m->server_registered);
	json_u64(j, "server_rss_bytes", m->server_valid, m->server_rss);
	json_u64(j, "server_registered_idle_bytes", m->server_valid,
		 m->server_registered_idle);
	json_u64(j, "server_rss_idle_bytes", m->server_valid,
		 m->server_rss_idle);
	jw_obj_end(j);
}

struct rpc_details {
	const struct rpc_opts *o;
	const struct rpc_result *ours;
};

static void json_details(struct jw *j, const void *arg)
{
	const struct rpc_details *d = arg;

	jw_bool(j, "pinned", bench_pinned(&d->o->b));
	jw_u64(j, "server_threads", d->o->svc_threads);
	/* libtirpc's client is synchronous: a thread per call in flight */
	jw_u64(j, "baseline_threads", d->o->b.depth);
	jw_u64(j, "connections", rpc_conns(d->o));
	jw_u64(j, "baseline_connections", rpc_tirpc_conns(d->o));
	json_counters(j, "counters", d->ours->have_stats, &d->ours->stats);
	json_counters(j, "server_counters", d->ours->have_svc_stats,
		      &d->ours->svc_stats);
	json_memory(j, &d->ours->mem);
}

static unsigned json_limits(const struct rpc_limits *l,
			    struct bjson_baseline *b, struct bench_figures *mem,
			    struct bench_figures *cma)
{
	if (!l->valid)
		return 0;
	*mem = bench_figures(&l->mem);
	*cma = bench_figures(&l->cma);
	b[0] = (struct bjson_baseline){.name = "memcpy",
				       .transport = "memory",
				       .fig = bench_json_figures(&l->mem, mem)};
	b[1] = (struct bjson_baseline){.name = copy_limits_cma_name(l->read),
				       .transport = "memory",
				       .fig = bench_json_figures(&l->cma, cma)};
	return 2;
}

static unsigned json_fabric(const struct rpc_opts *o,
			    const struct rpc_limits *l,
			    struct bjson_baseline *b, struct bench_figures *fab)
{
	if (!l->fab_valid)
		return 0;
	*fab = bench_figures(&l->fab);
	*b = (struct bjson_baseline){.name = fabric_name(o),
				     .transport = "rdma",
				     .fig = bench_json_figures(&l->fab, fab)};
	return 1;
}

static int json_report(const struct rpc_opts *o, const struct rpc_result *ours,
		       const struct rpc_result *base,
		       const struct rpc_limits *lim, const struct rpc_goal *g,
		       unsigned ngoals)
{
	struct bench_figures us = bench_figures(&ours->r);
	struct bench_figures tcp = bench_figures(&base->r);
	struct rpc_details d = {o, ours};
	struct bjson_goal goals[RPC_MAX_GOALS];
	char target[64], base_target[64];
	struct bench_figures mem, cma, fab;
	struct bjson_baseline b[4] = {
		{.name = "libtirpc",
		 .transport = "tcp",
		 .target = bench_target(&o->b, &base->r, base_target,
					sizeof(base_target)),
		 .fig = bench_json_figures(&base->r, &tcp)}};
	unsigned nb = tcp.valid;
	struct bjson_report r;

	nb += json_fabric(o, lim, b + nb, &fab);
	nb += json_limits(lim, b + nb, &mem, &cma);
	r = (struct bjson_report){
		.program = "rpcrdma-bench",
		.subcommand = "rpc",
		.version = RR_VERSION,
		.operation = rpc_proc_name(o->proc),
		.size_bytes = o->b.size,
		.depth = o->b.depth,
		.seconds = o->b.seconds,
		.latency = "call_to_checked_result",
		.target = bench_target(&o->b, &ours->r, target, sizeof(target)),
		.transport = "rdma",
		.provider = o->b.provider,
		.fig = bench_json_figures(&ours->r, &us),
		.baselines = b,
		.nbaselines = nb,
		.goals = goals,
		.ngoals = ngoals,
		.details = json_details,
		.details_arg = &d,
	};

	for (unsigned i = 0; i < ngoals; i++)
		goals[i] = g[i].g;
	return bjson_report_write(stdout, &r);
}

int rpc_report(const struct rpc_opts *o, const struct rpc_result *ours,
	       const struct rpc_result *base)
{
	struct bench_figures us = bench_figures(&ours->r);
	struct bench_figures tcp = bench_figures(&base->r);
	struct rpc_goal g[RPC_MAX_GOALS];
	struct rpc_limits *lim = calloc(1, sizeof(*lim));
	unsigned n;
	int err = 0;

	if (!lim)
		return -ENOMEM;
	fabric_measure(o, lim);
	limits_measure(o, lim);
	n = ratio_goals(o, &us, &tcp, g);
	n += fabric_goal(o, &us, lim, g + n);
	if (ours->r.done)
		n += memory_goals(o, &ours->mem, g + n);
	if (o->b.json)
		err = json_report(o, ours, base, lim, g, n);
	else {
		text_report(o, ours, base, lim, g, n);
		err = fflush(stdout) || ferror(stdout) ? -EIO : 0;
	}
	free(lim);
	return err;
}
