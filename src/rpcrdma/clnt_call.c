/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client: marshaling a call (RFC 8166 section 3.5 and 4) and the end of a
 * call's life (fencing its memory, then returning it).
 *
 * Marshaling: the call goes inline when header, RPC call and arguments fit
 * the peer's inline size. A DDP-eligible argument that does not fit moves
 * to a read chunk at its XDR position; if the rest still does not fit, the
 * whole RPC message is sent as RDMA_NOMSG with a position-zero read chunk.
 * A DDP-eligible result gets a write chunk; a reply that may not fit
 * inline gets a reply chunk. Each chunk is one memory window bound over
 * the caller's registered memory or over a bounce buffer.
 *
 * Fencing (invariant 1): a call's result reaches the caller only after
 * every window it exposed is invalid: named by the server's Send With
 * Invalidate (checked in clnt_reply.c) or invalidated by LOCAL_INV whose
 * completion we saw. A LOCAL_INV that cannot be posted or fails tears the
 * connection down, which is the only other fence.
 */
#include "base/clock.h"
#include "rpc/call_priv.h"
#include "rpcrdma/clnt.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static struct rr_mr *find_reg(struct rr_clnt *c, const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;

	for (uint32_t i = 0; i < c->nregs; i++) {
		uintptr_t b = (uintptr_t)c->regs[i].addr;

		if (a >= b && len <= c->regs[i].len &&
		    a - b <= c->regs[i].len - len)
			return c->regs[i].mr;
	}
	return NULL;
}

static int bounce_get(struct rr_clnt *c)
{
	for (uint32_t i = 0; i < c->bounce.count; i++) {
		if (c->bounce_free & (1u << i)) {
			c->bounce_free &= ~(1u << i);
			return (int)i;
		}
	}
	return -1;
}

static void span_release(struct rr_clnt *c, struct clnt_span *s)
{
	if (s->bounce >= 0)
		c->bounce_free |= 1u << s->bounce;
	s->bounce = -1;
}

/* Zero-copy over registered memory, else a bounce buffer (or -EAGAIN). */
static int span_map(struct rr_clnt *c, struct clnt_span *s, void *user,
		    size_t len)
{
	*s = (struct clnt_span){.user = user, .len = len, .bounce = -1};
	s->mr = user ? find_reg(c, user, len) : NULL;
	if (s->mr) {
		s->addr = (uintptr_t)user;
		return 0;
	}
	if (len > c->bounce.size)
		return -EMSGSIZE;
	s->bounce = bounce_get(c);
	if (s->bounce < 0)
		return -EAGAIN;
	s->addr = (uintptr_t)rr_bufpool_at(&c->bounce, (uint32_t)s->bounce);
	s->mr = c->bounce.mr;
	c->st.bounce_copies++;
	return 0;
}

/* Worst-case RPC reply header: xid, REPLY, stat, verf(8+400), accept. */
#define REPLY_HDR_MAX (4 * 5 + RR_AUTH_MAX_BODY + 8)

struct plan {
	uint8_t rpc[64 + RR_AUTH_MAX_BODY * 2];
	int rpc_len;	   /* RPC call header */
	size_t inline_len; /* RPC message bytes sent inline */
	uint32_t nmw;
};

/*
 * Decides chunks (RFC 8166 section 3.5) and takes the memory they need.
 * Returns 0, -EAGAIN (wait for bounce buffers) or a hard error.
 */
