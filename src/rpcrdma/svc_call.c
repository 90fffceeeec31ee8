/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Server: one call from its receive to its reply (RFC 8166 sections 3.5,
 * 4 and 5).
 *
 * Everything in the transport header comes from the peer: chunk lists are
 * checked (one read chunk, at an aligned position inside the message or at
 * zero; total lengths within max_bulk; at most one write chunk used) before
 * any RDMA Read is posted. Bad headers are answered with RDMA_ERROR
 * (ERR_VERS with the range we speak, ERR_CHUNK otherwise) and the receive
 * is reposted; the connection carries on.
 *
 * The reply: a DDP-eligible result goes by RDMA Write into the client's
 * write chunk; the reply itself goes inline when it fits the client's
 * inline size, else by RDMA Write into its reply chunk (RDMA_NOMSG). It is
 * sent With Invalidate when the client allowed it and the call exposed
 * exactly one handle, which then needs no LOCAL_INV on the client.
 */
#include "rpcrdma/svc.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>

#define REPLY_HDR_LEN 24 /* xid, REPLY, ACCEPTED, AUTH_NONE verf, stat */

void svc_post_recv(struct svc_conn *cn, uint32_t i)
{
	struct rr_sge sge = {.addr = (uintptr_t)rr_bufpool_at(&cn->recvbufs, i),
			     .length = cn->recvbufs.size,
			     .lkey = rr_mr_lkey(cn->recvbufs.mr)};
	struct rr_recv_wr wr = {.sg_list = &sge, .num_sge = 1};

	wr.wr_id = rr_wrid(cn->gen, RR_WRK_RECV, i, ++cn->reqs[i].recv_seq);
	cn->reqs[i].recv_out = true;
	if (!cn->dead && rr_qp_post_recv(cn->qp, &wr, NULL))
		cn->dead = true;
}

void svc_sq_retire(struct svc_conn *cn, uint64_t mark)
{
	struct rr_svc *s = cn->s;

	if (mark > cn->sq_retired)
		cn->sq_retired = mark;
	while (cn->sctx_head != cn->sctx_tail) {
		struct svc_sendctx *sc = &cn->sctx[cn->sctx_head % cn->nsctx];

		if (sc->sq_mark > cn->sq_retired)
			break;
		if (sc->bulk >= 0)
			s->bulk_free |= 1u << sc->bulk;
		sc->bulk = -1;
		sc->busy = false;
		cn->sctx_head++;
	}
}

static int bulk_get(struct rr_svc *s)
{
	for (uint32_t i = 0; i < s->bulk.count; i++) {
		if (s->bulk_free & (1u << i)) {
			s->bulk_free &= ~(1u << i);
			return (int)i;
		}
	}
	return -1;
}

static void bulk_put(struct rr_svc *s, int i)
{
	if (i >= 0)
		s->bulk_free |= 1u << i;
}

static uint8_t *bulk_at(struct rr_svc *s, int i)
{
	return rr_bufpool_at(&s->bulk, (uint32_t)i);
}

static bool sq_room(struct svc_conn *cn, uint32_t need)
{
	return cn->sq_posted - cn->sq_retired + need <= cn->sq_depth &&
	       cn->sctx_tail - cn->sctx_head < cn->nsctx;
}

static void park(struct rr_svc *s, struct rr_svc_req *r)
{
	r->qnext = NULL;
	if (s->wait_tail)
		s->wait_tail->qnext = r;
	else
		s->wait_head = r;
	s->wait_tail = r;
}

static void unpark_tail(struct rr_svc *s, struct rr_svc_req *r)
{
	struct rr_svc_req *q = s->wait_head;

	if (q == r) {
		s->wait_head = s->wait_tail = NULL;
		return;
	}
	while (q->qnext != r)
		q = q->qnext;
	q->qnext = NULL;
	s->wait_tail = q;
}

static void req_done(struct svc_conn *cn, struct rr_svc_req *r)
{
	if (r->state == SREQ_PULLING || r->bulk >= 0)
		bulk_put(cn->s, r->bulk);
	r->bulk = -1;
	r->state = SREQ_FREE;
	svc_post_recv(cn, r->recv_idx);
}

