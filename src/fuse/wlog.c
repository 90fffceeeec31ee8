// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The write log (fpriv.h): entries in the order they were written, so
 * that reading them back in that order leaves each byte as last written.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fpriv.h"

/* Room in the arena for len more bytes, doubling as it grows. */
static int arena_room(struct wlog *l, size_t len)
{
	size_t cap = l->arena_cap ? l->arena_cap : 64u << 10;
	void *p;

	if (l->bytes + len <= l->arena_cap)
		return 0;
	while (cap < l->bytes + len)
		cap *= 2;
	p = rr_realloc(l->arena, cap);
	if (!p)
		return -ENOMEM;
	l->arena = p;
	l->arena_cap = cap;
	return 0;
}

int rr__wlog_add(struct wlog *l, uint64_t off, const void *buf, size_t len)
{
	struct wlog_ent *e;

	if (arena_room(l, len))
		return -ENOMEM;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *p = rr_realloc(l->e, cap * sizeof(*l->e));

		if (!p)
			return -ENOMEM;
		l->e = p;
		l->cap = cap;
	}
	e = &l->e[l->n];
	e->at = l->bytes;
	memcpy(l->arena + e->at, buf, len);
	e->off = off;
	e->len = len;
	l->n++;
	l->bytes += len;
	return 0;
}

/* Copies the overlap of e with [off, off + len) into buf. */
static void overlay(const struct wlog *l, const struct wlog_ent *e,
		    uint8_t *buf, size_t len, uint64_t off, uint8_t *seen)
{
	uint64_t lo = e->off > off ? e->off : off;
	uint64_t hi = e->off + e->len < off + len ? e->off + e->len : off + len;

	if (lo >= hi)
		return;
	memcpy(buf + (lo - off), l->arena + e->at + (lo - e->off),
	       (size_t)(hi - lo));
	memset(seen + (lo - off), 1, (size_t)(hi - lo));
}

ssize_t rr__wlog_fill(const struct wlog *l, void *buf, size_t len, uint64_t off)
{
	uint8_t *seen = rr_calloc(1, len ? len : 1);
	ssize_t rc = (ssize_t)len;

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++)
		overlay(l, &l->e[i], buf, len, off, seen);
	/* the library asks only for ranges written since the last COMMIT */
	if (memchr(seen, 0, len))
		rc = -EIO;
	free(seen);
	return rc;
}

void rr__wlog_reset(struct wlog *l)
{
	l->n = 0;
	l->bytes = 0;
}

void rr__wlog_clear(struct wlog *l)
{
	free(l->e);
	free(l->arena);
	memset(l, 0, sizeof(*l));
}
