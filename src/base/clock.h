/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one clock timeouts use: monotonic, so wall-clock steps don't fire them.
 */
#ifndef RR_BASE_CLOCK_H
#define RR_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t rr_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
