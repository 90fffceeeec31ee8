// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rpc/workq.h"

void rr__workq_init(struct rr_workq *q)
{
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	q->head = q->tail = NULL;
	q->stop = false;
}

void rr__workq_fini(struct rr_workq *q)
{
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
}

void rr__workq_push(struct rr_workq *q, struct rr_work *w)
{
	w->next = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->tail)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

struct rr_work *rr__workq_pop(struct rr_workq *q)
{
	struct rr_work *w;

	pthread_mutex_lock(&q->mu);
	while (!q->head && !q->stop)
		pthread_cond_wait(&q->cv, &q->mu);
	w = q->head;
	if (w) {
		q->head = w->next;
		if (!q->head)
			q->tail = NULL;
	}
	pthread_mutex_unlock(&q->mu);
	return w;
}

void rr__workq_stop(struct rr_workq *q)
{
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}
