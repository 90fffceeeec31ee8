/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The "faults" provider: two sides in one process, each on its own faults
 * device over iwarp on 127.0.0.1, side A with a fault plan and side B
 * without. Every test checks both what was injected and that each work
 * request still completes exactly once.
 */
#include "clock.h"
#include <rpcrdma/fabric.h>
#include <rpcrdma/faults.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CQ_DEPTH 1024
#define Q_DEPTH	 128
#define BUF_LEN	 (64 * 1024)
#define WAIT_MS	 5000
#define QUIET_MS 150

struct side {
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_cq *scq, *rcq;
	struct rr_evch *evch;
	struct rr_qp *qp;
	uint8_t *buf;
	struct rr_mr *mr;
	uint32_t sq_depth;
};

struct pair {
	struct side a, b;
	struct rr_listener *lst;
	uint16_t port;
};

/* ---------------------------------------------------------------- setup */

static void side_open(struct side *s, const struct rr_fault_plan *plan,
		      bool shared_cq)
{
	struct rr_device_opts o = {.inner = "iwarp", .faults = plan};
	const unsigned acc = RR_ACCESS_LOCAL_WRITE | RR_ACCESS_REMOTE_READ |
			     RR_ACCESS_REMOTE_WRITE;

	memset(s, 0, sizeof(*s));
	assert_int_equal(rr_device_open("faults", &o, &s->dev), 0);
	assert_int_equal(rr_pd_alloc(s->dev, &s->pd), 0);
	assert_int_equal(rr_cq_create(s->dev, CQ_DEPTH, &s->scq), 0);
	if (shared_cq)
		s->rcq = s->scq;
	else
		assert_int_equal(rr_cq_create(s->dev, CQ_DEPTH, &s->rcq), 0);
	assert_int_equal(rr_evch_create(s->dev, &s->evch), 0);
	s->buf = calloc(1, BUF_LEN);
	assert_non_null(s->buf);
	assert_int_equal(rr_mr_reg(s->pd, s->buf, BUF_LEN, acc, &s->mr), 0);
	s->sq_depth = Q_DEPTH;
}

static void side_close(struct side *s)
{
	assert_int_equal(rr_mr_dereg(s->mr), 0);
	free(s->buf);
	if (s->rcq != s->scq)
		assert_int_equal(rr_cq_destroy(s->rcq), 0);
	assert_int_equal(rr_cq_destroy(s->scq), 0);
	assert_int_equal(rr_evch_destroy(s->evch), 0);
	assert_int_equal(rr_pd_free(s->pd), 0);
	assert_int_equal(rr_device_close(s->dev), 0);
}

static struct rr_qp *qp_new(struct side *s)
{
	struct rr_qp_attr a = {.send_cq = s->scq,
			       .recv_cq = s->rcq,
			       .evch = s->evch,
			       .sq_depth = s->sq_depth,
			       .rq_depth = Q_DEPTH,
			       .max_send_sge = 2,
			       .max_recv_sge = 2,
			       .ird = 4,
			       .ord = 4,
			       .context = s};
	struct rr_qp *qp;

	assert_int_equal(rr_qp_create(s->pd, &a, &qp), 0);
	assert_ptr_equal(rr_qp_context(qp), s);
	return qp;
}

static void next_event(struct side *s, struct rr_cm_event *ev)
{
	int rc = rr_evch_get(s->evch, ev, WAIT_MS);

	assert_int_equal(rc, 0);
}

static void expect_event(struct side *s, enum rr_cm_event_type type,
			 struct rr_qp *qp)
{
	struct rr_cm_event ev;

	next_event(s, &ev);
	assert_string_equal(rr_cm_event_str(ev.type), rr_cm_event_str(type));
	assert_ptr_equal(ev.qp, qp);
}

static void expect_down(struct side *s, struct rr_qp *qp)
{
	struct rr_cm_event ev;

	next_event(s, &ev);
	assert_true(ev.type == RR_CM_DISCONNECTED || ev.type == RR_CM_QP_ERROR);
	assert_ptr_equal(ev.qp, qp);
}