static int plan_call(struct rr_clnt *c, struct clnt_req *r, struct plan *p)
{
	struct rr_call *call = r->call;
	size_t bulk = call->arg_bulk_len, pad = rr_xdr_pad(bulk);
	size_t hdr_room = RR_RDMA_HDR_EMPTY + 2 * 28 + 40;
	size_t msg, reply_max;
	int rc = 0;

	r->arg_span = r->res_span = r->reply_span =
		(struct clnt_span){.bounce = -1};
	r->has_arg_chunk = r->has_res_chunk = r->has_reply_chunk = false;
	p->rpc_len = rr__call_msg_hdr(r->call, r->xid, c->machine, p->rpc,
				      sizeof(p->rpc));
	if (p->rpc_len < 0)
		return p->rpc_len;
	msg = (size_t)p->rpc_len + call->args_len;
	r->has_arg_chunk = bulk && hdr_room + msg + bulk + pad > c->inline_send;
	r->nomsg = hdr_room + msg > c->inline_send;
	p->inline_len = msg + (r->has_arg_chunk ? 0 : bulk + pad);
	if (r->nomsg) {
		/* Everything travels in one position-zero chunk: a bounce. */
		r->has_arg_chunk = true;
		rc = span_map(c, &r->arg_span, NULL, msg + bulk + pad);
	} else if (r->has_arg_chunk) {
		rc = span_map(c, &r->arg_span, (void *)call->arg_bulk, bulk);
	}
	if (rc)
		return rc;
	r->has_res_chunk = call->res_bulk_cap > 0;
	if (r->has_res_chunk && (rc = span_map(c, &r->res_span, call->res_bulk,
					       call->res_bulk_cap)))
		goto err_arg;
	reply_max = REPLY_HDR_MAX + call->res_cap;
	r->has_reply_chunk = hdr_room + reply_max > c->inline_recv;
	if (r->has_reply_chunk &&
	    (rc = span_map(c, &r->reply_span, NULL, reply_max)))
		goto err_res;
	p->nmw = r->has_arg_chunk + r->has_res_chunk + r->has_reply_chunk;
	return 0;
err_res:
	span_release(c, &r->res_span);
err_arg:
	span_release(c, &r->arg_span);
	return rc;
}

/* Copies the arguments that travel in a chunk through their bounce. */
static void fill_arg_bounce(struct clnt_req *r, const struct plan *p)
{
	struct rr_call *call = r->call;
	uint8_t *b = (uint8_t *)(uintptr_t)r->arg_span.addr;

	if (r->arg_span.bounce < 0)
		return;
	if (r->nomsg) {
		memcpy(b, p->rpc, (size_t)p->rpc_len);
		b += p->rpc_len;
		if (call->args_len)
			memcpy(b, call->args, call->args_len);
		b += call->args_len;
	}
	if (call->arg_bulk_len)
		memcpy(b, call->arg_bulk, call->arg_bulk_len);
	memset(b + call->arg_bulk_len, 0, rr_xdr_pad(call->arg_bulk_len));
}

/*
 * Registration per call binds at once. Otherwise the REG is only written
 * into regs[i], under the key it will install, and goes out in one post
 * with the Send that advertises it (post_send): one doorbell per call.
 */
static int post_reg_wr(struct rr_clnt *c, struct clnt_req *r, uint32_t i,
		       const struct clnt_span *s, unsigned access,
		       struct rr_send_wr *regs)
{
	struct clnt_mw *m = &r->mws[i];
	int rc;

	if (!c->per_call) {
		regs[i] = (struct rr_send_wr){
			.wr_id = rr_wrid(c->gen, RR_WRK_REG, r->idx, r->seq),
			.opcode = RR_WR_REG,
			.reg = {.mw = m->mw,
				.mr = s->mr,
				.addr = s->addr,
				.length = s->len,
				.access = access},
		};
		m->rkey = rr_mw_rkey_next(m->mw);
		return 0;
	}
	rc = rr_mw_bind(m->mw, s->mr, s->addr, s->len, access);
	if (rc)
		return rc;
	m->rkey = rr_mw_rkey(m->mw);
	m->live = true;
	c->st.regs++;
	return 0;
}

/* A window that a failed fence left unusable is fenced again first. */
static int post_reg(struct rr_clnt *c, struct clnt_req *r, uint32_t i,
		    const struct clnt_span *s, unsigned access,
		    struct rr_send_wr *regs)
{
	struct clnt_mw *m = &r->mws[i];
	int rc = m->unfenced ? rr_mw_fence(m->mw) : 0;

	if (rc)
		return rc;
	m->unfenced = false;
	return post_reg_wr(c, r, i, s, access, regs);
}

static struct rr_rdma_seg seg_of(const struct clnt_mw *m,
				 const struct clnt_span *s, size_t len)
{
	return (struct rr_rdma_seg){
		.handle = m->rkey, .length = (uint32_t)len, .offset = s->addr};
}

