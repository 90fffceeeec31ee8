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
 * What the transport guarantees (rpcrdma DESIGN.md section 3):
 *  - no memory exposed to the server for a call is remotely accessible
 *    after the call's result, error, timeout or cancellation reaches the
 *    caller (the server's Send With Invalidate, checked, or a local
 *    invalidation that completed; otherwise the connection is torn down);
 *  - send buffers live until their Send completes, independent of calls;
 *  - a call is posted only with a credit and send-queue room for every
 *    work request it needs; waiters are served in FIFO order;
 *  - every work request is accounted for by exactly one completion.
 */
#ifndef RPCRDMA_RPC_H
#define RPCRDMA_RPC_H

#include <rpcrdma/fabric.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ONC RPC status codes (RFC 5531 section 9). */
enum rr_reply_stat { RR_MSG_ACCEPTED = 0, RR_MSG_DENIED = 1 };
enum rr_accept_stat {
	RR_SUCCESS = 0,
	RR_PROG_UNAVAIL = 1,
	RR_PROG_MISMATCH = 2,
	RR_PROC_UNAVAIL = 3,
	RR_GARBAGE_ARGS = 4,
	RR_SYSTEM_ERR = 5,
};
enum rr_reject_stat { RR_RPC_MISMATCH = 0, RR_AUTH_ERROR = 1 };
enum rr_auth_flavor { RR_AUTH_NONE = 0, RR_AUTH_SYS = 1 };
enum rr_auth_stat {
	RR_AUTH_OK = 0,
	RR_AUTH_BADCRED = 1,
	RR_AUTH_REJECTEDCRED = 2,
	RR_AUTH_BADVERF = 3,
	RR_AUTH_REJECTEDVERF = 4,
	RR_AUTH_TOOWEAK = 5,
};

/* Counters of one transport (client) or of all connections (server). */
struct rr_xprt_stats {
	uint64_t calls; /* client: calls completed; server: served */
	uint64_t retransmits;
	uint64_t bad_xids;		/* replies naming no call in flight */
	uint64_t credit_waits;		/* a call waited for a credit */
	uint64_t sq_waits;		/* a call waited for send-queue room */
	uint64_t reply_before_send_cqe; /* reply seen before its Send completed
					 */
	uint64_t local_invs;		/* keys invalidated by LOCAL_INV */
	uint64_t remote_invs;	  /* keys invalidated by the peer (checked) */
	uint64_t bad_remote_invs; /* Send With Invalidate naming a wrong key */
	uint64_t regs;		  /* memory windows bound */
	uint64_t bounce_copies;	  /* bulk copied through a bounce buffer */
	uint64_t unknown_cqes;	  /* completions with an id we never issued */
	uint64_t stale_cqes;	  /* ids of an older connection or use */
	uint64_t rdma_errors_sent;
	uint64_t rdma_errors_received;
	uint64_t bad_headers;  /* malformed RPC-over-RDMA headers received */
	uint64_t read_chunks;  /* server: chunks pulled with RDMA Read */
	uint64_t write_chunks; /* server: chunks pushed with RDMA Write */
	uint64_t reply_chunks;
	uint64_t send_with_inv; /* server: replies sent with invalidate */
	uint64_t timeouts;
	uint64_t cancels;
	uint64_t conn_lost;
	uint64_t connects; /* client: connection attempts, the first included */
	uint64_t drc_replays; /* server: calls answered from the cache */
	uint64_t drc_drops;   /* server: duplicates of a call still running */
	uint64_t registered_bytes; /* memory registered with the device now */
	/*
	 * Connections torn down with work requests or receives still
	 * outstanding after the drain (each should have completed or
	 * flushed exactly once). Always 0 unless a provider loses one.
	 */
	uint64_t teardown_unbalanced;
	/*
	 * Client: NULL calls sent because nothing had arrived for the
	 * keepalive period, and those that got no reply in time (which
	 * drops the connection they went out on, if it is still the one).
	 * Probes count in calls and timeouts too.
	 */
	uint64_t keepalive_probes;
	uint64_t keepalive_timeouts;
	/* client, registration per call: keys killed by deregistering */
	uint64_t sync_invs;
	/*
	 * Server with a worker pool: calls of a program's nowait_procs run
	 * at once on the thread that received them (inline_calls), and those
	 * whose handler answered RR_SVC_DEFER went to a worker after all
	 * (deferred_calls).
	 */
	uint64_t inline_calls;
	uint64_t deferred_calls;
	/*
	 * Client: keys of calls in flight killed when their connection was
	 * lost (rr_mw_fence), not by a work request or the server.
	 */
	uint64_t loss_fences;
	/*
	 * Server admission (rr_tcp_svc_opts): connections closed at accept
	 * (table or peer's share full), closed to make room for a newcomer,
	 * closed by a deadline; accepts that failed for want of descriptors.
	 */
	uint64_t conn_refused;
	uint64_t conn_evicted;
	uint64_t conn_timeouts;
	uint64_t accept_errors;
	/*
	 * Server: replies that fitted neither inline nor in a chunk the call
	 * offered, answered RDMA_ERROR ERR_CHUNK instead (also counted in
	 * rdma_errors_sent); and calls answered GARBAGE_ARGS (arguments that
	 * did not decode: on RDMA, often a DDP-eligible item misplaced).
	 */
	uint64_t reply_too_large;
	uint64_t garbage_args;
	/*
	 * Server: calls that arrived while the client already had as many
	 * unanswered as it was granted (the client ignored its credits).
	 * Seen only while calls wait here: a call answered at once hides
	 * an overrun that happened in flight.
	 */
	uint64_t credit_overruns;
	/*
	 * Server, RDMA bulk buffers (rr_svc_opts.bulk_share, penalty_ms):
	 * calls that waited because their connection held its share, those
	 * among them whose host was under penalty, connections dropped for
	 * holding bulk buffers past the stall bound, and the penalties that
	 * followed (one per offence of a host).
	 */
	uint64_t bulk_share_waits;
	uint64_t penalty_waits;
	uint64_t bulk_stalls;
	uint64_t peers_penalised;
};

