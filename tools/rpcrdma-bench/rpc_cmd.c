// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * "rpcrdma-bench rpc": options, then our RPC-over-RDMA phase and the
 * libtirpc baseline back to back in one run, so both see the same machine
 * state.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_bench.h"

#define ME "rpcrdma-bench rpc"
/* The baseline runs a thread per call in flight: keep that sane. */
#define MAX_DEPTH 256
/* Linux's nconnect allows 16. */
#define MAX_CONNS 16

static const struct option rpc_longopts[] = {
	{"proc", required_argument, NULL, 'r'},
	{"server-threads", required_argument, NULL, 'T'},
	{"conns", required_argument, NULL, 'C'},
	{"tirpc-conns", required_argument, NULL, 'c'},
	BENCH_LONGOPTS,
};

static const char rpc_synopsis[] =
	"usage: rpcrdma-bench rpc --proc null|echo|read|write --size BYTES "
	"--depth N\n"
	"                         --seconds S [--provider iwarp] [--port P] "
	"[--json]\n"
	"                         [--server-threads N] [--addr IPV4]\n"
	"                         [--conns N] [--tirpc-conns N]\n";

static void rpc_usage(FILE *f)
{
	fprintf(f,
		"%s\n"
		"Serves a test ONC RPC program (benchprog.x) from a forked "
		"child on --addr\nand keeps N calls in flight for S "
		"seconds over RPC-over-RDMA, then does the\nsame over TCP "
		"with libtirpc (N threads, one CLIENT each) and compares.\n"
		"For read and write it then moves the same data with the "
		"fabric alone\n(RDMA Write for read, RDMA Read for write, "
		"no RPC): the RPC layer's cost.\n"
		"\n"
		"  --proc null|echo|read|write\n"
		"                   null: no data; echo: SIZE bytes there "
		"and back, inline;\n"
		"                   read: SIZE bytes back, write: SIZE bytes "
		"out, both as\n"
		"                   DDP-eligible items (RDMA) on our side\n"
		"  --size BYTES     0..%u (null: 0); K, M suffixes are powers "
		"of 1024\n"
		"  --depth N        calls in flight, 1..%d\n"
		"  --seconds S      run time of each phase, may be "
		"fractional\n"
		"  --port P         our server's port (default: any free "
		"port)\n"
		"  --provider NAME  fabric provider (default iwarp; shm: same "
		"host)\n"
		"  --addr IPV4      the address both sides of both phases use "
		"(default\n"
		"                   127.0.0.1; verbs over Soft-RoCE needs the "
		"device's own)\n"
		"  --server-threads N\n"
		"                   run our server's handlers in a pool of N "
		"workers\n"
		"                   (default 0: in its loop, as libtirpc "
		"does)\n"
		"  --conns N        our client's connections, 1..16 and at "
		"most the depth,\n"
		"                   each with a thread and its share of the "
		"calls (default 1)\n"
		"  --tirpc-conns N  libtirpc's connections, 1..depth (default "
		"depth): the\n"
		"                   N threads share them, one call at a time "
		"on each\n"
		"  --json           one JSON object on stdout\n"
		"  --no-pin         do not pin the client to CPU 0 and the "
		"server to CPU 1\n",
		rpc_synopsis, BENCH_MAXDATA, MAX_DEPTH);
}

static int parse_proc(const char *s, uint32_t *proc)
{
	static const uint32_t procs[] = {BENCHPROC_NULL, BENCHPROC_ECHO,
					 BENCHPROC_READ, BENCHPROC_WRITE};
	size_t i;

	for (i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (!strcmp(s, rpc_proc_name(procs[i]))) {
			*proc = procs[i];
			return 0;
		}
	}
	fprintf(stderr,
		ME ": --proc '%s': expected null, echo, read or write\n", s);
	return -EINVAL;
}

