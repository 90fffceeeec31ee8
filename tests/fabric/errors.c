/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The peer refuses our work: remote access errors, Sends without or with too
 * small a receive. The connection ends on both sides, everything outstanding
 * flushes, the peer's memory is unchanged, the reason is counted, and the
 * peer keeps serving.
 */
#include "suite.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TARGET_LEN (64 * KiB)
#define ACCESS_LEN 16

static void peer_access_error(struct h_test *t, const void *arg)
{
	const struct access_error *e = arg;
	bool wr = e->op == RR_WR_RDMA_WRITE;
	unsigned rights = RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE;
	struct h_buf *b, *rb;
	struct rr_mw *mw;
	struct h_remote r;
	struct rr_fabric_counters c0, c1;
	struct rr_cm_event ev;
	struct rr_wc wc;
	uint64_t sum;

	h_passive(t);
	if (e->kind == AK_NO_RIGHTS)
		rights = wr ? RR_ACCESS_REMOTE_READ : RR_ACCESS_REMOTE_WRITE;
	b = h_buf_pattern(t, e->kind == AK_OTHER_PD ? h_pd_new(t) : t->pd,
			  TARGET_LEN, rights, 20);
	r = h_remote_of(b, rr_mr_rkey(b->mr));
	switch (e->kind) {
	case AK_INVALIDATED_MW:
		mw = h_mw_new(t);
		r.rkey = bind_mw(t, mw, b, 4096, 4096, rights, 1);
		unbind_mw(t, mw, r.rkey, 2);
		r.addr += 4096;
		break;
	case AK_OUT_OF_BOUNDS:
		mw = h_mw_new(t);
		r.rkey = bind_mw(t, mw, b, 4096, 4096, rights, 1);
		/* The access's last byte is the first one past the window. */
		r.addr += 4096 + 4096 - (ACCESS_LEN - 1);
		break;
	case AK_GARBAGE_STAG:
		r.rkey ^= 0x5a5a5a00u;
		break;
	default:
		break;
	}
	rb = h_buf_new(t, 4 * 64, 0);
	post_recvs(t, rb, 1, 4, 64);
	send_fence(t);
	sum = h_sum(b->p, b->len);
	c0 = h_counters(t);
	h_msg_send(t, M_REMOTE, &r, sizeof(r));

	h_expect_down(t, &ev);
	H_EQ(rr_qp_state(t->qp), RR_QPS_ERROR);
	expect_flushed(t, t->rcq, 1, 4);
	h_expect_cq_empty(t, t->scq);
	c1 = h_counters(t);
	if (!t->attr.responder_reasons)
		; /* the requester's REM_ACCESS_ERR is all there is */
	else if (e->kind == AK_OUT_OF_BOUNDS)
		H_EQ(c1.bad_bounds, c0.bad_bounds + 1);
	else
		H_EQ(c1.bad_stag, c0.bad_stag + 1);
	H_CHECK(h_sum(b->p, b->len) == sum,
		"the refused access changed memory");
	h_signal(t, M_STEP);

	/* The peer survives and serves a new connection. */
	h_qp_destroy(t, t->qp);
	h_accept(t, NULL, 0, NULL);
	post_recvs(t, rb, 10, 1, 64);
	h_signal(t, M_READY);
	h_expect_wc(t, t->rcq, 10, RR_WC_SUCCESS, RR_WC_RECV, &wc);
	H_EQ(wc.byte_len, 8);
	H_CHECK(h_verify(rb->p, 8, 21, 0) == SIZE_MAX, "payload corrupted");
	h_wait(t, M_GO);
}

