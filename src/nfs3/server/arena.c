/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Per-call memory for results: rpcgen result structures point into it
 * (handles, names, directory entries), and it is freed in one go after the
 * reply is encoded, so no result needs a matching free routine.
 */
#include "nfs3/server/nfsd.h"

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK (64u << 10)

struct nfsd_arena {
	struct nfsd_arena *next;
	size_t used, cap;
	max_align_t data[];
};

void *rr__nfsd_alloc(struct nfsd_call *c, size_t n)
{
	struct nfsd_arena *a = c->arena;
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!a || a->cap - a->used < n) {
		size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;

		a = rr_calloc(1, sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->cap = cap;
		a->next = c->arena;
		c->arena = a;
	}
	p = (char *)a->data + a->used;
	a->used += n;
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
		free(a);
	}
}
