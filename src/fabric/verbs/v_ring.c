/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A QP queue's slots: one per posted request, from its post until the
 * completion that retires it is polled (v.h, "Accounting").
 *
 * A slot goes back as soon as its request is retired, in whatever order
 * that happens: siw completes an RDMA Read when its response arrives,
 * after Sends posted later, and a queue that gave slots back only in
 * posting order would fill behind one slow Read while the device's own
 * queue had room. Unsignaled requests are the exception that needs
 * posting order: any completion retires those posted before it, so they
 * wait in a FIFO of their own.
 *
 * Posting (under v_qp.mu) takes from the free list and appends to the
 * FIFO; polling (under the CQ's mu) gives back to the free list and pops
 * the FIFO. Each list is a ring of indices with one producer and one
 * consumer, its count atomic.
 */
#include "v.h"

#include "base/alloc.h"

#include <stdlib.h>

int rr__v_ring_init(struct v_ring *r, uint32_t size)
{
	r->s = rr_calloc(size, sizeof(*r->s));
	r->free = rr_calloc(size, sizeof(*r->free));
	r->uns = rr_calloc(size, sizeof(*r->uns));
	r->order = rr_calloc(size, sizeof(*r->order));
	r->size = size;
	if (!r->s || !r->free || !r->uns || !r->order) {
		rr__v_ring_fini(r);
		return -ENOMEM;
	}
	rr__v_ring_reset(r);
	return 0;
}

void rr__v_ring_fini(struct v_ring *r)
{
	free(r->s);
	free(r->free);
	free(r->uns);
	free(r->order);
	r->s = NULL;
	r->free = r->uns = NULL;
	r->order = NULL;
}

/* Caller holds the CQ's mu and v_qp.mu; nothing is posted. */
void rr__v_ring_reset(struct v_ring *r)
{
	for (uint32_t i = 0; i < r->size; i++) {
		r->s[i].live = false;
		r->s[i].queued = false;
		r->free[i] = i;
	}
	r->free_head = r->free_tail = 0;
	r->uns_head = r->uns_tail = 0;
	atomic_store(&r->nfree, r->size);
	atomic_store(&r->nuns, 0);
}

uint32_t rr__v_ring_used(struct v_ring *r)
{
	return r->size - atomic_load(&r->nfree);
}

/* ------------------------------------------------------ posting side */

/* The k-th free slot, for the k-th request of one post; NULL: none. */
struct v_slot *rr__v_slot_take(struct v_ring *r, uint32_t k)
{
	if (k >= atomic_load_explicit(&r->nfree, memory_order_acquire))
		return NULL;
	return &r->s[r->free[(r->free_head + k) % r->size]];
}

/*
 * Fills a slot taken; its seq and live are rr__v_slot_publish's, and its
 * queued is the CQ side's.
 */
void rr__v_slot_fill(struct v_slot *s, struct v_qp *qp, uint64_t wr_id,
		     uint32_t len, uint8_t op, bool signaled)
{
	s->qp = qp;
	s->wr_id = wr_id;
	s->len = len;
	s->op = op;
	s->signaled = signaled;
}

/*
 * Makes the k-th slot taken, filled (rr__v_slot_fill), live before its
 * request goes to the device. The release pairs with v_cq.c's slot_of:
 * the device orders the two (rdma-core's barriers around the doorbell and
 * the CQ ring), but a race detector cannot see that. An unsignaled
 * request joins the FIFO now, so that a completion polled in another
 * thread the moment it is posted finds it.
 */
void rr__v_slot_publish(struct v_ring *r, struct v_slot *s, uint32_t k)
{
	/*
	 * Atomic, as a completion being retired in another thread may read
	 * it (rr__v_ring_retire) while this slot, given back by an earlier post
	 * that failed, is taken again; either value lies past that
	 * completion's.
	 */
	__atomic_store_n(&s->seq, r->posted + k, __ATOMIC_RELAXED);
	if (!s->signaled) {
		r->uns[r->uns_tail] = (uint32_t)(s - r->s);
		r->uns_tail = (r->uns_tail + 1) % r->size;
		atomic_fetch_add_explicit(&r->nuns, 1, memory_order_release);
	}
	__atomic_store_n(&s->live, true, __ATOMIC_RELEASE);
}

/*
 * Of the n slots taken and published, the device took the first done:
 * they leave the free list. The rest were never posted; the unsignaled
 * among them leave the FIFO's tail (no completion can pop them, as each
 * lies past every posted request).
 */
void rr__v_slot_commit(struct v_ring *r, uint32_t n, uint32_t done)
{
	for (uint32_t k = done; k < n; k++) {
		struct v_slot *s = &r->s[r->free[(r->free_head + k) % r->size]];

		if (!s->signaled) {
			r->uns_tail = (r->uns_tail + r->size - 1) % r->size;
			atomic_fetch_sub(&r->nuns, 1);
		}
		__atomic_store_n(&s->live, false, __ATOMIC_RELAXED);
	}
	r->free_head = (r->free_head + done) % r->size;
	r->posted += done;
	atomic_fetch_sub(&r->nfree, done);
}

/* ------------------------------------------------------ polling side */

static void give_back(struct v_ring *r, struct v_slot *s)
{
	s->live = false;
	r->free[r->free_tail] = (uint32_t)(s - r->s);
	r->free_tail = (r->free_tail + 1) % r->size;
	atomic_fetch_add_explicit(&r->nfree, 1, memory_order_release);
}

/*
 * A completion retires its own request and every unsignaled one posted
 * before it; signaled ones before it keep their slots until their own
 * completions. Caller holds the CQ's mu.
 */
void rr__v_ring_retire(struct v_ring *r, struct v_slot *s)
{
	uint32_t n = atomic_load_explicit(&r->nuns, memory_order_acquire),
		 popped = 0;

	while (popped < n) {
		struct v_slot *u = &r->s[r->uns[r->uns_head]];

		if (__atomic_load_n(&u->seq, __ATOMIC_RELAXED) > s->seq)
			break;
		r->uns_head = (r->uns_head + 1) % r->size;
		popped++;
		give_back(r, u);
	}
	atomic_fetch_sub(&r->nuns, popped);
	if (s->signaled && s->live)
		give_back(r, s);
}

static int by_seq(const void *a, const void *b)
{
	const struct v_slot *x = *(struct v_slot *const *)a,
			    *y = *(struct v_slot *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The live requests posted before marker, in posting order, in r->order;
 * returns their count. Caller holds the CQ's mu.
 */
uint32_t rr__v_ring_before(struct v_ring *r, const struct v_slot *marker)
{
	struct v_slot **out = r->order;
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->size; i++) {
		struct v_slot *s = &r->s[i];

		/* a post may be publishing a slot meanwhile: read as
		 * rr__v_slot_publish writes */
		if (__atomic_load_n(&s->live, __ATOMIC_ACQUIRE) &&
		    s != marker &&
		    __atomic_load_n(&s->seq, __ATOMIC_RELAXED) < marker->seq)
			out[n++] = s;
	}
	qsort(out, n, sizeof(*out), by_seq);
	return n;
}
