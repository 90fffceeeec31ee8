/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The contract between the generic fabric API (fabric.c) and a provider.
 *
 * A provider allocates its own objects with the public struct embedded as
 * the first member (convert with to_x() helpers on its side). fabric.c
 * checks arguments that do not depend on the provider and forwards the call;
 * the op's return convention is the public one (0 or a negative errno).
 *
 * Blocking: post_send, post_recv and cq_poll never block. cq_wait blocks up
 * to its timeout. *_destroy/close may block briefly to let the provider's
 * progress context release the object (two-phase close).
 */
#ifndef RR_FABRIC_PROVIDER_H
#define RR_FABRIC_PROVIDER_H

#include <rpcrdma/fabric.h>

struct rr_device {
	const struct rr_provider_ops *ops;
	struct rr_device_attr attr;
};

struct rr_pd {
	struct rr_device *dev;
};

struct rr_mr {
	struct rr_pd *pd;
	void *addr;
	size_t length;
	unsigned access;
	uint32_t lkey;
	uint32_t rkey;
};

struct rr_mw {
	struct rr_pd *pd;
	uint32_t rkey; /* key installed by the most recently posted REG */
};

struct rr_cq {
	struct rr_device *dev;
	uint32_t depth;
};

struct rr_evch {
	struct rr_device *dev;
};

struct rr_listener {
	struct rr_device *dev;
	struct rr_evch *evch;
};

struct rr_qp {
	struct rr_pd *pd;
	struct rr_qp_attr attr;
};

struct rr_conn_req {
	struct rr_device *dev;
};

struct rr_provider_ops {
	const char *name;
	int (*device_open)(const struct rr_device_opts *opts,
			   struct rr_device **out);
	int (*device_close)(struct rr_device *dev);
	int (*device_counters)(struct rr_device *dev,
			       struct rr_fabric_counters *out);

	int (*pd_alloc)(struct rr_device *dev, struct rr_pd **out);
	int (*pd_free)(struct rr_pd *pd);
	int (*mr_reg)(struct rr_pd *pd, void *addr, size_t len, unsigned access,
		      struct rr_mr **out);
	int (*mr_dereg)(struct rr_mr *mr);
	int (*mw_alloc)(struct rr_pd *pd, struct rr_mw **out);
	int (*mw_free)(struct rr_mw *mw);
	int (*mw_fence)(struct rr_mw *mw);
	uint32_t (*mw_rkey_next)(const struct rr_mw *mw);
	int (*mw_bind)(struct rr_mw *mw, struct rr_mr *mr, uint64_t addr,
		       uint64_t length, unsigned access);

	int (*cq_create)(struct rr_device *dev, uint32_t depth,
			 struct rr_cq **out);
	int (*cq_destroy)(struct rr_cq *cq);
	int (*cq_poll)(struct rr_cq *cq, struct rr_wc *wc, int n);
	int (*cq_fd)(struct rr_cq *cq);
	/* also returns -EAGAIN once fd (when >= 0) is readable */
	int (*cq_wait)(struct rr_cq *cq, int timeout_ms, int fd);

	int (*evch_create)(struct rr_device *dev, struct rr_evch **out);
	int (*evch_destroy)(struct rr_evch *ch);
	int (*evch_fd)(struct rr_evch *ch);
	int (*evch_get)(struct rr_evch *ch, struct rr_cm_event *ev,
			int timeout_ms);

	int (*qp_create)(struct rr_pd *pd, const struct rr_qp_attr *attr,
			 struct rr_qp **out);
	int (*qp_destroy)(struct rr_qp *qp);
	int (*qp_reset)(struct rr_qp *qp);
	enum rr_qp_state (*qp_state)(const struct rr_qp *qp);
	int (*post_send)(struct rr_qp *qp, struct rr_send_wr *wr,
			 struct rr_send_wr **bad);
	int (*post_recv)(struct rr_qp *qp, struct rr_recv_wr *wr,
			 struct rr_recv_wr **bad);

	int (*listen)(struct rr_device *dev, struct rr_evch *ch,
		      const struct sockaddr *addr, socklen_t addrlen,
		      int backlog, struct rr_listener **out);
	int (*listener_close)(struct rr_listener *l);
	int (*listener_addr)(struct rr_listener *l,
			     struct sockaddr_storage *out);
	int (*connect)(struct rr_qp *qp, const struct sockaddr *addr,
		       socklen_t addrlen, const void *pdata, size_t len);
	int (*accept)(struct rr_conn_req *req, struct rr_qp *qp,
		      const void *pdata, size_t len);
	int (*reject)(struct rr_conn_req *req, const void *pdata, size_t len);
	int (*disconnect)(struct rr_qp *qp);
	int (*drain)(struct rr_qp *qp, uint64_t sq_wr_id, uint64_t rq_wr_id);
};

/* The completion opcode that reports a send-queue work request. */
static inline enum rr_wc_opcode rr__wc_opcode_of(unsigned wr_opcode)
{
	switch (wr_opcode) {
	case RR_WR_RDMA_WRITE:
		return RR_WC_RDMA_WRITE;
	case RR_WR_RDMA_READ:
		return RR_WC_RDMA_READ;
	case RR_WR_LOCAL_INV:
		return RR_WC_LOCAL_INV;
	case RR_WR_REG:
		return RR_WC_REG;
	default:
		return RR_WC_SEND;
	}
}

extern const struct rr_provider_ops rr__iwarp_ops;
extern const struct rr_provider_ops rr__faults_ops;
extern const struct rr_provider_ops rr__shm_ops;
/* src/fabric/verbs, built where rdma-core's libraries are found */
extern const struct rr_provider_ops rr__verbs_ops;

#endif
