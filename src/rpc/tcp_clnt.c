/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC client over TCP with record marking (RFC 5531 section 11):
 * calls, replies and the client's I/O thread. The connection's life
 * (connecting, loss and reconnect, keepalive) is in tcp_clnt_conn.c.
 *
 * One connection carries many calls at once, matched to their replies by
 * xid. A call is in one of three places, all under c->mu:
 *  - pending: issued, waiting for one of max_in_flight slots or for a
 *    connection (FIFO);
 *  - a slot: sent (or queued for the socket), waiting for its reply; or,
 *    its connection lost, waiting to be sent again on the next one;
 *  - a done list: taken out of both, its callback about to run without
 *    the lock (a callback may issue the next call).
 * The xid names the slot (low bits) and a sequence number (high bits), so
 * a reply finds its call in O(1) and a reply to an older use of the slot
 * is not mistaken for the current one. A call keeps its slot, and so its
 * xid, across reconnects: that is what a server's duplicate request cache
 * recognises.
 *
 * The client's own thread reads replies (unless a caller waiting for its
 * own reads them: tcp_clnt_drive.c), flushes what the socket did not
 * take at send time, fires timeouts and steps the connection. Callers
 * never block on the socket: a send copies what does not fit into the
 * output queue (tcp_io.c), so a stalled server costs a timeout, not a hung
 * caller.
 *
 * A call that timed out or was cancelled after it was sent leaves its xid
 * in a small ring, so that its late reply is absorbed quietly rather than
 * counted as a reply to nothing (bad_xids).
 */
#include "rpc/call_priv.h"
#include "rpc/call_wait.h"
#include "rpc/tcp_clnt.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/xdr.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEF_MAX_RECORD	  ((1u << 20) + (64u << 10))
#define DEF_MAX_IN_FLIGHT 128
#define MAX_IN_FLIGHT	  1024
#define STAGE_LEN	  (64u << 10)
#define CALL_HDR_MAX	  512 /* 24 + AUTH_SYS (8 + 400) + verf (8) */
#define SYNC_SLICE_MS	  100

void rr__tc_wake(struct rr_tcp_clnt *c)
{
	uint64_t one = 1;
	ssize_t n = write(c->evfd, &one, sizeof(one));

	(void)n;
}

void rr__tc_slot_free(struct rr_tcp_clnt *c, struct tcp_slot *s)
{
	s->call = NULL;
	s->resend = false;
	c->freeidx[c->nfree++] = (uint32_t)(s - c->slots);
	c->nbusy--;
}

static void abandon(struct rr_tcp_clnt *c, uint32_t xid)
{
	c->abandoned[c->ab_pos++ % TC_ABANDON_RING] = xid;
}

static bool was_abandoned(const struct rr_tcp_clnt *c, uint32_t xid)
{
	for (uint32_t i = 0; i < TC_ABANDON_RING; i++)
		if (c->abandoned[i] == xid)
			return true;
	return false;
}

static void pend_unlink(struct rr_tcp_clnt *c, struct rr_call *call,
			struct rr_call *prev)
{
	if (prev)
		rr__call_priv(prev)->next = rr__call_priv(call)->next;
	else
		c->pend_head = rr__call_priv(call)->next;
	if (c->pend_tail == call)
		c->pend_tail = prev;
}

/* Every call, in a slot or pending, completes with rc. */
void rr__tc_fail_all(struct rr_tcp_clnt *c, int rc, struct rr_call_list *l)
{
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct rr_call *call = c->slots[i].call;

		if (call) {
			rr__tc_slot_free(c, &c->slots[i]);
			rr__call_list_end(l, call, rc);
		}
	}
	while (c->pend_head) {
		struct rr_call *call = c->pend_head;

		pend_unlink(c, call, NULL);
		rr__call_list_end(l, call, rc);
	}
}

/* ------------------------------------------------------------- sends */

/*
 * One record: call header, arguments, then the DDP-eligible item inline
 * with its XDR padding. The whole record is built from the call each
 * time, so a call sent again after a reconnect goes out whole whatever
 * part of it the old connection took. Caller holds c->mu.
 */
int rr__tc_send_call(struct rr_tcp_clnt *c, struct rr_call *call, uint32_t xid)
{
	uint8_t hdr[RR_RM_HDR_LEN + CALL_HDR_MAX];
	struct iovec iov[4];
	int n = rr__rm_call_iov(call, xid, c->machine, hdr, CALL_HDR_MAX, iov);

	if (n < 0)
		return n;
	return rr__outq_send(c->fd, &c->out, iov, 4);
}

