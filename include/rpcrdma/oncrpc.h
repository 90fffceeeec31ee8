/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC (RFC 5531) without a transport: status codes, credentials, the
 * call a client makes, the programs and handlers a server runs, and the
 * counters every transport keeps. <rpcrdma/rpc.h> (RPC-over-RDMA) and
 * <rpcrdma/rpc_tcp.h> (TCP record marking) carry these; a program written
 * against this header is served, and a call made, the same way over both.
 *
 * Nothing here names the fabric: code that speaks ONC RPC only over TCP
 * includes this and <rpcrdma/rpc_tcp.h>, never <rpcrdma/fabric.h>.
 */
#ifndef RPCRDMA_ONCRPC_H
#define RPCRDMA_ONCRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports what this header declares (-fvisibility=hidden). */
#pragma GCC visibility push(default)

struct sockaddr;

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
	/*
	 * Moves of a call's or a connection's state machine that its table
	 * does not allow (base/fsm.h). Always 0 unless we have a bug.
	 */
	uint64_t state_violations;
	/*
	 * Calls in the reverse direction (rr_svc_conn_call; RFC 8167 over
	 * RDMA). Server: callbacks sent (cb_calls), replies matched to them
	 * (cb_replies), callbacks timed out (cb_timeouts), that waited for
	 * the client's backward credit (cb_credit_waits, RDMA), and replies
	 * naming none in flight (cb_bad_xids, dropped). Client: the server's
	 * calls served (cb_calls) and answered (cb_replies); dropped
	 * unanswered (cb_dropped, RDMA: it takes none, more at once than it
	 * granted, or malformed); replies dropped because the output queue
	 * was full (cb_replies_dropped, TCP; the server then times them out).
	 */
	uint64_t cb_calls;
	uint64_t cb_replies;
	uint64_t cb_timeouts;
	uint64_t cb_credit_waits;
	uint64_t cb_bad_xids;
	uint64_t cb_dropped;
	uint64_t cb_replies_dropped;
	/*
	 * Server, RDMA: DDP-eligible results copied into a bulk buffer for
	 * their RDMA Write, because the handler built them neither there
	 * (rr_svc_bulk_buf) nor in memory given to rr_svc_mem_reg.
	 */
	uint64_t res_bulk_copies;
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
	X(peers_penalised)                                                     \
	X(state_violations)                                                    \
	X(cb_calls)                                                            \
	X(cb_replies)                                                          \
	X(cb_timeouts)                                                         \
	X(cb_credit_waits)                                                     \
	X(cb_bad_xids)                                                         \
	X(cb_dropped)                                                          \
	X(cb_replies_dropped)                                                  \
	X(res_bulk_copies)

/* AUTH_SYS identity for calls; NULL in a call means AUTH_NONE. */
struct rr_cred {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[16];
	const char *machine; /* NULL: gethostname() */
};
/* ------------------------------------------------------------- client */

/*
 * Another server of the same service, for a client to fail over to
 * (rr_clnt_opts, rr_tcp_clnt_opts: failover): one that shares the first
 * server's state, as nfsrdmad's do on one CephFS with one handle key.
 */
#define RR_FAILOVER_MAX 7
struct rr_failover_server {
	const char *host;
	uint16_t port;
};

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
	/*
	 * What the call ended with: the return code of the synchronous call,
	 * the rc done gets; set before either. Keeps it for a caller that
	 * looks later (a list of calls completed in a batch).
	 */
	int status;

	/*
	 * The transport's while the call is in it: room only, so that a
	 * call needs no allocation. Nothing here is for the caller to read.
	 */
	union {
		unsigned char room_[64];
		uint64_t align_;
	} priv_;
};
/* ------------------------------------------------------------- server */

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
/* Handler side. Pointers stay valid until the handler returns. */
uint32_t rr_svc_req_proc(const struct rr_svc_req *r);
uint32_t rr_svc_req_vers(const struct rr_svc_req *r);
/*
 * The caller's address (its port too), or NULL where the transport has
 * none. MOUNT keeps its list per client with it.
 */
