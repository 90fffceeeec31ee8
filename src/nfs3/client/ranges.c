// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The byte ranges of a file written UNSTABLE and not yet committed: what
 * must be sent again when the server's write verifier changes (RFC 1813
 * section 3.3.7). Kept sorted and merged, so a sequential writer holds a
 * single range however much it writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "nfsc.h"

static int grow(struct nfsc_ranges *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : 8;
	struct nfsc_range *r;

	if (cap < s->cap)
		return -ENOMEM;
	r = rr_realloc(s->r, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	s->r = r;
	s->cap = cap;
	return 0;
}

/* The first range that ends at or after off (touching counts). */
static uint32_t first_touching(const struct nfsc_ranges *s, uint64_t off)
{
	uint32_t lo = 0, hi = s->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->r[mid].end < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int rr__nfsc_ranges_add(struct nfsc_ranges *s, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	uint32_t i, j;

	if (!len)
		return 0;
	i = first_touching(s, off);
	for (j = i; j < s->n && s->r[j].off <= end; j++) {
		off = s->r[j].off < off ? s->r[j].off : off;
		end = s->r[j].end > end ? s->r[j].end : end;
	}
	if (j == i) { /* touches none: a new one at i */
		if (s->n == s->cap && grow(s))
			return -ENOMEM;
		memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(*s->r));
		s->n++;
		j = i + 1;
	}
	/* ranges i..j-1 become one */
	s->r[i] = (struct nfsc_range){off, end};
	memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof(*s->r));
	s->n -= j - i - 1;
	return 0;
}

int rr__nfsc_ranges_merge(struct nfsc_ranges *into, const struct nfsc_ranges *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		int rc = rr__nfsc_ranges_add(into, s->r[i].off,
					     s->r[i].end - s->r[i].off);

		if (rc)
			return rc;
	}
	return 0;
}

void rr__nfsc_ranges_free(struct nfsc_ranges *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}
