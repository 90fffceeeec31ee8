/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control socket's answer. Text for a person: the procedures that
 * were called, with their errors and the p50/p99 bounds of their latency
 * bucket, then the counters that moved. JSON for a script: every
 * procedure and every counter, zeros too, units in the names. Transport
 * counters are per listener (summed over its connections, what the
 * transports keep), and then per live connection (one line each in text,
 * one object each in JSON), as the transports copied them when asked.
 */
#include "report.h"

#include "alloc_count.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <time.h>

/*
 * Connections shown per listener: the answer stays a few hundred KiB at
 * most; the rest are counted as not shown.
 */
#define CONNS_SHOWN 1024

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

/* A listener's live connections, copied; *more: those not shown. */
static struct rr_svc_conn_info *conns_of(const struct report_xprt *x,
					 uint32_t *n, uint32_t *more)
{
	struct rr_svc_conn_info *v = calloc(CONNS_SHOWN, sizeof(*v));

	*n = *more = 0;
	if (v && rr_rpc_svc_conns(x->svc, v, CONNS_SHOWN, n, more)) {
		*n = *more = 0;
	} else if (!v) {
		/* even without memory the count is worth telling */
		rr_rpc_svc_conns(x->svc, NULL, 0, n, more);
	}
	return v;
}

/* "192.0.2.1:2049" or "[2001:db8::1]:2049": JSON needs no escaping. */
static void peer_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	const struct sockaddr_in *v4 = (const void *)ss;
	const struct sockaddr_in6 *v6 = (const void *)ss;

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &v4->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(v4->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &v6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(v6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

static void text_conn(FILE *f, const struct rr_svc_conn_info *c)
{
	char peer[INET6_ADDRSTRLEN + 8];

	peer_str(&c->peer, peer, sizeof(peer));
	fprintf(f, "  %-4s %-28s %-8s %7llu %9llu %9llu %12llu %12llu %6llu",
		c->netid, peer, c->state, (unsigned long long)c->age_ms / 1000,
		(unsigned long long)c->calls, (unsigned long long)c->replies,
		(unsigned long long)c->bytes_in,
		(unsigned long long)c->bytes_out,
		(unsigned long long)c->errors);
	if (c->credits_granted)
		fprintf(f, " %u/%u", c->credits_used, c->credits_granted);
	fputc('\n', f);
}

/* Under each listener, one line per connection. */
static void text_conns(FILE *f, const struct report_src *s)
{
	fprintf(f, "connections (credits: in use/granted)\n");
	fprintf(f, "  %-4s %-28s %-8s %7s %9s %9s %12s %12s %6s %s\n", "xprt",
		"peer", "state", "age_s", "calls", "replies", "bytes_in",
		"bytes_out", "errors", "credits");
	for (int k = 0; k < s->nx; k++) {
		uint32_t n, more;
		struct rr_svc_conn_info *v = conns_of(&s->x[k], &n, &more);

		fprintf(f, "%s: %u connection%s\n", s->x[k].name, n + more,
			n + more == 1 ? "" : "s");
		for (uint32_t i = 0; i < n; i++)
			text_conn(f, &v[i]);
		if (more)
			fprintf(f, "  %u more not shown\n", more);
		free(v);
	}
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
	X(handle_cache_evicted)                                                \
	X(kept_opens)                                                          \
	X(write_syncs)

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
	text_conns(f, s);
	rr_nfs3_exporter_stats(s->nfs, &ns);
	fputs("nfs3 server:", f);
#define X(n) fprintf(f, " %s=%llu", #n, (unsigned long long)ns.n);
	NFS_FIELDS(X)
#undef X
	fprintf(f, "\ncontrol: refused=%lu\n",
		s->ctl ? tool_control_refused(s->ctl) : 0ul);
	if (s->count_allocs)
		tool_allocs_text(f);
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

static void json_conn(FILE *f, const char *listener,
		      const struct rr_svc_conn_info *c, bool first)
{
	char peer[INET6_ADDRSTRLEN + 8];

	peer_str(&c->peer, peer, sizeof(peer));
	fprintf(f,
		"%s    {\"listener\": \"%s\", \"transport\": \"%s\", "
		"\"peer\": \"%s\", \"state\": \"%s\", "
		"\"since_unix_ms\": %llu, \"age_ms\": %llu, "
		"\"calls\": %llu, \"replies\": %llu, \"bytes_in\": %llu, "
		"\"bytes_out\": %llu, \"errors\": %llu, "
		"\"credits_granted\": %u, \"credits_used\": %u}",
		first ? "" : ",\n", listener, c->netid, peer, c->state,
		(unsigned long long)c->since_ms, (unsigned long long)c->age_ms,
		(unsigned long long)c->calls, (unsigned long long)c->replies,
		(unsigned long long)c->bytes_in,
		(unsigned long long)c->bytes_out, (unsigned long long)c->errors,
		c->credits_granted, c->credits_used);
}

static void json_conns(FILE *f, const struct report_src *s)
{
	unsigned long long hidden = 0;
	bool first = true;

	fputs("  \"connections\": [\n", f);
	for (int k = 0; k < s->nx; k++) {
		uint32_t n, more;
		struct rr_svc_conn_info *v = conns_of(&s->x[k], &n, &more);

		for (uint32_t i = 0; i < n; i++, first = false)
			json_conn(f, s->x[k].name, &v[i], first);
		hidden += more;
		free(v);
	}
	fprintf(f, "%s  ],\n  \"connections_not_shown\": %llu,\n",
		first ? "" : "\n", hidden);
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
	fputs("  ],\n", f);
	json_conns(f, s);
	rr_nfs3_exporter_stats(s->nfs, &ns);
	fputs("  \"nfs3_server\": {", f);
#define X(n)                                                                   \
	fprintf(f, "%s\"%s\": %llu", sep, #n, (unsigned long long)ns.n);       \
	sep = ", ";
	NFS_FIELDS(X)
#undef X
	fprintf(f, "},\n  \"control_refused\": %lu",
		s->ctl ? tool_control_refused(s->ctl) : 0ul);
	if (s->count_allocs) {
		struct jw j;

		fputs(",\n  \"allocations\": ", f);
		jw_init(&j, f);
		tool_allocs_json(&j, NULL);
	}
	fputs("\n}\n", f);
}

void nfsrdmad_report(void *arg, FILE *f, bool json)
{
	const struct report_src *s = arg;

	if (json)
		json_report(s, f);
	else
		text_report(s, f);
}
