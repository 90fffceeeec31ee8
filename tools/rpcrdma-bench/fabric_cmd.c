// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * "rpcrdma-bench fabric": options, then the fabric phase and the TCP
 * baseline back to back in one run, so both see the same machine state.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_SIZE    (1u << 30)
#define MAX_DEPTH   4096
#define MAX_MEMORY  (1ull << 30)
#define MAX_SECONDS 86400.0

enum {
	OPT_BASELINE_ONLY = 256,
	OPT_NO_BASELINE,
};

static const struct option fabric_longopts[] = {
	{"op", required_argument, NULL, 'o'},
	{"size", required_argument, NULL, 's'},
	{"depth", required_argument, NULL, 'd'},
	{"seconds", required_argument, NULL, 't'},
	{"port", required_argument, NULL, 'p'},
	{"provider", required_argument, NULL, 'P'},
	{"crc", no_argument, NULL, 'c'},
	{"json", no_argument, NULL, 'j'},
	{"help", no_argument, NULL, 'h'},
	/* Hidden: run one phase alone (debugging either side). */
	{"baseline-only", no_argument, NULL, OPT_BASELINE_ONLY},
	{"no-baseline", no_argument, NULL, OPT_NO_BASELINE},
	{NULL, 0, NULL, 0},
};

static const char fabric_synopsis[] =
	"usage: rpcrdma-bench fabric --op write|read|send --size BYTES "
	"--depth N\n"
	"                            --seconds S [--port P] [--crc] [--json]\n"
	"                            [--provider iwarp]\n";

static void fabric_usage(FILE *f)
{
	fprintf(f,
		"usage: rpcrdma-bench fabric --op write|read|send --size BYTES "
		"--depth N\n"
		"                            --seconds S [--port P] [--crc] "
		"[--json]\n"
		"                            [--provider iwarp]\n"
		"\n"
		"Runs a peer in a forked child on 127.0.0.1 and keeps N "
		"operations "
		"of SIZE\nbytes in flight for S seconds, then does the same "
		"over "
		"raw TCP and compares.\n"
		"\n"
		"  --op write|read|send  RDMA Write, RDMA Read, or Send "
		"answered "
		"by a Send\n"
		"  --size BYTES          1..1G; K, M, G suffixes are powers of "
		"1024\n"
		"  --depth N             operations in flight, 1..%d\n"
		"  --seconds S           run time of each phase, may be "
		"fractional\n"
		"  --port P              fabric peer port (default: any free "
		"port)\n"
		"  --crc                 ask for MPA CRC32c\n"
		"  --json                one JSON object on stdout\n"
		"  --provider NAME       fabric provider (default iwarp)\n",
		MAX_DEPTH);
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
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10, end++;
		break;
	case 'm':
	case 'M':
		v <<= 20, end++;
		break;
	case 'g':
	case 'G':
		v <<= 30, end++;
		break;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_range(const char *name, const char *s, uint64_t lo,
		       uint64_t hi, uint64_t *out)
{
	if (parse_u64(s, out) || *out < lo || *out > hi) {
		fprintf(stderr,
			"rpcrdma-bench fabric: --%s '%s': expected "
			"%llu..%llu\n",
			name, s, (unsigned long long)lo,
			(unsigned long long)hi);
		return -EINVAL;
	}
	return 0;
}

static int parse_op(const char *s, enum bench_op *op)
{
	if (!strcmp(s, "write"))
		*op = BENCH_OP_WRITE;
	else if (!strcmp(s, "read"))
		*op = BENCH_OP_READ;
	else if (!strcmp(s, "send"))
		*op = BENCH_OP_SEND;
	else {
		fprintf(stderr,
			"rpcrdma-bench fabric: --op '%s': expected write, read "
			"or send\n",
			s);
		return -EINVAL;
	}
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out) || *out <= 0 ||
	    *out > MAX_SECONDS) {
		fprintf(stderr,
			"rpcrdma-bench fabric: --seconds '%s': expected a "
			"number in (0, %.0f]\n",
			s, MAX_SECONDS);
		return -EINVAL;
	}
	return 0;
}

/* Bits of the options every run must name. */
enum { SEEN_OP = 1, SEEN_SIZE = 2, SEEN_DEPTH = 4, SEEN_SECONDS = 8 };

