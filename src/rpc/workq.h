/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The queue between a server's loop thread and its workers, for every
 * transport: FIFO, intrusive (the item is part of the call it carries, so
 * queuing allocates nothing), and stopping without losing work: after
 * rr__workq_stop, what was queued is still handed out, then NULL.
 */
#ifndef RR_RPC_WORKQ_H
#define RR_RPC_WORKQ_H

#include <pthread.h>
#include <stdbool.h>

struct rr_work {
	struct rr_work *next;
};

struct rr_workq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rr_work *head, *tail;
	bool stop;
};

void rr__workq_init(struct rr_workq *q);
void rr__workq_fini(struct rr_workq *q);
void rr__workq_push(struct rr_workq *q, struct rr_work *w);
/* Waits for the next item; NULL once stopped and empty. */
struct rr_work *rr__workq_pop(struct rr_workq *q);
/* Wakes every waiter; the items still queued are handed out first. */
void rr__workq_stop(struct rr_workq *q);

#endif