static int rpc_parse_own(const struct bench_cli *cli, int c, const char *arg,
			 struct bench_opts *b, unsigned *seen)
{
	struct rpc_opts *o = rpc_container_of(b, struct rpc_opts, b);
	char *end;
	unsigned long n;

	(void)cli;
	if (c == 'C' || c == 'c') {
		n = strtoul(arg, &end, 10);
		if (*arg < '1' || *arg > '9' || *end || n > MAX_DEPTH) {
			fprintf(stderr,
				ME ": --%sconns '%s': expected a count\n",
				c == 'c' ? "tirpc-" : "", arg);
			return -EINVAL;
		}
		*(c == 'C' ? &o->conns : &o->tirpc_conns) = (uint32_t)n;
		return 0;
	}
	if (c == 'T') {
		n = strtoul(arg, &end, 10);
		if (*arg < '0' || *arg > '9' || *end || n > 64) {
			fprintf(stderr,
				ME ": --server-threads '%s': expected 0..64\n",
				arg);
			return -EINVAL;
		}
		o->svc_threads = (uint32_t)n;
		return 0;
	}
	if (c != 'r')
		return -EINVAL; /* getopt already said what was wrong */
	*seen |= BENCH_SEEN_WHAT;
	return parse_proc(arg, &o->proc);
}

static int rpc_check_own(const struct bench_cli *cli,
			 const struct bench_opts *b)
{
	const struct rpc_opts *o = rpc_opts_of(b);

	(void)cli;
	if (rpc_conns(o) > MAX_CONNS || rpc_conns(o) > b->depth ||
	    rpc_tirpc_conns(o) > b->depth) {
		fprintf(stderr,
			ME ": --conns: 1..%d and at most --depth; "
			   "--tirpc-conns: at most --depth\n",
			MAX_CONNS);
		return -EINVAL;
	}
	if (rpc_opts_of(b)->proc == BENCHPROC_NULL && b->size) {
		fprintf(stderr, ME ": --proc null carries no data: --size 0\n");
		return -EINVAL;
	}
	return 0;
}

/* The phases and the report, on what cmd.c holds of our options/results. */
static struct rpc_result *rpc_result_of(struct bench_result *r)
{
	return rpc_container_of(r, struct rpc_result, r);
}

static int rpc_ours_phase(const struct bench_opts *b, struct bench_result *r)
{
	return rpc_ours_run(rpc_opts_of(b), rpc_result_of(r));
}

static int rpc_tirpc_phase(const struct bench_opts *b, struct bench_result *r)
{
	return rpc_tirpc_run(rpc_opts_of(b), rpc_result_of(r));
}

static int rpc_report_phases(const struct bench_opts *b,
			     const struct bench_result *ours,
			     const struct bench_result *base)
{
	return rpc_report(rpc_opts_of(b),
			  rpc_container_of(ours, const struct rpc_result, r),
			  rpc_container_of(base, const struct rpc_result, r));
}

/* cmd.c allocates results as result_size bytes holding a bench_result. */
_Static_assert(offsetof(struct rpc_result, r) == 0,
	       "struct rpc_result must start with its bench_result");

static const struct bench_cli rpc_cli = {
	.me = ME,
	.longopts = rpc_longopts,
	.synopsis = rpc_synopsis,
	.usage = rpc_usage,
	.what = "--proc",
	.size_min = 0,
	.size_max = BENCH_MAXDATA,
	.depth_max = MAX_DEPTH,
	.max_shift = 20,
	.parse_own = rpc_parse_own,
	.check_own = rpc_check_own,
	.ours = {"rpc-over-rdma phase", rpc_ours_phase},
	.base = {"libtirpc baseline", rpc_tirpc_phase},
	.peer_failed = "its server process failed",
	.result_size = sizeof(struct rpc_result),
	.report = rpc_report_phases,
};

int bench_cmd_rpc(int argc, char **argv)
{
	struct rpc_opts o;

	memset(&o, 0, sizeof(o));
	return bench_cli_run(&rpc_cli, argc, argv, &o.b);
}
