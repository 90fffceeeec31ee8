/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The local backend's byte range locks alone (backend/lock_table.c): who
 * conflicts with whom, and an owner's ranges as POSIX keeps them.
 */
#include "nfs3/server/backend/local.h"
#include "nfs3/server/backend/lock_table.h"

#include <errno.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

struct fx {
	struct rr_nfs3_server s;
	struct nfsd_call c;
	struct nfsd_obj o[2];
	struct nfsd_be_file f[2]; /* two files */
};

static int fx_setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->c.s = &x->s;
	for (int i = 0; i < 2; i++) {
		x->o[i].st.st_dev = 7;
		x->o[i].st.st_ino = 100 + (ino_t)i;
		x->f[i].obj = &x->o[i];
	}
	*state = x;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *x = *state;

	rr__nfsd_locks_free(&x->s);
	free(x);
	return 0;
}

static int lock(struct fx *x, int file, uint64_t owner, uint64_t off,
		uint64_t len, bool excl)
{
	struct nfsd_be_lock l = {owner, off, len, excl};

	return rr__nfsd_be_local_ops.lock(&x->c, &x->f[file], &l);
}

static int unlock(struct fx *x, uint64_t owner, uint64_t off, uint64_t len)
{
	struct nfsd_be_lock l = {owner, off, len, false};

	return rr__nfsd_be_local_ops.unlock(&x->c, &x->f[0], &l);
}

static int test(struct fx *x, uint64_t owner, uint64_t off, uint64_t len,
		bool excl, struct nfsd_be_lock *out)
{
	*out = (struct nfsd_be_lock){owner, off, len, excl};
	return rr__nfsd_be_local_ops.lock_test(&x->c, &x->f[0], out);
}

static void shared_locks_of_two_owners_coexist(void **state)
{
	struct fx *x = *state;

	assert_int_equal(lock(x, 0, 1, 0, 100, false), 0);
	assert_int_equal(lock(x, 0, 2, 50, 100, false), 0);
	assert_int_equal(lock(x, 0, 3, 60, 1, true), -EAGAIN);
}

static void exclusive_lock_is_refused_and_its_holder_reported(void **state)
{
	struct fx *x = *state;
	struct nfsd_be_lock got;

	assert_int_equal(lock(x, 0, 1, 10, 10, true), 0);
	assert_int_equal(lock(x, 0, 2, 19, 5, false), -EAGAIN);
	assert_int_equal(test(x, 2, 0, 0, false, &got), -EAGAIN);
	assert_int_equal(got.owner, 1);
	assert_int_equal(got.off, 10);
	assert_int_equal(got.len, 10);
	assert_true(got.excl);
	/* next to it, not over it */
	assert_int_equal(lock(x, 0, 2, 20, 5, true), 0);
	assert_int_equal(test(x, 2, 0, 10, true, &got), 0);
}

static void an_owner_never_conflicts_with_itself(void **state)
{
	struct fx *x = *state;

	assert_int_equal(lock(x, 0, 1, 0, 100, false), 0);
	assert_int_equal(lock(x, 0, 1, 0, 100, true), 0); /* upgrade */
	assert_int_equal(lock(x, 0, 2, 0, 1, false), -EAGAIN);
	assert_int_equal(lock(x, 0, 1, 0, 100, false), 0); /* downgrade */
	assert_int_equal(lock(x, 0, 2, 0, 1, false), 0);
}

static void unlock_in_the_middle_splits_the_range(void **state)
{
	struct fx *x = *state;
	struct nfsd_be_lock got;

	assert_int_equal(lock(x, 0, 1, 0, 300, true), 0);
	assert_int_equal(unlock(x, 1, 100, 100), 0);
	assert_int_equal(test(x, 2, 100, 100, true, &got), 0);
	assert_int_equal(test(x, 2, 0, 1, false, &got), -EAGAIN);
	assert_int_equal(got.len, 100);
	assert_int_equal(test(x, 2, 250, 1, false, &got), -EAGAIN);
	assert_int_equal(got.off, 200);
	assert_int_equal(got.len, 100);
	/* what the owner does not hold unlocks without error */
	assert_int_equal(unlock(x, 1, 100, 100), 0);
	assert_int_equal(unlock(x, 1, 0, 0), 0);
	assert_int_equal(test(x, 2, 0, 0, true, &got), 0);
}

static void zero_length_runs_to_the_end_of_the_file(void **state)
{
	struct fx *x = *state;
	struct nfsd_be_lock got;

	assert_int_equal(lock(x, 0, 1, 1000, 0, true), 0);
	assert_int_equal(lock(x, 0, 2, UINT64_MAX - 1, 1, false), -EAGAIN);
	assert_int_equal(test(x, 2, 5000, 1, false, &got), -EAGAIN);
	assert_int_equal(got.len, 0);
	assert_int_equal(lock(x, 0, 2, 0, 1000, true), 0);
}

static void locks_on_another_file_never_conflict(void **state)
{
	struct fx *x = *state;

	assert_int_equal(lock(x, 0, 1, 0, 0, true), 0);
	assert_int_equal(lock(x, 1, 2, 0, 0, true), 0);
}

static int count(struct fx *x, int file, uint64_t owner)
{
	return rr__nfsd_be_local_ops.lock_count(&x->c, &x->f[file], owner);
}

static void lock_count_follows_splits_merges_and_unlocks(void **state)
{
	struct fx *x = *state;

	assert_int_equal(count(x, 0, 1), 0);
	assert_int_equal(lock(x, 0, 1, 0, 300, true), 0);
	assert_int_equal(count(x, 0, 1), 1);
	/* a lock inside its own range splits it: three ranges */
	assert_int_equal(lock(x, 0, 1, 100, 100, false), 0);
	assert_int_equal(count(x, 0, 1), 3);
	/* one covering them all replaces them */
	assert_int_equal(lock(x, 0, 1, 0, 0, true), 0);
	assert_int_equal(count(x, 0, 1), 1);
	assert_int_equal(unlock(x, 1, 10, 10), 0);
	assert_int_equal(count(x, 0, 1), 2);
	/* another owner's, and another file's, are not counted */
	assert_int_equal(lock(x, 1, 1, 0, 1, true), 0);
	assert_int_equal(count(x, 0, 1), 2);
	assert_int_equal(count(x, 1, 1), 1);
	assert_int_equal(count(x, 0, 2), 0);
	assert_int_equal(unlock(x, 1, 0, 0), 0);
	assert_int_equal(count(x, 0, 1), 0);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test_setup_teardown(
			shared_locks_of_two_owners_coexist, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(
			exclusive_lock_is_refused_and_its_holder_reported,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			an_owner_never_conflicts_with_itself, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(
			unlock_in_the_middle_splits_the_range, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(
			zero_length_runs_to_the_end_of_the_file, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(
			locks_on_another_file_never_conflict, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(
			lock_count_follows_splits_merges_and_unlocks, fx_setup,
			fx_teardown),
	};

	return cmocka_run_group_tests(t, NULL, NULL);
}