/* Every field of struct rr_xprt_stats, in order, to print them by name. */
#define RR_XPRT_STATS_FIELDS(X)                                                \
	X(calls)                                                               \
	X(retransmits)                                                         \
	X(bad_xids)                                                            \
	X(credit_waits)                                                        \
	X(sq_waits)                                                            \
	X(reply_before_send_cqe)                                               \
	X(local_invs)                                                          \
	X(remote_invs)                                                         \
	X(bad_remote_invs)                                                     \
	X(regs)                                                                \
	X(bounce_copies)                                                       \
	X(unknown_cqes)                                                        \
	X(stale_cqes)                                                          \
	X(rdma_errors_sent)                                                    \
	X(rdma_errors_received)                                                \
	X(bad_headers)                                                         \
	X(read_chunks)                                                         \
	X(write_chunks)                                                        \
	X(reply_chunks)                                                        \
	X(send_with_inv)                                                       \
	X(timeouts)                                                            \
	X(cancels)                                                             \
	X(conn_lost)                                                           \
	X(connects)                                                            \
	X(drc_replays)                                                         \
	X(drc_drops)                                                           \
	X(registered_bytes)                                                    \
	X(teardown_unbalanced)                                                 \
	X(keepalive_probes)                                                    \
	X(keepalive_timeouts)                                                  \
	X(sync_invs)                                                           \
	X(inline_calls)                                                        \
	X(deferred_calls)                                                      \
	X(loss_fences)                                                         \
	X(conn_refused)                                                        \
	X(conn_evicted)                                                        \
	X(conn_timeouts)                                                       \
	X(accept_errors)                                                       \
	X(reply_too_large)                                                     \
	X(garbage_args)                                                        \
	X(credit_overruns)                                                     \
	X(bulk_share_waits)                                                    \
	X(penalty_waits)                                                       \
	X(bulk_stalls)                                                         \
	X(peers_penalised)

/* AUTH_SYS identity for calls; NULL in a call means AUTH_NONE. */
struct rr_cred {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[16];
	const char *machine; /* NULL: gethostname() */
};

/* ------------------------------------------------------------- client */

struct rr_clnt;

/*
 * How the client exposes a call's chunk memory to the server (DESIGN.md
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
	const char *provider; /* default "iwarp" */
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

struct rr_call;
typedef void (*rr_call_done_fn)(struct rr_call *call, int rc, void *arg);

struct rr_call {
	uint32_t prog, vers, proc;
	const struct rr_cred *cred;
	/* XDR arguments; a DDP-eligible item's bytes (arg_bulk) follow them */
	const void *args;
	size_t args_len;
	const void *arg_bulk;
	size_t arg_bulk_len;
	/* XDR results land in res; a DDP-eligible result item in res_bulk */
	void *res;
	size_t res_cap;
	void *res_bulk;
	size_t res_bulk_cap;
	int timeout_ms; /* 0: the client's default; -1: none */

