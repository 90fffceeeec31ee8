/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Helpers shared by the conformance tests. */
#define H_INTERNAL
#include "suite.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ------------------------------------------------------------- helpers */

struct h_test *T(void **state)
{
	return *state;
}

/*
 * RR_CONFORMANCE_REFUSAL_FLUSHES=1: the device tells a requester that its
 * peer refused a request (the peer's Terminate) only by flushing, without
 * the reason (siw: tests/fabric/CMakeLists.txt says why). The peer's error
 * is then not required on the send queue; all else is checked as ever.
 */
static bool refusal_flushes(void)
{
	const char *v = getenv("RR_CONFORMANCE_REFUSAL_FLUSHES");

	return v && strcmp(v, "1") == 0;
}

/*
 * The send-queue completions of ids (in posting order) after the peer
 * refused one of them: a prefix of at most max_success may be SUCCESS, then
 * one request may carry the peer's error (one of remote_ok; required if
 * remote_required, unless refusal_flushes()), then everything is FLUSH_ERR.
 * Under refusal_flushes() that one may instead be LOC_QP_OP_ERR: siw
 * completes the request it has in hand so when the peer's Terminate
 * resets the connection.
 */
void expect_sq_terminated(struct h_test *t, const uint64_t *ids, int n,
			  int max_success, unsigned remote_ok,
			  bool remote_required)
{
	bool after_error = false, saw_remote = false;

	for (int i = 0; i < n; i++) {
		struct rr_wc wc;

		h_wc(t, t->scq, &wc);
		H_CHECK(wc.wr_id == ids[i],
			"send completion %d has wr_id %llu, expected %llu", i,
			(unsigned long long)wc.wr_id,
			(unsigned long long)ids[i]);
		if (wc.status == RR_WC_SUCCESS) {
			H_CHECK(!after_error && i < max_success,
				"wr_id %llu completed SUCCESS although the "
				"peer refused an earlier request",
				(unsigned long long)wc.wr_id);
			continue;
		}
		if (!after_error && (remote_ok & BIT(wc.status))) {
			saw_remote = true;
			after_error = true;
			continue;
		}
		if (!after_error && refusal_flushes() &&
		    wc.status == RR_WC_LOC_QP_OP_ERR) {
			after_error = true;
			continue;
		}
		H_CHECK(wc.status == RR_WC_WR_FLUSH_ERR,
			"wr_id %llu completed %s, expected %s",
			(unsigned long long)wc.wr_id,
			rr_wc_status_str(wc.status),
			after_error ? "WR_FLUSH_ERR"
				    : "the peer's error or WR_FLUSH_ERR");
		after_error = true;
	}
	if (remote_required && !refusal_flushes())
		H_CHECK(saw_remote,
			"no send-queue completion carried the peer's error "
			"(expected %s on the refused request or the fence)",
			rr_wc_status_str(RR_WC_REM_ACCESS_ERR));
	h_expect_cq_empty(t, t->scq);
}

/* n completions, all FLUSH_ERR, wr_ids first..first+n-1 each exactly once. */
void expect_flushed(struct h_test *t, struct rr_cq *cq, uint64_t first, int n)
{
	uint8_t seen[256] = {0};

	H_CHECK(n <= 256, "too many");
	for (int i = 0; i < n; i++) {
		struct rr_wc wc;
		uint64_t k;

		h_wc(t, cq, &wc);
		k = wc.wr_id - first;
		H_CHECK(wc.status == RR_WC_WR_FLUSH_ERR,
			"wr_id %llu completed %s, expected WR_FLUSH_ERR",
			(unsigned long long)wc.wr_id,
			rr_wc_status_str(wc.status));
		H_CHECK(k < (uint64_t)n, "unknown wr_id %llu",
			(unsigned long long)wc.wr_id);
		H_CHECK(!seen[k], "wr_id %llu completed twice",
			(unsigned long long)wc.wr_id);
		seen[k] = 1;
	}
	h_expect_cq_empty(t, cq);
}

void post_recvs(struct h_test *t, const struct h_buf *b, uint64_t first, int n,
		size_t each)
{
	for (int i = 0; i < n; i++)
		H_OK(h_post_recv(t->qp, first + (uint64_t)i, b,
				 (size_t)i * each, each));
}

/* A 4 KiB remotely readable buffer for fence Reads. */
void send_fence(struct h_test *t)
{
	struct h_buf *f = h_buf_new(t, 4 * KiB, RR_ACCESS_REMOTE_READ);
	struct h_remote r = h_remote_of(f, rr_mr_rkey(f->mr));

	h_msg_send(t, M_FENCE, &r, sizeof(r));
}

void fence_wr(struct rr_send_wr *wr, struct rr_sge *sge,
	      const struct h_remote *fence, struct h_buf *local, uint64_t wr_id)
{
	h_wr_rdma(wr, sge, RR_WR_RDMA_READ, wr_id, RR_SEND_SIGNALED, local,
		  local->len - 1, 1, fence->addr, fence->rkey);
}

/* After the connection broke: QP in ERROR, posting says -ENOTCONN. */
void expect_qp_dead(struct h_test *t, struct h_buf *b)
{
	H_EQ(rr_qp_state(t->qp), RR_QPS_ERROR);
	H_RC(h_post_send(t->qp, 999, RR_SEND_SIGNALED, b, 0, 1), -ENOTCONN);
	h_expect_cq_empty(t, t->scq);
}

/*
 * Binds mw over [off, off+len) of b: with an RR_WR_REG, waiting for its
 * completion, where the device binds windows through a QP; else at once
 * with rr_mw_bind (registration per call: siw has no windows).
 */
uint32_t bind_mw(struct h_test *t, struct rr_mw *mw, struct h_buf *b,
		 size_t off, size_t len, unsigned access, uint64_t wr_id)
{
	if (!(t->attr.mw_bind & RR_MW_BIND_WR)) {
		H_OK(rr_mw_bind(mw, b->mr, (uint64_t)(uintptr_t)(b->p + off),
				len, access));
		return rr_mw_rkey(mw);
	}
	H_OK(h_post_reg(t->qp, wr_id, mw, b, off, len, access));
	h_expect_wc(t, t->scq, wr_id, RR_WC_SUCCESS, RR_WC_REG, NULL);
	return rr_mw_rkey(mw);
}

/* Undoes bind_mw: LOCAL_INV of rkey, waiting for it, or rr_mw_fence. */
void unbind_mw(struct h_test *t, struct rr_mw *mw, uint32_t rkey,
	       uint64_t wr_id)
{
	if (!(t->attr.mw_bind & RR_MW_BIND_WR)) {
		H_OK(rr_mw_fence(mw));
		return;
	}
	H_OK(h_post_local_inv(t->qp, wr_id, rkey));
	h_expect_wc(t, t->scq, wr_id, RR_WC_SUCCESS, RR_WC_LOCAL_INV, NULL);
}
