/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers for tests that decode captured wire vectors. Include after
 * <cmocka.h>: they assert with it.
 */
#ifndef RR_TESTS_UNIT_VECTORS_H
#define RR_TESTS_UNIT_VECTORS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Hex with any whitespace or separators in between, as vectors are written. */
static inline size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v;

		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			continue;
		if (hi < 0) {
			hi = v;
			continue;
		}
		assert_true(n < cap);
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	assert_int_equal(hi, -1);
	return n;
}

/* A heap copy of exactly len bytes, so ASan reports any overread. */
static inline uint8_t *exact_copy(const uint8_t *p, size_t len)
{
	uint8_t *c = malloc(len ? len : 1);

	assert_non_null(c);
	if (len)
		memcpy(c, p, len);
	return c;
}

#endif
