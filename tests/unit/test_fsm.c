/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* base/fsm.h: the table decides, self-moves pass, out-of-range fails. */
#include "base/fsm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

enum { A, B, C, N };

static const char *const names[N] = {"A", "B", "C"};
static const uint32_t next[N] = {
	[A] = RR_FSM_TO(B),
	[B] = RR_FSM_TO(A) | RR_FSM_TO(C),
	[C] = 0,
};
static const struct rr_fsm m = {"test", N, names, next};

static void table_decides(void **state)
{
	(void)state;
	assert_true(rr__fsm_move(&m, 1, A, B));
	assert_true(rr__fsm_move(&m, 1, B, C));
	assert_true(rr__fsm_move(&m, 1, B, A));
	assert_false(rr__fsm_move(&m, 1, A, C));
	assert_false(rr__fsm_move(&m, 1, C, A));
	assert_false(rr__fsm_move(&m, 1, C, B));
}

static void staying_is_allowed(void **state)
{
	(void)state;
	for (uint32_t s = 0; s < N; s++)
		assert_true(rr__fsm_allowed(&m, s, s));
}

static void out_of_range_is_refused(void **state)
{
	(void)state;
	assert_false(rr__fsm_allowed(&m, N, A));
	assert_false(rr__fsm_allowed(&m, A, N));
	assert_false(rr__fsm_move(&m, 7, 31, 31));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_decides),
		cmocka_unit_test(staying_is_allowed),
		cmocka_unit_test(out_of_range_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
