/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The TCP client's private state, shared by tcp_clnt.c (calls, replies,
 * the I/O thread) and tcp_clnt_conn.c (the connection's life: connecting,
 * loss, backoff, keepalive).
 *
 * Locking: c->mu covers everything but the fields of the reader role,
 * which only the thread holding it touches. Only the I/O thread opens and
 * closes the socket, and not while a caller reads it (tcp_clnt_drive.c);
 * other threads send on it while the connection is up and may shut it
 * down (under c->mu), which wakes the thread's poll. So a descriptor
 * number is never reused under a thread still polling it.
 */
#ifndef RR_RPC_TCP_CLNT_H
#define RR_RPC_TCP_CLNT_H

#include <rpcrdma/rpc_tcp.h>

#include "rpc/api.h"
#include "rpc/backoff.h"
#include "rpc/call_list.h"
#include "rpc/dispatch.h"
#include "rpc/keepalive.h"
#include "rpc/msg.h"
#include "rpc/tcp_io.h"
#include "rpc/tcp_record.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define TC_NO_DEADLINE	UINT64_MAX
#define TC_ABANDON_RING 256
#define TC_MAX_ADDRS	16
#define DRIVE_SLICE_MS	10 /* the I/O thread leaves input to callers */

/*
 *   UP --(EOF, error, keepalive timeout, disconnect)--> LOST
 *   LOST --(the I/O thread closes the socket)--> BACKOFF, or DOWN
 *   BACKOFF --(retry time, and a call needs a connection)--> CONNECTING
 *   CONNECTING --(connected)--> UP, --(refused, timed out)--> BACKOFF
 */
enum tc_state {
	TC_UP,
	TC_LOST,
	TC_BACKOFF,
	TC_CONNECTING,
	TC_DOWN, /* for good: no_reconnect after a loss, or destroyed */
	TC_IDLE, /* made, not connected yet */
	TC_NSTATES,
};

struct tcp_slot {
	struct rr_call *call; /* NULL: free */
	uint32_t xid;
	bool resend; /* not on the current connection: to send again, whole */
};

struct tc_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

struct tc_keepalive {
	struct rr_ka p;		     /* the probe (rpc/keepalive.h) */
	_Atomic uint64_t last_rx_ms; /* when bytes last arrived; any reader */
};

struct rr_tcp_clnt {
	struct rr_rpc_clnt rpc; /* the view of rpc/api.h */
	struct rr_tcp_clnt_opts o;
	int evfd;
	pthread_t thr;
	bool thr_started;
	char machine[RR_AUTH_SYS_MAX_NAME + 1];
	struct tc_addr addrs[TC_MAX_ADDRS];
	uint32_t naddrs;
	struct tc_addr src; /* len 0: no source asked for */

	pthread_mutex_t mu; /* everything below but the I/O thread's part */
	int fd;		    /* -1 but in UP, LOST and CONNECTING */
	enum tc_state state;
	uint32_t gen;	   /* connections established, the first included */
	uint32_t addr_idx; /* the address tried next */
	uint64_t state_ms; /* when state was entered */
	uint64_t retry_ms; /* BACKOFF: the next attempt */
	struct rr_backoff backoff;
	struct rr__outq out;
	struct tcp_slot *slots;
	uint32_t nslots, shift, nbusy;
	uint32_t *freeidx, nfree; /* stack of free slot indices */
	uint32_t seq;
	struct rr_call *pend_head, *pend_tail;
	uint32_t abandoned[TC_ABANDON_RING], ab_pos;
	uint64_t poll_deadline; /* the I/O thread's poll returns by then */
	bool stopping;
	struct tc_keepalive ka;
	struct rr_xprt_stats st;
	/* who reads the socket (tcp_clnt_drive.c) */
	bool rx_busy;	     /* a thread holds the role */
	bool rx_caller;	     /* ... and it is a caller, not the I/O thread */
	uint64_t drove_ms;   /* when a caller last took the role */
	uint64_t completed;  /* calls completed by readers, for waiters */
	uint32_t rx_waiters; /* threads waiting on rx_cv */
	pthread_cond_t rx_cv;

