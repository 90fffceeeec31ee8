// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rr_mw_rkey_next: the key a REG will install is known before the REG is
 * posted, so a REG and the Send that advertises its key can go to the
 * device in one post (the client's call path does). The peer reads through
 * the advertised key; a wrong prediction fails that read.
 */
#include <string.h>

#include "suite.h"

#define ROUNDS	4
#define WIN_LEN (8 * KiB)
#define SEED	21

enum { ID_REG = 10, ID_SEND = 20, ID_LINV = 30, ID_RECV = 40, ID_READ = 50 };

/* Exposes a window per round: REG + Send of its key in one chain. */
static void peer_reg_send_chain(struct h_test *t, const void *arg)
{
	struct h_buf *b, *sb;
	struct rr_mw *mw;
	struct rr_sge sge;
	struct rr_send_wr wrs[2];

	(void)arg;
	h_passive(t);
	b = h_buf_pattern(t, t->pd, 64 * KiB,
			  RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE, SEED);
	sb = h_buf_new(t, sizeof(struct h_remote), 0);
	mw = h_mw_new(t);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		struct h_remote r = h_remote_of(b, rr_mw_rkey_next(mw));

		H_CHECK(r.rkey != rr_mw_rkey(mw),
			"the next key is the window's current key");
		r.addr += (i + 1) * 4096;
		r.len = WIN_LEN;
		memcpy(sb->p, &r, sizeof(r));
		wrs[0] = (struct rr_send_wr){
			.wr_id = ID_REG + i,
			.opcode = RR_WR_REG,
			.flags = RR_SEND_SIGNALED,
			.reg = {.mw = mw,
				.mr = b->mr,
				.addr = r.addr,
				.length = WIN_LEN,
				.access = RR_ACCESS_REMOTE_READ},
		};
		sge = (struct rr_sge){(uint64_t)(uintptr_t)sb->p, sizeof(r),
				      rr_mr_lkey(sb->mr)};
		wrs[1] = (struct rr_send_wr){.wr_id = ID_SEND + i,
					     .opcode = RR_WR_SEND,
					     .flags = RR_SEND_SIGNALED,
					     .sg_list = &sge,
					     .num_sge = 1};
		h_wait(t, M_READY);
		H_OK(h_post_chain(t->qp, wrs, 2));
		h_expect_wc(t, t->scq, ID_REG + i, RR_WC_SUCCESS, RR_WC_REG,
			    NULL);
		h_expect_wc(t, t->scq, ID_SEND + i, RR_WC_SUCCESS, RR_WC_SEND,
			    NULL);
		H_EQ(rr_mw_rkey(mw), r.rkey);
		h_wait(t, M_ACK);
		H_OK(h_post_local_inv(t->qp, ID_LINV + i, r.rkey));
		h_expect_wc(t, t->scq, ID_LINV + i, RR_WC_SUCCESS,
			    RR_WC_LOCAL_INV, NULL);
	}
	h_wait(t, M_GO);
}

void test_reg_send_one_post(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b, *rb;
	struct h_remote r;
	struct rr_wc wc;

	h_require(h_device_attr(t)->mw_bind & RR_MW_BIND_WR,
		  "the device binds windows only with rr_mw_bind (mw_bind "
		  "%#x): no RR_WR_REG to post with a Send",
		  h_device_attr(t)->mw_bind);
	h_spawn(t, peer_reg_send_chain, NULL);
	h_active(t);
	b = h_buf_new(t, WIN_LEN, 0);
	rb = h_buf_new(t, 64, 0);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		post_recvs(t, rb, ID_RECV + i, 1, 64);
		h_signal(t, M_READY);
		h_expect_wc(t, t->rcq, ID_RECV + i, RR_WC_SUCCESS, RR_WC_RECV,
			    &wc);
		H_EQ(wc.byte_len, sizeof(r));
		memcpy(&r, rb->p, sizeof(r));
		H_OK(h_post_rdma(t->qp, RR_WR_RDMA_READ, ID_READ + i,
				 RR_SEND_SIGNALED, b, 0, r.len, r.addr,
				 r.rkey));
		h_expect_wc(t, t->scq, ID_READ + i, RR_WC_SUCCESS,
			    RR_WC_RDMA_READ, &wc);
		H_EQ(wc.byte_len, WIN_LEN);
		H_CHECK(h_verify(b->p, WIN_LEN, SEED, (i + 1) * 4096) ==
				SIZE_MAX,
			"read through the advertised key returned wrong bytes");
		h_signal(t, M_ACK);
	}
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}
