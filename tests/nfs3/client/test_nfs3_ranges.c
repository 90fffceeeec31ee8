// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The client's set of uncommitted byte ranges (src/nfs3/client/ranges.c):
 * what a changed write verifier makes it write again, so a range lost or
 * merged wrongly is data lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nfs3/client/nfsc.h"

static void expect_ranges(const struct nfsc_ranges *s, const uint64_t *want,
			  uint32_t n)
{
	assert_int_equal(s->n, n);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(s->r[i].off, want[2 * i]);
		assert_int_equal(s->r[i].end, want[2 * i + 1]);
	}
}

static void sequential_writes_are_one_range(void **state)
{
	struct nfsc_ranges s = {0};

	(void)state;
	for (uint64_t off = 0; off < 1000 * 4096; off += 4096)
		assert_int_equal(rr__nfsc_ranges_add(&s, off, 4096), 0);
	expect_ranges(&s, (uint64_t[]){0, 1000 * 4096}, 1);
	rr__nfsc_ranges_free(&s);
}

static void out_of_order_writes_merge(void **state)
{
	struct nfsc_ranges s = {0};

	(void)state;
	assert_int_equal(rr__nfsc_ranges_add(&s, 100, 10), 0);
	assert_int_equal(rr__nfsc_ranges_add(&s, 0, 10), 0);
	assert_int_equal(rr__nfsc_ranges_add(&s, 50, 10), 0);
	assert_int_equal(rr__nfsc_ranges_add(&s, 0, 0), 0); /* nothing */
	expect_ranges(&s, (uint64_t[]){0, 10, 50, 60, 100, 110}, 3);
	/* touching the first, overlapping the second: one from 10 to 55 */
	assert_int_equal(rr__nfsc_ranges_add(&s, 10, 45), 0);
	expect_ranges(&s, (uint64_t[]){0, 60, 100, 110}, 2);
	/* across everything */
	assert_int_equal(rr__nfsc_ranges_add(&s, 5, 200), 0);
	expect_ranges(&s, (uint64_t[]){0, 205}, 1);
	rr__nfsc_ranges_free(&s);
}

static void many_disjoint_ranges_grow(void **state)
{
	struct nfsc_ranges s = {0}, t = {0};

	(void)state;
	for (uint64_t i = 0; i < 100; i++) /* backwards: inserts at 0 */
		assert_int_equal(rr__nfsc_ranges_add(&s, (99 - i) * 10, 5), 0);
	assert_int_equal(s.n, 100);
	for (uint32_t i = 0; i < s.n; i++)
		assert_int_equal(s.r[i].off, (uint64_t)i * 10);
	assert_int_equal(rr__nfsc_ranges_add(&t, 5, 1000), 0);
	assert_int_equal(rr__nfsc_ranges_merge(&t, &s), 0);
	expect_ranges(&t, (uint64_t[]){0, 1005}, 1);
	rr__nfsc_ranges_free(&s);
	rr__nfsc_ranges_free(&t);
	assert_null(s.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sequential_writes_are_one_range),
		cmocka_unit_test(out_of_order_writes_merge),
		cmocka_unit_test(many_disjoint_ranges_grow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