const struct sockaddr *rr_svc_req_peer(const struct rr_svc_req *r);
/*
 * Our address the call came to, or NULL where the transport does not say
 * (TCP says): a call back to the client goes from there, for a client may
 * accept callbacks only from the address it called (Linux's lockd does).
 */
const struct sockaddr *rr_svc_req_local(const struct rr_svc_req *r);
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

/* ------------------------------------------------------ any transport */

/*
 * One client and one server interface over every transport. A transport's
 * constructor makes the object (rr_clnt_create for RPC-over-RDMA,
 * rr_tcp_clnt_create for TCP, likewise the servers); rr_clnt_rpc() or
 * rr_tcp_clnt_rpc() then gives this view of it, and code written against
 * it runs unchanged over both. Each function behaves, and returns, as the
 * transport's own function of the same name documents; destroying through
 * this view destroys the transport's object.
 */
struct rr_rpc_clnt;

int rr_rpc_clnt_call(struct rr_rpc_clnt *c, struct rr_call *call);
int rr_rpc_clnt_call_async(struct rr_rpc_clnt *c, struct rr_call *call,
			   rr_call_done_fn done, void *arg);
int rr_rpc_clnt_cancel(struct rr_rpc_clnt *c, struct rr_call *call);
int rr_rpc_clnt_progress(struct rr_rpc_clnt *c, int timeout_ms);
/*
 * rr_rpc_clnt_progress for a thread that also serves fd (a descriptor it
 * does not read here, e.g. /dev/fuse): returns -EAGAIN as soon as fd is
 * readable, so one thread takes requests and their replies with no
 * wake-up of a second one. It never waits for another thread driving the
 * client (that thread runs the callbacks): it then watches fd alone, for
 * a millisecond at most. 0 (a call completed), -EAGAIN, -ETIMEDOUT, or
 * the transport's error.
 */
int rr_rpc_clnt_progress_fd(struct rr_rpc_clnt *c, int timeout_ms, int fd);
int rr_rpc_clnt_stats(struct rr_rpc_clnt *c, struct rr_xprt_stats *out);
int rr_rpc_clnt_disconnect(struct rr_rpc_clnt *c);
/*
 * Memory the transport may expose to the server without a copy (RDMA);
 * 0 and nothing done where the transport copies everything (TCP).
 */
int rr_rpc_clnt_mem_reg(struct rr_rpc_clnt *c, void *addr, size_t len);
int rr_rpc_clnt_mem_unreg(struct rr_rpc_clnt *c, void *addr);
/*
 * Serves calls the server makes back over this client's connection (the
 * reverse direction: RFC 8167 over RDMA, RFC 5531 section 11 over TCP),
 * with the handler interface below. Handlers run on the thread that
 * receives for the client: they must not block, and may make only
 * asynchronous calls. Register before the first call. -ENOSPC when full,
 * -EEXIST when prog/vers is there, -EOPNOTSUPP where the transport
 * cannot carry calls in that direction.
 */
int rr_rpc_clnt_serve(struct rr_rpc_clnt *c, const struct rr_svc_prog *prog);
int rr_rpc_clnt_destroy(struct rr_rpc_clnt *c);
/* The transport's netid as rpcbind names it: "rdma" or "tcp". */
const char *rr_rpc_clnt_netid(const struct rr_rpc_clnt *c);
/*
 * Whether a DDP-eligible result may land apart in res_bulk (RDMA). Where
 * false it always arrives inline at the end of res.
 */
bool rr_rpc_clnt_ddp(const struct rr_rpc_clnt *c);

struct rr_rpc_svc;