/* A new connection between fresh QPs of a and b (b listens). */
static void connect_qps(struct pair *p, struct rr_qp **qa, struct rr_qp **qb)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(p->port)};
	struct rr_cm_event ev;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*qa = qp_new(&p->a);
	assert_int_equal(rr_qp_connect(*qa, (struct sockaddr *)&sin,
				       sizeof(sin), "hi", 2),
			 0);
	next_event(&p->b, &ev);
	assert_int_equal(ev.type, RR_CM_CONNECT_REQUEST);
	assert_ptr_equal(ev.listener, p->lst);
	assert_int_equal(ev.private_data_len, 2);
	assert_non_null(ev.req);
	*qb = qp_new(&p->b);
	assert_int_equal(rr_conn_req_accept(ev.req, *qb, NULL, 0), 0);
	expect_event(&p->a, RR_CM_ESTABLISHED, *qa);
	expect_event(&p->b, RR_CM_ESTABLISHED, *qb);
	assert_int_equal(rr_qp_state(*qa), RR_QPS_RTS);
}

static void pair_open_sq(struct pair *p, const struct rr_fault_plan *plan,
			 bool shared_cq, uint32_t sq_depth)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_storage ss;

	memset(p, 0, sizeof(*p));
	side_open(&p->a, plan, shared_cq);
	side_open(&p->b, NULL, false);
	p->a.sq_depth = sq_depth;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(rr_listener_create(p->b.dev, p->b.evch,
					    (struct sockaddr *)&sin,
					    sizeof(sin), 8, &p->lst),
			 0);
	assert_int_equal(rr_listener_addr(p->lst, &ss), 0);
	p->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	connect_qps(p, &p->a.qp, &p->b.qp);
}

static void pair_open(struct pair *p, const struct rr_fault_plan *plan,
		      bool shared_cq)
{
	pair_open_sq(p, plan, shared_cq, Q_DEPTH);
}

static void pair_close(struct pair *p)
{
	assert_int_equal(rr_qp_destroy(p->a.qp), 0);
	assert_int_equal(rr_qp_destroy(p->b.qp), 0);
	assert_int_equal(rr_listener_close(p->lst), 0);
	side_close(&p->a);
	side_close(&p->b);
}

static struct rr_fault_stats stats(struct side *s)
{
	struct rr_fault_stats st;

	assert_int_equal(rr_faults_stats(s->dev, &st), 0);
	return st;
}

/* ---------------------------------------------------------- work requests */

static int post_recv(struct side *s, struct rr_qp *qp, uint64_t id, size_t off)
{
	struct rr_sge sge = {.addr = (uintptr_t)(s->buf + off),
			     .length = 256,
			     .lkey = rr_mr_lkey(s->mr)};
	struct rr_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};

	return rr_qp_post_recv(qp, &wr, NULL);
}

static void fill_wr(struct side *s, struct rr_send_wr *wr, struct rr_sge *sge,
		    enum rr_wr_opcode op, uint64_t id, size_t off, size_t len)
{
	*sge = (struct rr_sge){.addr = (uintptr_t)(s->buf + off),
			       .length = (uint32_t)len,
			       .lkey = rr_mr_lkey(s->mr)};
	*wr = (struct rr_send_wr){.wr_id = id,
				  .opcode = op,
				  .flags = RR_SEND_SIGNALED,
				  .sg_list = sge,
				  .num_sge = 1};
}

static int post_send(struct side *s, struct rr_qp *qp, uint64_t id)
{
	struct rr_send_wr wr;
	struct rr_sge sge;

	fill_wr(s, &wr, &sge, RR_WR_SEND, id, 4096, 64);
	return rr_qp_post_send(qp, &wr, NULL);
}

static int post_reg(struct side *s, struct rr_qp *qp, struct rr_mw *mw,
		    uint64_t id)
{
	struct rr_send_wr wr = {
		.wr_id = id, .opcode = RR_WR_REG, .flags = RR_SEND_SIGNALED};

	wr.reg.mw = mw;
	wr.reg.mr = s->mr;
	wr.reg.addr = (uintptr_t)s->buf;
	wr.reg.length = 8192;
	wr.reg.access = RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE;
	return rr_qp_post_send(qp, &wr, NULL);
}

/* 1 and *wc, or 0 when nothing came within timeout_ms. */
static int poll_wc(struct rr_cq *cq, struct rr_wc *wc, int timeout_ms)
{
	uint64_t end = rr_t_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		int n = rr_cq_poll(cq, wc, 1), left;

		assert_true(n >= 0);
		if (n)
			return 1;
		left = (int)(end - rr_t_now_ms());
		if (rr_t_now_ms() >= end)
			return 0;
		rr_cq_wait(cq, left);
	}
}

static void expect_wc(struct rr_cq *cq, uint64_t id, enum rr_wc_status st,
		      enum rr_wc_opcode op, struct rr_qp *qp)
{
	struct rr_wc wc;

