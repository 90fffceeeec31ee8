// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * "rpcrdma-bench fabric": options, then the fabric phase and the TCP
 * baseline back to back in one run, so both see the same machine state.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define MAX_SIZE  (1u << 30)
#define MAX_DEPTH 4096

static const struct option fabric_longopts[] = {
	{"op", required_argument, NULL, 'o'},
	{"crc", no_argument, NULL, 'c'},
	BENCH_LONGOPTS,
};

static const char fabric_synopsis[] =
	"usage: rpcrdma-bench fabric --op write|read|send --size BYTES "
	"--depth N\n"
	"                            --seconds S [--port P] [--crc] [--json]\n"
	"                            [--provider iwarp] [--addr IPV4]\n";

static void fabric_usage(FILE *f)
{
	fprintf(f,
		"%s"
		"\n"
		"Runs a peer in a forked child on --addr and keeps N "
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
		"  --no-pin              do not pin this side to CPU 0 and "
		"the peer to CPU 1\n"
		"  --provider NAME       fabric provider (default iwarp); "
		"shm also\n"
		"                        measures memcpy and "
		"process_vm_writev/readv\n"
		"  --addr IPV4           the address both sides of both phases "
		"use\n"
		"                        (default 127.0.0.1; verbs over "
		"Soft-RoCE needs the\n"
		"                        device's own)\n",
		fabric_synopsis, MAX_DEPTH);
}

static int parse_op(const struct bench_cli *cli, const char *s,
		    enum bench_op *op)
{
	if (!strcmp(s, "write"))
		*op = BENCH_OP_WRITE;
	else if (!strcmp(s, "read"))
		*op = BENCH_OP_READ;
	else if (!strcmp(s, "send"))
		*op = BENCH_OP_SEND;
	else {
		fprintf(stderr, "%s: --op '%s': expected write, read or send\n",
			cli->me, s);
		return -EINVAL;
	}
	return 0;
}

static int fabric_parse_own(const struct bench_cli *cli, int c, const char *arg,
			    struct bench_opts *o, unsigned *seen)
{
	switch (c) {
	case 'o':
		*seen |= BENCH_SEEN_WHAT;
		return parse_op(cli, arg, &o->op);
	case 'c':
		o->crc = true;
		return 0;
	}
	return -EINVAL; /* getopt already said what was wrong */
}

static const struct bench_cli fabric_cli = {
	.me = "rpcrdma-bench fabric",
	.longopts = fabric_longopts,
	.synopsis = fabric_synopsis,
	.usage = fabric_usage,
	.what = "--op",
	.size_min = 1,
	.size_max = MAX_SIZE,
	.depth_max = MAX_DEPTH,
	.max_shift = 30,
	.parse_own = fabric_parse_own,
	.ours = {"fabric phase", bench_fabric_run},
	.base = {"tcp baseline", bench_tcp_run},
	.peer_failed = "its peer process failed",
	.result_size = sizeof(struct bench_result),
	.report = bench_report,
};

int bench_cmd_fabric(int argc, char **argv)
{
	struct bench_opts o;

	return bench_cli_run(&fabric_cli, argc, argv, &o);
}
