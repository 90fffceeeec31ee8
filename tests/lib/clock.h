/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Time for tests: CLOCK_MONOTONIC, so deadlines and measured intervals
 * do not jump with the wall clock.
 */
#ifndef RR_TEST_LIB_CLOCK_H
#define RR_TEST_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t rr_t_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static inline uint64_t rr_t_now_ms(void)
{
	return rr_t_now_us() / 1000;
}

/* An absolute CLOCK_REALTIME time tmo_ms from now, for timed waits. */
static inline struct timespec rr_t_realtime_in(int tmo_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(tmo_ms % 1000) * 1000000;
	ts.tv_sec += tmo_ms / 1000 + ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

#endif
