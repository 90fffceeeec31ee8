/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The "faults" provider (include/rpcrdma/faults.h): every object wraps one
 * of the inner provider's and forwards to it; faults are injected where the
 * wrapper stands between the user and the inner provider.
 *
 *  - faults.c: device, PD, MR, MW, event channel, listener, connection
 *    requests (CM events are translated back to wrapper objects);
 *  - f_cq.c:   completion interception (holding Send completions back,
 *    shuffling batches, delivering synthesized completions);
 *  - f_qp.c:   posting interception (failed REG / LOCAL_INV, flushed WRs).
 *
 * Translation. An inner QP's context is its wrapper, so completions and CM
 * events name the wrapper again; MRs and MWs mirror their inner keys, so
 * SGEs and rkeys pass through unchanged; REG work requests name inner
 * objects once copied.
 *
 * When the plan injects nothing (NULL or all rates 0) the device is
 * "inactive": completions and posts go straight through, with no ring, no
 * accounting and no extra wake-up, so nothing is observable.
 *
 * Locks: f_qp.mu (posting) -> f_cq.mu -> the inner provider's locks;
 * f_device.mu guards CM bookkeeping and is a leaf.
 */
#ifndef RR_FAULTS_F_H
#define RR_FAULTS_F_H

#include "fabric/provider.h"

#include <pthread.h>
#include <rpcrdma/faults.h>
#include <stdatomic.h>
#include <stdbool.h>

struct f_req;
struct f_listener;

struct f_device {
	struct rr_device base;
	struct rr_device *inner;
	struct rr_fault_plan plan;
	bool active; /* some rate is non-zero */
	pthread_mutex_t mu;
	struct f_listener *listeners;
	struct f_req *reqs;  /* delivered, not yet accepted or rejected */
	uint64_t nqps, ncqs; /* creation counters, to seed PRNG streams */
	struct rr_fault_stats stats; /* updated with F_COUNT */
	/*
	 * Every QP, newest first, for test control (f_hold.c). Lock order:
	 * qps_mu -> f_qp.mu.
	 */
	pthread_mutex_t qps_mu;
	struct f_qp *qps;
};

#define F_COUNT(dev, field)                                                    \
	__atomic_fetch_add(&(dev)->stats.field, 1, __ATOMIC_RELAXED)

struct f_pd {
	struct rr_pd base;
	struct rr_pd *inner;
};

struct f_mr {
	struct rr_mr base;
	struct rr_mr *inner;
};

struct f_mw {
	struct rr_mw base;
	struct rr_mw *inner;
};

struct f_evch {
	struct rr_evch base;
	struct rr_evch *inner;
};

struct f_listener {
	struct rr_listener base;
	struct rr_listener *inner;
	struct f_listener *next;
};

struct f_req {
	struct rr_conn_req base;
	struct rr_conn_req *inner;
	struct f_listener *l;
	struct f_req *next;
};

/* A completion held by the wrapper; wc.qp names the wrapper QP. */
struct f_cqe {
	struct rr_wc wc;
	uint64_t epoch;	  /* held: the QP's recv_epoch when it was held */
	uint64_t held_ms; /* held: when (delay_send_cqe_max_ms) */
	bool dup;	  /* an injected second copy: accounted for already */
	bool injected;	  /* rr_faults_inject: no request of ours behind it */
};

struct f_ring {
	struct f_cqe *e;
	uint32_t head, count, size;
};

struct f_cq {
	struct rr_cq base;
	struct rr_cq *inner;
	pthread_mutex_t mu;
	/* Active devices only, each sized to the CQ depth: */
	struct f_ring out;   /* taken from the inner CQ, to be delivered */
	struct f_ring held;  /* delayed Send completions */
	struct f_ring synth; /* completions of swallowed work requests */
	uint64_t rng;	     /* reorder decisions; under mu */
};

struct f_qp {
	struct rr_qp base;
	struct rr_qp *inner;
	struct f_device *dev;
	struct f_cq *scq, *rcq;
	pthread_mutex_t mu; /* serializes posting (chains go in pieces) */
	uint64_t rng_post;  /* posting faults; under mu */
	uint64_t rng_cqe;   /* delay decisions; under scq->mu */
	/*
	 * Send-queue slots the user sees as taken (active devices only): a
	 * swallowed or held work request keeps its slot although the inner
	 * QP gave it back, until its completion is delivered.
	 */
	atomic_int sq_used;
	atomic_int unsig_out; /* unsignaled, not yet retired */
	/* Receive completions delivered: releases held Send completions. */
	atomic_uint_fast64_t recv_epoch;
	struct f_guard *guard;	 /* plan.guard_sends, else NULL */
	struct f_hold *hold;	 /* plan.hold_invs, else NULL; under mu */
	struct f_qp *dev_next;	 /* f_device.qps */
	uint64_t recent_recv[8]; /* last posted receive ids; under mu */
	uint32_t nrecv_posted;
};

