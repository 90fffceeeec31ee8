/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rpcrdma fabric API: a verbs-shaped RDMA interface.
 *
 * The shape follows libibverbs/librdmacm on purpose
 * (post_send/post_recv/poll_cq with 64-bit work-request ids), so that a
 * provider for real RNICs is a thin mapping and the layers above are written
 * once. Differences from ibverbs:
 *
 *  - every fallible call returns 0 or a negative errno; objects come back
 *    through out-parameters;
 *  - connection management (listen/connect/accept/reject/disconnect with
 *    private data) is folded into the QP and a listener, events arrive on an
 *    event channel that has a pollable fd;
 *  - a send-queue or receive-queue slot is returned to the QP only when the
 *    completion that retires it is *polled* from the CQ, so a CQ sized to the
 *    sum of its queues can never overrun (rr_qp_create checks that);
 *  - when a QP enters the error state every work request not yet retired,
 *    signaled or not, completes with RR_WC_WR_FLUSH_ERR: each work request is
 *    accounted for by exactly one completion, either its own or (for an
 *    unsignaled request that succeeded) that of a later signaled request.
 *
 * Completions are produced asynchronously by the provider, as hardware does:
 * a Send's completion may be seen after the peer's answer to that Send.
 *
 * Threading: every call is thread-safe unless its comment says otherwise.
 * No call blocks except rr_cq_wait, rr_evch_get with a timeout, and the
 * destroy/close calls (which wait for the provider's progress to let go).
 */
#ifndef RPCRDMA_FABRIC_H
#define RPCRDMA_FABRIC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports what this header declares (-fvisibility=hidden). */
#pragma GCC visibility push(default)

struct rr_device;
struct rr_pd;
struct rr_mr;
struct rr_mw;
struct rr_cq;
struct rr_qp;
struct rr_evch;
struct rr_listener;
struct rr_conn_req;

/* ------------------------------------------------------------------ device */

struct rr_device_attr {
	char provider[16];
	uint32_t max_qp_wr; /* per send or receive queue */
	uint32_t max_sge;   /* per work request */
	uint32_t max_cqe;
	uint32_t max_ird; /* inbound RDMA Reads in flight per QP */
	uint32_t max_ord; /* outbound RDMA Reads in flight per QP */
	uint32_t
		max_private_data; /* connect/accept/reject private data bytes */
	uint64_t max_mr_size;
	/*
	 * Posting enters the kernel through the file the device was opened
	 * with, and the kernel refuses a thread whose credentials changed
	 * since (rdma-core's rxe and siw ring their doorbell with write(2) on
	 * that file). Such a thread must leave posting to one that did not:
	 * see rr_svc_opts.handlers_change_creds.
	 */
	int post_checks_creds;
	/*
	 * How memory windows are bound (enum rr_mw_bind_mode bits): by an
	 * RR_WR_REG work request, by rr_mw_bind at once, or either way.
	 */
	unsigned mw_bind;
	/*
	 * 1: a refused request of the peer's is counted with its reason
	 * (rr_fabric_counters bad_stag, bad_bounds, no_recv_posted). 0 where
	 * the device tells only the peer, with its completion status (verbs:
	 * rxe and siw raise no event on the responder).
	 */
	int responder_reasons;
};

enum rr_mw_bind_mode {
	RR_MW_BIND_WR = 1u << 0,   /* RR_WR_REG on a QP, LOCAL_INV to undo */
	RR_MW_BIND_SYNC = 1u << 1, /* rr_mw_bind, rr_mw_fence to undo */
};

/*
 * Counted reasons for abnormal events on a device. Bad peer input never
 * crashes the process: it ends that connection and bumps one of these.
 */
struct rr_fabric_counters {
	uint64_t conn_established;
	uint64_t conn_rejected;
	uint64_t conn_failed;	/* connect/handshake failed (any reason) */
	uint64_t mpa_bad_frame; /* MPA request/reply: key, rev, flags, length */
	uint64_t mpa_markers_refused; /* peer asked for markers */
	uint64_t crc_errors;
	uint64_t ddp_bad_header; /* version, length, reserved bits, bad QN */
	uint64_t rdmap_bad_opcode;
	uint64_t bad_stag;   /* unknown, invalid key, wrong PD, rights */
	uint64_t bad_bounds; /* tagged access outside the bound range */
	uint64_t bad_msn;
	uint64_t bad_mo;
	uint64_t no_recv_posted; /* untagged message with no receive buffer */
	uint64_t recv_too_small;
	uint64_t ird_exceeded;
	uint64_t bad_invalidate; /* Send with Invalidate naming a bad STag */
	uint64_t terminate_sent;
	uint64_t terminate_received;
	uint64_t peer_reset; /* peer closed or reset the stream mid-FPDU */
	uint64_t fpdus_sent;
	uint64_t fpdus_received;
	/* shm: a peer of another user (SO_PEERCRED) was refused */
	uint64_t peer_cred_refused;
	/* shm: a peer's rings refused (memfd unsealed or of the wrong size) or
	 * broken (an index claiming more than a ring holds) */
	uint64_t shm_ring_refused;
};

struct rr_fault_plan;

struct rr_device_opts {
	uint32_t flags; /* reserved, 0 */
	/* "faults" only: the provider it wraps (NULL: the default) and what to
	 * inject (include/rpcrdma/faults.h; NULL injects nothing). */
	const char *inner;
	const struct rr_fault_plan *faults;
};

/*
 * Provider names: "iwarp" (TCP, siw-compatible); "shm" (processes of one
 * user on one host: the iwarp engine over a Unix socket, RDMA Read and
 * large Writes copied by process_vm_readv/writev); "faults" (wraps another
 * provider and injects faults deterministically from a seed, for tests);
 * "verbs" (rdma-core) where built. NULL: rr_fabric_default_provider(),
 * so that the layers above need not name one. opts may be NULL for
 * defaults.
 */
const char *rr_fabric_default_provider(void);
int rr_device_open(const char *provider, const struct rr_device_opts *opts,
		   struct rr_device **out);
/* All objects created on the device must have been destroyed. */
int rr_device_close(struct rr_device *dev);
int rr_device_query(struct rr_device *dev, struct rr_device_attr *attr);
int rr_device_counters(struct rr_device *dev, struct rr_fabric_counters *out);

/* --------------------------------------------------------- protection domain
 */

int rr_pd_alloc(struct rr_device *dev, struct rr_pd **out);
int rr_pd_free(struct rr_pd *pd); /* -EBUSY while MRs/MWs/QPs use it */

/* ------------------------------------------------------------------- memory */

enum rr_access {
	RR_ACCESS_LOCAL_WRITE = 1u << 0,
	RR_ACCESS_REMOTE_READ = 1u << 1,
	RR_ACCESS_REMOTE_WRITE = 1u << 2,
};

/*
 * Registers [addr, addr+len). The lkey names it in local SGEs. When remote
 * access is asked for, rr_mr_rkey() is a remote key valid for the MR's whole
 * life; prefer memory windows (below) for memory exposed per operation,
 * because only those can be invalidated.
 */
int rr_mr_reg(struct rr_pd *pd, void *addr, size_t len, unsigned access,
	      struct rr_mr **out);
int rr_mr_dereg(struct rr_mr *mr); /* -EBUSY while a bound MW refers to it */
uint32_t rr_mr_lkey(const struct rr_mr *mr);
uint32_t rr_mr_rkey(const struct rr_mr *mr); /* 0 without remote access */
void *rr_mr_addr(const struct rr_mr *mr);
size_t rr_mr_length(const struct rr_mr *mr);

/*
 * A memory window is a remote key that can be made invalid again: it starts
 * invalid; an RR_WR_REG work request binds it to a range of a registered MR
 * under a fresh key (the low 8 bits of the rkey rotate on every REG); an
 * RR_WR_LOCAL_INV work request or the peer's Send With Invalidate makes it
 * invalid. rr_mw_rkey() returns the rkey that the most recently posted REG
 * installs, so it can be advertised as soon as the REG is posted.
 */
int rr_mw_alloc(struct rr_pd *pd, struct rr_mw **out);
int rr_mw_free(struct rr_mw *mw);
uint32_t rr_mw_rkey(const struct rr_mw *mw);
/*
 * The rkey that the next RR_WR_REG of mw will install, known before that
 * REG is posted: a consumer that posts the REG in one chain with the Send
 * advertising its key (one doorbell instead of two) writes this key into
 * the message first. It holds until the window is next bound, fenced or
 * freed.
 */
uint32_t rr_mw_rkey_next(const struct rr_mw *mw);
/*
 * Makes the window invalid at once, without a work request and without
 * freeing it: no key the window ever had gives remote access again until
 * a new REG binds it (under a new key, as always). It fences memory
 * exposed on a connection that is gone, where no LOCAL_INV can be posted,
 * and, unlike rr_mw_free + rr_mw_alloc, it allocates nothing (iwarp,
 * faults): a reconnect under memory pressure can still fence (architecture.md
 * invariants 1 and 6). No REG of the window may be outstanding on a QP in
 * RTS (a QP in ERROR has flushed its REGs). Synchronous: when it returns,
 * no access through the window is in progress. Returns 0 or a negative
 * errno; only verbs fails, where the device window is replaced: when
 * rdma-core cannot allocate the replacement, the old key is dead but the
 * window cannot be bound until a later rr_mw_fence succeeds.
 */
int rr_mw_fence(struct rr_mw *mw);
/*
 * Registration per call: binds an invalid window to [addr, addr+length) of
 * mr at once, without a work request, under a fresh key that rr_mw_rkey()
 * then returns; rr_mw_fence undoes it and is then the synchronous
 * invalidation. This is the way for devices with no windows of their own
 * (verbs registers the range as a memory region of its own and
 * deregisters it on fence). Where windows are bound only through a QP
 * (rr_device_attr.mw_bind lacks RR_MW_BIND_SYNC), -EOPNOTSUPP. A peer may
 * not be able to invalidate such a key with Send With Invalidate (rxe
 * refuses to for a memory region), so a consumer binding this way should
 * not invite it to. -EBUSY while the window is bound; -EINVAL for a range
 * outside mr or rights other than RR_ACCESS_REMOTE_*.
 */
int rr_mw_bind(struct rr_mw *mw, struct rr_mr *mr, uint64_t addr,
	       uint64_t length, unsigned access);

/* ------------------------------------------------------- completion queues */

enum rr_wc_status {
	RR_WC_SUCCESS = 0,
	RR_WC_LOC_LEN_ERR,     /* receive buffer too small, SGE out of range */
	RR_WC_LOC_PROT_ERR,    /* bad lkey / local access rights */
	RR_WC_LOC_QP_OP_ERR,   /* malformed work request */
	RR_WC_WR_FLUSH_ERR,    /* QP entered the error state */
	RR_WC_MW_BIND_ERR,     /* REG failed (range, rights, state) */
	RR_WC_REM_ACCESS_ERR,  /* peer refused the STag/offset/rights */
	RR_WC_REM_OP_ERR,      /* peer reported another error (Terminate) */
	RR_WC_REM_INV_REQ_ERR, /* peer found the request invalid */
	RR_WC_GENERAL_ERR,
};

enum rr_wc_opcode {
	RR_WC_SEND,
	RR_WC_RDMA_WRITE,
	RR_WC_RDMA_READ,
	RR_WC_LOCAL_INV,
	RR_WC_REG,
	RR_WC_RECV,
};

enum rr_wc_flags {
	RR_WC_WITH_INV =
		1u << 0, /* receive: the peer invalidated invalidated_rkey */
	RR_WC_SOLICITED = 1u << 1,
};

struct rr_wc {
	uint64_t wr_id;
	struct rr_qp *qp;
	enum rr_wc_status status;
	enum rr_wc_opcode opcode;
	uint32_t byte_len;	   /* receives and RDMA Reads */
	uint32_t invalidated_rkey; /* with RR_WC_WITH_INV */
	unsigned flags;
};

int rr_cq_create(struct rr_device *dev, uint32_t depth, struct rr_cq **out);
int rr_cq_destroy(struct rr_cq *cq); /* -EBUSY while QPs use it */
/* Returns the number of completions copied (0..n) or a negative errno. */
int rr_cq_poll(struct rr_cq *cq, struct rr_wc *wc, int n);
/*
 * A file descriptor that is readable while the CQ holds completions, for
 * poll/epoll. Level semantics: it stays readable until rr_cq_poll empties
 * the CQ. Do not read from it.
 */
int rr_cq_fd(struct rr_cq *cq);
/*
 * Blocks until the CQ holds a completion or timeout_ms passes (-1: forever).
 * Returns 0 or -ETIMEDOUT. The provider may use the calling thread to make
 * progress on the CQ's queues, which saves a thread wake-up per message.
 */
int rr_cq_wait(struct rr_cq *cq, int timeout_ms);
/*
 * rr_cq_wait that also watches fd (not read; -1: none) and returns
 * -EAGAIN when it turns readable while the CQ is empty: one thread can
 * drive the CQ and serve another source (e.g. /dev/fuse) without a
 * second thread, and the wake-up across CPUs between the two.
 */
int rr_cq_wait_fd(struct rr_cq *cq, int timeout_ms, int fd);

/* ------------------------------------------------------------ event channel */

enum rr_cm_event_type {
	RR_CM_CONNECT_REQUEST, /* on a listener's channel: accept or reject req
				*/
	RR_CM_ESTABLISHED,     /* qp is in RTS */
	RR_CM_REJECTED,	       /* peer rejected: private data is the peer's */
	RR_CM_UNREACHABLE,     /* connect failed: status says why */
	RR_CM_DISCONNECTED,    /* peer or local disconnect; qp flushed */
	RR_CM_QP_ERROR,	       /* protocol error or Terminate; qp flushed */
};

#define RR_MAX_PRIVATE_DATA 256

struct rr_cm_event {
	enum rr_cm_event_type type;
	int status; /* 0 or negative errno */
	struct rr_qp *qp;
	struct rr_listener *listener;
	struct rr_conn_req *req; /* RR_CM_CONNECT_REQUEST only */
	struct sockaddr_storage peer;
	uint32_t private_data_len;
	uint8_t private_data[RR_MAX_PRIVATE_DATA];
};

int rr_evch_create(struct rr_device *dev, struct rr_evch **out);
int rr_evch_destroy(struct rr_evch *ch);
int rr_evch_fd(struct rr_evch *ch); /* readable while events are queued */
/* 0, or -EAGAIN (timeout_ms 0) / -ETIMEDOUT when no event came in time. */
int rr_evch_get(struct rr_evch *ch, struct rr_cm_event *ev, int timeout_ms);

/* ---------------------------------------------------------- queue pairs */

enum rr_qp_state {
	RR_QPS_INIT,	   /* created; receives may be posted */
	RR_QPS_CONNECTING, /* handshake in progress */
	RR_QPS_RTS,	   /* connected */
	RR_QPS_ERROR,	   /* flushed; no further traffic */
};

enum rr_qp_flags {
	RR_QP_CRC = 1u << 0, /* ask for MPA CRC32c (the peer may also ask) */
};

struct rr_qp_attr {
	struct rr_cq *send_cq;
	struct rr_cq *recv_cq;
	struct rr_evch *evch; /* where this QP's CM events go */
	uint32_t sq_depth;
	uint32_t rq_depth;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint16_t ird; /* inbound Reads we accept in flight (<= max_ird) */
	uint16_t ord; /* outbound Reads we issue in flight (<= max_ord) */
	unsigned flags;
	void *context; /* returned by rr_qp_context */
};

struct rr_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum rr_wr_opcode {
	RR_WR_SEND,
	RR_WR_SEND_WITH_INV, /* invalidate_rkey names the peer's STag */
	RR_WR_RDMA_WRITE,
	RR_WR_RDMA_READ,
	RR_WR_LOCAL_INV, /* invalidate_rkey names one of our MW rkeys */
	RR_WR_REG,	 /* bind reg.mw to a range of reg.mr */
};

enum rr_send_flags {
	RR_SEND_SIGNALED = 1u << 0,
	RR_SEND_SOLICITED = 1u << 1,
};

struct rr_send_wr {
	struct rr_send_wr *next;
	uint64_t wr_id;
	enum rr_wr_opcode opcode;
	unsigned flags;
	struct rr_sge *sg_list;
	uint32_t num_sge;
	uint32_t invalidate_rkey;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			struct rr_mw *mw;
			struct rr_mr *mr;
			uint64_t addr;
			uint64_t length;
			unsigned access; /* RR_ACCESS_REMOTE_* */
		} reg;
	};
};

