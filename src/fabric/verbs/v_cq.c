/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Completion queues.
 *
 * The user's fd must stay readable while the CQ holds completions, but a
 * completion channel only reports completions added after it was armed.
 * So a poll that finds the device CQ empty consumes the channel's events,
 * re-arms it, and looks once more: what arrived in between goes to a
 * backlog ring, and an eventfd says the backlog is not empty. The fd we
 * hand out is an epoll set of the channel and that eventfd.
 *
 * The backlog also serves rr_qp_destroy, which must leave nothing of the
 * QP to poll: the device CQ is emptied into the backlog and the QP's
 * entries are dropped. It never overflows: a CQ holds at most as many
 * completions as its queues have slots, and slots return only when polled.
 */
#include "fabric/verbs/v.h"
#include "base/alloc.h"
#include "base/log.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define V_POLL_BATCH 16
/*
 * rxe (Linux 6.1) copies the kernel's IB_WC_WITH_INVALIDATE (bit 2) into
 * the user's wc_flags, where bit 2 reads as IBV_WC_IP_CSUM_OK; that flag
 * has no meaning on an RC receive, so either bit means "invalidated".
 */
#define V_WC_INV_BITS (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK)

static void cq_free(struct v_cq *c)
{
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	if (c->efd >= 0)
		close(c->efd);
	if (c->epfd >= 0)
		close(c->epfd);
	free(c->bl);
	free(c);
}

static int cq_open(struct v_cq *c, struct ibv_context *ctx, uint32_t depth)
{
	int rc;

	c->cc = ibv_create_comp_channel(ctx);
	rc = rr__v_ptr_rc(c->cc);
	if (!rc)
		rc = rr__v_fd_nonblock(c->cc->fd);
	if (rc)
		return rc;
	c->cq = ibv_create_cq(ctx, (int)depth, c, c->cc, 0);
	rc = rr__v_ptr_rc(c->cq);
	if (rc)
		return rc;
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->efd < 0)
		return -errno;
	c->epfd = rr__v_epoll_pair(c->cc->fd, c->efd);
	if (c->epfd < 0)
		return c->epfd;
	return rr__v_ibv_rc(ibv_req_notify_cq(c->cq, 0));
}

