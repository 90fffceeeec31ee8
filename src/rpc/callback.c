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

/* The synchronous caller's side of one callback. */
struct cb_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rc;
};

static void cb_wait_done(struct rr_call *call, int rc, void *arg)
{
	struct cb_wait *w = arg;

	(void)call;
	pthread_mutex_lock(&w->mu);
	w->rc = rc;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/*
 * The transport runs done exactly once, by reply, timeout, cancellation or
 * the connection's end, so the wait needs no deadline of its own.
 */
int rr_svc_conn_call(struct rr_svc_conn *conn, struct rr_call *call)
{
	struct cb_wait w = {.mu = PTHREAD_MUTEX_INITIALIZER,
			    .cv = PTHREAD_COND_INITIALIZER};
	int rc;

	if (!conn || !call)
		return -EINVAL;
	if (conn->ops->receives_here(conn))
		return -EDEADLK;
	rc = conn->ops->call_async(conn, call, cb_wait_done, &w);
	if (rc)
		return rc;
	pthread_mutex_lock(&w.mu);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
	return w.rc;
}

int rr_cb_serve(const struct rr_progtab *t, const uint8_t *msg, size_t len,
		uint8_t *res, size_t res_cap, uint8_t *out, size_t out_cap)
{
	struct rr_svc_req r = {0};
	struct rr_reply_hdr rh;
	int n;

	if (rr_svc_req_parse(&r, msg, len))
		return -EBADMSG;
	r.res = res;
	r.res_cap = res_cap;
	rr_dispatch(t, &r, &rh);
	n = rr_reply_encode(&r, &rh, true, out, out_cap);
	if (n != -ENOSPC)
		return n;
	rh.accept = RR_SYSTEM_ERR; /* no results: the header alone fits */
	return rr_reply_encode(&r, &rh, true, out, out_cap);
}
