/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC (RFC 5531) over RPC-over-RDMA Version 1 (RFC 8166): client and
 * server transports.
 *
 * Arguments and results travel as XDR that the caller encodes and decodes
 * (libtirpc's xdrmem or rpcgen output fit here). One DDP-eligible item per
 * call may be passed apart from the XDR: the bytes of the LAST item of the
 * arguments (e.g. NFS WRITE data) or of the results (e.g. NFS READ data),
 * without their XDR padding; its length word stays in the XDR. The
 * transport moves it by RDMA (a read chunk for arguments, a write chunk for
 * results) and, when the peer offers no chunk, inline.
 *
 * What the transport guarantees (docs/architecture.md section 7):
 *  - no memory exposed to the server for a call is remotely accessible
 *    after the call's result, error, timeout or cancellation reaches the
 *    caller (the server's Send With Invalidate, checked, or a local
 *    invalidation that completed; otherwise the connection is torn down);
 *  - send buffers live until their Send completes, independent of calls;
 *  - a call is posted only with a credit and send-queue room for every
 *    work request it needs; waiters are served in FIFO order;
 *  - every work request is accounted for by exactly one completion.

 *
 * Calls, programs, handlers and counters are those of <rpcrdma/oncrpc.h>,
 * shared with the TCP transport.
 */
#ifndef RPCRDMA_RPC_H
#define RPCRDMA_RPC_H

#include <rpcrdma/fabric.h>
#include <rpcrdma/oncrpc.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports what this header declares (-fvisibility=hidden). */
#pragma GCC visibility push(default)

/* ------------------------------------------------------------- client */

struct rr_clnt;

/*
 * How the client exposes a call's chunk memory to the server (architecture.md
 * invariant 1: no key outlives its call). WINDOWS: memory windows bound
 * by a work request and invalidated by LOCAL_INV, or by the server's Send
 * With Invalidate, which the client then invites. PER_CALL: the range is
 * registered when the call is sent and deregistered, synchronously, before
 * the call completes; the server is not invited to invalidate. AUTO (the
 * default): WINDOWS where the device binds windows by work request, else
 * PER_CALL (devices without windows, such as siw).
 */
enum rr_registration { RR_REG_AUTO = 0, RR_REG_WINDOWS, RR_REG_PER_CALL };

struct rr_clnt_opts {
	const char *provider; /* NULL: rr_fabric_default_provider() */
	const struct rr_device_opts *dev_opts;
	uint32_t credits;	/* calls in flight we ask for; default 128 */
	uint32_t inline_size;	/* default 4096 (the peer may lower it) */
	uint32_t max_bulk;	/* largest DDP-eligible item; default 1 MiB */
	uint32_t bounce_bufs;	/* bounce buffers of max_bulk; default 4 */
	int timeout_ms;		/* per call unless the call says; default -1 */
	int connect_timeout_ms; /* default 10000 */
	/*
	 * Send-queue depth; default: room for every credit's worst case. A
	 * smaller queue makes calls wait for room (never overrun it).
	 */
	uint32_t sq_depth;
	/*
	 * After losing its connection the client reconnects (first retry at
	 * once, then backing off up to reconnect_max_ms, default 5000) and
	 * sends the calls that were waiting for a reply again, with their
	 * xids. soft: those calls fail with -ECONNRESET instead (calls not yet
	 * sent still wait for the new connection). no_reconnect: the first
	 * loss is final; every call fails with -ECONNRESET.
	 */
	bool soft;
	bool no_reconnect;
	int reconnect_max_ms;
	/*
	 * Liveness. When nothing has arrived from the server for keepalive_ms
	 * (default 60000; negative: never) on a connection that is up, with
	 * calls waiting or none, the client calls procedure 0 (NULL) of
	 * keepalive_prog/keepalive_vers (0: the program and version of the
	 * last call made; no probe before one). A probe takes a credit like
	 * any call. Without a reply in keepalive_timeout_ms (default: the
	 * same as keepalive_ms) the connection is treated as lost: the
	 * client reconnects and sends the waiting calls again, as above.
	 * A stalled server is so found without waiting for TCP's own timers.
	 */
	int keepalive_ms;
	int keepalive_timeout_ms;
	uint32_t keepalive_prog, keepalive_vers;
	enum rr_registration registration;
	/*
	 * Calls the server may make back at once over the connection (RFC
	 * 8167: the backward credits this client grants), served by the
	 * programs of rr_clnt_serve. 0: 8; at most 64; negative: none
	 * (rr_clnt_serve then fails -EOPNOTSUPP; such calls are dropped and
	 * counted in cb_dropped). Each costs a receive buffer posted from
	 * the start, and two send buffers, of inline_size. A client with a
	 * program to serve keeps its own thread reading the connection even
	 * while it makes no call.
	 */
	int cb_credits;
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

int rr_clnt_create(const char *host, uint16_t port,
		   const struct rr_clnt_opts *opts, struct rr_clnt **out);
/*
 * Fails calls still in flight with -ECANCELED (after fencing them), then
 * disconnects and drains: every work request posted must complete or
 * flush, or teardown_unbalanced counts it. Counters stay readable until
 * rr_clnt_destroy, which shuts down if needed. No call may be running.
 */
int rr_clnt_shutdown(struct rr_clnt *c);
int rr_clnt_destroy(struct rr_clnt *c);

/*
 * Memory registered here is exposed to the server without a copy when it
 * carries a call's DDP-eligible item; other memory goes through a bounce
 * buffer. Must stay registered while calls use it.
 */
int rr_clnt_mem_reg(struct rr_clnt *c, void *addr, size_t len);
int rr_clnt_mem_unreg(struct rr_clnt *c, void *addr);

/*
 * Synchronous call. Returns 0 when the reply arrived (check accept_stat
 * and reply_stat; -EREMOTEIO is returned too when the call was not accepted
 * with SUCCESS), or -ETIMEDOUT, -ECANCELED, -ECONNRESET (connection lost),
 * -EMSGSIZE (arguments or results exceed what the transport or the
 * buffers offered can carry; the server answered ERR_CHUNK),
 * -EPROTONOSUPPORT (the server does not speak RPC-over-RDMA version 1),
 * -EPROTO (the server broke the protocol for this call: a malformed reply,
 * chunks it was not offered; a Send With Invalidate naming a key that is
 * not the call's also tears the connection down).
 */
int rr_clnt_call(struct rr_clnt *c, struct rr_call *call);
/*
 * Asynchronous call: done runs once, from whichever thread makes progress
 * (rr_clnt_progress, a synchronous caller, or the client's own thread).
 * call must stay valid until then.
 */
int rr_clnt_call_async(struct rr_clnt *c, struct rr_call *call,
		       rr_call_done_fn done, void *arg);
/* Completes the call with -ECANCELED once its memory is fenced. */
int rr_clnt_cancel(struct rr_clnt *c, struct rr_call *call);
/*
 * Makes progress in this thread for up to timeout_ms, returning after at
 * least one call completed (0) or -ETIMEDOUT. Saves a thread wake-up per
 * reply compared with leaving progress to the client's own thread.
 */
int rr_clnt_progress(struct rr_clnt *c, int timeout_ms);
int rr_clnt_stats(struct rr_clnt *c, struct rr_xprt_stats *out);
/*
 * Drops the current connection as if it had failed: calls waiting for a
 * reply are sent again on the next one (see rr_clnt_opts.soft). For
 * failover to a restarted server, and for tests.
 */
int rr_clnt_disconnect(struct rr_clnt *c);
/* The fabric device underneath (for its counters). */
struct rr_device *rr_clnt_device(struct rr_clnt *c);
/*
 * Serves calls the server makes back over this client's connection, as
 * rr_rpc_clnt_serve documents: handlers run on the thread that reads
 * the connection, without blocking; replies go inline (RDMA_MSG), on
 * the backward credits alone, never on a forward call's.
 */
int rr_clnt_serve(struct rr_clnt *c, const struct rr_svc_prog *prog);

/* ------------------------------------------------------------- server */

struct rr_svc;
struct rr_svc_opts {
	const char *provider; /* NULL: rr_fabric_default_provider() */
	const struct rr_device_opts *dev_opts;
	uint32_t credits;     /* granted to each client; default 128 */
	uint32_t inline_size; /* default 4096 */
	uint32_t max_bulk;    /* default 1 MiB */
	/*
	 * Registered buffers of max_bulk, shared by all connections: one
	 * per call moving a chunk at once (a READ's result, a WRITE's data
	 * while it is read and written). Default 16, at most 32.
	 */
	uint32_t bulk_bufs;
	/*
	 * Bulk buffers one connection may hold at once; a call that would
	 * go past it waits without holding up other connections' calls (a
	 * connection holding none may always take what one call needs).
	 * 0: an equal share that leaves a newcomer its own,
	 * max(1, bulk_bufs / (connections + 1)).
	 */
	uint32_t bulk_share;
	/*
	 * A host whose connection was dropped for holding bulk buffers past
	 * the stall bound (an RDMA Read it does not answer, Writes it does
	 * not take) gets none, on any of its connections, for penalty_ms
	 * (default 1000), doubled on each repeat up to penalty_max_ms
	 * (default 60000), and from penalty_ms again once it stayed clear
	 * for penalty_max_ms. Its other calls are served. Negative: none.
	 * Counted in bulk_stalls, peers_penalised, penalty_waits.
	 */
	int penalty_ms;
	int penalty_max_ms;
	uint32_t max_conns; /* default 32 */
	/*
	 * Admission, as over TCP (rr_tcp_svc_opts, rpc/admit.h): at most
	 * max_per_peer connections from one address (default max_conns);
	 * a full table drops its idlest connection (idle for a second or
	 * more) so that the client's next attempt finds room; a connection
	 * is dropped when it sends no call within first_call_ms of its
	 * accept (default 10000) or none for idle_ms (default 360000) with
	 * nothing in progress. Negative: never. Counted in conn_refused,
	 * conn_evicted and conn_timeouts.
	 */
	uint32_t max_per_peer;
	int first_call_ms;
	int idle_ms;
	/*
	 * 0: handlers run in rr_svc_run's thread (lowest latency; a handler
	 * that blocks stalls every connection). N: a pool of N workers runs
	 * them, so handlers may block (file I/O) and run in parallel; a
	 * call of nowait_procs is tried in rr_svc_run's thread first.
	 */
	uint32_t threads;
	uint32_t drc_entries; /* duplicate request cache size; default 1024 */
	/*
	 * Handlers change their thread's credentials (setfsuid, setgroups: a
	 * file server acting as its caller). On a device that checks them
	 * when posting (rr_device_attr.post_checks_creds) the loop thread
	 * then posts every reply, and threads must be at least 1.
	 */
	bool handlers_change_creds;
	/*
	 * Told of every connection accepted (up) and ended (why: what ended
	 * it), on the loop thread with the server's lock held: it must not
	 * block nor call into the server. NULL: nobody is told.
	 */
	void (*on_conn)(void *arg, const struct sockaddr *peer, bool up,
			const char *why);
	void *on_conn_arg;
};

int rr_svc_create(const struct sockaddr *addr, socklen_t addrlen,
		  const struct rr_svc_opts *opts, struct rr_svc **out);
int rr_svc_register(struct rr_svc *s, const struct rr_svc_prog *prog);
/* The bound port (to learn an ephemeral one). */
int rr_svc_port(struct rr_svc *s, uint16_t *port);
/* Runs the server loop in this thread until rr_svc_stop. */
int rr_svc_run(struct rr_svc *s);
/* Async-signal-safe: makes rr_svc_run return. */
void rr_svc_stop(struct rr_svc *s);
/*
 * After rr_svc_run returned: finishes the calls handlers are running
 * (their replies are sent), stops accepting, disconnects every client and
 * drains and closes each connection. Counters stay readable (e.g.
 * teardown_unbalanced) until rr_svc_destroy, which shuts down if needed.
 */
int rr_svc_shutdown(struct rr_svc *s);
int rr_svc_destroy(struct rr_svc *s);
int rr_svc_stats(struct rr_svc *s, struct rr_xprt_stats *out);
struct rr_device *rr_svc_device(struct rr_svc *s);
/*
 * Memory whose bytes a handler may give as a DDP-eligible result
 * (rr_svc_set_res) to be written to the client from where they are, not
 * copied into a bulk buffer first: data the application keeps anyway (a
 * cache, a mapped file). Registered for local access only, so no client
 * can reach it. The transport reads a result's bytes until that reply's
 * Send has completed, so they must not change meanwhile. Up to 8 regions;
 * -ENOSPC beyond, -EEXIST for addr again, -EDEADLK from a handler run
 * inline. rr_svc_mem_unreg returns -EBUSY while a reply still reads the
 * region (none does once rr_svc_shutdown returned) and -ENOENT for an addr
 * never registered; rr_svc_destroy drops what is left.
 */
int rr_svc_mem_reg(struct rr_svc *s, const void *addr, size_t len);
int rr_svc_mem_unreg(struct rr_svc *s, const void *addr);

/* The transport-neutral views (<rpcrdma/oncrpc.h>, "any transport"). */
struct rr_rpc_clnt *rr_clnt_rpc(struct rr_clnt *c);
struct rr_rpc_svc *rr_svc_rpc(struct rr_svc *s);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
