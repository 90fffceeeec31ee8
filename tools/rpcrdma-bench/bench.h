/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rpcrdma-bench internals shared between its source files. Nothing here is
 * library API: the tool only talks to the library through rpcrdma/fabric.h.
 */
#ifndef RPCRDMA_BENCH_H
#define RPCRDMA_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>
#include <sys/types.h>

#include <rpcrdma/fabric.h>

#include "bench_json.h"

/* Bounded waits: a broken peer must turn into an error, never a hang. */
#define BENCH_WAIT_MS 10000

enum bench_op {
	BENCH_OP_WRITE,
	BENCH_OP_READ,
	BENCH_OP_SEND,
};

struct bench_opts {
	enum bench_op op;
	uint32_t size;
	uint32_t depth;
	double seconds;
	uint16_t port; /* 0: ephemeral */
	/*
	 * --addr: where both sides of both phases meet, 127.0.0.1 unless
	 * named (RoCE cannot route loopback, so verbs over rxe needs the
	 * device's address); addr_str is the same, for messages and APIs
	 * that take a host string.
	 */
	struct in_addr addr;
	char addr_str[INET_ADDRSTRLEN];
	bool crc;
	bool json;
	bool baseline_only; /* hidden: TCP phase only */
	bool no_baseline;   /* hidden: fabric phase only */
	bool no_pin;	    /* --no-pin: let the scheduler place both sides */
	const char *provider;
};

/*
 * With two CPUs or more, the client (this process) runs on CPU 0 and the
 * peer on CPU 1, in both phases: the same placement for ours and the
 * baseline, and no run-to-run luck in where threads land.
 */
bool bench_pinned(const struct bench_opts *o);
void bench_pin(const struct bench_opts *o, int cpu);

/*
 * Log-linear latency histogram in nanoseconds: exact below 256 ns, then 128
 * sub-buckets per power of two, so a bucket is at most 1/128 (0.8%) wide
 * relative to its values. Fixed size, so recording never allocates.
 */
#define BENCH_HIST_SUB_BITS 7
#define BENCH_HIST_BUCKETS  ((65 - BENCH_HIST_SUB_BITS) << BENCH_HIST_SUB_BITS)

struct bench_hist {
	uint64_t count;
	uint64_t min_ns;
	uint64_t max_ns;
	double sum_ns;
	uint64_t buckets[BENCH_HIST_BUCKETS];
};

void bench_hist_reset(struct bench_hist *h);
void bench_hist_record(struct bench_hist *h, uint64_t ns);
/* Adds from's samples to to's. */
void bench_hist_merge(struct bench_hist *to, const struct bench_hist *from);
/* p in [0, 100]; 0 when the histogram is empty. */
double bench_hist_percentile_us(const struct bench_hist *h, double p);
double bench_hist_mean_us(const struct bench_hist *h);

uint64_t bench_now_ns(void);

struct bench_result {
	bool done;
	uint16_t port; /* where the phase's peer listened; 0: none yet */
	double elapsed_s;
	uint64_t ops;
	uint64_t bytes; /* payload */
	struct bench_hist hist;
	bool have_counters;
	struct rr_fabric_counters counters;
};

/* One-line "\r" progress on stderr while a phase runs (terminal only). */
struct bench_progress {
	bool enabled;
	const char *label;
	double total_s;
	uint64_t start_ns;
	uint64_t next_ns;
};

void bench_progress_init(struct bench_progress *p, const char *label,
			 double total_s, uint64_t start_ns);
void bench_progress_tick(struct bench_progress *p, uint64_t now_ns,
			 uint64_t ops, uint64_t bytes);
void bench_progress_done(struct bench_progress *p);

/*
 * A forked peer process. Its notify fd carries the port it listens on and
 * then stays open until it exits, so the parent can wait for the exit with
 * a timeout by polling for EOF instead of blocking in waitpid.
 */
struct bench_peer {
	pid_t pid;
	int fd;
};

typedef int (*bench_peer_fn)(const struct bench_opts *o, int notify_fd);

int bench_peer_spawn(struct bench_peer *p, bench_peer_fn fn,
		     const struct bench_opts *o);
int bench_peer_notify_port(int notify_fd, uint16_t port);
int bench_peer_port(struct bench_peer *p, uint16_t *port, const char *what);
/* Waits (bounded) for the peer's exit; 0 only if it exited with status 0. */
int bench_peer_reap(struct bench_peer *p, const char *what);
/* Polls fd for events, retrying on EINTR; -ETIMEDOUT after timeout_ms. */
int bench_wait_fd(int fd, short events, int timeout_ms);

const char *bench_op_name(enum bench_op op);

/* o's --addr and port: what a peer listens on and a client connects to. */
void bench_sockaddr(const struct bench_opts *o, uint16_t port,
		    struct sockaddr_in *sin);

