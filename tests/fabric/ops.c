/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Every opcode, run with and without MPA CRC. */
#include "suite.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ================================================================= ops */

static const size_t send_sizes[] = {0, 1, 4095, 65536, MiB};
#define NSEND	   (sizeof(send_sizes) / sizeof(send_sizes[0]))
#define RECV_SLOT  (MiB + 8 * KiB)
#define RECV_SPLIT 777 /* first receive SGE length */
#define RECV_GAP   13

static void peer_sends(struct h_test *t, const void *arg)
{
	const struct send_shape *sh = arg;
	/* two SGEs: a short first one, a gap that must stay untouched */
	size_t split = sh->scatter == 2 ? RECV_SPLIT : MiB + 100,
	       gap = sh->scatter == 2 ? RECV_GAP : 0;
	struct h_buf *rb;
	uint8_t *tmp;

	h_passive(t);
	rb = h_buf_new(t, NSEND * RECV_SLOT, 0);
	for (size_t i = 0; i < NSEND; i++) {
		uint8_t *base = rb->p + i * RECV_SLOT;
		struct rr_sge sge[2] = {
			{(uint64_t)(uintptr_t)base, (uint32_t)split,
			 rr_mr_lkey(rb->mr)},
			{(uint64_t)(uintptr_t)(base + split + gap),
			 (uint32_t)(MiB + 100 - split), rr_mr_lkey(rb->mr)},
		};
		struct rr_recv_wr wr = {
			.wr_id = i + 1, .sg_list = sge, .num_sge = sh->scatter};
		struct rr_recv_wr *bad = NULL;

		H_OK(rr_qp_post_recv(t->qp, &wr, &bad));
	}
	h_signal(t, M_READY);
	tmp = malloc(MiB);
	H_CHECK(tmp, "oom");
	for (size_t i = 0; i < NSEND; i++) {
		struct rr_wc wc;
		uint8_t *base = rb->p + i * RECV_SLOT;
		size_t n = send_sizes[i], a = n < split ? n : split;

		h_expect_wc(t, t->rcq, i + 1, RR_WC_SUCCESS, RR_WC_RECV, &wc);
		H_EQ(wc.byte_len, n);
		H_EQ(wc.flags & (RR_WC_WITH_INV | RR_WC_SOLICITED), 0);
		memcpy(tmp, base, a);
		memcpy(tmp + a, base + split + gap, n - a);
		H_CHECK(h_verify(tmp, n, 100 + i, 0) == SIZE_MAX,
			"Send %zu of %zu bytes corrupted at byte %zu", i, n,
			h_verify(tmp, n, 100 + i, 0));
		for (size_t g = 0; g < gap; g++)
			H_EQ(base[split + g], 0);
		if (n >= split)
			H_EQ(base[split + gap + (n - a)], 0);
		else
			H_EQ(base[n], 0);
	}
	free(tmp);
	h_expect_cq_empty(t, t->rcq);
	h_wait(t, M_GO);
}

/*
 * Sends of sizes 0..1 MiB, gathered from sh->gather SGEs (1 or 3),
 * scattered into sh->scatter (1 or 2). Devices with fewer SGEs per work
 * request than that skip it (siw has one).
 */
