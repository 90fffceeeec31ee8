/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The "faults" provider: wraps another provider and, deterministically
 * from a seed, makes happen what real hardware and networks do rarely, so
 * that the transport's handling of it can be tested: Send completions that
 * arrive after the peer's reply, completions reordered across queues, a
 * registration or invalidation that fails, a work request flushed by a
 * connection loss. Pass a plan in rr_device_opts.faults.
 *
 * Rates are in parts per million and decided per event by a PRNG seeded
 * with `seed`, so a failing run is replayed by its seed. Counters of what
 * was injected are read with rr_faults_stats().
 *
 * rr_cq_fd of a faults CQ is the inner CQ's fd: it does not reflect held or
 * synthesized completions, rr_cq_wait does. Held and swallowed work
 * requests keep their send-queue slots until their completion is polled.
 */
#ifndef RPCRDMA_FAULTS_H
#define RPCRDMA_FAULTS_H

#include <rpcrdma/fabric.h>

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports what this header declares (-fvisibility=hidden). */
#pragma GCC visibility push(default)

#define RR_PPM_ALWAYS 1000000u

struct rr_fault_plan {
	uint64_t seed;
	/*
	 * Hold a successful Send (or Send With Invalidate) completion back
	 * until a receive completion of the same QP posted later has been
	 * polled from its CQ (or the QP errors): the reply is seen before the
	 * completion of the Send that carried the call.
	 */
	uint32_t delay_send_cqe_ppm;
	/*
	 * And for at most this long, when not 0. Hardware completes a Send
	 * whether or not anything comes back: a peer that waits for that
	 * completion before it answers (its send queue full) would wait for
	 * ever on a hold that needs a receive. 0 keeps the hold until a
	 * receive, for tests of the hold itself.
	 */
	uint32_t delay_send_cqe_max_ms;
	/* Deliver a polled batch of completions in a shuffled order. */
	uint32_t reorder_ppm;
	/* A REG fails: MW_BIND_ERR completion, the window stays invalid, and
	 * the QP goes to error as hardware does after a failed local op. */
	uint32_t fail_reg_ppm;
	/* A LOCAL_INV fails: error completion, the key stays VALID, and the QP
	 * goes to error (a connection loss is then the only fence). */
	uint32_t fail_inv_ppm;
	/* A posted send WR is flushed: the QP is disconnected before it. */
	uint32_t flush_wr_ppm;
	/* Deliver a completion a second time (the consumer must drop it). */
	uint32_t dup_cqe_ppm;
	/*
	 * Check that a Send's memory is unchanged until the first completion
	 * that covers it is delivered (invariant 2; see send_bufs_modified).
	 */
	bool guard_sends;
	/*
	 * Park every LOCAL_INV, and every send-queue request posted after it
	 * on the same QP (a send queue executes in order), until
	 * rr_faults_release(): the key stays valid at the inner provider, so
	 * the peer can still use it between the post and the completion.
	 * Parked requests keep their send-queue slots; a disconnect or a
	 * drain flushes them (RR_WC_WR_FLUSH_ERR), a reset drops them.
	 */
	bool hold_invs;
	/*
	 * The same for every REG (a window's bind): it and what follows it
	 * on the QP are parked until rr_faults_release(). The window is not
	 * bound yet and its key not valid until then; the transport must
	 * count it as exposed from its post all the same.
	 */
	bool hold_regs;
};

struct rr_fault_stats {
	uint64_t send_cqes_delayed;
	uint64_t batches_reordered;
	uint64_t regs_failed;
	uint64_t invs_failed;
	uint64_t wrs_flushed;
	uint64_t send_bufs_modified; /* guard_sends: memory reused too early */
	uint64_t cqes_duplicated;    /* second copies delivered */
	uint64_t invs_held;	     /* LOCAL_INVs parked (hold_invs) */
	uint64_t regs_held;	     /* REGs parked (hold_regs) */
	uint64_t wrs_released;	     /* parked requests posted at release */
	uint64_t wrs_parked_flushed; /* parked requests flushed instead */
	/*
	 * Posts refused because the send queue was full (the caller's
	 * accounting let it overrun the queue it asked for).
	 */
	uint64_t sq_overruns;
	uint64_t cqes_injected; /* rr_faults_inject */
};

/* dev must have been opened as "faults". */
int rr_faults_stats(struct rr_device *dev, struct rr_fault_stats *out);

/*
 * Test control (holds and injection need an active plan; hold_invs and
 * hold_regs make one active by themselves). Every call is safe from any thread.
 *
 * rr_faults_release: posts every parked request, of every QP, to the
 * inner provider in order (or flushes them if the QP has left RTS).
 * Returns how many went, or a negative errno.
 *
 * rr_faults_held_invs: the parked LOCAL_INVs, oldest first: their work
 * request ids and the keys they invalidate (either may be NULL). Returns
 * how many there are (at most max are written).
 *
 * rr_faults_inject: delivers wc as if the device produced it, on the most
 * recently created QP (wc->qp is ignored): on its receive CQ for
 * RR_WC_RECV, else on its send CQ. It is not accounted to any request:
 * a consumer must find it stale, duplicate or unknown.
 *
 * rr_faults_recent_recvs: ids of the receives last posted on the most
 * recently created QP, newest first. Returns how many were written.
 */
int rr_faults_release(struct rr_device *dev);
int rr_faults_held_invs(struct rr_device *dev, uint64_t *wr_ids,
			uint32_t *rkeys, int max);
int rr_faults_inject(struct rr_device *dev, const struct rr_wc *wc);
int rr_faults_recent_recvs(struct rr_device *dev, uint64_t *wr_ids, int max);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
