/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/ticker.h"
#include "base/clock.h"

#include <signal.h>
#include <time.h>

static void *tick_main(void *arg)
{
	struct rr_ticker *t = arg;
	struct timespec at;

	pthread_setname_np(pthread_self(), "rr-ticker");

	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		pthread_mutex_unlock(&t->mu);
		t->fn(t->arg);
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += t->period_ms / 1000;
		at.tv_nsec += (long)(t->period_ms % 1000) * 1000000L;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&t->mu);
		while (!t->stop &&
		       pthread_cond_timedwait(&t->wake, &t->mu, &at) == 0)
			;
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int rr__ticker_start(struct rr_ticker *t, unsigned period_ms,
		     void (*fn)(void *arg), void *arg)
{
	sigset_t all, old;
	int rc;

	*t = (struct rr_ticker){.period_ms = period_ms, .fn = fn, .arg = arg};
	pthread_mutex_init(&t->mu, NULL);
	rr_cond_init_mono(&t->wake);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&t->th, NULL, tick_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&t->wake);
		pthread_mutex_destroy(&t->mu);
		return rc;
	}
	t->running = true;
	return 0;
}

void rr__ticker_stop(struct rr_ticker *t)
{
	if (!t->running)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->th, NULL);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->mu);
	t->running = false;
}
