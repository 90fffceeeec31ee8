/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Server: posting replies (RFC 8166 sections 3.5 and 4).
 *
 * A DDP-eligible result goes by RDMA Write into the client's write chunk;
 * the reply itself goes inline when it fits the client's inline size with
 * the transport header it needs (RFC 8166 section 3.5: Linux's client
 * offers no chunk at all for a reply it knows fits),
 * else by RDMA Write into its reply chunk (RDMA_NOMSG). Only a reply that
 * fits neither is answered ERR_CHUNK (counted: reply_too_large). It is sent
 * With Invalidate when the client allowed it and the call exposed exactly one
 * handle, which then needs no LOCAL_INV on the client.
 *
 * Send contexts form a ring in posting order; a context (its send buffer
 * and any bulk buffer or registered region its Writes read from) is
 * released only when its Send, or a later signaled one, has completed
 * (invariant 2).
 */
#include "rpcrdma/svc.h"

#include "base/clock.h"

#include <errno.h>
#include <string.h>

bool rr__svc_sq_room(struct svc_conn *cn, uint32_t need)
{
	return cn->sq_posted - cn->sq_retired + cn->reads_out + cn->sq_resv +
			       need <=
		       cn->sq_depth &&
	       cn->sctx_tail - cn->sctx_head + cn->sctx_resv < cn->nsctx;
}

void rr__svc_sctx_release(struct svc_conn *cn, struct svc_sendctx *sc)
{
	rr__svc_bulk_put(cn, sc->bulk);
	rr__svc_mem_put(cn->s, sc->mem);
	sc->bulk = sc->mem = -1;
	sc->busy = false;
}

void rr__svc_sq_retire(struct svc_conn *cn, uint64_t mark)
{
	if (mark > cn->sq_retired)
		cn->sq_retired = mark;
	while (cn->sctx_head != cn->sctx_tail) {
		struct svc_sendctx *sc = &cn->sctx[cn->sctx_head % cn->nsctx];

		if (sc->sq_mark > cn->sq_retired)
			break;
		rr__svc_sctx_release(cn, sc);
		cn->sctx_head++;
	}
}

static uint32_t next_sctx(struct svc_conn *cn)
{
	return cn->sctx_tail % cn->nsctx;
}

/*
 * The loop is batching: copies the chain (its work requests and their one
 * SGE each) into cn's batch, to be posted by rr__svc_flush. false: post it now.
 */
static bool queue(struct svc_conn *cn, const struct rr_send_wr *first,
		  uint32_t nwr)
{
	struct svc_pend *pe;
	uint32_t i = 0;

	if (!cn->s->batching || nwr > SVC_PEND_WRS)
		return false;
	for (const struct rr_send_wr *w = first; w; w = w->next)
		if (w->num_sge != 1)
			return false;
	if (cn->npend == SVC_PEND_MAX)
		rr__svc_flush(cn);
	pe = &cn->pend[cn->npend++];
	for (const struct rr_send_wr *w = first; w; w = w->next, i++) {
		pe->wr[i] = *w;
		pe->sge[i] = w->sg_list[0];
		pe->wr[i].sg_list = &pe->sge[i];
		pe->wr[i].next = NULL;
	}
	pe->nwr = nwr;
	return true;
}

/*
 * Posts cn's batch as one chain. What does not go out (the connection died
 * meanwhile) will never complete: it leaves the send queue's count, and
 * its send contexts' bulk buffers go back when the connection is closed.
 */
void rr__svc_flush(struct svc_conn *cn)
{
	struct rr_send_wr *first = &cn->pend[0].wr[0], *last = NULL, *bad;
	uint32_t n = cn->npend, lost = 0;

	if (!n)
		return;
	cn->npend = 0;
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < cn->pend[i].nwr; k++) {
			if (last)
				last->next = &cn->pend[i].wr[k];
			last = &cn->pend[i].wr[k];
		}
	}
	bad = first;
	if (!rr__svc_conn_dead(cn) && !rr_qp_post_send(cn->qp, first, &bad))
		return;
	for (const struct rr_send_wr *w = bad; w; w = w->next)
		lost++;
	cn->sq_posted -= lost;
	rr__svc_conn_kill(cn, NULL);
}

