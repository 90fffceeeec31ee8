/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Completion interception.
 *
 * On an active device a poll runs a small pipeline under the CQ's lock:
 *   1. held Send completions whose release condition came true move to the
 *      delivery ring (out);
 *   2. completions are taken from the inner CQ, translated to the wrapper
 *      QP, and either held (delay_send_cqe_ppm) or queued on out;
 *   3. synthesized completions (swallowed work requests) follow, after
 *      everything the inner CQ held at that point;
 *   4. up to n entries of out are returned, possibly shuffled
 *      (reorder_ppm), and the QPs' accounting is updated.
 * Nothing is dropped: a ring that is full leaves entries where they are
 * (in the inner CQ, or not held), so every completion is delivered once.
 *
 * A held completion goes when a receive completion of its QP was returned
 * to the caller after it was held (from this CQ or the QP's other one),
 * when the QP has left RTS, when delay_send_cqe_max_ms has passed (looked
 * at on each poll and each wait slice), or never if the QP is destroyed
 * first (a destroyed QP's completions are dropped, as the inner provider
 * does).
 *
 * rr_cq_fd is the inner CQ's fd: it does not reflect held or synthesized
 * completions, nor completions taken from the inner CQ by rr_cq_wait and
 * not yet polled. rr_cq_wait does, by waiting on the inner CQ in slices of
 * F_WAIT_SLICE_MS and looking at the rings in between.
 */
#include "fabric/faults/f.h"
#include "base/alloc.h"
#include "base/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define F_PULL_BATCH	32
#define F_WAIT_SLICE_MS 5

/* ----------------------------------------------------------------- rings */

static int ring_init(struct f_ring *r, uint32_t size)
{
	r->e = rr_calloc(size, sizeof(*r->e));
	r->size = size;
	return r->e ? 0 : -ENOMEM;
}

static struct f_cqe *ring_at(struct f_ring *r, uint32_t i)
{
	return &r->e[(r->head + i) % r->size];
}

static bool ring_push(struct f_ring *r, const struct f_cqe *e)
{
	if (r->count == r->size)
		return false;
	*ring_at(r, r->count++) = *e;
	return true;
}

static struct f_cqe ring_pop(struct f_ring *r)
{
	struct f_cqe e = r->e[r->head];

	r->head = (r->head + 1) % r->size;
	r->count--;
	return e;
}

/* Drops the entries naming qp, keeping the others in order. */
static void ring_purge(struct f_ring *r, const struct rr_qp *qp)
{
	uint32_t keep = 0;

	for (uint32_t i = 0; i < r->count; i++) {
		struct f_cqe *e = ring_at(r, i);

		if (e->wc.qp != qp)
			*ring_at(r, keep++) = *e;
	}
	r->count = keep;
}

/* ------------------------------------------------------- create, destroy */

static void cq_free(struct f_cq *cq)
{
	free(cq->out.e);
	free(cq->held.e);
	free(cq->synth.e);
	free(cq);
}

static int cq_rings(struct f_cq *cq, uint32_t depth)
{
	int rc = ring_init(&cq->out, depth);

	if (!rc)
		rc = ring_init(&cq->held, depth);
	if (!rc)
		rc = ring_init(&cq->synth, depth);
	return rc;
}

int rr__f_cq_create(struct rr_device *d, uint32_t depth, struct rr_cq **out)
{
	struct f_device *dev = to_f_dev(d);
	struct f_cq *cq = rr_calloc(1, sizeof(*cq));
	int rc;

	if (!cq)
		return -ENOMEM;
	/*
	 * Attached queues never exceed the depth, so neither do their
	 * held, synthesized or not yet delivered completions.
	 */
	rc = dev->active ? cq_rings(cq, depth) : 0;
	if (!rc)
		rc = rr_cq_create(dev->inner, depth, &cq->inner);
	if (rc) {
		cq_free(cq);
		return rc;
	}
	pthread_mutex_lock(&dev->mu);
	cq->rng = rr__f_stream(dev->plan.seed, 'R', dev->ncqs++);
	pthread_mutex_unlock(&dev->mu);
	pthread_mutex_init(&cq->mu, NULL);
	cq->base = (struct rr_cq){.dev = d, .depth = depth};
	*out = &cq->base;
	return 0;
}

int rr__f_cq_destroy(struct rr_cq *c)
{
	struct f_cq *cq = to_f_cq(c);
	int rc = rr_cq_destroy(cq->inner);

	if (rc)
		return rc;
	pthread_mutex_destroy(&cq->mu);
	cq_free(cq);
	return 0;
}

/* Caller holds cq->mu. */
void rr__f_cq_purge(struct f_cq *cq, struct rr_qp *qp)
{
	if (!cq->out.e)
		return;
	ring_purge(&cq->out, qp);
	ring_purge(&cq->held, qp);
	ring_purge(&cq->synth, qp);
}

/*
 * Queues the completion of a swallowed work request. With disconnect, the
 * inner QP is disconnected first under the CQ's lock: its flushes of
 * earlier work requests then reach the inner CQ before this entry is
 * visible, and the room checked for it cannot be taken meanwhile.
 */
int rr__f_cq_synth(struct f_cq *cq, const struct rr_wc *wc, struct rr_qp *inner)
{
	struct f_cqe e = {.wc = *wc};
	int rc = 0;

	pthread_mutex_lock(&cq->mu);
	if (cq->synth.count == cq->synth.size) {
		rc = -ENOMEM;
	} else {
		if (inner)
			rr_qp_disconnect(inner);
		ring_push(&cq->synth, &e);
	}
	pthread_mutex_unlock(&cq->mu);
	return rc;
}

/* A completion no request stands behind (rr_faults_inject). */
int rr__f_cq_inject(struct f_cq *cq, const struct rr_wc *wc)
{
	struct f_cqe e = {.wc = *wc, .injected = true};
	int rc = 0;

	pthread_mutex_lock(&cq->mu);
	if (!cq->synth.e || !ring_push(&cq->synth, &e))
		rc = cq->synth.e ? -ENOMEM : -EINVAL;
	pthread_mutex_unlock(&cq->mu);
	return rc;
}

/* ------------------------------------------------------------ pipeline */

static bool held_releasable(const struct f_cqe *e, uint64_t now)
{
	struct f_qp *qp = to_f_qp(e->wc.qp);
	uint32_t max_ms = qp->dev->plan.delay_send_cqe_max_ms;

	return atomic_load(&qp->recv_epoch) != e->epoch ||
	       rr_qp_state(qp->inner) != RR_QPS_RTS ||
	       (max_ms && now - e->held_ms >= max_ms);
}

/* Caller holds mu. */
static void release_held(struct f_cq *cq)
{
	struct f_ring *h = &cq->held;
	uint32_t keep = 0, n = h->count;
	uint64_t now = n ? rr_mono_ms() : 0;

	for (uint32_t i = 0; i < n; i++) {
		struct f_cqe *e = ring_at(h, i);

		if (held_releasable(e, now) && ring_push(&cq->out, e))
			continue;
		*ring_at(h, keep++) = *e;
	}
	h->count = keep;
}

static bool should_hold(struct f_cq *cq, struct f_qp *qp,
			const struct rr_wc *wc)
{
	uint32_t ppm = qp->dev->plan.delay_send_cqe_ppm;

	if (!ppm || wc->opcode != RR_WC_SEND || wc->status != RR_WC_SUCCESS)
		return false;
	if (cq->held.count == cq->held.size ||
	    rr_qp_state(qp->inner) != RR_QPS_RTS)
		return false;
	return rr__f_roll(&qp->rng_cqe, ppm);
}

/* Caller holds mu. Takes one inner completion: holds it or queues it. */
static bool take(struct f_cq *cq, const struct rr_wc *in)
{
	struct f_qp *qp = rr_qp_context(in->qp);
	struct f_cqe e = {.wc = *in};

	e.wc.qp = &qp->base;
	if (should_hold(cq, qp, &e.wc)) {
		e.epoch = atomic_load(&qp->recv_epoch);
		e.held_ms = rr_mono_ms();
		ring_push(&cq->held, &e);
		F_COUNT(qp->dev, send_cqes_delayed);
		return false;
	}
	ring_push(&cq->out, &e);
	return true;
}

/* Caller holds mu. Queues up to want completions from the inner CQ. */
static void pull(struct f_cq *cq, uint32_t want)
{
	struct rr_wc wc[F_PULL_BATCH];

	while (want) {
		uint32_t k = cq->out.size - cq->out.count;
		int r;

		k = k < want ? k : want;
		k = k < F_PULL_BATCH ? k : F_PULL_BATCH;
		if (!k)
			return;
		r = rr_cq_poll(cq->inner, wc, (int)k);
		for (int i = 0; i < r; i++)
			want -= take(cq, &wc[i]);
		if (r < (int)k)
			return;
	}
}

/* Caller holds mu. */
static void move_synth(struct f_cq *cq)
{
	while (cq->synth.count && cq->out.count < cq->out.size) {
		struct f_cqe e = ring_pop(&cq->synth);

		ring_push(&cq->out, &e);
	}
}

static void sq_retire(struct f_qp *qp, int n)
{
	int old = atomic_load(&qp->sq_used), nv;

	/* Never below 0: retirement of unsignaled requests is an estimate. */
	do
		nv = old > n ? old - n : 0;
	while (!atomic_compare_exchange_weak(&qp->sq_used, &old, nv));
}

/*
 * A delivered Send-queue completion gives back its own slot and, when it
 * is a success, those of the unsignaled requests it covers. Unsignaled
 * requests are all taken as covered: that can only be more generous than
 * the inner provider, which still refuses what it has no room for.
 */
static void account(const struct rr_wc *wc)
{
	struct f_qp *qp = to_f_qp(wc->qp);
	int n = 1;

	if (wc->opcode == RR_WC_RECV) {
		atomic_fetch_add(&qp->recv_epoch, 1);
		return;
	}
	if (wc->status == RR_WC_SUCCESS) {
		n += atomic_exchange(&qp->unsig_out, 0);
		rr__f_guard_complete(qp, wc->wr_id);
	}
	sq_retire(qp, n);
}

static void shuffle(struct f_cq *cq, struct f_cqe *e, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(rr__f_rand(&cq->rng) % (uint64_t)(i + 1));
		struct f_cqe t = e[i];

		e[i] = e[j];
		e[j] = t;
	}
}

