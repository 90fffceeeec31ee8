/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Server: one call from its receive to its handler (RFC 8166 sections 3.5,
 * 4 and 5).
 *
 * Everything in the transport header comes from the peer: chunk lists are
 * checked (read chunks at aligned positions inside the message, in order
 * and not overlapping; for RDMA_NOMSG the message itself in a chunk at
 * position zero; the whole call within a bulk buffer; at most one write
 * chunk used) before any RDMA Read is posted. A call with read chunks is
 * rebuilt in a bulk buffer as the XDR stream it stands for: the Reads land the
 * chunks' data at their positions, the inline pieces are copied around them
 * (RFC 8166 sections 3.4.5 and 3.5.3), so any program's decoder sees
 * ordinary XDR, and WRITE's data is read once, into place. Bad headers are
 * answered with RDMA_ERROR (ERR_VERS with the range we speak, ERR_CHUNK
 * otherwise) and the receive is reposted; the connection carries on.
 *
 * ORDER: a call takes its bulk buffers all at once (the pulled arguments'
 * and the result's), never one while holding the other, so calls cannot
 * deadlock each other over the shared pool.
 */
#include "rpcrdma/svc.h"

#include "base/clock.h"

#include <errno.h>
#include <string.h>

void rr__svc_post_recv(struct svc_conn *cn, uint32_t i)
{
	struct rr_sge sge = {.addr = (uintptr_t)rr_bufpool_at(&cn->recvbufs, i),
			     .length = cn->recvbufs.size,
			     .lkey = rr_mr_lkey(cn->recvbufs.mr)};
	struct rr_recv_wr wr = {.sg_list = &sge, .num_sge = 1};

	if (rr__svc_conn_dead(cn))
		return;
	wr.wr_id = rr_wrid(cn->gen, RR_WRK_RECV, i, ++cn->reqs[i].recv_seq);
	if (rr_qp_post_recv(cn->qp, &wr, NULL)) {
		rr__svc_conn_kill(cn, NULL);
		return;
	}
	cn->reqs[i].recv_out = true;
	cn->recv_posted++;
}

/* ------------------------------------------------------ bulk buffers */

/* Why a call cannot go on now (see svc.h on the FIFO's fairness). */
enum svc_wait {
	SVC_GO,
	SVC_WAIT_CONN, /* its connection's room, share or penalty */
	SVC_WAIT_POOL, /* the shared pool is empty */
};

static int bulk_get(struct svc_conn *cn)
{
	struct rr_svc *s = cn->s;

	for (uint32_t i = 0; i < s->bulk.count; i++) {
		if (s->bulk_free & (1u << i)) {
			s->bulk_free &= ~(1u << i);
			cn->bulk_held++;
			return (int)i;
		}
	}
	return -1;
}

void rr__svc_bulk_put(struct svc_conn *cn, int i)
{
	if (i < 0)
		return;
	cn->s->bulk_free |= 1u << i;
	cn->bulk_held -= cn->bulk_held > 0;
}

uint8_t *rr__svc_bulk_at(struct rr_svc *s, int i)
{
	return rr_bufpool_at(&s->bulk, (uint32_t)i);
}

/*
 * The share of each connection: opts.bulk_share, else an equal one that
 * keeps a newcomer's free. Called under s->mu once per pass of the loop
 * and when a connection is taken.
 */
void rr__svc_share_update(struct rr_svc *s)
{
	uint32_t live = 0;

	if (s->o.bulk_share) {
		s->bulk_share = s->o.bulk_share;
		return;
	}
	for (const struct svc_conn *cn = s->conns; cn; cn = cn->next)
		live += !rr__svc_conn_dead(cn);
	s->bulk_share = s->o.bulk_bufs / (live + 1);
	if (!s->bulk_share)
		s->bulk_share = 1;
}

static bool wants_res_bulk(const struct svc_req *r)
{
	return r->h.nwrite || r->h.has_reply;
}

/* Whether r's next step takes a bulk buffer. */
static bool needs_bulk(const struct svc_req *r)
{
	if (r->state == SREQ_RECEIVED && r->h.nread)
		return true;
	return wants_res_bulk(r) && r->res_bulk < 0;
}

/*
 * Whether cn may take n more bulk buffers: within its share, or holding
 * none (one call must always be able to go on), and its host not under
 * penalty. Counted once per call that had to wait.
 */
static bool within_share(struct svc_conn *cn, struct svc_req *r, uint32_t n)
{
	struct rr_svc *s = cn->s;
	bool penalised = cn->penalty_until > rr_coarse_ms();

	if (!penalised &&
	    (!cn->bulk_held || cn->bulk_held + n <= s->bulk_share))
		return true;
	if (!r->share_waited) {
		r->share_waited = true;
		s->st.bulk_share_waits++;
		s->st.penalty_waits += penalised;
	}
	return false;
}

/* Takes the bulk buffers r needs, all or none. */
static enum svc_wait bulk_take(struct svc_conn *cn, struct svc_req *r,
			       bool for_args)
{
	bool res = wants_res_bulk(r) && r->res_bulk < 0;
	int a = -1, b = -1;

	if (!for_args && !res)
		return SVC_GO;
	if (!within_share(cn, r, (uint32_t)for_args + res))
		return SVC_WAIT_CONN;
	if (for_args && (a = bulk_get(cn)) < 0)
		return SVC_WAIT_POOL;
	if (res && (b = bulk_get(cn)) < 0) {
		rr__svc_bulk_put(cn, a);
		return SVC_WAIT_POOL;
	}
	if (for_args)
		r->bulk = a;
	if (res)
		r->res_bulk = b;
	return SVC_GO;
}

/* ---------------------------------------------------------- waiting */

/* Parks r at the FIFO's tail, waiting for w. */
static void park(struct rr_svc *s, struct svc_req *r, enum svc_wait w)
{
	struct svc_conn *cn = r->conn;

	s->pool_wait |= w == SVC_WAIT_POOL;
	r->park_seq = ++s->park_seq;
	r->qnext = NULL;
	if (cn->wait_tail)
		cn->wait_tail->qnext = r;
	else
		cn->wait_head = r;
	cn->wait_tail = r;
}

/* The request is finished with: its buffers go back, its receive too. */
void rr__svc_finish(struct svc_conn *cn, struct svc_req *r)
{
	rr__svc_bulk_put(cn, r->bulk);
	rr__svc_bulk_put(cn, r->res_bulk);
	r->bulk = r->res_bulk = -1;
	rr__svc_req_move(cn, r, SREQ_FREE);
	cn->calls_in -= cn->calls_in > 0;
	rr__svc_post_recv(cn, r->recv_idx);
}

/* ---------------------------------------------------------- handlers */

/*
 * A procedure that must not run twice: answered from the cache when this
 * is a retransmission of a call that ran, dropped when the first is still
 * running (its reply goes to the connection it came on).
 */
static void run_cached(struct rr_svc *s, struct svc_req *r)
{
	struct rr_drc_key k;
	enum rr_drc_verdict v;

	rr__drc_key_of(&k, (const struct sockaddr *)&r->conn->peer, &r->rq.call,
		       r->rq.args, r->rq.args_len, r->rq.arg_bulk,
		       r->rq.arg_bulk_len);
	v = rr__drc_lookup(&s->drc, &k, &r->rh, r->rq.res, &r->rq.res_len);
	if (v == RR_DRC_REPLAY) {
		r->rq.res_bulk = NULL;
		r->rq.res_bulk_len = 0;
		return;
	}
	if (v == RR_DRC_BUSY) {
		r->drop = true;
		return;
	}
	rr__dispatch(&s->progs, &r->rq, &r->rh);
	rr__drc_done(&s->drc, &k, &r->rh, r->rq.res, r->rq.res_len,
		     r->rq.res_bulk_len == 0);
}

/* Points r's results at the buffers of the thread about to run it. */
static void handler_bufs(struct rr_svc *s, struct svc_req *r,
			 const struct svc_scratch *sc)
{
	r->rq.res = sc->res;
	r->rq.res_cap = SVC_RES_SCRATCH;
	r->rq.max_bulk = s->o.max_bulk;
	if (r->res_bulk >= 0)
		r->rq.bulk_buf = rr__svc_bulk_at(s, r->res_bulk);
	else
		r->rq.bulk_buf = sc->bulk;
	r->rq.bulk_cap = s->o.max_bulk;
	r->drop = false;
}

void rr__svc_run_handler(struct rr_svc *s, struct svc_req *r,
			 const struct svc_scratch *sc)
{
	handler_bufs(s, r, sc);
	if (!rr__progtab_drc(&s->progs, &r->rq.call)) {
		rr__dispatch(&s->progs, &r->rq, &r->rh);
		return;
	}
	run_cached(s, r);
}

/* Reserves the reply's resources, or says what r waits for. */
static enum svc_wait reserve_reply(struct svc_conn *cn, struct svc_req *r)
{
	enum svc_wait w;

	if (!rr__svc_sq_room(cn, SVC_REPLY_WRS))
		return SVC_WAIT_CONN;
	w = bulk_take(cn, r, false);
	if (w != SVC_GO)
		return w;
	cn->sq_resv += SVC_REPLY_WRS;
	cn->sctx_resv++;
	return SVC_GO;
}

/*
 * With a pool, a call of its program's nowait_procs is run here first,
 * under s->mu as inline handlers are: when the handler answers without
 * blocking, the hand-off to a worker (a cross-core wake-up, and the
 * worker's contention for s->mu to post) is saved. Such a handler never
 * changes this thread's credentials, so this thread may post its reply
 * even where the device checks them (post_in_loop). false: a worker
 * must run it.
 */
static bool try_inline(struct rr_svc *s, struct svc_req *r)
{
	if (!rr__progtab_nowait(&s->progs, &r->rq.call))
		return false;
	handler_bufs(s, r, &s->scratch);
	if (!rr__dispatch_nowait(&s->progs, &r->rq, &r->rh)) {
		s->st.deferred_calls++;
		return false;
	}
	s->st.inline_calls++;
	return true;
}

/* Inline: the handler runs here, under s->mu. Else a worker runs it. */
static void run(struct svc_conn *cn, struct svc_req *r)
{
	struct rr_svc *s = cn->s;

	rr__svc_req_move(cn, r, SREQ_RUNNING);
	if (s->pool.n && !try_inline(s, r)) {
		cn->running++;
		rr__svc_pool_submit(s, r);
		return;
	}
	if (!s->pool.n)
		rr__svc_run_handler(s, r, &s->scratch);
	rr__svc_reply(cn, r);
	rr__svc_finish(cn, r);
}

/* ----------------------------------------------------------- parsing */

/*
 * One read chunk: the run of read-list segments [first, first + nsegs)
 * that share a position (RFC 8166 section 3.4.5). pos is the chunk's
 * offset in the call's XDR stream; at, where it falls in the inline part.
 */
struct rchunk {
	uint64_t pos, len;
	uint32_t first, nsegs, at;
};

/* Groups the read list into chunks; returns how many. */
static uint32_t read_chunks(const struct rr_rdma_hdr *h, struct rchunk *ck)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < h->nread; i++) {
		const struct rr_rdma_read_seg *rs = &h->reads[i];

		if (!n || rs->position != ck[n - 1].pos)
			ck[n++] = (struct rchunk){.pos = rs->position,
						  .first = i};
		ck[n - 1].len += rs->seg.length;
		ck[n - 1].nsegs++;
	}
	return n;
}

