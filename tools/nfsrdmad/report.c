/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control socket's answer. Text for a person: the procedures that
 * were called, with their errors and the p50/p99 bounds of their latency
 * bucket, then the counters that moved. JSON for a script: every
 * procedure and every counter, zeros too, units in the names. Transport
 * counters are per listener (summed over its connections, what the
 * transports keep), not per connection.
 */
#include "report.h"

#include <time.h>

uint64_t nfsrdmad_report_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t errors_of(const struct ctr_proc *p)
{
	uint64_t n = p->rpc_errors;

	for (int i = 0; i < CTR_NSTATUS; i++)
		n += p->status[i];
	return n;
}

static int xprt_stats(const struct report_xprt *x, struct rr_xprt_stats *st)
{
	return rr_rpc_svc_stats(x->svc, st);
}

static void text_proc(FILE *f, enum ctr_prog g, uint32_t proc,
		      const struct ctr_proc *p)
{
	fprintf(f, "%-6s %-12s %10llu %8llu %9llu %9llu", ctr_prog_name(g),
		ctr_proc_name(g, proc), (unsigned long long)p->calls,
		(unsigned long long)errors_of(p),
		(unsigned long long)ctr_percentile_us(p, 0.5),
		(unsigned long long)ctr_percentile_us(p, 0.99));
	if (p->rpc_errors)
		fprintf(f, " rpc=%llu", (unsigned long long)p->rpc_errors);
	for (uint32_t i = 0; i < CTR_NSTATUS; i++)
		if (p->status[i])
			fprintf(f, " %s=%llu", ctr_status_name(i),
				(unsigned long long)p->status[i]);
	fputc('\n', f);
}

static void text_procs(FILE *f, struct nfsrdmad_counters *c)
{
	struct ctr_proc p;

	fprintf(f, "%-6s %-12s %10s %8s %9s %9s\n", "prog", "procedure",
		"calls", "errors", "p50<us", "p99<us");
	for (int g = 0; g < CTR_NPROGS; g++)
		for (uint32_t i = 0; i < ctr_nprocs(g); i++) {
			nfsrdmad_counters_read(c, g, i, &p);
			if (p.calls)
				text_proc(f, g, i, &p);
		}
}

