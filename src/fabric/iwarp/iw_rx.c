/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The receive engine. Caller holds qp->rx_mu and the QP is in RTS.
 *
 * The stream is read as: a header (16 bytes first, the 4 more an untagged
 * header needs), then one readv that takes the payload straight into its
 * destination (registered memory for tagged FPDUs, the posted receive's
 * SGEs for Sends), the pad and CRC. Every readv also takes what follows
 * into a stash (iw.h says how much): later reads are served from it
 * first. So a small message, or a burst of them, costs one syscall, at the
 * price of copying small payloads once; a large payload is still placed
 * by readv, mostly uncopied.
 *
 * Every check of RFC 5040/5041 happens before the first byte is placed;
 * a failure sends a Terminate naming the layer, type and code, counts the
 * reason, and moves the QP to error (which flushes everything).
 */
#include "fabric/iwarp/iw.h"
#include "fabric/shm/shm.h"

#include "base/crc32c.h"
#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#define RX_ERR -EPROTO /* the QP has failed; stop reading */

void rr__iw_rx_reset(struct iw_rx *rx)
{
	memset(rx, 0, sizeof(*rx));
	rx->phase = RX_HDR;
	for (int i = 0; i < 3; i++)
		rx->msn[i] = 1;
}

static uint32_t hdr_len(const struct iw_rx *rx)
{
	return rx->h.tagged ? IW_TAGGED_HDR_LEN : IW_UNTAGGED_HDR_LEN;
}

/* Sends a Terminate describing the FPDU being received, then fails. */
static int rx_terminate(struct iw_qp *qp, uint8_t layer, uint8_t etype,
			uint8_t ecode, int status)
{
	struct iw_rx *rx = &qp->rx;
	struct iw_term t = {.layer = layer, .etype = etype, .ecode = ecode};

	if (rx->hdr_have >= 4 && rx->phase != RX_HDR) {
		t.hdr_ddp = true;
		t.hdr_len = (uint16_t)hdr_len(rx);
		memcpy(t.hdr, rx->hdr, t.hdr_len);
	}
	rr_info_rl("iwarp: terminate layer %u type %u code 0x%02x", layer,
		   etype, ecode);
	pthread_mutex_lock(&qp->tx_mu);
	rr__iw_tx_terminate(qp, &t);
	pthread_mutex_unlock(&qp->tx_mu);
	rr__iw_qp_fail(qp, RR_WC_WR_FLUSH_ERR, RR_CM_QP_ERROR, status);
	return RX_ERR;
}

/*
 * A tagged access failed. A key that is live but of another protection
 * domain, or without the rights asked for, is answered exactly as a key
 * that does not exist: were the answers different, a peer could probe
 * which of our keys are live. Only bounds (possible only with a key this
 * peer may use) get their own code.
 */
static int rx_bad_stag(struct iw_qp *qp, int err)
{
	struct iw_device *dev = qp->dev;

	switch (err) {
	case -ERANGE:
		IW_COUNT(dev, bad_bounds);
		return rx_terminate(qp, IW_TERM_DDP, IW_TERM_DDP_TAGGED,
				    IW_TERM_DDP_T_BASE_BOUNDS, -EACCES);
	default:
		IW_COUNT(dev, bad_stag);
		return rx_terminate(qp, IW_TERM_DDP, IW_TERM_DDP_TAGGED,
				    IW_TERM_DDP_T_INVALID_STAG, -EACCES);
	}
}

static int rx_untagged_err(struct iw_qp *qp, uint8_t ecode)
{
	return rx_terminate(qp, IW_TERM_DDP, IW_TERM_DDP_UNTAGGED, ecode,
			    -EPROTO);
}

