/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The server transport's private state.
 *
 * One thread (rr_svc_run) drives everything: connection events, the one
 * completion queue all connections share, and the handlers, which run
 * inline. A call is a state machine on a request slot of its connection:
 *
 *   RECEIVED --(read chunk?)--> PULLING --(Reads done)--> READY
 *   READY --(handler, reply posted)--> FREE
 *
 * A call that needs a resource not available now (a bulk buffer, send-queue
 * room, a send context) waits in the server's FIFO and is resumed when a
 * completion frees one. Bulk buffers (registered, max_bulk each) are shared
 * by all connections, so a server connection costs little memory.
 */
#ifndef RR_RPCRDMA_SVC_H
#define RR_RPCRDMA_SVC_H

#include "rpc/msg.h"
#include "rpcrdma/hdr.h"
#include "rpcrdma/xprt.h"

#include <pthread.h>
#include <stdatomic.h>

#define SVC_RECV_EXTRA	 8
#define SVC_SIGNAL_EVERY 16
#define SVC_BULK_BUFS	 8
#define SVC_RES_SCRATCH	 (256u << 10)

enum sreq_state { SREQ_FREE, SREQ_RECEIVED, SREQ_PULLING, SREQ_READY };

struct svc_conn;

struct rr_svc_req {
	struct svc_conn *conn;
	uint32_t idx;
	uint32_t seq;
	enum sreq_state state;
	uint32_t recv_idx;
	uint32_t len; /* bytes received */
	struct rr_rdma_hdr h;
	int hlen;
	int bulk; /* bulk buffer holding pulled data, or -1 */
	uint64_t read_mark;
	uint32_t recv_seq; /* its receive buffer's current posting */
	bool recv_out;
	/* decoded call */
	struct rr_call_hdr call;
	const uint8_t *args;
	size_t args_len;
	const uint8_t *arg_bulk;
	size_t arg_bulk_len;
	struct rr_cred cred;
	bool has_cred;
	/* results */
	size_t res_len;
	const void *res_bulk;
	size_t res_bulk_len;
	struct rr_svc_req *qnext; /* FIFO of calls waiting for resources */
};

struct svc_sendctx {
	uint32_t seq;
	uint64_t sq_mark;
	int bulk; /* bulk buffer to release with this Send, or -1 */
	bool busy;
	bool cqe_seen; /* its own completion arrived (signaled Sends) */
};

struct svc_conn {
	struct rr_svc *s;
	struct rr_qp *qp;
	uint16_t gen;
	bool dead;
	struct svc_conn *next;
	uint32_t inline_send, inline_recv;
	bool peer_inv_ok;
	uint32_t sq_depth;
	uint64_t sq_posted, sq_retired;
	uint32_t unsignaled;
	uint32_t nrecv;
	struct rr_bufpool recvbufs, sendbufs;
	struct rr_svc_req *reqs; /* one per receive buffer */
	uint32_t nsctx;
	struct svc_sendctx *sctx;
	uint32_t sctx_head, sctx_tail;
};

struct svc_prog_ent {
	struct rr_svc_prog p;
};

struct rr_svc {
	struct rr_svc_opts o;
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_evch *ch;
	struct rr_cq *cq;
	struct rr_listener *l;
	atomic_int stop; /* lock-free: safe from a signal handler too */
	uint16_t next_gen;
	struct svc_conn *conns;
	uint32_t nconns;
	struct svc_prog_ent progs[16];
	uint32_t nprogs;
	struct rr_bufpool bulk;
	uint32_t bulk_free; /* bitmask */
	uint8_t *res_scratch;
	struct rr_svc_req *wait_head, *wait_tail;
	pthread_mutex_t mu; /* stats readers */
	struct rr_xprt_stats st;
};

/* svc_call.c */
void svc_recv(struct svc_conn *cn, uint32_t i, uint32_t len);
void svc_read_done(struct svc_conn *cn, struct rr_svc_req *r);
void svc_resume(struct rr_svc *s);
void svc_post_recv(struct svc_conn *cn, uint32_t i);
void svc_sq_retire(struct svc_conn *cn, uint64_t mark);

#endif
