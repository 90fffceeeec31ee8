/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a transport provides beneath the one client and server interface of
 * <rpcrdma/oncrpc.h> (docs/architecture.md section 2). A transport's
 * client, server and server connection each start with the matching base
 * (struct rr_rpc_clnt, rr_rpc_svc, rr_svc_conn) whose ops it fills; the
 * functions of oncrpc.h dispatch through them. The table is how src/rpc
 * reaches a transport without knowing it: src/rpcrdma includes this,
 * src/rpc never includes src/rpcrdma.
 */
#ifndef RR_RPC_API_H
#define RR_RPC_API_H

#include <rpcrdma/oncrpc.h>

#include <stddef.h>

#define rr_container_of(p, type, member)                                       \
	((type *)(void *)((char *)(p)-offsetof(type, member)))

struct rr_rpc_clnt_ops {
	const char *netid;
	bool ddp;
	int (*call)(struct rr_rpc_clnt *c, struct rr_call *call);
	int (*call_async)(struct rr_rpc_clnt *c, struct rr_call *call,
			  rr_call_done_fn done, void *arg);
	int (*cancel)(struct rr_rpc_clnt *c, struct rr_call *call);
	/* fd >= 0: rr_rpc_clnt_progress_fd */
	int (*progress)(struct rr_rpc_clnt *c, int timeout_ms, int fd);
	int (*stats)(struct rr_rpc_clnt *c, struct rr_xprt_stats *out);
	int (*disconnect)(struct rr_rpc_clnt *c);
	/* NULL: the transport registers nothing (0 returned) */
	int (*mem_reg)(struct rr_rpc_clnt *c, void *addr, size_t len);
	int (*mem_unreg)(struct rr_rpc_clnt *c, void *addr);
	/* NULL: no reverse direction yet (-EOPNOTSUPP) */
	int (*serve)(struct rr_rpc_clnt *c, const struct rr_svc_prog *prog);
	int (*destroy)(struct rr_rpc_clnt *c);
};

struct rr_rpc_clnt {
	const struct rr_rpc_clnt_ops *ops;
};

struct rr_rpc_svc_ops {
	const char *netid;
	int (*reg)(struct rr_rpc_svc *s, const struct rr_svc_prog *prog);
	int (*port)(struct rr_rpc_svc *s, uint16_t *port);
	int (*run)(struct rr_rpc_svc *s);
	void (*stop)(struct rr_rpc_svc *s);
	int (*shutdown)(struct rr_rpc_svc *s); /* NULL: destroy does it all */
	int (*destroy)(struct rr_rpc_svc *s);
	int (*stats)(struct rr_rpc_svc *s, struct rr_xprt_stats *out);
	/* NULL: the transport registers nothing (0 returned) */
	int (*mem_reg)(struct rr_rpc_svc *s, const void *addr, size_t len);
	int (*mem_unreg)(struct rr_rpc_svc *s, const void *addr);
	/* as rr_rpc_svc_conns; s's own locks, never the caller's */
	int (*conns)(struct rr_rpc_svc *s, struct rr_svc_conn_info *out,
		     uint32_t cap, uint32_t *shown, uint32_t *hidden);
};

struct rr_rpc_svc {
	const struct rr_rpc_svc_ops *ops;
};

/*
 * A server connection that can carry calls to its client. get/put hold
 * it past its connection's end (calls then fail -ENOTCONN); receives_here
 * says whether this thread is the one that would read the reply.
 */
struct rr_svc_conn_ops {
	int (*call_async)(struct rr_svc_conn *conn, struct rr_call *call,
			  rr_call_done_fn done, void *arg);
	int (*cancel)(struct rr_svc_conn *conn, struct rr_call *call);
	bool (*receives_here)(const struct rr_svc_conn *conn);
	void (*get)(struct rr_svc_conn *conn);
	void (*put)(struct rr_svc_conn *conn);
};

struct rr_svc_conn {
	const struct rr_svc_conn_ops *ops;
	const struct sockaddr *peer;
};

/* Each transport's tables, set by its constructors. */
extern const struct rr_rpc_clnt_ops rr__clnt_rpc_ops, rr__tcp_clnt_rpc_ops;
extern const struct rr_rpc_svc_ops rr__svc_rpc_ops, rr__tcp_svc_rpc_ops;

/*
 * A progress_fd caller while another thread reads the replies (which runs
 * their callbacks meanwhile): waits on fd alone, for at most
 * RR_PROGRESS_FD_SLICE_MS, the longest a reply then waits for a reader
 * once that thread has stopped. -EAGAIN (readable) or -ETIMEDOUT.
 */
#define RR_PROGRESS_FD_SLICE_MS 1
int rr__rpc_wait_fd(int fd, int timeout_ms);

struct rr_tcp_svc;
struct rr_tcp_svc *rr__tcp_svc_of(struct rr_rpc_svc *s);
int rr__tcp_svc_conns(struct rr_rpc_svc *s, struct rr_svc_conn_info *out,
		      uint32_t cap, uint32_t *shown, uint32_t *hidden);

#endif