/* The stream ended or broke. */
static int rx_closed(struct iw_qp *qp, int err)
{
	struct iw_rx *rx = &qp->rx;
	bool clean = err == 0 && rx->phase == RX_HDR && rx->hdr_have == 0;

	if (iw_qp_state(qp) == RR_QPS_ERROR)
		return RX_ERR; /* failed on the way here, and counted */
	if (!clean)
		IW_COUNT(qp->dev, peer_reset);
	rr__iw_qp_fail(qp, RR_WC_WR_FLUSH_ERR, RR_CM_DISCONNECTED,
		       clean ? 0 : (err ? err : -ECONNRESET));
	return RX_ERR;
}

static int begin_write(struct iw_qp *qp, uint32_t plen)
{
	struct iw_rx *rx = &qp->rx;
	struct iw_stag *s;
	int rc;

	rx->tagged_addr = rx->h.to;
	if (!plen)
		return 0; /* zero-length Writes name no memory (RFC 5040 5.1) */
	rc = rr__iw_stag_acquire(qp->dev, rx->h.stag, qp->base.pd,
				 RR_ACCESS_REMOTE_WRITE, rx->h.to, plen, &s);
	if (rc)
		return rx_bad_stag(qp, rc);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static int begin_read_resp(struct iw_qp *qp, uint32_t plen)
{
	struct iw_rx *rx = &qp->rx;
	uint32_t head = atomic_load(&qp->orq_head);
	struct iw_orq *o = &qp->orq[head % IW_MAX_ORD];
	struct iw_stag *s;
	int rc;

	if (head == atomic_load_explicit(&qp->orq_tail, memory_order_acquire)) {
		IW_COUNT(qp->dev, rdmap_bad_opcode);
		return rx_terminate(qp, IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_OP,
				    IW_TERM_ECODE_UNEXPECTED_OP, -EPROTO);
	}
	rx->placed_by_peer = qp->cma && plen == 0 && rx->h.last &&
			     o->got == 0 && rx->h.stag == o->sink_stag &&
			     rx->h.to == o->sink_to + o->len;
	if (rx->placed_by_peer)
		return 0;
	if (rx->h.stag != o->sink_stag || rx->h.to != o->sink_to + o->got ||
	    plen > o->len - o->got)
		return rx_bad_stag(qp, -ERANGE);
	rx->tagged_addr = rx->h.to;
	if (!plen)
		return 0;
	rc = rr__iw_stag_acquire(qp->dev, rx->h.stag, qp->base.pd,
				 RR_ACCESS_LOCAL_WRITE, rx->h.to, plen, &s);
	if (rc)
		return rx_bad_stag(qp, rc);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static int begin_send(struct iw_qp *qp, uint32_t plen)
{
	struct iw_rx *rx = &qp->rx;

	if (rx->h.opcode != IW_OP_SEND && rx->h.opcode != IW_OP_SEND_INV &&
	    rx->h.opcode != IW_OP_SEND_SE &&
	    rx->h.opcode != IW_OP_SEND_SE_INV) {
		IW_COUNT(qp->dev, rdmap_bad_opcode);
		return rx_terminate(qp, IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_OP,
				    IW_TERM_ECODE_UNEXPECTED_OP, -EPROTO);
	}
	if (rx->h.mo != rx->msg_len) {
		IW_COUNT(qp->dev, bad_mo);
		return rx_untagged_err(qp, IW_TERM_DDP_U_INVALID_MO);
	}
	if (!rx->rwqe) {
		pthread_mutex_lock(&qp->rq_mu);
		if (qp->rq_tail != qp->rq_head)
			rx->rwqe =
				&qp->rq[qp->rq_tail % qp->base.attr.rq_depth];
		pthread_mutex_unlock(&qp->rq_mu);
		if (!rx->rwqe) {
			IW_COUNT(qp->dev, no_recv_posted);
			return rx_untagged_err(qp, IW_TERM_DDP_U_NO_BUFFER);
		}
	}
	if ((uint64_t)rx->h.mo + plen > rx->rwqe->length)
		return -EMSGSIZE;
	return 0;
}

static int begin_control(struct iw_qp *qp, uint32_t plen)
{
	struct iw_rx *rx = &qp->rx;
	uint8_t want =
		rx->h.qn == IW_QN_READ_REQ ? IW_OP_READ_REQ : IW_OP_TERMINATE;

	if (rx->h.opcode != want) {
		IW_COUNT(qp->dev, rdmap_bad_opcode);
		return rx_terminate(qp, IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_OP,
				    IW_TERM_ECODE_UNEXPECTED_OP, -EPROTO);
	}
	if (rx->h.mo != 0 || !rx->h.last || plen > sizeof(rx->small) ||
	    (want == IW_OP_READ_REQ && plen != IW_READ_REQ_LEN)) {
		IW_COUNT(qp->dev, ddp_bad_header);
		return rx_untagged_err(qp, IW_TERM_DDP_U_TOO_LONG);
	}
	return 0;
}

/* Validates a complete header and decides where its payload goes. */
static int rx_begin(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	uint32_t plen = iw_hdr_payload_len(&rx->h);
	int rc;

	rx->payload_left = plen;
	rx->placed = 0;
	rx->trailer_have = 0;
	rx->trailer_need = iw_fpdu_pad(rx->h.mpa_len) + IW_CRC_LEN;
	rx->crc = qp->crc ? rr__crc32c_update(RR_CRC32C_INIT, rx->hdr,
					      hdr_len(rx))
			  : 0;
	if (rx->h.tagged)
		return rx->h.opcode == IW_OP_WRITE ? begin_write(qp, plen)
						   : begin_read_resp(qp, plen);
	if (rx->h.qn > IW_QN_TERMINATE) {
		IW_COUNT(qp->dev, ddp_bad_header);
		return rx_untagged_err(qp, IW_TERM_DDP_U_INVALID_QN);
	}
	if (rx->h.msn != rx->msn[rx->h.qn]) {
		IW_COUNT(qp->dev, bad_msn);
		return rx_untagged_err(qp, IW_TERM_DDP_U_MSN_RANGE);
	}
	if (rx->h.qn != IW_QN_SEND)
		return begin_control(qp, plen);
	rc = begin_send(qp, plen);
	if (rc == -EMSGSIZE) {
		/* The receive is too small: it completes with the error. */
		struct rr_wc wc = {.wr_id = rx->rwqe->wr_id,
				   .qp = &qp->base,
				   .status = RR_WC_LOC_LEN_ERR,
				   .opcode = RR_WC_RECV};

		IW_COUNT(qp->dev, recv_too_small);
		pthread_mutex_lock(&qp->rq_mu);
		qp->rq_tail++;
		pthread_mutex_unlock(&qp->rq_mu);
		rx->rwqe = NULL;
		rr__iw_cq_push(qp->rcq, &wc, 0);
		return rx_untagged_err(qp, IW_TERM_DDP_U_TOO_LONG);
	}
	return rc;
}

static int hdr_error(struct iw_qp *qp, int rc)
{
	rr_dbg("iwarp: bad header (%d): %02x%02x %02x%02x %02x%02x%02x%02x", rc,
	       qp->rx.hdr[0], qp->rx.hdr[1], qp->rx.hdr[2], qp->rx.hdr[3],
	       qp->rx.hdr[4], qp->rx.hdr[5], qp->rx.hdr[6], qp->rx.hdr[7]);
	if (rc == -EOPNOTSUPP) {
		IW_COUNT(qp->dev, rdmap_bad_opcode);
		return rx_terminate(qp, IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_OP,
				    IW_TERM_ECODE_UNEXPECTED_OP, -EPROTO);
	}
	IW_COUNT(qp->dev, ddp_bad_header);
	return rx_terminate(qp, IW_TERM_DDP, IW_TERM_DDP_UNTAGGED,
			    IW_TERM_DDP_U_VERSION, -EPROTO);
}

/* Copies stashed bytes into iov; returns how many. */
static size_t stash_take(struct iw_rx *rx, const struct iovec *iov, int n)
{
	size_t got = 0;

	for (int i = 0; i < n && rx->stash_len; i++) {
		size_t take = iov[i].iov_len < rx->stash_len ? iov[i].iov_len
							     : rx->stash_len;

		memcpy(iov[i].iov_base, rx->stash + rx->stash_off, take);
		rx->stash_off += (uint32_t)take;
		rx->stash_len -= (uint32_t)take;
		got += take;
		if (take < iov[i].iov_len)
			break;
	}
	return got;
}

/* The part of iov after its first skip bytes, into v; returns the count. */
static int iov_tail(const struct iovec *iov, int n, size_t skip,
		    struct iovec *v)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		v[k++] = (struct iovec){(char *)iov[i].iov_base + skip,
					iov[i].iov_len - skip};
		skip = 0;
	}
	return k;
}

