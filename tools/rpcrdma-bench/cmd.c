// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What the subcommands share. Both take --size, --depth, --seconds, --port,
 * --provider, --addr, --json and the hidden phase switches the same way,
 * differing in the option that picks what to measure and in their limits;
 * both then run their own stack and a baseline back to back, in one run, so
 * both see the same machine state, and report the two.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* Limits every subcommand shares. */
#define MAX_MEMORY  (1ull << 30) /* --size x --depth */
#define MAX_SECONDS 86400.0

/* Decimal, with an optional K, M or (max_shift 30) G suffix of 1024s. */
static int parse_u64(const char *s, unsigned max_shift, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
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
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	}
	if (shift && shift <= max_shift)
		v <<= shift, end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_range(const struct bench_cli *cli, const char *name,
		       const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (parse_u64(s, cli->max_shift, out) || *out < lo || *out > hi) {
		fprintf(stderr, "%s: --%s '%s': expected %llu..%llu\n", cli->me,
			name, s, (unsigned long long)lo,
			(unsigned long long)hi);
		return -EINVAL;
	}
	return 0;
}

static int parse_seconds(const struct bench_cli *cli, const char *s,
			 double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out) || *out <= 0 ||
	    *out > MAX_SECONDS) {
		fprintf(stderr,
			"%s: --seconds '%s': expected a number in (0, %.0f]\n",
			cli->me, s, MAX_SECONDS);
		return -EINVAL;
	}
	return 0;
}

/* Dotted IPv4 only: both phases bind and connect AF_INET sockets. */
static int parse_addr(const struct bench_cli *cli, const char *s,
		      struct bench_opts *o)
{
	if (inet_pton(AF_INET, s, &o->addr) != 1) {
		fprintf(stderr, "%s: --addr '%s': expected an IPv4 address\n",
			cli->me, s);
		return -EINVAL;
	}
	/* Canonical form, e.g. for rr_clnt_create's host string. */
	inet_ntop(AF_INET, &o->addr, o->addr_str, sizeof(o->addr_str));
	return 0;
}

static int parse_one(const struct bench_cli *cli, int c, struct bench_opts *o,
		     unsigned *seen)
{
	uint64_t v = 0;
	int err = 0;

	switch (c) {
	case 's':
		*seen |= BENCH_SEEN_SIZE;
		err = parse_range(cli, "size", optarg, cli->size_min,
				  cli->size_max, &v);
		o->size = (uint32_t)v;
		return err;
	case 'd':
		*seen |= BENCH_SEEN_DEPTH;
		err = parse_range(cli, "depth", optarg, 1, cli->depth_max, &v);
		o->depth = (uint32_t)v;
		return err;
	case 't':
		*seen |= BENCH_SEEN_SECONDS;
		return parse_seconds(cli, optarg, &o->seconds);
	case 'p':
		err = parse_range(cli, "port", optarg, 1, 65535, &v);
		o->port = (uint16_t)v;
		return err;
	case 'P':
		o->provider = optarg;
		return 0;
	case 'a':
		return parse_addr(cli, optarg, o);
	case 'j':
		o->json = true;
		return 0;
	case BENCH_OPT_BASELINE_ONLY:
		o->baseline_only = true;
		return 0;
	case BENCH_OPT_NO_BASELINE:
		o->no_baseline = true;
		return 0;
	case BENCH_OPT_NO_PIN:
		o->no_pin = true;
		return 0;
	}
	return cli->parse_own(cli, c, optarg, o, seen);
}

