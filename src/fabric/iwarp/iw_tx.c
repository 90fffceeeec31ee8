/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The transmit engine. Caller holds qp->tx_mu throughout.
 *
 * Work requests are cut into FPDUs (RFC 5044 section 4: no larger than the
 * TCP MSS) and gathered into a batch written with one sendmsg: headers and
 * trailers live in the batch, payload iovecs point straight at registered
 * memory, so nothing is copied on our side. Messages are never interleaved
 * at FPDU level: a Read Response (owed to the peer, RFC 5040 section 5.2:
 * answered in order) goes out between whole outbound messages.
 *
 * Send and Write complete when their last byte is handed to TCP, as on siw;
 * so a Send's completion can race with the peer's answer to it. A Read
 * completes when its response has been placed (see iw_rx.c).
 */
#include "fabric/iwarp/iw.h"
#include "fabric/shm/shm.h"

#include "base/crc32c.h"
#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

static const uint8_t zeros[4];

static bool batch_room(const struct iw_tx *tx, uint32_t iovs)
{
	return tx->nfpdu < IW_TX_MAX_FPDU && tx->iovcnt + iovs <= IW_TX_MAX_IOV;
}

static void add_iov(struct iw_tx *tx, const void *p, size_t len)
{
	if (len)
		tx->iov[tx->iovcnt++] = (struct iovec){(void *)p, len};
}

/* Closes an FPDU: pad and CRC over everything from the header on. */
static void add_trailer(struct iw_qp *qp, uint32_t first_iov, uint16_t mpa_len)
{
	struct iw_tx *tx = &qp->tx;
	uint8_t *t = tx->trailers[tx->nfpdu];
	uint32_t pad = iw_fpdu_pad(mpa_len);

	memset(t, 0, 8);
	if (qp->crc) {
		uint32_t c = RR_CRC32C_INIT;

		for (uint32_t i = first_iov; i < tx->iovcnt; i++)
			c = rr__crc32c_update(c, tx->iov[i].iov_base,
					      tx->iov[i].iov_len);
		c = rr__crc32c_update(c, zeros, pad);
		rr__iw_crc_store(t + pad, rr_crc32c_final(c));
	}
	add_iov(tx, t, pad + IW_CRC_LEN);
	tx->nfpdu++;
}

/* Payload iovecs for [off, off+len) of an SGE list. */
static void add_sges(struct iw_tx *tx, const struct rr_sge *sge, uint32_t n,
		     uint64_t off, uint64_t len)
{
	for (uint32_t i = 0; i < n && len; i++) {
		uint64_t take;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		take = sge[i].length - off;
		if (take > len)
			take = len;
		add_iov(tx, (void *)(uintptr_t)(sge[i].addr + off), take);
		len -= take;
		off = 0;
	}
}

static uint8_t send_opcode(const struct iw_wqe *w)
{
	bool se = w->flags & RR_SEND_SOLICITED;

	if (w->opcode == RR_WR_SEND_WITH_INV)
		return se ? IW_OP_SEND_SE_INV : IW_OP_SEND_INV;
	return se ? IW_OP_SEND_SE : IW_OP_SEND;
}

/*
 * Adds FPDUs of a Send or Write from tx->msg_off on. Returns true once the
 * whole message is in the batch.
 */
static bool add_message(struct iw_qp *qp, const struct iw_wqe *w)
{
	struct iw_tx *tx = &qp->tx;
	bool tagged = w->opcode == RR_WR_RDMA_WRITE;

	do {
		uint64_t left = w->length - tx->msg_off;
		uint32_t len =
			left > qp->fpdu_max ? qp->fpdu_max : (uint32_t)left;
		uint32_t first = tx->iovcnt;
		struct iw_hdr h = {.tagged = tagged};
		size_t hl;

		if (!batch_room(tx, 2 + w->num_sge))
			return false;
		h.last = len == left;
		h.mpa_len = (uint16_t)(len - 2 +
				       (tagged ? IW_TAGGED_HDR_LEN
					       : IW_UNTAGGED_HDR_LEN));
		if (tagged) {
			h.opcode = IW_OP_WRITE;
			h.stag = w->rkey;
			h.to = w->remote_addr + tx->msg_off;
		} else {
			h.opcode = send_opcode(w);
			h.inval_stag = w->opcode == RR_WR_SEND_WITH_INV
					       ? w->inval_rkey
					       : 0;
			h.qn = IW_QN_SEND;
			h.msn = tx->msn[IW_QN_SEND];
			h.mo = (uint32_t)tx->msg_off;
		}
		hl = rr__iw_hdr_encode(&h, tx->hdrs[tx->nfpdu]);
		add_iov(tx, tx->hdrs[tx->nfpdu], hl);
		add_sges(tx, w->sge, w->num_sge, tx->msg_off, len);
		add_trailer(qp, first, h.mpa_len);
		tx->msg_off += len;
	} while (tx->msg_off < w->length);
	if (!tagged)
		tx->msn[IW_QN_SEND]++;
	return true;
}

