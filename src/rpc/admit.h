/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Connection admission, shared by the server transports (DESIGN.md
 * invariant 8): which connections count as one peer's, which one a
 * newcomer may replace when the table is full, and which have missed a
 * deadline. Each transport keeps its own table and asks these; the
 * policy is the same over TCP and RDMA.
 *
 *  - One peer is one host address: its connections share max_per_peer.
 *  - A full table makes room by dropping the connection idle the longest:
 *    one that never sent a whole call first (half-open), then one whose
 *    last call is RR_ADMIT_EVICT_IDLE_MS old or more; a connection with
 *    work in progress is never chosen. Linux's sunrpc does the same for
 *    its temporary sockets.
 *  - Deadlines: a first whole call within first_call_ms of the accept,
 *    then one at least every idle_ms while nothing is in progress. A
 *    negative deadline is never reached.
 */
#ifndef RR_RPC_ADMIT_H
#define RR_RPC_ADMIT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#define RR_ADMIT_EVICT_IDLE_MS 1000

/* What admission needs to know of one connection. */
struct rr__admit_conn {
	uint64_t born_ms;      /* accepted */
	uint64_t last_call_ms; /* last whole call; 0: none yet */
	bool busy;	       /* calls in progress or replies queued */
};

/* Whether a and b are the same host, whatever their ports. */
static inline bool rr__admit_same_host(const struct sockaddr_storage *a,
				       const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&a6->sin6_addr, &b6->sin6_addr, 16) == 0;
	return true;
}

/*
 * How much c deserves to make room for a newcomer: 0 for never, and the
 * higher the sooner. min_idle_ms: how long a never-called connection
 * must have existed to be chosen (0: at once).
 */
static inline uint64_t rr__admit_evict_rank(const struct rr__admit_conn *c,
					    uint64_t now, uint64_t min_idle_ms)
{
	uint64_t since = c->last_call_ms ? c->last_call_ms : c->born_ms;
	uint64_t idle = now - since;

	if (c->busy)
		return 0;
	if (!c->last_call_ms)
		return idle >= min_idle_ms ? (UINT64_C(1) << 40) + idle + 1 : 0;
	return idle >= RR_ADMIT_EVICT_IDLE_MS ? idle + 1 : 0;
}

static inline bool rr__admit_past(int limit_ms, uint64_t since, uint64_t now)
{
	return limit_ms >= 0 && now - since >= (uint64_t)limit_ms;
}

/* Whether c, idle, missed its first-call or its idle deadline. */
static inline bool rr__admit_overdue(const struct rr__admit_conn *c,
				     int first_call_ms, int idle_ms,
				     uint64_t now)
{
	if (c->busy)
		return false;
	if (!c->last_call_ms)
		return rr__admit_past(first_call_ms, c->born_ms, now);
	return rr__admit_past(idle_ms, c->last_call_ms, now);
}

#endif