/* Binds (or prepares regs to bind) the chunks' windows; lists into h. */
static int post_chunks(struct rr_clnt *c, struct clnt_req *r,
		       const struct plan *p, struct rr_rdma_hdr *h,
		       struct rr_send_wr *regs)
{
	uint32_t i = 0;
	int rc;

	if (r->has_arg_chunk) {
		size_t len = r->nomsg ? r->arg_span.len : r->call->arg_bulk_len;

		rc = post_reg(c, r, i, &r->arg_span, RR_ACCESS_REMOTE_READ,
			      regs);
		if (rc)
			return rc;
		h->nread = 1;
		h->reads[0].position = r->nomsg ? 0 : (uint32_t)p->inline_len;
		h->reads[0].seg = seg_of(&r->mws[i++], &r->arg_span, len);
	}
	if (r->has_res_chunk) {
		rc = post_reg(c, r, i, &r->res_span, RR_ACCESS_REMOTE_WRITE,
			      regs);
		if (rc)
			return rc;
		h->nwrite = 1;
		h->writes[0].nsegs = 1;
		h->writes[0].segs[0] =
			seg_of(&r->mws[i++], &r->res_span, r->res_span.len);
	}
	if (r->has_reply_chunk) {
		rc = post_reg(c, r, i, &r->reply_span, RR_ACCESS_REMOTE_WRITE,
			      regs);
		if (rc)
			return rc;
		h->has_reply = true;
		h->reply.nsegs = 1;
		h->reply.segs[0] =
			seg_of(&r->mws[i++], &r->reply_span, r->reply_span.len);
	}
	r->nmw = i;
	return 0;
}

/*
 * Of the chain regs[0..nreg) + Send, the REGs before bad (all, if the post
 * succeeded or bad is unknown) were posted: their windows are live now.
 */
static void regs_posted(struct rr_clnt *c, struct clnt_req *r,
			const struct rr_send_wr *regs, uint32_t nreg,
			const struct rr_send_wr *bad)
{
	uint32_t n = nreg;

	for (uint32_t i = 0; i < nreg; i++)
		if (bad == &regs[i])
			n = i;
	for (uint32_t i = 0; i < n; i++)
		r->mws[i].live = true;
	c->st.regs += n;
	c->sq_posted += n;
}

/*
 * The Send: header, then the inline part of the RPC message; posted in one
 * chain after the REGs (regs, nreg) whose keys the header advertises.
 */
static int post_send(struct rr_clnt *c, struct clnt_req *r,
		     const struct plan *p, struct rr_rdma_hdr *h,
		     struct rr_send_wr *regs, uint32_t nreg)
{
	uint32_t s = r->sctx;
	uint8_t *buf = rr_bufpool_at(&c->sendbufs, s);
	struct rr_call *call = r->call;
	struct clnt_sendctx *sc = &c->sctx[s];
	struct rr_sge sge = {.addr = (uintptr_t)buf,
			     .lkey = rr_mr_lkey(c->sendbufs.mr)};
	struct rr_send_wr wr = {.opcode = RR_WR_SEND,
				.sg_list = &sge,
				.num_sge = 1},
			  *bad = NULL;
	int n = rr__rdma_hdr_encode(h, buf, c->sendbufs.size), rc;
	size_t off;