/*
 * Where each chunk's data goes in the rebuilt stream, checked against the
 * inline part (mlen bytes). A read chunk carries no XDR roundup and the
 * inline part has none for it either (RFC 8166 section 3.4.5): the
 * stream gets the roundup back, and positions count it. Chunks come in
 * position order and do not overlap. Returns the stream's length, or
 * -EBADMSG.
 */
static int64_t place_chunks(struct rchunk *ck, uint32_t n, uint32_t mlen)
{
	uint64_t padded = 0, end = 1; /* position 0 is RDMA_NOMSG's */

	for (uint32_t k = 0; k < n; k++) {
		if (ck[k].pos < end || ck[k].pos - padded > mlen)
			return -EBADMSG;
		ck[k].at = (uint32_t)(ck[k].pos - padded);
		padded += ck[k].len + rr_xdr_pad(ck[k].len);
		end = ck[k].pos + ck[k].len + rr_xdr_pad(ck[k].len);
	}
	return (int64_t)(mlen + padded);
}

/*
 * The call's chunks, the data items among them placed in its stream
 * (checked by check_reads before). *k0: the first data item's chunk;
 * RDMA_NOMSG's chunk 0 is the RPC message itself. Returns the count.
 */
static uint32_t call_chunks(const struct svc_req *r, struct rchunk *ck,
			    uint32_t *k0, uint32_t *mlen)
{
	uint32_t n = read_chunks(&r->h, ck);
	bool nomsg = r->h.proc == RR_RDMA_NOMSG;

	*k0 = nomsg && n; /* n: only calls with read chunks come here */
	*mlen = *k0 ? (uint32_t)ck[0].len : r->len - (uint32_t)r->hlen;
	place_chunks(ck + *k0, n - *k0, *mlen); /* as check_reads did */
	return n;
}

