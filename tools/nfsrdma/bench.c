// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfsrdma bench: READs or WRITEs of --bs bytes, sequential or random over
 * the file at URL (a 64 MiB region of it at most), --depth calls in flight
 * from one thread (rr_nfs_stream), for --seconds. Prints throughput, IOPS
 * and latency percentiles.
 *
 * When URL is RDMA, the same run is repeated over our TCP transport to the
 * same server (its NFS/TCP port: --tcp-nfsport, else the default or
 * rpcbind) and the ratio printed: the machine is shared and noisy, so only
 * a baseline measured in the same run means anything. For a sequential
 * read of a file the bench reads whole (64 MiB at most), libnfs's nfs-cp
 * (when installed) also copies it from the same server over TCP, as a
 * client nobody here wrote: the same bytes, not a larger file.
 *
 * --op write writes only into a file it creates (O_EXCL), since it
 * overwrites the first 64 MiB, unless --force; its TCP baseline then
 * writes the same file again. With --fsync the COMMIT that ends it is
 * timed too: what was stored, not what the server's memory took.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/fabric.h>

#include "bench_json.h"
#include "copy_limits.h"
#include "serve_limit.h"
#include "nfsrdma.h"

#define REGION	  (64ull << 20)
#define MAX_SAMPL (1u << 22)
/* rdma MB/s over nfs-cp's, reading the same bytes */
#define GOAL_LIBNFS_RATIO 1.2

struct result {
	bool ok;
	double secs;
	uint64_t ops, bytes;
	uint32_t p50, p99, min, max;
	double mean;
	uint64_t region, file_size; /* bytes the run used, of the file's */
	bool commit_timed;	    /* --fsync: the closing COMMIT counted */
};

/* libnfs's nfs-cp of the whole file: timed as a whole, no latencies. */
struct copy {
	bool ok;
	uint64_t bytes;
	double secs;
	char *url; /* what it copied */
};

/*
 * shm: what the host can copy (copy_limits.h), of the bench's block size
 * and depth, by the call the data moves with: a READ's is RDMA Written
 * into us, which we pull (process_vm_readv); a WRITE's is RDMA Read by
 * the server, which we push (process_vm_writev).
 */
struct limits {
	bool ok, read;
	struct copy_limit mem, cma;
	/* a run against this host: one thread's READs or WRITEs
	 * (serve_limit.h) */
	bool srv_ok, srv_tcp, srv_write;
	struct copy_limit srv;
};

/* What cmd_bench measured, for the report. */
struct runs {
	uint32_t depth;
	const struct result *rd; /* NULL: the URL is TCP */
	struct result tcp;	 /* the TCP URL's, or the baseline's */
	char *burl;		 /* the baseline's URL; NULL: none */
	struct copy lib;
	struct limits lim;
};

struct bench {
	struct cli *c;
	bool write, rnd;
	uint64_t bs, region, cursor, end_ns;
	uint64_t rng;
	uint8_t *bufs;	     /* depth buffers of bs bytes */
	uint32_t *free_bufs; /* indices of idle buffers */
	uint32_t nfree;
	uint64_t *t_issue; /* per buffer */
	uint32_t *lat_us;  /* samples */
	size_t nlat;
	uint64_t ops, bytes;
	uint64_t file_size;
	int err;
};

static uint64_t next_rand(struct bench *b)
{
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return b->rng;
}

static bool next_io(void *arg, struct rr_nfs_io *io)
{
	struct bench *b = arg;
	uint64_t slots = b->region / b->bs, now = now_ns();
	uint32_t i;

	if (b->err || now >= b->end_ns || !b->nfree)
		return false;
	i = b->free_bufs[--b->nfree];
	io->buf = b->bufs + (size_t)i * b->bs;
	io->len = b->bs;
	io->off = (b->rnd ? next_rand(b) % slots : b->cursor++ % slots) * b->bs;
	io->user = (void *)(uintptr_t)i;
	b->t_issue[i] = now;
	return true;
}

