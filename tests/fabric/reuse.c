/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reuse without allocation (architecture.md invariant 6): rr_qp_reset gives a
 * QP back for another connection, rr_mw_fence kills a window's key
 * without a work request and without freeing the window.
 */
#include "suite.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NSEND	 3
#define SEND_LEN 512
#define CONNS	 2

/* Each connection's Sends carry a stream of their own: a mix-up shows. */
static uint64_t seed_of(int conn, int i)
{
	return 1000 + (uint64_t)conn * 16 + (uint64_t)i;
}

/* Peer: CONNS connections one after the other, NSEND Sends on each. */
static void peer_serves_connections(struct h_test *t, const void *arg)
{
	struct rr_cm_event ev;
	struct rr_wc wc;

	(void)arg;
	h_open(t);
	h_listen(t);
	for (int conn = 0; conn < CONNS; conn++) {
		struct h_buf *rb;

		h_accept(t, NULL, 0, NULL);
		rb = h_buf_new(t, NSEND * SEND_LEN, RR_ACCESS_LOCAL_WRITE);
		post_recvs(t, rb, 1, NSEND, SEND_LEN);
		h_signal(t, M_READY);
		for (int i = 0; i < NSEND; i++) {
			h_expect_wc(t, t->rcq, 1 + (uint64_t)i, RR_WC_SUCCESS,
				    RR_WC_RECV, &wc);
			H_EQ(wc.byte_len, SEND_LEN);
			H_CHECK(h_verify(rb->p + (size_t)i * SEND_LEN, SEND_LEN,
					 seed_of(conn, i), 0) == SIZE_MAX,
				"connection %d, Send %d: wrong bytes", conn, i);
		}
		h_signal(t, M_STEP);
		h_expect_down(t, &ev);
		h_qp_destroy(t, t->qp);
	}
	h_wait(t, M_GO);
}

/* Active: NSEND signaled Sends on the current connection, all complete. */
static void send_some(struct h_test *t, struct h_buf *b, int conn)
{
	h_wait(t, M_READY);
	for (int i = 0; i < NSEND; i++) {
		h_fill(b->p + (size_t)i * SEND_LEN, SEND_LEN, seed_of(conn, i),
		       0);
		H_OK(h_post_send(t->qp, 10 + (uint64_t)i, RR_SEND_SIGNALED, b,
				 (size_t)i * SEND_LEN, SEND_LEN));
	}
	for (int i = 0; i < NSEND; i++)
		h_expect_wc(t, t->scq, 10 + (uint64_t)i, RR_WC_SUCCESS,
			    RR_WC_SEND, NULL);
	h_wait(t, M_STEP);
}

static void connect_again(struct h_test *t, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t alen;
	struct rr_cm_event ev;

	h_addr(&ss, &alen, port);
	H_OK(rr_qp_connect(t->qp, (struct sockaddr *)&ss, alen, NULL, 0));
	h_expect_event(t, RR_CM_ESTABLISHED, &ev);
	H_CHECK(ev.qp == t->qp, "ESTABLISHED names another QP");
	H_EQ(rr_qp_state(t->qp), RR_QPS_RTS);
}

/* A connection that cannot be made leaves a QP that reset makes usable. */
static void unreachable_then_reset(struct h_test *t)
{
	struct sockaddr_storage ss;
	socklen_t alen = sizeof(ss);
	struct rr_cm_event ev;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	/* A bound, non-listening socket holds a port nobody listens on. */
	H_CHECK(s >= 0, "socket");
	h_addr(&ss, &alen, 0);
	H_CHECK(bind(s, (struct sockaddr *)&ss, alen) == 0, "bind");
	alen = sizeof(ss);
	H_CHECK(getsockname(s, (struct sockaddr *)&ss, &alen) == 0, "name");
	H_OK(rr_qp_connect(t->qp, (struct sockaddr *)&ss, alen, NULL, 0));
	h_expect_event(t, RR_CM_UNREACHABLE, &ev);
	close(s);
	H_OK(rr_qp_reset(t->qp));
	H_EQ(rr_qp_state(t->qp), RR_QPS_INIT);
}

/*
 * Nothing of the old connection may come out after a reset: not its
 * completions (here four flushed receives never polled), not its events
 * (DISCONNECTED never taken), and every queue slot is free again.
 */
static void expect_nothing_old(struct h_test *t, struct h_buf *rb)
{
	struct rr_cm_event ev;
	int rc;

	h_expect_cq_empty(t, t->rcq);
	h_expect_cq_empty(t, t->scq);
	rc = rr_evch_get(t->evch, &ev, H_QUIET_MS);
	H_CHECK(rc == -ETIMEDOUT,
		"rr_evch_get after rr_qp_reset returned %d (%s), event %s", rc,
		h_errname(rc), rc ? "-" : rr_cm_event_str(ev.type));
	for (uint32_t i = 0; i < t->cfg.rq_depth; i++)
		H_OK(h_post_recv(t->qp, 500 + i, rb, 0, 64));
	H_RC(h_post_recv(t->qp, 1, rb, 0, 64), -ENOMEM);
	H_RC(h_post_send(t->qp, 1, RR_SEND_SIGNALED, rb, 0, 1), -ENOTCONN);
}