/* Every byte a chain moves to the peer: its Writes' and its Send's. */
static void count_out(struct svc_conn *cn, const struct rr_send_wr *wr,
		      uint32_t nwr)
{
	uint64_t len = 0;

	for (; wr && nwr; wr = wr->next, nwr--)
		for (uint32_t i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
	rr__conn_ctr_add(&cn->ctr.bytes_out, len);
}

/*
 * Posts a chain ending in a Send from the next send context (or, while the
 * loop batches, queues it: it counts as posted from here on). bulk (or -1)
 * is a bulk buffer the chain reads from, mem (or -1) a registered region;
 * each is released with the Send, which is signaled so that they go soon.
 */
static int post_reply(struct svc_conn *cn, struct rr_send_wr *first,
		      struct rr_send_wr *send, uint32_t nwr, int bulk, int mem)
{
	uint32_t idx = next_sctx(cn);
	struct svc_sendctx *sc = &cn->sctx[idx];
	int rc;

	sc->seq++;
	sc->busy = true;
	sc->cqe_seen = false;
	sc->bulk = bulk;
	sc->mem = mem;
	if (mem >= 0)
		cn->s->mems[mem].users++;
	sc->bulk_ms = bulk >= 0 || mem >= 0 ? rr_coarse_ms() : 0;
	send->wr_id = rr_wrid(cn->gen, RR_WRK_SEND, idx, sc->seq);
	if (bulk >= 0 || mem >= 0 || ++cn->unsignaled >= SVC_SIGNAL_EVERY) {
		send->flags |= RR_SEND_SIGNALED;
		cn->unsignaled = 0;
	}
	if (queue(cn, first, nwr)) {
		rc = 0;
	} else {
		rr__svc_flush(cn); /* ORDER: posted in the order accounted */
		rc = rr__svc_conn_dead(cn)
			     ? -ENOTCONN
			     : rr_qp_post_send(cn->qp, first, NULL);
	}
	if (rc) {
		rr__svc_mem_put(cn->s, sc->mem);
		sc->busy = false;
		sc->bulk = sc->mem = -1;
		rr__svc_conn_kill(cn, NULL);
		return rc;
	}
	cn->sq_posted += nwr;
	count_out(cn, first, nwr);
	sc->sq_mark = cn->sq_posted;
	cn->sctx_tail++;
	return 0;
}

uint8_t *rr__svc_send_buf(struct svc_conn *cn)
{
	return rr_bufpool_at(&cn->sendbufs, next_sctx(cn));
}

/*
 * A callback: len bytes of rr__svc_send_buf, sent alone. The caller
 * checked the room (rr__svc_sq_room).
 */
int rr__svc_send(struct svc_conn *cn, uint32_t len)
{
	struct rr_sge sge = {(uintptr_t)rr__svc_send_buf(cn), len,
			     rr_mr_lkey(cn->sendbufs.mr)};
	struct rr_send_wr wr = {
		.opcode = RR_WR_SEND, .sg_list = &sge, .num_sge = 1};

	return post_reply(cn, &wr, &wr, 1, -1, -1);
}

/* RDMA_ERROR for xid: ERR_VERS names the one version we speak. */
void rr__svc_send_error(struct svc_conn *cn, uint32_t xid, uint32_t vers,
			uint32_t err)
{
	uint8_t *buf = rr_bufpool_at(&cn->sendbufs, next_sctx(cn));
	struct rr_rdma_hdr h = {.xid = xid,
				.vers = vers,
				.credits = cn->s->o.credits,
				.proc = RR_RDMA_ERROR,
				.err = err,
				.vers_low = RR_RDMA_VERSION,
				.vers_high = RR_RDMA_VERSION};
	struct rr_sge sge = {(uintptr_t)buf, 0, rr_mr_lkey(cn->sendbufs.mr)};
	struct rr_send_wr wr = {
		.opcode = RR_WR_SEND, .sg_list = &sge, .num_sge = 1};
	int n;

	if (rr__svc_conn_dead(cn) || !rr__svc_sq_room(cn, 1))
		return; /* the peer overran us; it gets no answer */
	n = rr__rdma_hdr_encode(&h, buf, cn->sendbufs.size);
	if (n < 0)
		return;
	sge.length = (uint32_t)n;
	if (!post_reply(cn, &wr, &wr, 1, -1, -1))
		cn->s->st.rdma_errors_sent++;
}

/* Writes [src, src+len) across the chunk's segments; fills the echo. */
static int chunk_writes(struct svc_conn *cn, const struct rr_rdma_chunk *ch,
			const uint8_t *src, size_t len, uint32_t lkey,
			struct rr_send_wr *wr, struct rr_sge *sge,
			struct rr_rdma_chunk *echo)
{
	uint32_t n = 0;

	echo->nsegs = ch->nsegs;
	for (uint32_t i = 0; i < ch->nsegs; i++) {
		uint32_t take = len < ch->segs[i].length ? (uint32_t)len
							 : ch->segs[i].length;

		echo->segs[i] = ch->segs[i];
		echo->segs[i].length = take;
		if (!take)
			continue;
		sge[n] = (struct rr_sge){(uintptr_t)src, take, lkey};
		wr[n] = (struct rr_send_wr){
			.wr_id = rr_wrid(cn->gen, RR_WRK_WRITE, 0, 0),
			.opcode = RR_WR_RDMA_WRITE,
			.sg_list = &sge[n],
			.num_sge = 1,
			.rdma = {.remote_addr = ch->segs[i].offset,
				 .rkey = ch->segs[i].handle}};
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
		src += take;
		len -= take;
	}
	return len ? -EMSGSIZE : (int)n;
}

static uint64_t chunk_len(const struct rr_rdma_chunk *ch)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < ch->nsegs; i++)
		n += ch->segs[i].length;
	return n;
}