static int parse_one(int c, struct bench_opts *o, unsigned *seen)
{
	uint64_t v;
	int err = 0;

	switch (c) {
	case 'o':
		*seen |= SEEN_OP;
		return parse_op(optarg, &o->op);
	case 's':
		*seen |= SEEN_SIZE;
		err = parse_range("size", optarg, 1, MAX_SIZE, &v);
		o->size = (uint32_t)v;
		return err;
	case 'd':
		*seen |= SEEN_DEPTH;
		err = parse_range("depth", optarg, 1, MAX_DEPTH, &v);
		o->depth = (uint32_t)v;
		return err;
	case 't':
		*seen |= SEEN_SECONDS;
		return parse_seconds(optarg, &o->seconds);
	case 'p':
		err = parse_range("port", optarg, 1, 65535, &v);
		o->port = (uint16_t)v;
		return err;
	case 'P':
		o->provider = optarg;
		return 0;
	case 'c':
		o->crc = true;
		return 0;
	case 'j':
		o->json = true;
		return 0;
	case OPT_BASELINE_ONLY:
		o->baseline_only = true;
		return 0;
	case OPT_NO_BASELINE:
		o->no_baseline = true;
		return 0;
	}
	return -EINVAL; /* getopt already said what was wrong */
}

static int check_opts(const struct bench_opts *o, unsigned seen)
{
	const char *missing = !(seen & SEEN_OP)	       ? "--op"
			      : !(seen & SEEN_SIZE)    ? "--size"
			      : !(seen & SEEN_DEPTH)   ? "--depth"
			      : !(seen & SEEN_SECONDS) ? "--seconds"
						       : NULL;

	if (missing) {
		fprintf(stderr, "rpcrdma-bench fabric: %s is required\n",
			missing);
		return -EINVAL;
	}
	if ((uint64_t)o->size * o->depth > MAX_MEMORY) {
		fprintf(stderr,
			"rpcrdma-bench fabric: --size x --depth must not "
			"exceed "
			"%llu bytes\n",
			MAX_MEMORY);
		return -EINVAL;
	}
	if (o->baseline_only && o->no_baseline) {
		fprintf(stderr, "rpcrdma-bench fabric: nothing to run\n");
		return -EINVAL;
	}
	return 0;
}

/* Returns 0, 1 for --help, or -EINVAL after saying what is wrong. */
static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
	unsigned seen = 0;
	int c;

	memset(o, 0, sizeof(*o));
	o->provider = "iwarp";
	optind = 1;
	opterr = 0; /* getopt would name argv[0], "fabric", as the program */
	while ((c = getopt_long(argc, argv, ":h", fabric_longopts, NULL)) !=
	       -1) {
		if (c == 'h')
			return 1;
		if (c == '?' || c == ':') {
			fprintf(stderr, "rpcrdma-bench fabric: %s '%s'\n",
				c == ':' ? "missing value for"
					 : "unknown option",
				argv[optind - 1]);
			return -EINVAL;
		}
		if (parse_one(c, o, &seen))
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr, "rpcrdma-bench fabric: unexpected '%s'\n",
			argv[optind]);
		return -EINVAL;
	}
	return check_opts(o, seen);
}

/* -ECHILD from a phase means its peer failed, and the peer said why. */
static const char *phase_error(int err)
{
	return err == -ECHILD ? "its peer process failed" : strerror(-err);
}

static int run_phases(const struct bench_opts *o, struct bench_result *ours,
		      struct bench_result *base)
{
	int err;

	if (!o->baseline_only) {
		err = bench_fabric_run(o, ours);
		if (err) {
			fprintf(stderr, "fabric phase failed: %s\n",
				phase_error(err));
			return err;
		}
	}
	if (!o->no_baseline) {
		err = bench_tcp_run(o, base);
		if (err) {
			fprintf(stderr, "tcp baseline failed: %s\n",
				phase_error(err));
			return err;
		}
	}
	return 0;
}

int bench_cmd_fabric(int argc, char **argv)
{
	struct bench_result *ours, *base;
	struct bench_opts o;
	int err;

	err = parse_opts(argc, argv, &o);
	if (err > 0) {
		fabric_usage(stdout);
		return 0;
	}
	if (err) {
		fprintf(stderr, "%s(--help describes the options)\n",
			fabric_synopsis);
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
	bench_hist_reset(&ours->hist);
	bench_hist_reset(&base->hist);
	err = run_phases(&o, ours, base);
	if (!err)
		bench_report(&o, ours, base);
	free(ours);
	free(base);
	return err ? 1 : 0;
}
