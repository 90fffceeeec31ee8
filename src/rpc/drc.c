/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Duplicate request cache: a hash of chains over a fixed array of entries;
 * a clock hand picks the entry to reuse, skipping calls still running.
 */
#include "rpc/drc.h"
#include "base/alloc.h"

#include "base/crc32c.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum entry_state { E_FREE, E_RUNNING, E_DONE };

struct rr_drc_entry {
	struct rr_drc_key k;
	enum entry_state state;
	int32_t next; /* chain in its bucket, -1 ends */
	struct rr_reply_hdr rh;
	uint32_t res_len;
};

int rr__drc_init(struct rr_drc *d, uint32_t entries, uint32_t max_res)
{
	memset(d, 0, sizeof(*d));
	d->n = entries;
	d->max_res = max_res;
	d->e = rr_calloc(entries, sizeof(*d->e));
	d->bucket = rr_malloc(entries * sizeof(*d->bucket));
	d->res = rr_malloc((size_t)entries * max_res);
	if (!d->e || !d->bucket || !d->res) {
		rr__drc_fini(d);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < entries; i++)
		d->bucket[i] = -1;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	return 0;
}

void rr__drc_fini(struct rr_drc *d)
{
	if (d->e && d->bucket && d->res) {
		pthread_mutex_destroy(&d->mu);
		pthread_cond_destroy(&d->cv);
	}
	free(d->e);
	free(d->bucket);
	free(d->res);
	memset(d, 0, sizeof(*d));
}

void rr__drc_key_of(struct rr_drc_key *k, const struct sockaddr *peer,
		    const struct rr_call_hdr *h, const void *args, size_t len,
		    const void *bulk, size_t bulk_len)
{
	uint32_t n = (uint32_t)len;
	/* Over TCP a WRITE's data is in its arguments: the same bound. */
	uint32_t sum = rr__crc32c_update(
		RR_CRC32C_INIT, args,
		len < RR_DRC_SUM_ARGS ? len : RR_DRC_SUM_ARGS);

	sum = rr__crc32c_update(sum, &n, sizeof(n));
	memset(k, 0, sizeof(*k));
	if (peer && peer->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)peer;

		k->addr[10] = k->addr[11] = 0xff;
		memcpy(k->addr + 12, &s->sin_addr, 4);
	} else if (peer && peer->sa_family == AF_INET6) {
		memcpy(k->addr,
		       &((const struct sockaddr_in6 *)(const void *)peer)
				->sin6_addr,
		       16);
	}
	/* Enough of a WRITE's data to tell calls apart, as the kernel's nfsd
	 * does, without a pass over a megabyte per call. */
	if (bulk_len)
		sum = rr__crc32c_update(sum, bulk,
					bulk_len < RR_DRC_SUM_BULK
						? bulk_len
						: RR_DRC_SUM_BULK);
	k->xid = h->xid;
	k->prog = h->prog;
	k->vers = h->vers;
	k->proc = h->proc;
	k->sum = rr_crc32c_final(sum);
}

static uint32_t bucket_of(const struct rr_drc *d, const struct rr_drc_key *k)
{
	return (k->xid * 2654435761u ^ k->sum) % d->n;
}

static int32_t find(const struct rr_drc *d, const struct rr_drc_key *k)
{
	for (int32_t i = d->bucket[bucket_of(d, k)]; i >= 0; i = d->e[i].next)
		if (!memcmp(&d->e[i].k, k, sizeof(*k)))
			return i;
	return -1;
}

static void unlink_entry(struct rr_drc *d, int32_t i)
{
	int32_t *pp = &d->bucket[bucket_of(d, &d->e[i].k)];

	while (*pp != i)
		pp = &d->e[*pp].next;
	*pp = d->e[i].next;
	d->e[i].state = E_FREE;
}

/* An entry to reuse: the next one round the clock not running. */
static int32_t victim(struct rr_drc *d)
{
	for (uint32_t tries = 0; tries < d->n; tries++) {
		int32_t i = (int32_t)(d->hand++ % d->n);

		if (d->e[i].state == E_RUNNING)
			continue;
		if (d->e[i].state == E_DONE)
			unlink_entry(d, i);
		return i;
	}
	return -1; /* every entry runs: too many calls to track */
}

/* Caller holds mu. The entry of k once it is not running (or the wait ended).
 */
static int32_t wait_not_running(struct rr_drc *d, const struct rr_drc_key *k)
{
	struct timespec until;
	int32_t i = find(d, k);

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += RR_DRC_WAIT_MS / 1000;
	while (i >= 0 && d->e[i].state == E_RUNNING) {
		if (pthread_cond_timedwait(&d->cv, &d->mu, &until))
			break;
		i = find(d, k);
	}
	return i;
}

enum rr_drc_verdict rr__drc_lookup(struct rr_drc *d, const struct rr_drc_key *k,
				   struct rr_reply_hdr *rh, uint8_t *res,
				   size_t *res_len)
{
	enum rr_drc_verdict v = RR_DRC_NEW;
	int32_t i;

	pthread_mutex_lock(&d->mu);
	i = wait_not_running(d, k);
	if (i >= 0 && d->e[i].state == E_RUNNING) {
		v = RR_DRC_BUSY;
		d->drops++;
	} else if (i >= 0) {
		v = RR_DRC_REPLAY;
		*rh = d->e[i].rh;
		*res_len = d->e[i].res_len;
		memcpy(res, d->res + (size_t)i * d->max_res, d->e[i].res_len);
		d->replays++;
	} else if ((i = victim(d)) >= 0) {
		uint32_t b = bucket_of(d, k);

		d->e[i] = (struct rr_drc_entry){
			.k = *k, .state = E_RUNNING, .next = d->bucket[b]};
		d->bucket[b] = i;
	}
	pthread_mutex_unlock(&d->mu);
	return v;
}

void rr__drc_done(struct rr_drc *d, const struct rr_drc_key *k,
		  const struct rr_reply_hdr *rh, const uint8_t *res,
		  size_t res_len, bool keep)
{
	int32_t i;

	pthread_mutex_lock(&d->mu);
	i = find(d, k);
	if (i >= 0 && d->e[i].state == E_RUNNING) {
		if (keep && res_len <= d->max_res) {
			d->e[i].state = E_DONE;
			d->e[i].rh = *rh;
			d->e[i].res_len = (uint32_t)res_len;
			memcpy(d->res + (size_t)i * d->max_res, res, res_len);
		} else {
			unlink_entry(d, i);
		}
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
}

void rr__drc_stats(struct rr_drc *d, struct rr_xprt_stats *out)
{
	pthread_mutex_lock(&d->mu);
	out->drc_replays = d->replays;
	out->drc_drops = d->drops;
	pthread_mutex_unlock(&d->mu);
}