	if (n < 0)
		return n;
	off = (size_t)n;
	if (!r->nomsg) {
		if (off + p->inline_len > c->inline_send)
			return -EMSGSIZE;
		memcpy(buf + off, p->rpc, (size_t)p->rpc_len);
		off += (size_t)p->rpc_len;
		if (call->args_len)
			memcpy(buf + off, call->args, call->args_len);
		off += call->args_len;
		if (!r->has_arg_chunk && call->arg_bulk_len) {
			memcpy(buf + off, call->arg_bulk, call->arg_bulk_len);
			off += call->arg_bulk_len;
			memset(buf + off, 0, rr_xdr_pad(call->arg_bulk_len));
			off += rr_xdr_pad(call->arg_bulk_len);
		}
	}
	sge.length = (uint32_t)off;
	sc->seq++;
	sc->busy = true;
	sc->cqe_seen = false;
	/*
	 * Signal regularly so send contexts and queue slots come back, and
	 * at once when the queue is half full: unsignaled requests only
	 * retire with a later signaled one.
	 */
	if (++c->unsignaled >= CLNT_SIGNAL_EVERY ||
	    2 * (c->sq_posted + 1 - c->sq_retired) >= c->sq_depth) {
		wr.flags |= RR_SEND_SIGNALED;
		c->unsignaled = 0;
	}
	wr.wr_id = rr_wrid(c->gen, RR_WRK_SEND, s, sc->seq);
	for (uint32_t i = 0; i < nreg; i++)
		regs[i].next = i + 1 < nreg ? &regs[i + 1] : &wr;
	rc = rr_qp_post_send(c->qp, nreg ? regs : &wr, &bad);
	regs_posted(c, r, regs, nreg, rc ? bad : NULL);
	if (rc) {
		sc->busy = false;
		return rc;
	}
	sc->sq_mark = ++c->sq_posted;
	c->sctx_tail++;
	return 0;
}

/* Room check for a call: WRs now (REGs + Send) and its later LOCAL_INVs. */
static bool sq_room(struct rr_clnt *c, uint32_t need)
{
	uint64_t used = c->sq_posted - c->sq_retired;

	return used + c->sq_reserved + need <= c->sq_depth;
}

/* Slots r holds for the LOCAL_INVs that will fence it. */
static void sq_reserve(struct rr_clnt *c, struct clnt_req *r, uint32_t n)
{
	c->sq_reserved += n;
	c->sq_reserved -= r->sq_reserved;
	r->sq_reserved = n;
}

static struct clnt_req *req_get(struct rr_clnt *c)
{
	struct clnt_req *r;

	if (!c->nfree_reqs || c->in_flight >= c->granted)
		return NULL;
	r = &c->reqs[c->free_reqs[--c->nfree_reqs]];
	r->seq++;
	r->xid = (++c->xid_seq & 0xffff) << 16 | r->idx;
	c->in_flight++;
	return r;
}

static void req_put(struct rr_clnt *c, struct clnt_req *r)
{
	rr__clnt_req_move(c, r, REQ_FREE);
	r->call = NULL;
	sq_reserve(c, r, 0);
	c->free_reqs[c->nfree_reqs++] = r->idx;
	c->in_flight--;
}

/*
 * Tries to post the call held by r (a slot is taken). 1: posted;
 * 0: must wait (resources); negative: the call fails with that error.
 */
enum { WAITED_CREDIT = 1, WAITED_SQ = 2 };

/* The counters count calls that waited, not the times they were tried. */
static void count_wait(struct rr_clnt *c, struct rr_call *call, uint8_t what)
{
	if (rr__call_priv(call)->waited & what)
		return;
	rr__call_priv(call)->waited |= what;
	if (what == WAITED_CREDIT)
		c->st.credit_waits++;
	else
		c->st.sq_waits++;
}

static int try_post(struct rr_clnt *c, struct clnt_req *r)
{
	struct plan p;
	struct rr_rdma_hdr h = {
		.xid = r->xid, .vers = RR_RDMA_VERSION, .credits = c->nreqs};
	struct rr_send_wr regs[CLNT_MAX_MW];
	uint32_t sctx_free = c->nsctx - (c->sctx_tail - c->sctx_head);
	int rc;

	if (!sctx_free) {
		count_wait(c, r->call, WAITED_SQ);
		return 0;
	}
	rc = plan_call(c, r, &p);
	if (rc == -EAGAIN)
		return 0;
	if (rc)
		return rc;
	if (!sq_room(c, c->per_call ? 1 : 2 * p.nmw + 1)) {
		count_wait(c, r->call, WAITED_SQ);
		span_release(c, &r->arg_span);
		span_release(c, &r->res_span);
		span_release(c, &r->reply_span);
		return 0;
	}
	r->sctx = c->sctx_tail % c->nsctx;
	sq_reserve(c, r, c->per_call ? 0 : p.nmw); /* LOCAL_INVs to come */
	fill_arg_bounce(r, &p);
	h.proc = r->nomsg ? RR_RDMA_NOMSG : RR_RDMA_MSG;
	rc = post_chunks(c, r, &p, &h, regs);
	if (!rc)
		rc = post_send(c, r, &p, &h, regs, c->per_call ? 0 : r->nmw);
	if (rc) {
		/* Windows already bound are fenced by the teardown. */
		rr_warn_rl("rpcrdma: posting call xid %08x: %d", r->xid, rc);
		return rc;
	}
	rr__clnt_req_move(c, r, REQ_SENT);
	return 1;
}

