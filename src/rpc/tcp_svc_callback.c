// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The TCP server calling its clients back over their own connections
 * (RFC 5531 section 11: one connection carries messages both ways, each
 * saying by its msg_type whether it is a CALL or a REPLY; NFSv4.1's
 * backchannel, RFC 8881 section 2.10.3.1, is a user of this).
 *
 * A callback goes out on its connection's output queue like a reply,
 * with an xid of the connection's own sequence. At most cb_max_in_flight
 * are on the wire per connection, and none is sent while the queue holds
 * max_queued bytes (the client is not reading): those wait in issue
 * order and go out as replies and the queue's drain make room. Replies
 * are read by the loop thread among the client's calls (tcp_svc.c
 * on_record) and matched by xid; one naming no callback on the wire is
 * counted (cb_bad_xids) and dropped, which includes the late reply of a
 * callback that timed out or was cancelled.
 *
 * Every callback completes exactly once: by its reply, its deadline
 * (checked by the loop every CB_TICK_MS while any is outstanding), a
 * cancellation, or the connection's end (-ENOTCONN). Each of those takes
 * it out of its slot or the waiting list (rpc/cb_table.h, the same table
 * RPC-over-RDMA keeps) under conn->mu first; whoever took it runs done,
 * without the lock.
 *
 * One stream carries both directions, so a callback's reply is read only
 * after the client's calls sent before it. While the connection serves
 * no further call (its 16 calls in workers, or its replies unread:
 * tcp_svc.c back-pressure) those calls are not read, and neither is the
 * reply behind them: a handler waiting for it then waits for its
 * timeout. A client keeps its forward calls in flight below that bound
 * (as an NFSv4.1 session's slot table does) to avoid it; bounding the
 * server's memory leaves no other way.
 *
 * The struct rr_svc_conn a handler takes is the connection's own, held by
 * the connection's reference count: a worker may keep it past the
 * connection's end, when calls fail -ENOTCONN and touch nothing else of
 * the server (so even past rr_tcp_svc_destroy).
 */
#include "rpc/call_priv.h"
#include "rpc/tcp_svc.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/xdr.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define CB_HDR_MAX 512 /* 24 + AUTH_SYS (8 + 400) + verf (8) */
#define CB_TICK_MS 20  /* callback deadlines are checked this often */

#define CONN(x) rr_container_of(x, struct tcp_conn, base)

/* The server whose loop runs on this thread, for receives_here. */
static _Thread_local const struct rr_tcp_svc *loop_of;

void rr__tcp_cb_loop_enter(struct rr_tcp_svc *s)
{
	loop_of = s;
}

int rr__tcp_cb_init(struct tcp_conn *c)
{
	uint32_t n = c->s->o.cb_max_in_flight;
	struct rr__cb_slot *slots = rr_calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	/* A slot is free once its call ends: TCP has no credit to owe. */
	rr__cb_table_init(&c->cb.tab, slots, n, false);
	/* Different connections, different xids: a client's reply cache. */
	c->cb.tab.xid_seq = (uint32_t)rr_mono_ms() ^
			    ((uint32_t)getpid() << 16) ^ (uint32_t)(uintptr_t)c;
	return 0;
}

void rr__tcp_cb_fini(struct tcp_conn *c)
{
	free(c->cb.tab.slots);
	c->cb.tab.slots = NULL;
}

/* ------------------------------------------------------- completions */

static void count_n(struct rr_tcp_svc *s, uint64_t *ctr, uint32_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&s->smu);
	*ctr += n;
	pthread_mutex_unlock(&s->smu);
}

void rr__tcp_cb_done_run(struct rr_tcp_svc *s, struct tcp_cb_done *l)
{
	count_n(s, &s->st.cb_calls, l->sent);
	count_n(s, &s->st.cb_replies, l->replies);
	count_n(s, &s->st.cb_timeouts, l->timeouts);
	count_n(s, &s->st.bad_headers, l->bad_headers);
	if (l->calls.n)
		atomic_fetch_sub(&s->cb_busy, l->calls.n);
	rr__call_list_run(&l->calls);
	*l = (struct tcp_cb_done){0};
}

/* -------------------------------------------------------------- sends */

/* One record: call header, arguments, any bulk inline. Caller holds mu. */
static int cb_send(struct tcp_conn *c, struct rr_call *call, uint32_t xid)
{
	uint8_t hdr[RR_RM_HDR_LEN + CB_HDR_MAX];
	struct iovec iov[4];
	int n = rr__rm_call_iov(call, xid, c->s->machine, hdr, CB_HDR_MAX, iov);

	if (n < 0)
		return n;
	if (!c->out.bytes) /* the stall deadline counts from here */
		c->out_since_ms = rr_coarse_ms();
	rr__tcp_conn_out(c, iov, 4);
	return 0;
}

/*
 * A broken socket is not an error here: the call stays in its slot and
 * the loop, closing the connection, fails it with the others.
 */
void rr__tcp_cb_pump(struct tcp_conn *c, struct tcp_cb_done *l)
{
	struct rr__cb_table *t = &c->cb.tab;

	while (rr__cb_head(t) && !c->closed && t->nbusy < t->nslots &&
	       c->out.bytes < c->s->o.max_queued) {
		struct rr_call *call = rr__cb_pop(t);
		uint32_t xid = t->xid_seq++;
		int rc = cb_send(c, call, xid);

		if (rc) { /* the header did not encode: nothing sent */
			rr__call_list_end(&l->calls, call, rc);
			continue;
		}
		rr__cb_sent(t, rr__cb_slot_free(t), call, xid);
		l->sent++;
	}
}

