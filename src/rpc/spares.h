/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Spare buffers of one size, kept for reuse: a buffer lent to an output
 * queue (tcp_io.h) is replaced from here and comes back here once sent,
 * so a busy server allocates (and faults in) no buffer per reply. At most
 * keep spares are held; one given back beyond that is freed, so what the
 * pool holds is bounded whatever a peer does.
 */
#ifndef RR_RPC_SPARES_H
#define RR_RPC_SPARES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rr__spares {
	pthread_mutex_t mu;
	void **spare;
	uint32_t n, keep;
	size_t size;
};

int rr__spares_init(struct rr__spares *p, size_t size, uint32_t keep);
void rr__spares_fini(struct rr__spares *p);
/* A buffer of p's size: a spare, or a new one; NULL when out of memory. */
void *rr__spares_get(struct rr__spares *p);
void rr__spares_put(struct rr__spares *p, void *buf);
/* Whether a buffer given back now would be kept (racy: a hint). */
bool rr__spares_room(struct rr__spares *p);
/* A spare if there is one, else NULL: never allocates. */
void *rr__spares_take(struct rr__spares *p);

#endif
