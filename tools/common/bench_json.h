/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one JSON shape of every benchmark report: nfsrdma bench,
 * rpcrdma-bench fabric and rpcrdma-bench rpc fill a struct bjson_report
 * and this writes it, so scripts read the same keys from all three
 * (README.md, "Benchmark JSON", describes each key). What only one
 * program measures goes under "details", written by its own callback.
 *
 * Figures are doubles, NAN where a run did not measure them (a phase that
 * did not run, latencies of a copy timed as a whole): they print as null.
 */
#ifndef RR_TOOLS_BENCH_JSON_H
#define RR_TOOLS_BENCH_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "json.h"

/* Bumped when a key changes meaning or goes away, not when one is added. */
#define BJSON_SCHEMA "rr-bench/1"

/* One run's figures; MB = 10^6 bytes. */
struct bjson_figures {
	double ops, bytes, elapsed_s;
	double mbps, ops_per_s;
	double p50_us, p99_us, mean_us, min_us, max_us;
};

/* Every figure NAN: a run that produced nothing. */
struct bjson_figures bjson_figures_none(void);

/* Another implementation measured in the same run, to compare with. */
struct bjson_baseline {
	const char *name;      /* "tcp", "libtirpc", "libnfs" */
	const char *transport; /* "tcp", "rdma" */
	const char *provider;  /* NULL: none (not RDMA) */
	const char *target;    /* URL or address:port; NULL: unknown */
	struct bjson_figures fig;
};

/* value <= target (at_most) or value >= target. */
struct bjson_goal {
	const char *metric;   /* "ratio.MBps", "client_rss_bytes", ... */
	const char *baseline; /* a ratio's baseline name; NULL: none */
	double value, target;
	bool at_most;
};

struct bjson_report {
	const char *program, *subcommand, *version;
	/* What was measured: size_bytes per operation, depth in flight. */
	const char *operation;
	uint64_t size_bytes;
	uint32_t depth;
	double seconds;	     /* asked for, per phase */
	const char *latency; /* what one latency sample spans */
	const char *target;  /* ours: URL or address:port */
	const char *transport;
	const char *provider; /* NULL when transport is not RDMA */
	struct bjson_figures fig;
	const struct bjson_baseline *baselines;
	unsigned nbaselines;
	const struct bjson_goal *goals;
	unsigned ngoals;
	/* Optional: the members of "details", this program's own. */
	void (*details)(struct jw *j, const void *arg);
	const void *details_arg;
};

bool bjson_goal_met(const struct bjson_goal *g);
/* The report as one line on f: 0, or -EIO when f failed. */
int bjson_report_write(FILE *f, const struct bjson_report *r);

#endif