struct rr_recv_wr {
	struct rr_recv_wr *next;
	uint64_t wr_id;
	struct rr_sge *sg_list;
	uint32_t num_sge;
};

int rr_qp_create(struct rr_pd *pd, const struct rr_qp_attr *attr,
		 struct rr_qp **out);
/* Disconnects if needed, flushes, waits for the provider to let go, frees. */
int rr_qp_destroy(struct rr_qp *qp);
/*
 * Returns the QP to INIT with the attributes it was created with and keeps
 * its memory, so that a connection can be made again without allocating
 * (a client reconnects on the QP it was created with: architecture.md invariant
 * 6). Works in any state, as rr_qp_destroy does: disconnects if needed,
 * flushes, waits for the provider to let go of the old connection, closes
 * it, and drops this QP's completions and CM events not yet taken (so poll
 * and drain first: rr_qp_drain's markers account for every work request).
 * Nothing of the old connection is delivered afterwards. Not concurrent
 * with other calls on this QP. iwarp and faults allocate nothing; verbs
 * creates a new device QP (rdma-core allocates) and on failure leaves the
 * old one in ERROR, to be reset again or destroyed. 0 or a negative errno.
 */
int rr_qp_reset(struct rr_qp *qp);
enum rr_qp_state rr_qp_state(const struct rr_qp *qp);
void *rr_qp_context(const struct rr_qp *qp);

