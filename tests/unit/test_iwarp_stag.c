/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * STag checks of the iwarp provider, below the wire: every remote access is
 * judged on key, PD, rights and bounds, and a memory window's key rotates on
 * every registration so an old rkey never works again.
 */
#include "fabric/iwarp/iw.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

struct env {
	struct rr_device *dev;
	struct rr_pd *pd, *pd2;
	struct rr_mr *mr;
	char buf[8192];
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_int_equal(rr_device_open("iwarp", NULL, &e->dev), 0);
	assert_int_equal(rr_pd_alloc(e->dev, &e->pd), 0);
	assert_int_equal(rr_pd_alloc(e->dev, &e->pd2), 0);
	assert_int_equal(
		rr_mr_reg(e->pd, e->buf, sizeof(e->buf),
			  RR_ACCESS_LOCAL_WRITE | RR_ACCESS_REMOTE_READ,
			  &e->mr),
		0);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	assert_int_equal(rr_mr_dereg(e->mr), 0);
	assert_int_equal(rr_pd_free(e->pd2), 0);
	assert_int_equal(rr_pd_free(e->pd), 0);
	assert_int_equal(rr_device_close(e->dev), 0);
	free(e);
	return 0;
}

static int acquire(struct env *e, uint32_t stag, struct rr_pd *pd,
		   unsigned access, uint64_t to, uint64_t len)
{
	struct iw_stag *s;
	int rc = rr__iw_stag_acquire(to_iw_dev(e->dev), stag, pd, access, to,
				     len, &s);

	if (rc == 0)
		pthread_mutex_unlock(&s->mu);
	return rc;
}

static void region_access_is_checked_for_key_pd_rights_and_bounds(void **state)
{
	struct env *e = *state;
	uint32_t rkey = rr_mr_rkey(e->mr);
	uint64_t base = (uintptr_t)e->buf;

	assert_int_equal(acquire(e, rkey, e->pd, RR_ACCESS_REMOTE_READ, base,
				 sizeof(e->buf)),
			 0);
	assert_int_equal(
		acquire(e, rkey ^ 1, e->pd, RR_ACCESS_REMOTE_READ, base, 1),
		-ENOENT);
	assert_int_equal(
		acquire(e, rkey, e->pd2, RR_ACCESS_REMOTE_READ, base, 1),
		-EPERM);
	assert_int_equal(
		acquire(e, rkey, e->pd, RR_ACCESS_REMOTE_WRITE, base, 1),
		-EACCES);
	assert_int_equal(acquire(e, rkey, e->pd, RR_ACCESS_REMOTE_READ,
				 base + 1, sizeof(e->buf)),
			 -ERANGE);
	assert_int_equal(
		acquire(e, rkey, e->pd, RR_ACCESS_REMOTE_READ, base - 1, 1),
		-ERANGE);
	/* A length that would wrap the address space is out of bounds. */
	assert_int_equal(acquire(e, rkey, e->pd, RR_ACCESS_REMOTE_READ,
				 base + 8, UINT64_MAX - 4),
			 -ERANGE);
	assert_int_equal(acquire(e, 0, e->pd, 0, base, 1), -ENOENT);
	assert_int_equal(acquire(e, 0xffffff00u, e->pd, 0, base, 1), -ENOENT);
}

static struct iw_wqe reg_wqe(struct rr_mw *mw, struct rr_mr *mr, uint64_t addr,
			     uint64_t len, unsigned access)
{
	struct iw_mw *m = to_iw_mw(mw);
	struct iw_wqe w = {.opcode = RR_WR_REG,
			   .mw = m,
			   .mr = to_iw_mr(mr),
			   .reg_addr = addr,
			   .length = len,
			   .reg_access = access};

	w.rkey = m->idx << 8 | m->next_key++;
	mw->rkey = w.rkey;
	return w;
}

