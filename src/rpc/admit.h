/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Connection admission, shared by the server transports (architecture.md
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
 *  - Penalties: a peer dropped for misbehaving (over RDMA: holding shared
 *    bulk buffers past the stall bound) is remembered by host address for
 *    a back-off that doubles on each repeat, from base_ms up to max_ms,
 *    and starts again from base_ms once the peer has stayed clear of it
 *    for max_ms after its last penalty ended. What a penalised peer may
 *    not do is the transport's to say. The table is fixed (no allocation
 *    a peer can cause); when it is full the entry that expired longest
 *    ago, else the one ending soonest, is reused.
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

/* One host's penalty record; until_ms 0: the slot is free. */
struct rr__admit_penalty {
	struct sockaddr_storage host;
	uint64_t until_ms;
	uint32_t backoff_ms;
};

/* The entry of peer in t[0..n), or NULL. */
static inline struct rr__admit_penalty *
rr__admit_penalty_of(struct rr__admit_penalty *t, uint32_t n,
		     const struct sockaddr_storage *peer)
{
	for (uint32_t i = 0; i < n; i++)
		if (t[i].until_ms && rr__admit_same_host(&t[i].host, peer))
			return &t[i];
	return NULL;
}

/* A slot for a new entry: free, else the one ending first. */
static inline struct rr__admit_penalty *
rr__admit_penalty_slot(struct rr__admit_penalty *t, uint32_t n)
{
	struct rr__admit_penalty *best = &t[0];

	for (uint32_t i = 0; i < n; i++) {
		if (!t[i].until_ms)
			return &t[i];
		if (t[i].until_ms < best->until_ms)
			best = &t[i];
	}
	return best;
}

/* Until when a penalty of peer runs (0: none now). */
static inline uint64_t
rr__admit_penalty_until(struct rr__admit_penalty *t, uint32_t n,
			const struct sockaddr_storage *peer, uint64_t now)
{
	const struct rr__admit_penalty *p = rr__admit_penalty_of(t, n, peer);

	return p && p->until_ms > now ? p->until_ms : 0;
}

/*
 * Penalises peer from now; returns until when. A peer already under
 * penalty keeps the one it has: its connections dropped together (in one
 * scan) are one offence.
 */
static inline uint64_t rr__admit_penalise(struct rr__admit_penalty *t,
					  uint32_t n,
					  const struct sockaddr_storage *peer,
					  uint64_t now, uint32_t base_ms,
					  uint32_t max_ms)
{
	struct rr__admit_penalty *p = rr__admit_penalty_of(t, n, peer);
	uint32_t b = base_ms;

	if (p && now < p->until_ms)
		return p->until_ms;
	if (p && now < p->until_ms + max_ms)
		b = p->backoff_ms < max_ms / 2 ? 2 * p->backoff_ms : max_ms;
	if (!p) {
		p = rr__admit_penalty_slot(t, n);
		p->host = *peer;
	}
	if (b < base_ms)
		b = base_ms;
	p->backoff_ms = b;
	p->until_ms = now + b;
	return p->until_ms;
}

#endif