	assert_int_equal(poll_wc(cq, &wc, WAIT_MS), 1);
	assert_int_equal(wc.wr_id, id);
	assert_string_equal(rr_wc_status_str(wc.status), rr_wc_status_str(st));
	assert_int_equal(wc.opcode, op);
	assert_ptr_equal(wc.qp, qp);
}

static void expect_quiet(struct rr_cq *cq)
{
	struct rr_wc wc;

	assert_int_equal(poll_wc(cq, &wc, QUIET_MS), 0);
}

/*
 * An RDMA Write of 16 bytes from qp to (addr, rkey), fenced by a signaled
 * Read of the peer's MR, so the outcome is known once both completed.
 * Returns the status of the first request that did not succeed.
 */
static enum rr_wc_status write_fenced(struct side *s, struct rr_qp *qp,
				      uint64_t addr, uint32_t rkey,
				      uint64_t fence_addr, uint32_t fence_rkey)
{
	struct rr_send_wr wr[2];
	struct rr_sge sge[2];
	enum rr_wc_status st = RR_WC_SUCCESS;

	memset(s->buf + 8192, 0x5a, 16);
	fill_wr(s, &wr[0], &sge[0], RR_WR_RDMA_WRITE, 1, 8192, 16);
	wr[0].rdma.remote_addr = addr;
	wr[0].rdma.rkey = rkey;
	fill_wr(s, &wr[1], &sge[1], RR_WR_RDMA_READ, 2, 12288, 16);
	wr[1].rdma.remote_addr = fence_addr;
	wr[1].rdma.rkey = fence_rkey;
	wr[0].next = &wr[1];
	assert_int_equal(rr_qp_post_send(qp, wr, NULL), 0);
	for (uint64_t id = 1; id <= 2; id++) {
		struct rr_wc wc;

		assert_int_equal(poll_wc(s->scq, &wc, WAIT_MS), 1);
		assert_int_equal(wc.wr_id, id);
		if (st == RR_WC_SUCCESS)
			st = wc.status;
		else
			assert_int_equal(wc.status, RR_WC_WR_FLUSH_ERR);
	}
	return st;
}

/* ---------------------------------------------------------------- tests */