/* Hands a result to its caller: wakes a sync caller or queues a callback. */
static void deliver_call(struct rr_clnt *c, struct rr_call *call, int rc)
{
	struct clnt_waiter *w = rr__call_priv(call)->waiter;

	c->completed++;
	if (rc == 0 || rc == -EREMOTEIO)
		c->st.calls++;
	if (w) {
		rr__call_priv(call)->req = NULL;
		call->status = rc;
		w->rc = rc;
		w->done = true;
		pthread_cond_signal(&w->cv);
		return;
	}
	rr__call_list_end(&c->cb_done, call, rc);
	c->async_out--;
}

static void queue_pop(struct rr_clnt *c)
{
	c->wait_head = rr__call_priv(c->wait_head)->next;
	if (!c->wait_head)
		c->wait_tail = NULL;
}

static bool req_exposes(const struct clnt_req *r)
{
	for (uint32_t m = 0; m < CLNT_MAX_MW; m++)
		if (r->mws[m].live)
			return true;
	return false;
}

/*
 * The connection is gone: every window r exposes is fenced, so its key is
 * dead on any connection (the fence that needs no LOCAL_INV, and no
 * memory: the window is kept for the next binding).
 *
 * ORDER: the QP leaves RTS first, so that no REG of these windows is
 * still to execute (rr_mw_fence's precondition): a call whose post failed
 * after its REGs went out may have them queued. Losing the connection is
 * the only fence besides invalidation (invariant 1).
 */
void rr__clnt_req_unexpose(struct rr_clnt *c, struct clnt_req *r)
{
	if (req_exposes(r) && c->qp_in_use && rr_qp_state(c->qp) == RR_QPS_RTS)
		rr_qp_disconnect(c->qp);
	for (uint32_t m = 0; m < CLNT_MAX_MW; m++) {
		struct clnt_mw *w = &r->mws[m];
		int rc;

		if (!w->live)
			continue;
		rc = rr_mw_fence(w->mw);
		if (rc) {
			rr_warn_rl("rpcrdma: fence of window %#x: %d", w->rkey,
				   rc);
			w->unfenced = true;
		} else {
			c->st.loss_fences++;
		}
		w->live = false;
	}
	r->nlinv_out = 0;
}

/* r keeps its slot and xid and waits for the next connection. */
void rr__clnt_req_resend(struct rr_clnt *c, struct clnt_req *r)
{
	span_release(c, &r->arg_span);
	span_release(c, &r->res_span);
	span_release(c, &r->reply_span);
	sq_reserve(c, r, 0);
	r->nmw = 0;
	r->reply_in_chunk = false;
	rr__clnt_req_move(c, r, REQ_RESEND);
	c->in_flight--; /* credits start again on the next connection */
	r->rnext = NULL;
	if (c->resend_tail)
		c->resend_tail->rnext = r;
	else
		c->resend_head = r;
	c->resend_tail = r;
}

/*
 * A post failed because the QP is gone (it errored before we polled the
 * completion that says so): the call is not the problem, the connection
 * is, and a client that reconnects keeps the call for the next one.
 */
static bool connection_failed(const struct rr_clnt *c, int rc)
{
	return rc != -EMSGSIZE && rc != -EINVAL && !rr__clnt_stopping(c) &&
	       !c->o.no_reconnect;
}

