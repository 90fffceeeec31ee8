/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reconnecting, the part both clients share: the defaults of the connect
 * options, and how long a lost connection waits before its next attempt.
 * The first wait is none, the next 100 ms, and each after that doubles up
 * to reconnect_max_ms. A reply on a connection shows the server back, so
 * the next loss starts again from no wait: a server restart costs one
 * quick retry, a server that stays away costs one attempt per cap.
 */
#ifndef RR_RPC_BACKOFF_H
#define RR_RPC_BACKOFF_H

#include <stdint.h>

#define RR_CONNECT_DEFAULT_MS	    10000
#define RR_RECONNECT_MAX_DEFAULT_MS 5000
#define RR_BACKOFF_FIRST_MS	    100

struct rr_backoff {
	uint32_t next_ms; /* the wait after the next failure */
};

/* Fills in the options' defaults: 0 (or less, for the cap) means them. */
static inline void rr__backoff_opts(int *connect_timeout_ms,
				    int *reconnect_max_ms)
{
	if (!*connect_timeout_ms)
		*connect_timeout_ms = RR_CONNECT_DEFAULT_MS;
	if (*reconnect_max_ms <= 0)
		*reconnect_max_ms = RR_RECONNECT_MAX_DEFAULT_MS;
}

/* A connection was lost at now: when the next attempt may go. */
static inline uint64_t rr__backoff_next(struct rr_backoff *b, uint64_t now,
					int reconnect_max_ms)
{
	uint64_t at = now + b->next_ms;

	b->next_ms = b->next_ms ? b->next_ms * 2 : RR_BACKOFF_FIRST_MS;
	if (b->next_ms > (uint32_t)reconnect_max_ms)
		b->next_ms = (uint32_t)reconnect_max_ms;
	return at;
}

/* A reply on the connection: the next loss retries at once. */
static inline void rr__backoff_reset(struct rr_backoff *b)
{
	b->next_ms = 0;
}

#endif
