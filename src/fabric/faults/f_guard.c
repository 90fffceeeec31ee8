/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The send-buffer guard (plan.guard_sends): checks invariant 2 from below.
 * Hardware may read a Send's memory at any time until the Send completes;
 * our providers copy it at post, so a transport that reuses a send buffer
 * early would go unnoticed. The guard notes a CRC of each Send's memory at
 * post and checks it again when the first completion that covers the Send
 * (its own, or a later signaled one of the same send queue) is delivered:
 * a difference means the memory was reused while the Send was still, as
 * far as the transport could know, in flight.
 */
#include "fabric/faults/f.h"
#include "base/alloc.h"

#include "base/crc32c.h"

#include <errno.h>
#include <stdlib.h>

struct f_guard_ent {
	uint64_t seq;
	uint64_t wr_id;
	bool signaled;
	bool is_send;
	uint32_t crc;
	uint32_t nsge;
	struct rr_sge sge[4];
};

struct f_guard {
	pthread_mutex_t mu;
	struct f_guard_ent *ring;
	uint32_t size, head, count;
	uint64_t seq;
};

static uint32_t crc_of(const struct rr_sge *sge, uint32_t n)
{
	uint32_t c = RR_CRC32C_INIT;

	for (uint32_t i = 0; i < n; i++)
		c = rr__crc32c_update(c, (const void *)(uintptr_t)sge[i].addr,
				      sge[i].length);
	return rr_crc32c_final(c);
}

int rr__f_guard_init(struct f_qp *qp)
{
	struct f_guard *g;

	if (!qp->dev->plan.guard_sends)
		return 0;
	g = rr_calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->size = qp->base.attr.sq_depth * 2 + 16;
	g->ring = rr_calloc(g->size, sizeof(*g->ring));
	if (!g->ring) {
		free(g);
		return -ENOMEM;
	}
	pthread_mutex_init(&g->mu, NULL);
	qp->guard = g;
	return 0;
}

void rr__f_guard_fini(struct f_qp *qp)
{
	if (!qp->guard)
		return;
	pthread_mutex_destroy(&qp->guard->mu);
	free(qp->guard->ring);
	free(qp->guard);
	qp->guard = NULL;
}

/* A reset QP: nothing of the old connection is in flight any more. */
void rr__f_guard_reset(struct f_qp *qp)
{
	struct f_guard *g = qp->guard;

	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	g->head = g->count = 0;
	pthread_mutex_unlock(&g->mu);
}

static bool overlaps(const struct rr_sge *a, uint32_t na,
		     const struct rr_sge *b, uint32_t nb)
{
	for (uint32_t i = 0; i < na; i++)
		for (uint32_t k = 0; k < nb; k++)
			if (a[i].addr < b[k].addr + b[k].length &&
			    b[k].addr < a[i].addr + a[i].length)
				return true;
	return false;
}

/*
 * Caller holds g->mu. A new Send over memory of a Send not yet covered by
 * a delivered completion: the transport reused a buffer too early (caught
 * here at once; the CRC check below catches other writes).
 */
static void check_reuse(struct f_qp *qp, const struct rr_send_wr *wr)
{
	struct f_guard *g = qp->guard;

	for (uint32_t i = 0; i < g->count; i++) {
		const struct f_guard_ent *e = &g->ring[(g->head + i) % g->size];

		if (e->is_send &&
		    overlaps(e->sge, e->nsge, wr->sg_list, wr->num_sge))
			F_COUNT(qp->dev, send_bufs_modified);
	}
}

/* A send-queue request went to the inner QP. */
void rr__f_guard_post(struct f_qp *qp, const struct rr_send_wr *wr)
{
	struct f_guard *g = qp->guard;
	struct f_guard_ent *e;

	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	if (wr->opcode == RR_WR_SEND || wr->opcode == RR_WR_SEND_WITH_INV)
		check_reuse(qp, wr);
	if (g->count == g->size) {
		/* Should not happen (sized above the queue): forget the oldest.
		 */
		g->head = (g->head + 1) % g->size;
		g->count--;
	}
	e = &g->ring[(g->head + g->count++) % g->size];
	*e = (struct f_guard_ent){.seq = ++g->seq,
				  .wr_id = wr->wr_id,
				  .signaled = wr->flags & RR_SEND_SIGNALED,
				  .is_send = wr->opcode == RR_WR_SEND ||
					     wr->opcode == RR_WR_SEND_WITH_INV};
	if (e->is_send && wr->num_sge <= 4) {
		e->nsge = wr->num_sge;
		for (uint32_t i = 0; i < wr->num_sge; i++)
			e->sge[i] = wr->sg_list[i];
		e->crc = crc_of(e->sge, e->nsge);
	}
	pthread_mutex_unlock(&g->mu);
}

/*
 * A successful send-queue completion is being delivered: every request
 * posted up to the one it names is retired; check the Sends among them.
 */
void rr__f_guard_complete(struct f_qp *qp, uint64_t wr_id)
{
	struct f_guard *g = qp->guard;
	uint32_t upto = 0;
	bool found = false;

	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	for (uint32_t i = 0; i < g->count && !found; i++) {
		const struct f_guard_ent *e = &g->ring[(g->head + i) % g->size];

		found = e->signaled && e->wr_id == wr_id;
		upto = i + 1;
	}
	if (found) {
		while (upto--) {
			struct f_guard_ent *e = &g->ring[g->head];

			if (e->is_send && e->nsge &&
			    crc_of(e->sge, e->nsge) != e->crc)
				F_COUNT(qp->dev, send_bufs_modified);
			g->head = (g->head + 1) % g->size;
			g->count--;
		}
	}
	pthread_mutex_unlock(&g->mu);
}