/*
 * Checks the read list and sizes the stream it makes: the RPC message
 * (inline, or RDMA_NOMSG's position-zero chunk) with the data items of
 * the chunks at aligned positions within it put back in.
 */
static int check_reads(struct svc_conn *cn, struct svc_req *r)
{
	struct rchunk ck[RR_RDMA_MAX_READ_SEGS];
	uint32_t n = read_chunks(&r->h, ck), k0, mlen;
	int64_t len;

	r->stream_off = r->stream_len = 0;
	if (!n)
		return r->h.proc == RR_RDMA_NOMSG ? -EBADMSG : 0;
	for (uint32_t i = 0; i < r->h.nread; i++)
		if (r->h.reads[i].position & 3)
			return -EBADMSG;
	if (r->h.proc == RR_RDMA_NOMSG && ck[0].pos)
		return -EBADMSG;
	if (ck[0].len > cn->s->bulk.size)
		return -E2BIG;
	k0 = r->h.proc == RR_RDMA_NOMSG;
	mlen = k0 ? (uint32_t)ck[0].len : r->len - (uint32_t)r->hlen;
	len = place_chunks(ck + k0, n - k0, mlen);
	if (len < 0)
		return (int)len;
	/* the first data item on a cache line: WRITE's copy to the file */
	if (k0 < n)
		r->stream_off = (uint32_t)(-ck[k0].pos & 63);
	/* a message with items in it is pulled after the stream, then moved */
	if ((uint64_t)len + r->stream_off + (k0 && n > 1 ? mlen : 0) >
	    cn->s->bulk.size)
		return -E2BIG;
	r->stream_len = (uint32_t)len;
	return 0;
}

