// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Calls in the reverse direction, the parts every transport shares: a
 * server's handle on the connection it calls a client back on, the
 * synchronous wait on top of a transport's asynchronous callback, and a
 * client serving the calls that arrive (RFC 8167 section 4 for RDMA, RFC
 * 5531 section 11 for TCP: one connection carries both directions, each
 * message says by its msg_type which one it belongs to).
 */
#include "rpc/api.h"
#include "rpc/call_wait.h"
#include "rpc/dispatch.h"

#include <errno.h>
#include <pthread.h>

struct rr_svc_conn *rr_svc_req_conn(struct rr_svc_req *r)
{
	if (!r || !r->conn)
		return NULL;
	r->conn->ops->get(r->conn);
	return r->conn;
}

void rr_svc_conn_put(struct rr_svc_conn *conn)
{
	if (conn)
		conn->ops->put(conn);
}

int rr_svc_conn_call_async(struct rr_svc_conn *conn, struct rr_call *call,
			   rr_call_done_fn done, void *arg)
{
	if (!conn || !call || !done)
		return -EINVAL;
	return conn->ops->call_async(conn, call, done, arg);
}

int rr_svc_conn_cancel(struct rr_svc_conn *conn, struct rr_call *call)
{
	if (!conn || !call)
		return -EINVAL;
	return conn->ops->cancel(conn, call);
}

const struct sockaddr *rr_svc_conn_peer(const struct rr_svc_conn *conn)
{
	return conn ? conn->peer : NULL;
}

int rr_svc_conn_call(struct rr_svc_conn *conn, struct rr_call *call)
{
	struct rr_call_wait w;
	int rc;

	if (!conn || !call)
		return -EINVAL;
	if (conn->ops->receives_here(conn))
		return -EDEADLK;
	rr__call_wait_init(&w);
	rc = conn->ops->call_async(conn, call, rr__call_wait_done, &w);
	if (!rc)
		rc = rr__call_wait_end(&w);
	rr__call_wait_fini(&w);
	return rc;
}

int rr__cb_serve(const struct rr_progtab *t, const uint8_t *msg, size_t len,
		 uint8_t *res, size_t res_cap, uint8_t *out, size_t out_cap)
{
	return rr__serve_whole(t, NULL, msg, len, res, res_cap, out, out_cap);
}

int rr__serve_whole(const struct rr_progtab *t, const struct sockaddr *peer,
		    const uint8_t *msg, size_t len, uint8_t *res,
		    size_t res_cap, uint8_t *out, size_t out_cap)
{
	struct rr_svc_req r = {.peer = peer};
	struct rr_reply_hdr rh;
	int n;

	if (rr__svc_req_parse(&r, msg, len))
		return -EBADMSG;
	r.res = res;
	r.res_cap = res_cap;
	rr__dispatch(t, &r, &rh);
	n = rr__reply_encode(&r, &rh, true, out, out_cap);
	if (n != -ENOSPC)
		return n;
	rh.accept = RR_SYSTEM_ERR; /* no results: the header alone fits */
	return rr__reply_encode(&r, &rh, true, out, out_cap);
}
