/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The client transport's private state.
 *
 * A call is a state machine (enum req_state) on a request slot; the slot
 * is the credit. The resources a call waits for, in order: a slot (credit
 * from the server's grant), send-queue room for every work request it will
 * need (its REGs, its Send, and the LOCAL_INVs that fence it later), a
 * send context, bounce buffers. Calls that cannot get them wait in one
 * FIFO queue; only its head may take resources, so nobody starves.
 *
 * Locking: c->mu protects everything here. Completions are dispatched
 * under it; user callbacks run after it is released.
 */
#ifndef RR_RPCRDMA_CLNT_H
#define RR_RPCRDMA_CLNT_H

#include "rpc/api.h"
#include "rpc/backoff.h"
#include "rpc/call_list.h"
#include "rpc/call_priv.h"
#include "rpc/dispatch.h"
#include "rpc/keepalive.h"
#include "rpc/msg.h"
#include "rpcrdma/hdr.h"
#include "rpcrdma/xprt.h"

#include <pthread.h>
#include <sys/socket.h>

#define CLNT_MAX_MW	  3    /* read chunk, write chunk, reply chunk */
#define CLNT_SIGNAL_EVERY 16   /* at least one signaled Send per this many */
#define CLNT_DRAIN_MS	  2000 /* teardown: the flushes, at most */
#define CLNT_CB_DEFAULT	  8    /* rr_clnt_opts.cb_credits */
#define CLNT_CB_MAX	  64

/*
 * A request slot's machine (clnt_state.c has the table of its moves):
 *
 *   FREE -> SENT -> FENCING ---------------------------> FREE
 *            |  \-> FENCING_OWED -> ABANDONED ----------> FREE
 *            |        (timeout/cancel: the reply is owed; it arrives,
 *            |         or the connection goes: -> FENCING)
 *            \-> RESEND (connection lost) -> SENT, or FENCING (fails)
 *   SENT -> FREE too, when its connection is lost for good (nothing of
 *   it is exposed once the QP is gone).
 */
enum req_state {
	REQ_FREE,
	REQ_SENT,	  /* waiting for the reply */
	REQ_FENCING,	  /* reply (or failure) seen; LOCAL_INVs out */
	REQ_FENCING_OWED, /* timed out or cancelled: fencing, reply owed */
	REQ_ABANDONED,	  /* fenced and returned; the reply is still owed */
	REQ_RESEND,	  /* its connection was lost: to send again, same xid */
	REQ_NSTATES,
};

enum clnt_conn_state {
	CLNT_CONNECTING,
	CLNT_UP,
	CLNT_DRAINING, /* lost: the old QP flushes, then goes */
	CLNT_BACKOFF,  /* no QP: waiting to try again */
	CLNT_DOWN,     /* for good: no_reconnect, or shutting down */
	CLNT_NSTATES,
};

/*
 * The client object's own life, apart from its connection's: LIVE, then
 * STOPPING when its creation failed and it is torn down, or SHUT from the
 * moment rr_clnt_shutdown is called (a second call returns at once). It
 * only moves forward; anything but LIVE makes no new connection.
 */
enum clnt_life {
	CLNT_LIVE,
	CLNT_STOPPING,
	CLNT_SHUT,
};

struct clnt_waiter {
	pthread_cond_t cv;
	bool done;
	int rc;
	struct clnt_waiter *next; /* list of sync callers not driving */
};

struct clnt_mw {
	struct rr_mw *mw;
	uint32_t rkey;
	bool live;     /* bound and not yet known invalid */
	bool unfenced; /* rr_mw_fence failed (verbs): fence before a REG */
};

/* Where a chunk's bytes live: user memory (registered) or a bounce. */
struct clnt_span {
	void *user; /* caller's buffer */
	size_t len;
	int bounce;    /* bounce buffer index, or -1 */
	uint64_t addr; /* what the MW covers */
	struct rr_mr *mr;
};

struct clnt_req {
	uint32_t idx;
	uint32_t seq;
	uint32_t xid;
	enum req_state state;
	struct rr_call *call; /* NULL once returned (ABANDONED) */
	int final_rc;	      /* what the caller gets once fenced */
	bool reply_in_chunk;  /* RDMA_NOMSG reply: decode after the fence */
	uint32_t reply_chunk_len;
	uint64_t linv_mark;   /* sq_posted after its LOCAL_INV chain */
	uint64_t deadline_ms; /* 0: none */
	uint32_t sctx;	      /* its send context */
	uint32_t sq_reserved; /* send-queue slots held for this call */
	uint32_t nlinv_out;   /* LOCAL_INVs posted, not completed */
	struct clnt_mw mws[CLNT_MAX_MW];
	uint32_t nmw;
	struct clnt_span arg_span, res_span, reply_span;
	bool has_arg_chunk, has_res_chunk, has_reply_chunk;
	bool nomsg; /* call sent as RDMA_NOMSG (position-zero chunk) */
	struct clnt_req *rnext; /* the resend FIFO */
};

struct clnt_sendctx {
	uint32_t seq;
	uint64_t sq_mark; /* sq_posted after this Send was posted */
	bool busy;
	bool cqe_seen; /* its own completion arrived (signaled Sends) */
};

/*
 * One call of the server's being served (clnt_backchannel.c): its bytes
 * are copied out of the receive buffer, which goes back at once; the
 * handler runs once mu is released; the reply's Send keeps the slot
 * until it completes (invariant 2). Its machine (clnt_state.c):
 *
 *   FREE --(admitted)--> PENDING --(taken by a driver)--> RUNNING
 *   RUNNING --(reply posted)--> SENDING --(Send completed or flushed,
 *                                         or the QP reset)--> FREE
 *   PENDING, RUNNING --(old connection, handler failed, no room)--> FREE
 */
enum cb_state { CB_FREE, CB_PENDING, CB_RUNNING, CB_SENDING, CB_NSTATES };

struct clnt_cb_slot {
	enum cb_state state;
	uint16_t gen; /* the connection the call came on */
	uint32_t seq; /* its Send's use count */
	uint32_t xid;
	uint32_t len;	  /* of the call, in its msg buffer */
	uint32_t out_cap; /* the peer's inline size, less our header */
	uint64_t sq_mark;
};

struct clnt_cb {
	uint32_t credits; /* backward credits granted; 0: none taken */
	uint32_t nslots;  /* twice that: a reply's Send may lag its reply */
	struct clnt_cb_slot *slots;
	uint8_t *msgs; /* per slot: the call, then room for its results */
	struct rr_bufpool sendbufs;
	struct rr_progtab progs;
	bool serving; /* a program registered: our thread keeps reading */
};

struct clnt_memreg {
	void *addr;
	size_t len;
	struct rr_mr *mr;
};

struct rr_clnt {
	struct rr_rpc_clnt rpc; /* the view of rpc/api.h */
	struct rr_clnt_opts o;
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_evch *ch;
	struct rr_cq *cq;
	/*
	 * The QP made with the client serves every connection: it is reset,
	 * not replaced, between them (clnt_conn.c), so reconnecting allocates
	 * nothing. qp_in_use: connecting or connected since the last reset,
	 * so it must be drained before it is reset again.
	 */
	struct rr_qp *qp;
	bool qp_in_use;
	bool per_call; /* registration per call (rr_clnt_opts.registration) */
	uint16_t gen;
	/* Only UP posts calls; DOWN is for good: calls fail (clnt_conn.c). */
	enum clnt_conn_state conn_state;
	uint64_t state_ms; /* when conn_state was entered */
	uint64_t retry_ms; /* BACKOFF: when to try again */
	struct rr_backoff backoff;
	int last_connect_rc;
	/* the server and those to fail over to; peer_idx is tried next */
	struct clnt_peer {
		struct sockaddr_storage ss;
		socklen_t len;
	} peers[1 + RR_FAILOVER_MAX];
	uint32_t npeers, peer_idx;
	struct rr_qp_attr qp_attr;
	struct clnt_req *resend_head, *resend_tail;
	bool drain_posted, drain_sq, drain_rq; /* rr_qp_drain's markers */
	char machine[64];

	pthread_mutex_t mu;
	uint32_t inline_send, inline_recv;
	uint32_t granted, in_flight;
	uint32_t sq_depth;
	uint64_t sq_posted, sq_retired;
	uint32_t sq_reserved; /* sum of the calls' reserved LOCAL_INV slots */
	uint32_t unsignaled;

	uint32_t nreqs;
	struct clnt_req *reqs;
	uint32_t *free_reqs;
	uint32_t nfree_reqs;
	uint32_t xid_seq;

	uint32_t nsctx;
	struct clnt_sendctx *sctx;
	uint32_t sctx_head, sctx_tail; /* ring in posting order */

	uint32_t nrecv;
	uint32_t *recv_seq; /* per receive buffer: its current posting */
	bool *recv_out;	    /* posted and not yet completed */
	struct rr_bufpool sendbufs, recvbufs, bounce;
	uint32_t bounce_free; /* bitmask of free bounce buffers */

	struct rr_call *wait_head, *wait_tail; /* FIFO of waiting calls */
	struct clnt_waiter *sync_waiters;
	bool driving;
	uint64_t last_drive_ms; /* when a driver last let go */
	uint64_t last_async_ms; /* when an async burst last started */
	bool bg_parked;		/* bg thread in its untimed sleep */
	uint32_t async_out;
	enum clnt_life life;
	pthread_t bg;
	pthread_cond_t bg_cv;

	struct clnt_memreg regs[32];
	uint32_t nregs;

	/*
	 * Completed async calls whose callbacks run once mu is released:
	 * as many as there are async calls, which the credits do not bound.
	 */
	struct rr_call_list cb_done;

	struct clnt_cb cb; /* the server's calls to us */

	struct rr_xprt_stats st;
	uint64_t completed;	 /* calls handed back, whatever their result */
	struct rr_rdma_hdr rhdr; /* decode scratch, under mu */

	/* liveness (clnt_keepalive.c) */
	struct clnt_ka {
		struct rr_ka p;	     /* the probe (rpc/keepalive.h) */
		uint16_t gen_seen;   /* the connection last_rx_ms is of */
		uint64_t last_rx_ms; /* when a reply last arrived */
	} ka;
};

/* clnt_call.c */
int rr__clnt_start(struct rr_clnt *c, struct rr_call *call,
		   rr_call_done_fn done, void *arg, struct clnt_waiter *w);
void rr__clnt_kick_queue(struct rr_clnt *c);
void rr__clnt_req_finish(struct rr_clnt *c, struct clnt_req *r);
void rr__clnt_fence(struct rr_clnt *c, struct clnt_req *r, int rc);
void rr__clnt_fail_all(struct rr_clnt *c, int rc);
void rr__clnt_req_unexpose(struct rr_clnt *c, struct clnt_req *r);
void rr__clnt_req_resend(struct rr_clnt *c, struct clnt_req *r);
bool rr__clnt_unqueue(struct rr_clnt *c, struct rr_call *call, int rc);
int rr__clnt_decode_reply(struct rr_clnt *c, struct clnt_req *r,
			  const uint8_t *rpc, size_t len);

/* clnt_reply.c */
/* Waits up to timeout_ms, and for fd when >= 0 (-EAGAIN: fd readable). */
int rr__clnt_drive(struct rr_clnt *c, int timeout_ms, int fd);
int rr__clnt_progress_fd(struct rr_clnt *c, int timeout_ms, int fd);
void rr__clnt_run_callbacks(struct rr_clnt *c);
void rr__clnt_post_recv_on(struct rr_clnt *c, uint32_t i);
void rr__clnt_drain(struct rr_clnt *c);

/* clnt_conn.c */
int rr__clnt_conn_first(struct rr_clnt *c);
int rr__clnt_conn_step(struct rr_clnt *c);
void rr__clnt_conn_lost(struct rr_clnt *c, int rc);
bool rr__clnt_drained(const struct rr_clnt *c);
void rr__clnt_drain_now(struct rr_clnt *c);
void rr__clnt_post_drain(struct rr_clnt *c);

/* clnt_backchannel.c */
int rr__clnt_cb_alloc(struct rr_clnt *c);
void rr__clnt_cb_free(struct rr_clnt *c);
bool rr__clnt_cb_recv(struct rr_clnt *c, uint32_t i,
		      const struct rr_rdma_hdr *h, int hl, uint32_t len);
void rr__clnt_cb_run(struct rr_clnt *c);
bool rr__clnt_cb_send_done(struct rr_clnt *c, uint32_t slot, uint32_t seq);
void rr__clnt_cb_forget(struct rr_clnt *c);

/* clnt_keepalive.c */
void rr__clnt_ka_init(struct rr_clnt *c);
void rr__clnt_ka_note(struct rr_clnt *c, const struct rr_call *call);
int rr__clnt_ka_tick(struct rr_clnt *c);

/* Every move of a request or of the connection (clnt_state.c). */
void rr__clnt_req_move(struct rr_clnt *c, struct clnt_req *r,
		       enum req_state to);
void rr__clnt_conn_move(struct rr_clnt *c, enum clnt_conn_state to);
/* Every move of a served call's slot (clnt_state.c). Caller holds c->mu. */
void rr__clnt_cb_move(struct rr_clnt *c, struct clnt_cb_slot *s,
		      enum cb_state to);
/* No usable connection now: not UP (caller holds c->mu). */
static inline bool rr__clnt_dead(const struct rr_clnt *c)
{
	return c->conn_state != CLNT_UP;
}

/* No connection ever again: calls fail (caller holds c->mu). */
static inline bool rr__clnt_down(const struct rr_clnt *c)
{
	return c->conn_state == CLNT_DOWN;
}

static inline bool rr__clnt_stopping(const struct rr_clnt *c)
{
	return c->life != CLNT_LIVE;
}

#endif
