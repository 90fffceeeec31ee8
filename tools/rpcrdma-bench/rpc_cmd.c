// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * "rpcrdma-bench rpc": options, then our RPC-over-RDMA phase and the
 * libtirpc baseline back to back in one run, so both see the same machine
 * state.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_bench.h"

#define ME "rpcrdma-bench rpc"
/* The baseline runs a thread per call in flight: keep that sane. */
#define MAX_DEPTH   256
#define MAX_MEMORY  (1ull << 30)
#define MAX_SECONDS 86400.0

enum {
	OPT_BASELINE_ONLY = 256,
	OPT_NO_BASELINE,
};

static const struct option rpc_longopts[] = {
	{"proc", required_argument, NULL, 'r'},
	{"size", required_argument, NULL, 's'},
	{"depth", required_argument, NULL, 'd'},
	{"seconds", required_argument, NULL, 't'},
	{"port", required_argument, NULL, 'p'},
	{"provider", required_argument, NULL, 'P'},
	{"json", no_argument, NULL, 'j'},
	{"help", no_argument, NULL, 'h'},
	/* Hidden: run one phase alone (debugging either side). */
	{"baseline-only", no_argument, NULL, OPT_BASELINE_ONLY},
	{"no-baseline", no_argument, NULL, OPT_NO_BASELINE},
	{NULL, 0, NULL, 0},
};

static const char rpc_synopsis[] =
	"usage: rpcrdma-bench rpc --proc null|echo|read|write --size BYTES "
	"--depth N\n"
	"                         --seconds S [--provider iwarp] [--port P] "
	"[--json]\n";

static void rpc_usage(FILE *f)
{
	fprintf(f,
		"%s\n"
		"Serves a test ONC RPC program (benchprog.x) from a forked "
		"child on 127.0.0.1\nand keeps N calls in flight for S "
		"seconds over RPC-over-RDMA, then does the\nsame over TCP "
		"with libtirpc (N threads, one CLIENT each) and compares.\n"
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
		"  --provider NAME  fabric provider (default iwarp)\n"
		"  --json           one JSON object on stdout\n",
		rpc_synopsis, BENCH_MAXDATA, MAX_DEPTH);
}

static int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -errno;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_range(const char *name, const char *s, uint64_t lo,
		       uint64_t hi, uint64_t *out)
{
	if (parse_u64(s, out) || *out < lo || *out > hi) {
		fprintf(stderr, ME ": --%s '%s': expected %llu..%llu\n", name,
			s, (unsigned long long)lo, (unsigned long long)hi);
		return -EINVAL;
	}
	return 0;
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

static int parse_seconds(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out) || *out <= 0 ||
	    *out > MAX_SECONDS) {
		fprintf(stderr,
			ME ": --seconds '%s': expected a number in (0, %.0f]\n",
			s, MAX_SECONDS);
		return -EINVAL;
	}
	return 0;
}

/* Bits of the options every run must name. */
enum { SEEN_PROC = 1, SEEN_SIZE = 2, SEEN_DEPTH = 4, SEEN_SECONDS = 8 };

static int parse_one(int c, struct rpc_opts *o, unsigned *seen)
{
	uint64_t v = 0;
	int err = 0;

	switch (c) {
	case 'r':
		*seen |= SEEN_PROC;
		return parse_proc(optarg, &o->proc);
	case 's':
		*seen |= SEEN_SIZE;
		err = parse_range("size", optarg, 0, BENCH_MAXDATA, &v);
		o->b.size = (uint32_t)v;
		return err;
	case 'd':
		*seen |= SEEN_DEPTH;
		err = parse_range("depth", optarg, 1, MAX_DEPTH, &v);
		o->b.depth = (uint32_t)v;
		return err;
	case 't':
		*seen |= SEEN_SECONDS;
		return parse_seconds(optarg, &o->b.seconds);
	case 'p':
		err = parse_range("port", optarg, 1, 65535, &v);
		o->b.port = (uint16_t)v;
		return err;
	case 'P':
		o->b.provider = optarg;
		return 0;
	case 'j':
		o->b.json = true;
		return 0;
	case OPT_BASELINE_ONLY:
		o->b.baseline_only = true;
		return 0;
	case OPT_NO_BASELINE:
		o->b.no_baseline = true;
		return 0;
	}
	return -EINVAL; /* getopt already said what was wrong */
}

