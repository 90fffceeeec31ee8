/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/log.h"

#include <stdarg.h>
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