/*
 * Posting never blocks. -ENOMEM: no queue slot (*bad names the first
 * request not posted); -EINVAL: malformed request; -ENOTCONN: the QP is
 * not in RTS (receives may be posted in INIT and CONNECTING too).
 */
int rr_qp_post_send(struct rr_qp *qp, struct rr_send_wr *wr,
		    struct rr_send_wr **bad);
int rr_qp_post_recv(struct rr_qp *qp, struct rr_recv_wr *wr,
		    struct rr_recv_wr **bad);

/* ------------------------------------------------------ connection manager */

int rr_listener_create(struct rr_device *dev, struct rr_evch *ch,
		       const struct sockaddr *addr, socklen_t addrlen,
		       int backlog, struct rr_listener **out);
int rr_listener_close(struct rr_listener *l);
/* The bound address (to learn an ephemeral port). */
int rr_listener_addr(struct rr_listener *l, struct sockaddr_storage *out);

/* Asynchronous: the result arrives as an ESTABLISHED/REJECTED/UNREACHABLE
 * event. */
int rr_qp_connect(struct rr_qp *qp, const struct sockaddr *addr,
		  socklen_t addrlen, const void *pdata, size_t pdata_len);
/* Consumes req. ESTABLISHED follows on the QP's channel. */
int rr_conn_req_accept(struct rr_conn_req *req, struct rr_qp *qp,
		       const void *pdata, size_t pdata_len);
/* Consumes req. */
int rr_conn_req_reject(struct rr_conn_req *req, const void *pdata,
		       size_t pdata_len);
/* Moves the QP to ERROR (flushing) and closes the stream; DISCONNECTED follows.
 */
int rr_qp_disconnect(struct rr_qp *qp);
/*
 * Drains a QP in ERROR (after rr_qp_disconnect or a failure), as verbs
 * users do with a marker posted after the transition: one signaled marker
 * goes to each queue and completes with RR_WC_WR_FLUSH_ERR after every
 * request posted before it on that queue. The send marker's completion
 * also retires the successful unsignaled requests no completion covered
 * yet. Once both markers are polled, the QP holds no work request, so every
 * request's accounting can be checked. Returns 0, -EINVAL when the QP is
 * not in ERROR, or -ENOMEM when a queue has no free slot (poll, retry).
 */
int rr_qp_drain(struct rr_qp *qp, uint64_t sq_wr_id, uint64_t rq_wr_id);

const char *rr_wc_status_str(enum rr_wc_status s);
const char *rr_cm_event_str(enum rr_cm_event_type t);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