/* ----------------------------------------------------------- sending */

/*
 * Posts a chain ending in a Send from send context sc. bulk (or -1) is a
 * bulk buffer the chain reads from; it is released with the Send.
 */
static int post_reply(struct svc_conn *cn, struct rr_send_wr *first,
		      struct rr_send_wr *send, uint32_t nwr, uint32_t sc_idx,
		      int bulk)
{
	struct svc_sendctx *sc = &cn->sctx[sc_idx];
	int rc;

	sc->seq++;
	sc->busy = true;
	sc->cqe_seen = false;
	sc->bulk = bulk;
	send->wr_id = rr_wrid(cn->gen, RR_WRK_SEND, sc_idx, sc->seq);
	if (bulk >= 0 || ++cn->unsignaled >= SVC_SIGNAL_EVERY) {
		send->flags |= RR_SEND_SIGNALED;
		cn->unsignaled = 0;
	}
	rc = rr_qp_post_send(cn->qp, first, NULL);
	if (rc) {
		sc->busy = false;
		cn->dead = true;
		return rc;
	}
	cn->sq_posted += nwr;
	sc->sq_mark = cn->sq_posted;
	cn->sctx_tail++;
	return 0;
}

static uint32_t next_sctx(struct svc_conn *cn)
{
	return cn->sctx_tail % cn->nsctx;
}

/* RDMA_ERROR for xid: ERR_VERS names the one version we speak. */
static void send_error(struct svc_conn *cn, uint32_t xid, uint32_t vers,
		       uint32_t err)
{
	uint32_t sc = next_sctx(cn);
	uint8_t *buf = rr_bufpool_at(&cn->sendbufs, sc);
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

	if (!sq_room(cn, 1))
		return; /* the peer overran us; it gets no answer */
	n = rr_rdma_hdr_encode(&h, buf, cn->sendbufs.size);
	if (n < 0)
		return;
	sge.length = (uint32_t)n;
	if (!post_reply(cn, &wr, &wr, 1, sc, -1))
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
	struct rr_send_wr wr[2 * RR_RDMA_MAX_CHUNK_SEGS + 1];
	struct rr_sge sge[2 * RR_RDMA_MAX_CHUNK_SEGS + 1];
	uint32_t nwr;
	struct rr_rdma_hdr h;
	int bulk;
};

static void chain_add(struct reply_plan *p, int n)
{
	for (int i = 0; i < n; i++) {
		if (p->nwr)
			p->wr[p->nwr - 1].next = &p->wr[p->nwr];
		p->nwr++;
	}
}

/* The versions of prog this server serves, for PROG_MISMATCH. */
static void vers_range(const struct rr_svc *s, uint32_t prog, uint32_t *low,
		       uint32_t *high)
{
	*low = UINT32_MAX;
	*high = 0;
	for (uint32_t i = 0; i < s->nprogs; i++) {
		const struct rr_svc_prog *p = &s->progs[i].p;

		if (p->prog != prog)
			continue;
		*low = p->vers < *low ? p->vers : *low;
		*high = p->vers > *high ? p->vers : *high;
	}
}

/* Encodes the RPC reply (header + results) at dst; returns its length. */
static size_t rpc_reply(struct rr_svc_req *r, uint8_t *dst, uint32_t accept,
			bool inline_bulk)
{
	struct rr_reply_hdr rh = {
		.xid = r->call.xid, .stat = RR_MSG_ACCEPTED, .accept = accept};
	struct rr_svc *s = r->conn->s;
	int n;

	if (accept == RR_PROG_MISMATCH)
		vers_range(s, r->call.prog, &rh.mismatch_low,
			   &rh.mismatch_high);
	n = rr_reply_hdr_encode(&rh, dst, REPLY_HDR_LEN + 8);
	if (n < 0)
		return 0;
	if (accept != RR_SUCCESS)
		return (size_t)n;
	memcpy(dst + n, s->res_scratch, r->res_len);
	n += (int)r->res_len;
	if (inline_bulk && r->res_bulk_len) {
		memcpy(dst + n, r->res_bulk, r->res_bulk_len);
		memset(dst + n + r->res_bulk_len, 0,
		       rr_xdr_pad(r->res_bulk_len));
		n += (int)(r->res_bulk_len + rr_xdr_pad(r->res_bulk_len));
	}
	return (size_t)n;
}

