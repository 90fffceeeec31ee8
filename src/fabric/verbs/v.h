/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The "verbs" provider: the fabric API on rdma-core (libibverbs for
 * resources and work requests, librdmacm for addressing and connections).
 *
 *  - v_shim.c:   the one place where foreign error conventions (ibverbs'
 *                positive errno, rdmacm's -1 with errno) and foreign enums
 *                become ours;
 *  - v_device.c: device, PD, MR, MW and the ops table;
 *  - v_cq.c:     CQs: a backlog ring in front of the device CQ, an fd with
 *                level semantics;
 *  - v_ring.c:   the slots of a QP's queues, taken at post and given back
 *                when a polled completion retires them;
 *  - v_qp.c:     QPs and posting;
 *  - v_cm.c:     event channels, listeners and the connection handshake.
 *
 * Accounting. The contract returns a queue slot only when the completion
 * that retires it is polled, and some devices free slots earlier (rxe
 * does when an unsignaled request finishes). So each QP keeps its own slots
 * of posted requests (v_ring.c), and the ibverbs wr_id of a request is the
 * address of its slot: a completion names its QP, its queue, the user's
 * wr_id and every unsignaled request before it, without any lookup.
 *
 * QPs are created with ibv_create_qp and handed to rdma_cm by number
 * ("external" QPs), because the fabric API creates a QP before connecting
 * it and lets it take receives in INIT; the provider moves it through
 * INIT/RTR/RTS with the attributes rdma_cm computes.
 *
 * Locks: v_qp.mu (posting) and v_cq.mu (polling) are never held together;
 * v_cq.mu -> v_evch.mu (a failed completion queues a QP_ERROR event).
 *
 * Where verbs cannot meet the fabric contract (the conformance suite run
 * in tests/vm leaves these cases out):
 *  - InfiniBand CM private data has fixed sizes (REQ 56 bytes after
 *    rdma_cm's header, REP 196, REJ 148): the peer sees our bytes padded
 *    with zeros to that size, so private_data_len is the padded length.
 *    max_private_data is 56, the smallest of them.
 *  - struct ibv_wc has no "solicited" flag: RR_WC_SOLICITED is never set.
 *  - a refused access is reported to the requester only; the responder's
 *    reason counters (bad_stag, bad_bounds, no_recv_posted, ...) stay 0,
 *    and rr_device_attr.responder_reasons says so.
 *  - memory windows need IBV_DEVICE_MEM_WINDOW_TYPE_2B; without it (siw,
 *    or RR_VERBS_MW=0) a window is registration per call: rr_mw_bind
 *    registers the range as a region of its own, rr_mw_fence
 *    deregisters it, and RR_WR_REG / LOCAL_INV are refused.
 *  - rr_qp_reset and rr_mw_fence allocate (architecture.md invariant 6 asks
 *    for neither): a QP in ERROR cannot be connected again, and a window
 *    cannot be invalidated without a QP in RTS, so both replace the
 *    device object, and rdma-core allocates the replacement. Our own
 *    memory is kept; a failed replacement is an error to retry.
 * Seen on rxe (Linux 6.1): an access may end one byte past a window; a
 * too small receive completes LOC_QP_OP_ERR rather than LOC_LEN_ERR.
 * Seen on siw (Linux 6.1, rdma-core 44; tests/fabric/CMakeLists.txt):
 *  - a Read scatters into its first SGE only (max_sge_rd 1), so max_sge
 *    is 1; iWARP private data is at most 251 bytes (v_device.c);
 *  - a refused request reaches the requester as flushes only: siw reads
 *    the peer's Terminate and resets, keeping the reason;
 *  - a Read queued but not yet sent is flushed twice (v_cq.c, stale);
 *  - Send With Invalidate: refused inline, its key taken from
 *    wr.rdma.rkey by libsiw (both worked around: swi_quirks), and no
 *    IBV_WC_WITH_INV on the receive;
 *  - a Read from a region without remote read rights is served;
 *  - a Read Response, Send or Write of at most 32 bytes from user memory
 *    that crosses a page boundary carries wrong bytes after the boundary
 *    (siw_try_1seg miscounts the first page's part). Our Sends and Writes
 *    that small go inline (fill_send) when the QP took inline data
 *    (make_qp asks for it, and goes without if refused), which takes
 *    another path; never a Send With Invalidate, but an RPC-over-RDMA
 *    reply is never that small; a Read siw answers from user memory is
 *    the requester's to avoid (tests keep such Reads in one page:
 *    tests/fabric/stress.c);
 *  - a message that reaches the passive side just after its MPA reply
 *    waits unread until the next segment arrives: siw_accept sends the
 *    reply before it gives the socket's data_ready to the QP. A client
 *    then holds its one initial credit (RFC 8166 3.3.1) and can send
 *    nothing else: its first call waits until our server's first-call
 *    deadline (rr_svc_opts.first_call_ms) ends the connection, and goes
 *    again on the next. Seen only in a guest slowed by a loaded host
 *    (vm/siw-rpc-*-verbs-pool; tests/rpc/conformance.c counts them).
 */
#ifndef RR_VERBS_V_H
#define RR_VERBS_V_H

#include "fabric/provider.h"

#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

struct v_device {
	struct rr_device base;
	struct ibv_context *ctx;
	bool has_mw;
	/*
	 * siw: rdma-core posts to queues mapped into our memory, and the
	 * kernel flushes them only as the QP enters ERROR; a request posted
	 * after that stays queued for ever. rr_qp_drain's markers, and such
	 * requests, are then completed here instead (rr__v_cq_soft_flush).
	 */
	bool soft_drain;
	/*
	 * siw: a Send With Invalidate marked inline is refused (-EINVAL), and
	 * libsiw takes the key to invalidate from wr.rdma.rkey (v_qp.c).
	 */
	bool swi_quirks;
	uint32_t max_inline;
	struct rr_fabric_counters counters; /* updated with V_COUNT */
};

#define V_COUNT(dev, field)                                                    \
	__atomic_fetch_add(&(dev)->counters.field, 1, __ATOMIC_RELAXED)

struct v_pd {
	struct rr_pd base;
	struct ibv_pd *pd;
};

struct v_mr {
	struct rr_mr base;
	struct ibv_mr *mr;
};

struct v_mw {
	struct rr_mw base;
	struct ibv_mw *mw;
	struct ibv_mr *reg; /* registration per call (device without MWs) */
	struct v_qp *bound; /* QP of the last REG; under that QP's mu */
	struct v_mw *bnext; /* in bound->bound_mws */
};

/* What an rdma_cm_id's context points at. */
enum v_kind { V_LISTENER, V_REQ, V_QP };

struct v_evch {
	struct rr_evch base;
	struct rdma_event_channel *ch;
	int efd;  /* eventfd: readable while queue holds events */
	int epfd; /* the user's fd: ch->fd + efd */
	pthread_mutex_t mu;
	struct v_event *head, *tail; /* translated, not yet delivered */
};

struct v_event {
	struct rr_cm_event ev;
	struct v_event *next;
};

struct v_listener {
	struct rr_listener base;
	enum v_kind kind;
	struct rdma_cm_id *id;
};

struct v_req {
	struct rr_conn_req base;
	enum v_kind kind;
	struct rdma_cm_id *id;
	uint8_t peer_ird, peer_ord;
};

struct v_slot {
	struct v_qp *qp;
	uint64_t wr_id;
	uint64_t seq;  /* posting order in its queue (v_ring.c) */
	uint32_t len;  /* RDMA Read: bytes asked for */
	uint8_t op;    /* enum rr_wr_opcode, or RR_V_RECV */
	bool signaled; /* send queue */
	bool live;     /* posted, not yet retired */
	bool queued; /* its device completion is in the backlog (soft flush) */
};

#define RR_V_RECV 0xff

/* A queue's slots, given back in any order (v_ring.c). */
struct v_ring {
	struct v_slot *s;
	uint32_t size;
	uint64_t posted;    /* requests posted: the next one's seq */
	uint32_t *free;	    /* indices of free slots */
	uint32_t free_head; /* next to take; under v_qp.mu */
	uint32_t free_tail; /* next to give back; under the CQ's mu */
	atomic_uint nfree;
	uint32_t *uns;	   /* live unsignaled requests, posting order */
	uint32_t uns_head; /* oldest; under the CQ's mu */
	uint32_t uns_tail; /* next to add; under v_qp.mu */
	atomic_uint nuns;
	struct v_slot **order; /* room for rr__v_ring_before; the CQ's mu */
};

struct v_qp {
	struct rr_qp base;
	enum v_kind kind;
	struct v_device *dev;
	struct ibv_qp *qp;
	struct rdma_cm_id *id; /* NULL until connect/accept */
	struct v_evch *evch;
	pthread_mutex_t mu; /* posting, CM transitions */
	atomic_int state;   /* enum rr_qp_state */
	atomic_bool down;   /* QP_ERROR or DISCONNECTED was queued */
	/* soft drain done: the device's later completions are dropped */
	atomic_bool sq_drained, rq_drained;
	struct v_ring sq, rq;
	uint32_t max_inline;
	struct v_mw *bound_mws; /* windows REG bound through us; under mu */
	uint8_t pdata[RR_MAX_PRIVATE_DATA]; /* for rdma_connect */
	uint32_t pdata_len;
};

struct v_cq {
	struct rr_cq base;
	struct ibv_cq *cq;
	struct ibv_comp_channel *cc;
	int efd;  /* eventfd: readable while backlog is not empty */
	int epfd; /* the user's fd: cc->fd + efd */
	bool efd_on;
	/* the device CQ gave entries since ibv_req_notify_cq (v_cq.c) */
	bool polled_since_arm;
	pthread_mutex_t mu;
	uint32_t reserved; /* slots of the attached queues */
	struct ibv_wc *bl; /* backlog: taken from the device, not delivered */
	uint32_t bl_head, bl_count, bl_size;
	struct v_evch
		*watch; /* CM channel of the attached QPs (rr__v_cq_wait) */
};

static inline struct v_device *to_v_dev(struct rr_device *d)
{
	return (struct v_device *)d;
}
static inline struct v_pd *to_v_pd(struct rr_pd *p)
{
	return (struct v_pd *)p;
}
static inline struct v_cq *to_v_cq(struct rr_cq *c)
{
	return (struct v_cq *)c;
}
static inline struct v_evch *to_v_evch(struct rr_evch *c)
{
	return (struct v_evch *)c;
}
static inline struct v_qp *to_v_qp(struct rr_qp *q)
{
	return (struct v_qp *)q;
}

extern const struct rr_provider_ops rr__verbs_ops;

/*
 * RR_VERBS_TRACE=1: one stderr line per work request and completion. Read
 * at every device open, perhaps while another device's threads trace:
 * hence relaxed atomics.
 */
extern int rr__v_trace;
#define V_TRACE(...)                                                           \
	do {                                                                   \
		if (__atomic_load_n(&rr__v_trace, __ATOMIC_RELAXED))           \
			fprintf(stderr, "verbs[%d]: " __VA_ARGS__);            \
	} while (0)

/* v_shim.c: foreign conventions -> 0 / negative errno, our enums */
int rr__v_ibv_rc(int rc);	 /* ibverbs: 0 or a positive errno */
int rr__v_cm_rc(int rc);	 /* rdmacm: 0 or -1 with errno set */
int rr__v_ptr_rc(const void *p); /* NULL with errno set -> -errno, else 0 */
enum rr_wc_status rr__v_wc_status(enum ibv_wc_status s);
int rr__v_fd_nonblock(int fd);
int rr__v_epoll_pair(int a, int b); /* an epoll fd watching both for input */
void rr__v_efd_set(int efd, bool readable);

/* v_cq.c */
int rr__v_cq_create(struct rr_device *dev, uint32_t depth, struct rr_cq **out);
int rr__v_cq_destroy(struct rr_cq *cq);
int rr__v_cq_poll(struct rr_cq *cq, struct rr_wc *wc, int n);
int rr__v_cq_fd(struct rr_cq *cq);
int rr__v_cq_wait(struct rr_cq *cq, int timeout_ms, int fd);
void rr__v_cq_purge(struct v_cq *cq, const struct v_qp *qp);
void rr__v_cq_soft_flush(struct v_cq *c, struct v_slot *marker);

/* v_ring.c */
int rr__v_ring_init(struct v_ring *r, uint32_t size);
void rr__v_ring_fini(struct v_ring *r);
void rr__v_ring_reset(struct v_ring *r);
uint32_t rr__v_ring_used(struct v_ring *r);
struct v_slot *rr__v_slot_take(struct v_ring *r, uint32_t k);
void rr__v_slot_fill(struct v_slot *s, struct v_qp *qp, uint64_t wr_id,
		     uint32_t len, uint8_t op, bool signaled);
void rr__v_slot_publish(struct v_ring *r, struct v_slot *s, uint32_t k);
void rr__v_slot_commit(struct v_ring *r, uint32_t n, uint32_t done);
void rr__v_ring_retire(struct v_ring *r, struct v_slot *s);
uint32_t rr__v_ring_before(struct v_ring *r, const struct v_slot *marker);

/* v_qp.c */
int rr__v_qp_create(struct rr_pd *pd, const struct rr_qp_attr *attr,
		    struct rr_qp **out);
int rr__v_qp_destroy(struct rr_qp *qp);
int rr__v_qp_reset(struct rr_qp *qp);
enum rr_qp_state rr__v_qp_state(const struct rr_qp *qp);
int rr__v_post_send(struct rr_qp *qp, struct rr_send_wr *wr,
		    struct rr_send_wr **bad);
int rr__v_post_recv(struct rr_qp *qp, struct rr_recv_wr *wr,
		    struct rr_recv_wr **bad);
int rr__v_drain(struct rr_qp *qp, uint64_t sq_wr_id, uint64_t rq_wr_id);
int rr__v_qp_to_error(struct v_qp *qp);
void rr__v_mw_unlink(struct v_mw *mw);
int rr__v_qp_modify_cm(struct v_qp *qp, enum ibv_qp_state to, int rd_atomic);

/* v_cm.c */
int rr__v_evch_create(struct rr_device *dev, struct rr_evch **out);
int rr__v_evch_destroy(struct rr_evch *ch);
int rr__v_evch_fd(struct rr_evch *ch);
int rr__v_evch_get(struct rr_evch *ch, struct rr_cm_event *ev, int timeout_ms);
void rr__v_evch_purge(struct v_evch *ch, const struct v_qp *qp);
void rr__v_evch_drain(struct v_evch *ch);
void rr__v_cq_watch(struct v_cq *c, struct v_evch *ch, bool on);
void rr__v_qp_down(struct v_qp *qp, enum rr_cm_event_type type, int status);
void rr__v_qp_comm_est(struct v_qp *qp);
int rr__v_listen(struct rr_device *dev, struct rr_evch *ch,
		 const struct sockaddr *addr, socklen_t addrlen, int backlog,
		 struct rr_listener **out);
int rr__v_listener_close(struct rr_listener *l);
int rr__v_listener_addr(struct rr_listener *l, struct sockaddr_storage *out);
int rr__v_connect(struct rr_qp *qp, const struct sockaddr *addr,
		  socklen_t addrlen, const void *pdata, size_t len);
int rr__v_accept(struct rr_conn_req *req, struct rr_qp *qp, const void *pdata,
		 size_t len);
int rr__v_reject(struct rr_conn_req *req, const void *pdata, size_t len);
int rr__v_disconnect(struct rr_qp *qp);

#endif
