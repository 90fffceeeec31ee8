/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC (RFC 5531) over TCP with record marking (RFC 5531 section 11):
 * client and server transports, for peers that do not speak RDMA (the
 * kernel's MOUNT and NFS over TCP, libnfs, libtirpc).
 *
 * The programs, handlers and calls are the ones of <rpcrdma/oncrpc.h>: a
 * struct rr_svc_prog registered here is served exactly as over RDMA, and a
 * struct rr_call has the same fields and the same return codes. The one
 * difference is where a DDP-eligible item goes: over TCP it is inline.
 *  - A call's arg_bulk is sent right after args, with its XDR padding; the
 *    handler finds it in rr_svc_args (rr_svc_arg_bulk returns NULL).
 *  - A handler's bulk result is sent inline after its XDR results; the
 *    caller finds it in res (res_bulk_len is 0), as an RDMA caller does
 *    when the server answered inline.
 */
#ifndef RPCRDMA_RPC_TCP_H
#define RPCRDMA_RPC_TCP_H

#include <rpcrdma/oncrpc.h>

#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports what this header declares (-fvisibility=hidden). */
#pragma GCC visibility push(default)

/* ------------------------------------------------------------- server */

struct rr_tcp_svc;

/*
 * Admission and bounds (architecture.md invariant 8): no client can hold more
 * than its share of connections, memory or the loop's time.
 *  - Connections: at most max_conns, and max_per_peer from one address.
 *    When the table is full, a newcomer takes the slot of the connection
 *    that has been idle longest (one that never sent a whole call first,
 *    else one idle for a second or more), as Linux's sunrpc does;
 *    otherwise it is closed at accept (counted in conn_refused).
 *  - Deadlines: a connection that sends no whole call within
 *    first_call_ms of accept, or none for idle_ms after its last, or that
 *    takes none of its queued replies for stall_ms, is closed
 *    (conn_timeouts). A negative value disables that deadline.
 *  - Back-pressure: while a connection has max_queued reply bytes waiting
 *    for its socket, or 16 calls in workers, its next call is not served
 *    and its input is not read. A connection therefore holds at most one
 *    partial call (max_record), 64 KiB of read input and max_queued plus
 *    one reply of queued output.
 *  - Descriptors: when accept fails for want of descriptors (EMFILE,
 *    ENFILE), a reserved one accepts and closes the pending connection,
 *    accepting pauses briefly, and the log line is rate-limited
 *    (accept_errors counts them).
 */
struct rr_tcp_svc_opts {
	uint32_t threads;    /* 0: handlers inline in rr_tcp_svc_run's thread */
	uint32_t max_record; /* largest call accepted; default 1 MiB + 64 KiB */
	uint32_t max_conns;  /* default 256 */
	uint32_t max_bulk;   /* largest bulk result of a handler; 1 MiB */
	uint32_t max_per_peer; /* connections from one address; default 32 */
	uint32_t max_queued;   /* reply bytes queued per connection; 256 KiB */
	int first_call_ms;     /* default 10000 */
	int idle_ms;	       /* default 360000 (6 min, as Linux's nfsd) */
	int stall_ms;	       /* default 30000 */
	/*
	 * Told of every connection accepted (up) and ended (why: what ended
	 * it), on the loop thread: it must not block nor call into the
	 * server. NULL: nobody is told.
	 */
	void (*on_conn)(void *arg, const struct sockaddr *peer, bool up,
			const char *why);
	void *on_conn_arg;
	/*
	 * Calls back to a client over its connection (rr_svc_conn_call): at
	 * most cb_max_in_flight at once per connection (default 16, at most
	 * 256), later ones wait their turn in issue order; a callback whose
	 * timeout_ms is 0 gets cb_timeout_ms (default 30000; negative: none).
	 */
	uint32_t cb_max_in_flight;
	int cb_timeout_ms;
	/*
	 * SO_SNDBUF of every connection, at most INT_MAX; 0 (the default)
	 * leaves it to the kernel's autotuning. A reply the socket cannot
	 * take at once waits in the connection's queue without a copy of
	 * its bulk data.
	 */
	uint32_t sndbuf;
};

int rr_tcp_svc_create(const struct sockaddr *addr, socklen_t len,
		      const struct rr_tcp_svc_opts *o, struct rr_tcp_svc **out);
/* -ENOSPC when full, -EEXIST when prog/vers is already there. */
int rr_tcp_svc_register(struct rr_tcp_svc *s, const struct rr_svc_prog *prog);
/* The bound port (to learn an ephemeral one). */
int rr_tcp_svc_port(struct rr_tcp_svc *s, uint16_t *port);
/* Runs the server loop in this thread until rr_tcp_svc_stop. */
int rr_tcp_svc_run(struct rr_tcp_svc *s);
/* Async-signal-safe: makes rr_tcp_svc_run return. */
void rr_tcp_svc_stop(struct rr_tcp_svc *s);
/* Joins the workers and closes every connection. Not while running. */
int rr_tcp_svc_destroy(struct rr_tcp_svc *s);
/*
 * calls (served), bad_headers (malformed or oversized records, messages
 * that are not calls), conn_lost (connections that ended, by the peer or
 * by us); callbacks: cb_calls (sent), cb_replies (matched), cb_timeouts,
 * cb_bad_xids (replies naming no callback on the wire, dropped), cancels.
 */
int rr_tcp_svc_stats(struct rr_tcp_svc *s, struct rr_xprt_stats *out);

/* ------------------------------------------------------------- client */

struct rr_tcp_clnt;

struct rr_tcp_clnt_opts {
	int timeout_ms;		/* per call unless the call says; 0: none */
	int connect_timeout_ms; /* default 10000 */
	uint32_t max_record;	/* largest call or reply; 1 MiB + 64 KiB */
	uint32_t max_in_flight; /* calls on the wire; default 128, max 1024 */
	/*
	 * As over RDMA (rr_clnt_opts): after losing its connection the client
	 * reconnects (first retry at once, then backing off up to
	 * reconnect_max_ms, default 5000; the first reply on a connection
	 * resets that) and sends every call that was waiting for a reply
	 * again, whole and with its xid, before any new one; a reply cut off
	 * by the loss is dropped. soft: those calls fail with -ECONNRESET
	 * instead (calls not yet sent still wait for the new connection).
	 * no_reconnect: the first loss is final; every call fails with
	 * -ECONNRESET. Per-call timeouts and cancellation hold throughout.
	 */
	bool soft;
	bool no_reconnect;
	int reconnect_max_ms;
	/*
	 * Liveness, as rr_clnt_opts: a NULL call after keepalive_ms (default
	 * 60000; negative: never) without a byte from the server; no reply
	 * within keepalive_timeout_ms (default keepalive_ms) and the
	 * connection is treated as lost. A probe takes one of max_in_flight.
	 */
	int keepalive_ms;
	int keepalive_timeout_ms;
	uint32_t keepalive_prog, keepalive_vers; /* 0: those of the last call */
	/*
	 * The numeric address to connect from (NULL: the route's), read at
	 * creation only. A server calling a client back sets the address the
	 * client called it at (rr_svc_req_local): Linux's lockd, for one,
	 * takes a GRANTED callback only from there.
	 */
	const char *source;
	/*
	 * Failover: up to RR_FAILOVER_MAX more servers, resolved at creation
	 * (a reconnect never waits on the resolver). The first connection
	 * goes to the first of host:port and these that takes it; after a
	 * loss the client tries the server it had again, then each other in
	 * turn, with the backoff above between attempts, and sends the calls
	 * that were waiting to whichever answers.
	 */
	const struct rr_failover_server *failover;
	uint32_t nfailover;
};

int rr_tcp_clnt_create(const char *host, uint16_t port,
		       const struct rr_tcp_clnt_opts *o,
		       struct rr_tcp_clnt **out);
/*
 * Synchronous call; returns as rr_clnt_call does: 0, -EREMOTEIO (not
 * accepted with SUCCESS; reply_stat, accept_stat and the mismatch range
 * say why), -ETIMEDOUT, -ECANCELED, -ECONNRESET (connection lost, with
 * soft or no_reconnect),
 * -EMSGSIZE (the call or the reply is over max_record, or the results
 * are over res_cap; the connection carries on),
 * -EPROTO (a malformed reply to this call).
 */
int rr_tcp_clnt_call(struct rr_tcp_clnt *c, struct rr_call *call);
/*
 * Asynchronous call: done runs once, from the thread that reads its
 * reply (the client's own, or one in rr_tcp_clnt_progress or a
 * synchronous call), or the one that cancels or destroys; it may issue
 * asynchronous calls, not synchronous ones (they would wait for the
 * thread running done).
 * Calls beyond max_in_flight wait their turn in issue order. Returns 0, or an
 * error (and done never runs) when the call cannot be issued: -EMSGSIZE,
 * -ECONNRESET, -EINVAL.
 */
int rr_tcp_clnt_call_async(struct rr_tcp_clnt *c, struct rr_call *call,
			   rr_call_done_fn done, void *arg);
/*
 * Reads replies in this thread for up to timeout_ms, running their
 * callbacks here, and returns after at least one call completed (0), or
 * -ETIMEDOUT (also when the connection is being re-established), or
 * -ECONNRESET when the client is down for good. As rr_clnt_progress: it
 * saves the wake-up of another thread per reply. While another thread
 * reads, it waits for that one's completions. Not from a callback.
 */
int rr_tcp_clnt_progress(struct rr_tcp_clnt *c, int timeout_ms);
/* Completes the call with -ECANCELED now; -ENOENT if it is not pending. */
int rr_tcp_clnt_cancel(struct rr_tcp_clnt *c, struct rr_call *call);
/*
 * calls, bad_xids, bad_headers, credit_waits, timeouts, cancels,
 * conn_lost, connects (attempts, the first included), retransmits (calls
 * sent again on a new connection), keepalive_probes, keepalive_timeouts;
 * calls the server made back (rr_rpc_clnt_serve): cb_calls (served, a
 * malformed one counts in bad_headers instead), cb_replies (sent),
 * cb_replies_dropped (the output queue was full: the server was not
 * reading).
 */
int rr_tcp_clnt_stats(struct rr_tcp_clnt *c, struct rr_xprt_stats *out);
/*
 * Drops the current connection as if it had failed: calls waiting for a
 * reply are sent again on the next one (see soft). For failover to a
 * restarted server, and for tests.
 */
int rr_tcp_clnt_disconnect(struct rr_tcp_clnt *c);
/* Fails calls still pending with -ECANCELED. */
int rr_tcp_clnt_destroy(struct rr_tcp_clnt *c);

/* The transport-neutral views (<rpcrdma/oncrpc.h>, "any transport"). */
struct rr_rpc_clnt *rr_tcp_clnt_rpc(struct rr_tcp_clnt *c);
struct rr_rpc_svc *rr_tcp_svc_rpc(struct rr_tcp_svc *s);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