/*
 * shm: the same contract from the ring. Short, or -EAGAIN, only once the
 * consumer is armed and the ring was seen empty after that (shm_ring.h):
 * every way out of the receive path that waits for more leaves the
 * producer ringing. 0 once the ring is empty and the peer has closed.
 */
static ssize_t ring_readv(struct iw_qp *qp, const struct iovec *iov, int n)
{
	struct iovec v[IW_MAX_SGE + 5];
	size_t want = 0, got = 0;
	bool armed = false;
	int closed = 0;

	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	for (;;) {
		int k = iov_tail(iov, n, got, v);
		bool bell;
		ssize_t r = rr__shm_ring_readv(&qp->link, v, k, &bell);

		if (bell)
			rr__shm_bell(qp->fd);
		if (r < 0) { /* the peer wrote an impossible index */
			IW_COUNT(qp->dev, shm_ring_refused);
			rr_info_rl("shm: a peer's ring index is out of range");
			rr__iw_qp_fail(qp, RR_WC_WR_FLUSH_ERR, RR_CM_QP_ERROR,
				       -EPROTO);
			return RX_ERR;
		}
		got += (size_t)r;
		if (got == want || (armed && r == 0))
			break;
		if (r > 0)
			continue; /* emptied: the next look finds 0 */
		/* Bells are read only when a poller saw them: a ring
		 * watched in rr_cq_wait costs no syscall at all. */
		if (atomic_exchange(&qp->bell_seen, false))
			closed = rr__shm_bell_drain(qp->fd);
		rr__shm_ring_arm(&qp->link);
		armed = true;
	}
	if (got)
		return (ssize_t)got;
	if (closed)
		return closed > 0 ? 0 : closed;
	return -EAGAIN;
}

