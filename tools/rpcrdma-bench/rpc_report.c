// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Text summary, JSON and goal verdicts of "rpcrdma-bench rpc". */
#include <stdio.h>

#include "rpc_bench.h"

#define MIB		 (1024.0 * 1024.0)
#define GOAL_NULL_P50	 1.0 /* our p50 / libtirpc's, at most */
#define GOAL_READ_CALLS	 1.5 /* calls/s ratio, 4 KiB READ at depth 16 */
#define GOAL_READ_MBPS	 1.0 /* MB/s ratio, READ of 1 MiB and more */
#define GOAL_MEMORY	 (8.0 * MIB)
#define GOAL_SMALL_READ	 4096u
#define GOAL_READ_DEPTH	 16u
#define GOAL_LARGE_READ	 (1u << 20)
#define DEFAULT_MAX_BULK (1u << 20)

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
	const char *metric; /* JSON name */
	double value, target;
	bool at_most; /* value <= target, else value >= target */
	bool mib;     /* value and target are bytes, shown in MiB */
};

/* The memory goal is about the defaults: 128 credits, 4 KiB inline. */
static bool default_config(const struct rpc_opts *o)
{
	return o->b.size <= DEFAULT_MAX_BULK;
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
		g[n++] = (struct rpc_goal){
			"null p50 / libtirpc p50", "null_p50_ratio",
			bench_ratio(us->p50, tcp->p50), GOAL_NULL_P50, true};
	if (o->proc == BENCHPROC_READ && o->b.size == GOAL_SMALL_READ &&
	    o->b.depth == GOAL_READ_DEPTH)
		g[n++] = (struct rpc_goal){
			"read 4 KiB depth 16 calls/s / libtirpc",
			"read_4k_calls_ratio", bench_ratio(us->msgs, tcp->msgs),
			GOAL_READ_CALLS, false};
	if (o->proc == BENCHPROC_READ && o->b.size >= GOAL_LARGE_READ)
		g[n++] = (struct rpc_goal){"read >= 1 MiB MB/s / libtirpc",
					   "read_1m_MBps_ratio",
					   bench_ratio(us->mbps, tcp->mbps),
					   GOAL_READ_MBPS, false};
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
			"client_memory_bytes",
			(double)m->client_rss,
			GOAL_MEMORY,
			true,
			true};
	if (m->server_valid)
		g[n++] = (struct rpc_goal){"server connection (VmRSS growth)",
					   "server_connection_bytes",
					   (double)server_conn_bytes(m),
					   GOAL_MEMORY,
					   true,
					   true};
	return n;
}

static bool goal_met(const struct rpc_goal *g)
{
	return g->at_most ? g->value <= g->target : g->value >= g->target;
}

/* ------------------------------------------------------------------- text */

static void text_row(const char *name, const struct bench_figures *f)
{
	if (f->valid)
		printf("%-8s %12.0f %12.1f %10.2f %10.2f\n", name, f->msgs,
		       f->mbps, f->p50, f->p99);
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
	       g->at_most ? "<=" : ">=", g->target / div, g->mib ? " MiB" : "x",
	       g->value / div, g->mib ? " MiB" : "x",
	       goal_met(g) ? "met" : "MISSED");
}