/* The reply's receive completion is seen before the call's Send. */
static void test_delay_send_cqe(void **state)
{
	struct rr_fault_plan plan = {.seed = 1,
				     .delay_send_cqe_ppm = RR_PPM_ALWAYS};
	struct pair p;
	struct rr_wc wc;

	(void)state;
	pair_open(&p, &plan, true);
	assert_int_equal(post_recv(&p.a, p.a.qp, 100, 0), 0);
	assert_int_equal(post_recv(&p.b, p.b.qp, 200, 0), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 1), 0);
	expect_wc(p.b.rcq, 200, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	/* The call arrived, yet its completion is held back. */
	expect_quiet(p.a.scq);
	assert_int_equal(stats(&p.a).send_cqes_delayed, 1);

	assert_int_equal(post_send(&p.b, p.b.qp, 2), 0);
	expect_wc(p.b.scq, 2, RR_WC_SUCCESS, RR_WC_SEND, p.b.qp);
	expect_wc(p.a.scq, 100, RR_WC_SUCCESS, RR_WC_RECV, p.a.qp);
	expect_wc(p.a.scq, 1, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	expect_quiet(p.a.scq);
	assert_int_equal(poll_wc(p.a.scq, &wc, 0), 0);

	assert_int_equal(stats(&p.a).send_cqes_delayed, 1);
	assert_int_equal(stats(&p.b).send_cqes_delayed, 0);
	pair_close(&p);
}

/* A held completion goes once the QP leaves RTS, and wakes rr_cq_wait. */
static void test_delay_released_by_disconnect(void **state)
{
	struct rr_fault_plan plan = {.seed = 6,
				     .delay_send_cqe_ppm = RR_PPM_ALWAYS};
	struct pair p;

	(void)state;
	pair_open(&p, &plan, false);
	assert_int_equal(post_recv(&p.b, p.b.qp, 200, 0), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 1), 0);
	expect_wc(p.b.rcq, 200, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	expect_quiet(p.a.scq);
	assert_int_equal(stats(&p.a).send_cqes_delayed, 1);
	assert_int_equal(rr_qp_disconnect(p.b.qp), 0);
	expect_event(&p.b, RR_CM_DISCONNECTED, p.b.qp);
	assert_int_equal(rr_cq_wait(p.a.scq, WAIT_MS), 0);
	expect_wc(p.a.scq, 1, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	expect_quiet(p.a.scq);
	expect_down(&p.a, p.a.qp);
	pair_close(&p);
}

/*
 * With delay_send_cqe_max_ms, a held completion goes when its time is up
 * though no receive ever comes: the peer here never answers.
 */
static void test_delay_bounded_in_time(void **state)
{
	struct rr_fault_plan plan = {.seed = 8,
				     .delay_send_cqe_ppm = RR_PPM_ALWAYS,
				     .delay_send_cqe_max_ms = 1000};
	struct pair p;

	(void)state;
	pair_open(&p, &plan, true);
	assert_int_equal(post_recv(&p.b, p.b.qp, 200, 0), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 1), 0);
	expect_wc(p.b.rcq, 200, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	expect_quiet(p.a.scq); /* held, and QUIET_MS is well inside the bound */
	assert_int_equal(stats(&p.a).send_cqes_delayed, 1);
	expect_wc(p.a.scq, 1, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	expect_quiet(p.a.scq);
	pair_close(&p);
}

/* A held completion keeps its send-queue slot until it is delivered. */
static void test_delay_keeps_slot(void **state)
{
	struct rr_fault_plan plan = {.seed = 7,
				     .delay_send_cqe_ppm = RR_PPM_ALWAYS};
	struct pair p;

	(void)state;
	pair_open_sq(&p, &plan, true, 2);
	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(post_recv(&p.b, p.b.qp, 200 + i, 0), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 1), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 2), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 3), -ENOMEM);
	expect_wc(p.b.rcq, 200, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	expect_wc(p.b.rcq, 201, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	expect_quiet(p.a.scq); /* both held: the inner QP's slots are free */
	assert_int_equal(stats(&p.a).send_cqes_delayed, 2);
	assert_int_equal(post_send(&p.a, p.a.qp, 3), -ENOMEM);

	assert_int_equal(post_recv(&p.a, p.a.qp, 100, 0), 0);
	assert_int_equal(post_send(&p.b, p.b.qp, 9), 0);
	expect_wc(p.a.scq, 100, RR_WC_SUCCESS, RR_WC_RECV, p.a.qp);
	expect_wc(p.a.scq, 1, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	expect_wc(p.a.scq, 2, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	assert_int_equal(post_send(&p.a, p.a.qp, 3), 0);
	expect_wc(p.b.rcq, 202, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	expect_wc(p.b.scq, 9, RR_WC_SUCCESS, RR_WC_SEND, p.b.qp);
	pair_close(&p);
}

/* A failed REG: MW_BIND_ERR, the connection is gone, the key never bound. */
static void test_fail_reg(void **state)
{
	struct rr_fault_plan plan = {.seed = 2, .fail_reg_ppm = RR_PPM_ALWAYS};
	struct pair p;
	struct rr_qp *a2, *b2;
	struct rr_mw *mw;
	uint32_t key;
	uint8_t zero[16] = {0};

	(void)state;
	pair_open(&p, &plan, false);
	assert_int_equal(rr_mw_alloc(p.a.pd, &mw), 0);
	key = rr_mw_rkey(mw);
	assert_int_equal(post_reg(&p.a, p.a.qp, mw, 7), 0);
	expect_wc(p.a.scq, 7, RR_WC_MW_BIND_ERR, RR_WC_REG, p.a.qp);
	expect_quiet(p.a.scq);
	assert_int_equal(rr_qp_state(p.a.qp), RR_QPS_ERROR);
	expect_event(&p.a, RR_CM_DISCONNECTED, p.a.qp);
	expect_down(&p.b, p.b.qp);
	assert_int_equal(post_send(&p.b, p.b.qp, 3), -ENOTCONN);
	assert_int_equal(rr_mw_rkey(mw), key);
	assert_int_equal(stats(&p.a).regs_failed, 1);

	/* Another connection: the window's key is refused. */
	connect_qps(&p, &a2, &b2);
	assert_int_equal(write_fenced(&p.b, b2, (uintptr_t)p.a.buf, key,
				      (uintptr_t)p.a.buf, rr_mr_rkey(p.a.mr)),
			 RR_WC_REM_ACCESS_ERR);
	assert_memory_equal(p.a.buf, zero, sizeof(zero));
	expect_down(&p.b, b2);
	expect_down(&p.a, a2);
	assert_int_equal(rr_qp_destroy(a2), 0);
	assert_int_equal(rr_qp_destroy(b2), 0);
	assert_int_equal(rr_mw_free(mw), 0);
	pair_close(&p);
}

/* A failed LOCAL_INV: LOC_PROT_ERR, the connection is gone, the key lives. */
static void test_fail_inv(void **state)
{
	struct rr_fault_plan plan = {.seed = 3, .fail_inv_ppm = RR_PPM_ALWAYS};
	struct rr_send_wr inv = {.wr_id = 9,
				 .opcode = RR_WR_LOCAL_INV,
				 .flags = RR_SEND_SIGNALED};
	uint8_t want[16];
	struct pair p;
	struct rr_qp *a2, *b2;
	struct rr_mw *mw;
	uint32_t key0, key;

	(void)state;
	pair_open(&p, &plan, false);
	assert_int_equal(rr_mw_alloc(p.a.pd, &mw), 0);
	key0 = rr_mw_rkey(mw);
	assert_int_equal(post_reg(&p.a, p.a.qp, mw, 8), 0);
	key = rr_mw_rkey(mw);
	assert_int_not_equal(key, key0);
	expect_wc(p.a.scq, 8, RR_WC_SUCCESS, RR_WC_REG, p.a.qp);
	inv.invalidate_rkey = key;
	assert_int_equal(rr_qp_post_send(p.a.qp, &inv, NULL), 0);
	expect_wc(p.a.scq, 9, RR_WC_LOC_PROT_ERR, RR_WC_LOCAL_INV, p.a.qp);
	expect_quiet(p.a.scq);
	assert_int_equal(rr_qp_state(p.a.qp), RR_QPS_ERROR);
	expect_event(&p.a, RR_CM_DISCONNECTED, p.a.qp);
	expect_down(&p.b, p.b.qp);
	assert_int_equal(stats(&p.a).invs_failed, 1);

	/* The key is still valid: only the connection loss fenced it. */
	connect_qps(&p, &a2, &b2);
	assert_int_equal(write_fenced(&p.b, b2, (uintptr_t)p.a.buf + 32, key,
				      (uintptr_t)p.a.buf, rr_mr_rkey(p.a.mr)),
			 RR_WC_SUCCESS);
	memset(want, 0x5a, sizeof(want));
	assert_memory_equal(p.a.buf + 32, want, sizeof(want));
	assert_int_equal(rr_qp_destroy(a2), 0);
	assert_int_equal(rr_qp_destroy(b2), 0);
	assert_int_equal(rr_mw_free(mw), 0);
	pair_close(&p);
}

/*
 * hold_invs: a LOCAL_INV and what follows it wait until released; the
 * key works for the peer meanwhile, and not once the release completed.
 */
static void test_hold_inv(void **state)
{
	struct rr_fault_plan plan = {.seed = 5, .hold_invs = true};
	struct rr_send_wr inv = {.wr_id = 9,
				 .opcode = RR_WR_LOCAL_INV,
				 .flags = RR_SEND_SIGNALED};
	uint64_t ids[2];
	uint32_t keys[2];
	struct pair p;
	struct rr_mw *mw;
	uint32_t key;

	(void)state;
	pair_open(&p, &plan, false);
	assert_int_equal(post_recv(&p.b, p.b.qp, 1, 0), 0);
	assert_int_equal(rr_mw_alloc(p.a.pd, &mw), 0);
	assert_int_equal(post_reg(&p.a, p.a.qp, mw, 8), 0);
	key = rr_mw_rkey(mw);
	expect_wc(p.a.scq, 8, RR_WC_SUCCESS, RR_WC_REG, p.a.qp);
	inv.invalidate_rkey = key;
	assert_int_equal(rr_qp_post_send(p.a.qp, &inv, NULL), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 10), 0);
	expect_quiet(p.a.scq);
	expect_quiet(p.b.rcq); /* the Send waits behind the LOCAL_INV */
	assert_int_equal(rr_faults_held_invs(p.a.dev, ids, keys, 2), 1);
	assert_int_equal(ids[0], 9);
	assert_int_equal(keys[0], key);
	/* Held: the key is still valid, the peer reaches the memory. */
	assert_int_equal(write_fenced(&p.b, p.b.qp, (uintptr_t)p.a.buf + 32,
				      key, (uintptr_t)p.a.buf,
				      rr_mr_rkey(p.a.mr)),
			 RR_WC_SUCCESS);
	assert_int_equal(rr_faults_release(p.a.dev), 2);
	expect_wc(p.a.scq, 9, RR_WC_SUCCESS, RR_WC_LOCAL_INV, p.a.qp);
	expect_wc(p.a.scq, 10, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	expect_wc(p.b.rcq, 1, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	assert_int_equal(rr_faults_held_invs(p.a.dev, NULL, NULL, 0), 0);
	/* Released and completed: the key is dead. */
	assert_int_not_equal(write_fenced(&p.b, p.b.qp, (uintptr_t)p.a.buf + 32,
					  key, (uintptr_t)p.a.buf,
					  rr_mr_rkey(p.a.mr)),
			     RR_WC_SUCCESS);
	assert_int_equal(stats(&p.a).invs_held, 1);
	assert_int_equal(stats(&p.a).wrs_released, 2);
	assert_int_equal(rr_mw_free(mw), 0);
	pair_close(&p);
}

/*
 * hold_regs: a REG and what follows it wait until released; the window
 * takes its new key only then, and the peer can use that key once the
 * REG completed.
 */
static void test_hold_reg(void **state)
{
	struct rr_fault_plan plan = {.seed = 9, .hold_regs = true};
	struct pair p;
	struct rr_mw *mw;
	uint32_t old, next;

	(void)state;
	pair_open(&p, &plan, false);
	assert_int_equal(post_recv(&p.b, p.b.qp, 1, 0), 0);
	assert_int_equal(rr_mw_alloc(p.a.pd, &mw), 0);
	old = rr_mw_rkey(mw);
	next = rr_mw_rkey_next(mw);
	assert_int_equal(post_reg(&p.a, p.a.qp, mw, 8), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 10), 0);
	expect_quiet(p.a.scq);
	expect_quiet(p.b.rcq); /* the Send waits behind the REG */
	assert_int_equal(rr_mw_rkey(mw), old);
	assert_int_equal(stats(&p.a).regs_held, 1);
	assert_int_equal(rr_faults_held_invs(p.a.dev, NULL, NULL, 0), 0);
	assert_int_equal(rr_faults_release(p.a.dev), 2);
	expect_wc(p.a.scq, 8, RR_WC_SUCCESS, RR_WC_REG, p.a.qp);
	expect_wc(p.a.scq, 10, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	expect_wc(p.b.rcq, 1, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	assert_int_equal(rr_mw_rkey(mw), next);
	assert_int_equal(write_fenced(&p.b, p.b.qp, (uintptr_t)p.a.buf + 32,
				      next, (uintptr_t)p.a.buf,
				      rr_mr_rkey(p.a.mr)),
			 RR_WC_SUCCESS);
	assert_int_equal(stats(&p.a).wrs_released, 2);
	assert_int_equal(rr_mw_free(mw), 0);
	pair_close(&p);
}

/* What is held when the connection goes is flushed, once; nothing left. */
static void test_hold_flushed_by_disconnect(void **state)
{
	struct rr_fault_plan plan = {.seed = 6, .hold_invs = true};
	struct rr_send_wr inv = {.wr_id = 9,
				 .opcode = RR_WR_LOCAL_INV,
				 .flags = RR_SEND_SIGNALED,
				 .invalidate_rkey = 0x1234};
	struct pair p;

	(void)state;
	pair_open(&p, &plan, false);
	assert_int_equal(rr_qp_post_send(p.a.qp, &inv, NULL), 0);
	expect_quiet(p.a.scq);
	assert_int_equal(rr_qp_disconnect(p.a.qp), 0);
	expect_wc(p.a.scq, 9, RR_WC_WR_FLUSH_ERR, RR_WC_LOCAL_INV, p.a.qp);
	expect_quiet(p.a.scq);
	assert_int_equal(rr_faults_release(p.a.dev), 0);
	assert_int_equal(stats(&p.a).wrs_parked_flushed, 1);
	pair_close(&p);
}

/* Held requests keep their slots: a full queue refuses, and counts it. */
static void test_hold_keeps_slots(void **state)
{
	struct rr_fault_plan plan = {.seed = 7, .hold_invs = true};
	struct rr_send_wr inv = {.wr_id = 9,
				 .opcode = RR_WR_LOCAL_INV,
				 .flags = RR_SEND_SIGNALED,
				 .invalidate_rkey = 0x1234};
	struct pair p;

	(void)state;
	pair_open_sq(&p, &plan, false, 2);
	assert_int_equal(rr_qp_post_send(p.a.qp, &inv, NULL), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 10), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 11), -ENOMEM);
	assert_int_equal(stats(&p.a).sq_overruns, 1);
	assert_int_equal(rr_qp_disconnect(p.a.qp), 0);
	expect_wc(p.a.scq, 9, RR_WC_WR_FLUSH_ERR, RR_WC_LOCAL_INV, p.a.qp);
	expect_wc(p.a.scq, 10, RR_WC_WR_FLUSH_ERR, RR_WC_SEND, p.a.qp);
	pair_close(&p);
}

/* An injected completion is delivered as given, on the newest QP. */
static void test_inject(void **state)
{
	struct rr_fault_plan plan = {.seed = 8, .hold_invs = true};
	struct rr_wc wc = {.wr_id = 77,
			   .status = RR_WC_SUCCESS,
			   .opcode = RR_WC_LOCAL_INV};
	struct pair p;

	(void)state;
	pair_open(&p, &plan, false);
	assert_int_equal(rr_faults_inject(p.a.dev, &wc), 0);
	expect_wc(p.a.scq, 77, RR_WC_SUCCESS, RR_WC_LOCAL_INV, p.a.qp);
	expect_quiet(p.a.scq);
	assert_int_equal(stats(&p.a).cqes_injected, 1);
	/* Not a request of the QP: the QP goes on as before. */
	assert_int_equal(post_recv(&p.b, p.b.qp, 1, 0), 0);
	assert_int_equal(post_send(&p.a, p.a.qp, 20), 0);
	expect_wc(p.a.scq, 20, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	expect_wc(p.b.rcq, 1, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
	pair_close(&p);
}

/* A flushed WR and those chained behind it complete once, FLUSH_ERR. */
static void test_flush_wr(void **state)
{
	struct rr_fault_plan plan = {.seed = 4, .flush_wr_ppm = RR_PPM_ALWAYS};
	struct rr_send_wr wr[3];
	struct rr_sge sge[3];
	struct pair p;

	(void)state;
	pair_open(&p, &plan, false);
	assert_int_equal(post_recv(&p.a, p.a.qp, 50, 0), 0);
	for (int i = 0; i < 3; i++) {
		fill_wr(&p.a, &wr[i], &sge[i], RR_WR_SEND, 11 + (uint64_t)i,
			4096, 64);
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[1].flags = 0; /* an unsignaled request still gets its error */
	assert_int_equal(rr_qp_post_send(p.a.qp, wr, NULL), 0);
	for (uint64_t id = 11; id <= 13; id++)
		expect_wc(p.a.scq, id, RR_WC_WR_FLUSH_ERR, RR_WC_SEND, p.a.qp);
	expect_wc(p.a.rcq, 50, RR_WC_WR_FLUSH_ERR, RR_WC_RECV, p.a.qp);
	expect_quiet(p.a.scq);
	expect_quiet(p.a.rcq);
	assert_int_equal(rr_qp_state(p.a.qp), RR_QPS_ERROR);
	expect_event(&p.a, RR_CM_DISCONNECTED, p.a.qp);
	expect_down(&p.b, p.b.qp);
	assert_int_equal(post_send(&p.a, p.a.qp, 14), -ENOTCONN);
	assert_int_equal(stats(&p.a).wrs_flushed, 1);
	pair_close(&p);
}

/* Shuffled batches: 100 completions, each wr_id exactly once. */
static void test_reorder(void **state)
{
	struct rr_fault_plan plan = {.seed = 5, .reorder_ppm = RR_PPM_ALWAYS};
	enum { N = 100 };
	int seen[N] = {0}, got = 0, inversions = 0;
	uint64_t prev = 0, end;
	struct pair p;

	(void)state;
	pair_open(&p, &plan, false);
	for (int i = 0; i < N; i++)
		assert_int_equal(post_recv(&p.b, p.b.qp, (uint64_t)i, 0), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(post_send(&p.a, p.a.qp, 1000 + (uint64_t)i),
				 0);
	for (int i = 0; i < N; i++)
		expect_wc(p.b.rcq, (uint64_t)i, RR_WC_SUCCESS, RR_WC_RECV,
			  p.b.qp);
	end = rr_t_now_ms() + WAIT_MS;
	while (got < N && rr_t_now_ms() < end) {
		struct rr_wc wc[16];
		int n = rr_cq_poll(p.a.scq, wc, 16);

		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id - 1000;

			assert_true(id < N);
			assert_int_equal(wc[i].status, RR_WC_SUCCESS);
			assert_ptr_equal(wc[i].qp, p.a.qp);
			seen[id]++;
			inversions += got && id < prev;
			prev = id;
			got++;
		}
		if (!n)
			rr_cq_wait(p.a.scq, 100);
	}
	assert_int_equal(got, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(seen[i], 1);
	expect_quiet(p.a.scq);
	assert_true(inversions > 0);
	assert_true(stats(&p.a).batches_reordered >= 1);
	pair_close(&p);
}

/*
 * 200 Sends with a 50% delay: which were held is recorded. A held one is
 * released by a reply arriving on the other CQ, which rr_cq_wait on the
 * send CQ must notice.
 */
static void delay_run(uint64_t seed, uint8_t held[200])
{
	struct rr_fault_plan plan = {.seed = seed,
				     .delay_send_cqe_ppm = RR_PPM_ALWAYS / 2};
	struct pair p;
	uint64_t delayed = 0;

	pair_open(&p, &plan, false);
	assert_int_equal(post_recv(&p.b, p.b.qp, 0, 0), 0);
	for (uint64_t i = 0; i < 200; i++) {
		uint64_t end = rr_t_now_ms() + WAIT_MS;
		struct rr_wc wc;
		int n = 0;

		assert_int_equal(post_send(&p.a, p.a.qp, i), 0);
		expect_wc(p.b.rcq, i, RR_WC_SUCCESS, RR_WC_RECV, p.b.qp);
		assert_int_equal(post_recv(&p.b, p.b.qp, i + 1, 0), 0);
		/* Either its completion comes, or it was held. */
		while (!n && stats(&p.a).send_cqes_delayed == delayed) {
			assert_true(rr_t_now_ms() < end);
			n = rr_cq_poll(p.a.scq, &wc, 1);
			if (!n)
				rr_cq_wait(p.a.scq, 2);
		}
		held[i] = n == 0;
		if (n) {
			assert_int_equal(wc.wr_id, i);
			continue;
		}
		delayed++;
		assert_int_equal(post_recv(&p.a, p.a.qp, 500 + i, 0), 0);
		assert_int_equal(post_send(&p.b, p.b.qp, 900 + i), 0);
		expect_wc(p.b.scq, 900 + i, RR_WC_SUCCESS, RR_WC_SEND, p.b.qp);
		expect_wc(p.a.rcq, 500 + i, RR_WC_SUCCESS, RR_WC_RECV, p.a.qp);
		assert_int_equal(rr_cq_wait(p.a.scq, WAIT_MS), 0);
		expect_wc(p.a.scq, i, RR_WC_SUCCESS, RR_WC_SEND, p.a.qp);
	}
	expect_quiet(p.a.scq);
	assert_int_equal(stats(&p.a).send_cqes_delayed, delayed);
	pair_close(&p);
}

static void test_seed_determinism(void **state)
{
	uint8_t h1[200], h2[200], h3[200];
	int n = 0;

	(void)state;
	delay_run(42, h1);
	delay_run(42, h2);
	delay_run(43, h3);
	assert_memory_equal(h1, h2, sizeof(h1));
	assert_memory_not_equal(h1, h3, sizeof(h1));
	for (int i = 0; i < 200; i++)
		n += h1[i];
	assert_true(n > 50 && n < 150);
}

/* A device without a plan injects nothing; stats are for faults only. */
static void test_no_plan(void **state)
{
	struct rr_device *dev;
	struct rr_device_opts o = {0};
	struct rr_fault_stats st;

	(void)state;
	assert_int_equal(rr_device_open("iwarp", NULL, &dev), 0);
	assert_int_equal(rr_faults_stats(dev, &st), -EINVAL);
	assert_int_equal(rr_device_close(dev), 0);
	assert_int_equal(rr_device_open("faults", &o, &dev), 0);
	assert_int_equal(rr_faults_stats(dev, &st), 0);
	assert_int_equal(st.send_cqes_delayed + st.batches_reordered +
				 st.regs_failed + st.invs_failed +
				 st.wrs_flushed,
			 0);
	assert_int_equal(rr_device_close(dev), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_plan),
		cmocka_unit_test(test_delay_send_cqe),
		cmocka_unit_test(test_delay_released_by_disconnect),
		cmocka_unit_test(test_delay_bounded_in_time),
		cmocka_unit_test(test_delay_keeps_slot),
		cmocka_unit_test(test_fail_reg),
		cmocka_unit_test(test_fail_inv),
		cmocka_unit_test(test_flush_wr),
		cmocka_unit_test(test_hold_inv),
		cmocka_unit_test(test_hold_reg),
		cmocka_unit_test(test_hold_flushed_by_disconnect),
		cmocka_unit_test(test_hold_keeps_slots),
		cmocka_unit_test(test_inject),
		cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_seed_determinism),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