/*
 * Sends the call in slot s on the connection, which is up. false when the
 * connection broke (the call stays in its slot, to go again on the next).
 * Caller holds c->mu.
 */
bool rr__tc_send_slot(struct rr_tcp_clnt *c, struct tcp_slot *s,
		      struct rr_call_list *l)
{
	bool queued_before = c->out.head != NULL;
	int rc = rr__tc_send_call(c, s->call, s->xid);

	if (rc == -EINVAL) { /* the header did not encode: nothing sent */
		struct rr_call *call = s->call;

		rr__tc_slot_free(c, s);
		rr__call_list_end(l, call, rc);
	} else if (rc) {
		rr__tc_conn_lost(c, l);
		return false;
	} else if (!queued_before && c->out.head) {
		rr__tc_wake(c); /* the I/O thread must watch for POLLOUT now */
	}
	return true;
}

/* Puts call in a free slot and sends it. Caller holds c->mu. */
static void issue(struct rr_tcp_clnt *c, struct rr_call *call,
		  struct rr_call_list *l)
{
	struct tcp_slot *s = &c->slots[c->freeidx[--c->nfree]];

	c->nbusy++;
	s->xid = (++c->seq << c->shift) | (uint32_t)(s - c->slots);
	s->call = call;
	s->resend = false;
	rr__call_priv(call)->req = s;
	rr__tc_send_slot(c, s, l);
}

/* Issues pending calls while connected with free slots. Caller holds c->mu. */
void rr__tc_pump(struct rr_tcp_clnt *c, struct rr_call_list *l)
{
	while (c->pend_head && c->state == TC_UP &&
	       c->nbusy < c->o.max_in_flight) {
		struct rr_call *call = c->pend_head;

		pend_unlink(c, call, NULL);
		issue(c, call, l);
	}
}

/* ----------------------------------------------------------- replies */

/* Reply header and results into the caller's buffers. */
static int decode_reply(struct rr_tcp_clnt *c, struct rr_call *call,
			uint32_t xid, const uint8_t *rec, size_t len)
{
	int rc = rr__reply_take(call, xid, rec, len);

	if (rc == -EPROTO)
		c->st.bad_headers++;
	call->res_bulk_len = 0; /* over TCP a bulk result is inline in res */
	return rc;
}

/*
 * The slot a reply names, or NULL (counted unless it answers a call we
 * gave up on). A call waiting to be sent again has no reply coming on
 * this connection. Caller holds c->mu.
 */
static struct tcp_slot *slot_of(struct rr_tcp_clnt *c, const uint8_t *p,
				size_t len)
{
	uint32_t xid, type;
	struct tcp_slot *s;

	if (!p || rr__rpc_peek(p, len, &xid, &type) || type != RR_RPC_REPLY) {
		c->st.bad_headers++;
		return NULL;
	}
	s = &c->slots[xid & (c->nslots - 1)];
	if (!s->call || s->xid != xid || s->resend) {
		if (!was_abandoned(c, xid))
			c->st.bad_xids++;
		return NULL;
	}
	c->st.calls++;
	rr__backoff_reset(&c->backoff);
	return s;
}

/* Completes the call in s with rc and lets the next ones out. */
static void reply_done(struct rr_tcp_clnt *c, struct tcp_slot *s, int rc,
		       struct rr_call_list *l)
{
	rr__call_list_end(l, s->call, rc);
	rr__tc_slot_free(c, s);
	rr__tc_pump(c, l);
}

/*
 * A record from a connection already given up is nobody's reply. A CALL
 * is the server calling back (tcp_clnt_serve.c).
 */
static void on_record(struct rr_tcp_clnt *c, const uint8_t *rec, size_t len,
		      struct rr_call_list *l)
{
	uint32_t xid, type;
	struct tcp_slot *s;

	if (rec && !rr__rpc_peek(rec, len, &xid, &type) &&
	    type == RR_RPC_CALL) {
		rr__tc_serve_call(c, rec, len, l);
		return;
	}
	pthread_mutex_lock(&c->mu);
	if (c->state == TC_UP && (s = slot_of(c, rec, len)))
		reply_done(c, s, decode_reply(c, s->call, s->xid, rec, len), l);
	pthread_mutex_unlock(&c->mu);
}

/*
 * A reply over max_record was skipped: fail its call with -EMSGSIZE, as
 * for results over res_cap; the connection carries on.
 */
