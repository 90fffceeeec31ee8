// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One call's synchronous caller (call_wait.h). */
#include "rpc/call_wait.h"

void rr__call_wait_init(struct rr_call_wait *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->done = false;
	w->rc = 0;
}

void rr__call_wait_fini(struct rr_call_wait *w)
{
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
}

void rr__call_wait_done(struct rr_call *call, int rc, void *arg)
{
	struct rr_call_wait *w = arg;

	(void)call;
	pthread_mutex_lock(&w->mu);
	w->rc = rc;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

int rr__call_wait_end(struct rr_call_wait *w)
{
	int rc;

	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	rc = w->rc;
	pthread_mutex_unlock(&w->mu);
	return rc;
}