/* Caller holds mu. */
static int deliver(struct f_cq *cq, struct rr_wc *wc, int n)
{
	struct f_device *dev = to_f_dev(cq->base.dev);
	struct f_cqe e[64];
	int got = 0;

	if (n > 64)
		n = 64;
	while (got < n && cq->out.count)
		e[got++] = ring_pop(&cq->out);
	if (got > 1 && rr__f_roll(&cq->rng, dev->plan.reorder_ppm)) {
		shuffle(cq, e, got);
		F_COUNT(dev, batches_reordered);
	}
	for (int i = 0; i < got; i++) {
		struct f_cqe copy = {.wc = e[i].wc, .dup = true};

		wc[i] = e[i].wc;
		if (e[i].injected) {
			F_COUNT(dev, cqes_injected);
			continue;
		}
		if (e[i].dup) {
			/* Counted as delivered; accounted with the original. */
			F_COUNT(dev, cqes_duplicated);
			continue;
		}
		account(&wc[i]);
		/* A completion delivered twice: the consumer must notice. */
		if (rr__f_roll(&cq->rng, dev->plan.dup_cqe_ppm))
			ring_push(&cq->out, &copy);
	}
	return got;
}

/*
 * Inactive device: straight through. The lock keeps a QP being destroyed
 * (rr__f_qp_destroy holds it) from going away while its context is read.
 */