static void on_skipped(struct rr_tcp_clnt *c, struct rr_call_list *l)
{
	size_t len;
	const uint8_t *head = rr__rm_rx_head(&c->rx, &len);
	struct tcp_slot *s;

	pthread_mutex_lock(&c->mu);
	if (c->state == TC_UP && (s = slot_of(c, head, len)))
		reply_done(c, s, -EMSGSIZE, l);
	pthread_mutex_unlock(&c->mu);
}

/* Feeds n staged bytes; false when the stream is broken. */
static bool feed(struct rr_tcp_clnt *c, size_t n, struct rr_call_list *l)
{
	size_t off = 0;

	while (off < n) {
		size_t used, len;
		int rc = rr__rm_rx_feed(&c->rx, c->stage + off, n - off, &used);
		const uint8_t *rec;

		off += used;
		if (rc == -EMSGSIZE) {
			rr__rm_rx_skip(&c->rx);
		} else if (rc < 0) {
			return false;
		} else if (rc == 2) {
			on_skipped(c, l);
			rr__rm_rx_next(&c->rx);
		} else if (rc == 1) {
			rec = rr__rm_rx_record(&c->rx, &len);
			on_record(c, rec, len, l);
			rr__rm_rx_next(&c->rx);
		}
	}
	return true;
}

/*
 * The connection is gone: a record it cut off must not run into the
 * next connection's bytes. The buffer stays, so coming back needs no
 * memory. I/O thread.
 */
void rr__tc_rx_discard(struct rr_tcp_clnt *c)
{
	rr__rm_rx_next(&c->rx);
	c->rx.hdr_have = 0;
	c->rx.frag_left = 0;
	c->rx.in_body = false;
	c->rx.last = false;
}

/* Any byte from the server is a sign of life (keepalive). */
bool rr__tc_read_replies(struct rr_tcp_clnt *c, struct rr_call_list *l)
{
	ssize_t n = recv(c->fd, c->stage, STAGE_LEN, MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ||
		       errno == EINTR;
	if (n == 0)
		return false;
	atomic_store_explicit(&c->ka.last_rx_ms, rr_mono_ms(),
			      memory_order_relaxed);
	return feed(c, (size_t)n, l);
}

/* ---------------------------------------------------- the I/O thread */

static void expire(struct rr_tcp_clnt *c, uint64_t now, struct rr_call_list *l)
{
	struct rr_call *prev = NULL, *call = c->pend_head;

	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tcp_slot *s = &c->slots[i];

		if (s->call && rr__call_priv(s->call)->deadline_ms <= now) {
			struct rr_call *t = s->call;

			if (!s->resend)
				abandon(c, s->xid);
			rr__tc_slot_free(c, s);
			c->st.timeouts++;
			rr__call_list_end(l, t, -ETIMEDOUT);
		}
	}
	while (call) {
		struct rr_call *next = rr__call_priv(call)->next;

		if (rr__call_priv(call)->deadline_ms <= now) {
			pend_unlink(c, call, prev);
			c->st.timeouts++;
			rr__call_list_end(l, call, -ETIMEDOUT);
		} else {
			prev = call;
		}
		call = next;
	}
}

/* Milliseconds until the next deadline, or -1. Caller holds c->mu. */
static int next_timeout(const struct rr_tcp_clnt *c, uint64_t now)
{
	uint64_t d = rr__tc_conn_timer(c);

	for (uint32_t i = 0; i < c->nslots; i++)
		if (c->slots[i].call &&
		    rr__call_priv(c->slots[i].call)->deadline_ms < d)
			d = rr__call_priv(c->slots[i].call)->deadline_ms;
	for (struct rr_call *p = c->pend_head; p; p = rr__call_priv(p)->next)
		if (rr__call_priv(p)->deadline_ms < d)
			d = rr__call_priv(p)->deadline_ms;
	if (d == TC_NO_DEADLINE)
		return -1;
	if (d <= now)
		return 0;
	return d - now > 60000 ? 60000 : (int)(d - now);
}

/*
 * What to watch the socket of a connection that is up for. Input is left
 * to callers that read it themselves, for a slice after the last one did;
 * a socket watched for nothing is left out (it would report a hang-up
 * over and over while a caller reads).
 */
static void up_events(const struct rr_tcp_clnt *c, uint64_t now,
		      struct pollfd *p, int *tmo)
{
	short ev = c->out.head ? POLLOUT : 0;