static int check_opts(const struct rpc_opts *o, unsigned seen)
{
	const char *missing = !(seen & SEEN_PROC)      ? "--proc"
			      : !(seen & SEEN_SIZE)    ? "--size"
			      : !(seen & SEEN_DEPTH)   ? "--depth"
			      : !(seen & SEEN_SECONDS) ? "--seconds"
						       : NULL;

	if (missing) {
		fprintf(stderr, ME ": %s is required\n", missing);
		return -EINVAL;
	}
	if (o->proc == BENCHPROC_NULL && o->b.size) {
		fprintf(stderr, ME ": --proc null carries no data: --size 0\n");
		return -EINVAL;
	}
	if ((uint64_t)o->b.size * o->b.depth > MAX_MEMORY) {
		fprintf(stderr,
			ME ": --size x --depth must not exceed %llu bytes\n",
			MAX_MEMORY);
		return -EINVAL;
	}
	if (o->b.baseline_only && o->b.no_baseline) {
		fprintf(stderr, ME ": nothing to run\n");
		return -EINVAL;
	}
	return 0;
}

/* Returns 0, 1 for --help, or -EINVAL after saying what is wrong. */
static int parse_opts(int argc, char **argv, struct rpc_opts *o)
{
	unsigned seen = 0;
	int c;

	memset(o, 0, sizeof(*o));
	o->b.provider = "iwarp";
	optind = 1;
	opterr = 0; /* getopt would name argv[0], "rpc", as the program */
	while ((c = getopt_long(argc, argv, ":h", rpc_longopts, NULL)) != -1) {
		if (c == 'h')
			return 1;
		if (c == '?' || c == ':') {
			fprintf(stderr, ME ": %s '%s'\n",
				c == ':' ? "missing value for"
					 : "unknown option",
				argv[optind - 1]);
			return -EINVAL;
		}
		if (parse_one(c, o, &seen))
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr, ME ": unexpected '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return check_opts(o, seen);
}

/* -ECHILD from a phase means its peer failed, and the peer said why. */
static const char *phase_error(int err)
{
	return err == -ECHILD ? "its server process failed" : strerror(-err);
}

static int run_phases(const struct rpc_opts *o, struct rpc_result *ours,
		      struct rpc_result *base)
{
	int err;

	if (!o->b.baseline_only) {
		err = rpc_ours_run(o, ours);
		if (err) {
			fprintf(stderr, "rpc-over-rdma phase failed: %s\n",
				phase_error(err));
			return err;
		}
	}
	if (!o->b.no_baseline) {
		err = rpc_tirpc_run(o, base);
		if (err) {
			fprintf(stderr, "libtirpc baseline failed: %s\n",
				phase_error(err));
			return err;
		}
	}
	return 0;
}

int bench_cmd_rpc(int argc, char **argv)
{
	struct rpc_result *ours, *base;
	struct rpc_opts o;
	int err;

	err = parse_opts(argc, argv, &o);
	if (err > 0) {
		rpc_usage(stdout);
		return 0;
	}
	if (err) {
		fprintf(stderr, "%s(--help describes the options)\n",
			rpc_synopsis);
		return 2;
	}
	/* Results hold big histograms: heap, not stack. */
	ours = calloc(1, sizeof(*ours));
	base = calloc(1, sizeof(*base));
	if (!ours || !base) {
		fprintf(stderr, "rpcrdma-bench: out of memory\n");
		free(ours);
		free(base);
		return 1;
	}
	bench_hist_reset(&ours->r.hist);
	bench_hist_reset(&base->r.hist);
	err = run_phases(&o, ours, base);
	if (!err)
		rpc_report(&o, ours, base);
	free(ours);
	free(base);
	return err ? 1 : 0;
}
