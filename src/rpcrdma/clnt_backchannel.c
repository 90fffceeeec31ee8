/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client: serving the calls the server makes back over our connection
 * (RFC 8167). The reverse direction has its own credits and buffers, so
 * a callback never takes a forward call's place:
 *
 *  - cb.credits receive buffers more than the forward credits need are
 *    posted with every connection, in the same pool (so every receive is
 *    accounted the same way: invariant 4);
 *  - a message that is RDMA_MSG and whose RPC msg_type is CALL is the
 *    server's call, whatever its xid (the two directions' xids are
 *    unrelated); anything else is a reply to one of ours;
 *  - its bytes are copied into a slot of ours and the receive goes back
 *    at once; the handler runs when the driving thread has released mu
 *    (a handler may make asynchronous calls on this client);
 *  - the reply goes inline, RDMA_MSG with no chunks (RFC 8167 section
 *    4), its rdma_credit the backward grant, on a send buffer of the slot,
 *    which stays the slot's until its Send completes (invariant 2).
 *
 * Twice as many slots as credits: the server may send its next call as
 * soon as it has our reply, before our Send's completion is polled.
 * A call beyond them, one that carries chunks, one that does not decode,
 * and any call when we take none is dropped and counted (cb_dropped):
 * the server's timer ends it.
 */
#include "rpcrdma/clnt.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *slot_msg(const struct rr_clnt *c, uint32_t i)
{
	return c->cb.msgs + (size_t)i * 2 * c->o.inline_size;
}

/* Sized from rr_clnt_opts.cb_credits; made once, with the client. */
int rr__clnt_cb_alloc(struct rr_clnt *c)
{
	uint32_t n = c->cb.credits * 2;

	if (!n)
		return 0;
	c->cb.slots = rr_calloc(n, sizeof(*c->cb.slots));
	c->cb.msgs = rr_calloc(n, 2 * (size_t)c->o.inline_size);
	if (!c->cb.slots || !c->cb.msgs)
		return -ENOMEM;
	c->cb.nslots = n;
	c->st.registered_bytes += (uint64_t)n * c->o.inline_size;
	return rr__bufpool_init(&c->cb.sendbufs, c->pd, n, c->o.inline_size, 0);
}

void rr__clnt_cb_free(struct rr_clnt *c)
{
	rr__bufpool_fini(&c->cb.sendbufs);
	free(c->cb.slots);
	free(c->cb.msgs);
	c->cb.slots = NULL;
	c->cb.msgs = NULL;
	c->cb.nslots = 0;
}