/* Calls to send again go first, as credits allow. false: wait. */
static bool kick_resends(struct rr_clnt *c)
{
	while (c->resend_head && !rr__clnt_dead(c)) {
		struct clnt_req *r = c->resend_head;
		int rc;

		if (c->in_flight >= c->granted)
			return false;
		c->in_flight++;
		r->seq++;
		rc = try_post(c, r);
		if (rc == 0) {
			c->in_flight--;
			return false;
		}
		if (rc < 0 && connection_failed(c, rc)) {
			/* Not sent after all: it stays first in line. */
			rr__clnt_req_unexpose(c, r);
			span_release(c, &r->arg_span);
			span_release(c, &r->res_span);
			span_release(c, &r->reply_span);
			sq_reserve(c, r, 0);
			r->nmw = 0;
			c->in_flight--;
			rr__clnt_conn_lost(c, -ECONNRESET);
			return false;
		}
		c->resend_head = r->rnext;
		if (!c->resend_head)
			c->resend_tail = NULL;
		if (rc > 0) {
			c->st.retransmits++;
			continue;
		}
		r->final_rc = rc;
		rr__clnt_req_move(c, r, REQ_FENCING);
		rr__clnt_req_unexpose(c, r);
		rr__clnt_req_finish(c, r);
		if (rc != -EMSGSIZE)
			rr__clnt_conn_lost(c, -ECONNRESET);
	}
	return !c->resend_head;
}

/* Posts the queued calls at the head of the FIFO while resources last. */
void rr__clnt_kick_queue(struct rr_clnt *c)
{
	if (!kick_resends(c))
		return;
	while (c->wait_head && !rr__clnt_dead(c)) {
		struct rr_call *call = c->wait_head;
		struct clnt_req *r = req_get(c);
		int rc;

		if (!r) {
			count_wait(c, call, WAITED_CREDIT);
			return;
		}
		r->call = call;
		r->deadline_ms = rr__call_priv(call)->deadline_ms;
		rc = try_post(c, r);
		if (rc == 0) {
			req_put(c, r);
			return;
		}
		if (rc < 0 && connection_failed(c, rc)) {
			/* Not sent: it waits, first in line, for the next one.
			 */
			rr__clnt_req_unexpose(c, r);
			span_release(c, &r->arg_span);
			span_release(c, &r->res_span);
			span_release(c, &r->reply_span);
			req_put(c, r);
			rr__clnt_conn_lost(c, -ECONNRESET);
			return;
		}
		queue_pop(c);
		if (rc > 0) {
			rr__call_priv(call)->req = r;
			continue;
		}
		/* A call that cannot be carried fails alone; a failed post
		 * means the connection is unusable. */
		rr__clnt_req_unexpose(c, r);
		req_put(c, r);
		deliver_call(c, call, rc);
		if (rc != -EMSGSIZE)
			rr__clnt_conn_lost(c, -ECONNRESET);
	}
}

static uint64_t deadline_of(struct rr_clnt *c, const struct rr_call *call)
{
	int tmo = call->timeout_ms ? call->timeout_ms : c->o.timeout_ms;

	return tmo < 0 ? 0 : rr_mono_ms() + (uint64_t)tmo;
}

/* Queues a call (FIFO) and posts what the resources allow. Caller holds mu. */
int rr__clnt_start(struct rr_clnt *c, struct rr_call *call,
		   rr_call_done_fn done, void *arg, struct clnt_waiter *w)
{
	if (rr__clnt_down(c))
		return -ECONNRESET;
	rr__call_begin(call, done, arg, w, deadline_of(c, call));
	if (!w)
		c->async_out++;
	if (c->wait_tail)
		rr__call_priv(c->wait_tail)->next = call;
	else
		c->wait_head = call;
	c->wait_tail = call;
	rr__clnt_kick_queue(c);
	return 0;
}

/* The call leaves the wait queue without having been posted. */
bool rr__clnt_unqueue(struct rr_clnt *c, struct rr_call *call, int rc)
{
	for (struct rr_call **pp = &c->wait_head; *pp;
	     pp = &rr__call_priv(*pp)->next) {
		if (*pp != call)
			continue;
		*pp = rr__call_priv(call)->next;
		if (c->wait_tail == call) {
			c->wait_tail = NULL;
			for (struct rr_call *q = c->wait_head; q;
			     q = rr__call_priv(q)->next)
				c->wait_tail = q;
		}
		deliver_call(c, call, rc);
		return true;
	}
	return false;
}

