// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rpc/conn_info.h"

#include "base/clock.h"

#include <time.h>

static uint64_t load(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void rr__conn_info_fill(struct rr_svc_conn_info *info,
			const struct rr__conn_ctr *c, uint64_t born_coarse_ms)
{
	uint64_t now = rr_coarse_ms();

	/* The monotonic clock keeps the age right across wall-clock steps. */
	info->age_ms = now > born_coarse_ms ? now - born_coarse_ms : 0;
	info->since_ms = wall_ms() - info->age_ms;
	info->calls = load(&c->calls);
	info->replies = load(&c->replies);
	info->bytes_in = load(&c->bytes_in);
	info->bytes_out = load(&c->bytes_out);
	info->errors = load(&c->errors);
}