/* ------------------------------------------------------------- calls */

static int call_ok(const struct tcp_conn *c, const struct rr_call *call)
{
	size_t max = c->s->o.max_record - CB_HDR_MAX;

	if ((call->args_len && !call->args) ||
	    (call->arg_bulk_len && !call->arg_bulk) ||
	    (call->res_cap && !call->res))
		return -EINVAL;
	if (call->args_len > max || call->arg_bulk_len > max ||
	    call->args_len + call->arg_bulk_len + 3 > max)
		return -EMSGSIZE;
	return 0;
}

static int conn_call_async(struct rr_svc_conn *base, struct rr_call *call,
			   rr_call_done_fn done, void *arg)
{
	struct tcp_conn *c = CONN(base);
	struct tcp_cb_done l = {0};
	struct rr_tcp_svc *s = NULL;
	bool first = false;
	int rc;

	pthread_mutex_lock(&c->mu);
	/* Past the end, c->s may be gone: look at nothing else. */
	rc = c->closed || c->cb.gone ? -ENOTCONN : call_ok(c, call);
	if (!rc) {
		s = c->s;
		first = atomic_fetch_add(&s->cb_busy, 1) == 0;
		rr__cb_queue(&c->cb.tab, call, done, arg,
			     rr__cb_deadline(call, s->o.cb_timeout_ms));
		rr__tcp_cb_pump(c, &l);
	}
	pthread_mutex_unlock(&c->mu);
	if (s) {
		if (first) /* the loop sleeps longer when nothing is due */
			rr__tcp_svc_wake(s);
		rr__tcp_cb_done_run(s, &l);
	}
	return rc;
}

static int conn_cancel(struct rr_svc_conn *base, struct rr_call *call)
{
	struct tcp_conn *c = CONN(base);
	struct tcp_cb_done l = {0};
	struct rr_tcp_svc *s = NULL;

	pthread_mutex_lock(&c->mu);
	if (rr__cb_end(&c->cb.tab, call, -ECANCELED, &l.calls)) {
		s = c->s; /* a call was there: the server is too */
		rr__tcp_cb_pump(c, &l);
	}
	pthread_mutex_unlock(&c->mu);
	if (!s)
		return -ENOENT;
	rr__tcp_svc_count(s, &s->st.cancels);
	rr__tcp_cb_done_run(s, &l);
	return 0;
}

static bool conn_receives_here(const struct rr_svc_conn *base)
{
	return loop_of && loop_of == CONN(base)->s;
}

static void conn_get(struct rr_svc_conn *base)
{
	rr_ref_get(&CONN(base)->ref);
}

static void conn_put_base(struct rr_svc_conn *base)
{
	rr__tcp_conn_put(CONN(base));
}

const struct rr_svc_conn_ops rr__tcp_svc_conn_ops = {
	.call_async = conn_call_async,
	.cancel = conn_cancel,
	.receives_here = conn_receives_here,
	.get = conn_get,
	.put = conn_put_base,
};

/* ------------------------------------------------------ loop thread */

void rr__tcp_cb_reply(struct tcp_conn *c, const uint8_t *rec, size_t len)
{
	struct tcp_cb_done l = {0};
	struct rr_call *call = NULL;
	uint32_t xid, type;
	bool ours;
	int rc;

	if (rr__rpc_peek(rec, len, &xid, &type))
		return;
	pthread_mutex_lock(&c->mu);
	/* Slots are not kept past their call's end: found means a call. */
	ours = !rr__cb_answered(&c->cb.tab, xid, &call) && call;
	if (ours) {
		rc = rr__reply_take(call, xid, rec, len);
		call->res_bulk_len = 0; /* over TCP a bulk result is inline */
		l.bad_headers += rc == -EPROTO;
		l.replies++;
		rr__call_list_end(&l.calls, call, rc);
		rr__tcp_cb_pump(c, &l);
	}
	pthread_mutex_unlock(&c->mu);
	if (!ours) {
		rr__tcp_svc_count(c->s, &c->s->st.cb_bad_xids);
		rr_info_rl("tcp svc: a reply naming no callback: dropped");
	}
	rr__tcp_cb_done_run(c->s, &l);
}

void rr__tcp_cb_conn_gone(struct tcp_conn *c)
{
	struct tcp_cb_done l = {0};

	pthread_mutex_lock(&c->mu);
	c->cb.gone = true;
	rr__cb_fail_all(&c->cb.tab, -ENOTCONN, &l.calls);
	pthread_mutex_unlock(&c->mu);
	rr__tcp_cb_done_run(c->s, &l);
}

bool rr__tcp_cb_ticking(struct rr_tcp_svc *s)
{
	return atomic_load(&s->cb_busy) != 0;
}

void rr__tcp_cb_expire(struct rr_tcp_svc *s, uint64_t now)
{
	if (!rr__tcp_cb_ticking(s) || now < s->next_cb_ms)
		return;
	s->next_cb_ms = now + CB_TICK_MS;
	for (struct tcp_conn *c = s->conns; c; c = c->next) {
		struct tcp_cb_done l = {0};

		pthread_mutex_lock(&c->mu);
		l.timeouts += rr__cb_expire(&c->cb.tab, rr_mono_ms(), &l.calls);
		if (l.calls.n)
			rr__tcp_cb_pump(c, &l);
		pthread_mutex_unlock(&c->mu);
		rr__tcp_cb_done_run(s, &l);
	}
}

int rr__tcp_cb_tick_ms(void)
{
	return CB_TICK_MS;
}
