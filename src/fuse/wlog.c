// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The write log (fpriv.h): entries in the order they were written, so
 * that reading them back in that order leaves each byte as last written.
 * Their bytes go into blocks that never move, because a write-behind
 * WRITE sends them from there while later writes are being added.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fpriv.h"

/* A block with room for len more bytes, made if need be. */
static struct wlog_blk *blk_room(struct wlog *l, size_t len)
{
	struct wlog_blk *b;

	for (; l->cur < l->nb; l->cur++)
		if (l->b[l->cur].cap - l->b[l->cur].used >= len)
			return &l->b[l->cur];
	if (l->nb == l->bcap) {
		size_t cap = l->bcap ? l->bcap * 2 : 4;
		void *p = rr_realloc(l->b, cap * sizeof(*l->b));

		if (!p)
			return NULL;
		l->b = p;
		l->bcap = cap;
	}
	b = &l->b[l->nb];
	b->cap = len > WLOG_BLK ? len : WLOG_BLK;
	b->used = 0;
	b->data = rr_malloc(b->cap);
	if (!b->data)
		return NULL;
	l->nb++;
	return b;
}

static int ent_room(struct wlog *l)
{
	size_t cap = l->cap ? l->cap * 2 : 16;
	void *p;

	if (l->n < l->cap)
		return 0;
	p = rr_realloc(l->e, cap * sizeof(*l->e));
	if (!p)
		return -ENOMEM;
	l->e = p;
	l->cap = cap;
	return 0;
}

int rr__wlog_add(struct wlog *l, uint64_t off, const void *buf, size_t len,
		 const void **at)
{
	struct wlog_blk *b;
	struct wlog_ent *e;

	if (ent_room(l) || !(b = blk_room(l, len)))
		return -ENOMEM;
	e = &l->e[l->n++];
	e->at = b->data + b->used;
	memcpy(e->at, buf, len);
	b->used += len;
	e->off = off;
	e->len = len;
	l->bytes += len;
	if (at)
		*at = e->at;
	return 0;
}

/* Copies the overlap of e with [off, off + len) into buf. */
static void overlay(const struct wlog_ent *e, uint8_t *buf, size_t len,
		    uint64_t off, uint8_t *seen)
{
	uint64_t lo = e->off > off ? e->off : off;
	uint64_t hi = e->off + e->len < off + len ? e->off + e->len : off + len;

	if (lo >= hi)
		return;
	memcpy(buf + (lo - off), e->at + (lo - e->off), (size_t)(hi - lo));
	memset(seen + (lo - off), 1, (size_t)(hi - lo));
}

ssize_t rr__wlog_fill(const struct wlog *const *l, size_t nl, void *buf,
		      size_t len, uint64_t off)
{
	uint8_t *seen = rr_calloc(1, len ? len : 1);
	ssize_t rc = (ssize_t)len;

	if (!seen)
		return -ENOMEM;
	for (size_t k = 0; k < nl; k++)
		for (size_t i = 0; i < l[k]->n; i++)
			overlay(&l[k]->e[i], buf, len, off, seen);
	/* the library asks only for ranges written since the last COMMIT */
	if (memchr(seen, 0, len))
		rc = -EIO;
	free(seen);
	return rc;
}

void rr__wlog_reset(struct wlog *l)
{
	for (size_t i = 0; i < l->nb; i++)
		l->b[i].used = 0;
	l->cur = 0;
	l->n = 0;
	l->bytes = 0;
}

void rr__wlog_clear(struct wlog *l)
{
	for (size_t i = 0; i < l->nb; i++)
		free(l->b[i].data);
	free(l->b);
	free(l->e);
	memset(l, 0, sizeof(*l));
}