int rr__v_cq_create(struct rr_device *dev, uint32_t depth, struct rr_cq **out)
{
	struct v_cq *c = rr_calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->efd = c->epfd = -1;
	c->bl = rr_calloc(depth, sizeof(*c->bl));
	c->bl_size = depth;
	rc = c->bl ? cq_open(c, to_v_dev(dev)->ctx, depth) : -ENOMEM;
	if (rc) {
		cq_free(c);
		return rc;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->base = (struct rr_cq){.dev = dev, .depth = depth};
	*out = &c->base;
	return 0;
}

int rr__v_cq_destroy(struct rr_cq *cq)
{
	struct v_cq *c = to_v_cq(cq);
	int rc = rr__v_ibv_rc(ibv_destroy_cq(c->cq));

	if (rc)
		return rc == -EINVAL ? -EBUSY : rc;
	c->cq = NULL;
	pthread_mutex_destroy(&c->mu);
	cq_free(c);
	return 0;
}

/* ---------------------------------------------------------------- backlog */

static void bl_push(struct v_cq *c, const struct ibv_wc *wc)
{
	c->bl[(c->bl_head + c->bl_count++) % c->bl_size] = *wc;
}

static struct ibv_wc bl_pop(struct v_cq *c)
{
	struct ibv_wc wc = c->bl[c->bl_head];

	c->bl_head = (c->bl_head + 1) % c->bl_size;
	c->bl_count--;
	return wc;
}

/* The eventfd mirrors "backlog not empty"; only changes cost a syscall. */
static void flag(struct v_cq *c)
{
	bool on = c->bl_count > 0;

	if (on != c->efd_on)
		rr__v_efd_set(c->efd, on);
	c->efd_on = on;
}

/* The acquire pairs with v_ring.c's rr__v_slot_publish. */
static struct v_slot *slot_of(const struct ibv_wc *wc)
{
	struct v_slot *s = (struct v_slot *)(uintptr_t)wc->wr_id;

	(void)__atomic_load_n(&s->live, __ATOMIC_ACQUIRE);
	return s;
}

/* A completion from the device for a queue already drained in software. */
static bool late(const struct ibv_wc *wc)
{
	const struct v_slot *s = slot_of(wc);
	bool drop = atomic_load(s->op == RR_V_RECV ? &s->qp->rq_drained
						   : &s->qp->sq_drained);

	if (drop)
		V_TRACE("qp %u late wc op %d status %d dropped\n", getpid(),
			s->qp->qp->qp_num, s->op, wc->status);
	return drop;
}

/* Moves what the device CQ holds into the backlog. */
static int bl_pull(struct v_cq *c)
{
	struct ibv_wc wc[V_POLL_BATCH];
	int n;

	do {
		uint32_t room = c->bl_size - c->bl_count;

		n = ibv_poll_cq(c->cq,
				room < V_POLL_BATCH ? (int)room : V_POLL_BATCH,
				wc);
		if (n < 0)
			return rr__v_ibv_rc(n);
		c->polled_since_arm |= n > 0;
		for (int i = 0; i < n; i++)
			if (!late(&wc[i]))
				bl_push(c, &wc[i]);
	} while (n > 0);
	return 0;
}

/* A flush completion for s, made here because the device owes it none. */
static void bl_push_flush(struct v_cq *c, const struct v_slot *s)
{
	struct ibv_wc wc = {.wr_id = (uintptr_t)s,
			    .status = IBV_WC_WR_FLUSH_ERR};

	bl_push(c, &wc);
}

/*
 * siw flushes a queue only on the QP's way into ERROR. A request posted
 * after that (the peer's disconnect reached the device before its event
 * reached us, so the QP still looked connected when it was posted) stays
 * in the mapped queue for ever: a receive is never seen by the kernel, and
 * the doorbell of a Send flushes nothing. Without a completion made here,
 * the upper layer would wait for it, and its slot would never come back
 * (tests/vm/late_recv_flush.c shows both on siw). Every
 * request of the marker's queue before the marker that is neither retired
 * nor waiting in the backlog gets its flush now; the device's own later
 * completions for that queue are dropped (late()), so none completes
 * twice. Unsignaled Sends are left to the marker, which retires them.
 * Caller holds c->mu and has pulled the device CQ into the backlog.
 */
static void flush_owed(struct v_cq *c, const struct v_slot *marker)
{
	bool recv = marker->op == RR_V_RECV;
	struct v_ring *r = recv ? &marker->qp->rq : &marker->qp->sq;
	uint32_t n = 0, before;

	for (uint32_t i = 0; i < c->bl_count; i++) {
		struct v_slot *s =
			slot_of(&c->bl[(c->bl_head + i) % c->bl_size]);

		if (s->qp == marker->qp && (s->op == RR_V_RECV) == recv)
			s->queued = true;
	}
	before = rr__v_ring_before(r, marker);
	for (uint32_t i = 0; i < before; i++) {
		struct v_slot *s = r->order[i];

		if (!s->queued && (recv || s->signaled)) {
			bl_push_flush(c, s);
			n++;
		}
		s->queued = false;
	}
	if (n)
		V_TRACE("qp %u soft drain: %u %s never flushed by the device\n",
			getpid(), marker->qp->qp->qp_num, n,
			recv ? "receives" : "sends");
}

/*
 * Completes a drain marker that never went to the device, after all that
 * the device has flushed for its queue (siw flushes while the QP enters
 * ERROR, so that is in the CQ by now) and a flush for each request it
 * never will (flush_owed); what the device reports for that queue later
 * is dropped.
 */
void rr__v_cq_soft_flush(struct v_cq *c, struct v_slot *marker)
{
	pthread_mutex_lock(&c->mu);
	bl_pull(c);
	flush_owed(c, marker);
	bl_push_flush(c, marker);
	atomic_store(marker->op == RR_V_RECV ? &marker->qp->rq_drained
					     : &marker->qp->sq_drained,
		     true);
	flag(c);
	pthread_mutex_unlock(&c->mu);
}

void rr__v_cq_purge(struct v_cq *c, const struct v_qp *qp)
{
	uint32_t keep = 0;

	pthread_mutex_lock(&c->mu);
	bl_pull(c);
	for (uint32_t i = 0; i < c->bl_count; i++) {
		struct ibv_wc *e = &c->bl[(c->bl_head + i) % c->bl_size];

		if (slot_of(e)->qp != qp)
			c->bl[(c->bl_head + keep++) % c->bl_size] = *e;
	}
	c->bl_count = keep;
	flag(c);
	pthread_mutex_unlock(&c->mu);
}

/* ----------------------------------------------------------------- polling */

/*
 * A completion for a request already retired: siw (Linux 6.1) flushes a
 * Read it has queued but not yet sent twice, once from its outbound Read
 * queue and once as the request in hand (siw_sq_flush). Dropped, so that
 * each request completes once. Caller holds the CQ's mu.
 */
static bool stale(const struct ibv_wc *wc)
{
	const struct v_slot *s = slot_of(wc);

	if (s->live)
		return false;
	V_TRACE("qp %u stale wc op %d status %d dropped\n", getpid(),
		s->qp->qp->qp_num, s->op, wc->status);
	rr_warn_rl("verbs: qp %u: a second completion for one request, "
		   "dropped",
		   s->qp->qp->qp_num);
	return true;
}

static void translate(const struct ibv_wc *in, struct rr_wc *out)
{
	struct v_slot *s = slot_of(in);
	struct v_qp *qp = s->qp;
	bool recv = s->op == RR_V_RECV;

	*out = (struct rr_wc){
		.wr_id = s->wr_id,
		.qp = &qp->base,
		.status = rr__v_wc_status(in->status),
		/* a flushed completion's opcode is undefined in ibverbs */
		.opcode = recv ? RR_WC_RECV : rr__wc_opcode_of(s->op),
	};
	if (recv)
		out->byte_len = in->byte_len;
	else if (s->op == RR_WR_RDMA_READ)
		out->byte_len = s->len;
	if (recv && (in->wc_flags & V_WC_INV_BITS)) {
		out->flags |= RR_WC_WITH_INV;
		out->invalidated_rkey = in->invalidated_rkey;
	}
	rr__v_ring_retire(recv ? &qp->rq : &qp->sq, s);
	V_TRACE("qp %u wc op %d status %d vendor %#x len %u flags %#x\n",
		getpid(), qp->qp->qp_num, out->opcode, in->status,
		in->vendor_err, in->byte_len, in->wc_flags);
	if (in->status == IBV_WC_SUCCESS) {
		if (recv && atomic_load(&qp->state) == RR_QPS_CONNECTING)
			rr__v_qp_comm_est(qp);
		return;
	}
	if (in->status == IBV_WC_LOC_LEN_ERR && recv)
		V_COUNT(qp->dev, recv_too_small);
	/* An error, or a flush nobody asked for: the device failed the QP. */
	if (atomic_load(&qp->state) == RR_QPS_RTS)
		rr__v_qp_down(qp, RR_CM_QP_ERROR, -EIO);
}

/*
 * The CQ looked empty: make the channel report the next completion.
 *
 * Each is a system call (two with the read that finds nothing), and
 * under a slow or emulated CPU they are a good part of a small RPC's
 * cost, so neither is made for nothing. An arm fires one event, at the
 * first completion after it, and every event read here is followed by
 * an arm: so one read takes what waits (a second event, from an arm
 * that fired just after a read found nothing, makes one spurious
 * wake-up, whose poll comes here and reads it). No event and nothing
 * polled from the device since the last arm: that arm has not fired,
 * and arming again would change nothing.
 */
static int rearm(struct v_cq *c)
{
	struct ibv_cq *ecq;
	void *ectx;
	bool fired = ibv_get_cq_event(c->cc, &ecq, &ectx) == 0;
	int rc;

	if (fired)
		ibv_ack_cq_events(ecq, 1);
	else if (!c->polled_since_arm)
		return 0;
	rc = rr__v_ibv_rc(ibv_req_notify_cq(c->cq, 0));
	/* a failed arm is made again at the next short poll */
	c->polled_since_arm = rc != 0;
	if (!rc)
		rc = bl_pull(c);
	flag(c);
	return rc;
}

static int poll_locked(struct v_cq *c, struct rr_wc *wc, int n)
{
	struct ibv_wc tmp[V_POLL_BATCH];
	int got = 0, k = 0;

	while (got < n && c->bl_count) {
		struct ibv_wc e = bl_pop(c);

		if (!stale(&e))
			translate(&e, &wc[got++]);
	}
	while (got < n) {
		int want = n - got < V_POLL_BATCH ? n - got : V_POLL_BATCH;

		k = ibv_poll_cq(c->cq, want, tmp);
		if (k < 0)
			return rr__v_ibv_rc(k);
		c->polled_since_arm |= k > 0;
		for (int i = 0; i < k; i++)
			if (!late(&tmp[i]) && !stale(&tmp[i]))
				translate(&tmp[i], &wc[got++]);
		if (k < want)
			break;
	}
	if (got < n) {
		int rc = rearm(c);

		if (rc && !got)
			return rc;
		while (got < n && c->bl_count) {
			struct ibv_wc e = bl_pop(c);

			if (!stale(&e))
				translate(&e, &wc[got++]);
		}
	}
	flag(c);
	return got;
}

int rr__v_cq_poll(struct rr_cq *cq, struct rr_wc *wc, int n)
{
	struct v_cq *c = to_v_cq(cq);
	int rc;

	if (n == 0)
		return 0;
	pthread_mutex_lock(&c->mu);
	rc = poll_locked(c, wc, n);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int rr__v_cq_fd(struct rr_cq *cq)
{
	return to_v_cq(cq)->epfd;
}

/*
 * A peer's disconnect (its DREQ, or its process dying) arrives on the CM
 * channel, not on the CQ, and the QP goes to ERROR (so its requests flush)
 * only once that channel is read. A consumer waiting on the CQ alone, as
 * the client does while its connection is up, would wait for ever; so the
 * wait watches the channel of the attached QPs too, and reads it.
 * One channel per CQ (as our client and server use them): the QPs of a
 * second channel on the same CQ are not watched, and say so. The channel
 * must outlive the CQ's QPs, and no wait may run across their teardown.
 */
void rr__v_cq_watch(struct v_cq *c, struct v_evch *ch, bool on)
{
	pthread_mutex_lock(&c->mu);
	if (on && c->watch && c->watch != ch)
		rr_warn("verbs: a CQ's QPs on a second event channel: their "
			"peer's disconnect is seen only when that channel "
			"is read");
	if (on && !c->watch)
		c->watch = ch;
	else if (!on && c->reserved == 0)
		c->watch = NULL; /* the last QP is gone */
	pthread_mutex_unlock(&c->mu);
}

int rr__v_cq_wait(struct rr_cq *cq, int timeout_ms, int fd)
{
	struct v_cq *c = to_v_cq(cq);
	struct v_evch *ch;
	struct pollfd p[3] = {{.fd = c->epfd, .events = POLLIN},
			      {.fd = -1, .events = POLLIN},
			      {.fd = fd, .events = POLLIN}};
	int rc;

	pthread_mutex_lock(&c->mu);
	ch = c->watch;
	pthread_mutex_unlock(&c->mu);
	if (ch)
		p[1].fd = ch->ch->fd;
	do
		rc = poll(p, 3, timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	if (p[1].revents & POLLIN)
		rr__v_evch_drain(ch);
	if (p[2].revents && !p[0].revents)
		return -EAGAIN;
	return rc ? 0 : -ETIMEDOUT;
}