/*
 * Fills iov from the stash, then from the socket with the stash as one
 * more iovec. Returns the bytes put in iov (short only when the socket had
 * no more), 0 at end of stream, or -errno / -EAGAIN. rx->sock_empty says
 * whether the last readv emptied the socket.
 */
static ssize_t rx_readv(struct iw_qp *qp, struct iovec *iov, int n,
			size_t ahead)
{
	struct iw_rx *rx = &qp->rx;
	struct iovec v[IW_MAX_SGE + 5];
	size_t want = 0, got = stash_take(rx, iov, n), need;
	ssize_t r;
	int k;

	if (qp->ring)
		return ring_readv(qp, iov, n);
	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	/* Served from the stash: what the last readv found still stands. */
	if (got == want)
		return (ssize_t)got;
	k = iov_tail(iov, n, got, v);
	need = want - got;
	rx->stash_off = 0;
	v[k++] = (struct iovec){rx->stash, ahead};
	r = readv(qp->fd, v, k);
	if (r < 0) {
		rx->sock_empty = true;
		if (got)
			return (ssize_t)got;
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN
							       : -errno;
	}
	rx->sock_empty = (size_t)r < need + ahead;
	if ((size_t)r > need)
		rx->stash_len = (uint32_t)((size_t)r - need);
	if (r == 0 && got)
		return (ssize_t)got;
	return (ssize_t)(got + ((size_t)r < need ? (size_t)r : need));
}