	/* out */
	size_t res_len;
	size_t res_bulk_len;
	uint32_t accept_stat; /* enum rr_accept_stat when MSG_ACCEPTED */
	uint32_t reply_stat;  /* enum rr_reply_stat */
	uint32_t mismatch_low, mismatch_high;

	/* private to the transport: the call's place while it waits */
	struct {
		void *req;
		struct rr_call *next;
		rr_call_done_fn done;
		void *arg;
		void *waiter;
		uint64_t deadline_ms;
		bool cancel;
		uint8_t waited; /* counted in credit_waits (1), sq_waits (2) */
	} priv_;
};

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

/* ------------------------------------------------------------- server */

struct rr_svc;
struct rr_svc_req;

/*
 * A procedure handler. It reads its arguments with rr_svc_args/_arg_bulk,
 * encodes results into rr_svc_res_buf and returns an accept_stat
 * (RR_SUCCESS with results, or RR_GARBAGE_ARGS, RR_SYSTEM_ERR, ...).
 * For RR_SUCCESS it sets the results' length with rr_svc_set_res.
 */
typedef uint32_t (*rr_svc_fn)(struct rr_svc_req *req, void *arg);

struct rr_svc_prog {
	uint32_t prog;
	uint32_t vers;
	uint32_t nprocs;
	const rr_svc_fn *procs; /* NULL entries: PROC_UNAVAIL */
	void *arg;
	/*
	 * Procedures that must not run twice (bit p: procedure p), e.g. NFS
	 * CREATE or REMOVE: a call sent again after a reconnect gets the
	 * first run's reply from the server's duplicate request cache.
	 */
	uint64_t drc_procs;
	/*
	 * Procedures whose handler can tell when it would block (bit p:
	 * procedure p; never one of drc_procs). With a worker pool, such a
	 * call is first run on the thread that received it, with
	 * rr_svc_req_nowait() true, saving the hand-off to a worker. The
	 * handler must then neither block (I/O not already in memory, locks
	 * held for long) nor change its thread's credentials; when it would
	 * have to, it returns RR_SVC_DEFER, its results are dropped and a
	 * worker runs it again, as any other call.
	 */
	uint64_t nowait_procs;
};

/* A handler's answer under rr_svc_req_nowait(): run me in a worker. */
#define RR_SVC_DEFER 0x7fff0001u

struct rr_svc_opts {
	const char *provider; /* default "iwarp" */
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

/* Handler side. Pointers stay valid until the handler returns. */
uint32_t rr_svc_req_proc(const struct rr_svc_req *r);
uint32_t rr_svc_req_vers(const struct rr_svc_req *r);
/*
 * The caller's address (its port too), or NULL where the transport has
 * none. MOUNT keeps its list per client with it.
 */
const struct sockaddr *rr_svc_req_peer(const struct rr_svc_req *r);
/* True while the handler runs where it must not block (nowait_procs). */
bool rr_svc_req_nowait(const struct rr_svc_req *r);
/*
 * The arguments. When the transport carried the last one apart (a read
 * chunk), rr_svc_args ends at its length word and rr_svc_arg_bulk has
 * its bytes; rr_svc_args_xdr is then all of them as one XDR stream, the
 * item in place with its roundup (what a decoder that knows no
 * DDP-eligible items wants). Otherwise the three agree: no bulk.
 */
const void *rr_svc_args(const struct rr_svc_req *r, size_t *len);
const void *rr_svc_args_xdr(const struct rr_svc_req *r, size_t *len);
const void *rr_svc_arg_bulk(const struct rr_svc_req *r, size_t *len);
/* AUTH_SYS identity when the call carried one (uid/gid/gids), else NULL. */
const struct rr_cred *rr_svc_cred(const struct rr_svc_req *r);
void *rr_svc_res_buf(struct rr_svc_req *r, size_t *cap);
/*
 * Room for a DDP-eligible result (at least max_bulk bytes). Building the
 * result here (e.g. pread for NFS READ) saves the transport a copy. Other
 * memory works too if it stays valid after the handler returns, until the
 * next call runs on this thread (never the handler's stack).
 */
void *rr_svc_bulk_buf(struct rr_svc_req *r, size_t *cap);
/* Results: res_len bytes of XDR, then optionally a DDP-eligible item. */
int rr_svc_set_res(struct rr_svc_req *r, size_t res_len, const void *bulk,
		   size_t bulk_len);

#ifdef __cplusplus
}
#endif
#endif
