// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Progress line, text summary and JSON output of rpcrdma-bench. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "copy_limits.h"

#define PROGRESS_NS    500000000ull
#define GOAL_MIN_SIZE  (1u << 20)
#define GOAL_BW_RATIO  0.9
#define GOAL_P50_RATIO 1.25
/* shm (issue 22): against process_vm_writev/readv, and TCP's latency */
#define GOAL_SHM_CMA_RATIO 0.8
#define GOAL_SHM_P50_RATIO 0.25

/* The physical limits, measured for shm's Writes and Reads only. */
struct limits {
	bool valid;
	struct bench_result *mem, *cma;
};

static const char *cma_name(const struct bench_opts *o)
{
	return copy_limits_cma_name(o->op == BENCH_OP_WRITE);
}

#define COUNTERS(X)                                                            \
	X(conn_established)                                                    \
	X(conn_rejected)                                                       \
	X(conn_failed)                                                         \
	X(mpa_bad_frame)                                                       \
	X(mpa_markers_refused)                                                 \
	X(crc_errors)                                                          \
	X(ddp_bad_header)                                                      \
	X(rdmap_bad_opcode)                                                    \
	X(bad_stag)                                                            \
	X(bad_bounds)                                                          \
	X(bad_msn)                                                             \
	X(bad_mo)                                                              \
	X(no_recv_posted)                                                      \
	X(recv_too_small)                                                      \
	X(ird_exceeded)                                                        \
	X(bad_invalidate)                                                      \
	X(terminate_sent)                                                      \
	X(terminate_received)                                                  \
	X(peer_reset)                                                          \
	X(fpdus_sent)                                                          \
	X(fpdus_received)                                                      \
	X(peer_cred_refused)                                                   \
	X(shm_ring_refused)

const char *bench_op_name(enum bench_op op)
{
	switch (op) {
	case BENCH_OP_WRITE:
		return "write";
	case BENCH_OP_READ:
		return "read";
	default:
		return "send";
	}
}

/* --------------------------------------------------------------- progress */

void bench_progress_init(struct bench_progress *p, const char *label,
			 double total_s, uint64_t start_ns)
{
	/* Only a person watching a terminal wants the \r line. */
	p->enabled = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
	p->label = label;
	p->total_s = total_s;
	p->start_ns = start_ns;
	p->next_ns = start_ns + PROGRESS_NS;
}

void bench_progress_tick(struct bench_progress *p, uint64_t now_ns,
			 uint64_t ops, uint64_t bytes)
{
	double t;

	if (!p->enabled || now_ns < p->next_ns)
		return;
	p->next_ns = now_ns + PROGRESS_NS;
	t = (double)(now_ns - p->start_ns) / 1e9;
	fprintf(stderr, "\r%-6s %5.1f/%.1f s %10.1f MB/s %11.0f msgs/s ",
		p->label, t, p->total_s, (double)bytes / t / 1e6,
		(double)ops / t);
}

void bench_progress_done(struct bench_progress *p)
{
	if (p->enabled)
		fprintf(stderr, "\r\033[K");
}

/* ------------------------------------------------------------ the figures */

struct bench_figures bench_figures(const struct bench_result *r)
{
	struct bench_figures f = {0};
	double t = r->elapsed_s > 0 ? r->elapsed_s : 1e-9;

	if (!r->done)
		return f;
	f.valid = true;
	f.mbps = (double)r->bytes / t / 1e6;
	f.msgs = (double)r->ops / t;
	f.p50 = bench_hist_percentile_us(&r->hist, 50);
	f.p99 = bench_hist_percentile_us(&r->hist, 99);
	f.mean = bench_hist_mean_us(&r->hist);
	f.min = r->hist.count ? (double)r->hist.min_ns / 1000 : 0;
	f.max = (double)r->hist.max_ns / 1000;
	return f;
}

double bench_ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static const char *latency_meaning(enum bench_op op)
{
	switch (op) {
	case BENCH_OP_WRITE:
		return "post to completion (RDMA Write completes once handed "
		       "to "
		       "the kernel; TCP: peer's 8-byte ack received)";
	case BENCH_OP_READ:
		return "post to completion (data placed; TCP: 8-byte request "
		       "to "
		       "last response byte)";
	default:
		return "round trip (Send posted to the peer's answering Send "
		       "received), not halved";
	}
}

/* -------------------------------------------------------------- the goals */

struct goal {
	const char *what; /* NULL: none applies */
	struct bjson_goal g;
};