/* One untagged FPDU whose payload sits right after its header. */
static void add_control(struct iw_qp *qp, uint8_t opcode, uint32_t qn,
			const uint8_t *payload, uint32_t plen)
{
	struct iw_tx *tx = &qp->tx;
	uint8_t *buf = tx->hdrs[tx->nfpdu];
	struct iw_hdr h = {
		.opcode = opcode, .last = true, .qn = qn, .msn = tx->msn[qn]++};
	uint32_t first = tx->iovcnt;
	size_t hl;

	h.mpa_len = (uint16_t)(IW_UNTAGGED_HDR_LEN - 2 + plen);
	hl = rr__iw_hdr_encode(&h, buf);
	memcpy(buf + hl, payload, plen);
	add_iov(tx, buf, hl + plen);
	add_trailer(qp, first, h.mpa_len);
}

/*
 * A Read Request; on shm also a Write the peer pulls (shm.h): the "sink"
 * then names our source and the "source" the peer's memory.
 */
static bool add_read_request(struct iw_qp *qp, const struct iw_wqe *w)
{
	uint32_t head = atomic_load(&qp->orq_head);
	uint32_t tail = atomic_load(&qp->orq_tail);
	bool pull = w->opcode == RR_WR_RDMA_WRITE;
	struct iw_read_req rr = {.sink_stag =
					 w->sge[0].lkey | (pull ? SHM_PULL : 0),
				 .sink_to = w->sge[0].addr,
				 .size = (uint32_t)w->length,
				 .src_stag = w->rkey,
				 .src_to = w->remote_addr};
	uint8_t p[IW_READ_REQ_LEN];
	struct iw_orq *o;

	if (tail - head >= qp->ord || !batch_room(&qp->tx, 2))
		return false; /* ORD reached: wait for a response */
	rr__iw_read_req_encode(&rr, p);
	add_control(qp, IW_OP_READ_REQ, IW_QN_READ_REQ, p, sizeof(p));
	o = &qp->orq[tail % IW_MAX_ORD];
	*o = (struct iw_orq){.wr_id = w->wr_id,
			     .signaled = w->flags & RR_SEND_SIGNALED,
			     .opcode = w->opcode,
			     .sink_stag = rr.sink_stag,
			     .sink_to = rr.sink_to,
			     .len = rr.size};
	qp->pulls_out += pull;
	/* ORDER: published before the request can be answered. */
	atomic_store_explicit(&qp->orq_tail, tail + 1, memory_order_release);
	return true;
}

/*
 * shm: the bytes of a Read (or pulled Write) are in place already; one
 * empty Read Response, whose offset is the end of the sink, says so.
 */
static void add_placed_response(struct iw_qp *qp, const struct iw_read_req *r)
{
	struct iw_tx *tx = &qp->tx;
	uint32_t first = tx->iovcnt;
	struct iw_hdr h = {.tagged = true,
			   .opcode = IW_OP_READ_RESP,
			   .last = true,
			   .stag = r->sink_stag,
			   .to = r->sink_to + r->size};

	h.mpa_len = (uint16_t)(IW_TAGGED_HDR_LEN - 2);
	add_iov(tx, tx->hdrs[tx->nfpdu],
		rr__iw_hdr_encode(&h, tx->hdrs[tx->nfpdu]));
	add_trailer(qp, first, h.mpa_len);
}

