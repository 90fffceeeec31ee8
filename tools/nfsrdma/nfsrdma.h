/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The nfsrdma command line: shared options and helpers of its commands. */
#ifndef NFSRDMA_H
#define NFSRDMA_H

#include <rpcrdma/nfs3.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct cli {
	struct rr_nfs_opts o;
	bool verify;
	bool quiet;
	bool stats; /* the transport's counters on stderr at unmount */
	/* bench */
	const char *rw;
	uint64_t size;
	double seconds;
	bool json;
	bool no_baseline;
	uint16_t tcp_nfsport;
	/* positional arguments after the command */
	int argc;
	char **argv;
};

/* Prints "nfsrdma: what: why" on stderr; returns 1 (the exit status). */
int cli_fail(const char *what, int err);
/* The same with a message of our own. */
int cli_failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Mounts url; prints why on failure. */
int cli_mount(const struct cli *c, const char *url, struct rr_nfs **out);
/* Unmounts; with --stats, prints the transport's counters first. */
void cli_umount(const struct cli *c, struct rr_nfs *n);

int cmd_ls(struct cli *c);
int cmd_stat(struct cli *c);
/* stat.c: cmd_stat for a URL, else a control socket's counters */
int cmd_stat_any(struct cli *c);
int cmd_cat(struct cli *c);
int cmd_mkdir(struct cli *c);
int cmd_rm(struct cli *c);
int cmd_df(struct cli *c);
int cmd_mv(struct cli *c);
int cmd_get(struct cli *c);
int cmd_put(struct cli *c);
int cmd_bench(struct cli *c);

/* A progress line on stderr when it is a terminal. */
struct progress {
	bool on;
	const char *label;
	uint64_t total, done;
	uint64_t start_ns, last_ns;
};
uint64_t now_ns(void);
void progress_start(struct progress *p, const char *label, uint64_t total,
		    bool quiet);
void progress_add(struct progress *p, uint64_t n);
/* Ends the line and prints the summary (bytes, seconds, throughput). */
void progress_end(struct progress *p, bool quiet);
/* "12.3 MiB" */
void fmt_bytes(char *buf, size_t cap, double bytes);

#endif