/*
 * With 16 bytes of an untagged header in hand, decodes it as if MO held its
 * only valid value; rx_body reads the real MO along with the payload.
 */
static int rx_header_speculate(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	uint32_t qn = (uint32_t)rx->hdr[8] << 24 | (uint32_t)rx->hdr[9] << 16 |
		      (uint32_t)rx->hdr[10] << 8 | rx->hdr[11];
	uint8_t h[IW_UNTAGGED_HDR_LEN];
	int rc;

	rx->mo_expect = qn == IW_QN_SEND ? rx->msg_len : 0;
	memcpy(h, rx->hdr, IW_TAGGED_HDR_LEN);
	h[16] = (uint8_t)(rx->mo_expect >> 24);
	h[17] = (uint8_t)(rx->mo_expect >> 16);
	h[18] = (uint8_t)(rx->mo_expect >> 8);
	h[19] = (uint8_t)rx->mo_expect;
	rc = rr__iw_hdr_decode(h, sizeof(h), &rx->h);
	if (rc < 0)
		return hdr_error(qp, rc);
	/* The CRC covers the real MO; it equals h[16..19] or we terminate. */
	rx->mo_pending = IW_UNTAGGED_HDR_LEN - rx->hdr_have;
	memcpy(rx->hdr + rx->hdr_have, h + rx->hdr_have, rx->mo_pending);
	rx->phase = RX_PAYLOAD;
	return rx_begin(qp);
}

static int rx_header(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	int rc;

	for (;;) {
		struct iovec v;
		ssize_t r;

		if (rx->hdr_have >= IW_TAGGED_HDR_LEN) {
			rc = rr__iw_hdr_decode(rx->hdr, rx->hdr_have, &rx->h);
			if (rc < 0)
				return hdr_error(qp, rc);
			if (rc > 0)
				break;
			return rx_header_speculate(qp);
		}
		v = (struct iovec){rx->hdr + rx->hdr_have,
				   IW_TAGGED_HDR_LEN - rx->hdr_have};
		r = rx_readv(qp, &v, 1, IW_RX_STASH_HDR);
		if (r == -EAGAIN)
			return -EAGAIN;
		if (r <= 0)
			return rx_closed(qp, (int)r);
		rx->hdr_have += (uint32_t)r;
		if ((size_t)r < v.iov_len && !rx->drain)
			return -EAGAIN; /* the poller sees what comes next */
	}
	rx->phase = RX_PAYLOAD;
	return rx_begin(qp);
}

/* iovecs for the rest of this FPDU's payload. */
static int payload_iov(struct iw_qp *qp, struct iovec *iov)
{
	struct iw_rx *rx = &qp->rx;
	uint32_t left = rx->payload_left;
	int n = 0;

	if (!left)
		return 0;
	if (rx->h.tagged) {
		iov[0] = (struct iovec){(void *)(uintptr_t)rx->tagged_addr,
					left};
		return 1;
	}
	if (rx->h.qn != IW_QN_SEND) {
		iov[0] = (struct iovec){rx->small + rx->placed, left};
		return 1;
	}
	uint64_t off = (uint64_t)rx->h.mo + rx->placed;

	for (uint32_t i = 0; i < rx->rwqe->num_sge && left; i++) {
		const struct rr_sge *s = &rx->rwqe->sge[i];
		uint64_t take;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		take = s->length - off < left ? s->length - off : left;
		iov[n++] = (struct iovec){(void *)(uintptr_t)(s->addr + off),
					  take};
		left -= (uint32_t)take;
		off = 0;
	}
	return n;
}

static void crc_iov(struct iw_rx *rx, const struct iovec *iov, int n,
		    size_t bytes)
{
	for (int i = 0; i < n && bytes; i++) {
		size_t take = iov[i].iov_len < bytes ? iov[i].iov_len : bytes;

		rx->crc = rr__crc32c_update(rx->crc, iov[i].iov_base, take);
		bytes -= take;
	}
}

static int iw_rx_deliver(struct iw_qp *qp);

