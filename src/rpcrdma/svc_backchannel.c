/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Server: calling a client back over its own connection (RFC 8167).
 *
 * A callback is an RPC call of ours, with an xid of its own sequence (the
 * two directions' xids are unrelated), sent inline as RDMA_MSG with no
 * chunks: arguments and results must fit the inline sizes. It needs a
 * backward credit, which the client grants in the rdma_credit of its
 * replies (1 until the first; never more than SVC_CB_MAX here, each
 * having a receive buffer for its reply), and send-queue room beyond
 * what the forward replies have reserved. Callbacks that cannot go yet
 * wait in their connection's FIFO. A message the client sends that is
 * RDMA_MSG and whose RPC msg_type is REPLY answers one of them, matched
 * by xid; one that matches none is counted (cb_bad_xids) and answered
 * RDMA_ERROR ERR_CHUNK, as before callbacks existed.
 *
 * A callback ends exactly once: by its reply, its timeout, its
 * cancellation or its connection's end (-ENOTCONN). A timed-out or
 * cancelled one keeps its credit until its reply comes: the client still
 * counts it. The waiting FIFO and the slots are rpc/cb_table.h's, which
 * the TCP server keeps too. Completions are handed to their callers after
 * s->mu is released (rr__svc_cb_run_done), so a done function may call
 * again.
 */
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "rpc/call_priv.h"
#include "rpcrdma/svc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define CB(x) rr_container_of(x, struct svc_cb, base)

static const struct rr_svc_conn_ops cb_ops;

int rr__svc_cb_new(struct svc_conn *cn)
{
	struct svc_cb *cb = rr_calloc(1, sizeof(*cb));

	if (!cb)
		return -ENOMEM;
	cb->base.ops = &cb_ops;
	cb->base.peer = (const struct sockaddr *)&cb->peer;
	atomic_init(&cb->refs, 1); /* the connection's */
	cb->s = cn->s;
	cb->cn = cn;
	cb->granted = 1;
	/* A timed-out callback's credit stays taken until its reply. */
	rr__cb_table_init(&cb->tab, cb->slots, SVC_CB_MAX, true);
	if (getrandom(&cb->tab.xid_seq, sizeof(cb->tab.xid_seq),
		      GRND_NONBLOCK) != sizeof(cb->tab.xid_seq))
		cb->tab.xid_seq = (uint32_t)rr_mono_ms() * 2654435761u;
	cn->cb = cb;
	return 0;
}

static void cb_get(struct rr_svc_conn *conn)
{
	atomic_fetch_add(&CB(conn)->refs, 1);
}

static void cb_put(struct rr_svc_conn *conn)
{
	struct svc_cb *cb = CB(conn);

	if (atomic_fetch_sub(&cb->refs, 1) == 1)
		free(cb);
}

void rr__svc_cb_put_conn(struct svc_conn *cn)
{
	if (cn->cb)
		cb_put(&cn->cb->base);
	cn->cb = NULL;
}

/* The call's result, for rr__svc_cb_run_done. Caller holds s->mu. */
static void deliver(struct rr_svc *s, struct rr_call *call, int rc)
{
	rr__call_list_end(&s->cb_done, call, rc);
}

void rr__svc_cb_run_done(struct rr_svc *s)
{
	struct rr_call_list l;

	pthread_mutex_lock(&s->mu);
	l = s->cb_done;
	s->cb_done = (struct rr_call_list){0};
	pthread_mutex_unlock(&s->mu);
	rr__call_list_run(&l);
}

/* Every callback of the connection fails: it is gone. Under s->mu. */
void rr__svc_cb_gone(struct svc_conn *cn)
{
	struct svc_cb *cb = cn->cb;

	if (!cb || !cb->cn)
		return;
	rr__cb_fail_all(&cb->tab, -ENOTCONN, &cb->s->cb_done);
	cb->cn = NULL;
}

/* Header, call header and arguments into the next send buffer. */
static int encode(struct svc_cb *cb, const struct rr_call *call, uint32_t xid,
		  uint8_t *buf, size_t cap)
{
	struct rr_rdma_hdr h = {.xid = xid,
				.vers = RR_RDMA_VERSION,
				.credits = SVC_CB_MAX, /* what we would use */
				.proc = RR_RDMA_MSG};
	int n = rr__rdma_hdr_encode(&h, buf, cap), m;

	if (n < 0)
		return n;
	m = rr__call_msg_hdr(call, xid, cb->s->machine, buf + n,
			     cap - (size_t)n);
	if (m < 0)
		return m == -ENOSPC ? -EMSGSIZE : m;
	n += m;
	if (call->args_len > cap - (size_t)n)
		return -EMSGSIZE;
	if (call->args_len)
		memcpy(buf + n, call->args, call->args_len);
	return n + (int)call->args_len;
}

static size_t send_cap(const struct svc_conn *cn)
{
	return cn->inline_send < cn->sendbufs.size ? cn->inline_send
						   : cn->sendbufs.size;
}

/* Sends the FIFO's head; it fails alone when it cannot be carried. */
static void post_head(struct svc_cb *cb, struct rr__cb_slot *sl)
{
	struct svc_conn *cn = cb->cn;
	struct rr_call *call = rr__cb_pop(&cb->tab);
	uint32_t xid = ++cb->tab.xid_seq;
	int n;

	n = encode(cb, call, xid, rr__svc_send_buf(cn), send_cap(cn));
	if (n < 0) {
		deliver(cb->s, call, n);
		return;
	}
	if (rr__svc_send(cn, (uint32_t)n)) {
		deliver(cb->s, call, -ENOTCONN); /* cn is dead now */
		return;
	}
	rr__cb_sent(&cb->tab, sl, call, xid);
	cb->s->st.cb_calls++;
}

static uint32_t credits(const struct svc_cb *cb)
{
	return cb->granted < SVC_CB_MAX ? cb->granted : SVC_CB_MAX;
}

/* Sends what credits and send-queue room allow, in order. */
static void kick(struct svc_cb *cb)
{
	struct rr_call *head;

	while (cb->cn && !rr__svc_conn_dead(cb->cn) &&
	       (head = rr__cb_head(&cb->tab))) {
		struct rr__cb_slot *sl = rr__cb_slot_free(&cb->tab);

		if (cb->tab.nbusy >= credits(cb) || !sl) {
			if (!rr__call_priv(head)->waited) {
				rr__call_priv(head)->waited = 1;
				cb->s->st.cb_credit_waits++;
			}
			return;
		}
		if (!rr__svc_sq_room(cb->cn, 1))
			return;
		post_head(cb, sl);
	}
}

/* An inline handler holds s->mu already (rr__svc_tl_locked). */
static bool lock(struct rr_svc *s)
{
	if (rr__svc_tl_locked == s)
		return false;
	pthread_mutex_lock(&s->mu);
	return true;
}

/* Done functions run once no lock is held: now, or at the loop's end. */
static void unlock(struct rr_svc *s, bool locked)
{
	if (!locked)
		return;
	pthread_mutex_unlock(&s->mu);
	rr__svc_cb_run_done(s);
}

/*
 * Where the loop thread alone may post (rr_svc.post_in_loop), a callback
 * from elsewhere waits for the loop's next pass (rr__svc_cb_tick).
 */
static int cb_call_async(struct rr_svc_conn *conn, struct rr_call *call,
			 rr_call_done_fn done, void *arg)
{
	struct svc_cb *cb = CB(conn);
	struct rr_svc *s = cb->s;
	bool locked;
	int rc = 0;

	if (call->args_len && !call->args)
		return -EINVAL;
	locked = lock(s);
	if (!cb->cn || rr__svc_conn_dead(cb->cn))
		rc = -ENOTCONN;
	else if (RR_RDMA_HDR_EMPTY + 28 + call->args_len > send_cap(cb->cn))
		rc = -EMSGSIZE; /* a credential may still make it too long */
	if (!rc) {
		rr__cb_queue(&cb->tab, call, done, arg,
			     rr__cb_deadline(call, SVC_CB_TIMEOUT_MS));
		if (!s->post_in_loop || rr__svc_tl_loop == s)
			kick(cb);
	}
	unlock(s, locked);
	return rc;
}

/* In flight: returned now, its slot owed until the reply comes. */
static int cb_cancel(struct rr_svc_conn *conn, struct rr_call *call)
{
	struct svc_cb *cb = CB(conn);
	struct rr_svc *s = cb->s;
	bool locked = lock(s);
	int rc = 0;

	if (rr__cb_end(&cb->tab, call, -ECANCELED, &s->cb_done))
		s->st.cancels++;
	else
		rc = -ENOENT;
	unlock(s, locked);
	return rc;
}

static bool cb_receives_here(const struct rr_svc_conn *conn)
{
	return rr__svc_tl_loop == CB(conn)->s;
}

static const struct rr_svc_conn_ops cb_ops = {
	.call_async = cb_call_async,
	.cancel = cb_cancel,
	.receives_here = cb_receives_here,
	.get = cb_get,
	.put = cb_put,
};

/* The reply in call, if it has not ended already (then it is late). */
static void complete(struct svc_cb *cb, struct rr_call *call, uint32_t xid,
		     const uint8_t *msg, uint32_t len)
{
	struct rr_svc *s = cb->s;
	int rc;

	if (!call)
		return; /* returned already: the reply only frees the credit */
	rc = rr__reply_take(call, xid, msg, len);
	if (rc == -EPROTO)
		s->st.bad_headers++;
	else
		s->st.cb_replies++;
	deliver(s, call, rc);
}

/*
 * Whether the message (after its transport header h) is a reply to a
 * callback: then it is taken and the caller reposts the receive. One
 * naming none of ours is counted, and left to the caller, which answers
 * it ERR_CHUNK as any message that is not a call. A reply's rdma_credit
 * is the client's backward grant.
 */
bool rr__svc_cb_reply(struct svc_conn *cn, const struct rr_rdma_hdr *h,
		      const uint8_t *msg, uint32_t len)
{
	struct svc_cb *cb = cn->cb;
	struct rr_call *call = NULL;
	uint32_t xid, type;

	if (h->proc != RR_RDMA_MSG || rr__rpc_peek(msg, len, &xid, &type) ||
	    type != RR_RPC_REPLY)
		return false;
	if (xid != h->xid || h->nread || h->nwrite || h->has_reply ||
	    rr__cb_answered(&cb->tab, xid, &call)) {
		/* Counted, then answered as any message that is no call. */
		cn->s->st.cb_bad_xids++;
		rr_info_rl("svc: reply xid %08x to no callback of ours", xid);
		return false;
	}
	cb->granted = h->credits ? h->credits : 1;
	complete(cb, call, xid, msg, len);
	kick(cb);
	return true;
}

/*
 * Each pass of the loop (s->mu held): timeouts, and callbacks that wait
 * sent as completions made room.
 */
void rr__svc_cb_tick(struct rr_svc *s)
{
	uint64_t now = 0;

	for (struct svc_conn *cn = s->conns; cn; cn = cn->next) {
		struct svc_cb *cb = cn->cb;

		if (!cb || (!cb->tab.nbusy && !rr__cb_head(&cb->tab)))
			continue;
		if (!now)
			now = rr_mono_ms();
		s->st.cb_timeouts += rr__cb_expire(&cb->tab, now, &s->cb_done);
		kick(cb);
	}
}