/* Checks the chunk lists of a call before anything is posted. */
static int check_chunks(struct svc_conn *cn, struct svc_req *r)
{
	const struct rr_rdma_hdr *h = &r->h;

	if (h->proc != RR_RDMA_MSG && h->proc != RR_RDMA_NOMSG)
		return -EBADMSG;
	if (h->nwrite > 1 || h->nwrite + h->has_reply > 2)
		return -E2BIG;
	return check_reads(cn, r);
}

/*
 * Where each read segment lands, from the stream's start: a data item
 * at its position; RDMA_NOMSG's message at 0 when it is all there is,
 * else just past the stream, to be moved into place (fill_stream).
 */
static void seg_places(const struct svc_req *r, uint32_t *off)
{
	struct rchunk ck[RR_RDMA_MAX_READ_SEGS];
	uint32_t k0, mlen, n = call_chunks(r, ck, &k0, &mlen);

	for (uint32_t k = 0; k < n; k++) {
		uint64_t at = ck[k].pos;

		if (k < k0)
			at = n > 1 ? r->stream_len : 0;
		for (uint32_t i = ck[k].first; i < ck[k].first + ck[k].nsegs;
		     i++) {
			off[i] = (uint32_t)at;
			at += r->h.reads[i].seg.length;
		}
	}
}