static bool rx_mo_wrong(const struct iw_rx *rx)
{
	uint32_t real = (uint32_t)rx->mo_real[0] << 24 |
			(uint32_t)rx->mo_real[1] << 16 |
			(uint32_t)rx->mo_real[2] << 8 | rx->mo_real[3];

	return real != rx->mo_expect;
}

/*
 * One readv for payload, trailer and the next header. A tagged destination
 * stays locked for the duration so an invalidation cannot slip in between
 * the check and the placement.
 */
static int rx_body(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	struct iovec iov[IW_MAX_SGE + 3];
	struct iw_stag *s = NULL;
	uint32_t mo = rx->mo_pending, got, p, t;
	int np = payload_iov(qp, iov + (mo ? 1 : 0)), n = np, rc;
	bool drained;
	ssize_t r;

	if (mo) {
		iov[0] = (struct iovec){rx->mo_real + 4 - mo, mo};
		n++;
	}
	iov[n++] = (struct iovec){rx->trailer + rx->trailer_have,
				  rx->trailer_need - rx->trailer_have};
	if (np && rx->h.tagged) {
		unsigned acc = rx->h.opcode == IW_OP_WRITE
				       ? RR_ACCESS_REMOTE_WRITE
				       : RR_ACCESS_LOCAL_WRITE;
		rc = rr__iw_stag_acquire(qp->dev, rx->h.stag, qp->base.pd, acc,
					 rx->tagged_addr, rx->payload_left, &s);
		if (rc)
			return rx_bad_stag(qp, rc); /* invalidated meanwhile */
	}
	r = rx_readv(qp, iov, n,
		     rx->payload_left > 4096 ? IW_RX_STASH_BULK : IW_RX_STASH);
	if (r > 0 && qp->crc && (uint32_t)r > mo)
		crc_iov(rx, iov + (mo ? 1 : 0), np, (size_t)r - mo);
	if (s)
		pthread_mutex_unlock(&s->mu);
	if (r == -EAGAIN)
		return -EAGAIN;
	if (r <= 0)
		return rx_closed(qp, (int)r);
	got = (uint32_t)r;
	if (mo) {
		uint32_t m = got < mo ? got : mo;

		rx->mo_pending -= m;
		got -= m;
		if (!rx->mo_pending && rx_mo_wrong(rx)) {
			IW_COUNT(qp->dev, bad_mo);
			return rx_untagged_err(qp, IW_TERM_DDP_U_INVALID_MO);
		}
		if (rx->mo_pending)
			return rx->drain ? 0 : -EAGAIN;
	}
	drained = !rx->drain && rx->sock_empty && !rx->stash_len;
	p = got < rx->payload_left ? got : rx->payload_left;
	rx->payload_left -= p;
	rx->placed += p;
	rx->tagged_addr += p;
	got -= p;
	t = got < rx->trailer_need - rx->trailer_have
		    ? got
		    : rx->trailer_need - rx->trailer_have;
	rx->trailer_have += t;
	got -= t;
	if (rx->trailer_have < rx->trailer_need)
		return drained ? -EAGAIN : 0;
	rx->hdr_have = 0;
	rc = iw_rx_deliver(qp);
	/*
	 * For a level-triggered poller a short read means the socket was
	 * empty: stop without another syscall; anything queued (data or end
	 * of stream) keeps the socket readable for its next poll, and
	 * re-arming it in epoll reports it to the progress thread.
	 */
	return rc ? rc : (drained ? -EAGAIN : 0);
}

/* ------------------------------------------------------------ delivery */