void test_reset_reconnects(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b, *rb;
	struct rr_cm_event ev;
	uint16_t port;

	h_spawn(t, peer_serves_connections, NULL);
	h_open(t);
	t->qp = h_qp_new(t);
	unreachable_then_reset(t);
	port = h_recv_port(t);
	b = h_buf_new(t, NSEND * SEND_LEN, 0);
	rb = h_buf_new(t, 64, RR_ACCESS_LOCAL_WRITE);

	/* 1: taken down the way the RPC client does: drained, then reset */
	connect_again(t, port);
	send_some(t, b, 0);
	H_OK(rr_qp_disconnect(t->qp));
	h_expect_event(t, RR_CM_DISCONNECTED, &ev);
	H_OK(rr_qp_drain(t->qp, 100, 200));
	h_expect_wc(t, t->scq, 100, RR_WC_WR_FLUSH_ERR, RR_WC_SEND, NULL);
	h_expect_wc(t, t->rcq, 200, RR_WC_WR_FLUSH_ERR, RR_WC_RECV, NULL);
	H_OK(rr_qp_reset(t->qp));
	H_EQ(rr_qp_state(t->qp), RR_QPS_INIT);

	/* 2: reset with receives flushed and the event not taken */
	for (int i = 0; i < 4; i++)
		H_OK(h_post_recv(t->qp, 300 + (uint64_t)i, rb, 0, 64));
	connect_again(t, port);
	send_some(t, b, 1);
	H_OK(rr_qp_disconnect(t->qp));
	H_OK(rr_qp_reset(t->qp));
	H_EQ(rr_qp_state(t->qp), RR_QPS_INIT);
	expect_nothing_old(t, rb);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

/* ------------------------------------------------------------ fence */

#define FENCE_LEN (16 * KiB)

/* Peer: reads through each key it is sent; the last read must fail. */
static void peer_reads_through_keys(struct h_test *t, const void *arg)
{
	const uint64_t ids[] = {3, 4};
	struct rr_send_wr wrs[2];
	struct rr_sge sges[2];
	struct rr_cm_event ev;
	struct h_remote r;
	struct h_buf *b;

	(void)arg;
	h_passive(t);
	b = h_buf_new(t, FENCE_LEN, RR_ACCESS_LOCAL_WRITE);
	for (uint64_t k = 1; k <= 2; k++) {
		h_msg_recv(t, M_REMOTE, &r, sizeof(r));
		memset(b->p, 0, b->len);
		H_OK(h_post_rdma(t->qp, RR_WR_RDMA_READ, k, RR_SEND_SIGNALED, b,
				 0, r.len, r.addr, r.rkey));
		h_expect_wc(t, t->scq, k, RR_WC_SUCCESS, RR_WC_RDMA_READ, NULL);
		H_CHECK(h_verify(b->p, r.len, 31, 0) == SIZE_MAX,
			"read through key %#x: wrong bytes", r.rkey);
		h_signal(t, M_STEP);
	}
	h_wait(t, M_GO);
	memset(b->p, 0, b->len);
	h_wr_rdma(&wrs[0], &sges[0], RR_WR_RDMA_READ, 3, RR_SEND_SIGNALED, b, 0,
		  r.len, r.addr, r.rkey);
	h_wr_rdma(&wrs[1], &sges[1], RR_WR_RDMA_READ, 4, RR_SEND_SIGNALED, b,
		  8 * KiB, 1, r.addr, r.rkey);
	H_OK(h_post_chain(t->qp, wrs, 2));
	expect_sq_terminated(t, ids, 2, 0, BIT(RR_WC_REM_ACCESS_ERR), true);
	H_EQ(b->p[0], 0);
	h_expect_down(t, &ev);
	h_signal(t, M_ACK);
}

/* A window fenced while bound lets go of its region at once. */
static void fence_releases_the_region(struct h_test *t)
{
	static uint8_t mem[4096];
	struct rr_mw *mw = h_mw_new(t);
	struct h_buf b = {.p = mem, .len = sizeof(mem)};

	H_OK(rr_mr_reg(t->pd, mem, sizeof(mem), RR_ACCESS_REMOTE_READ, &b.mr));
	bind_mw(t, mw, &b, 0, sizeof(mem), RR_ACCESS_REMOTE_READ, 50);
	H_OK(rr_mw_fence(mw));
	H_OK(rr_mr_dereg(b.mr));
}

void test_mw_fence(void **state)
{
	struct h_test *t = T(state);
	struct rr_cm_event ev;
	struct h_remote r;
	struct h_buf *b;
	struct rr_mw *mw;
	uint32_t key1;

	h_spawn(t, peer_reads_through_keys, NULL);
	h_active(t);
	fence_releases_the_region(t);
	b = h_buf_pattern(t, t->pd, FENCE_LEN, RR_ACCESS_REMOTE_READ, 31);
	mw = h_mw_new(t);
	H_OK(rr_mw_fence(mw)); /* never bound: nothing to do, no error */
	r = h_remote_of(
		b, bind_mw(t, mw, b, 0, FENCE_LEN, RR_ACCESS_REMOTE_READ, 1));
	key1 = r.rkey;
	h_msg_send(t, M_REMOTE, &r, sizeof(r));
	h_wait(t, M_STEP);
	/* Fenced, then bound again: under a new key, and usable. */
	H_OK(rr_mw_fence(mw));
	r.rkey = bind_mw(t, mw, b, 0, FENCE_LEN, RR_ACCESS_REMOTE_READ, 2);
	H_CHECK(r.rkey != key1, "rebound under the fenced key %#x", key1);
	h_msg_send(t, M_REMOTE, &r, sizeof(r));
	h_wait(t, M_STEP);
	/* Fenced while the peer holds the key: its read is refused. */
	H_OK(rr_mw_fence(mw));
	h_signal(t, M_GO);
	h_expect_down(t, &ev);
	h_wait(t, M_ACK);
	h_peer_finish(t);
	h_cleanup(t, true);
}
