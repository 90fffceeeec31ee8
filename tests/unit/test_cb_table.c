/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The table of a server's calls to its client (rpc/cb_table.h): every
 * call ends once, by whichever comes first, and a slot is free again
 * when the transport says it is.
 */
#include "rpc/cb_table.h"

#include <errno.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define NSLOTS 2

struct fix {
	struct rr__cb_table t;
	struct rr__cb_slot slots[NSLOTS];
	struct rr_call calls[4];
	int ends[4], rc[4];
	struct rr_call_list l;
};

static void ended(struct rr_call *call, int rc, void *arg)
{
	struct fix *f = arg;
	size_t i = (size_t)(call - f->calls);

	f->ends[i]++;
	f->rc[i] = rc;
}

static struct fix *fix_new(bool keep_slot)
{
	static struct fix f;

	memset(&f, 0, sizeof(f));
	rr__cb_table_init(&f.t, f.slots, NSLOTS, keep_slot);
	return &f;
}

/* Calls 0..n-1 queued, the first ones with deadline d, the rest none. */
static void queue_n(struct fix *f, int n, uint64_t d)
{
	for (int i = 0; i < n; i++)
		rr__cb_queue(&f->t, &f->calls[i], ended, f, i < 2 ? d : 0);
}

/* The queue's head sent with xid 100 + its index. */
static struct rr__cb_slot *send_head(struct fix *f)
{
	struct rr__cb_slot *sl = rr__cb_slot_free(&f->t);
	struct rr_call *call;

	assert_non_null(sl);
	call = rr__cb_pop(&f->t);
	assert_non_null(call);
	rr__cb_sent(&f->t, sl, call, 100 + (uint32_t)(call - f->calls));
	return sl;
}

static void queue_keeps_issue_order(void **state)
{
	struct fix *f = fix_new(false);

	(void)state;
	queue_n(f, 3, 0);
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(rr__cb_pop(&f->t), &f->calls[i]);
	assert_null(rr__cb_pop(&f->t));
	assert_null(rr__cb_head(&f->t));
}

static void a_reply_ends_its_call_and_frees_its_slot(void **state)
{
	struct fix *f = fix_new(true);
	struct rr_call *call = NULL;

	(void)state;
	queue_n(f, 3, 0);
	send_head(f);
	send_head(f);
	assert_null(rr__cb_slot_free(&f->t));
	assert_int_equal(rr__cb_answered(&f->t, 101, &call), 0);
	assert_ptr_equal(call, &f->calls[1]);
	assert_int_equal(f->t.nbusy, 1);
	assert_int_equal(rr__cb_answered(&f->t, 101, &call), -ENOENT);
	assert_int_equal(rr__cb_answered(&f->t, 999, &call), -ENOENT);
	assert_non_null(rr__cb_slot_free(&f->t));
}

/* keep_slot: the cancelled call's slot waits for the reply (RDMA). */
static void a_cancelled_call_ends_once_and_its_slot_as_told(void **state)
{
	for (int keep = 0; keep <= 1; keep++) {
		struct fix *f = fix_new(keep);
		struct rr_call *call = &f->calls[2];

		(void)state;
		queue_n(f, 3, 0);
		send_head(f);
		assert_true(rr__cb_end(&f->t, &f->calls[0], -ECANCELED, &f->l));
		assert_false(
			rr__cb_end(&f->t, &f->calls[0], -ECANCELED, &f->l));
		assert_true(rr__cb_end(&f->t, &f->calls[2], -ECANCELED, &f->l));
		assert_ptr_equal(rr__cb_head(&f->t), &f->calls[1]);
		assert_int_equal(f->t.nbusy, keep ? 1 : 0);
		assert_int_equal(rr__cb_answered(&f->t, 100, &call),
				 keep ? 0 : -ENOENT);
		if (keep)
			assert_null(call);
		assert_int_equal(f->t.nbusy, 0);
		rr__call_list_run(&f->l);
		assert_int_equal(f->ends[0], 1);
		assert_int_equal(f->rc[0], -ECANCELED);
		assert_int_equal(f->ends[2], 1);
		assert_int_equal(f->ends[1], 0);
	}
}

static void a_call_of_another_table_is_not_taken(void **state)
{
	struct fix *f = fix_new(false);
	struct rr__cb_table other;
	struct rr__cb_slot oslots[1];

	(void)state;
	rr__cb_table_init(&other, oslots, 1, false);
	queue_n(f, 2, 0);
	send_head(f);
	assert_false(rr__cb_end(&other, &f->calls[0], -ECANCELED, &f->l));
	assert_false(rr__cb_end(&other, &f->calls[1], -ECANCELED, &f->l));
	assert_int_equal(f->l.n, 0);
}

/* Deadline 0 is none; sent and waiting calls expire alike. */
static void only_calls_past_their_deadline_expire(void **state)
{
	struct fix *f = fix_new(false);

	(void)state;
	queue_n(f, 4, 50); /* 0 and 1 at 50, 2 and 3 never */
	send_head(f);
	assert_int_equal(rr__cb_expire(&f->t, 49, &f->l), 0);
	assert_int_equal(rr__cb_expire(&f->t, 50, &f->l), 2);
	assert_int_equal(rr__cb_expire(&f->t, UINT64_MAX, &f->l), 0);
	assert_int_equal(f->t.nbusy, 0);
	assert_ptr_equal(rr__cb_pop(&f->t), &f->calls[2]);
	assert_ptr_equal(rr__cb_pop(&f->t), &f->calls[3]);
	assert_null(rr__cb_pop(&f->t));
	rr__call_list_run(&f->l);
	assert_int_equal(f->rc[0], -ETIMEDOUT);
	assert_int_equal(f->rc[1], -ETIMEDOUT);
	assert_int_equal(f->ends[2] + f->ends[3], 0);
}

static void the_end_of_the_connection_ends_every_call(void **state)
{
	struct fix *f = fix_new(true);
	struct rr_call *call;

	(void)state;
	queue_n(f, 4, 0);
	send_head(f);
	send_head(f);
	assert_true(rr__cb_end(&f->t, &f->calls[0], -ECANCELED, &f->l));
	rr__cb_fail_all(&f->t, -ENOTCONN, &f->l);
	assert_int_equal(f->t.nbusy, 0);
	assert_null(rr__cb_head(&f->t));
	assert_int_equal(rr__cb_answered(&f->t, 100, &call), -ENOENT);
	rr__call_list_run(&f->l);
	for (int i = 0; i < 4; i++)
		assert_int_equal(f->ends[i], 1);
	assert_int_equal(f->rc[0], -ECANCELED);
	for (int i = 1; i < 4; i++)
		assert_int_equal(f->rc[i], -ENOTCONN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(queue_keeps_issue_order),
		cmocka_unit_test(a_reply_ends_its_call_and_frees_its_slot),
		cmocka_unit_test(
			a_cancelled_call_ends_once_and_its_slot_as_told),
		cmocka_unit_test(a_call_of_another_table_is_not_taken),
		cmocka_unit_test(only_calls_past_their_deadline_expire),
		cmocka_unit_test(the_end_of_the_connection_ends_every_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