static void window_is_valid_only_between_bind_and_invalidate(void **state)
{
	struct env *e = *state;
	struct iw_device *dev = to_iw_dev(e->dev);
	uint64_t base = (uintptr_t)e->buf;
	struct rr_mw *mw;
	struct iw_wqe w;
	uint32_t first;

	assert_int_equal(rr_mw_alloc(e->pd, &mw), 0);
	assert_int_equal(acquire(e, rr_mw_rkey(mw), e->pd, 0, base, 1),
			 -ENOENT);
	w = reg_wqe(mw, e->mr, base + 100, 200, RR_ACCESS_REMOTE_READ);
	first = w.rkey;
	assert_int_equal(rr__iw_mw_bind(dev, e->pd, &w), RR_WC_SUCCESS);
	assert_int_equal(acquire(e, first, e->pd, RR_ACCESS_REMOTE_READ,
				 base + 100, 200),
			 0);
	assert_int_equal(
		acquire(e, first, e->pd, RR_ACCESS_REMOTE_READ, base + 99, 2),
		-ERANGE);
	/* The MR cannot go away while a window is bound into it. */
	assert_int_equal(rr_mr_dereg(e->mr), -EBUSY);
	/* Rebinding a valid window is refused: invalidate first. */
	w = reg_wqe(mw, e->mr, base, 10, RR_ACCESS_REMOTE_READ);
	assert_int_equal(rr__iw_mw_bind(dev, e->pd, &w), RR_WC_MW_BIND_ERR);
	assert_int_equal(rr__iw_stag_invalidate(dev, e->pd, first, false), 0);
	assert_int_equal(
		acquire(e, first, e->pd, RR_ACCESS_REMOTE_READ, base + 100, 1),
		-ENOENT);
	/* Remote invalidation of a key that is no longer live is refused. */
	assert_int_equal(rr__iw_stag_invalidate(dev, e->pd, first, true),
			 -ENOENT);
	/* The next registration has a different key: the old one stays dead. */
	w = reg_wqe(mw, e->mr, base, 10, RR_ACCESS_REMOTE_READ);
	assert_int_not_equal(w.rkey & 0xff, first & 0xff);
	assert_int_equal(w.rkey >> 8, first >> 8);
	assert_int_equal(rr__iw_mw_bind(dev, e->pd, &w), RR_WC_SUCCESS);
	assert_int_equal(
		acquire(e, first, e->pd, RR_ACCESS_REMOTE_READ, base, 1),
		-ENOENT);
	assert_int_equal(
		acquire(e, w.rkey, e->pd, RR_ACCESS_REMOTE_READ, base, 10), 0);
	/* A window of another PD cannot be invalidated through this one. */
	assert_int_equal(rr__iw_stag_invalidate(dev, e->pd2, w.rkey, true),
			 -EPERM);
	/* A region is not a window: it cannot be invalidated remotely. */
	assert_int_equal(
		rr__iw_stag_invalidate(dev, e->pd, rr_mr_rkey(e->mr), true),
		-ENOENT);
	assert_int_equal(rr__iw_stag_invalidate(dev, e->pd, w.rkey, true), 0);
	assert_int_equal(rr_mw_free(mw), 0);
}

static void bind_outside_the_region_or_across_pds_fails(void **state)
{
	struct env *e = *state;
	struct iw_device *dev = to_iw_dev(e->dev);
	uint64_t base = (uintptr_t)e->buf;
	struct rr_mw *mw, *mw2;
	struct iw_wqe w;

	assert_int_equal(rr_mw_alloc(e->pd, &mw), 0);
	assert_int_equal(rr_mw_alloc(e->pd2, &mw2), 0);
	w = reg_wqe(mw, e->mr, base + sizeof(e->buf) - 4, 8, 0);
	assert_int_equal(rr__iw_mw_bind(dev, e->pd, &w), RR_WC_MW_BIND_ERR);
	w = reg_wqe(mw, e->mr, base - 1, 8, 0);
	assert_int_equal(rr__iw_mw_bind(dev, e->pd, &w), RR_WC_MW_BIND_ERR);
	w = reg_wqe(mw2, e->mr, base, 8, 0);
	assert_int_equal(rr__iw_mw_bind(dev, e->pd2, &w), RR_WC_MW_BIND_ERR);
	assert_int_equal(rr_mw_free(mw2), 0);
	assert_int_equal(rr_mw_free(mw), 0);
}

static void freed_index_never_accepts_an_old_key(void **state)
{
	struct env *e = *state;
	struct rr_mr *a, *b;
	uint32_t old;

	assert_int_equal(
		rr_mr_reg(e->pd, e->buf, 64, RR_ACCESS_REMOTE_WRITE, &a), 0);
	old = rr_mr_rkey(a);
	assert_int_equal(rr_mr_dereg(a), 0);
	assert_int_equal(
		rr_mr_reg(e->pd, e->buf, 64, RR_ACCESS_REMOTE_WRITE, &b), 0);
	assert_int_not_equal(rr_mr_rkey(b), old);
	assert_int_equal(acquire(e, old, e->pd, RR_ACCESS_REMOTE_WRITE,
				 (uintptr_t)e->buf, 1),
			 -ENOENT);
	assert_int_equal(rr_mr_dereg(b), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			region_access_is_checked_for_key_pd_rights_and_bounds,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			window_is_valid_only_between_bind_and_invalidate, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			bind_outside_the_region_or_across_pds_fails, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			freed_index_never_accepts_an_old_key, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