	if (rr__tc_io_reads(c, now)) {
		ev |= POLLIN;
	} else if (!c->rx_busy) {
		int left = (int)(c->drove_ms + DRIVE_SLICE_MS - now);

		if (*tmo < 0 || left < *tmo)
			*tmo = left;
	} else if (*tmo < 0 || *tmo > DRIVE_SLICE_MS) {
		*tmo = DRIVE_SLICE_MS; /* a caller reads: look again later */
	}
	if (ev)
		p[0] = (struct pollfd){.fd = c->fd, .events = ev};
}

/*
 * Steps the connection and sets up one poll; false when the client is
 * stopping. *polled says what the socket is watched for.
 */
static bool poll_prep(struct rr_tcp_clnt *c, struct pollfd *p, int *tmo,
		      enum tc_state *polled)
{
	struct rr_call_list l = {0};
	uint64_t now;
	bool go;

	pthread_mutex_lock(&c->mu);
	now = rr_mono_ms();
	rr__tc_conn_step(c, now, &l);
	go = !c->stopping;
	*polled = c->state;
	*tmo = next_timeout(c, now);
	p[0] = (struct pollfd){.fd = -1};
	if (c->state == TC_UP)
		up_events(c, now, p, tmo);
	else if (c->state == TC_CONNECTING)
		p[0] = (struct pollfd){.fd = c->fd, .events = POLLOUT};
	p[1] = (struct pollfd){.fd = c->evfd, .events = POLLIN};
	c->poll_deadline = *tmo < 0 ? TC_NO_DEADLINE : now + (uint64_t)*tmo;
	pthread_mutex_unlock(&c->mu);
	rr__call_list_run(&l);
	return go;
}

/* The socket of a connection that was up when polled. */
static void io_up(struct rr_tcp_clnt *c, short revents, struct rr_call_list *l)
{
	if (revents & POLLOUT) {
		pthread_mutex_lock(&c->mu);
		if (c->state == TC_UP && rr__outq_flush(c->fd, &c->out))
			rr__tc_conn_lost(c, l);
		pthread_mutex_unlock(&c->mu);
	}
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && rr__tc_rx_take_io(c)) {
		uint32_t before = l->n;

		if (!rr__tc_read_replies(c, l)) {
			pthread_mutex_lock(&c->mu);
			rr__tc_conn_lost(c, l);
			pthread_mutex_unlock(&c->mu);
		}
		rr__tc_rx_release_io(c, l->n - before);
	}
}

static void io_round(struct rr_tcp_clnt *c, const struct pollfd *p,
		     enum tc_state polled)
{
	struct rr_call_list l = {0};

