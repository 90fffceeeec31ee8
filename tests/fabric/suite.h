/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The conformance suite: shared helpers and the list of tests. See
 * conformance.c for the conventions the assertions rely on.
 */
#ifndef RR_TESTS_FABRIC_SUITE_H
#define RR_TESTS_FABRIC_SUITE_H

#include "harness.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

/* Control-message tags of the tests. */
enum {
	M_READY = H_MSG_USER,
	M_REMOTE,
	M_FENCE,
	M_GO,
	M_STEP,
	M_ACK,
};

#define BIT(s) (1u << (s))
#define REMOTE_ERRS                                                            \
	(BIT(RR_WC_REM_ACCESS_ERR) | BIT(RR_WC_REM_OP_ERR) |                   \
	 BIT(RR_WC_REM_INV_REQ_ERR))

/* The small Send that follows an RDMA Write and describes it. */
struct msg_hdr {
	uint64_t k;
	uint64_t off;
	uint64_t len;
	uint64_t sum;
};

struct h_test *T(void **state);
void expect_sq_terminated(struct h_test *t, const uint64_t *ids, int n,
			  int max_success, unsigned remote_ok,
			  bool remote_required);
void expect_flushed(struct h_test *t, struct rr_cq *cq, uint64_t first, int n);
void post_recvs(struct h_test *t, const struct h_buf *b, uint64_t first, int n,
		size_t each);
void send_fence(struct h_test *t);
/* A signaled 1-byte RDMA Read of the peer's fence buffer. */
void fence_wr(struct rr_send_wr *wr, struct rr_sge *sge,
	      const struct h_remote *fence, struct h_buf *local,
	      uint64_t wr_id);
void expect_qp_dead(struct h_test *t, struct h_buf *b);
uint32_t bind_mw(struct h_test *t, struct rr_mw *mw, struct h_buf *b,
		 size_t off, size_t len, unsigned access, uint64_t wr_id);
void unbind_mw(struct h_test *t, struct rr_mw *mw, uint32_t rkey,
	       uint64_t wr_id);

#ifndef H_INTERNAL
#define expect_sq_terminated(...) H_AT(expect_sq_terminated(__VA_ARGS__))
#define expect_flushed(...)	  H_AT(expect_flushed(__VA_ARGS__))
#define expect_qp_dead(...)	  H_AT(expect_qp_dead(__VA_ARGS__))
#define bind_mw(...)		  H_AT(bind_mw(__VA_ARGS__))
#define unbind_mw(...)		  H_AT(unbind_mw(__VA_ARGS__))
#define post_recvs(...)		  H_AT(post_recvs(__VA_ARGS__))
#define send_fence(...)		  H_AT(send_fence(__VA_ARGS__))
#endif

/* cm.c */
#define PDATA_MAX SIZE_MAX /* arg: the device's max_private_data */
void test_private_data(void **state);
void test_reject_delivers_private_data(void **state);
void test_connect_without_listener_is_unreachable(void **state);

/* ops.c */
struct send_shape {
	uint32_t gather;  /* SGEs per Send: 1 or 3 */
	uint32_t scatter; /* SGEs per receive: 1 or 2 */
};
void test_sends(void **state); /* arg: a struct send_shape */
void test_send_with_invalidate(void **state);
void test_solicited(void **state);
void test_cq_wait_fd(void **state);
void test_writes(void **state);
void test_reads(void **state);
void test_mw_sub_range(void **state);
void test_local_invalidate(void **state);
void test_unsignaled(void **state);
/* keys.c */
void test_reg_send_one_post(void **state);

/* errors.c: arg is a struct access_error */
enum access_kind {
	AK_INVALIDATED_MW,
	AK_OUT_OF_BOUNDS,
	AK_OTHER_PD,
	AK_NO_RIGHTS,
	AK_GARBAGE_STAG,
};
struct access_error {
	enum rr_wr_opcode op; /* RR_WR_RDMA_WRITE or RR_WR_RDMA_READ */
	enum access_kind kind;
};
void test_remote_access_error(void **state);
void test_send_without_receive(void **state);
void test_send_larger_than_receive(void **state);
void test_send_with_invalidate_of_a_dead_key(void **state);

/* lifecycle.c */
void test_disconnect_flushes(void **state);
void test_destroy_with_outstanding_work(void **state);
void test_queue_depth(void **state);
void test_peer_killed(void **state);
void test_drain_retires_unsignaled(void **state);

/* reuse.c */
void test_reset_reconnects(void **state);
void test_mw_fence(void **state);

/* stress.c */
void test_stress(void **state);

#endif
