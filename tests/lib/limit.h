/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A time limit for each test case: SIGALRM after the case's seconds
 * prints "[  FAILED  ] CASE (CONTEXT): not done in its limit of N s" and
 * ends the test binary with status 1, so that a case that hangs fails by
 * its name at once rather than at ctest's timeout for the whole suite.
 * A server child started with PR_SET_PDEATHSIG (tserver.h) follows.
 *
 * Either the suite's own setup calls rr_t_limit_start() and its teardown
 * rr_t_limit_end(), or a case is listed with RR_T_LIMITED(), which runs
 * the case's setup and teardown (either may be NULL) inside the limit:
 *
 *   RR_T_LIMITED(a_case, 30, setup, teardown),
 */
#ifndef RR_TEST_LIB_LIMIT_H
#define RR_TEST_LIB_LIMIT_H

struct rr_t_limit {
	const char *name;
	unsigned secs;
	int (*setup)(void **state);
	int (*teardown)(void **state);
};

/* What the failure names after the case: a transport, a group (NULL:
 * nothing). */
void rr_t_limit_context(const char *ctx);
/* Arms the limit for case name; the next start or end disarms it. */
void rr_t_limit_start(const char *name, unsigned secs);
void rr_t_limit_end(void);

/* The setup and teardown RR_T_LIMITED() gives cmocka. */
int rr_t_limited_setup(void **state);
int rr_t_limited_teardown(void **state);

#define RR_T_LIMITED(fn, secs, setup, teardown)                                \
	cmocka_unit_test_prestate_setup_teardown(                              \
		fn, rr_t_limited_setup, rr_t_limited_teardown,                 \
		(&(struct rr_t_limit){#fn, secs, setup, teardown}))

#endif