	if (p[1].revents) {
		uint64_t v;
		ssize_t n = read(c->evfd, &v, sizeof(v));

		(void)n;
	}
	if (polled == TC_UP && p[0].revents) {
		io_up(c, p[0].revents, &l);
	} else if (polled == TC_CONNECTING && p[0].revents) {
		pthread_mutex_lock(&c->mu);
		if (c->state == TC_CONNECTING)
			rr__tc_conn_ready(c, rr_mono_ms(), &l);
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_lock(&c->mu);
	expire(c, rr_mono_ms(), &l);
	rr__tc_pump(c, &l);
	pthread_mutex_unlock(&c->mu);
	rr__call_list_run(&l);
}

static void *io_main(void *arg)
{
	struct rr_tcp_clnt *c = arg;
	enum tc_state polled;
	struct pollfd p[2];
	int tmo;

	pthread_setname_np(pthread_self(), "rr-tcp-clnt");

	while (poll_prep(c, p, &tmo, &polled)) {
		if (poll(p, 2, tmo) < 0 && errno != EINTR)
			break;
		io_round(c, p, polled);
	}
	return NULL;
}

/* ------------------------------------------------------------- calls */

static uint64_t deadline_of(const struct rr_tcp_clnt *c,
			    const struct rr_call *call)
{
	int t = call->timeout_ms ? call->timeout_ms : c->o.timeout_ms;

	return t > 0 ? rr_mono_ms() + (uint64_t)t : TC_NO_DEADLINE;
}

static int call_size_ok(const struct rr_tcp_clnt *c, const struct rr_call *call)
{
	size_t max = c->o.max_record - CALL_HDR_MAX;

	if (call->args_len > max || call->arg_bulk_len > max ||
	    call->args_len + call->arg_bulk_len + 3 > max)
		return -EMSGSIZE;
	if ((call->args_len && !call->args) ||
	    (call->arg_bulk_len && !call->arg_bulk) ||
	    (call->res_cap && !call->res))
		return -EINVAL;
	return 0;
}

/*
 * Queues call behind those already pending and lets out what the slots
 * and the connection allow. Caller holds c->mu.
 */
void rr__tc_start(struct rr_tcp_clnt *c, struct rr_call *call,
		  rr_call_done_fn done, void *arg, struct rr_call_list *l)
{
	rr__call_begin(call, done, arg, NULL, deadline_of(c, call));
	if (c->pend_head || c->nbusy >= c->o.max_in_flight)
		c->st.credit_waits++;
	if (c->pend_tail)
		rr__call_priv(c->pend_tail)->next = call;
	else
		c->pend_head = call;
	c->pend_tail = call;
	rr__tc_pump(c, l);
}

int rr_tcp_clnt_call_async(struct rr_tcp_clnt *c, struct rr_call *call,
			   rr_call_done_fn done, void *arg)
{
	struct rr_call_list l = {0};
	bool wake_io = false;
	int rc;

	if (!c || !call || !done)
		return -EINVAL;
	rc = call_size_ok(c, call);
	if (rc)
		return rc;
	pthread_mutex_lock(&c->mu);
	rc = c->stopping ? -ECANCELED : rr__tc_ended(c) ? -ECONNRESET : 0;
	if (!rc) {
		/*
		 * A burst starts: the caller gets a slice to drive before the
		 * I/O thread reads its replies, as over RDMA (last_drive_ms).
		 */
		if (!c->nbusy && !c->pend_head)
			c->drove_ms = rr_mono_ms();
		rr__tc_ka_note(c, call);
		rr__tc_start(c, call, done, arg, &l);
		/*
		 * The I/O thread's poll must not outsleep this call's
		 * deadline, nor sleep on while the call needs a connection.
		 */
		wake_io = c->state != TC_UP ||
			  rr__call_priv(call)->deadline_ms < c->poll_deadline;
		if (rr__call_priv(call)->deadline_ms < c->poll_deadline)
			c->poll_deadline = rr__call_priv(call)->deadline_ms;
	}
	pthread_mutex_unlock(&c->mu);
	if (wake_io)
		rr__tc_wake(c);
	rr__call_list_run(&l);
	return rc;
}

/*
 * The caller reads its reply itself when nobody else is reading
 * (tcp_clnt_drive.c); otherwise the reader runs rr__call_wait_done, which wakes
 * it.
 */
static void sync_wait(struct rr_tcp_clnt *c, struct rr_call_wait *w)
{
	pthread_mutex_lock(&w->mu);
	while (!w->done) {
		int rc;

		pthread_mutex_unlock(&w->mu);
		rc = rr_tcp_clnt_progress(c, SYNC_SLICE_MS);
		pthread_mutex_lock(&w->mu);
		if (rc && rc != -ETIMEDOUT && !w->done) {
			struct timespec ts;

			/* Ended: the callback comes from another thread. */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += SYNC_SLICE_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		}
	}
	pthread_mutex_unlock(&w->mu);
}

int rr_tcp_clnt_call(struct rr_tcp_clnt *c, struct rr_call *call)
{
	struct rr_call_wait w;
	int rc;

	rr__call_wait_init(&w);
	rc = rr_tcp_clnt_call_async(c, call, rr__call_wait_done, &w);
	if (!rc)
		sync_wait(c, &w);
	rr__call_wait_fini(&w);
	return rc ? rc : w.rc;
}

/* Takes call out of its slot or the pending list; false if in neither. */
static bool take(struct rr_tcp_clnt *c, struct rr_call *call)
{
	struct tcp_slot *s = rr__call_priv(call)->req;
	struct rr_call *prev = NULL;

	if (s && s >= c->slots && s < c->slots + c->nslots && s->call == call) {
		if (!s->resend)
			abandon(c, s->xid);
		rr__tc_slot_free(c, s);
		return true;
	}
	for (struct rr_call *p = c->pend_head; p;
	     prev = p, p = rr__call_priv(p)->next)
		if (p == call) {
			pend_unlink(c, call, prev);
			return true;
		}
	return false;
}

int rr_tcp_clnt_cancel(struct rr_tcp_clnt *c, struct rr_call *call)
{
	struct rr_call_list l = {0};
	int rc = -ENOENT;

	pthread_mutex_lock(&c->mu);
	if (take(c, call)) {
		c->st.cancels++;
		rr__call_list_end(&l, call, -ECANCELED);
		rr__tc_pump(c, &l);
		rc = 0;
	}
	pthread_mutex_unlock(&c->mu);
	rr__call_list_run(&l);
	return rc;
}

int rr_tcp_clnt_stats(struct rr_tcp_clnt *c, struct rr_xprt_stats *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->st;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* ---------------------------------------------------------- lifetime */

static void opts_default(struct rr_tcp_clnt_opts *o,
			 const struct rr_tcp_clnt_opts *in)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	rr__backoff_opts(&o->connect_timeout_ms, &o->reconnect_max_ms);
	if (!o->max_record)
		o->max_record = DEF_MAX_RECORD;
	if (o->max_record > RR_RM_MAX_FRAG)
		o->max_record = RR_RM_MAX_FRAG;
	if (o->max_record < 2 * CALL_HDR_MAX)
		o->max_record = 2 * CALL_HDR_MAX;
	if (!o->max_in_flight)
		o->max_in_flight = DEF_MAX_IN_FLIGHT;
	if (o->max_in_flight > MAX_IN_FLIGHT)
		o->max_in_flight = MAX_IN_FLIGHT;
}

static int slots_init(struct rr_tcp_clnt *c)
{
	uint32_t n = 1;

	while (n < c->o.max_in_flight) {
		n <<= 1;
		c->shift++;
	}
	c->slots = rr_calloc(n, sizeof(*c->slots));
	c->freeidx = rr_calloc(n, sizeof(*c->freeidx));
	if (!c->slots || !c->freeidx)
		return -ENOMEM;
	c->nslots = n;
	for (uint32_t i = 0; i < c->nslots; i++)
		c->freeidx[c->nfree++] = c->nslots - 1 - i;
	/* Different clients, different xids: a server's reply cache. */
	c->seq = (uint32_t)rr_mono_ms() ^ ((uint32_t)getpid() << 12);
	return 0;
}

static struct rr_tcp_clnt *clnt_alloc(const struct rr_tcp_clnt_opts *o)
{
	struct rr_tcp_clnt *c = rr_calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	opts_default(&c->o, o);
	rr__ka_init(&c->ka.p, &c->o.keepalive_ms, &c->o.keepalive_timeout_ms,
		    c->o.keepalive_prog, c->o.keepalive_vers);
	c->fd = c->evfd = -1;
	c->state = TC_IDLE;
	pthread_mutex_init(&c->mu, NULL);
	rr_cond_init_mono(&c->rx_cv);
	rr__rm_rx_init(&c->rx, c->o.max_record);
	/* a call the socket took only part of is kept without an allocation */
	c->out.spare_max = c->o.max_record;
	gethostname(c->machine, sizeof(c->machine) - 1);
	return c;
}

int rr_tcp_clnt_create(const char *host, uint16_t port,
		       const struct rr_tcp_clnt_opts *o,
		       struct rr_tcp_clnt **out)
{
	struct rr_tcp_clnt *c;
	int rc;