/*
 * The Reads are done: the message's own bytes go around the data items
 * (copied from the receive buffer, or moved from where RDMA_NOMSG's
 * chunk landed, which is past the stream: no overlap), each item gets
 * its roundup back, and a last item that ends the call is noted: the
 * DDP-eligible item that handlers such as WRITE take apart, with no copy.
 */
static void fill_stream(struct svc_conn *cn, struct svc_req *r, uint8_t *dst)
{
	struct rchunk ck[RR_RDMA_MAX_READ_SEGS];
	uint32_t k0, mlen, n = call_chunks(r, ck, &k0, &mlen), in = 0;
	const uint8_t *msg =
		k0 ? dst + r->stream_len
		   : rr_bufpool_at(&cn->recvbufs, r->recv_idx) + r->hlen;

	r->ddp_pos = r->ddp_len = 0;
	if (k0 == n)
		return; /* RDMA_NOMSG alone: the message landed in place */
	for (uint32_t k = k0; k < n; k++) {
		uint64_t out = ck[k].pos - (ck[k].at - in);

		memcpy(dst + out, msg + in, ck[k].at - in);
		in = ck[k].at;
		memset(dst + ck[k].pos + ck[k].len, 0, rr_xdr_pad(ck[k].len));
	}
	memcpy(dst + r->stream_len - (mlen - in), msg + in, mlen - in);
	if (ck[n - 1].at == mlen) {
		r->ddp_pos = (uint32_t)ck[n - 1].pos;
		r->ddp_len = (uint32_t)ck[n - 1].len;
	}
}

/*
 * The RPC message is complete (inline, or rebuilt in the bulk buffer).
 * Splits it into call header and arguments, and the DDP-eligible item
 * when a chunk carried the last one.
 */
static int parse_call(struct svc_conn *cn, struct svc_req *r)
{
	const uint8_t *msg;
	int rc;

	r->rq.arg_bulk = NULL;
	r->rq.arg_bulk_len = 0;
	r->rq.peer = (const struct sockaddr *)&cn->peer;
	r->rq.conn = cn->cb ? &cn->cb->base : NULL;
	if (!r->h.nread)
		return rr__svc_req_parse(
			&r->rq,
			rr_bufpool_at(&cn->recvbufs, r->recv_idx) + r->hlen,
			r->len - (size_t)r->hlen);
	msg = rr__svc_bulk_at(cn->s, r->bulk) + r->stream_off;
	if (!r->ddp_len)
		return rr__svc_req_parse(&r->rq, msg, r->stream_len);
	/* the item's length word ends the arguments the handler sees */
	rc = rr__svc_req_parse(&r->rq, msg, r->ddp_pos);
	if (rc)
		return rc;
	r->rq.arg_bulk = msg + r->ddp_pos;
	r->rq.arg_bulk_len = r->ddp_len;
	r->rq.args_xdr_len = r->stream_len - (size_t)(r->rq.args - msg);
	return 0;
}

/*
 * Posts the RDMA Reads that pull the read chunks into a bulk buffer, one
 * per segment, each to its place in the rebuilt stream: a client whose
 * registrations are small (the kernel's FRWR over rxe: 128 KiB) sends a
 * 1 MiB WRITE in eight. One chain, one post (one doorbell). Only the
 * last is signaled: its completion covers the chain.
 */
static enum svc_wait pull(struct svc_conn *cn, struct svc_req *r)
{
	struct rr_svc *s = cn->s;
	uint32_t n = r->h.nread, off[RR_RDMA_MAX_READ_SEGS];
	struct rr_sge sge[RR_RDMA_MAX_READ_SEGS];
	struct rr_send_wr wr[RR_RDMA_MAX_READ_SEGS], *bad = NULL;
	enum svc_wait w;
	uint8_t *dst;
	int rc;

