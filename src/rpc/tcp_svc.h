/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The TCP server's private state, shared by tcp_svc.c (the loop, calls
 * from clients, workers) and tcp_svc_callback.c (calls to clients over
 * their own connections, RFC 5531 section 11). Locking as tcp_svc.c
 * says: conn->mu covers a connection's output queue and its callbacks.
 */
#ifndef RR_RPC_TCP_SVC_H
#define RR_RPC_TCP_SVC_H

#include <rpcrdma/rpc_tcp.h>

#include "base/refcount.h"
#include "rpc/api.h"
#include "rpc/spares.h"
#include "rpc/call_list.h"
#include "rpc/call_priv.h"
#include "rpc/cb_table.h"
#include "rpc/conn_info.h"
#include "rpc/dispatch.h"
#include "rpc/drc.h"
#include "rpc/tcp_io.h"
#include "rpc/tcp_record.h"
#include "rpc/workq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* A connection's calls to its client: at most cb_max_in_flight sent. */
struct tcp_cbs {
	struct rr__cb_table tab;
	bool gone; /* the connection ended: its calls failed already */
};

/*
 * Callbacks taken out of their connection, to complete without its lock
 * (done may issue the next call), and what to count for them.
 */
struct tcp_cb_done {
	struct rr_call_list calls;
	uint32_t sent, replies, timeouts, bad_headers;
};

struct tcp_job;

struct tcp_conn {
	struct rr_svc_conn base; /* the handle of rr_svc_req_conn */
	struct rr_ref ref;
	struct rr_tcp_svc *s;
	int fd;
	struct rr__conn_ctr ctr; /* rr_rpc_svc_conns */
	pthread_mutex_t mu;
	struct rr__outq out;
	uint32_t events; /* epoll interest now */
	uint32_t jobs;	 /* calls of this connection in workers */
	/* calls a worker set aside until the queue drains (FIFO) */
	struct tcp_job *parked, *parked_tail;
	bool closed;
	const char *why; /* what closes it, for rr_tcp_svc_opts.on_conn */
	bool corked;  /* the loop is serving a read: replies wait for its flush
		       */
	bool holding; /* input held back: not read until resumed */
	bool resume;  /* a worker made room for held input: the loop goes on */
	uint64_t out_since_ms;	       /* the queue last drained or moved */
	struct sockaddr_storage peer;  /* keys the duplicate request cache */
	struct sockaddr_storage local; /* where the client reached us */
	struct tcp_cbs cb;	       /* calls to the client, under mu */
	/* loop thread only */
	struct rr__rm_rx rx;
	uint8_t *held; /* input read but not yet served: held[held_off..len) */
	size_t held_off, held_len;
	uint64_t born_ms, last_call_ms; /* last_call_ms 0: no whole call yet */
	struct tcp_conn *prev, *next;
};

struct tcp_job {
	struct rr_work work;  /* in the pool's queue */
	struct tcp_job *next; /* parked on its connection */
	struct tcp_conn *conn;
	uint8_t *rec;
	size_t len, cap;
};

/* Buffers of the thread running calls: handlers build results here. */
struct tcp_ctx {
	uint8_t *res, *bulk, *enc;
	size_t res_cap, bulk_cap, enc_cap;
};

/* A worker's buffers are made before its thread: it cannot start short. */
struct tcp_worker {
	pthread_t th;
	struct rr_tcp_svc *s;
	struct tcp_ctx x;
};

struct rr_tcp_svc {
	struct rr_rpc_svc rpc; /* the view of rpc/api.h */
	struct rr_tcp_svc_opts o;
	int lfd, epfd, evfd;
	int spare_fd; /* reserved for EMFILE: accept and close with it */
	uint64_t listen_paused_until; /* loop only: accepting resumes then */
	uint64_t next_sweep_ms;	      /* loop only */
	atomic_bool stop;
	struct rr_progtab progs;
	/*
	 * Changed by the loop only, under lmu, so that rr_rpc_svc_conns may
	 * walk them from another thread; the loop reads them without it.
	 */
	pthread_mutex_t lmu;
	struct tcp_conn *conns;
	uint32_t nconns;
	/* loop thread only */
	uint8_t *stage;
	struct tcp_ctx ctx;
	/* bulk buffers replacing those lent to output queues (send_reply) */
	struct rr__spares bulk_spares;
	/* buffers of big calls' records, back from workers (tcp_record.h) */
	struct rr__spares rec_spares;
	/* and of the rest, and the queue entries they go to workers in */
	struct rr__spares rec_small, job_spares;
	/* worker pool */
	struct rr_workq q;
	struct tcp_worker *workers;
	uint32_t nworkers;
	struct rr_drc drc;
	/* callbacks to clients (tcp_svc_callback.c) */
	atomic_uint cb_busy; /* issued and not completed, all connections */
	uint64_t next_cb_ms; /* loop only: when their deadlines are checked */
	char machine[RR_AUTH_SYS_MAX_NAME + 1];
	/* counters */
	pthread_mutex_t smu;
	struct rr_xprt_stats st;
};

/* tcp_svc.c */
void rr__tcp_conn_put(struct tcp_conn *c);
/*
 * Sends a record on c, or queues it while the loop is serving (mu held);
 * a closed connection drops it. _lent: the loan's piece may be kept.
 */
void rr__tcp_conn_out(struct tcp_conn *c, const struct iovec *iov, int n);
void rr__tcp_conn_out_lent(struct tcp_conn *c, const struct iovec *iov, int n,
			   const struct rr__outq_loan *loan);
void rr__tcp_svc_count(struct rr_tcp_svc *s, uint64_t *ctr);
void rr__tcp_svc_wake(struct rr_tcp_svc *s);

/* tcp_svc_callback.c */
extern const struct rr_svc_conn_ops rr__tcp_svc_conn_ops;
/* Sets up c's callback state; -ENOMEM. */
int rr__tcp_cb_init(struct tcp_conn *c);
void rr__tcp_cb_fini(struct tcp_conn *c);
/* Loop thread: a REPLY record arrived on c. */
void rr__tcp_cb_reply(struct tcp_conn *c, const uint8_t *rec, size_t len);
/* Calls waiting for room go out while c has it. Caller holds c->mu. */
void rr__tcp_cb_pump(struct tcp_conn *c, struct tcp_cb_done *l);
/* Completes and counts what l holds; without c->mu. */
void rr__tcp_cb_done_run(struct rr_tcp_svc *s, struct tcp_cb_done *l);
/* Loop thread: c ended; every callback on it fails -ENOTCONN, once. */
void rr__tcp_cb_conn_gone(struct tcp_conn *c);
/* Loop thread: callbacks past their deadline fail -ETIMEDOUT. */
void rr__tcp_cb_expire(struct rr_tcp_svc *s, uint64_t now);
/* Whether the loop must wake for callback deadlines sooner than usual. */
bool rr__tcp_cb_ticking(struct rr_tcp_svc *s);
int rr__tcp_cb_tick_ms(void);
/* Marks the calling thread as s's loop (receives_here). */
void rr__tcp_cb_loop_enter(struct rr_tcp_svc *s);

#endif