static void text_report(const struct rpc_opts *o, const struct rpc_result *ours,
			const struct rpc_result *base, const struct rpc_goal *g,
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
	printf("MB = 10^6 bytes of data (echo counts it once); latency = "
	       "arguments encoded to results decoded and checked; tirpc: %u "
	       "thread%s, one CLIENT and connection each\n",
	       o->b.depth, o->b.depth == 1 ? "" : "s");
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

static void json_figures(const struct bench_result *r,
			 const struct bench_figures *f)
{
	if (!f->valid) {
		printf("\"calls_per_s\":null,\"MBps\":null,\"p50_us\":null,"
		       "\"p99_us\":null");
		return;
	}
	printf("\"calls_per_s\":%.3f,\"MBps\":%.3f,\"p50_us\":%.3f,"
	       "\"p99_us\":%.3f,\"mean_us\":%.3f,\"min_us\":%.3f,"
	       "\"max_us\":%.3f,\"calls\":%llu,\"bytes\":%llu,"
	       "\"elapsed_s\":%.6f",
	       f->msgs, f->mbps, f->p50, f->p99, f->mean, f->min, f->max,
	       (unsigned long long)r->ops, (unsigned long long)r->bytes,
	       r->elapsed_s);
}

static void json_ratio(const struct bench_figures *us,
		       const struct bench_figures *tcp)
{
	if (!us->valid || !tcp->valid) {
		printf("\"ratio\":null");
		return;
	}
	printf("\"ratio\":{\"calls_per_s\":%.4f,\"MBps\":%.4f,\"p50_us\":%.4f,"
	       "\"p99_us\":%.4f}",
	       bench_ratio(us->msgs, tcp->msgs),
	       bench_ratio(us->mbps, tcp->mbps), bench_ratio(us->p50, tcp->p50),
	       bench_ratio(us->p99, tcp->p99));
}

static void json_counters(const char *key, bool valid,
			  const struct rr_xprt_stats *s)
{
	const char *sep = "";

	if (!valid) {
		printf("\"%s\":null", key);
		return;
	}
	printf("\"%s\":{", key);
#define X(name)                                                                \
	printf("%s\"%s\":%llu", sep, #name, (unsigned long long)s->name);      \
	sep = ",";
	RR_XPRT_STATS_FIELDS(X)
#undef X
	printf("}");
}

static void json_u64(const char *name, bool valid, uint64_t v)
{
	if (valid)
		printf("\"%s\":%llu", name, (unsigned long long)v);
	else
		printf("\"%s\":null", name);
}

static void json_memory(const struct rpc_memory *m)
{
	printf("\"memory\":{");
	json_u64("client_registered_bytes", m->client_valid,
		 m->client_registered);
	printf(",");
	json_u64("client_rss_bytes", m->client_valid, m->client_rss);
	printf(",");
	json_u64("client_rss_before_bytes", m->client_valid,
		 m->client_rss_before);
	printf(",");
	json_u64("server_registered_bytes", m->server_valid,
		 m->server_registered);
	printf(",");
	json_u64("server_rss_bytes", m->server_valid, m->server_rss);
	printf(",");
	json_u64("server_registered_idle_bytes", m->server_valid,
		 m->server_registered_idle);
	printf(",");
	json_u64("server_rss_idle_bytes", m->server_valid, m->server_rss_idle);
	printf("}");
}

static void json_goals(const struct rpc_goal *g, unsigned n)
{
	unsigned i;

	printf("\"goals\":[");
	for (i = 0; i < n; i++)
		printf("%s{\"metric\":\"%s\",\"value\":%.4f,\"op\":\"%s\","
		       "\"target\":%.4f,\"met\":%s}",
		       i ? "," : "", g[i].metric, g[i].value,
		       g[i].at_most ? "<=" : ">=", g[i].target,
		       goal_met(&g[i]) ? "true" : "false");
	printf("]");
}

static void json_report(const struct rpc_opts *o, const struct rpc_result *ours,
			const struct rpc_result *base, const struct rpc_goal *g,
			unsigned ngoals)
{
	struct bench_figures us = bench_figures(&ours->r);
	struct bench_figures tcp = bench_figures(&base->r);

	printf("{\"proc\":\"%s\",\"size\":%u,\"depth\":%u,\"provider\":",
	       rpc_proc_name(o->proc), o->b.size, o->b.depth);
	bench_json_str(o->b.provider);
	printf(",\"addr\":\"%s\"", o->b.addr_str); /* inet_ntop's */
	printf(",\"server_threads\":%u,\"pinned\":%s", o->svc_threads,
	       bench_pinned(&o->b) ? "true" : "false");
	printf(",\"seconds\":%g,\"latency\":\"call_to_checked_result\",",
	       o->b.seconds);
	json_figures(&ours->r, &us);
	printf(",\"baseline\":{\"transport\":\"tirpc-tcp\",\"threads\":%u,",
	       o->b.depth);
	json_figures(&base->r, &tcp);
	printf("},");
	json_ratio(&us, &tcp);
	printf(",");
	json_goals(g, ngoals);
	printf(",");
	json_counters("counters", ours->have_stats, &ours->stats);
	printf(",");
	json_counters("server_counters", ours->have_svc_stats,
		      &ours->svc_stats);
	printf(",");
	json_memory(&ours->mem);
	printf("}\n");
}

void rpc_report(const struct rpc_opts *o, const struct rpc_result *ours,
		const struct rpc_result *base)
{
	struct bench_figures us = bench_figures(&ours->r);
	struct bench_figures tcp = bench_figures(&base->r);
	struct rpc_goal g[5];
	unsigned n;

	n = ratio_goals(o, &us, &tcp, g);
	if (ours->r.done)
		n += memory_goals(o, &ours->mem, g + n);
	if (o->b.json)
		json_report(o, ours, base, g, n);
	else
		text_report(o, ours, base, g, n);
	fflush(stdout);
}