/* The one handle the call exposed, for Send With Invalidate; else 0. */
static uint32_t single_handle(const struct rr_rdma_hdr *h)
{
	uint32_t handle = 0;
	uint32_t n = 0;

#define SEE(x)                                                                 \
	do {                                                                   \
		if (!n || (x) != handle)                                       \
			n++;                                                   \
		handle = (x);                                                  \
	} while (0)
	for (uint32_t i = 0; i < h->nread; i++)
		SEE(h->reads[i].seg.handle);
	for (uint32_t w = 0; w < h->nwrite; w++)
		for (uint32_t i = 0; i < h->writes[w].nsegs; i++)
			SEE(h->writes[w].segs[i].handle);
	if (h->has_reply)
		for (uint32_t i = 0; i < h->reply.nsegs; i++)
			SEE(h->reply.segs[i].handle);
#undef SEE
	return n == 1 ? handle : 0;
}

struct reply_plan {
	struct rr_send_wr wr[SVC_REPLY_WRS];
	struct rr_sge sge[SVC_REPLY_WRS];
	uint32_t nwr;
	int mem;	 /* the registered region the Writes read, or -1 */
	bool reads_bulk; /* the Writes read the bulk buffer */
	struct rr_rdma_hdr h;
};

static void chain_add(struct reply_plan *p, int n)
{
	for (int i = 0; i < n; i++) {
		if (p->nwr)
			p->wr[p->nwr - 1].next = &p->wr[p->nwr];
		p->nwr++;
	}
}

static bool has_results(const struct svc_req *r)
{
	return r->rh.stat == RR_MSG_ACCEPTED && r->rh.accept == RR_SUCCESS;
}

/*
 * The DDP-eligible result into the write chunk: from the application's
 * registered memory when it lies there, else from the bulk buffer (where
 * the handler may have built it).
 */
static int plan_write_chunk(struct svc_conn *cn, struct svc_req *r,
			    struct reply_plan *p)
{
	struct rr_svc *s = cn->s;
	const uint8_t *src = r->rq.res_bulk;
	size_t len = r->rq.res_bulk_len;
	uint32_t lkey;
	int n;

	if (chunk_len(&r->h.writes[0]) < len)
		return -EMSGSIZE;
	p->mem = rr__svc_mem_find(s, src, len);
	if (p->mem >= 0) {
		lkey = rr_mr_lkey(s->mems[p->mem].mr);
	} else {
		uint8_t *b = rr__svc_bulk_at(s, r->res_bulk);

		if (src != b) {
			memcpy(b, src, len);
			s->st.res_bulk_copies++;
		}
		src = b;
		lkey = rr_mr_lkey(s->bulk.mr);
		p->reads_bulk = true;
	}
	n = chunk_writes(cn, &r->h.writes[0], src, len, lkey, p->wr, p->sge,
			 &p->h.writes[0]);
	if (n < 0)
		return n;
	p->h.nwrite = 1;
	chain_add(p, n);
	s->st.write_chunks++;
	return 0;
}

/* The whole RPC reply into the reply chunk (RDMA_NOMSG). */
static int plan_reply_chunk(struct svc_conn *cn, struct svc_req *r,
			    struct reply_plan *p, bool inline_bulk)
{
	struct rr_svc *s = cn->s;
	size_t off = inline_bulk ? 0 : r->rq.res_bulk_len;
	uint8_t *b;
	int len, k;

	if (!r->h.has_reply || r->res_bulk < 0)
		return -EMSGSIZE;
	b = rr__svc_bulk_at(s, r->res_bulk) + off;
	len = rr__reply_encode(&r->rq, &r->rh, inline_bulk, b,
			       s->bulk.size - off);
	if (len < 0 || (uint64_t)len > chunk_len(&r->h.reply))
		return -EMSGSIZE;
	k = chunk_writes(cn, &r->h.reply, b, (size_t)len,
			 rr_mr_lkey(s->bulk.mr), p->wr + p->nwr,
			 p->sge + p->nwr, &p->h.reply);
	if (k < 0)
		return k;
	p->h.has_reply = true;
	p->h.proc = RR_RDMA_NOMSG;
	p->reads_bulk = true;
	chain_add(p, k);
	s->st.reply_chunks++;
	return 0;
}