	if (!rr__svc_sq_room(cn, n))
		return SVC_WAIT_CONN;
	w = bulk_take(cn, r, true);
	if (w != SVC_GO)
		return w;
	dst = rr__svc_bulk_at(s, r->bulk) + r->stream_off;
	seg_places(r, off);
	r->seq++;
	for (uint32_t i = 0; i < n; i++) {
		const struct rr_rdma_seg *seg = &r->h.reads[i].seg;

		sge[i] = (struct rr_sge){(uintptr_t)(dst + off[i]), seg->length,
					 rr_mr_lkey(s->bulk.mr)};
		wr[i] = (struct rr_send_wr){
			.wr_id = rr_wrid(cn->gen, RR_WRK_READ, r->idx, r->seq),
			.next = i + 1 < n ? &wr[i + 1] : NULL,
			.opcode = RR_WR_RDMA_READ,
			.flags = i + 1 < n ? 0 : RR_SEND_SIGNALED,
			.sg_list = &sge[i],
			.num_sge = 1,
			.rdma = {.remote_addr = seg->offset,
				 .rkey = seg->handle}};
	}
	rr__svc_flush(cn); /* ORDER: replies accounted before these go first */
	rc = rr__svc_conn_dead(cn) ? -ENOTCONN
				   : rr_qp_post_send(cn->qp, wr, &bad);
	/* what did go out is accounted, so the drain balances */
	cn->reads_out += rc ? (uint32_t)(bad ? bad - wr : 0) : n;
	if (rc) {
		rr__svc_conn_kill(cn, NULL); /* conn_close gives r->bulk back */
		return SVC_GO;
	}
	for (uint32_t i = 0; i < n; i++)
		rr__conn_ctr_add(&cn->ctr.bytes_in, sge[i].length);
	r->read_mark = cn->sq_posted;
	rr__svc_req_move(cn, r, SREQ_PULLING);
	r->pull_ms = rr_coarse_ms();
	s->st.read_chunks++;
	return SVC_GO;
}

/*
 * Moves r as far as it can go, or says what it waits for (the caller
 * parks it). SVC_GO: it is pulling, running, answered or dropped.
 */
static enum svc_wait advance(struct svc_conn *cn, struct svc_req *r)
{
	enum svc_wait w;

	if (r->state == SREQ_RECEIVED && r->h.nread)
		return pull(cn,
			    r); /* on success rr__svc_read_done resumes it */
	if (r->state != SREQ_READY && parse_call(cn, r)) {
		cn->s->st.bad_headers++;
		rr__conn_ctr_add(&cn->ctr.errors, 1);
		rr__svc_send_error(cn, r->h.xid, RR_RDMA_VERSION, RR_ERR_CHUNK);
		rr__svc_finish(cn, r);
		return SVC_GO;
	}
	rr__svc_req_move(cn, r, SREQ_READY);
	w = reserve_reply(cn, r);
	if (w == SVC_GO)
		run(cn, r);
	return w;
}

void rr__svc_read_done(struct svc_conn *cn, struct svc_req *r)
{
	enum svc_wait w;

	rr__svc_sq_retire(cn, r->read_mark);
	cn->reads_out -= r->h.nread;
	fill_stream(cn, r, rr__svc_bulk_at(cn->s, r->bulk) + r->stream_off);
	if (parse_call(cn, r)) {
		cn->s->st.bad_headers++;
		rr__conn_ctr_add(&cn->ctr.errors, 1);
		rr__svc_send_error(cn, r->h.xid, RR_RDMA_VERSION, RR_ERR_CHUNK);
		rr__svc_finish(cn, r);
		return;
	}
	rr__svc_req_move(cn, r, SREQ_READY);
	w = advance(cn, r);
	if (w != SVC_GO)
		park(cn->s, r, w);
}

/*
 * The connection whose first parked call is the oldest of those that may
 * be tried in this pass: not dead, not left waiting earlier in the pass,
 * and not needing a bulk buffer while an older call waits for the pool.
 */