int rr_rpc_svc_register(struct rr_rpc_svc *s, const struct rr_svc_prog *prog);
int rr_rpc_svc_port(struct rr_rpc_svc *s, uint16_t *port);
int rr_rpc_svc_run(struct rr_rpc_svc *s);
void rr_rpc_svc_stop(struct rr_rpc_svc *s); /* async-signal-safe */
int rr_rpc_svc_shutdown(struct rr_rpc_svc *s);
int rr_rpc_svc_destroy(struct rr_rpc_svc *s);
int rr_rpc_svc_stats(struct rr_rpc_svc *s, struct rr_xprt_stats *out);
/*
 * Memory a handler's DDP-eligible results may come from without a copy
 * (rr_svc_mem_reg, RDMA); 0 and nothing done where the transport copies
 * everything (TCP).
 */
int rr_rpc_svc_mem_reg(struct rr_rpc_svc *s, const void *addr, size_t len);
int rr_rpc_svc_mem_unreg(struct rr_rpc_svc *s, const void *addr);
const char *rr_rpc_svc_netid(const struct rr_rpc_svc *s);

/*
 * One live connection of a server, copied at one moment: nothing in it
 * points into the connection, which may be gone by the time it is read.
 * Counters run from the connection's start; a connection still serving
 * may show a call in calls before its reply in replies.
 */
struct rr_svc_conn_info {
	struct sockaddr_storage peer;
	/* constant strings: "rdma" or "tcp"; the state, rr_rpc_svc_conns(3) */
	const char *netid, *state;
	uint64_t since_ms; /* connected at: ms since the Epoch, wall clock */
	uint64_t age_ms;   /* connected for, when copied */
	uint64_t calls;	   /* calls received (not replies to callbacks) */
	uint64_t replies;  /* replies sent */
	/* all the transport moved, headers and RDMA Reads/Writes included */
	uint64_t bytes_in, bytes_out;
	uint64_t errors; /* malformed input, replies that did not fit */
	/* RDMA: the credits we grant, and calls holding one; TCP: 0 */
	uint32_t credits_granted, credits_used;
};

/*
 * Copies up to cap live connections of s into out (*shown of them) and
 * tells how many more there were (*hidden). Safe from any thread while
 * the server runs; out may be NULL when cap is 0.
 */
int rr_rpc_svc_conns(struct rr_rpc_svc *s, struct rr_svc_conn_info *out,
		     uint32_t cap, uint32_t *shown, uint32_t *hidden);

/*
 * Calling a client back: a handler takes the connection its call came on
 * (rr_svc_req_conn, which holds a reference until rr_svc_conn_put) and
 * may call the client over it, then or later, from any thread. The
 * reverse direction has its own credits and receive buffers on both
 * sides, so callbacks never take a forward call's place. Callbacks carry
 * no DDP-eligible item apart: arguments and results travel inline.
 * A connection that is gone fails calls with -ENOTCONN; a server never
 * reconnects to a client, the client has to come back.
 */
struct rr_svc_conn;

/* NULL where the transport cannot call back (then no reference taken). */
struct rr_svc_conn *rr_svc_req_conn(struct rr_svc_req *r);
void rr_svc_conn_put(struct rr_svc_conn *conn);
/*
 * As rr_rpc_clnt_call_async. timeout_ms 0 means the transport's callback
 * default. -ENOTCONN when the connection is gone, -EOPNOTSUPP when the
 * client said it takes no callbacks.
 */
int rr_svc_conn_call_async(struct rr_svc_conn *conn, struct rr_call *call,
			   rr_call_done_fn done, void *arg);
/*
 * Synchronous: waits for the reply. -EDEADLK on the thread that receives
 * this connection's messages (a handler run inline by a server without
 * workers), where the reply could never be read.
 */
int rr_svc_conn_call(struct rr_svc_conn *conn, struct rr_call *call);
int rr_svc_conn_cancel(struct rr_svc_conn *conn, struct rr_call *call);
/* The client's address, as rr_svc_req_peer gave it. */
const struct sockaddr *rr_svc_conn_peer(const struct rr_svc_conn *conn);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