static struct goal goal(const struct bench_opts *o,
			const struct bench_figures *us,
			const struct bench_figures *tcp,
			const struct limits *lim)
{
	struct goal g = {0};
	bool shm = !strcmp(o->provider, "shm");

	if (shm && lim->valid && o->size >= GOAL_MIN_SIZE) {
		struct bench_figures cma = bench_figures(lim->cma);

		if (us->valid && cma.valid)
			g = (struct goal){"MB/s ratio >=",
					  {"ratio.MBps", cma_name(o),
					   bench_ratio(us->mbps, cma.mbps),
					   GOAL_SHM_CMA_RATIO, false}};
		return g;
	}
	if (!us->valid || !tcp->valid)
		return g;
	if (shm && o->op == BENCH_OP_SEND && o->depth == 1)
		return (struct goal){"p50 ratio <=",
				     {"ratio.p50_us", "tcp",
				      bench_ratio(us->p50, tcp->p50),
				      GOAL_SHM_P50_RATIO, true}};
	if (o->op != BENCH_OP_SEND && o->size >= GOAL_MIN_SIZE)
		g = (struct goal){"MB/s ratio >=",
				  {"ratio.MBps", "tcp",
				   bench_ratio(us->mbps, tcp->mbps),
				   GOAL_BW_RATIO, false}};
	else if (o->op == BENCH_OP_SEND && o->depth == 1)
		g = (struct goal){"p50 ratio <=",
				  {"ratio.p50_us", "tcp",
				   bench_ratio(us->p50, tcp->p50),
				   GOAL_P50_RATIO, true}};
	return g;
}

/* ------------------------------------------------------------------- text */

static void text_row(const char *name, const struct bench_figures *f)
{
	if (!f->valid)
		return;
	printf("%-8s %12.1f %12.0f %10.2f %10.2f\n", name, f->mbps, f->msgs,
	       f->p50, f->p99);
}

static void text_counters(const struct bench_result *r)
{
	const char *sep = "";

	if (!r->have_counters)
		return;
	printf("counters:");
#define X(name)                                                                \
	if (r->counters.name) {                                                \
		printf("%s %s=%llu", sep, #name,                               \
		       (unsigned long long)r->counters.name);                  \
		sep = ",";                                                     \
	}
	COUNTERS(X)
#undef X
	printf("\n");
}

static void text_limits(const struct bench_opts *o,
			const struct bench_figures *us,
			const struct limits *lim)
{
	struct bench_figures mem, cma;

	if (!lim->valid)
		return;
	mem = bench_figures(lim->mem);
	cma = bench_figures(lim->cma);
	printf("%-8s %12.1f %12.0f %10.2f %10.2f\n", "memcpy", mem.mbps,
	       mem.msgs, mem.p50, mem.p99);
	printf("%-8s %12.1f %12.0f %10.2f %10.2f (%s)\n", "cma", cma.mbps,
	       cma.msgs, cma.p50, cma.p99, cma_name(o));
	printf("%-8s %12.3f %12s %10s %10s (%s / memcpy)\n", "ratio",
	       bench_ratio(us->mbps, mem.mbps), "", "", "", o->provider);
	printf("%-8s %12.3f %12s %10s %10s (%s / %s)\n", "ratio",
	       bench_ratio(us->mbps, cma.mbps), "", "", "", o->provider,
	       cma_name(o));
}

static void text_report(const struct bench_opts *o,
			const struct bench_result *ours,
			const struct bench_result *base,
			const struct limits *lim)
{
	struct bench_figures us = bench_figures(ours),
			     tcp = bench_figures(base);
	struct goal g = goal(o, &us, &tcp, lim);

	printf("fabric %s: size %u B, depth %u, %.1f s per phase, provider %s, "
	       "addr %s, crc %s, %s\n",
	       bench_op_name(o->op), o->size, o->depth, o->seconds, o->provider,
	       o->addr_str, o->crc ? "on" : "off",
	       bench_pinned(o) ? "this side on CPU 0, peer on CPU 1"
			       : "unpinned");
	printf("%-8s %12s %12s %10s %10s\n", "", "MB/s", "msgs/s", "p50 us",
	       "p99 us");
	text_row(o->provider, &us);
	text_row("tcp", &tcp);
	if (us.valid && tcp.valid)
		printf("%-8s %12.3f %12s %10.3f %10.3f\n", "ratio",
		       bench_ratio(us.mbps, tcp.mbps), "",
		       bench_ratio(us.p50, tcp.p50),
		       bench_ratio(us.p99, tcp.p99));
	text_limits(o, &us, lim);
	printf("MB = 10^6 bytes; latency = %s\n", latency_meaning(o->op));
	if (g.what)
		printf("goal %s %.2f: %.3f, goal %s\n", g.what, g.g.target,
		       g.g.value, bjson_goal_met(&g.g) ? "met" : "missed");
	else if (us.valid && tcp.valid)
		printf("goal: none for this configuration (write/read need "
		       "size >= 1 MiB, send needs depth 1)\n");
	text_counters(ours);
}

/* ------------------------------------------------------------------- json */