/* Read Response FPDUs for the oldest inbound Read, from ir->sent on. */
static bool add_read_response(struct iw_qp *qp, struct iw_irq *ir)
{
	struct iw_tx *tx = &qp->tx;
	uint64_t start = ir->sent;

	if (ir->placed) {
		if (!batch_room(tx, 2))
			return false;
		add_placed_response(qp, &ir->rr);
		return true;
	}
	while (batch_room(tx, 3)) {
		uint32_t left = ir->rr.size - ir->sent;
		uint32_t len = left > qp->fpdu_max ? qp->fpdu_max : left;
		uint32_t first = tx->iovcnt;
		struct iw_hdr h = {.tagged = true,
				   .opcode = IW_OP_READ_RESP,
				   .last = len == left,
				   .stag = ir->rr.sink_stag,
				   .to = ir->rr.sink_to + ir->sent};

		h.mpa_len = (uint16_t)(len - 2 + IW_TAGGED_HDR_LEN);
		add_iov(tx, tx->hdrs[tx->nfpdu],
			rr__iw_hdr_encode(&h, tx->hdrs[tx->nfpdu]));
		add_iov(tx, (void *)(uintptr_t)(ir->rr.src_to + ir->sent), len);
		add_trailer(qp, first, h.mpa_len);
		ir->sent += len;
		if (h.last)
			break;
	}
	tx->src_held = true;
	tx->src_stag = ir->rr.src_stag;
	tx->src_to = ir->rr.src_to + start;
	tx->src_len = ir->sent - start;
	return ir->sent == ir->rr.size;
}

static void done_add(struct iw_qp *qp, const struct iw_wqe *w,
		     enum rr_wc_status st)
{
	struct iw_tx *tx = &qp->tx;

	tx->done[tx->ndone] = *w;
	tx->done_st[tx->ndone++] = (uint8_t)st;
}

/* Local work requests take effect in SQ order, when they reach the head. */
static enum rr_wc_status run_local(struct iw_qp *qp, const struct iw_wqe *w)
{
	if (w->opcode == RR_WR_REG)
		return rr__iw_mw_bind(qp->dev, qp->base.pd, w);
	if (rr__iw_stag_invalidate(qp->dev, qp->base.pd, w->inval_rkey, false))
		return RR_WC_LOC_PROT_ERR;
	return RR_WC_SUCCESS;
}

/* Takes the next SQ entry into the batch; false when nothing more fits. */
static bool build_one_send(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;
	struct iw_wqe *w = &qp->sq[qp->sq_tail % qp->base.attr.sq_depth];
	enum rr_wc_status st = RR_WC_SUCCESS;

	if (tx->ndone == IW_TX_MAX_DONE)
		return false;
	if (qp->pulls_out && !rr__shm_pull_ok(qp, w) &&
	    w->opcode != RR_WR_RDMA_READ)
		return false; /* completions stay in order: shm.h */
	switch (w->opcode) {
	case RR_WR_REG:
	case RR_WR_LOCAL_INV:
		st = run_local(qp, w);
		break;
	case RR_WR_RDMA_WRITE:
		if (!rr__shm_pull_ok(qp, w))
			goto message;
		/* the peer pulls it, as it would answer a Read */
		__attribute__((fallthrough));
	case RR_WR_RDMA_READ:
		if (!add_read_request(qp, w))
			return false;
		qp->sq_tail++;
		return true; /* completes when the response arrives */
	default:
	message:
		if (!add_message(qp, w))
			return false;
		tx->msg_off = 0;
		break;
	}
	done_add(qp, w, st);
	qp->sq_tail++;
	return true;
}

static void build_batch(struct iw_qp *qp)
{
	uint32_t ih = atomic_load(&qp->irq_head);

	if (ih != atomic_load_explicit(&qp->irq_tail, memory_order_acquire)) {
		/* Owed responses go first; a batch holds one source region. */
		if (add_read_response(qp, &qp->irq[ih % IW_MAX_IRD]))
			atomic_store(&qp->irq_head, ih + 1);
		return;
	}
	while (qp->sq_tail != qp->sq_head && build_one_send(qp))
		;
}

static void batch_reset(struct iw_tx *tx)
{
	tx->iovcnt = tx->iov_first = tx->nfpdu = tx->ndone = 0;
	tx->src_held = false;
}

static void batch_finish(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;

	for (uint32_t i = 0; i < tx->ndone; i++)
		rr__iw_qp_complete_send(qp, &tx->done[i], tx->done_st[i], 0);
	__atomic_fetch_add(&qp->dev->ctr.fpdus_sent, tx->nfpdu,
			   __ATOMIC_RELAXED);
	batch_reset(tx);
}