	/* the thread holding the role (rx_busy) */
	struct rr__rm_rx rx;
	uint8_t *stage;
	/*
	 * Programs served for the server (tcp_clnt_serve.c): registered
	 * before the first call, then read by the reader without c->mu;
	 * the buffers, made by the first registration, are the reader's.
	 */
	struct rr_progtab cb_progs;
	uint8_t *cb_res, *cb_out;
};

/*
 * No connection ever again, so calls fail: the first loss under
 * no_reconnect (LOST until the I/O thread closes the socket, then DOWN),
 * or destroyed. Caller holds c->mu.
 */
static inline bool rr__tc_ended(const struct rr_tcp_clnt *c)
{
	return c->state == TC_DOWN ||
	       (c->state == TC_LOST && c->o.no_reconnect);
}

/* tcp_clnt.c; callers hold c->mu unless said otherwise */
void rr__tc_wake(struct rr_tcp_clnt *c); /* any thread, any lock */
void rr__tc_slot_free(struct rr_tcp_clnt *c, struct tcp_slot *s);
void rr__tc_fail_all(struct rr_tcp_clnt *c, int rc, struct rr_call_list *l);
int rr__tc_send_call(struct rr_tcp_clnt *c, struct rr_call *call, uint32_t xid);
bool rr__tc_send_slot(struct rr_tcp_clnt *c, struct tcp_slot *s,
		      struct rr_call_list *l);
void rr__tc_pump(struct rr_tcp_clnt *c, struct rr_call_list *l);
void rr__tc_start(struct rr_tcp_clnt *c, struct rr_call *call,
		  rr_call_done_fn done, void *arg, struct rr_call_list *l);
void rr__tc_rx_discard(struct rr_tcp_clnt *c); /* I/O thread */
/* The reader (rx_busy): false when the connection must be given up. */
bool rr__tc_read_replies(struct rr_tcp_clnt *c, struct rr_call_list *l);

/* tcp_clnt_drive.c; these take c->mu themselves unless said otherwise */
bool rr__tc_rx_take_io(struct rr_tcp_clnt *c);
void rr__tc_rx_release_io(struct rr_tcp_clnt *c, uint32_t completed);
bool rr__tc_io_reads(const struct rr_tcp_clnt *c, uint64_t now); /* mu */
int rr__tc_progress(struct rr_tcp_clnt *c, int timeout_ms, int fd);

/* tcp_clnt_serve.c */
int rr__tc_serve(struct rr_tcp_clnt *c, const struct rr_svc_prog *prog);
void rr__tc_serve_fini(struct rr_tcp_clnt *c);
/* The reader, without c->mu: serves a CALL the server sent. */
void rr__tc_serve_call(struct rr_tcp_clnt *c, const uint8_t *rec, size_t len,
		       struct rr_call_list *l);

/* tcp_clnt_conn.c */
int rr__tc_resolve(struct rr_tcp_clnt *c, const char *host, uint16_t port);
int rr__tc_connect_first(struct rr_tcp_clnt *c); /* blocks; no lock */
void rr__tc_conn_lost(struct rr_tcp_clnt *c, struct rr_call_list *l);
/* Every move of the connection's machine (checked, traced). Holds c->mu. */
void rr__tc_move(struct rr_tcp_clnt *c, enum tc_state s, uint64_t now);
void rr__tc_conn_step(struct rr_tcp_clnt *c, uint64_t now,
		      struct rr_call_list *l); /* I/O thread */
void rr__tc_conn_ready(struct rr_tcp_clnt *c, uint64_t now,
		       struct rr_call_list *l); /* I/O thread */
uint64_t rr__tc_conn_timer(const struct rr_tcp_clnt *c);
void rr__tc_ka_note(struct rr_tcp_clnt *c, const struct rr_call *call);

#endif