static void text_xprt(FILE *f, const struct report_xprt *x)
{
	struct rr_xprt_stats st;

	if (xprt_stats(x, &st))
		return;
	fprintf(f, "%s (all connections):", x->name);
#define X(n)                                                                   \
	if (st.n)                                                              \
		fprintf(f, " %s=%llu", #n, (unsigned long long)st.n);
	RR_XPRT_STATS_FIELDS(X)
#undef X
	fputc('\n', f);
}

#define NFS_FIELDS(X)                                                          \
	X(calls)                                                               \
	X(garbage_args)                                                        \
	X(bad_handles)                                                         \
	X(stale_handles)                                                       \
	X(handle_searches)                                                     \
	X(walk_dirs)                                                           \
	X(walks_refused)                                                       \
	X(handle_cache_entries)                                                \
	X(handle_cache_bytes)                                                  \
	X(handle_cache_evicted)

static void text_report(const struct report_src *s, FILE *f)
{
	struct rr_nfs3_server_stats ns;

	fprintf(f,
		"nfsrdmad: up %llu s; latency: the bound of the log2 "
		"bucket the call fell in\n",
		(unsigned long long)(nfsrdmad_report_now_ms() - s->start_ms) /
			1000);
	text_procs(f, s->ctr);
	for (int k = 0; k < s->nx; k++)
		text_xprt(f, &s->x[k]);
	rr_nfs3_exporter_stats(s->nfs, &ns);
	fputs("nfs3 server:", f);
#define X(n) fprintf(f, " %s=%llu", #n, (unsigned long long)ns.n);
	NFS_FIELDS(X)
#undef X
	fprintf(f, "\ncontrol: refused=%lu\n",
		s->ctl ? nfsrdmad_control_refused(s->ctl) : 0ul);
}

static void json_proc(FILE *f, enum ctr_prog g, uint32_t proc,
		      const struct ctr_proc *p, bool last)
{
	const char *sep = "";

	fprintf(f,
		"    {\"program\": \"%s\", \"procedure\": \"%s\", "
		"\"calls\": %llu, \"errors\": %llu, \"rpc_errors\": %llu, "
		"\"errors_by_status\": {",
		ctr_prog_name(g), ctr_proc_name(g, proc),
		(unsigned long long)p->calls, (unsigned long long)errors_of(p),
		(unsigned long long)p->rpc_errors);
	for (uint32_t i = 0; i < CTR_NSTATUS; i++) {
		if (!p->status[i])
			continue;
		fprintf(f, "%s\"%s\": %llu", sep, ctr_status_name(i),
			(unsigned long long)p->status[i]);
		sep = ", ";
	}
	fprintf(f,
		"}, \"latency_us_p50_below\": %llu, "
		"\"latency_us_p99_below\": %llu, \"latency_us_histogram\": [",
		(unsigned long long)ctr_percentile_us(p, 0.5),
		(unsigned long long)ctr_percentile_us(p, 0.99));
	for (int b = 0; b < CTR_BUCKETS; b++)
		fprintf(f, "%s%llu", b ? ", " : "",
			(unsigned long long)p->hist[b]);
	fprintf(f, "]}%s\n", last ? "" : ",");
}

static void json_procs(FILE *f, struct nfsrdmad_counters *c)
{
	struct ctr_proc p;

	fputs("  \"latency_us_bucket_below\": [", f);
	for (uint32_t b = 0; b < CTR_BUCKETS; b++)
		fprintf(f, "%s%llu", b ? ", " : "",
			(unsigned long long)ctr_bucket_le_us(b));
	fputs("],\n  \"procedures\": [\n", f);
	for (int g = 0; g < CTR_NPROGS; g++)
		for (uint32_t i = 0; i < ctr_nprocs(g); i++) {
			nfsrdmad_counters_read(c, g, i, &p);
			json_proc(f, g, i, &p,
				  g == CTR_NPROGS - 1 &&
					  i + 1 == ctr_nprocs(g));
		}
	fputs("  ],\n", f);
}

static void json_xprt(FILE *f, const struct report_xprt *x, bool last)
{
	struct rr_xprt_stats st = {0};
	const char *sep = "";

	xprt_stats(x, &st);
	fprintf(f,
		"    {\"transport\": \"%s\", \"scope\": \"listener\", "
		"\"counters\": {",
		x->name);
#define X(n)                                                                   \
	fprintf(f, "%s\"%s\": %llu", sep, #n, (unsigned long long)st.n);       \
	sep = ", ";
	RR_XPRT_STATS_FIELDS(X)
#undef X
	fprintf(f, "}}%s\n", last ? "" : ",");
}

static void json_report(const struct report_src *s, FILE *f)
{
	struct rr_nfs3_server_stats ns;
	const char *sep = "";

	fprintf(f, "{\n  \"uptime_ms\": %llu,\n",
		(unsigned long long)(nfsrdmad_report_now_ms() - s->start_ms));
	json_procs(f, s->ctr);
	fputs("  \"transports\": [\n", f);
	for (int k = 0; k < s->nx; k++)
		json_xprt(f, &s->x[k], k + 1 == s->nx);
	rr_nfs3_exporter_stats(s->nfs, &ns);
	fputs("  ],\n  \"nfs3_server\": {", f);
#define X(n)                                                                   \
	fprintf(f, "%s\"%s\": %llu", sep, #n, (unsigned long long)ns.n);       \
	sep = ", ";
	NFS_FIELDS(X)
#undef X
	fprintf(f, "},\n  \"control_refused\": %lu\n}\n",
		s->ctl ? nfsrdmad_control_refused(s->ctl) : 0ul);
}

void nfsrdmad_report(void *arg, FILE *f, bool json)
{
	const struct report_src *s = arg;

	if (json)
		json_report(s, f);
	else
		text_report(s, f);
}
