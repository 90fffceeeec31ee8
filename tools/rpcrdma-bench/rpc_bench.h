/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * "rpcrdma-bench rpc" internals: the test program (benchprog.x, through
 * rpcgen) served and called over RPC-over-RDMA (rpcrdma/rpc.h) and over
 * TCP (libtirpc), with the same XDR routines on both.
 */
#ifndef RPCRDMA_BENCH_RPC_H
#define RPCRDMA_BENCH_RPC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rpcrdma/rpc.h>

#include "bench.h"
#include "benchprog.h" /* generated from benchprog.x */

#define rpc_container_of(ptr, type, member)                                    \
	((type *)((char *)(ptr)-offsetof(type, member)))

/*
 * bench_opts carries everything but the procedure; peers receive the
 * embedded bench_opts (bench_peer_fn) and get back here with
 * rpc_opts_of().
 */
struct rpc_opts {
	struct bench_opts b;
	uint32_t proc;	      /* BENCHPROC_* */
	uint32_t svc_threads; /* our server's worker pool; 0: inline */
	/*
	 * Connections each side spreads its calls over (0: the default;
	 * rpc_conns, rpc_tirpc_conns). Ours (--conns): 1, more each driven
	 * by a thread of its own, as with Linux's nconnect. libtirpc's
	 * (--tirpc-conns): depth, a CLIENT per calling thread; fewer are
	 * shared, and a shared CLIENT has one call outstanding at a time.
	 */
	uint32_t conns;
	uint32_t tirpc_conns;
};

static inline const struct rpc_opts *rpc_opts_of(const struct bench_opts *b)
{
	return rpc_container_of(b, struct rpc_opts, b);
}

static inline uint32_t rpc_conns(const struct rpc_opts *o)
{
	return o->conns ? o->conns : 1;
}

static inline uint32_t rpc_tirpc_conns(const struct rpc_opts *o)
{
	return o->tirpc_conns ? o->tirpc_conns : o->b.depth;
}

/* Memory of our transport, as the goals judge it. */
struct rpc_memory {
	bool client_valid;
	uint64_t client_registered; /* rr_xprt_stats after connecting */
	uint64_t client_rss;	    /* VmRSS after connecting */
	uint64_t client_rss_before; /* VmRSS before rr_clnt_create */
	bool server_valid;
	uint64_t server_registered; /* with the connection still up */
	uint64_t server_rss;	    /* VmRSS with the connection still up */
	uint64_t server_rss_idle;   /* VmRSS listening, before any client */
	uint64_t server_registered_idle;
};

/* What the server child sends up its notify pipe when stopped. */
struct rpc_svc_report {
	uint64_t rss;
	uint64_t registered_idle;
	uint64_t rss_idle;
	struct rr_xprt_stats stats; /* registered_bytes: connection up */
};

struct rpc_result {
	struct bench_result r;
	bool have_stats;
	struct rr_xprt_stats stats; /* our client's */
	bool have_svc_stats;
	struct rr_xprt_stats svc_stats; /* our server's, all connections */
	struct rpc_memory mem;
};

/* ------------------------------------------ rpc_prog.c: shared by both */

const char *rpc_proc_name(uint32_t proc);
/* Payload bytes a call counts for MB/s: the data, once (even ECHO's). */
uint32_t rpc_payload(const struct rpc_opts *o);
/* XDR size of an opaque<> of len bytes: length word and padded bytes. */
size_t rpc_xdr_opaque_len(size_t len);

/* Position-dependent bytes, so misplaced data fails the check. */
void rpc_pattern_fill(void *buf, size_t len);
/* Cheap sample check of a pattern buffer: its first and last 8 bytes. */
bool rpc_pattern_check(const void *buf, size_t len);
/* Breaks what rpc_pattern_check samples, so stale data cannot pass. */
void rpc_pattern_spoil(void *buf, size_t len);

/* XDR over a memory buffer with the rpcgen routines; -EMSGSIZE if full. */
int rpc_xdr_enc_u32(void *buf, size_t cap, uint32_t v, size_t *len);
int rpc_xdr_dec_u32(const void *buf, size_t len, uint32_t *v);
int rpc_xdr_enc_data(void *buf, size_t cap, const void *data, uint32_t data_len,
		     size_t *len);
/* Decodes into out (cap bytes); out's room is checked before decoding. */
int rpc_xdr_dec_data(const void *buf, size_t len, void *out, size_t cap,
		     uint32_t *data_len);

/* VmRSS of this process from /proc/self/status. */
int rpc_rss_bytes(uint64_t *bytes);

/* Reads exactly len bytes from fd within timeout_ms; -ECHILD on EOF. */
int rpc_read_full(int fd, void *buf, size_t len, int timeout_ms);

/* ------------------------------------------------------------ the phases */

/* rpc_svc.c: our server, run in a forked child. */
int rpc_svc_peer(const struct bench_opts *b, int notify_fd);
/* rpc_clnt.c: our client against it. */
int rpc_ours_run(const struct rpc_opts *o, struct rpc_result *r);
/* rpc_tirpc.c: the libtirpc baseline, server and client. */
int rpc_tirpc_run(const struct rpc_opts *o, struct rpc_result *r);

/* rpc_report.c */
/* 0, or -EIO when stdout failed. */
int rpc_report(const struct rpc_opts *o, const struct rpc_result *ours,
	       const struct rpc_result *base);
void rpc_print_stats(FILE *f, const struct rr_xprt_stats *s);

#endif
