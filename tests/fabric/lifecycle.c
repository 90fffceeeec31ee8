/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Disconnect, destroy, queue accounting and a peer that dies: every work
 * request is accounted for exactly once and nothing hangs.
 */
#include "suite.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void peer_sees_disconnect(struct h_test *t, const void *arg)
{
	struct h_buf *rb;
	struct rr_cm_event ev;

	(void)arg;
	h_passive(t);
	rb = h_buf_new(t, 10 * 64, 0);
	post_recvs(t, rb, 1, 10, 64);
	h_signal(t, M_READY);
	h_expect_event(t, RR_CM_DISCONNECTED, &ev);
	H_CHECK(ev.qp == t->qp, "DISCONNECTED names another QP");
	H_EQ(rr_qp_state(t->qp), RR_QPS_ERROR);
	expect_flushed(t, t->rcq, 1, 10);
	h_expect_cq_empty(t, t->scq);
	H_RC(h_post_send(t->qp, 1, RR_SEND_SIGNALED, rb, 0, 1), -ENOTCONN);
	h_signal(t, M_STEP);
	h_wait(t, M_GO);
}

void test_disconnect_flushes(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *rb;
	struct rr_cm_event ev;

	h_spawn(t, peer_sees_disconnect, NULL);
	h_active(t);
	rb = h_buf_new(t, 10 * 64, 0);
	post_recvs(t, rb, 1, 10, 64);
	h_wait(t, M_READY);
	H_OK(rr_qp_disconnect(t->qp));
	h_expect_event(t, RR_CM_DISCONNECTED, &ev);
	H_CHECK(ev.qp == t->qp, "DISCONNECTED names another QP");
	expect_flushed(t, t->rcq, 1, 10);
	expect_qp_dead(t, rb);
	h_wait(t, M_STEP);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

void test_destroy_with_outstanding_work(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *rb;
	struct rr_cm_event ev;
	int rc;

	h_spawn(t, peer_sees_disconnect, NULL);
	h_active(t);
	rb = h_buf_new(t, 10 * 64, 0);
	post_recvs(t, rb, 1, 10, 64);
	h_wait(t, M_READY);
	h_qp_destroy(t, t->qp);
	h_expect_cq_empty(t, t->rcq);
	h_expect_cq_empty(t, t->scq);
	/* An event would name the freed QP. */
	rc = rr_evch_get(t->evch, &ev, H_QUIET_MS);
	H_CHECK(rc == -ETIMEDOUT,
		"rr_evch_get after rr_qp_destroy returned %d (%s), event %s",
		rc, h_errname(rc), rc ? "-" : rr_cm_event_str(ev.type));
	h_wait(t, M_STEP);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

#define QD 8

static void peer_queue_depth(struct h_test *t, const void *arg)
{
	struct h_buf *rb;

	(void)arg;
	h_passive(t);
	rb = h_buf_new(t, 3 * QD * 16, 0);
	post_recvs(t, rb, 0, 3 * QD, 16);
	h_signal(t, M_READY);
	for (uint32_t i = 0; i < 3 * QD; i++) {
		struct rr_wc wc;
		uint32_t v;

		h_expect_wc(t, t->rcq, i, RR_WC_SUCCESS, RR_WC_RECV, &wc);
		H_EQ(wc.byte_len, 4);
		memcpy(&v, rb->p + i * 16, 4);
		H_EQ(v, i);
		if (i == QD - 1)
			h_signal(t, M_STEP);
	}
	h_wait(t, M_GO);
}

static void fill_chain(struct rr_send_wr *wr, struct rr_sge *sge, int n,
		       const struct h_buf *b, uint32_t first)
{
	for (int i = 0; i < n; i++) {
		uint32_t k = first + (uint32_t)i;

		memcpy(b->p + 4 * k, &k, 4);
		sge[i].addr = (uint64_t)(uintptr_t)(b->p + 4 * k);
		sge[i].length = 4;
		sge[i].lkey = rr_mr_lkey(b->mr);
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = k;
		wr[i].opcode = RR_WR_SEND;
		wr[i].flags = RR_SEND_SIGNALED;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
}

static void expect_sends(struct h_test *t, uint32_t first, int n)
{
	for (int i = 0; i < n; i++)
		h_expect_wc(t, t->scq, first + (uint32_t)i, RR_WC_SUCCESS,
			    RR_WC_SEND, NULL);
	h_expect_cq_empty(t, t->scq);
}

/* Slots come back only when completions are polled. */
void test_queue_depth(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b, *rb;
	struct rr_send_wr wr[QD + 1], *bad;
	struct rr_sge sge[QD + 1];
	struct rr_recv_wr rwr[QD + 1], *rbad;
	struct rr_sge rsge[QD + 1];

	h_spawn(t, peer_queue_depth, NULL);
	h_open(t);
	t->cfg.sq_depth = QD;
	t->cfg.rq_depth = QD;
	h_connect(t, h_recv_port(t), NULL, 0, NULL);
	b = h_buf_new(t, 4 * (3 * QD + 2), 0);
	h_wait(t, M_READY);

	/* Round 1: QD single posts fill the queue; one more does not fit. */
	for (int i = 0; i < QD; i++) {
		fill_chain(wr, sge, 1, b, (uint32_t)i);
		bad = NULL;
		H_OK(rr_qp_post_send(t->qp, wr, &bad));
	}
	fill_chain(wr, sge, 1, b, QD);
	bad = NULL;
	H_RC(rr_qp_post_send(t->qp, wr, &bad), -ENOMEM);
	H_CHECK(bad == &wr[0], "*bad does not name the refused request");
	/* Even once the peer has all of them, unpolled slots stay taken. */
	h_wait(t, M_STEP);
	bad = NULL;
	H_RC(rr_qp_post_send(t->qp, wr, &bad), -ENOMEM);
	expect_sends(t, 0, QD);

	/* Round 2: a chain of QD + 1 posts QD and names the last as bad. */
	fill_chain(wr, sge, QD + 1, b, QD);
	bad = NULL;
	H_RC(rr_qp_post_send(t->qp, wr, &bad), -ENOMEM);
	H_CHECK(bad == &wr[QD], "*bad is wr[%td], expected wr[%d]",
		bad ? bad - wr : -1, QD);
	expect_sends(t, QD, QD);

	/* Round 3: after polling, the whole queue is available again. */
	fill_chain(wr, sge, QD, b, 2 * QD);
	bad = NULL;
	H_OK(rr_qp_post_send(t->qp, wr, &bad));
	expect_sends(t, 2 * QD, QD);

	/* The receive queue is accounted the same way. */
	rb = h_buf_new(t, (QD + 1) * 16, 0);
	for (int i = 0; i <= QD; i++) {
		rsge[i].addr = (uint64_t)(uintptr_t)(rb->p + 16 * i);
		rsge[i].length = 16;
		rsge[i].lkey = rr_mr_lkey(rb->mr);
		rwr[i].wr_id = 1000 + (uint64_t)i;
		rwr[i].sg_list = &rsge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i < QD ? &rwr[i + 1] : NULL;
	}
	rbad = NULL;
	H_RC(rr_qp_post_recv(t->qp, rwr, &rbad), -ENOMEM);
	H_CHECK(rbad == &rwr[QD], "receive *bad is not the request past depth");
	h_expect_cq_empty(t, t->rcq);

	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

#define KILL_SLOT  (64 * KiB)
#define KILL_DEPTH 8
#define KILL_AFTER 200
#define KILL_MAX   4096

static void peer_killed(struct h_test *t, const void *arg)
{
	struct h_buf *b;
	struct h_remote r;

	(void)arg;
	h_passive(t);
	b = h_buf_new(t, KILL_DEPTH * KILL_SLOT,
		      RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE);
	r = h_remote_of(b, rr_mr_rkey(b->mr));
	h_msg_send(t, M_REMOTE, &r, sizeof(r));
	h_wait(t, M_GO); /* killed before */
}

/* SIGKILL the peer with work in flight: everything flushes, no hang. */
void test_peer_killed(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b, *rb;
	struct h_remote r;
	struct rr_cm_event ev;
	static uint8_t done[KILL_MAX + 1];
	uint64_t next = 1;
	int inflight = 0, completed = 0;
	bool killed = false, errored = false;

	memset(done, 0, sizeof(done));
	h_spawn(t, peer_killed, NULL);
	h_active(t);
	b = h_buf_new(t, KILL_DEPTH * KILL_SLOT, 0);
	rb = h_buf_new(t, KILL_DEPTH * 64, 0);
	post_recvs(t, rb, 101 + KILL_MAX, KILL_DEPTH, 64);
	h_msg_recv(t, M_REMOTE, &r, sizeof(r));

	while (!killed || inflight) {
		struct rr_wc wc;

		while (!killed && inflight < KILL_DEPTH) {
			size_t slot = next % KILL_DEPTH;

			H_CHECK(next <= KILL_MAX, "peer never killed");
			H_OK(h_post_rdma(
				t->qp,
				next & 1 ? RR_WR_RDMA_WRITE : RR_WR_RDMA_READ,
				next, RR_SEND_SIGNALED, b, slot * KILL_SLOT,
				KILL_SLOT, r.addr + slot * KILL_SLOT, r.rkey));
			next++;
			inflight++;
		}
		if (!killed && completed >= KILL_AFTER) {
			h_peer_kill(t);
			killed = true;
		}
		h_wc(t, t->scq, &wc);
		H_CHECK(wc.wr_id >= 1 && wc.wr_id < next, "unknown wr_id %llu",
			(unsigned long long)wc.wr_id);
		H_CHECK(!done[wc.wr_id], "wr_id %llu completed twice",
			(unsigned long long)wc.wr_id);
		done[wc.wr_id] = 1;
		inflight--;
		completed++;
		if (wc.status == RR_WC_SUCCESS) {
			H_CHECK(!errored, "wr_id %llu SUCCESS after a flush",
				(unsigned long long)wc.wr_id);
			continue;
		}
		H_CHECK(killed, "wr_id %llu completed %s before the kill",
			(unsigned long long)wc.wr_id,
			rr_wc_status_str(wc.status));
		/*
		 * The WR the connection died under may complete with the
		 * error it met (the kernel's siw gives LOC_QP_OP_ERR);
		 * every one after it is flushed.
		 */
		H_CHECK(wc.status == RR_WC_WR_FLUSH_ERR || !errored,
			"wr_id %llu completed %s after the first error, "
			"expected WR_FLUSH_ERR",
			(unsigned long long)wc.wr_id,
			rr_wc_status_str(wc.status));
		errored = true;
	}
	for (uint64_t i = 1; i < next; i++)
		H_CHECK(done[i], "wr_id %llu never completed",
			(unsigned long long)i);
	h_expect_down(t, &ev);
	H_CHECK(ev.qp == t->qp, "%s names another QP",
		rr_cm_event_str(ev.type));
	expect_flushed(t, t->rcq, 101 + KILL_MAX, KILL_DEPTH);
	expect_qp_dead(t, b);
	h_cleanup(t, true);
}

#define DQ 4

static void peer_takes_three(struct h_test *t, const void *arg)
{
	struct h_buf *rb;

	(void)arg;
	h_passive(t);
	rb = h_buf_new(t, 3 * 16, 0);
	post_recvs(t, rb, 0, 3, 16);
	h_signal(t, M_READY);
	for (uint32_t i = 0; i < 3; i++)
		h_expect_wc(t, t->rcq, i, RR_WC_SUCCESS, RR_WC_RECV, NULL);
	h_signal(t, M_STEP);
	h_wait(t, M_GO);
}

/*
 * Unsignaled Sends that succeeded with nothing after them have no
 * completion of their own: the drain marker's completion retires them, so
 * afterwards the whole send queue is free (DQ markers fit unpolled).
 */
void test_drain_retires_unsignaled(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b;
	struct rr_cm_event ev;

	h_spawn(t, peer_takes_three, NULL);
	h_open(t);
	t->cfg.sq_depth = DQ;
	t->cfg.rq_depth = DQ;
	h_connect(t, h_recv_port(t), NULL, 0, NULL);
	b = h_buf_new(t, 64, 0);
	h_wait(t, M_READY);
	for (int i = 0; i < 3; i++)
		H_OK(h_post_send(t->qp, 10 + (uint64_t)i, 0, b, 0, 4));
	h_wait(t, M_STEP);
	h_expect_cq_empty(t, t->scq);
	H_RC(rr_qp_drain(t->qp, 1, 2), -EINVAL); /* not in ERROR yet */
	H_OK(rr_qp_disconnect(t->qp));
	h_expect_event(t, RR_CM_DISCONNECTED, &ev);
	H_OK(rr_qp_drain(t->qp, 100, 200));
	h_expect_wc(t, t->scq, 100, RR_WC_WR_FLUSH_ERR, RR_WC_SEND, NULL);
	h_expect_wc(t, t->rcq, 200, RR_WC_WR_FLUSH_ERR, RR_WC_RECV, NULL);
	h_expect_cq_empty(t, t->scq);
	for (int i = 0; i < DQ; i++)
		H_OK(rr_qp_drain(t->qp, 101 + (uint64_t)i, 201 + (uint64_t)i));
	H_RC(rr_qp_drain(t->qp, 1, 2), -ENOMEM);
	for (int i = 0; i < DQ; i++) {
		h_expect_wc(t, t->scq, 101 + (uint64_t)i, RR_WC_WR_FLUSH_ERR,
			    RR_WC_SEND, NULL);
		h_expect_wc(t, t->rcq, 201 + (uint64_t)i, RR_WC_WR_FLUSH_ERR,
			    RR_WC_RECV, NULL);
	}
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}
