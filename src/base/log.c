/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/log.h"

#include "base/clock.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int rr__log_level = RR_LOG_WARN;

__attribute__((constructor)) void rr__log_init(void)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	const char *env = getenv("RPCRDMA_LOG");

	if (!env)
		return;
	for (int i = 0; i < 4; i++)
		if (strcmp(env, names[i]) == 0)
			rr__log_level = i;
}

void rr__log(enum rr_log_level lvl, const char *file, int line, const char *fmt,
	     ...)
{
	static const char tag[] = "EWID";
	struct timespec ts;
	char msg[512];
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One fprintf per line so concurrent threads do not interleave. */
	fprintf(stderr, "%c %ld.%06ld %s:%d: %s\n", tag[lvl], (long)ts.tv_sec,
		ts.tv_nsec / 1000, file, line, msg);
}

long rr__log_rl_admit(struct rr__log_rl *rl)
{
	unsigned long long now = rr_coarse_ms();
	unsigned long long start = atomic_load(&rl->window_start_ms);

	/* One thread wins the move to a new window; it reports the losses. */
	if (now - start >= RR_LOG_WINDOW_MS &&
	    atomic_compare_exchange_strong(&rl->window_start_ms, &start, now)) {
		atomic_store(&rl->in_window, 1);
		return (long)atomic_exchange(&rl->suppressed, 0);
	}
	if (atomic_fetch_add(&rl->in_window, 1) < RR_LOG_BURST)
		return 0;
	atomic_fetch_add(&rl->suppressed, 1);
	return -1;
}