/*
 * Builds and posts the reply for r. Returns 0, or -EAGAIN when a resource
 * is missing (the caller parks r and retries later).
 */
static int send_reply(struct svc_conn *cn, struct rr_svc_req *r,
		      uint32_t accept, struct reply_plan *p)
{
	struct rr_svc *s = cn->s;
	const struct rr_rdma_hdr *ch = &r->h;
	uint32_t sc = next_sctx(cn), inv;
	uint8_t *sbuf = rr_bufpool_at(&cn->sendbufs, sc);
	bool use_write = accept == RR_SUCCESS && r->res_bulk_len && ch->nwrite;
	size_t hmax = RR_RDMA_HDR_EMPTY + 16 * 2 * (RR_RDMA_MAX_CHUNK_SEGS + 1);
	size_t rlen_max = REPLY_HDR_LEN + 8 + r->res_len +
			  (use_write ? 0 : r->res_bulk_len + 3);
	int n;

	memset(&p->h, 0, offsetof(struct rr_rdma_hdr, reads));
	p->nwr = 0;
	p->bulk = -1;
	p->h = (struct rr_rdma_hdr){.xid = ch->xid,
				    .vers = RR_RDMA_VERSION,
				    .credits = s->o.credits,
				    .proc = RR_RDMA_MSG};
	if (!sq_room(cn, 2 * RR_RDMA_MAX_CHUNK_SEGS + 1))
		return -EAGAIN;
	if (use_write || hmax + rlen_max > cn->inline_send) {
		p->bulk = bulk_get(s);
		if (p->bulk < 0)
			return -EAGAIN;
	}
	if (use_write) {
		uint8_t *b = bulk_at(s, p->bulk);

		if (chunk_len(&ch->writes[0]) < r->res_bulk_len)
			return -EMSGSIZE; /* ERR_CHUNK, nothing written */
		memcpy(b, r->res_bulk, r->res_bulk_len);
		n = chunk_writes(cn, &ch->writes[0], b, r->res_bulk_len,
				 rr_mr_lkey(s->bulk.mr), p->wr, p->sge,
				 &p->h.writes[0]);
		if (n < 0)
			return n;
		p->h.nwrite = 1;
		chain_add(p, n);
		s->st.write_chunks++;
	}
	if (hmax + rlen_max <= cn->inline_send) {
		n = rr_rdma_hdr_encode(&p->h, sbuf, cn->sendbufs.size);
		if (n < 0)
			return n;
		n += (int)rpc_reply(r, sbuf + n, accept, !use_write);
	} else {
		/* Too big to send inline: the reply chunk, by RDMA Write. */
		uint8_t *b =
			bulk_at(s, p->bulk) + (use_write ? r->res_bulk_len : 0);
		size_t len;
		int k;

		if (!ch->has_reply)
			return -EMSGSIZE;
		len = rpc_reply(r, b, accept, !use_write);
		if (len > chunk_len(&ch->reply) ||
		    (use_write ? r->res_bulk_len : 0) + len > s->bulk.size)
			return -EMSGSIZE;
		k = chunk_writes(cn, &ch->reply, b, len, rr_mr_lkey(s->bulk.mr),
				 p->wr + p->nwr, p->sge + p->nwr, &p->h.reply);
		if (k < 0)
			return k;
		p->h.has_reply = true;
		p->h.proc = RR_RDMA_NOMSG;
		chain_add(p, k);
		s->st.reply_chunks++;
		n = rr_rdma_hdr_encode(&p->h, sbuf, cn->sendbufs.size);
		if (n < 0)
			return n;
	}
	p->sge[p->nwr] = (struct rr_sge){(uintptr_t)sbuf, (uint32_t)n,
					 rr_mr_lkey(cn->sendbufs.mr)};
	p->wr[p->nwr] = (struct rr_send_wr){
		.opcode = RR_WR_SEND, .sg_list = &p->sge[p->nwr], .num_sge = 1};
	inv = cn->peer_inv_ok ? single_handle(ch) : 0;
	if (inv) {
		p->wr[p->nwr].opcode = RR_WR_SEND_WITH_INV;
		p->wr[p->nwr].invalidate_rkey = inv;
		s->st.send_with_inv++;
	}
	chain_add(p, 1);
	n = post_reply(cn, &p->wr[0], &p->wr[p->nwr - 1], p->nwr, sc, p->bulk);
	if (n)
		bulk_put(s, p->bulk);
	return n;
}