	if (!host || !out)
		return -EINVAL;
	c = clnt_alloc(o);
	if (!c)
		return -ENOMEM;
	c->rpc.ops = &rr__tcp_clnt_rpc_ops;
	rc = slots_init(c);
	if (!rc)
		rc = (c->stage = rr_malloc(STAGE_LEN)) ? 0 : -ENOMEM;
	if (!rc) {
		c->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		rc = c->evfd < 0 ? -errno : 0;
	}
	if (!rc)
		rc = rr__tc_resolve(c, host, port);
	if (!rc)
		rc = rr__tc_connect_first(c);
	if (!rc) {
		rc = -pthread_create(&c->thr, NULL, io_main, c);
		c->thr_started = !rc;
	}
	if (rc) {
		rr_tcp_clnt_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

int rr_tcp_clnt_destroy(struct rr_tcp_clnt *c)
{
	struct rr_call_list l = {0};

	if (!c)
		return 0;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_mutex_unlock(&c->mu);
	if (c->thr_started) {
		rr__tc_wake(c);
		pthread_join(c->thr, NULL);
	}
	pthread_mutex_lock(&c->mu);
	rr__tc_move(c, TC_DOWN, rr_mono_ms());
	rr__tc_fail_all(c, -ECANCELED, &l);
	pthread_mutex_unlock(&c->mu);
	rr__call_list_run(&l);
	if (c->fd >= 0)
		close(c->fd);
	if (c->evfd >= 0)
		close(c->evfd);
	rr__outq_free(&c->out);
	rr__rm_rx_fini(&c->rx);
	rr__tc_serve_fini(c);
	free(c->stage);
	free(c->slots);
	free(c->freeidx);
	pthread_cond_destroy(&c->rx_cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return 0;
}
