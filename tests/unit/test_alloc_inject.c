/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation-failure injector (src/base/alloc.h,
 * include/rpcrdma/alloc_inject.h): which attempts fail in each mode, what
 * it counts, and that disarmed it changes nothing.
 */
#include "base/alloc.h"

#include <pthread.h>
#include <stdlib.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* Two sites of our own: each macro call names its line. */
static void *site_a(void)
{
	return rr_malloc(16);
}

static void *site_b(void)
{
	return rr_calloc(2, 8);
}

/* Bit i set: attempt i (alternating a, b) got memory. */
static unsigned pattern(int n)
{
	unsigned got = 0;

	for (int i = 0; i < n; i++) {
		void *p = i % 2 ? site_b() : site_a();

		if (p)
			got |= 1u << i;
		free(p);
	}
	return got;
}

static struct rr_alloc_inject_stats stats(void)
{
	struct rr_alloc_inject_stats s;

	rr_alloc_inject_stats(&s);
	return s;
}

static void disarmed_nothing_fails_and_nothing_is_counted(void **state)
{
	(void)state;
	rr_alloc_inject_count();
	rr_alloc_inject_off();
	assert_int_equal(pattern(6), 0x3f);
	assert_int_equal(stats().attempts, 0);
	assert_false(RR_ALLOC_FAILS());
}

static void counting_fails_nothing_and_names_each_site(void **state)
{
	struct rr_alloc_site_info a, b;
	struct rr_alloc_inject_stats s;

	(void)state;
	rr_alloc_inject_count();
	assert_int_equal(pattern(5), 0x1f);
	rr_alloc_inject_off();
	s = stats();
	assert_int_equal(s.attempts, 5);
	assert_int_equal(s.failed, 0);
	assert_int_equal(s.nsites, 2);
	assert_int_equal(rr_alloc_inject_site(0, &a), 0);
	assert_int_equal(rr_alloc_inject_site(1, &b), 0);
	assert_int_equal(rr_alloc_inject_site(2, &b) == 0, 0);
	assert_int_equal(a.attempts, 3);
	assert_int_equal(a.first, 1);
	assert_int_equal(b.attempts, 2);
	assert_int_equal(b.first, 2);
	assert_true(a.line != b.line);
	assert_non_null(strstr(a.file, "test_alloc_inject.c"));
}

static void the_nth_attempt_fails_alone(void **state)
{
	(void)state;
	for (int n = 1; n <= 6; n++) {
		rr_alloc_inject_fail_nth((uint64_t)n);
		assert_int_equal(pattern(6), 0x3f & ~(1u << (n - 1)));
		assert_int_equal(stats().failed, 1);
	}
	rr_alloc_inject_off();
}

static void fail_all_fails_every_attempt_with_enomem(void **state)
{
	(void)state;
	rr_alloc_inject_fail_all();
	errno = 0;
	assert_null(site_a());
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(pattern(4), 0);
	assert_true(RR_ALLOC_FAILS());
	rr_alloc_inject_off();
	assert_int_equal(stats().failed, 6);
}

static void a_failed_realloc_leaves_the_block(void **state)
{
	char *p = malloc(4), *q;

	(void)state;
	memcpy(p, "abc", 4);
	rr_alloc_inject_fail_all();
	q = rr_realloc(p, 1 << 20);
	rr_alloc_inject_off();
	assert_null(q);
	assert_string_equal(p, "abc");
	free(p);
}

static void the_kth_attempt_at_a_site_fails(void **state)
{
	struct rr_alloc_site_info b;

	(void)state;
	rr_alloc_inject_count();
	pattern(2);
	rr_alloc_inject_site(1, &b); /* site_b's file and line */
	rr_alloc_inject_fail_site(b.file, b.line, 2);
	/* b is attempts 1, 3, 5: its second is bit 3 */
	assert_int_equal(pattern(6), 0x3f & ~(1u << 3));
	rr_alloc_inject_off();
}

static void random_failures_replay_from_their_seed(void **state)
{
	unsigned first, again, other;

	(void)state;
	rr_alloc_inject_fail_random(42, 500000);
	first = pattern(24);
	rr_alloc_inject_fail_random(42, 500000);
	again = pattern(24);
	rr_alloc_inject_fail_random(43, 500000);
	other = pattern(24);
	rr_alloc_inject_off();
	assert_int_equal(first, again);
	assert_true(first != 0 && first != 0xffffff);
	assert_true(other != first);
}

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		free(site_a());
	return NULL;
}

static void counts_are_exact_across_threads(void **state)
{
	pthread_t t[4];

	(void)state;
	rr_alloc_inject_fail_nth(2500);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	rr_alloc_inject_off();
	assert_int_equal(stats().attempts, 4000);
	assert_int_equal(stats().failed, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(disarmed_nothing_fails_and_nothing_is_counted),
		cmocka_unit_test(counting_fails_nothing_and_names_each_site),
		cmocka_unit_test(the_nth_attempt_fails_alone),
		cmocka_unit_test(fail_all_fails_every_attempt_with_enomem),
		cmocka_unit_test(a_failed_realloc_leaves_the_block),
		cmocka_unit_test(the_kth_attempt_at_a_site_fails),
		cmocka_unit_test(random_failures_replay_from_their_seed),
		cmocka_unit_test(counts_are_exact_across_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
