/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Completion queue accounting of the iwarp provider: a CQ never overruns
 * (QPs reserve their slots at creation), queue slots come back when their
 * completion is polled, every flushed request completes exactly once, and
 * the CQ's fd is readable exactly while completions are queued.
 */
#include "fabric/iwarp/iw.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

struct env {
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_evch *ch;
	struct rr_cq *cq;
	struct rr_mr *mr;
	char buf[4096];
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_int_equal(rr_device_open("iwarp", NULL, &e->dev), 0);
	assert_int_equal(rr_pd_alloc(e->dev, &e->pd), 0);
	assert_int_equal(rr_evch_create(e->dev, &e->ch), 0);
	assert_int_equal(rr_cq_create(e->dev, 16, &e->cq), 0);
	assert_int_equal(rr_mr_reg(e->pd, e->buf, sizeof(e->buf),
				   RR_ACCESS_LOCAL_WRITE, &e->mr),
			 0);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	assert_int_equal(rr_mr_dereg(e->mr), 0);
	assert_int_equal(rr_cq_destroy(e->cq), 0);
	assert_int_equal(rr_evch_destroy(e->ch), 0);
	assert_int_equal(rr_pd_free(e->pd), 0);
	assert_int_equal(rr_device_close(e->dev), 0);
	free(e);
	return 0;
}

static struct rr_qp_attr attr(struct env *e, uint32_t sq, uint32_t rq)
{
	return (struct rr_qp_attr){.send_cq = e->cq,
				   .recv_cq = e->cq,
				   .evch = e->ch,
				   .sq_depth = sq,
				   .rq_depth = rq,
				   .max_send_sge = 1,
				   .max_recv_sge = 1};
}

static bool fd_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

static int post_recv(struct env *e, struct rr_qp *qp, uint64_t id)
{
	struct rr_sge sge = {(uintptr_t)e->buf, 64, rr_mr_lkey(e->mr)};
	struct rr_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};

	return rr_qp_post_recv(qp, &wr, NULL);
}

static void qps_cannot_reserve_more_slots_than_the_cq_holds(void **state)
{
	struct env *e = *state;
	struct rr_qp_attr a = attr(e, 8, 8);
	struct rr_qp *q1, *q2;

	assert_int_equal(rr_qp_create(e->pd, &a, &q1), 0);
	assert_int_equal(rr_qp_create(e->pd, &a, &q2), -ENOSPC);
	assert_int_equal(rr_cq_destroy(e->cq), -EBUSY);
	assert_int_equal(rr_qp_destroy(q1), 0);
	assert_int_equal(rr_qp_create(e->pd, &a, &q2), 0);
	assert_int_equal(rr_qp_destroy(q2), 0);
}

static void flush_completes_every_receive_once_and_fd_follows(void **state)
{
	struct env *e = *state;
	struct rr_qp_attr a = attr(e, 4, 8);
	uint8_t seen[8] = {0};
	struct rr_wc wc[16];
	int fd = rr_cq_fd(e->cq);
	struct rr_qp *qp;
	int n;

	assert_int_equal(rr_qp_create(e->pd, &a, &qp), 0);
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(post_recv(e, qp, i), 0);
	assert_int_equal(post_recv(e, qp, 99), -ENOMEM);
	assert_false(fd_readable(fd));
	assert_int_equal(rr_qp_disconnect(qp), 0);
	assert_int_equal(rr_qp_state(qp), RR_QPS_ERROR);
	assert_true(fd_readable(fd));
	assert_int_equal(rr_cq_wait(e->cq, 0), 0);
	n = rr_cq_poll(e->cq, wc, 16);
	assert_int_equal(n, 8);
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, RR_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, RR_WC_RECV);
		assert_ptr_equal(wc[i].qp, qp);
		assert_true(wc[i].wr_id < 8);
		assert_int_equal(seen[wc[i].wr_id]++, 0);
	}
	assert_false(fd_readable(fd));
	assert_int_equal(rr_cq_poll(e->cq, wc, 16), 0);
	assert_int_equal(rr_cq_wait(e->cq, 10), -ETIMEDOUT);
	/* Slots came back with the polled completions; the QP is dead. */
	assert_int_equal(atomic_load(&to_iw_qp(qp)->rq_free), 8);
	assert_int_equal(post_recv(e, qp, 100), -ENOTCONN);
	assert_int_equal(rr_qp_destroy(qp), 0);
}

static void destroy_leaves_no_completions_behind(void **state)
{
	struct env *e = *state;
	struct rr_qp_attr a = attr(e, 2, 4);
	struct rr_qp *q1, *q2;
	struct rr_wc wc[16];
	int n;

	assert_int_equal(rr_qp_create(e->pd, &a, &q1), 0);
	assert_int_equal(rr_qp_create(e->pd, &a, &q2), 0);
	assert_int_equal(post_recv(e, q1, 1), 0);
	assert_int_equal(post_recv(e, q2, 2), 0);
	assert_int_equal(rr_qp_disconnect(q1), 0);
	assert_int_equal(rr_qp_disconnect(q2), 0);
	assert_int_equal(rr_qp_destroy(q1), 0);
	n = rr_cq_poll(e->cq, wc, 16);
	assert_int_equal(n, 1);
	assert_ptr_equal(wc[0].qp, q2);
	assert_int_equal(wc[0].wr_id, 2);
	assert_int_equal(rr_qp_destroy(q2), 0);
}

static void posting_sends_before_connecting_is_refused(void **state)
{
	struct env *e = *state;
	struct rr_qp_attr a = attr(e, 2, 2);
	struct rr_sge sge = {(uintptr_t)e->buf, 8, rr_mr_lkey(e->mr)};
	struct rr_send_wr wr = {
		.opcode = RR_WR_SEND, .sg_list = &sge, .num_sge = 1};
	struct rr_send_wr *bad = NULL;
	struct rr_qp *qp;

	assert_int_equal(rr_qp_create(e->pd, &a, &qp), 0);
	assert_int_equal(rr_qp_post_send(qp, &wr, &bad), -ENOTCONN);
	assert_ptr_equal(bad, &wr);
	assert_int_equal(rr_qp_destroy(qp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			qps_cannot_reserve_more_slots_than_the_cq_holds, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			flush_completes_every_receive_once_and_fd_follows,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			destroy_leaves_no_completions_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(
			posting_sends_before_connecting_is_refused, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