static struct svc_conn *next_to_try(struct rr_svc *s)
{
	struct svc_conn *best = NULL;

	for (struct svc_conn *cn = s->conns; cn; cn = cn->next) {
		struct svc_req *r = cn->wait_head;

		if (!r || rr__svc_conn_dead(cn) ||
		    cn->wait_pass == s->resume_pass ||
		    (s->pool_wait && needs_bulk(r)))
			continue;
		if (!best || r->park_seq < best->wait_head->park_seq)
			best = cn;
	}
	return best;
}

static void unpark_head(struct svc_conn *cn)
{
	cn->wait_head = cn->wait_head->qnext;
	if (!cn->wait_head)
		cn->wait_tail = NULL;
}

/*
 * One pass over the parked calls, oldest first across connections: each
 * goes on if it can; one that must still wait keeps its place at the
 * head of its connection's queue, and that connection is done for this
 * pass (its calls' order is kept). Each step moves a call on or ends a
 * connection's turn, and costs a look at each connection.
 */
void rr__svc_resume(struct rr_svc *s)
{
	struct svc_conn *cn;

	s->resume_pass++;
	s->pool_wait = false;
	while ((cn = next_to_try(s))) {
		struct svc_req *r = cn->wait_head;
		enum svc_wait w;

		unpark_head(cn);
		w = advance(cn, r);
		if (w == SVC_GO)
			continue;
		r->qnext = cn->wait_head;
		cn->wait_head = r;
		if (!cn->wait_tail)
			cn->wait_tail = r;
		cn->wait_pass = s->resume_pass;
		s->pool_wait |= w == SVC_WAIT_POOL;
	}
}

void rr__svc_recv(struct svc_conn *cn, uint32_t i, uint32_t len)
{
	struct svc_req *r = &cn->reqs[i];
	const uint8_t *buf = rr_bufpool_at(&cn->recvbufs, i);
	enum svc_wait w;
	int rc;

	rr__conn_ctr_add(&cn->ctr.bytes_in, len);
	r->recv_idx = i;
	r->len = len;
	r->bulk = r->res_bulk = -1;
	r->share_waited = false;
	r->hlen = rr__rdma_hdr_decode(buf, len, &r->h);
	if (r->hlen == -EPROTONOSUPPORT) {
		cn->s->st.bad_headers++;
		rr__conn_ctr_add(&cn->ctr.errors, 1);
		rr__svc_send_error(cn, r->h.xid, r->h.vers, RR_ERR_VERS);
		rr__svc_post_recv(cn, i);
		return;
	}
	if (r->hlen >= 0 && rr__svc_cb_reply(cn, &r->h, buf + r->hlen,
					     len - (uint32_t)r->hlen)) {
		rr__svc_post_recv(cn, i); /* a reply to a callback of ours */
		return;
	}
	rc = r->hlen < 0 ? r->hlen : check_chunks(cn, r);
	if (rc) {
		cn->s->st.bad_headers++;
		rr__conn_ctr_add(&cn->ctr.errors, 1);
		if (len >= RR_RDMA_HDR_MIN && r->h.proc != RR_RDMA_ERROR)
			rr__svc_send_error(cn, r->h.xid, RR_RDMA_VERSION,
					   RR_ERR_CHUNK);
		else if (r->h.proc == RR_RDMA_ERROR)
			cn->s->st.rdma_errors_received++;
		rr__svc_post_recv(cn, i);
		return;
	}
	rr__svc_req_move(cn, r, SREQ_RECEIVED);
	/* Finished calls were answered before the client could use them. */
	cn->last_call_ms = rr_coarse_ms();
	rr__conn_ctr_add(&cn->ctr.calls, 1);
	if (++cn->calls_in > cn->s->o.credits)
		cn->s->st.credit_overruns++;
	/* FIFO: not past its connection's parked calls, nor for the pool */
	if (cn->wait_head || (cn->s->pool_wait && needs_bulk(r)))
		w = SVC_WAIT_CONN;
	else
		w = advance(cn, r);
	if (w != SVC_GO)
		park(cn->s, r, w);
}
