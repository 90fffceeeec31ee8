// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rpcrdma-bench: measures the stack against plain TCP on one host
 * (loopback unless --addr names another of its addresses).
 * Subcommands keep each measurement's options separate ("fabric", "rpc");
 * each one lives in its own files and returns the exit status.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

struct bench_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct bench_cmd bench_cmds[] = {
	{"fabric", bench_cmd_fabric,
	 "RDMA Write/Read/Send on the fabric API vs. a raw TCP baseline"},
	{"rpc", bench_cmd_rpc,
	 "ONC RPC over RPC-over-RDMA vs. ONC RPC over TCP (libtirpc)"},
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: rpcrdma-bench <command> [options]\n\ncommands:\n");
	for (i = 0; i < sizeof(bench_cmds) / sizeof(bench_cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", bench_cmds[i].name,
			bench_cmds[i].summary);
	fprintf(f, "\n'rpcrdma-bench <command> --help' describes its options;\n"
		   "'rpcrdma-bench --version' prints the version.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	/* A peer that goes away must show up as an error, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("rpcrdma-bench %s\n", RR_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(bench_cmds) / sizeof(bench_cmds[0]); i++) {
		if (!strcmp(argv[1], bench_cmds[i].name))
			return bench_cmds[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "rpcrdma-bench: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