/* f_hold.c: parked requests (plan.hold_invs) and test control */
struct f_hold;
int rr__f_hold_init(struct f_qp *qp);
void rr__f_hold_fini(struct f_qp *qp);
bool rr__f_hold_wants(struct f_qp *qp, const struct rr_send_wr *wr);
int rr__f_hold_park(struct f_qp *qp, const struct rr_send_wr *user,
		    const struct rr_send_wr *translated);
void rr__f_hold_flush(struct f_qp *qp); /* holding qp->mu */
void rr__f_hold_drop(struct f_qp *qp);	/* holding qp->mu */
void rr__f_hold_link(struct f_qp *qp);
void rr__f_hold_unlink(struct f_qp *qp);
void rr__f_note_recv(struct f_qp *qp, const struct rr_recv_wr *wr);

/* f_guard.c */
struct f_guard;
int rr__f_guard_init(struct f_qp *qp);
void rr__f_guard_fini(struct f_qp *qp);
void rr__f_guard_reset(struct f_qp *qp);
void rr__f_guard_post(struct f_qp *qp, const struct rr_send_wr *wr);
void rr__f_guard_complete(struct f_qp *qp, uint64_t wr_id);

static inline struct f_device *to_f_dev(struct rr_device *d)
{
	return (struct f_device *)d;
}
static inline struct f_pd *to_f_pd(struct rr_pd *p)
{
	return (struct f_pd *)p;
}
static inline struct f_mr *to_f_mr(struct rr_mr *m)
{
	return (struct f_mr *)m;
}
static inline struct f_mw *to_f_mw(struct rr_mw *m)
{
	return (struct f_mw *)m;
}
static inline struct f_cq *to_f_cq(struct rr_cq *c)
{
	return (struct f_cq *)c;
}
static inline struct f_evch *to_f_evch(struct rr_evch *c)
{
	return (struct f_evch *)c;
}
static inline struct f_qp *to_f_qp(struct rr_qp *q)
{
	return (struct f_qp *)q;
}
static inline struct f_listener *to_f_listener(struct rr_listener *l)
{
	return (struct f_listener *)l;
}

/* PRNG (faults.c): splitmix64 to derive streams, xorshift64* to draw. */
uint64_t rr__f_stream(uint64_t seed, uint64_t salt, uint64_t index);
bool rr__f_roll(uint64_t *state, uint32_t ppm);
uint64_t rr__f_rand(uint64_t *state);

/* f_cq.c */
int rr__f_cq_create(struct rr_device *dev, uint32_t depth, struct rr_cq **out);
int rr__f_cq_destroy(struct rr_cq *cq);
int rr__f_cq_poll(struct rr_cq *cq, struct rr_wc *wc, int n);
int rr__f_cq_fd(struct rr_cq *cq);
int rr__f_cq_wait(struct rr_cq *cq, int timeout_ms, int fd);
int rr__f_cq_synth(struct f_cq *cq, const struct rr_wc *wc,
		   struct rr_qp *inner);
int rr__f_cq_inject(struct f_cq *cq, const struct rr_wc *wc);
void rr__f_cq_purge(struct f_cq *cq, struct rr_qp *qp); /* holding cq->mu */

/* f_qp.c */
int rr__f_qp_create(struct rr_pd *pd, const struct rr_qp_attr *attr,
		    struct rr_qp **out);
int rr__f_qp_destroy(struct rr_qp *qp);
int rr__f_qp_reset(struct rr_qp *qp);
enum rr_qp_state rr__f_qp_state(const struct rr_qp *qp);
int rr__f_post_send(struct rr_qp *qp, struct rr_send_wr *wr,
		    struct rr_send_wr **bad);
int rr__f_post_recv(struct rr_qp *qp, struct rr_recv_wr *wr,
		    struct rr_recv_wr **bad);
int rr__f_connect(struct rr_qp *qp, const struct sockaddr *addr,
		  socklen_t addrlen, const void *pdata, size_t len);
int rr__f_disconnect(struct rr_qp *qp);
int rr__f_drain(struct rr_qp *qp, uint64_t sq_wr_id, uint64_t rq_wr_id);

#endif
