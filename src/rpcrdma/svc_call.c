/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Server: one call from its receive to its handler (RFC 8166 sections 3.5,
 * 4 and 5).
 *
 * Everything in the transport header comes from the peer: chunk lists are
 * checked (one read chunk, at an aligned position inside the message or at
 * zero; total lengths within max_bulk; at most one write chunk used) before
 * any RDMA Read is posted. Bad headers are answered with RDMA_ERROR
 * (ERR_VERS with the range we speak, ERR_CHUNK otherwise) and the receive
 * is reposted; the connection carries on.
 *
 * ORDER: a call takes its bulk buffers all at once (the pulled arguments'
 * and the result's), never one while holding the other, so calls cannot
 * deadlock each other over the shared pool.
 */
#include "rpcrdma/svc.h"

#include "base/clock.h"

#include <errno.h>
#include <string.h>

void svc_post_recv(struct svc_conn *cn, uint32_t i)
{
	struct rr_sge sge = {.addr = (uintptr_t)rr_bufpool_at(&cn->recvbufs, i),
			     .length = cn->recvbufs.size,
			     .lkey = rr_mr_lkey(cn->recvbufs.mr)};
	struct rr_recv_wr wr = {.sg_list = &sge, .num_sge = 1};

	if (cn->dead)
		return;
	wr.wr_id = rr_wrid(cn->gen, RR_WRK_RECV, i, ++cn->reqs[i].recv_seq);
	if (rr_qp_post_recv(cn->qp, &wr, NULL)) {
		cn->dead = true;
		return;
	}
	cn->reqs[i].recv_out = true;
	cn->recv_posted++;
}

/* ------------------------------------------------------ bulk buffers */

int svc_bulk_get(struct rr_svc *s)
{
	for (uint32_t i = 0; i < s->bulk.count; i++) {
		if (s->bulk_free & (1u << i)) {
			s->bulk_free &= ~(1u << i);
			return (int)i;
		}
	}
	return -1;
}

void svc_bulk_put(struct rr_svc *s, int i)
{
	if (i >= 0)
		s->bulk_free |= 1u << i;
}

uint8_t *svc_bulk_at(struct rr_svc *s, int i)
{
	return rr_bufpool_at(&s->bulk, (uint32_t)i);
}

static bool wants_res_bulk(const struct svc_req *r)
{
	return r->h.nwrite || r->h.has_reply;
}

/* Takes the bulk buffers r needs, all or none. */
static bool bulk_take(struct rr_svc *s, struct svc_req *r, bool for_args)
{
	bool res = wants_res_bulk(r) && r->res_bulk < 0;
	int a = -1, b = -1;

	if (for_args && (a = svc_bulk_get(s)) < 0)
		return false;
	if (res && (b = svc_bulk_get(s)) < 0) {
		svc_bulk_put(s, a);
		return false;
	}
	if (for_args)
		r->bulk = a;
	if (res)
		r->res_bulk = b;
	return true;
}

/* ---------------------------------------------------------- waiting */

static void park(struct rr_svc *s, struct svc_req *r)
{
	r->qnext = NULL;
	if (s->wait_tail)
		s->wait_tail->qnext = r;
	else
		s->wait_head = r;
	s->wait_tail = r;
}

/* The request is finished with: its buffers go back, its receive too. */
void svc_finish(struct svc_conn *cn, struct svc_req *r)
{
	svc_bulk_put(cn->s, r->bulk);
	svc_bulk_put(cn->s, r->res_bulk);
	r->bulk = r->res_bulk = -1;
	r->state = SREQ_FREE;
	cn->calls_in -= cn->calls_in > 0;
	svc_post_recv(cn, r->recv_idx);
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

	rr_drc_key_of(&k, (const struct sockaddr *)&r->conn->peer, &r->rq.call,
		      r->rq.args, r->rq.args_len, r->rq.arg_bulk,
		      r->rq.arg_bulk_len);
	v = rr_drc_lookup(&s->drc, &k, &r->rh, r->rq.res, &r->rq.res_len);
	if (v == RR_DRC_REPLAY) {
		r->rq.res_bulk = NULL;
		r->rq.res_bulk_len = 0;
		return;
	}
	if (v == RR_DRC_BUSY) {
		r->drop = true;
		return;
	}
	rr_dispatch(&s->progs, &r->rq, &r->rh);
	rr_drc_done(&s->drc, &k, &r->rh, r->rq.res, r->rq.res_len,
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
		r->rq.bulk_buf = svc_bulk_at(s, r->res_bulk);
	else
		r->rq.bulk_buf = sc->bulk;
	r->rq.bulk_cap = s->o.max_bulk;
	r->drop = false;
}

void svc_run_handler(struct rr_svc *s, struct svc_req *r,
		     const struct svc_scratch *sc)
{
	handler_bufs(s, r, sc);
	if (!rr_progtab_drc(&s->progs, &r->rq.call)) {
		rr_dispatch(&s->progs, &r->rq, &r->rh);
		return;
	}
	run_cached(s, r);
}

/* Reserves the reply's resources; false: r must wait. */
static bool reserve_reply(struct svc_conn *cn, struct svc_req *r)
{
	if (!svc_sq_room(cn, SVC_REPLY_WRS) || !bulk_take(cn->s, r, false))
		return false;
	cn->sq_resv += SVC_REPLY_WRS;
	cn->sctx_resv++;
	return true;
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
	if (!rr_progtab_nowait(&s->progs, &r->rq.call))
		return false;
	handler_bufs(s, r, &s->scratch);
	if (!rr_dispatch_nowait(&s->progs, &r->rq, &r->rh)) {
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

	r->state = SREQ_RUNNING;
	if (s->pool.n && !try_inline(s, r)) {
		cn->running++;
		svc_pool_submit(s, r);
		return;
	}
	if (!s->pool.n)
		svc_run_handler(s, r, &s->scratch);
	svc_reply(cn, r);
	svc_finish(cn, r);
}

/* ----------------------------------------------------------- parsing */

/* The read chunk's length: its segments land back to back (pull). */
static uint32_t read_total(const struct rr_rdma_hdr *h)
{
	uint32_t total = 0;

	for (uint32_t i = 0; i < h->nread; i++)
		total += h->reads[i].seg.length;
	return total;
}

/*
 * The RPC message is complete (inline, or pulled). Splits it into call
 * header, inline arguments and the DDP-eligible item.
 */
static int parse_call(struct svc_conn *cn, struct svc_req *r)
{
	const uint8_t *msg =
		rr_bufpool_at(&cn->recvbufs, r->recv_idx) + r->hlen;
	size_t len = r->len - (size_t)r->hlen;

	r->rq.arg_bulk = NULL;
	r->rq.arg_bulk_len = 0;
	if (r->h.proc == RR_RDMA_NOMSG) {
		msg = svc_bulk_at(cn->s, r->bulk);
		len = read_total(&r->h);
	} else if (r->h.nread) {
		r->rq.arg_bulk = svc_bulk_at(cn->s, r->bulk);
		r->rq.arg_bulk_len = read_total(&r->h);
		/* The DDP-eligible item is the last one: nothing follows. */
		if (r->h.reads[0].position != len)
			return -EBADMSG;
	}
	return rr_svc_req_parse(&r->rq, msg, len);
}

/* Checks the chunk lists of a call before anything is posted. */
static int check_chunks(struct svc_conn *cn, struct svc_req *r)
{
	const struct rr_rdma_hdr *h = &r->h;
	uint64_t total = 0;

	if (h->proc == RR_RDMA_NOMSG && (h->nread == 0 || h->reads[0].position))
		return -EBADMSG;
	for (uint32_t i = 0; i < h->nread; i++) {
		/* One read chunk: every segment at the same position. */
		if (h->reads[i].position != h->reads[0].position ||
		    (h->reads[i].position & 3))
			return -EBADMSG;
		total += h->reads[i].seg.length;
	}
	if (total > cn->s->bulk.size)
		return -E2BIG;
	if (h->nwrite > 1 || h->nwrite + h->has_reply > 2)
		return -E2BIG;
	if (h->proc != RR_RDMA_MSG && h->proc != RR_RDMA_NOMSG)
		return -EBADMSG;
	return 0;
}

/*
 * Posts the RDMA Reads that pull the read chunk into a bulk buffer, one
 * per segment, back to back: a client whose registrations are small
 * (the kernel's FRWR over rxe: 128 KiB) sends a 1 MiB WRITE in eight.
 * One chain, one post (one doorbell). Only the last is signaled: its
 * completion covers the chain.
 */
static int pull(struct svc_conn *cn, struct svc_req *r)
{
	struct rr_svc *s = cn->s;
	uint32_t n = r->h.nread, off = 0;
	struct rr_sge sge[RR_RDMA_MAX_READ_SEGS];
	struct rr_send_wr wr[RR_RDMA_MAX_READ_SEGS], *bad = NULL;
	uint8_t *dst;
	int rc;

	if (!svc_sq_room(cn, n) || !bulk_take(s, r, true))
		return -EAGAIN;
	dst = svc_bulk_at(s, r->bulk);
	r->seq++;
	for (uint32_t i = 0; i < n; i++) {
		const struct rr_rdma_seg *seg = &r->h.reads[i].seg;

		sge[i] = (struct rr_sge){(uintptr_t)(dst + off), seg->length,
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
		off += seg->length;
	}
	svc_flush(cn); /* ORDER: replies accounted before these go first */
	rc = cn->dead ? -ENOTCONN : rr_qp_post_send(cn->qp, wr, &bad);
	/* what did go out is accounted, so the drain balances */
	cn->reads_out += rc ? (uint32_t)(bad ? bad - wr : 0) : n;
	if (rc) {
		cn->dead = true; /* conn_close gives r->bulk back */
		return -ENOTCONN;
	}
	r->read_mark = cn->sq_posted;
	r->state = SREQ_PULLING;
	r->pull_ms = rr_coarse_ms();
	s->st.read_chunks++;
	return 0;
}

/* Moves r as far as it can go; parks it when a resource is missing. */
static void advance(struct svc_conn *cn, struct svc_req *r)
{
	if (r->state == SREQ_RECEIVED && r->h.nread) {
		/* On success svc_read_done resumes it. */
		if (pull(cn, r) == -EAGAIN)
			park(cn->s, r);
		return;
	}
	if (r->state != SREQ_READY && parse_call(cn, r)) {
		cn->s->st.bad_headers++;
		svc_send_error(cn, r->h.xid, RR_RDMA_VERSION, RR_ERR_CHUNK);
		svc_finish(cn, r);
		return;
	}
	r->state = SREQ_READY;
	if (!reserve_reply(cn, r)) {
		park(cn->s, r);
		return;
	}
	run(cn, r);
}

void svc_read_done(struct svc_conn *cn, struct svc_req *r)
{
	svc_sq_retire(cn, r->read_mark);
	cn->reads_out -= r->h.nread;
	if (parse_call(cn, r)) {
		cn->s->st.bad_headers++;
		svc_send_error(cn, r->h.xid, RR_RDMA_VERSION, RR_ERR_CHUNK);
		svc_finish(cn, r);
		return;
	}
	r->state = SREQ_READY;
	advance(cn, r);
}

/* Parked calls, oldest first, while they make progress. */
void svc_resume(struct rr_svc *s)
{
	while (s->wait_head) {
		struct svc_req *r = s->wait_head;
		struct svc_conn *cn = r->conn;

		s->wait_head = r->qnext;
		if (!s->wait_head)
			s->wait_tail = NULL;
		if (cn->dead)
			continue;
		advance(cn, r);
		if (s->wait_tail == r) {
			/* Still blocked: back to the head, order kept. */
			struct svc_req *q = s->wait_head;

			if (q == r) {
				s->wait_head = s->wait_tail = NULL;
			} else {
				while (q->qnext != r)
					q = q->qnext;
				q->qnext = NULL;
				s->wait_tail = q;
			}
			r->qnext = s->wait_head;
			s->wait_head = r;
			if (!s->wait_tail)
				s->wait_tail = r;
			return;
		}
	}
}

void svc_recv(struct svc_conn *cn, uint32_t i, uint32_t len)
{
	struct svc_req *r = &cn->reqs[i];
	const uint8_t *buf = rr_bufpool_at(&cn->recvbufs, i);
	int rc;

	r->recv_idx = i;
	r->len = len;
	r->bulk = r->res_bulk = -1;
	r->hlen = rr_rdma_hdr_decode(buf, len, &r->h);
	if (r->hlen == -EPROTONOSUPPORT) {
		cn->s->st.bad_headers++;
		svc_send_error(cn, r->h.xid, r->h.vers, RR_ERR_VERS);
		svc_post_recv(cn, i);
		return;
	}
	rc = r->hlen < 0 ? r->hlen : check_chunks(cn, r);
	if (rc) {
		cn->s->st.bad_headers++;
		if (len >= RR_RDMA_HDR_MIN && r->h.proc != RR_RDMA_ERROR)
			svc_send_error(cn, r->h.xid, RR_RDMA_VERSION,
				       RR_ERR_CHUNK);
		else if (r->h.proc == RR_RDMA_ERROR)
			cn->s->st.rdma_errors_received++;
		svc_post_recv(cn, i);
		return;
	}
	r->state = SREQ_RECEIVED;
	/* Finished calls were answered before the client could use them. */
	if (++cn->calls_in > cn->s->o.credits)
		cn->s->st.credit_overruns++;
	if (cn->s->wait_head)
		park(cn->s, r); /* FIFO: nobody overtakes a parked call */
	else
		advance(cn, r);
}