int rr_clnt_serve(struct rr_clnt *c, const struct rr_svc_prog *prog)
{
	int rc;

	if (!c || !prog)
		return -EINVAL;
	if (!c->cb.credits)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&c->mu);
	rc = rr__progtab_add(&c->cb.progs, prog);
	if (!rc) {
		c->cb.serving = true;
		pthread_cond_broadcast(&c->bg_cv); /* it reads from now on */
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static struct clnt_cb_slot *slot_free(struct rr_clnt *c)
{
	for (uint32_t i = 0; i < c->cb.nslots; i++)
		if (c->cb.slots[i].state == CB_FREE)
			return &c->cb.slots[i];
	return NULL;
}

/* Only an inline call, named alike in both headers, gets a slot. */
static bool admit(struct rr_clnt *c, const struct rr_rdma_hdr *h, uint32_t xid,
		  uint32_t len, const uint8_t *msg)
{
	struct clnt_cb_slot *s = slot_free(c);
	uint32_t i;

	if (!s || h->nread || h->nwrite || h->has_reply || xid != h->xid ||
	    len > c->o.inline_size)
		return false;
	i = (uint32_t)(s - c->cb.slots);
	memcpy(slot_msg(c, i), msg, len);
	s->gen = c->gen;
	s->xid = xid;
	s->len = len;
	s->out_cap = c->inline_send < c->o.inline_size ? c->inline_send
						       : c->o.inline_size;
	rr__clnt_cb_move(c, s, CB_PENDING);
	return true;
}

/*
 * Whether the message in receive buffer i (header h, hl bytes of it) is a
 * call of the server's: then it is taken or dropped, and the buffer
 * reposted. Its rdma_credit is the backward direction's and leaves our
 * forward grant alone. Caller holds mu.
 */
bool rr__clnt_cb_recv(struct rr_clnt *c, uint32_t i,
		      const struct rr_rdma_hdr *h, int hl, uint32_t len)
{
	const uint8_t *msg = rr_bufpool_at(&c->recvbufs, i) + hl;
	uint32_t xid, type;

	if (h->proc != RR_RDMA_MSG ||
	    rr__rpc_peek(msg, len - (uint32_t)hl, &xid, &type) ||
	    type != RR_RPC_CALL)
		return false;
	c->ka.last_rx_ms = rr_mono_ms(); /* alive (clnt_keepalive.c) */
	if (!c->cb.credits || !admit(c, h, xid, len - (uint32_t)hl, msg)) {
		c->st.cb_dropped++;
		rr_info_rl("rpcrdma: server's call xid %08x dropped", xid);
	}
	if (!rr__clnt_dead(c))
		rr__clnt_post_recv_on(c, i);
	return true;
}

/* Room in the send queue beyond what forward calls may fill. */
static bool sq_room(const struct rr_clnt *c)
{
	return c->sq_posted - c->sq_retired + c->sq_reserved + 1 <=
	       (uint64_t)c->sq_depth + c->cb.nslots;
}

/* The reply (n bytes after our header) goes out, if its connection is. */
static void post_reply(struct rr_clnt *c, struct clnt_cb_slot *s, int n)
{
	uint32_t i = (uint32_t)(s - c->cb.slots);
	uint8_t *buf = rr_bufpool_at(&c->cb.sendbufs, i);
	struct rr_rdma_hdr h = {.xid = s->xid,
				.vers = RR_RDMA_VERSION,
				.credits = c->cb.credits,
				.proc = RR_RDMA_MSG};
	struct rr_sge sge = {.addr = (uintptr_t)buf,
			     .length = RR_RDMA_HDR_EMPTY + (uint32_t)n,
			     .lkey = rr_mr_lkey(c->cb.sendbufs.mr)};
	struct rr_send_wr wr = {.opcode = RR_WR_SEND,
				.flags = RR_SEND_SIGNALED,
				.sg_list = &sge,
				.num_sge = 1};

	if (rr__clnt_dead(c) || s->gen != c->gen || !sq_room(c)) {
		rr__clnt_cb_move(c, s, CB_FREE);
		c->st.cb_dropped++;
		return;
	}
	rr__rdma_hdr_encode(&h, buf, RR_RDMA_HDR_EMPTY);
	wr.wr_id = rr_wrid(c->gen, RR_WRK_CB_SEND, i, ++s->seq);
	if (rr_qp_post_send(c->qp, &wr, NULL)) {
		rr__clnt_cb_move(c, s, CB_FREE);
		rr__clnt_conn_lost(c, -ECONNRESET);
		return;
	}
	s->sq_mark = ++c->sq_posted;
	rr__clnt_cb_move(c, s, CB_SENDING);
	c->st.cb_calls++;
	c->st.cb_replies++;
}

/* A pending call to run, now RUNNING; those of an old connection go. */
static struct clnt_cb_slot *take_pending(struct rr_clnt *c)
{
	for (uint32_t i = 0; i < c->cb.nslots; i++) {
		struct clnt_cb_slot *s = &c->cb.slots[i];

		if (s->state != CB_PENDING)
			continue;
		if (s->gen != c->gen || rr__clnt_dead(c)) {
			rr__clnt_cb_move(c, s, CB_FREE);
			c->st.cb_dropped++;
			continue;
		}
		rr__clnt_cb_move(c, s, CB_RUNNING);
		return s;
	}
	return NULL;
}

/* The handler of s, without mu: the reply's length, or -EBADMSG. */
static int serve_slot(struct rr_clnt *c, const struct clnt_cb_slot *s)
{
	uint32_t i = (uint32_t)(s - c->cb.slots);
	uint8_t *msg = slot_msg(c, i);
	uint32_t cap = s->out_cap > RR_RDMA_HDR_EMPTY
			       ? s->out_cap - RR_RDMA_HDR_EMPTY
			       : 0;

	return rr__cb_serve(
		&c->cb.progs, msg, s->len, msg + c->o.inline_size,
		c->o.inline_size,
		rr_bufpool_at(&c->cb.sendbufs, i) + RR_RDMA_HDR_EMPTY, cap);
}

/*
 * Runs the handlers of the calls taken, each once, then posts their
 * replies. Called without mu by whoever drove the client.
 */
void rr__clnt_cb_run(struct rr_clnt *c)
{
	for (;;) {
		struct clnt_cb_slot *s;
		int n;

		pthread_mutex_lock(&c->mu);
		s = c->cb.nslots ? take_pending(c) : NULL;
		pthread_mutex_unlock(&c->mu);
		if (!s)
			return;
		n = serve_slot(c, s);
		pthread_mutex_lock(&c->mu);
		if (n < 0) {
			rr__clnt_cb_move(c, s, CB_FREE);
			c->st.cb_dropped++;
		} else {
			post_reply(c, s, n);
		}
		pthread_mutex_unlock(&c->mu);
	}
}

/* A reply's Send completed (or flushed): its slot is free again. */
bool rr__clnt_cb_send_done(struct rr_clnt *c, uint32_t slot, uint32_t seq)
{
	struct clnt_cb_slot *s;

	if (slot >= c->cb.nslots)
		return false;
	s = &c->cb.slots[slot];
	if (s->state != CB_SENDING || s->seq != seq)
		return false;
	rr__clnt_cb_move(c, s, CB_FREE);
	return true;
}

/* The QP was reset: no Send of a slot will complete now. */
void rr__clnt_cb_forget(struct rr_clnt *c)
{
	for (uint32_t i = 0; i < c->cb.nslots; i++)
		if (c->cb.slots[i].state == CB_SENDING)
			rr__clnt_cb_move(c, &c->cb.slots[i], CB_FREE);
}
