/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The server transport's private state.
 *
 * One thread (rr_svc_run) drives the transport: connection events and the
 * one completion queue all connections share. Handlers run inline in that
 * thread, or in a worker pool (opts.threads); with a pool, a call of its
 * program's nowait_procs is still tried inline first, and goes to a worker
 * only when its handler defers (svc_call.c). A call is a state machine on
 * a request slot of its connection:
 *
 *   RECEIVED --(read chunk?)--> PULLING --(Read done)--> READY
 *   READY --(reply resources reserved)--> RUNNING --(reply posted)--> FREE
 *
 * Everything the reply will need (send-queue room, a send context, a bulk
 * buffer when the client offered a write or reply chunk) is reserved
 * before the handler runs, so a handler runs exactly once and its reply
 * never waits. A call that cannot get a resource now waits in the server's
 * FIFO and is resumed when a completion frees one. Bulk buffers
 * (registered, max_bulk each) are shared by all connections.
 *
 * Fairness of the FIFO (rr__svc_resume): each connection parks its calls in
 * its own queue, taken in the order they came; across connections the
 * oldest head goes first. A connection that must wait (its send queue is
 * full, it holds its share of bulk buffers, its host is under penalty)
 * holds up only its own calls, and a pass costs a look at each connection,
 * not at each parked call. A call waiting for the shared pool itself
 * holds up every later call that needs a bulk buffer, so it is not
 * overtaken for one, and no other. A connection's share (opts.bulk_share)
 * leaves a newcomer its own; a host dropped for holding bulk buffers past
 * SVC_STALL_MS gets none for a back-off (rpc/admit.h's penalties), so
 * reconnecting at once gains it nothing.
 *
 * A connection found dead is disconnected (every work request flushes),
 * drained until each of its queues has nothing outstanding, and only then
 * destroyed; a drain that cannot finish is counted (teardown_unbalanced).
 *
 * Locking: s->mu covers all of it. The loop holds it while it dispatches a
 * batch; workers hold it only to post their reply. The replies the loop
 * makes during a batch are posted together at its end (rr__svc_flush): one
 * post per connection, which on iwarp is one sendmsg for all of them and
 * wakes the client once.
 */
#ifndef RR_RPCRDMA_SVC_H
#define RR_RPCRDMA_SVC_H

#include "rpc/admit.h"
#include "rpc/api.h"
#include "rpc/call_list.h"
#include "rpc/cb_table.h"
#include "rpc/conn_info.h"
#include "rpc/dispatch.h"
#include "rpc/drc.h"
#include "rpc/msg.h"
#include "rpc/workq.h"
#include "rpcrdma/hdr.h"
#include "rpcrdma/xprt.h"

#include <pthread.h>
#include <stdatomic.h>

#define SVC_RECV_EXTRA	  8
#define SVC_SIGNAL_EVERY  16
#define SVC_BULK_BUFS	  16 /* default of rr_svc_opts.bulk_bufs */
#define SVC_BULK_BUFS_MAX 32 /* bits of rr_svc.bulk_free */
#define SVC_RES_SCRATCH	  (256u << 10)
#define SVC_MEMS_MAX	  8    /* regions of rr_svc_mem_reg */
#define SVC_DRC_MAX_RES	  512  /* replies kept: NFS's are a few hundred bytes */
#define SVC_DRAIN_MS	  2000 /* a dead connection's flushes, at most */
/*
 * Work waiting on the peer that pins shared bulk buffers (an RDMA Read it
 * does not answer, a reply's Writes it does not take) ends its connection
 * after this long, so a stalled or malicious client cannot starve the
 * others of bulk buffers (and, through the FIFO, of everything).
 */
#define SVC_STALL_MS 3000
/* Hosts whose penalties are remembered (rpc/admit.h). */
#define SVC_PENALTY_HOSTS 64
/* Send-queue slots a reply may use: chunk Writes and the Send. */
#define SVC_REPLY_WRS (2 * RR_RDMA_MAX_CHUNK_SEGS + 1)
/*
 * Replies of one pass of the loop posted together (one doorbell: on iwarp
 * one sendmsg for all of them), those of up to SVC_PEND_WRS work requests
 * (a Send, or a Write and the Send: every READ and small reply).
 */
#define SVC_PEND_MAX 16
#define SVC_PEND_WRS 2
/*
 * Callbacks (svc_backchannel.c): in flight on one connection at most,
 * whatever the client grants (each takes a receive buffer here for its
 * reply), and the timeout of one whose timeout_ms is 0.
 */
#define SVC_CB_MAX	  16
#define SVC_CB_TIMEOUT_MS 30000

/* A call's machine on the server (svc_state.c has the table). */
enum sreq_state {
	SREQ_FREE,
	SREQ_RECEIVED,
	SREQ_PULLING, /* its read chunks are being pulled by RDMA Read */
	SREQ_READY,   /* whole: waiting for its reply's resources */
	SREQ_RUNNING, /* its reply's resources are reserved */
	SREQ_NSTATES,
};

struct svc_conn;

/*
 * The handle on a connection that rr_svc_req_conn gives out: it lives
 * while someone holds it, the connection's own reference included, so
 * it outlives the connection (cn NULL then: calls fail -ENOTCONN).
 * Everything but refs is under s->mu.
 */
struct svc_cb {
	struct rr_svc_conn base; /* rpc/api.h */
	atomic_uint refs;
	struct rr_svc *s;
	struct svc_conn *cn;
	struct sockaddr_storage peer;
	uint32_t granted;	 /* backward credits: 1 until the client says */
	struct rr__cb_table tab; /* waiting for a credit, or sent */
	struct rr__cb_slot slots[SVC_CB_MAX];
};

struct svc_req {
	struct rr_svc_req rq; /* what the handler sees */
	struct svc_conn *conn;
	uint32_t idx;
	uint32_t seq;
	enum sreq_state state;
	uint32_t recv_idx;
	uint32_t len; /* bytes received */
	struct rr_rdma_hdr h;
	int hlen;
	/*
	 * A call with read chunks is rebuilt as one XDR stream in its bulk
	 * buffer (svc_call.c), stream_len bytes from stream_off; when the
	 * last chunk ends the call, its item is also handed apart
	 * (ddp_pos, ddp_len: where in the stream, how long without roundup).
	 */
	uint32_t stream_off, stream_len;
	uint32_t ddp_pos, ddp_len;
	int bulk;	    /* bulk buffer holding pulled data, or -1 */
	int res_bulk;	    /* reserved for a write/reply chunk, or -1 */
	uint64_t read_mark; /* sq_posted when its Reads went out */
	uint64_t pull_ms;   /* when its RDMA Read was posted */
	uint32_t recv_seq;  /* its receive buffer's current posting */
	bool recv_out;
	struct rr_reply_hdr rh;	  /* the handler's verdict */
	bool drop;		  /* a duplicate of a call still running */
	bool share_waited;	  /* counted in bulk_share_waits */
	struct svc_req *qnext;	  /* its connection's parked calls */
	uint64_t park_seq;	  /* when parked, in the server's order */
	struct rr_work work;	  /* in the workers' queue */
	struct svc_req *worknext; /* finished, in s->ready */
	bool *posted;		  /* the waiting worker's flag (post_in_loop) */
};

struct svc_sendctx {
	uint32_t seq;
	uint64_t sq_mark;
	int bulk;	  /* bulk buffer to release with this Send, or -1 */
	int mem;	  /* s->mems region its Writes read, or -1 */
	uint64_t bulk_ms; /* when posted, if it holds a bulk buffer or mem */
	bool busy;
	bool cqe_seen; /* its own completion arrived (signaled Sends) */
};

/* A reply built and accounted for, waiting for the batch's post. */
struct svc_pend {
	struct rr_send_wr wr[SVC_PEND_WRS];
	struct rr_sge sge[SVC_PEND_WRS];
	uint32_t nwr;
};

/*
 * A connection's machine on the server (svc_state.c has the table):
 *
 *   UP --(lost, refused, evicted, idle, stalled, shut down)--> DEAD
 *   DEAD --(reap: callbacks ended, rr_qp_disconnect)--> DRAINING
 *   DRAINING --(both drain markers back, no call in a worker,
 *               or SVC_DRAIN_MS)--> closed and freed
 *
 * A new connection is UP from its allocation (accepted or being
 * accepted). Only UP posts calls' work requests (DRAINING posts just the
 * two drain markers); completions of any other
 * state are accounted and dropped.
 */
enum svc_conn_state {
	SCONN_UP,
	SCONN_DEAD,
	SCONN_DRAINING,
	SCONN_NSTATES,
};

struct svc_conn {
	struct rr_svc *s;
	struct rr_qp *qp;
	uint16_t gen;
	enum svc_conn_state state;
	/* what made it DEAD, for rr_svc_opts.on_conn */
	const char *why;
	bool drain_posted;	 /* rr_qp_drain's markers are out */
	bool drain_sq, drain_rq; /* ... and seen */
	uint64_t dead_ms;	 /* when found dead: bounds the drain */
	uint32_t running;	 /* calls in workers */
	uint32_t calls_in;	 /* received, not yet finished (its credits) */
	uint64_t born_ms;	 /* accepted (admission, rpc/admit.h) */
	struct rr__conn_ctr ctr; /* rr_rpc_svc_conns */
	uint64_t last_call_ms;	 /* last call received; 0: none yet */
	uint32_t recv_posted;	 /* receives outstanding */
	uint32_t bulk_held;	 /* bulk buffers its calls and Sends hold */
	struct svc_req *wait_head, *wait_tail; /* its parked calls, FIFO */
	uint32_t wait_pass; /* the rr__svc_resume pass that left it waiting */
	uint64_t penalty_until; /* its host's penalty (rpc/admit.h) */
	struct svc_conn *next;
	uint32_t inline_send, inline_recv;
	bool peer_inv_ok;
	struct sockaddr_storage peer; /* keys the duplicate request cache */
	uint32_t sq_depth;
	uint64_t sq_posted, sq_retired; /* all but RDMA Reads */
	/*
	 * RDMA Reads posted and not yet completed, counted apart: siw
	 * completes a Read after Sends posted later, and those Sends' marks
	 * must not retire it. A Read's completion still retires all posted
	 * before it (read_mark): a send queue starts its requests in order.
	 */
	uint32_t reads_out;
	uint32_t sq_resv;   /* slots reserved for replies of running calls */
	uint32_t sctx_resv; /* send contexts reserved likewise */
	uint32_t unsignaled;
	uint32_t nrecv;
	struct rr_bufpool recvbufs, sendbufs;
	struct svc_req *reqs; /* one per receive buffer */
	uint32_t nsctx;
	struct svc_sendctx *sctx;
	uint32_t sctx_head, sctx_tail;
	struct svc_pend pend[SVC_PEND_MAX]; /* see rr_svc.batching */
	uint32_t npend;
	struct svc_cb *cb; /* calling the client back */
};

/* What a thread running handlers owns: the handler's result buffers. */
struct svc_scratch {
	uint8_t *res;
	uint8_t *bulk;
};

struct svc_pool {
	struct rr_workq q;
	pthread_mutex_t mu; /* started, live */
	uint32_t n, started, cap;
	uint32_t live; /* workers not yet returned */
	pthread_t *threads;
	struct svc_scratch *scratch;
};

/*
 * Memory the application registered (rr_svc_mem_reg): a result built there
 * is written to the client from where it is. users counts the Sends whose
 * Writes read from it and have not completed; it cannot go while any do.
 */
struct svc_mem {
	const uint8_t *addr; /* NULL: a free slot */
	size_t len;
	struct rr_mr *mr;
	uint32_t users;
};

struct rr_svc {
	struct rr_rpc_svc rpc; /* the view of rpc/api.h */
	struct rr_svc_opts o;
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_evch *ch;
	struct rr_cq *cq;
	struct rr_listener *l;
	atomic_int stop; /* lock-free: safe from a signal handler too */
	bool closing;	 /* rr_svc_destroy: no new connections */
	uint16_t next_gen;
	struct svc_conn *conns;
	uint32_t nconns;
	struct rr_progtab progs;
	struct rr_bufpool bulk;
	uint32_t bulk_free; /* bitmask */
	struct svc_mem mems[SVC_MEMS_MAX];
	struct svc_scratch scratch; /* the loop thread's, for inline handlers */
	struct svc_pool pool;
	struct rr_drc drc;
	uint64_t park_seq; /* parked calls so far: their order across conns */
	uint32_t resume_pass;
	bool pool_wait;	     /* a parked call waits for the shared pool */
	uint32_t bulk_share; /* opts.bulk_share, or the current equal share */
	struct rr__admit_penalty penalties[SVC_PENALTY_HOSTS];
	/* post_in_loop: replies the workers ran, for the loop to post */
	bool post_in_loop;
	/*
	 * post_in_loop: the loop's poll saw connection events waiting. Looking
	 * for them otherwise costs a failed system call per pass on verbs.
	 */
	bool cm_ready;
	int kick_fd; /* eventfd: ready is not empty */
	struct svc_req *ready_head, *ready_tail;
	pthread_cond_t posted_cv;
	uint64_t stall_check_ms; /* last scan for stalled peers */
	/*
	 * The loop is dispatching a batch (under s->mu): small replies wait
	 * in their connection's pend[] and go out in one post at the end of
	 * the pass (rr__svc_flush), before anything else is posted on that
	 * connection, so the send queue's order stays the accounting order.
	 */
	bool batching;
	/* callbacks (svc_backchannel.c) */
	char machine[64];	     /* names us in AUTH_SYS credentials */
	struct rr_call_list cb_done; /* done, not yet told */
	pthread_mutex_t mu;
	struct rr_xprt_stats st;
};

/* svc_call.c: a call from its receive to its handler */
void rr__svc_recv(struct svc_conn *cn, uint32_t i, uint32_t len);
void rr__svc_read_done(struct svc_conn *cn, struct svc_req *r);
void rr__svc_resume(struct rr_svc *s);
void rr__svc_post_recv(struct svc_conn *cn, uint32_t i);
void rr__svc_run_handler(struct rr_svc *s, struct svc_req *r,
			 const struct svc_scratch *sc);
void rr__svc_finish(struct svc_conn *cn, struct svc_req *r);
void rr__svc_reply_ready(struct rr_svc *s);
bool rr__svc_pool_busy(struct rr_svc *s);
void rr__svc_bulk_put(struct svc_conn *cn, int i);
uint8_t *rr__svc_bulk_at(struct rr_svc *s, int i);
void rr__svc_share_update(struct rr_svc *s);

/* svc_mem.c: the application's registered memory; callers hold s->mu */
int rr__svc_mem_find(struct rr_svc *s, const void *p, size_t len);
void rr__svc_mem_put(struct rr_svc *s, int i);
void rr__svc_mem_fini(struct rr_svc *s);

/* rr__svc_reply.c: posting replies and errors */
bool rr__svc_sq_room(struct svc_conn *cn, uint32_t need);
void rr__svc_sq_retire(struct svc_conn *cn, uint64_t mark);
void rr__svc_sctx_release(struct svc_conn *cn, struct svc_sendctx *sc);
void rr__svc_send_error(struct svc_conn *cn, uint32_t xid, uint32_t vers,
			uint32_t err);
void rr__svc_reply(struct svc_conn *cn, struct svc_req *r);
void rr__svc_flush(struct svc_conn *cn);

/* svc_reply.c, for callbacks: the next send buffer, and its Send */
uint8_t *rr__svc_send_buf(struct svc_conn *cn);
int rr__svc_send(struct svc_conn *cn, uint32_t len);

/*
 * The server whose loop this thread is running (a callback's reply could
 * never be read here), and whose s->mu it holds meanwhile (inline
 * handlers run under it): a callback made there must not take it again.
 */
extern _Thread_local struct rr_svc *rr__svc_tl_loop, *rr__svc_tl_locked;

/* svc_backchannel.c: calls to the client */
int rr__svc_cb_new(struct svc_conn *cn);
void rr__svc_cb_gone(struct svc_conn *cn);
void rr__svc_cb_put_conn(struct svc_conn *cn);
bool rr__svc_cb_reply(struct svc_conn *cn, const struct rr_rdma_hdr *h,
		      const uint8_t *msg, uint32_t len);
void rr__svc_cb_tick(struct rr_svc *s);
void rr__svc_cb_run_done(struct rr_svc *s);

/* svc.c: rr_rpc_svc_conns; takes s->mu (-EDEADLK where held). */
int rr__svc_conns(struct rr_rpc_svc *rpc, struct rr_svc_conn_info *out,
		  uint32_t cap, uint32_t *shown, uint32_t *hidden);

/* svc_pool.c: worker threads */
int rr__svc_pool_start(struct rr_svc *s, uint32_t n);
void rr__svc_pool_stop(struct rr_svc *s);
void rr__svc_pool_submit(struct rr_svc *s, struct svc_req *r);
int rr__svc_scratch_alloc(struct svc_scratch *sc, size_t max_bulk);
void rr__svc_scratch_free(struct svc_scratch *sc);

/*
 * The connection leaves UP for DEAD, why (may be NULL) telling the first
 * cause; later causes change nothing. Caller holds s->mu.
 */
void rr__svc_conn_kill(struct svc_conn *cn, const char *why);
/* DEAD to DRAINING (svc_state.c). Caller holds s->mu. */
void rr__svc_conn_move(struct svc_conn *cn, enum svc_conn_state to);

static inline bool rr__svc_conn_dead(const struct svc_conn *cn)
{
	return cn->state != SCONN_UP;
}

/* Every move of a call's machine (svc_state.c). Caller holds s->mu. */
void rr__svc_req_move(struct svc_conn *cn, struct svc_req *r,
		      enum sreq_state to);

#endif