/*
 * shm: into the ring. ring_tx_wait is raised before the ring can say
 * "blocked", so a reader that takes the peer's "space" bell sees it and
 * runs the transmit again (rr__iw_rx_run).
 */
static ssize_t ring_send(struct iw_qp *qp, const struct msghdr *m)
{
	bool bell;
	ssize_t n;

	atomic_store(&qp->ring_tx_wait, true);
	n = rr__shm_ring_writev(&qp->link, m->msg_iov, (int)m->msg_iovlen,
				&bell);
	if (n != -EAGAIN)
		atomic_store(&qp->ring_tx_wait, false);
	if (bell)
		rr__shm_bell(qp->fd);
	if (n == -EPROTO)
		IW_COUNT(qp->dev, shm_ring_refused);
	return n;
}

static ssize_t sendmsg_batch(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;
	struct msghdr m = {.msg_iov = &tx->iov[tx->iov_first],
			   .msg_iovlen = tx->iovcnt - tx->iov_first};
	struct iw_stag *s = NULL;
	ssize_t n;

	if (tx->src_held) {
		/* Revalidate: the peer's right to read may have been revoked.
		 */
		if (rr__iw_stag_acquire(qp->dev, tx->src_stag, qp->base.pd,
					RR_ACCESS_REMOTE_READ, tx->src_to,
					tx->src_len, &s))
			return -EACCES;
	}
	if (qp->ring)
		n = ring_send(qp, &m);
	else if ((n = sendmsg(qp->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0)
		n = -errno;
	if (s)
		pthread_mutex_unlock(&s->mu);
	return n;
}

/* Writes the batch; true when all of it is on the wire. */
static bool write_batch(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;

	while (tx->iov_first < tx->iovcnt) {
		ssize_t n = sendmsg_batch(qp);

		if (n == -EAGAIN || n == -EWOULDBLOCK) {
			tx->blocked = true;
			rr__iw_qp_want_out(qp, true);
			return false;
		}
		if (n < 0) {
			rr_info_rl("iwarp: send failed: %s", strerror((int)-n));
			tx->dead = true;
			rr__iw_tx_error(qp);
			return false;
		}
		while (n > 0) {
			struct iovec *v = &tx->iov[tx->iov_first];

			if ((size_t)n >= v->iov_len) {
				n -= (ssize_t)v->iov_len;
				tx->iov_first++;
			} else {
				v->iov_base = (char *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	if (tx->blocked) {
		tx->blocked = false;
		rr__iw_qp_want_out(qp, false);
	}
	return true;
}

void rr__iw_tx_run(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;

	if (tx->dead || iw_qp_state(qp) != RR_QPS_RTS)
		return;
	for (;;) {
		if (tx->iovcnt == 0 && tx->ndone == 0)
			build_batch(qp);
		if (tx->iovcnt == 0 && tx->ndone == 0)
			return; /* nothing to send, or stalled on ORD */
		if (!write_batch(qp))
			return;
		batch_finish(qp);
	}
}

void rr__iw_tx_kick(struct iw_qp *qp)
{
	pthread_mutex_lock(&qp->tx_mu);
	rr__iw_tx_run(qp);
	pthread_mutex_unlock(&qp->tx_mu);
}

/*
 * Best effort: a Terminate goes out only at a batch boundary, since FPDU
 * framing must stay intact. Caller holds tx_mu.
 */
void rr__iw_tx_terminate(struct iw_qp *qp, const struct iw_term *t)
{
	struct iw_tx *tx = &qp->tx;
	uint8_t p[IW_TX_HDR_ROOM];
	int len;

	if (tx->dead || (tx->iovcnt && !write_batch(qp)))
		return;
	if (tx->iovcnt)
		batch_finish(qp);
	len = rr__iw_term_encode(t, p, sizeof(p) - IW_UNTAGGED_HDR_LEN);
	if (len < 0)
		return;
	add_control(qp, IW_OP_TERMINATE, IW_QN_TERMINATE, p, (uint32_t)len);
	if (write_batch(qp)) {
		IW_COUNT(qp->dev, terminate_sent);
		batch_finish(qp);
	}
}