int bench_fabric_run(const struct bench_opts *o, struct bench_result *r);
int bench_tcp_run(const struct bench_opts *o, struct bench_result *r);
/* limits.c: memcpy and process_vm_writev/readv of o's size and depth. */
int bench_limits_run(const struct bench_opts *o, struct bench_result *mem,
		     struct bench_result *cma);

/* A phase's figures; valid only if the phase completed. */
struct bench_figures {
	bool valid;
	double mbps, msgs, p50, p99, mean, min, max;
};

struct bench_figures bench_figures(const struct bench_result *r);
/* a / b, or 0 when b is not positive. */
double bench_ratio(double a, double b);
/* A phase's figures in the reports' common JSON shape. */
struct bjson_figures bench_json_figures(const struct bench_result *r,
					const struct bench_figures *f);
/* "addr:port" of the phase's peer in buf, or NULL before it listened. */
const char *bench_target(const struct bench_opts *o,
			 const struct bench_result *r, char *buf, size_t cap);

/* 0, or -EIO when stdout failed (a closed pipe: the reader got nothing). */
int bench_report(const struct bench_opts *o, const struct bench_result *ours,
		 const struct bench_result *base);

/* -------------------------- cmd.c: what the subcommands have in common */

/* getopt values of the hidden options, which run one phase alone. */
enum {
	BENCH_OPT_BASELINE_ONLY = 256,
	BENCH_OPT_NO_BASELINE,
	BENCH_OPT_NO_PIN,
};

/* Bits of the options every run must name. */
enum {
	BENCH_SEEN_WHAT = 1, /* the subcommand's own: bench_cli.what */
	BENCH_SEEN_SIZE = 2,
	BENCH_SEEN_DEPTH = 4,
	BENCH_SEEN_SECONDS = 8,
};

/*
 * The long options cmd.c reads, with the table's terminator: the end of
 * each subcommand's table. The hidden two run one phase alone (debugging
 * either side).
 */
/* clang-format off */
#define BENCH_LONGOPTS                                                         \
	{"size", required_argument, NULL, 's'},                                \
	{"depth", required_argument, NULL, 'd'},                               \
	{"seconds", required_argument, NULL, 't'},                             \
	{"port", required_argument, NULL, 'p'},                                \
	{"provider", required_argument, NULL, 'P'},                            \
	{"addr", required_argument, NULL, 'a'},                                \
	{"json", no_argument, NULL, 'j'},                                      \
	{"help", no_argument, NULL, 'h'},                                      \
	{"baseline-only", no_argument, NULL, BENCH_OPT_BASELINE_ONLY},         \
	{"no-baseline", no_argument, NULL, BENCH_OPT_NO_BASELINE},             \
	{"no-pin", no_argument, NULL, BENCH_OPT_NO_PIN},                       \
	{NULL, 0, NULL, 0}
/* clang-format on */

struct option;

/* One of a subcommand's two phases. */
struct bench_phase {
	const char *name; /* for "<name> failed: why" */
	int (*run)(const struct bench_opts *o, struct bench_result *r);
};

/*
 * A subcommand. cmd.c reads --size ('s'), --depth ('d'), --seconds ('t'),
 * --port ('p'), --provider ('P'), --addr ('a'), --json ('j'), --help ('h')
 * and the hidden options; parse_own gets every other option. Its results
 * are result_size bytes each and start with their struct bench_result.
 */
struct bench_cli {
	const char *me; /* "rpcrdma-bench fabric": starts every message */
	const struct option *longopts;
	const char *synopsis;	/* printed after a wrong command line */
	void (*usage)(FILE *f); /* --help */
	const char *what;	/* the required option parse_own reads */
	uint64_t size_min, size_max;
	uint64_t depth_max;
	unsigned max_shift; /* largest size suffix: 20 (M) or 30 (G) */
	/* 0, or -EINVAL after saying what is wrong; sets BENCH_SEEN_WHAT. */
	int (*parse_own)(const struct bench_cli *cli, int c, const char *arg,
			 struct bench_opts *o, unsigned *seen);
	/* Optional: run after the required-option check, before the rest. */
	int (*check_own)(const struct bench_cli *cli,
			 const struct bench_opts *o);
	struct bench_phase ours, base;
	const char *peer_failed; /* a phase's -ECHILD, said in words */
	size_t result_size;
	int (*report)(const struct bench_opts *o,
		      const struct bench_result *ours,
		      const struct bench_result *base);
};

/*
 * Runs the subcommand: fills o (zeroed first) from argv, runs the phases
 * it asks for and reports. Returns the exit status: 0, 1 if a phase
 * failed, 2 after a wrong command line (said on stderr with the synopsis);
 * --help prints the usage and returns 0.
 */
int bench_cli_run(const struct bench_cli *cli, int argc, char **argv,
		  struct bench_opts *o);

int bench_cmd_fabric(int argc, char **argv);
int bench_cmd_rpc(int argc, char **argv);

#endif
