/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What walks of the export (fh.c's search, for handles the caches do not
 * know) may cost. A walk reads every directory of the export: one client
 * sending handles of removed files, each different, made the server read
 * the whole tree for each of them and starved everyone else.
 *
 * So directories read by walks are paid from token buckets (fh.c says
 * what one costs: more when it is large or slow): one for the
 * whole server (walk_dirs_per_s, so all walks together cost a bounded
 * share of the CPU) and one per client address (walk_dirs_per_peer_s,
 * its fair share of that). Each holds a second of its rate at most. A
 * walk starts only while both hold tokens and fewer than walks_at_once
 * others run (so walks never occupy more than that many of the workers
 * other calls need); it pays for each directory as it reads it and may
 * leave the buckets in debt, which later walks wait out: over time the
 * rates hold, and a walk of an export larger than a second's budget
 * still completes. A client that has not walked for a second (its bucket
 * full) may start one even while others keep the server's bucket empty,
 * down to a second of debt: flooding from many addresses cannot lock a
 * quiet client out of finding its file.
 *
 * A walk refused is answered NFS3ERR_JUKEBOX (try again later), never
 * STALE: a client takes STALE as final.
 *
 * Addresses map to buckets through the server's keyed hash, so that no
 * client can choose to share a bucket with another; two that happen to
 * share one share its rate.
 */
#include "nfs3/server/nfsd.h"
#include "base/alloc.h"
#include "base/clock.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define PEER_SLOTS 1024

/* Levels are in thousandths of a directory: refills are then exact. */
struct bucket {
	int64_t level;
	uint64_t at_ms;
};

struct nfsd_walk_budget {
	pthread_mutex_t lock;
	uint32_t rate, peer_rate, at_once, walking;
	struct bucket all;
	struct bucket peer[PEER_SLOTS];
};

static void refill(struct bucket *b, uint32_t rate, uint64_t now)
{
	int64_t full = (int64_t)rate * 1000;

	if (now > b->at_ms) {
		b->level += (int64_t)(now - b->at_ms) * rate;
		b->at_ms = now;
	}
	if (b->level > full)
		b->level = full;
}

int rr__nfsd_walk_budget_create(const struct rr_nfs3_server_opts *o,
				struct nfsd_walk_budget **out)
{
	struct nfsd_walk_budget *wb = rr_calloc(1, sizeof(*wb));
	uint64_t now = rr_coarse_ms();

	if (!wb)
		return -ENOMEM;
	pthread_mutex_init(&wb->lock, NULL);
	wb->rate =
		o->walk_dirs_per_s ? o->walk_dirs_per_s : NFSD_WALK_DIRS_PER_S;
	wb->peer_rate = o->walk_dirs_per_peer_s ? o->walk_dirs_per_peer_s
						: (wb->rate + 3) / 4;
	wb->at_once = o->walks_at_once ? o->walks_at_once : 1;
	wb->all = (struct bucket){(int64_t)wb->rate * 1000, now};
	for (size_t i = 0; i < PEER_SLOTS; i++)
		wb->peer[i] =
			(struct bucket){(int64_t)wb->peer_rate * 1000, now};
	*out = wb;
	return 0;
}

void rr__nfsd_walk_budget_destroy(struct nfsd_walk_budget *wb)
{
	if (!wb)
		return;
	pthread_mutex_destroy(&wb->lock);
	free(wb);
}

/* The bucket of the call's client address. */
static size_t peer_slot(const struct rr_nfs3_server *s,
			const struct sockaddr *sa)
{
	const void *addr = NULL;
	size_t len = 0;
	uint8_t h[8];

	if (sa && sa->sa_family == AF_INET) {
		addr = &((const struct sockaddr_in *)sa)->sin_addr;
		len = sizeof(struct in_addr);
	} else if (sa && sa->sa_family == AF_INET6) {
		addr = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		len = sizeof(struct in6_addr);
	}
	if (!len)
		return 0;
	rr__nfsd_siphash(s->key, addr, len, h);
	return (size_t)(h[0] | h[1] << 8) % PEER_SLOTS;
}

int rr__nfsd_walk_begin(struct rr_nfs3_server *s, const struct sockaddr *peer,
			size_t *slot)
{
	struct nfsd_walk_budget *wb = s->walks;
	uint64_t now = rr_coarse_ms();
	struct bucket *p;
	bool idle, ok;

	*slot = peer_slot(s, peer);
	pthread_mutex_lock(&wb->lock);
	p = &wb->peer[*slot];
	refill(&wb->all, wb->rate, now);
	refill(p, wb->peer_rate, now);
	idle = p->level == (int64_t)wb->peer_rate * 1000;
	ok = wb->walking < wb->at_once && p->level > 0 &&
	     (wb->all.level > 0 ||
	      (idle && wb->all.level > -(int64_t)wb->rate * 1000));
	if (ok)
		wb->walking++;
	pthread_mutex_unlock(&wb->lock);
	if (!ok) {
		atomic_fetch_add(&s->walks_refused, 1);
		return -EAGAIN;
	}
	atomic_fetch_add(&s->searches, 1);
	return 0;
}

void rr__nfsd_walk_pay(struct rr_nfs3_server *s, size_t slot, uint32_t dirs)
{
	struct nfsd_walk_budget *wb = s->walks;

	pthread_mutex_lock(&wb->lock);
	wb->all.level -= (int64_t)dirs * 1000;
	wb->peer[slot].level -= (int64_t)dirs * 1000;
	pthread_mutex_unlock(&wb->lock);
}

void rr__nfsd_walk_end(struct rr_nfs3_server *s)
{
	struct nfsd_walk_budget *wb = s->walks;

	pthread_mutex_lock(&wb->lock);
	wb->walking--;
	pthread_mutex_unlock(&wb->lock);
}