static int deliver_send(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	struct rr_wc wc = {.qp = &qp->base, .opcode = RR_WC_RECV};
	bool inv = rx->h.opcode == IW_OP_SEND_INV ||
		   rx->h.opcode == IW_OP_SEND_SE_INV;

	rx->msg_len += rx->placed;
	if (!rx->h.last)
		return 0;
	if (inv) {
		if (rr__iw_stag_invalidate(qp->dev, qp->base.pd,
					   rx->h.inval_stag, true)) {
			IW_COUNT(qp->dev, bad_invalidate);
			return rx_terminate(
				qp, IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_PROT,
				IW_TERM_ECODE_CANT_INVALIDATE, -EACCES);
		}
		wc.flags |= RR_WC_WITH_INV;
		wc.invalidated_rkey = rx->h.inval_stag;
	}
	if (rx->h.opcode == IW_OP_SEND_SE || rx->h.opcode == IW_OP_SEND_SE_INV)
		wc.flags |= RR_WC_SOLICITED;
	wc.wr_id = rx->rwqe->wr_id;
	wc.byte_len = rx->msg_len;
	pthread_mutex_lock(&qp->rq_mu);
	qp->rq_tail++;
	pthread_mutex_unlock(&qp->rq_mu);
	rx->rwqe = NULL;
	rx->msg_len = 0;
	rx->msn[IW_QN_SEND]++;
	rr__iw_cq_push(qp->rcq, &wc, 0);
	return 0;
}

static int deliver_read_resp(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	uint32_t head = atomic_load(&qp->orq_head);
	struct iw_orq *o = &qp->orq[head % IW_MAX_ORD];
	struct iw_wqe w = {.wr_id = o->wr_id, .opcode = o->opcode};

	o->got += rx->placed_by_peer ? o->len : rx->placed;
	rx->placed_by_peer = false;
	if (!rx->h.last)
		return 0;
	if (o->got != o->len)
		return rx_bad_stag(qp, -ERANGE);
	w.flags = o->signaled ? RR_SEND_SIGNALED : 0;
	pthread_mutex_lock(&qp->tx_mu);
	atomic_store(&qp->orq_head, head + 1);
	qp->pulls_out -= o->opcode == RR_WR_RDMA_WRITE;
	rr__iw_qp_complete_send(qp, &w, RR_WC_SUCCESS,
				o->opcode == RR_WR_RDMA_READ ? o->len : 0);
	rr__iw_tx_run(qp); /* a Read may have waited for ORD room */
	pthread_mutex_unlock(&qp->tx_mu);
	return 0;
}

static int deliver_read_req(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	uint32_t tail = atomic_load(&qp->irq_tail);
	struct iw_read_req rr;
	struct iw_stag *s;
	bool placed = false;
	int rc;

	if (rr__iw_read_req_decode(rx->small, rx->placed, &rr)) {
		IW_COUNT(qp->dev, ddp_bad_header);
		return rx_untagged_err(qp, IW_TERM_DDP_U_TOO_LONG);
	}
	if (tail - atomic_load(&qp->irq_head) >= qp->ird) {
		IW_COUNT(qp->dev, ird_exceeded);
		return rx_terminate(qp, IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_OP,
				    IW_TERM_ECODE_CATA_STREAM, -EPROTO);
	}
	if (rr.size) {
		bool pull = qp->cma && (rr.sink_stag & SHM_PULL);

		rc = rr__iw_stag_acquire(qp->dev, rr.src_stag, qp->base.pd,
					 pull ? RR_ACCESS_REMOTE_WRITE
					      : RR_ACCESS_REMOTE_READ,
					 rr.src_to, rr.size, &s);
		if (rc)
			return rx_bad_stag(qp, rc);
		/* ORDER: copied under the key's lock: no invalidation
		 * completes while the bytes move (shm.h). */
		rc = qp->cma ? rr__shm_serve(qp, &rr, pull) : -EAGAIN;
		pthread_mutex_unlock(&s->mu);
		placed = rc == 0;
		if (pull && !placed)
			return rx_terminate(qp, IW_TERM_RDMAP,
					    IW_TERM_RDMAP_REMOTE_OP,
					    IW_TERM_ECODE_CATA_STREAM, rc);
	}
	rx->msn[IW_QN_READ_REQ]++;
	qp->irq[tail % IW_MAX_IRD] =
		(struct iw_irq){.rr = rr, .placed = placed};
	atomic_store_explicit(&qp->irq_tail, tail + 1, memory_order_release);
	pthread_mutex_lock(&qp->tx_mu);
	rr__iw_tx_run(qp);
	pthread_mutex_unlock(&qp->tx_mu);
	return 0;
}