/* ---------------------------------------------------------- dispatch */

static const struct rr_svc_prog *find_prog(struct rr_svc *s, uint32_t prog,
					   uint32_t vers, bool *prog_known)
{
	*prog_known = false;
	for (uint32_t i = 0; i < s->nprogs; i++) {
		if (s->progs[i].p.prog != prog)
			continue;
		*prog_known = true;
		if (s->progs[i].p.vers == vers)
			return &s->progs[i].p;
	}
	return NULL;
}

static uint32_t decode_cred(struct rr_svc_req *r)
{
	struct rr_auth_sys a;

	r->has_cred = false;
	if (r->call.cred.flavor == RR_AUTH_NONE)
		return RR_AUTH_OK;
	if (r->call.cred.flavor != RR_AUTH_SYS)
		return RR_AUTH_REJECTEDCRED;
	if (rr_auth_sys_decode(r->call.cred.body, r->call.cred.len, &a) < 0)
		return RR_AUTH_BADCRED;
	r->cred =
		(struct rr_cred){.uid = a.uid, .gid = a.gid, .ngids = a.ngids};
	memcpy(r->cred.gids, a.gids, a.ngids * sizeof(a.gids[0]));
	r->has_cred = true;
	return RR_AUTH_OK;
}

/* Runs the procedure; returns the accept_stat for the reply. */
static uint32_t run_proc(struct rr_svc *s, struct rr_svc_req *r)
{
	const struct rr_svc_prog *p;
	bool known;

	p = find_prog(s, r->call.prog, r->call.vers, &known);
	if (!p)
		return known ? RR_PROG_MISMATCH : RR_PROG_UNAVAIL;
	if (r->call.proc >= p->nprocs || !p->procs[r->call.proc])
		return RR_PROC_UNAVAIL;
	r->res_len = 0;
	r->res_bulk = NULL;
	r->res_bulk_len = 0;
	return p->procs[r->call.proc](r, p->arg);
}

/* A denied reply (RPC_MISMATCH or AUTH_ERROR) is small: always inline. */
static void send_denied(struct svc_conn *cn, struct rr_svc_req *r,
			uint32_t reject, uint32_t auth)
{
	uint32_t sc = next_sctx(cn);
	uint8_t *buf = rr_bufpool_at(&cn->sendbufs, sc);
	struct rr_rdma_hdr h = {.xid = r->h.xid,
				.vers = RR_RDMA_VERSION,
				.credits = cn->s->o.credits,
				.proc = RR_RDMA_MSG};
	struct rr_reply_hdr rh = {.xid = r->call.xid,
				  .stat = RR_MSG_DENIED,
				  .reject = reject,
				  .auth_error = auth,
				  .mismatch_low = RR_RPC_VERSION,
				  .mismatch_high = RR_RPC_VERSION};
	struct rr_sge sge = {(uintptr_t)buf, 0, rr_mr_lkey(cn->sendbufs.mr)};
	struct rr_send_wr wr = {
		.opcode = RR_WR_SEND, .sg_list = &sge, .num_sge = 1};
	int n = rr_rdma_hdr_encode(&h, buf, cn->sendbufs.size), m;

	if (n < 0 || !sq_room(cn, 1))
		return;
	m = rr_reply_hdr_encode(&rh, buf + n, cn->sendbufs.size - (size_t)n);
	if (m < 0)
		return;
	sge.length = (uint32_t)(n + m);
	post_reply(cn, &wr, &wr, 1, sc, -1);
}