struct bjson_figures bench_json_figures(const struct bench_result *r,
					const struct bench_figures *f)
{
	struct bjson_figures j = bjson_figures_none();

	if (!f->valid)
		return j;
	j.ops = (double)r->ops;
	j.bytes = (double)r->bytes;
	j.elapsed_s = r->elapsed_s;
	j.mbps = f->mbps;
	j.ops_per_s = f->msgs;
	j.p50_us = f->p50;
	j.p99_us = f->p99;
	j.mean_us = f->mean;
	j.min_us = f->min;
	j.max_us = f->max;
	return j;
}

const char *bench_target(const struct bench_opts *o,
			 const struct bench_result *r, char *buf, size_t cap)
{
	if (!r->port)
		return NULL;
	snprintf(buf, cap, "%s:%u", o->addr_str, r->port);
	return buf;
}

static void json_counters(struct jw *j, const struct bench_result *r)
{
	if (!r->have_counters) {
		jw_null(j, "counters");
		return;
	}
	jw_obj(j, "counters");
#define X(name) jw_u64(j, #name, r->counters.name);
	COUNTERS(X)
#undef X
	jw_obj_end(j);
}

struct fabric_details {
	const struct bench_opts *o;
	const struct bench_result *ours;
};

static void json_details(struct jw *j, const void *arg)
{
	const struct fabric_details *d = arg;

	jw_bool(j, "crc", d->o->crc);
	jw_bool(j, "pinned", bench_pinned(d->o));
	json_counters(j, d->ours);
}

static int json_report(const struct bench_opts *o,
		       const struct bench_result *ours,
		       const struct bench_result *base,
		       const struct limits *lim)
{
	struct bench_figures us = bench_figures(ours),
			     tcp = bench_figures(base);
	struct goal g = goal(o, &us, &tcp, lim);
	struct fabric_details d = {o, ours};
	char target[64], base_target[64];
	struct bjson_baseline b[3] = {
		{.name = "tcp",
		 .transport = "tcp",
		 .target = bench_target(o, base, base_target,
					sizeof(base_target)),
		 .fig = bench_json_figures(base, &tcp)}};
	unsigned nb = 0;

	if (tcp.valid)
		nb++;
	if (lim->valid) {
		struct bench_figures mem = bench_figures(lim->mem),
				     cma = bench_figures(lim->cma);

		b[nb++] = (struct bjson_baseline){
			.name = "memcpy",
			.transport = "memory",
			.fig = bench_json_figures(lim->mem, &mem)};
		b[nb++] = (struct bjson_baseline){
			.name = cma_name(o),
			.transport = "memory",
			.fig = bench_json_figures(lim->cma, &cma)};
	}
	struct bjson_report r = {
		.program = "rpcrdma-bench",
		.subcommand = "fabric",
		.version = RR_VERSION,
		.operation = bench_op_name(o->op),
		.size_bytes = o->size,
		.depth = o->depth,
		.seconds = o->seconds,
		.latency = o->op == BENCH_OP_SEND ? "round_trip"
						  : "post_to_completion",
		.target = bench_target(o, ours, target, sizeof(target)),
		.transport = "rdma",
		.provider = o->provider,
		.fig = bench_json_figures(ours, &us),
		.baselines = b,
		.nbaselines = nb,
		.goals = &g.g,
		.ngoals = g.what != NULL,
		.details = json_details,
		.details_arg = &d,
	};

	return bjson_report_write(stdout, &r);
}

/*
 * shm's Writes and Reads are bounded by what the host can copy: measured
 * here, after both phases, so every figure comes from the same run.
 */
static int limits_measure(const struct bench_opts *o, struct limits *lim)
{
	int err;

	if (strcmp(o->provider, "shm") || o->op == BENCH_OP_SEND ||
	    o->baseline_only)
		return 0;
	lim->mem = calloc(1, sizeof(*lim->mem));
	lim->cma = calloc(1, sizeof(*lim->cma));
	if (!lim->mem || !lim->cma)
		return -ENOMEM;
	bench_hist_reset(&lim->mem->hist);
	bench_hist_reset(&lim->cma->hist);
	err = bench_limits_run(o, lim->mem, lim->cma);
	if (err)
		fprintf(stderr, "rpcrdma-bench fabric: limits: %s\n",
			strerror(-err));
	lim->valid = err == 0;
	return 0;
}

int bench_report(const struct bench_opts *o, const struct bench_result *ours,
		 const struct bench_result *base)
{
	struct limits lim = {0};
	int err = limits_measure(o, &lim);

	if (!err && o->json)
		err = json_report(o, ours, base, &lim);
	else if (!err) {
		text_report(o, ours, base, &lim);
		err = fflush(stdout) || ferror(stdout) ? -EIO : 0;
	}
	free(lim.mem);
	free(lim.cma);
	return err;
}