static void io_done(void *arg, struct rr_nfs_io *io)
{
	struct bench *b = arg;
	uint32_t i = (uint32_t)(uintptr_t)io->user;

	b->free_bufs[b->nfree++] = i;
	if (io->result != (ssize_t)io->len) {
		if (!b->err)
			b->err = io->result < 0 ? (int)io->result : -EIO;
		return;
	}
	b->ops++;
	b->bytes += io->len;
	if (b->nlat < MAX_SAMPL)
		b->lat_us[b->nlat++] =
			(uint32_t)((now_ns() - b->t_issue[i]) / 1000);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t pct(const struct bench *b, double p)
{
	size_t i;

	if (!b->nlat)
		return 0;
	i = (size_t)ceil(p / 100 * (double)b->nlat);
	return b->lat_us[i ? i - 1 : 0];
}

static double mean_us(const struct bench *b)
{
	double sum = 0;

	for (size_t i = 0; i < b->nlat; i++)
		sum += b->lat_us[i];
	return b->nlat ? sum / (double)b->nlat : 0;
}

/* For reads, a file too small for one block is filled first. */
static int prepare(struct bench *b, struct rr_nfs_file *f, const char *url)
{
	struct stat st;
	int rc = rr_nfs_fstat(f, &st);

	if (rc)
		return cli_fail(url, rc);
	b->file_size = (uint64_t)st.st_size;
	b->region = b->write || (uint64_t)st.st_size > REGION
			    ? REGION
			    : (uint64_t)st.st_size;
	if (b->region >= b->bs)
		return 0;
	return cli_failf("bench: %s holds less than --bs; put a file there "
			 "or use --op write first",
			 url);
}

static int open_file(struct bench *b, struct rr_nfs *n, const char *url,
		     struct rr_nfs_file **f)
{
	const char *path = rr_nfs_url_path(n);
	bool excl = b->write && !b->c->force && !b->c->bench_created;
	int rc = b->write ? rr_nfs_open(n, path,
					O_RDWR | O_CREAT | (excl ? O_EXCL : 0),
					0644, f)
			  : rr_nfs_open(n, path, O_RDONLY, 0, f);

	if (rc == -EEXIST && excl)
		return cli_failf("bench --op write: %s exists and would be "
				 "overwritten: name a new file (the bench "
				 "creates it) or give --force",
				 url);
	if (rc)
		return cli_fail(url, rc);
	if (excl)
		b->c->bench_created = true; /* ours: the baseline may write */
	rc = prepare(b, *f, url);
	if (rc)
		rr_nfs_close(*f);
	return rc;
}

static int alloc_bench(struct bench *b, uint32_t depth)
{
	b->bufs = calloc(depth, b->bs);
	b->free_bufs = calloc(depth, sizeof(*b->free_bufs));
	b->t_issue = calloc(depth, sizeof(*b->t_issue));
	b->lat_us = malloc(MAX_SAMPL * sizeof(*b->lat_us));
	if (!b->bufs || !b->free_bufs || !b->t_issue || !b->lat_us)
		return -ENOMEM;
	for (uint32_t i = 0; i < depth; i++)
		b->free_bufs[b->nfree++] = i;
	return 0;
}

static void free_bench(struct bench *b)
{
	free(b->bufs);
	free(b->free_bufs);
	free(b->t_issue);
	free(b->lat_us);
}

static int stream(struct bench *b, struct rr_nfs_file *f, uint32_t depth,
		  struct result *r)
{
	uint64_t t0 = now_ns();
	int rc;

	b->end_ns = t0 + (uint64_t)(b->c->seconds * 1e9);
	rc = rr_nfs_stream(f, b->write, depth, next_io, io_done, b);
	if (!rc)
		rc = b->err;
	if (!rc && b->write && b->c->fsync)
		rc = rr_nfs_fsync(f);
	if (rc)
		return cli_fail("bench", rc);
	qsort(b->lat_us, b->nlat, sizeof(*b->lat_us), cmp_u32);
	*r = (struct result){.ok = true,
			     .secs = (double)(now_ns() - t0) / 1e9,
			     .ops = b->ops,
			     .bytes = b->bytes,
			     .p50 = pct(b, 50),
			     .p99 = pct(b, 99),
			     .min = b->nlat ? b->lat_us[0] : 0,
			     .max = b->nlat ? b->lat_us[b->nlat - 1] : 0,
			     .mean = mean_us(b),
			     .region = b->region,
			     .file_size = b->file_size,
			     .commit_timed = b->write && b->c->fsync};
	return 0;
}

/* One run against url; quiet_mount: a failure is only a note. */
static int run_one(struct cli *c, const char *url, bool quiet_mount,
		   struct result *r)
{
	uint32_t depth = c->o.depth ? c->o.depth : 16;
	struct bench b = {.c = c, .bs = c->size, .rng = 0x9e3779b97f4a7c15ull};
	struct rr_nfs_file *f;
	struct rr_nfs *n;
	int rc;

	b.write = strstr(c->rw, "write") != NULL;
	b.rnd = !strncmp(c->rw, "rand", 4);
	if (quiet_mount ? rr_nfs_mount(url, &c->o, &n) : cli_mount(c, url, &n))
		return 1;
	if (b.bs > (b.write ? rr_nfs_max_write(n) : rr_nfs_max_read(n)))
		rc = cli_failf("bench: --bs is over this mount's largest %s "
			       "(%u)",
			       b.write ? "WRITE" : "READ",
			       b.write ? rr_nfs_max_write(n)
				       : rr_nfs_max_read(n));
	else
		rc = alloc_bench(&b, depth) ? cli_fail("bench", -ENOMEM)
					    : open_file(&b, n, url, &f);
	if (!rc) {
		/*
		 * As an application with O_DIRECT buffers: the data moves
		 * without a copy (over TCP there is nothing to register).
		 */
		bool reg = !rr_nfs_mem_reg(n, b.bufs, (size_t)depth * b.bs);

		rc = stream(&b, f, depth, r);
		rr_nfs_close(f);
		if (reg)
			rr_nfs_mem_unreg(n, b.bufs);
	}
	cli_umount(c, n);
	free_bench(&b);
	return rc;
}

static double mbs(const struct result *r)
{
	return r->ok ? (double)r->bytes / r->secs / 1e6 : 0;
}

static double iops(const struct result *r)
{
	return r->ok ? (double)r->ops / r->secs : 0;
}

static double copy_mbs(const struct copy *k)
{
	return k->ok && k->secs > 0 ? (double)k->bytes / k->secs / 1e6 : 0;
}

static struct bjson_figures json_figures(const struct result *r)
{
	struct bjson_figures f = bjson_figures_none();

	if (!r->ok)
		return f;
	f.ops = (double)r->ops;
	f.bytes = (double)r->bytes;
	f.elapsed_s = r->secs;
	f.mbps = mbs(r);
	f.ops_per_s = iops(r);
	f.p50_us = r->p50;
	f.p99_us = r->p99;
	f.mean_us = r->mean;
	f.min_us = r->min;
	f.max_us = r->max;
	return f;
}

static struct bjson_figures copy_figures(const struct copy *k)
{
	struct bjson_figures f = bjson_figures_none();

	f.bytes = (double)k->bytes;
	f.elapsed_s = k->secs;
	f.mbps = copy_mbs(k);
	return f;
}

static double limit_mbs(const struct copy_limit *l)
{
	return l->secs > 0 ? (double)l->bytes / l->secs / 1e6 : 0;
}

static struct bjson_figures limit_figures(const struct copy_limit *l)
{
	struct bjson_figures f = bjson_figures_none();

	f.ops = (double)l->ops;
	f.bytes = (double)l->bytes;
	f.elapsed_s = l->secs;
	f.mbps = limit_mbs(l);
	f.ops_per_s = l->secs > 0 ? (double)l->ops / l->secs : 0;
	return f;
}

/* The baselines that ran: our TCP transport, libnfs's nfs-cp, limits. */
static unsigned json_baselines(const struct runs *m, struct bjson_baseline *b)
{
	unsigned n = 0;

	if (m->lim.ok) {
		b[n++] = (struct bjson_baseline){
			.name = "memcpy",
			.transport = "memory",
			.fig = limit_figures(&m->lim.mem)};
		b[n++] = (struct bjson_baseline){
			.name = copy_limits_cma_name(m->lim.read),
			.transport = "memory",
			.fig = limit_figures(&m->lim.cma)};
	}

	if (m->rd && m->tcp.ok)
		b[n++] = (struct bjson_baseline){.name = "tcp",
						 .transport = "tcp",
						 .target = m->burl,
						 .fig = json_figures(&m->tcp)};
	if (m->rd && m->lib.ok)
		b[n++] = (struct bjson_baseline){.name = "libnfs",
						 .transport = "tcp",
						 .target = m->lib.url,
						 .fig = copy_figures(&m->lib)};
	if (m->lim.srv_ok)
		b[n++] = (struct bjson_baseline){
			.name = m->lim.srv_write ? "server_write_limit"
						 : "server_read_limit",
			.transport = m->lim.srv_tcp ? "tcp" : "memory",
			.fig = limit_figures(&m->lim.srv)};
	return n;
}

static struct bjson_goal libnfs_goal(const struct runs *m)
{
	return (struct bjson_goal){"ratio.MBps", "libnfs",
				   mbs(m->rd) / copy_mbs(&m->lib),
				   GOAL_LIBNFS_RATIO, false};
}

static void json_details(struct jw *j, const void *arg)
{
	const struct result *r = arg;

	jw_u64(j, "region_bytes", r->region);
	jw_u64(j, "file_bytes", r->file_size);
	jw_bool(j, "commit_timed", r->commit_timed);
}

static int report_json(const struct cli *c, const struct rr_nfs_url *u,
		       const struct runs *m)
{
	const struct result *ours = m->rd ? m->rd : &m->tcp;
	struct bjson_baseline b[5];
	struct bjson_goal g;
	struct bjson_report r = {
		.program = "nfsrdma",
		.subcommand = "bench",
		.version = RR_VERSION,
		.operation = c->rw,
		.size_bytes = c->size,
		.depth = m->depth,
		.seconds = c->seconds,
		.latency = "call_to_reply",
		.target = c->argv[0],
		.transport = m->rd ? "rdma" : "tcp",
		.provider = !m->rd	  ? NULL
			    : u->provider ? u->provider
					  : rr_fabric_default_provider(),
		.fig = json_figures(ours),
		.baselines = b,
		.nbaselines = json_baselines(m, b),
		.goals = &g,
		.details = json_details,
		.details_arg = ours,
	};

	if (m->rd && m->lib.ok) {
		g = libnfs_goal(m);
		r.ngoals = 1;
	}
	return bjson_report_write(stdout, &r);
}

static void row(const char *name, const struct result *r)
{
	printf("%-8s %12.1f %12.0f %10u %10u\n", name, mbs(r), iops(r), r->p50,
	       r->p99);
}

static void report_libnfs(const struct runs *m)
{
	struct bjson_goal g = libnfs_goal(m);

	printf("%-8s %12.1f %12s %10s %10s   (nfs-cp, the same bytes)\n",
	       "libnfs", copy_mbs(&m->lib), "-", "-", "-");
	printf("%-8s %11.2fx   rdma / libnfs (goal >= %.1fx, %s)\n", "ratio",
	       g.value, g.target, bjson_goal_met(&g) ? "met" : "missed");
}

static void report_limits(const struct runs *m)
{
	const struct limits *l = &m->lim;
	const char *name = copy_limits_cma_name(l->read);
	double mem = limit_mbs(&l->mem), cma = limit_mbs(&l->cma);

	printf("%-8s %12.1f %12.0f %10s %10s\n", "memcpy", mem,
	       (double)l->mem.ops / l->mem.secs, "-", "-");
	printf("%-8s %12.1f %12.0f %10s %10s   (%s)\n", "cma", cma,
	       (double)l->cma.ops / l->cma.secs, "-", "-", name);
	printf("%-8s %11.2fx   rdma / memcpy; %.2fx rdma / %s\n", "ratio",
	       mbs(m->rd) / mem, mbs(m->rd) / cma, name);
}

/* What one thread of the server row does per call. */
static const char *limit_calls(const struct limits *l)
{
	if (l->srv_write && l->srv_tcp)
		return "receive on loopback TCP, statx, pwritev, statx";
	if (l->srv_write)
		return "statx, pwritev, statx";
	if (l->srv_tcp)
		return "statx, preadv2, send on loopback TCP";
	return "statx, preadv2";
}

static void report_serve_limit(const struct runs *m)
{
	const struct copy_limit *l = &m->lim.srv;

	printf("%-8s %12.1f %12.0f %10s %10s   (one thread: %s; no RPC)\n",
	       "server", limit_mbs(l), (double)l->ops / l->secs, "-", "-",
	       limit_calls(&m->lim));
	printf("%-8s %11.2fx   rdma / server", "ratio",
	       mbs(m->rd) / limit_mbs(l));
	/* what a transport costing nothing reaches where one thread serves */
	if (m->tcp.ok && mbs(&m->tcp) > 0)
		printf("; %.2fx server / tcp", limit_mbs(l) / mbs(&m->tcp));
	printf("\n");
}

static void report_text(const struct cli *c, const struct runs *m)
{
	const struct result *rd = m->rd, *tcp = &m->tcp;

	printf("bench %s: bs %" PRIu64 " B, depth %u, %.0f s per run\n", c->rw,
	       c->size, m->depth, c->seconds);
	printf("%-8s %12s %12s %10s %10s\n", "", "MB/s", "IOPS", "p50 us",
	       "p99 us");
	if (rd)
		row("rdma", rd);
	if (tcp->ok)
		row("tcp", tcp);
	if (rd && tcp->ok && mbs(tcp) > 0 && rd->p50)
		printf("%-8s %11.2fx %11.2fx %9.2fx\n", "ratio",
		       mbs(rd) / mbs(tcp), iops(rd) / iops(tcp),
		       (double)tcp->p50 / rd->p50);
	if (rd && m->lib.ok)
		report_libnfs(m);
	if (rd && m->lim.ok)
		report_limits(m);
	if (rd && m->lim.srv_ok)
		report_serve_limit(m);
}

/* 0, or 1 when stdout failed (said on stderr). */
static int report(const struct cli *c, const struct rr_nfs_url *u,
		  const struct runs *m)
{
	int rc = 0;

	if (c->json)
		rc = report_json(c, u, m);
	else
		report_text(c, m);
	if (!rc && (fflush(stdout) || ferror(stdout)))
		rc = -EIO;
	return rc ? cli_fail("stdout", rc) : 0;
}

/* The same URL over TCP, or NULL when its port is not known. */
static char *baseline_url(const struct cli *c, const struct rr_nfs_url *u,
			  const char *url)
{
	char *b;

	if (u->nfsport && !c->tcp_nfsport) {
		fprintf(stderr, "bench: no TCP baseline: the URL sets nfsport;"
				" give --tcp-nfsport\n");
		return NULL;
	}
	if (asprintf(&b, "%s%sproto=tcp&nfsport=%u", url,
		     strchr(url, '?') ? "&" : "?",
		     c->tcp_nfsport ? c->tcp_nfsport : RR_NFS_PORT_TCP) < 0)
		return NULL;
	return b;
}

/* nfs-cp's command line: its URL, to k->url, and the copy's path. */
static char *libnfs_cmd(const struct cli *c, const struct rr_nfs_url *u,
			const char *file, struct copy *k)
{
	uint16_t nport = c->tcp_nfsport ? c->tcp_nfsport : RR_NFS_PORT_TCP;
	char *cmd;

	if (asprintf(&k->url, "nfs://%s%s?nfsport=%u&mountport=%u", u->host,
		     u->path, nport,
		     u->mountport ? u->mountport : RR_NFS_PORT_MOUNT) < 0) {
		k->url = NULL;
		return NULL;
	}
	if (asprintf(&cmd, "nfs-cp '%s' '%s' 2>/dev/null", k->url, file) < 0)
		return NULL;
	return cmd;
}

/*
 * libnfs's nfs-cp of the whole file over TCP into a new file in memory (it
 * writes neither to /dev/null nor over a file). k->ok stays false when it
 * is not installed, the ports are not known or it failed.
 */
static void libnfs_copy(const struct cli *c, const struct rr_nfs_url *u,
			struct copy *k)
{
	char dir[] = "/dev/shm/nfsrdma-bench-XXXXXX", file[64];
	unsigned long long bytes = 0;
	struct timespec t0, t1;
	char *cmd, line[256];
	FILE *p = NULL;
	int st = -1;

	if (strchr(u->host, '\'') || strchr(u->path, '\'') || !mkdtemp(dir))
		return; /* not worth quoting for a comparison */
	snprintf(file, sizeof(file), "%s/copy", dir);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cmd = libnfs_cmd(c, u, file, k);
	if (cmd) {
		p = popen(cmd, "r");
		free(cmd);
	}
	while (p && fgets(line, sizeof(line), p))
		sscanf(line, "copied %llu bytes", &bytes);
	if (p)
		st = pclose(p);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	unlink(file);
	rmdir(dir);
	k->bytes = bytes;
	k->secs = (double)(t1.tv_sec - t0.tv_sec) +
		  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	k->ok = !st && bytes && k->secs > 0;
}

static bool valid_op(const char *op)
{
	return !strcmp(op, "read") || !strcmp(op, "write") ||
	       !strcmp(op, "randread") || !strcmp(op, "randwrite");
}

static bool loopback(const char *host)
{
	return !strncmp(host, "127.", 4) || !strcmp(host, "::1") ||
	       !strcmp(host, "localhost");
}

/*
 * A run against a server on this host: what one thread serving those READs
 * or WRITEs could do here without RPC, over the wire the provider uses
 * (iwarp's is loopback TCP; shm's rings are memory).
 */
static void run_serve_limit(const struct cli *c, const struct rr_nfs_url *u,
			    struct runs *m)
{
	const char *prov =
		u->provider ? u->provider : rr_fabric_default_provider();
	struct serve_limit_opts o = {.size = c->size,
				     .random = !strncmp(c->rw, "rand", 4),
				     .write = strstr(c->rw, "write") != NULL,
				     .tcp = strcmp(prov, "shm") != 0,
				     .seconds = c->seconds};
	int err;

	if (!loopback(u->host) ||
	    (strcmp(prov, "shm") && strcmp(prov, "iwarp")))
		return;
	err = serve_limit_run(&o, &m->lim.srv);
	if (err)
		fprintf(stderr, "bench: no server limit: %s\n", strerror(-err));
	m->lim.srv_tcp = o.tcp;
	m->lim.srv_write = o.write;
	m->lim.srv_ok = err == 0 && m->lim.srv.secs > 0;
}

static void run_limits(const struct cli *c, const struct rr_nfs_url *u,
		       struct runs *m)
{
	struct copy_limit_opts o = {.size = c->size,
				    .depth = m->depth,
				    .seconds = c->seconds,
				    .read = strstr(c->rw, "read") != NULL};
	int err;

	if (!m->rd || c->no_baseline)
		return;
	run_serve_limit(c, u, m);
	if (!u->provider || strcmp(u->provider, "shm"))
		return;
	m->lim.read = o.read;
	err = copy_limits_run(&o, &m->lim.mem, &m->lim.cma);
	if (err)
		fprintf(stderr, "bench: no copy limits: %s\n", strerror(-err));
	m->lim.ok = err == 0 && m->lim.mem.secs > 0 && m->lim.cma.secs > 0;
}

/* The baselines of an RDMA run: our TCP transport, libnfs, limits. */
static void run_baselines(struct cli *c, const struct rr_nfs_url *u,
			  struct runs *m)
{
	run_limits(c, u, m);
	if (!m->burl)
		return;
	if (run_one(c, m->burl, true, &m->tcp))
		fprintf(stderr, "bench: TCP baseline skipped: %s\n",
			rr_nfs_error()[0] ? rr_nfs_error() : "it failed");
	if (strcmp(c->rw, "read"))
		return;
	if (m->rd->region < m->rd->file_size)
		fprintf(stderr,
			"bench: no libnfs baseline: nfs-cp would copy "
			"all %" PRIu64 " bytes of the file, the bench "
			"reads its first %" PRIu64 "\n",
			m->rd->file_size, m->rd->region);
	else
		libnfs_copy(c, u, &m->lib);
}

int cmd_bench(struct cli *c)
{
	struct runs m = {.depth = c->o.depth ? c->o.depth : 16};
	struct result rd = {0};
	struct rr_nfs_url u;
	int rc;

	if (!valid_op(c->rw))
		return cli_failf("bench: --op read|write|randread|randwrite, "
				 "not '%s'",
				 c->rw);
	if (rr_nfs_url_parse(c->argv[0], &u))
		return cli_failf("%s: %s", c->argv[0], rr_nfs_error());
	if (u.proto == RR_NFS_PROTO_RDMA)
		m.rd = &rd;
	if (m.rd && !c->no_baseline)
		m.burl = baseline_url(c, &u, c->argv[0]);
	c->o.depth = m.depth; /* bounce buffers for every call in flight */
	rc = run_one(c, c->argv[0], false, m.rd ? &rd : &m.tcp);
	if (!rc) {
		run_baselines(c, &u, &m);
		rc = report(c, &u, &m);
	}
	free(m.burl);
	free(m.lib.url);
	rr_nfs_url_free(&u);
	return rc;
}