/* Decodes the RPC call of a READY request, runs it, replies. */
static int serve(struct svc_conn *cn, struct rr_svc_req *r)
{
	struct rr_svc *s = cn->s;
	struct reply_plan p;
	uint32_t accept, auth;
	int rc;

	if (r->call.rpcvers != RR_RPC_VERSION) {
		send_denied(cn, r, RR_RPC_MISMATCH, 0);
		return 0;
	}
	auth = decode_cred(r);
	if (auth != RR_AUTH_OK) {
		send_denied(cn, r, RR_AUTH_ERROR, auth);
		return 0;
	}
	accept = run_proc(s, r);
	rc = send_reply(cn, r, accept, &p);
	if (rc == -EAGAIN)
		return rc;
	if (rc == -EMSGSIZE)
		send_error(cn, r->h.xid, RR_RDMA_VERSION, RR_ERR_CHUNK);
	s->st.calls++;
	return 0;
}

/*
 * The RPC message is complete (inline, or pulled). Splits it into call
 * header, inline arguments and the DDP-eligible item.
 */
static int parse_call(struct svc_conn *cn, struct rr_svc_req *r)
{
	const uint8_t *msg =
		rr_bufpool_at(&cn->recvbufs, r->recv_idx) + r->hlen;
	size_t len = r->len - (size_t)r->hlen;
	int n;

	r->arg_bulk = NULL;
	r->arg_bulk_len = 0;
	if (r->h.proc == RR_RDMA_NOMSG) {
		msg = bulk_at(cn->s, r->bulk);
		len = r->h.reads[0].seg.length;
	} else if (r->h.nread) {
		r->arg_bulk = bulk_at(cn->s, r->bulk);
		r->arg_bulk_len = r->h.reads[0].seg.length;
		/* The DDP-eligible item is the last one: nothing follows. */
		if (r->h.reads[0].position != len)
			return -EBADMSG;
	}
	n = rr_call_hdr_decode(msg, len, &r->call);
	if (n < 0)
		return n;
	r->args = msg + n;
	r->args_len = len - (size_t)n;
	return 0;
}

/* Checks the chunk lists of a call before anything is posted. */
static int check_chunks(struct svc_conn *cn, struct rr_svc_req *r)
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
	if (total > cn->s->bulk.size || (h->nread > 1))
		return -E2BIG; /* one segment per chunk is what we pull */
	if (h->nwrite > 1 || h->nwrite + h->has_reply > 2)
		return -E2BIG;
	if (h->proc != RR_RDMA_MSG && h->proc != RR_RDMA_NOMSG)
		return -EBADMSG;
	return 0;
}

/* Posts the RDMA Read that pulls the read chunk into a bulk buffer. */
static int pull(struct svc_conn *cn, struct rr_svc_req *r)
{
	struct rr_svc *s = cn->s;
	const struct rr_rdma_seg *seg = &r->h.reads[0].seg;
	struct rr_sge sge;
	struct rr_send_wr wr = {
		.opcode = RR_WR_RDMA_READ,
		.flags = RR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rdma = {.remote_addr = seg->offset, .rkey = seg->handle}};
	int rc;

	if (!sq_room(cn, 1))
		return -EAGAIN;
	r->bulk = bulk_get(s);
	if (r->bulk < 0)
		return -EAGAIN;
	sge = (struct rr_sge){(uintptr_t)bulk_at(s, r->bulk), seg->length,
			      rr_mr_lkey(s->bulk.mr)};
	r->seq++;
	wr.wr_id = rr_wrid(cn->gen, RR_WRK_READ, r->idx, r->seq);
	rc = rr_qp_post_send(cn->qp, &wr, NULL);
	if (rc) {
		bulk_put(s, r->bulk);
		r->bulk = -1;
		cn->dead = true;
		return rc;
	}
	r->read_mark = ++cn->sq_posted;
	r->state = SREQ_PULLING;
	s->st.read_chunks++;
	return 0;
}