void test_remote_access_error(void **state)
{
	struct h_test *t = T(state);
	const struct access_error *e = t->params->arg;
	struct h_buf *b, *rb;
	struct h_remote r, fence;
	struct rr_cm_event ev;
	const uint64_t ids[] = {1, 2};
	struct rr_send_wr wr[2];
	struct rr_sge sge[2];
	uint16_t port;

	h_spawn(t, peer_access_error, e);
	h_open(t);
	port = h_recv_port(t);
	h_connect(t, port, NULL, 0, NULL);
	b = h_buf_new(t, 16 * KiB, 0);
	rb = h_buf_new(t, 4 * 64, 0);
	post_recvs(t, rb, 101, 4, 64);
	h_msg_recv(t, M_FENCE, &fence, sizeof(fence));
	h_msg_recv(t, M_REMOTE, &r, sizeof(r));

	h_fill(b->p, ACCESS_LEN, 22, 0);
	if (e->op == RR_WR_RDMA_READ)
		memset(b->p, 0, ACCESS_LEN);
	h_wr_rdma(&wr[0], &sge[0], e->op, 1, RR_SEND_SIGNALED, b, 0, ACCESS_LEN,
		  r.addr, r.rkey);
	fence_wr(&wr[1], &sge[1], &fence, b, 2);
	H_OK(h_post_chain(t->qp, wr, 2));
	/* A refused Write may have completed before the Terminate came. */
	expect_sq_terminated(t, ids, 2, e->op == RR_WR_RDMA_WRITE ? 1 : 0,
			     BIT(RR_WC_REM_ACCESS_ERR), true);
	if (e->op == RR_WR_RDMA_READ)
		for (int i = 0; i < ACCESS_LEN; i++)
			H_EQ(b->p[i], 0);
	h_expect_down(t, &ev);
	expect_flushed(t, t->rcq, 101, 4);
	expect_qp_dead(t, b);
	h_wait(t, M_STEP);

	h_qp_destroy(t, t->qp);
	h_connect(t, port, NULL, 0, NULL);
	h_wait(t, M_READY);
	h_fill(b->p + 4096, 8, 21, 0);
	H_OK(h_post_send(t->qp, 5, RR_SEND_SIGNALED, b, 4096, 8));
	h_expect_wc(t, t->scq, 5, RR_WC_SUCCESS, RR_WC_SEND, NULL);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

/* arg: receive buffer length to post on the peer, 0 for none. */
static void peer_refuses_send(struct h_test *t, const void *arg)
{
	size_t rlen = *(const size_t *)arg;
	struct h_buf *rb;
	struct rr_fabric_counters c0, c1;
	struct rr_cm_event ev;

	h_passive(t);
	rb = h_buf_new(t, 4 * KiB, 0);
	if (rlen) {
		H_OK(h_post_recv(t->qp, 1, rb, 0, rlen));
		H_OK(h_post_recv(t->qp, 2, rb, 2048, rlen));
	}
	send_fence(t);
	c0 = h_counters(t);
	h_signal(t, M_READY);
	h_expect_down(t, &ev);
	H_EQ(rr_qp_state(t->qp), RR_QPS_ERROR);
	c1 = h_counters(t);
	if (rlen) {
		/* The receive that was too small, then the flush. */
		h_expect_wc(t, t->rcq, 1, RR_WC_LOC_LEN_ERR, RR_WC_RECV, NULL);
		expect_flushed(t, t->rcq, 2, 1);
		/* verbs counts it as the completion is polled */
		c1 = h_counters(t);
		H_EQ(c1.recv_too_small, c0.recv_too_small + 1);
		for (size_t i = rlen; i < 2048; i++)
			H_CHECK(rb->p[i] == 0,
				"byte %zu past the receive buffer written", i);
	} else {
		h_expect_cq_empty(t, t->rcq);
		if (t->attr.responder_reasons)
			H_EQ(c1.no_recv_posted, c0.no_recv_posted + 1);
	}
	h_expect_cq_empty(t, t->scq);
	h_signal(t, M_STEP);
	h_wait(t, M_GO);
}

static void refused_send(struct h_test *t, size_t rlen, size_t slen)
{
	struct h_buf *b, *rb;
	struct h_remote fence;
	struct rr_cm_event ev;
	const uint64_t ids[] = {1, 2, 3};
	struct rr_send_wr wr[3];
	struct rr_sge sge[3];

	h_spawn(t, peer_refuses_send, &rlen);
	h_active(t);
	b = h_buf_new(t, 16 * KiB, 0);
	rb = h_buf_new(t, 4 * 64, 0);
	post_recvs(t, rb, 101, 4, 64);
	h_msg_recv(t, M_FENCE, &fence, sizeof(fence));
	h_wait(t, M_READY);
	h_fill(b->p, slen, 23, 0);
	h_wr_send(&wr[0], &sge[0], 1, RR_SEND_SIGNALED, b, 0, slen);
	fence_wr(&wr[1], &sge[1], &fence, b, 2);
	fence_wr(&wr[2], &sge[2], &fence, b, 3);
	H_OK(h_post_chain(t->qp, wr, 3));
	/* The Send may have completed before the Terminate; then flushes. */
	expect_sq_terminated(t, ids, 3, 1,
			     BIT(RR_WC_REM_OP_ERR) | BIT(RR_WC_REM_INV_REQ_ERR),
			     false);
	h_expect_down(t, &ev);
	expect_flushed(t, t->rcq, 101, 4);
	expect_qp_dead(t, b);
	h_wait(t, M_STEP);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

void test_send_without_receive(void **state)
{
	refused_send(T(state), 0, 16);
}

void test_send_larger_than_receive(void **state)
{
	refused_send(T(state), 100, 200);
}

/*
 * The peer's window is bound, then invalidated (or the key is a region's,
 * which only its owner may invalidate): a Send With Invalidate naming it
 * must be refused (RFC 5040: the STag cannot be
 * invalidated), not delivered as a receive that says it invalidated it.
 * A consumer that trusts RR_WC_WITH_INV (our client checks the key too)
 * must never be told a key died that was not alive.
 */
static void peer_refuses_dead_key_invalidation(struct h_test *t,
					       const void *arg)
{
	struct h_buf *b, *rb;
	struct rr_mw *mw;
	struct h_remote r;
	struct rr_fabric_counters c0, c1;
	struct rr_cm_event ev;
	struct rr_wc wc;

	h_passive(t);
	b = h_buf_pattern(t, t->pd, TARGET_LEN,
			  RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE, 30);
	r = h_remote_of(b, rr_mr_rkey(b->mr));
	if (!arg) { /* a window, bound then invalidated */
		mw = h_mw_new(t);
		r.rkey = bind_mw(t, mw, b, 4096, 4096,
				 RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE,
				 1);
		unbind_mw(t, mw, r.rkey, 2);
	} /* else the region's own key: never the peer's to invalidate */
	rb = h_buf_new(t, 4 * 64, 0);
	post_recvs(t, rb, 11, 2, 64);
	send_fence(t);
	c0 = h_counters(t);
	h_msg_send(t, M_REMOTE, &r, sizeof(r));
	h_expect_down(t, &ev);
	H_EQ(rr_qp_state(t->qp), RR_QPS_ERROR);
	/* Whatever the receives say, none reports an invalidation. */
	while (h_poll_wc(t->rcq, &wc, 200) == 1)
		H_CHECK(wc.status != RR_WC_SUCCESS &&
				!(wc.flags & RR_WC_WITH_INV),
			"a receive completed for the refused Send (flags %#x)",
			wc.flags);
	c1 = h_counters(t);
	if (t->attr.responder_reasons)
		H_EQ(c1.bad_invalidate, c0.bad_invalidate + 1);
	h_signal(t, M_STEP);
	h_wait(t, M_GO);
}

/* params arg: NULL, a dead window's key; non-NULL, a live region's key. */
void test_send_with_invalidate_of_a_dead_key(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b, *rb;
	struct h_remote r, fence;
	struct rr_cm_event ev;
	const uint64_t ids[] = {1, 2};
	struct rr_send_wr wr[2];
	struct rr_sge sge[2];

	h_spawn(t, peer_refuses_dead_key_invalidation, t->params->arg);
	h_active(t);
	b = h_buf_new(t, 16 * KiB, 0);
	rb = h_buf_new(t, 4 * 64, 0);
	post_recvs(t, rb, 101, 4, 64);
	h_msg_recv(t, M_FENCE, &fence, sizeof(fence));
	h_msg_recv(t, M_REMOTE, &r, sizeof(r));
	h_fill(b->p, 16, 31, 0);
	h_wr_send(&wr[0], &sge[0], 1, RR_SEND_SIGNALED, b, 0, 16);
	wr[0].opcode = RR_WR_SEND_WITH_INV;
	wr[0].invalidate_rkey = r.rkey;
	fence_wr(&wr[1], &sge[1], &fence, b, 2);
	H_OK(h_post_chain(t->qp, wr, 2));
	/* The Send may have completed before the Terminate; then flushes. */
	expect_sq_terminated(t, ids, 2, 1,
			     BIT(RR_WC_REM_ACCESS_ERR) | BIT(RR_WC_REM_OP_ERR) |
				     BIT(RR_WC_REM_INV_REQ_ERR),
			     false);
	h_expect_down(t, &ev);
	expect_flushed(t, t->rcq, 101, 4);
	expect_qp_dead(t, b);
	h_wait(t, M_STEP);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}