/*
 * The reply inline after the header p->h says (RFC 8166 section 3.5:
 * sized as it is, with the chunks this call offered and the write-chunk
 * segments used, not the largest header there could be). Returns the
 * bytes to send, or -EMSGSIZE when they exceed the peer's inline size.
 */
static int encode_inline(struct svc_conn *cn, struct svc_req *r,
			 const struct reply_plan *p, bool inline_bulk,
			 uint8_t *sbuf)
{
	size_t cap = cn->inline_send < cn->sendbufs.size ? cn->inline_send
							 : cn->sendbufs.size;
	size_t hl = rr__rdma_hdr_size(&p->h);
	int n;

	if (!hl || hl >= cap)
		return -EMSGSIZE;
	n = rr__reply_encode(&r->rq, &r->rh, inline_bulk, sbuf + hl, cap - hl);
	if (n < 0)
		return -EMSGSIZE;
	rr__rdma_hdr_encode(&p->h, sbuf, hl);
	return (int)hl + n;
}

/*
 * Builds and posts the reply for r from the resources reserved for it:
 * inline whenever it fits, else in the reply chunk if the call offered
 * one. Returns 0, or -EMSGSIZE when neither can carry it.
 */
static int send_reply(struct svc_conn *cn, struct svc_req *r)
{
	struct rr_svc *s = cn->s;
	struct reply_plan p;
	uint8_t *sbuf = rr_bufpool_at(&cn->sendbufs, next_sctx(cn));
	bool use_write = has_results(r) && r->rq.res_bulk_len && r->h.nwrite;
	uint32_t inv;
	int n, rc;

	p.nwr = 0;
	p.mem = -1;
	p.reads_bulk = false;
	p.h = (struct rr_rdma_hdr){.xid = r->h.xid,
				   .vers = RR_RDMA_VERSION,
				   .credits = s->o.credits,
				   .proc = RR_RDMA_MSG};
	if (use_write && (rc = plan_write_chunk(cn, r, &p)))
		return rc;
	n = encode_inline(cn, r, &p, !use_write, sbuf);
	if (n == -EMSGSIZE) {
		rc = plan_reply_chunk(cn, r, &p, !use_write);
		if (rc)
			return rc;
		n = rr__rdma_hdr_encode(&p.h, sbuf, cn->sendbufs.size);
	}
	if (n < 0)
		return -EMSGSIZE;
	p.sge[p.nwr] = (struct rr_sge){(uintptr_t)sbuf, (uint32_t)n,
				       rr_mr_lkey(cn->sendbufs.mr)};
	p.wr[p.nwr] = (struct rr_send_wr){
		.opcode = RR_WR_SEND, .sg_list = &p.sge[p.nwr], .num_sge = 1};
	inv = cn->peer_inv_ok ? single_handle(&r->h) : 0;
	if (inv) {
		p.wr[p.nwr].opcode = RR_WR_SEND_WITH_INV;
		p.wr[p.nwr].invalidate_rkey = inv;
		s->st.send_with_inv++;
	}
	chain_add(&p, 1);
	/* The bulk buffer goes with the Send only if the Writes read it. */
	rc = post_reply(cn, &p.wr[0], &p.wr[p.nwr - 1], p.nwr,
			p.reads_bulk ? r->res_bulk : -1, p.mem);
	if (!rc && p.reads_bulk)
		r->res_bulk = -1;
	return rc;
}

/*
 * The handler has run: release what was reserved for the reply and use
 * it. Caller holds s->mu; r's connection may have died meanwhile.
 */
void rr__svc_reply(struct svc_conn *cn, struct svc_req *r)
{
	int rc;

	cn->sq_resv -= SVC_REPLY_WRS;
	cn->sctx_resv--;
	if (r->drop) {
		rr__svc_bulk_put(cn, r->res_bulk);
		r->res_bulk = -1;
		return;
	}
	rc = rr__svc_conn_dead(cn) ? -ENOTCONN : send_reply(cn, r);
	if (rc == -EMSGSIZE) {
		cn->s->st.reply_too_large++;
		rr__conn_ctr_add(&cn->ctr.errors, 1);
		rr__svc_send_error(cn, r->h.xid, RR_RDMA_VERSION, RR_ERR_CHUNK);
	} else if (!rc) {
		rr__conn_ctr_add(&cn->ctr.replies, 1);
	}
	if (r->rh.stat == RR_MSG_ACCEPTED && r->rh.accept == RR_GARBAGE_ARGS)
		cn->s->st.garbage_args++;
	cn->s->st.calls++;
	rr__svc_bulk_put(cn, r->res_bulk);
	r->res_bulk = -1;
}
