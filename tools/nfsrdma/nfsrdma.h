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
	bool stats;	/* the transport's counters on stderr at unmount */
	bool partial;	/* get/put: a failed transfer keeps its final name */
	bool long_list; /* ls -l */
	bool recursive; /* ls -R, get -r, put -r */
	/* bench */
	const char *rw;
	uint64_t size;
	double seconds;
	bool json;
	bool no_baseline;
	bool force;	    /* bench --op write: into a file that exists */
	bool fsync;	    /* bench --op write: COMMIT timed with the run */
	bool bench_created; /* the write bench made its file: it may rewrite */
	uint16_t tcp_nfsport;
	/* mount */
	const char *mount_opts; /* -o */
	bool foreground;	/* -f */
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
/* mount.c: the mount through FUSE, and its end */
int cmd_mount(struct cli *c);
/*
 * A mounted daemon's control socket (mount_ctl.c): its path for the
 * mount at mountpoint (absolute), the directory made when create; and,
 * with libfuse3, the socket itself, answering with the mount's counters.
 */
int mount_ctl_path(const char *mountpoint, bool create, char *buf, size_t cap);
/*
 * Waits until nothing is at path (a daemon let go of its socket), at most
 * timeout_ms: 0, -ETIMEDOUT, or another negative errno when it cannot
 * watch the path's directory.
 */
int mount_ctl_wait_gone(const char *path, int timeout_ms);
/* How long a mount's daemon may take to exit after its unmount. */
#define MOUNT_CTL_WAIT_MS 5000
struct rr_fuse_opts;
struct tool_control;
struct mount_ctl {
	struct rr_nfs *n;
	const char *url, *mountpoint;
	const struct rr_fuse_opts *fo;
	struct tool_control *ctl;
	bool count_allocs; /* RPCRDMA_COUNT_ALLOCS=1: stats list them */
};
/* Failure is said on stderr and leaves the mount without stats. */
int mount_ctl_start(struct mount_ctl *m);
void mount_ctl_stop(struct mount_ctl *m);

/* Run as mount(8)'s helper (mount_helper.c)? Then mount_helper does it. */
bool mount_helper_called(int argc, char **argv);
int mount_helper(int argc, char **argv);
int cmd_umount(struct cli *c);

/*
 * Temporary names and interrupts for get and put (partial.c). temp_name:
 * ".NAME.nfsrdma-XXXXXXXX" beside final (malloc'd). local_temp_open
 * creates such a file exclusively: its fd (name in *tmp) or -errno.
 */
void xfer_catch_signals(void);
bool xfer_interrupted(void);
/* Dies of the signal caught, if one was. */
void xfer_die_if_interrupted(void);
char *temp_name(const char *final);
int local_temp_open(const char *final, char **tmp);

/*
 * get/put of one file on a mount that the caller keeps (xfer.c), and of a
 * directory tree, as cp -r does (tree.c): into DEST when it does not
 * exist, else into DEST/NAME. 0, or 1 once any file failed (said).
 */
int get_file(struct cli *c, struct rr_nfs *n, const char *remote,
	     const char *local);
int put_file(struct cli *c, struct rr_nfs *n, const char *local,
	     const char *remote);
int get_tree(struct cli *c, struct rr_nfs *n, const char *remote,
	     const char *local);
int put_tree(struct cli *c, struct rr_nfs *n, const char *local,
	     const char *remote);

/* A progress line on stderr when it is a terminal. */
struct progress {
	bool on;
	const char *label;
	uint64_t total, done; /* total 0: unknown (a pipe) */
	uint64_t start_ns, last_ns;
	uint64_t sample_ns, sample_done; /* the last rate sample */
	double rate;			 /* bytes/s, current */
};
uint64_t now_ns(void);
void progress_start(struct progress *p, const char *label, uint64_t total,
		    bool quiet);
void progress_add(struct progress *p, uint64_t n);
/* Erases the line (nothing when there is none). */
void progress_clear(struct progress *p);
/* Erases the line and prints the summary (bytes, seconds, throughput). */
void progress_end(struct progress *p, bool quiet);
/* "12.3 MiB" */
void fmt_bytes(char *buf, size_t cap, double bytes);

#endif