/*
 * The call's windows are all invalid: copy out what came through bounce
 * buffers, give the slot back (unless the server still owes the reply),
 * and hand the result over.
 */
void rr__clnt_req_finish(struct rr_clnt *c, struct clnt_req *r)
{
	struct rr_call *call = r->call;
	int rc = r->final_rc;

	if (rc >= 0 || rc == -EREMOTEIO) {
		if (r->has_res_chunk && r->res_span.bounce >= 0)
			memcpy(call->res_bulk,
			       (void *)(uintptr_t)r->res_span.addr,
			       call->res_bulk_len);
		if (r->reply_in_chunk)
			rc = rr__clnt_decode_reply(
				c, r, (void *)(uintptr_t)r->reply_span.addr,
				r->reply_chunk_len);
	}
	span_release(c, &r->arg_span);
	span_release(c, &r->res_span);
	span_release(c, &r->reply_span);
	sq_reserve(c, r, 0);
	r->nmw = 0;
	r->reply_in_chunk = false;
	if (call)
		deliver_call(c, call, rc);
	r->call = NULL;
	if (r->state == REQ_FENCING_OWED) {
		/* the slot waits for the reply */
		rr__clnt_req_move(c, r, REQ_ABANDONED);
		return;
	}
	req_put(c, r);
}

/*
 * Registration per call: deregistering is the invalidation, done before
 * the call completes. One that fails leaves a key valid, so the connection
 * goes (no QP of ours can then reach the memory) and the window is fenced
 * again before its next use.
 */
static bool fence_now(struct rr_clnt *c, struct clnt_req *r)
{
	bool failed = false;

	for (uint32_t i = 0; i < r->nmw; i++) {
		struct clnt_mw *m = &r->mws[i];

		if (!m->live)
			continue;
		if (rr_mw_fence(m->mw)) {
			m->unfenced = true;
			failed = true;
		} else {
			c->st.sync_invs++;
		}
		m->live = false;
	}
	if (!failed ||
	    rr__clnt_dead(c)) /* no connection: nothing can reach it */
		return true;
	rr_warn_rl("rpcrdma: deregistration failed: tearing down");
	rr__clnt_conn_lost(c, -ECONNRESET);
	return false;
}

void rr__clnt_fence(struct rr_clnt *c, struct clnt_req *r, int rc)
{
	struct rr_send_wr wr[CLNT_MAX_MW], *bad = NULL;
	uint32_t n = 0;
	int prc;

	/* a call returned early stays owed its reply while it is fenced */
	if (r->state != REQ_FENCING_OWED)
		rr__clnt_req_move(c, r, REQ_FENCING);
	r->final_rc = rc;
	if (c->per_call && !fence_now(c, r))
		return; /* as when a LOCAL_INV cannot be posted */
	for (uint32_t i = 0; i < r->nmw; i++) {
		if (!r->mws[i].live)
			continue;
		wr[n] = (struct rr_send_wr){
			.wr_id = rr_wrid(c->gen, RR_WRK_LINV, r->idx, r->seq),
			.opcode = RR_WR_LOCAL_INV,
			.invalidate_rkey = r->mws[i].rkey,
		};
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
	}
	if (!n) {
		rr__clnt_req_finish(c, r);
		return;
	}
	wr[n - 1].flags = RR_SEND_SIGNALED;
	prc = rr_qp_post_send(c->qp, wr, &bad);
	if (prc) {
		/* Cannot fence by invalidation: the connection goes. */
		rr_warn_rl("rpcrdma: LOCAL_INV not posted (%d): tearing down",
			   prc);
		rr__clnt_conn_lost(c, -ECONNRESET);
		return;
	}
	c->sq_posted += n;
	r->linv_mark = c->sq_posted;
	sq_reserve(c, r, r->sq_reserved - n);
	r->nlinv_out = n;
	c->st.local_invs += n;
	r->deadline_ms = 0;
}