static int poll_direct(struct f_cq *cq, struct rr_wc *wc, int n)
{
	int r;

	pthread_mutex_lock(&cq->mu);
	r = rr_cq_poll(cq->inner, wc, n);
	for (int i = 0; i < r; i++)
		wc[i].qp = rr_qp_context(wc[i].qp);
	pthread_mutex_unlock(&cq->mu);
	return r;
}

int rr__f_cq_poll(struct rr_cq *c, struct rr_wc *wc, int n)
{
	struct f_cq *cq = to_f_cq(c);
	int got;

	if (!to_f_dev(c->dev)->active)
		return poll_direct(cq, wc, n);
	pthread_mutex_lock(&cq->mu);
	release_held(cq);
	/* Synthesized entries come after all that the inner CQ has now. */
	if (cq->synth.count)
		pull(cq, UINT32_MAX);
	else if (cq->out.count < (uint32_t)n)
		pull(cq, (uint32_t)n - cq->out.count);
	move_synth(cq);
	got = deliver(cq, wc, n);
	pthread_mutex_unlock(&cq->mu);
	return got;
}

int rr__f_cq_fd(struct rr_cq *c)
{
	return rr_cq_fd(to_f_cq(c)->inner);
}

/* Something can be delivered without waiting. */
static bool ready(struct f_cq *cq, bool take_inner)
{
	bool r;

	pthread_mutex_lock(&cq->mu);
	release_held(cq);
	if (take_inner)
		pull(cq, F_PULL_BATCH);
	r = cq->out.count || cq->synth.count;
	pthread_mutex_unlock(&cq->mu);
	return r;
}

/*
 * The inner CQ is waited on in slices: held completions become
 * releasable, and synthesized ones appear, without anything arriving in
 * the inner CQ. Inner completions are taken (and held if so decided) when
 * the inner wait returns, so a wake-up is never only for a held one.
 */
int rr__f_cq_wait(struct rr_cq *c, int timeout_ms, int fd)
{
	struct f_cq *cq = to_f_cq(c);
	uint64_t deadline =
		rr_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	bool take_inner = true;

	if (!to_f_dev(c->dev)->active)
		return rr_cq_wait_fd(cq->inner, timeout_ms, fd);
	for (;;) {
		int slice = F_WAIT_SLICE_MS, rc;

		if (ready(cq, take_inner))
			return 0;
		if (timeout_ms >= 0) {
			uint64_t now = rr_mono_ms();

			if (now >= deadline)
				return -ETIMEDOUT;
			if (deadline - now < (uint64_t)slice)
				slice = (int)(deadline - now);
		}
		rc = rr_cq_wait_fd(cq->inner, slice, fd);
		if (rc && rc != -ETIMEDOUT)
			return rc;
		take_inner = rc == 0;
	}
}
