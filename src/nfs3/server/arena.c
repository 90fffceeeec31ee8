/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Per-call memory for results: rpcgen result structures point into it
 * (handles, names, directory entries), and it is freed in one go after the
 * reply is encoded, so no result needs a matching free routine.
 */
#include "nfs3/server/nfsd.h"

#include "base/alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK  (64u << 10)
#define ARENA_SPARES 8 /* blocks kept between calls, for all servers */

struct nfsd_arena {
	struct nfsd_arena *next;
	size_t used, cap;
	max_align_t data[];
};

/*
 * Most metadata calls need a block, so one taken from malloc and given
 * back per call was an allocation per call (tests/ceph counts them): the
 * first-size blocks calls let go are kept for the next ones instead, at
 * most ARENA_SPARES of them (512 KiB). A list under a lock, not a
 * thread's own, so that the threads of a server may come and go.
 */
static pthread_mutex_t spares_mu = PTHREAD_MUTEX_INITIALIZER;
static struct nfsd_arena *spares;
static unsigned nspares;

static struct nfsd_arena *block_take(size_t cap)
{
	struct nfsd_arena *a = NULL;

	if (cap == ARENA_BLOCK) {
		pthread_mutex_lock(&spares_mu);
		a = spares;
		if (a) {
			spares = a->next;
			nspares--;
		}
		pthread_mutex_unlock(&spares_mu);
	}
	if (!a)
		a = rr_malloc(sizeof(*a) + cap);
	if (a) {
		a->used = 0;
		a->cap = cap;
	}
	return a;
}

static void block_give(struct nfsd_arena *a)
{
	if (a->cap == ARENA_BLOCK) {
		pthread_mutex_lock(&spares_mu);
		if (nspares < ARENA_SPARES) {
			a->next = spares;
			spares = a;
			nspares++;
			a = NULL;
		}
		pthread_mutex_unlock(&spares_mu);
	}
	free(a);
}

/* Zeroed, as the result structures built in it expect. */
void *rr__nfsd_alloc(struct nfsd_call *c, size_t n)
{
	struct nfsd_arena *a = c->arena;
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!a || a->cap - a->used < n) {
		a = block_take(n > ARENA_BLOCK ? n : ARENA_BLOCK);
		if (!a)
			return NULL;
		a->next = c->arena;
		c->arena = a;
	}
	p = (char *)a->data + a->used;
	a->used += n;
	memset(p, 0, n);
	return p;
}

char *rr__nfsd_strdup(struct nfsd_call *c, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = rr__nfsd_alloc(c, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

void rr__nfsd_arena_free(struct nfsd_call *c)
{
	while (c->arena) {
		struct nfsd_arena *a = c->arena;

		c->arena = a->next;
		block_give(a);
	}
}
