/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A thread that runs one function at a fixed period until stopped: the
 * housekeeping (reapers, watchdogs) that must not ride a caller's path.
 */
#ifndef RR_BASE_TICKER_H
#define RR_BASE_TICKER_H

#include "base/log.h" /* RR__SHARED */

#include <pthread.h>
#include <stdbool.h>

struct rr_ticker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t wake;
	bool stop, running;
	unsigned period_ms;
	void (*fn)(void *arg);
	void *arg;
};

/*
 * Starts t calling fn(arg) now and then every period_ms, on a thread of
 * its own that takes no signals (they are the process's threads'). 0 or a
 * negative errno.
 */
RR__SHARED int rr__ticker_start(struct rr_ticker *t, unsigned period_ms,
				void (*fn)(void *arg), void *arg);
/* Waits out a running fn and ends the thread; a t never started is fine. */
RR__SHARED void rr__ticker_stop(struct rr_ticker *t);

#endif
