/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one clock timeouts use: monotonic, so wall-clock steps don't fire them.
 */
#ifndef RR_BASE_CLOCK_H
#define RR_BASE_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t rr_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * The same clock at the kernel's tick (1-10 ms), for bookkeeping per call
 * that is coarse anyway (cache ages, stall bounds of seconds). It never
 * makes a system call: where the clock source has no vDSO reader (hpet,
 * as in a TCG guest) rr_mono_ms makes one per read. Compare its values
 * only with its own: it may lag rr_mono_ms by a tick.
 */
static inline uint64_t rr_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A condition variable whose timed waits run on the monotonic clock. */
static inline void rr_cond_init_mono(pthread_cond_t *cv)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

/* A timed wait of ms on such a condition variable. */
static inline int rr_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu,
				  int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return pthread_cond_timedwait(cv, mu, &ts);
}

#endif