/* Moves r as far as it can go; parks it when a resource is missing. */
static void advance(struct svc_conn *cn, struct rr_svc_req *r)
{
	int rc;

	if (r->state == SREQ_RECEIVED && r->h.nread) {
		/* On success svc_read_done resumes it. */
		rc = pull(cn, r);
		if (rc == -EAGAIN)
			park(cn->s, r);
		return;
	}
	if (parse_call(cn, r)) {
		cn->s->st.bad_headers++;
		send_error(cn, r->h.xid, RR_RDMA_VERSION, RR_ERR_CHUNK);
		req_done(cn, r);
		return;
	}
	r->state = SREQ_READY;
	if (serve(cn, r) == -EAGAIN) {
		park(cn->s, r);
		return;
	}
	req_done(cn, r);
}

void svc_read_done(struct svc_conn *cn, struct rr_svc_req *r)
{
	svc_sq_retire(cn, r->read_mark);
	r->state = SREQ_READY;
	advance(cn, r);
}

/* Parked calls, oldest first, while they make progress. */
void svc_resume(struct rr_svc *s)
{
	while (s->wait_head) {
		struct rr_svc_req *r = s->wait_head;
		struct svc_conn *cn = r->conn;

		s->wait_head = r->qnext;
		if (!s->wait_head)
			s->wait_tail = NULL;
		if (cn->dead)
			continue;
		advance(cn, r);
		if (s->wait_tail == r) {
			/* Still blocked: back to the head, order kept. */
			unpark_tail(s, r);
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
	struct rr_svc_req *r = &cn->reqs[i];
	const uint8_t *buf = rr_bufpool_at(&cn->recvbufs, i);
	int rc;

	r->recv_idx = i;
	r->len = len;
	r->bulk = -1;
	r->hlen = rr_rdma_hdr_decode(buf, len, &r->h);
	if (r->hlen == -EPROTONOSUPPORT) {
		cn->s->st.bad_headers++;
		send_error(cn, r->h.xid, r->h.vers, RR_ERR_VERS);
		svc_post_recv(cn, i);
		return;
	}
	rc = r->hlen < 0 ? r->hlen : check_chunks(cn, r);
	if (rc) {
		cn->s->st.bad_headers++;
		if (len >= RR_RDMA_HDR_MIN && r->h.proc != RR_RDMA_ERROR)
			send_error(cn, r->h.xid, RR_RDMA_VERSION, RR_ERR_CHUNK);
		else if (r->h.proc == RR_RDMA_ERROR)
			cn->s->st.rdma_errors_received++;
		svc_post_recv(cn, i);
		return;
	}
	r->state = SREQ_RECEIVED;
	if (cn->s->wait_head)
		park(cn->s, r); /* FIFO: nobody overtakes a parked call */
	else
		advance(cn, r);
}

/* ------------------------------------------------------ handler side */

uint32_t rr_svc_req_proc(const struct rr_svc_req *r)
{
	return r->call.proc;
}

uint32_t rr_svc_req_vers(const struct rr_svc_req *r)
{
	return r->call.vers;
}

const void *rr_svc_args(const struct rr_svc_req *r, size_t *len)
{
	*len = r->args_len;
	return r->args;
}

const void *rr_svc_arg_bulk(const struct rr_svc_req *r, size_t *len)
{
	*len = r->arg_bulk_len;
	return r->arg_bulk;
}

const struct rr_cred *rr_svc_cred(const struct rr_svc_req *r)
{
	return r->has_cred ? &r->cred : NULL;
}

void *rr_svc_res_buf(struct rr_svc_req *r, size_t *cap)
{
	*cap = SVC_RES_SCRATCH;
	return r->conn->s->res_scratch;
}

int rr_svc_set_res(struct rr_svc_req *r, size_t res_len, const void *bulk,
		   size_t bulk_len)
{
	if (res_len > SVC_RES_SCRATCH || bulk_len > r->conn->s->o.max_bulk)
		return -EMSGSIZE;
	r->res_len = res_len;
	r->res_bulk = bulk;
	r->res_bulk_len = bulk_len;
	return 0;
}