static int check_opts(const struct bench_cli *cli, const struct bench_opts *o,
		      unsigned seen)
{
	const char *missing = !(seen & BENCH_SEEN_WHAT)	     ? cli->what
			      : !(seen & BENCH_SEEN_SIZE)    ? "--size"
			      : !(seen & BENCH_SEEN_DEPTH)   ? "--depth"
			      : !(seen & BENCH_SEEN_SECONDS) ? "--seconds"
							     : NULL;

	if (missing) {
		fprintf(stderr, "%s: %s is required\n", cli->me, missing);
		return -EINVAL;
	}
	if (cli->check_own && cli->check_own(cli, o))
		return -EINVAL;
	if ((uint64_t)o->size * o->depth > MAX_MEMORY) {
		fprintf(stderr,
			"%s: --size x --depth must not exceed %llu bytes\n",
			cli->me, MAX_MEMORY);
		return -EINVAL;
	}
	if (o->baseline_only && o->no_baseline) {
		fprintf(stderr, "%s: nothing to run\n", cli->me);
		return -EINVAL;
	}
	return 0;
}

/* Returns 0, 1 for --help, or -EINVAL after saying what is wrong. */
static int parse_opts(const struct bench_cli *cli, int argc, char **argv,
		      struct bench_opts *o)
{
	unsigned seen = 0;
	int c;

	memset(o, 0, sizeof(*o));
	o->provider = "iwarp";
	o->addr.s_addr = htonl(INADDR_LOOPBACK);
	snprintf(o->addr_str, sizeof(o->addr_str), "127.0.0.1");
	optind = 1;
	/* getopt would name argv[0], the subcommand, as the program */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", cli->longopts, NULL)) != -1) {
		if (c == 'h')
			return 1;
		if (c == '?' || c == ':') {
			fprintf(stderr, "%s: %s '%s'\n", cli->me,
				c == ':' ? "missing value for"
					 : "unknown option",
				argv[optind - 1]);
			return -EINVAL;
		}
		if (parse_one(cli, c, o, &seen))
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected '%s'\n", cli->me, argv[optind]);
		return -EINVAL;
	}
	return check_opts(cli, o, seen);
}

static int run_phase(const struct bench_cli *cli, const struct bench_phase *ph,
		     const struct bench_opts *o, struct bench_result *r)
{
	int err = ph->run(o, r);

	/* -ECHILD means the phase's peer failed, and the peer said why. */
	if (err)
		fprintf(stderr, "%s failed: %s\n", ph->name,
			err == -ECHILD ? cli->peer_failed : strerror(-err));
	return err;
}

static int run_phases(const struct bench_cli *cli, const struct bench_opts *o,
		      struct bench_result *ours, struct bench_result *base)
{
	int err;

	if (!o->baseline_only) {
		err = run_phase(cli, &cli->ours, o, ours);
		if (err)
			return err;
	}
	if (!o->no_baseline)
		return run_phase(cli, &cli->base, o, base);
	return 0;
}

int bench_cli_run(const struct bench_cli *cli, int argc, char **argv,
		  struct bench_opts *o)
{
	struct bench_result *ours, *base;
	int err;

	err = parse_opts(cli, argc, argv, o);
	if (err > 0) {
		cli->usage(stdout);
		return 0;
	}
	if (err) {
		fprintf(stderr, "%s(--help describes the options)\n",
			cli->synopsis);
		return 2;
	}
	/* Results hold big histograms: heap, not stack. */
	ours = calloc(1, cli->result_size);
	base = calloc(1, cli->result_size);
	if (!ours || !base) {
		fprintf(stderr, "rpcrdma-bench: out of memory\n");
		free(ours);
		free(base);
		return 1;
	}
	bench_hist_reset(&ours->hist);
	bench_hist_reset(&base->hist);
	bench_pin(o, 0);
	err = run_phases(cli, o, ours, base);
	if (!err) {
		err = cli->report(o, ours, base);
		if (err)
			fprintf(stderr, "%s: stdout: %s\n", cli->me,
				strerror(-err));
	}
	free(ours);
	free(base);
	return err ? 1 : 0;
}

void bench_sockaddr(const struct bench_opts *o, uint16_t port,
		    struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr = o->addr;
}

bool bench_pinned(const struct bench_opts *o)
{
	return !o->no_pin && sysconf(_SC_NPROCESSORS_ONLN) >= 2;
}

void bench_pin(const struct bench_opts *o, int cpu)
{
	cpu_set_t set;

	if (!bench_pinned(o))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}