void test_sends(void **state)
{
	struct h_test *t = T(state);
	const struct send_shape *sh = t->params->arg;
	uint32_t need = sh->gather > sh->scatter ? sh->gather : sh->scatter;
	struct h_buf *sb;
	struct rr_sge sge[NSEND][3];
	struct rr_send_wr wr[NSEND];
	struct rr_send_wr *bad = NULL;
	size_t off = 3;

	h_require(h_device_attr(t)->max_sge >= need,
		  "the device takes %u SGEs per work request, this test %u",
		  h_device_attr(t)->max_sge, need);
	h_spawn(t, peer_sends, sh);
	h_active(t);
	sb = h_buf_new(t, 2 * MiB + 64 * KiB, 0);
	memset(wr, 0, sizeof(wr));
	for (size_t i = 0; i < NSEND; i++) {
		size_t n = send_sizes[i], piece = n / sh->gather, done = 0;
		uint32_t k = 0;

		while (done < n) {
			size_t len = k + 1 == sh->gather ? n - done
				     : piece		 ? piece
							 : n;

			off += 7; /* unaligned, with gaps between pieces */
			h_fill(sb->p + off, len, 100 + i, done);
			sge[i][k].addr = (uint64_t)(uintptr_t)(sb->p + off);
			sge[i][k].length = (uint32_t)len;
			sge[i][k].lkey = rr_mr_lkey(sb->mr);
			off += len;
			done += len;
			k++;
		}
		wr[i].wr_id = i + 1;
		wr[i].opcode = RR_WR_SEND;
		wr[i].flags = RR_SEND_SIGNALED;
		wr[i].sg_list = k ? sge[i] : NULL;
		wr[i].num_sge = k;
		wr[i].next = i + 1 < NSEND ? &wr[i + 1] : NULL;
	}
	h_wait(t, M_READY);
	H_OK(rr_qp_post_send(t->qp, &wr[0], &bad));
	for (size_t i = 0; i < NSEND; i++)
		h_expect_wc(t, t->scq, i + 1, RR_WC_SUCCESS, RR_WC_SEND, NULL);
	h_expect_cq_empty(t, t->scq);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

static void peer_send_inv(struct h_test *t, const void *arg)
{
	struct h_buf *b, *rb;
	struct rr_mw *mw;
	struct h_remote r;
	struct rr_wc wc;
	struct rr_cm_event ev;
	struct rr_fabric_counters c0, c1;
	uint64_t sum;

	(void)arg;
	h_passive(t);
	b = h_buf_pattern(t, t->pd, 64 * KiB,
			  RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE, 7);
	sum = h_sum(b->p, b->len);
	rb = h_buf_new(t, 2 * 64, 0);
	mw = h_mw_new(t);
	r = h_remote_of(b, 0);
	r.addr += 4096;
	r.len = 8192;
	r.rkey = bind_mw(t, mw, b, 4096, 8192,
			 RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE, 50);
	post_recvs(t, rb, 1, 2, 64);
	send_fence(t);
	c0 = h_counters(t);
	h_msg_send(t, M_REMOTE, &r, sizeof(r));

	h_expect_wc(t, t->rcq, 1, RR_WC_SUCCESS, RR_WC_RECV, &wc);
	H_EQ(wc.byte_len, 16);
	H_CHECK(wc.flags & RR_WC_WITH_INV, "receive lacks RR_WC_WITH_INV");
	H_EQ(wc.invalidated_rkey, r.rkey);
	H_CHECK(h_verify(rb->p, 16, 8, 0) == SIZE_MAX, "payload corrupted");

	/* The peer's RDMA Write to the invalidated window is refused. */
	h_expect_down(t, &ev);
	expect_flushed(t, t->rcq, 2, 1);
	H_EQ(rr_qp_state(t->qp), RR_QPS_ERROR);
	H_CHECK(h_sum(b->p, b->len) == sum, "memory behind the window changed");
	c1 = h_counters(t);
	if (t->attr.responder_reasons)
		H_EQ(c1.bad_stag, c0.bad_stag + 1);
	h_signal(t, M_STEP);
	h_wait(t, M_GO);
}

/* Send With Invalidate: key reported on the receive, window dead after. */
void test_send_with_invalidate(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b;
	struct h_remote r, fence;
	struct rr_sge sge;
	struct rr_send_wr wr = {0}, *bad = NULL;
	struct rr_cm_event ev;
	struct rr_wc wc;
	const uint64_t ids[] = {3, 4};
	struct rr_send_wr wrs[2];
	struct rr_sge sges[2];

	h_spawn(t, peer_send_inv, NULL);
	h_active(t);
	b = h_buf_new(t, 16 * KiB, 0);
	h_msg_recv(t, M_FENCE, &fence, sizeof(fence));
	h_msg_recv(t, M_REMOTE, &r, sizeof(r));

	/* The window works before it is invalidated. */
	H_OK(h_post_rdma(t->qp, RR_WR_RDMA_READ, 1, RR_SEND_SIGNALED, b, 0,
			 r.len, r.addr, r.rkey));
	h_expect_wc(t, t->scq, 1, RR_WC_SUCCESS, RR_WC_RDMA_READ, &wc);
	H_EQ(wc.byte_len, r.len);
	H_CHECK(h_verify(b->p, r.len, 7, 4096) == SIZE_MAX,
		"RDMA Read through the window returned wrong bytes");

	h_fill(b->p + 8192, 16, 8, 0);
	sge.addr = (uint64_t)(uintptr_t)(b->p + 8192);
	sge.length = 16;
	sge.lkey = rr_mr_lkey(b->mr);
	wr.wr_id = 2;
	wr.opcode = RR_WR_SEND_WITH_INV;
	wr.flags = RR_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.invalidate_rkey = r.rkey;
	H_OK(rr_qp_post_send(t->qp, &wr, &bad));
	h_expect_wc(t, t->scq, 2, RR_WC_SUCCESS, RR_WC_SEND, NULL);

	h_wr_rdma(&wrs[0], &sges[0], RR_WR_RDMA_WRITE, 3, RR_SEND_SIGNALED, b,
		  0, 16, r.addr, r.rkey);
	fence_wr(&wrs[1], &sges[1], &fence, b, 4);
	H_OK(h_post_chain(t->qp, wrs, 2));
	expect_sq_terminated(t, ids, 2, 1, BIT(RR_WC_REM_ACCESS_ERR), true);
	h_expect_down(t, &ev);
	expect_qp_dead(t, b);
	h_wait(t, M_STEP);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

static void peer_solicited(struct h_test *t, const void *arg)
{
	struct h_buf *rb;
	struct rr_wc wc;

	(void)arg;
	h_passive(t);
	rb = h_buf_new(t, 256, 0);
	post_recvs(t, rb, 1, 2, 128);
	h_signal(t, M_READY);
	h_expect_wc(t, t->rcq, 1, RR_WC_SUCCESS, RR_WC_RECV, &wc);
	H_EQ(wc.byte_len, 10);
	H_EQ(wc.flags, 0);
	h_expect_wc(t, t->rcq, 2, RR_WC_SUCCESS, RR_WC_RECV, &wc);
	H_EQ(wc.byte_len, 11);
	H_EQ(wc.flags, RR_WC_SOLICITED);
	h_wait(t, M_GO);
}

void test_solicited(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b;

	h_spawn(t, peer_solicited, NULL);
	h_active(t);
	b = h_buf_new(t, 64, 0);
	h_wait(t, M_READY);
	H_OK(h_post_send(t->qp, 1, RR_SEND_SIGNALED, b, 0, 10));
	H_OK(h_post_send(t->qp, 2, RR_SEND_SIGNALED | RR_SEND_SOLICITED, b, 0,
			 11));
	h_expect_wc(t, t->scq, 1, RR_WC_SUCCESS, RR_WC_SEND, NULL);
	h_expect_wc(t, t->scq, 2, RR_WC_SUCCESS, RR_WC_SEND, NULL);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

static void peer_sends_on_go(struct h_test *t, const void *arg)
{
	struct h_buf *b;

	(void)arg;
	h_passive(t);
	b = h_buf_new(t, 64, 0);
	h_wait(t, M_GO);
	H_OK(h_post_send(t->qp, 1, RR_SEND_SIGNALED, b, 0, 12));
	h_expect_wc(t, t->scq, 1, RR_WC_SUCCESS, RR_WC_SEND, NULL);
	h_wait(t, M_STEP);
}

/*
 * rr_cq_wait_fd: the other descriptor alone wakes it (-EAGAIN), neither
 * lets it time out, a completion wakes it with the descriptor quiet, and
 * with both ready the completion is what it reports.
 */
void test_cq_wait_fd(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *rb;
	struct rr_wc wc;
	int pfd[2];
	char c = 'x';

	H_OK(pipe(pfd) ? -errno : 0);
	h_spawn(t, peer_sends_on_go, NULL);
	h_active(t);
	rb = h_buf_new(t, 64, 0);
	post_recvs(t, rb, 1, 1, 64);
	H_EQ(write(pfd[1], &c, 1), 1);
	H_EQ(rr_cq_wait_fd(t->rcq, 20000, pfd[0]), -EAGAIN);
	H_EQ(read(pfd[0], &c, 1), 1);
	H_EQ(rr_cq_wait_fd(t->rcq, 50, pfd[0]), -ETIMEDOUT);
	h_signal(t, M_GO);
	H_EQ(rr_cq_wait_fd(t->rcq, 20000, pfd[0]), 0);
	H_EQ(write(pfd[1], &c, 1), 1);
	H_EQ(rr_cq_wait_fd(t->rcq, 20000, pfd[0]), 0);
	H_EQ(rr_cq_poll(t->rcq, &wc, 1), 1);
	H_EQ(wc.wr_id, 1);
	H_EQ(wc.status, RR_WC_SUCCESS);
	H_EQ(wc.byte_len, 12);
	h_signal(t, M_STEP);
	h_peer_finish(t);
	close(pfd[0]);
	close(pfd[1]);
	h_cleanup(t, true);
}

/* RDMA Writes: sizes and (disjoint, unaligned) target offsets. */
static const size_t write_sizes[] = {0, 1, 4095, 65536, MiB};
#define NWRITE	   (sizeof(write_sizes) / sizeof(write_sizes[0]))
#define WRITE_AREA (2 * MiB)

static size_t write_off(size_t i)
{
	size_t off = 1;

	for (size_t k = 0; k < i; k++)
		off += write_sizes[k] + 5;
	return off;
}

static void peer_writes(struct h_test *t, const void *arg)
{
	struct h_buf *b, *rb;
	struct h_remote r;
	size_t end = 0;

	(void)arg;
	h_passive(t);
	b = h_buf_pattern(t, t->pd, WRITE_AREA, RR_ACCESS_REMOTE_WRITE, 9);
	rb = h_buf_new(t, NWRITE * 64, 0);
	post_recvs(t, rb, 1, NWRITE, 64);
	r = h_remote_of(b, rr_mr_rkey(b->mr));
	h_msg_send(t, M_REMOTE, &r, sizeof(r));
	for (size_t i = 0; i < NWRITE; i++) {
		struct rr_wc wc;
		struct msg_hdr m;
		size_t off = write_off(i), n = write_sizes[i], bad;

		h_expect_wc(t, t->rcq, i + 1, RR_WC_SUCCESS, RR_WC_RECV, &wc);
		H_EQ(wc.byte_len, sizeof(m));
		memcpy(&m, rb->p + i * 64, sizeof(m));
		H_EQ(m.k, i);
		H_EQ(m.off, off);
		H_EQ(m.len, n);
		H_CHECK(h_sum(b->p + off, n) == m.sum,
			"checksum of Write %zu (%zu bytes at %zu) differs", i,
			n, off);
		bad = h_verify(b->p + off, n, 10, off);
		H_CHECK(bad == SIZE_MAX, "Write %zu wrong at byte %zu", i, bad);
		/* The bytes before it (since the previous Write) untouched. */
		bad = h_verify(b->p + end, off - end, 9, end);
		H_CHECK(bad == SIZE_MAX, "byte %zu outside the Writes changed",
			end + bad);
		end = off + n;
	}
	H_CHECK(h_verify(b->p + end, b->len - end, 9, end) == SIZE_MAX,
		"bytes after the last Write changed");
	h_wait(t, M_GO);
}

void test_writes(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b, *hb;
	struct h_remote r;

	h_spawn(t, peer_writes, NULL);
	h_active(t);
	b = h_buf_new(t, WRITE_AREA, 0);
	hb = h_buf_new(t, NWRITE * sizeof(struct msg_hdr), 0);
	h_msg_recv(t, M_REMOTE, &r, sizeof(r));
	for (size_t i = 0; i < NWRITE; i++) {
		size_t off = write_off(i), n = write_sizes[i];
		struct msg_hdr m = {i, off, n, 0};

		h_fill(b->p + off, n, 10, off);
		m.sum = h_sum(b->p + off, n);
		memcpy(hb->p + i * sizeof(m), &m, sizeof(m));
		H_OK(h_post_rdma(t->qp, RR_WR_RDMA_WRITE, 2 * i + 1,
				 RR_SEND_SIGNALED, b, off, n, r.addr + off,
				 r.rkey));
		H_OK(h_post_send(t->qp, 2 * i + 2, RR_SEND_SIGNALED, hb,
				 i * sizeof(m), sizeof(m)));
	}
	for (size_t i = 0; i < NWRITE; i++) {
		h_expect_wc(t, t->scq, 2 * i + 1, RR_WC_SUCCESS,
			    RR_WC_RDMA_WRITE, NULL);
		h_expect_wc(t, t->scq, 2 * i + 2, RR_WC_SUCCESS, RR_WC_SEND,
			    NULL);
	}
	h_expect_cq_empty(t, t->scq);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

/* RDMA Reads: {size, remote offset, local offset}. */
static const size_t reads[][3] = {
	{1, 0, 0},	   {7, 3, 5},	  {4095, 4097, 11},
	{65536, 12345, 1}, {MiB, 777, 3}, {MiB - 1, MiB + 1, 2},
};
#define NREAD (sizeof(reads) / sizeof(reads[0]))

static void peer_reads(struct h_test *t, const void *arg)
{
	struct h_buf *b;
	struct h_remote r;
	uint64_t sum;

	(void)arg;
	h_passive(t);
	b = h_buf_pattern(t, t->pd, 2 * MiB + 4 * KiB, RR_ACCESS_REMOTE_READ,
			  11);
	sum = h_sum(b->p, b->len);
	r = h_remote_of(b, rr_mr_rkey(b->mr));
	h_msg_send(t, M_REMOTE, &r, sizeof(r));
	h_wait(t, M_GO);
	H_CHECK(h_sum(b->p, b->len) == sum, "RDMA Read changed the source");
}

void test_reads(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b;
	struct h_remote r;
	size_t slot = MiB + 64;

	h_spawn(t, peer_reads, NULL);
	h_active(t);
	b = h_buf_new(t, NREAD * slot, 0);
	h_msg_recv(t, M_REMOTE, &r, sizeof(r));
	for (size_t i = 0; i < NREAD; i++)
		H_OK(h_post_rdma(t->qp, RR_WR_RDMA_READ, i + 1,
				 RR_SEND_SIGNALED, b, i * slot + reads[i][2],
				 reads[i][0], r.addr + reads[i][1], r.rkey));
	for (size_t i = 0; i < NREAD; i++) {
		struct rr_wc wc;
		uint8_t *p = b->p + i * slot + reads[i][2];
		size_t bad;

		h_expect_wc(t, t->scq, i + 1, RR_WC_SUCCESS, RR_WC_RDMA_READ,
			    &wc);
		H_EQ(wc.byte_len, reads[i][0]);
		bad = h_verify(p, reads[i][0], 11, reads[i][1]);
		H_CHECK(bad == SIZE_MAX,
			"Read %zu (%zu bytes at remote offset %zu) wrong at "
			"byte %zu",
			i, reads[i][0], reads[i][1], bad);
		if (p > b->p)
			H_EQ(p[-1], 0);
		H_EQ(p[reads[i][0]], 0);
	}
	h_expect_cq_empty(t, t->scq);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

#define MW_OFF (8192 + 3)
#define MW_LEN 10000

static void peer_mw(struct h_test *t, const void *arg)
{
	struct h_buf *b, *rb;
	struct rr_mw *mw;
	struct h_remote r;
	struct rr_wc wc;
	struct msg_hdr m;
	uint32_t k1, k2;
	size_t bad;

	(void)arg;
	h_passive(t);
	b = h_buf_pattern(t, t->pd, 64 * KiB,
			  RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE, 12);
	rb = h_buf_new(t, 64, 0);
	post_recvs(t, rb, 1, 1, 64);
	mw = h_mw_new(t);
	/* A valid window must be invalidated before it is bound again. */
	k1 = bind_mw(t, mw, b, 0, 100, RR_ACCESS_REMOTE_READ, 1);
	unbind_mw(t, mw, k1, 3);
	k2 = bind_mw(t, mw, b, MW_OFF, MW_LEN,
		     RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE, 2);
	H_CHECK(k1 != k2, "binding again did not change the rkey (0x%x)", k1);
	/* A REG turns only a window's key byte; per call, a region is new. */
	if (t->attr.mw_bind & RR_MW_BIND_WR)
		H_EQ(k1 >> 8, k2 >> 8);
	r = h_remote_of(b, k2);
	r.addr += MW_OFF;
	r.len = MW_LEN;
	h_msg_send(t, M_REMOTE, &r, sizeof(r));

	h_expect_wc(t, t->rcq, 1, RR_WC_SUCCESS, RR_WC_RECV, &wc);
	H_EQ(wc.byte_len, sizeof(m));
	memcpy(&m, rb->p, sizeof(m));
	H_EQ(m.len, 100);
	H_CHECK(h_sum(b->p + MW_OFF + m.off, m.len) == m.sum,
		"checksum of the Write through the window differs");
	bad = h_verify(b->p + MW_OFF + m.off, m.len, 13, 0);
	H_CHECK(bad == SIZE_MAX, "Write through the window wrong at %zu", bad);
	H_CHECK(h_verify(b->p, MW_OFF + m.off, 12, 0) == SIZE_MAX,
		"bytes before the Write changed");
	H_CHECK(h_verify(b->p + MW_OFF + m.off + m.len,
			 b->len - (MW_OFF + m.off + m.len), 12,
			 MW_OFF + m.off + m.len) == SIZE_MAX,
		"bytes after the Write changed");
	h_wait(t, M_GO);
}

/* A window over a sub-range gives remote Read and Write access to it. */
void test_mw_sub_range(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b;
	struct h_remote r;
	struct rr_wc wc;
	struct msg_hdr m = {0, 50, 100, 0};

	h_spawn(t, peer_mw, NULL);
	h_active(t);
	b = h_buf_new(t, 64 * KiB, 0);
	h_msg_recv(t, M_REMOTE, &r, sizeof(r));
	H_OK(h_post_rdma(t->qp, RR_WR_RDMA_READ, 1, RR_SEND_SIGNALED, b, 1,
			 MW_LEN, r.addr, r.rkey));
	h_expect_wc(t, t->scq, 1, RR_WC_SUCCESS, RR_WC_RDMA_READ, &wc);
	H_EQ(wc.byte_len, MW_LEN);
	H_CHECK(h_verify(b->p + 1, MW_LEN, 12, MW_OFF) == SIZE_MAX,
		"Read through the window returned wrong bytes");
	/* The last byte of the range. */
	H_OK(h_post_rdma(t->qp, RR_WR_RDMA_READ, 2, RR_SEND_SIGNALED, b,
			 32 * KiB, 1, r.addr + MW_LEN - 1, r.rkey));
	h_expect_wc(t, t->scq, 2, RR_WC_SUCCESS, RR_WC_RDMA_READ, NULL);
	H_CHECK(h_verify(b->p + 32 * KiB, 1, 12, MW_OFF + MW_LEN - 1) ==
			SIZE_MAX,
		"last byte of the window wrong");

	h_fill(b->p + 40 * KiB, 100, 13, 0);
	m.sum = h_sum(b->p + 40 * KiB, 100);
	memcpy(b->p + 48 * KiB, &m, sizeof(m));
	H_OK(h_post_rdma(t->qp, RR_WR_RDMA_WRITE, 3, RR_SEND_SIGNALED, b,
			 40 * KiB, 100, r.addr + m.off, r.rkey));
	H_OK(h_post_send(t->qp, 4, RR_SEND_SIGNALED, b, 48 * KiB, sizeof(m)));
	h_expect_wc(t, t->scq, 3, RR_WC_SUCCESS, RR_WC_RDMA_WRITE, NULL);
	h_expect_wc(t, t->scq, 4, RR_WC_SUCCESS, RR_WC_SEND, NULL);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

static void peer_local_inv(struct h_test *t, const void *arg)
{
	struct h_buf *b;
	struct rr_mw *mw;
	struct h_remote r;
	struct rr_cm_event ev;
	struct rr_fabric_counters c0, c1;
	uint64_t sum;

	(void)arg;
	h_passive(t);
	b = h_buf_pattern(t, t->pd, 16 * KiB,
			  RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE, 14);
	sum = h_sum(b->p, b->len);
	mw = h_mw_new(t);
	r = h_remote_of(b, 0);
	r.addr += 100;
	r.len = 4096;
	r.rkey = bind_mw(t, mw, b, 100, 4096, RR_ACCESS_REMOTE_READ, 1);
	h_msg_send(t, M_REMOTE, &r, sizeof(r));
	h_wait(t, M_STEP);
	unbind_mw(t, mw, r.rkey, 2);
	c0 = h_counters(t);
	h_signal(t, M_GO);
	h_expect_down(t, &ev);
	H_EQ(rr_qp_state(t->qp), RR_QPS_ERROR);
	c1 = h_counters(t);
	if (t->attr.responder_reasons)
		H_EQ(c1.bad_stag, c0.bad_stag + 1);
	H_CHECK(h_sum(b->p, b->len) == sum, "memory changed");
	h_expect_cq_empty(t, t->scq);
	h_signal(t, M_STEP);
	h_wait(t, M_GO);
}

void test_local_invalidate(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b;
	struct h_remote r;
	struct rr_cm_event ev;
	const uint64_t ids[] = {2, 3};
	struct rr_send_wr wrs[2];
	struct rr_sge sges[2];

	h_require(h_device_attr(t)->mw_bind & RR_MW_BIND_WR,
		  "the device binds windows only with rr_mw_bind (mw_bind "
		  "%#x): no RR_WR_LOCAL_INV to test; rr_mw_fence is the "
		  "lifecycle group's",
		  h_device_attr(t)->mw_bind);
	h_spawn(t, peer_local_inv, NULL);
	h_active(t);
	b = h_buf_new(t, 16 * KiB, 0);
	h_msg_recv(t, M_REMOTE, &r, sizeof(r));
	H_OK(h_post_rdma(t->qp, RR_WR_RDMA_READ, 1, RR_SEND_SIGNALED, b, 0,
			 r.len, r.addr, r.rkey));
	h_expect_wc(t, t->scq, 1, RR_WC_SUCCESS, RR_WC_RDMA_READ, NULL);
	H_CHECK(h_verify(b->p, r.len, 14, 100) == SIZE_MAX, "Read wrong");
	memset(b->p, 0, b->len);
	h_signal(t, M_STEP);
	h_wait(t, M_GO);
	h_wr_rdma(&wrs[0], &sges[0], RR_WR_RDMA_READ, 2, RR_SEND_SIGNALED, b, 0,
		  r.len, r.addr, r.rkey);
	h_wr_rdma(&wrs[1], &sges[1], RR_WR_RDMA_READ, 3, RR_SEND_SIGNALED, b,
		  8 * KiB, 1, r.addr, r.rkey);
	H_OK(h_post_chain(t->qp, wrs, 2));
	expect_sq_terminated(t, ids, 2, 0, BIT(RR_WC_REM_ACCESS_ERR), true);
	H_EQ(b->p[0], 0);
	h_expect_down(t, &ev);
	expect_qp_dead(t, b);
	h_wait(t, M_STEP);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

static void peer_unsignaled(struct h_test *t, const void *arg)
{
	struct h_buf *rb;

	(void)arg;
	h_passive(t);
	rb = h_buf_new(t, 16 * 16, 0);
	post_recvs(t, rb, 0, 16, 16);
	h_signal(t, M_READY);
	for (uint32_t i = 0; i < 16; i++) {
		struct rr_wc wc;
		uint32_t v;

		h_expect_wc(t, t->rcq, i, RR_WC_SUCCESS, RR_WC_RECV, &wc);
		H_EQ(wc.byte_len, 4);
		memcpy(&v, rb->p + i * 16, 4);
		H_EQ(v, i);
	}
	h_wait(t, M_GO);
}

/* 7 unsignaled Sends + 1 signaled: one completion retires all 8 slots. */
void test_unsignaled(void **state)
{
	struct h_test *t = T(state);
	struct h_buf *b;

	h_spawn(t, peer_unsignaled, NULL);
	h_open(t);
	t->cfg.sq_depth = 8;
	h_connect(t, h_recv_port(t), NULL, 0, NULL);
	b = h_buf_new(t, 16 * 4, 0);
	for (uint32_t i = 0; i < 16; i++)
		memcpy(b->p + 4 * i, &i, 4);
	h_wait(t, M_READY);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 8; i++) {
			int k = round * 8 + i;

			H_OK(h_post_send(t->qp, (uint64_t)k,
					 i == 7 ? RR_SEND_SIGNALED : 0, b,
					 (size_t)k * 4, 4));
		}
		h_expect_wc(t, t->scq, (uint64_t)round * 8 + 7, RR_WC_SUCCESS,
			    RR_WC_SEND, NULL);
		h_expect_cq_empty(t, t->scq);
	}
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}