static int deliver_terminate(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	struct iw_term t;
	enum rr_wc_status st = RR_WC_REM_OP_ERR;
	int status = -ECONNABORTED;

	IW_COUNT(qp->dev, terminate_received);
	if (rr__iw_term_decode(rx->small, rx->placed, &t) == 0) {
		bool prot = (t.layer == IW_TERM_RDMAP &&
			     t.etype == IW_TERM_RDMAP_REMOTE_PROT) ||
			    (t.layer == IW_TERM_DDP &&
			     t.etype == IW_TERM_DDP_TAGGED);

		rr_info_rl(
			"iwarp: peer terminated: layer %u type %u code 0x%02x",
			t.layer, t.etype, t.ecode);
		if (prot) {
			st = RR_WC_REM_ACCESS_ERR;
			status = -EACCES;
		}
	}
	rr__iw_qp_fail(qp, st, RR_CM_QP_ERROR, status);
	return RX_ERR;
}

static int iw_rx_deliver(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	int rc = 0;

	if (qp->crc) {
		uint32_t pad = rx->trailer_need - IW_CRC_LEN;
		uint32_t c = rr__crc32c_update(rx->crc, rx->trailer, pad);

		if (rr_crc32c_final(c) != rr__iw_crc_load(rx->trailer + pad)) {
			IW_COUNT(qp->dev, crc_errors);
			return rx_terminate(qp, IW_TERM_LLP, 0, IW_TERM_LLP_CRC,
					    -EBADMSG);
		}
	}
	__atomic_fetch_add(&qp->dev->ctr.fpdus_received, 1, __ATOMIC_RELAXED);
	if (rx->h.tagged)
		rc = rx->h.opcode == IW_OP_READ_RESP ? deliver_read_resp(qp)
						     : 0;
	else if (rx->h.qn == IW_QN_SEND)
		rc = deliver_send(qp);
	else if (rx->h.qn == IW_QN_READ_REQ)
		rc = deliver_read_req(qp);
	else
		rc = deliver_terminate(qp);
	if (rc)
		return rc;
	rx->phase = RX_HDR;
	return 0;
}

/*
 * A drain (edge-triggered wake-up) hands the rest of a busy stream to the
 * threads polling the socket in rr_cq_wait, which would otherwise spin on a
 * socket that stays readable while the lock is held here. ORDER: Dekker
 * with rr__iw_qp_waiter_leave: rx_skipped is stored before app_waiters is read
 * again, a leaving waiter decrements before reading rx_skipped, so either
 * that waiter or this thread goes on reading.
 */
static bool yield_to_waiters(struct iw_qp *qp)
{
	/* A ring's content does not show in the pollers' poll(): read on. */
	if (qp->ring || !atomic_load(&qp->app_waiters) || qp->rx.stash_len)
		return false; /* a poller would not see stashed bytes */
	atomic_store(&qp->rx_skipped, 1);
	return atomic_load(&qp->app_waiters) != 0;
}

static void rx_loop(struct iw_qp *qp, bool drain)
{
	struct iw_rx *rx = &qp->rx;
	int rc;

	rx->drain = drain;
	do {
		if (iw_qp_state(qp) != RR_QPS_RTS)
			return;
		if (drain && yield_to_waiters(qp))
			return;
		rc = rx->phase == RX_HDR ? rx_header(qp) : rx_body(qp);
	} while (rc == 0);
}

void rr__iw_rx_run(struct iw_qp *qp, bool drain)
{
	rx_loop(qp, drain);
	/* shm: a bell read on the way may have been the peer's "space". */
	if (qp->ring && atomic_load(&qp->ring_tx_wait))
		rr__iw_tx_kick(qp);
}
