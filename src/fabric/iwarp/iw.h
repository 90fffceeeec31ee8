/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The `iwarp` provider: RDMA over TCP speaking siw's wire protocol.
 *
 * Progress model. Each device has one progress thread that waits in epoll
 * for every socket of the device (listeners, handshakes, connected QPs).
 * Transmission happens in whichever thread posts (post_send pushes bytes
 * straight into the socket) and falls back to the progress thread when the
 * socket is full. Reception happens in the progress thread, or in a thread
 * blocked in rr_cq_wait on a CQ with few QPs: that thread polls the QPs'
 * sockets itself and whoever takes the QP's rx lock first does the work, so
 * a waiting application pays one wake-up per message, as with plain TCP.
 *
 * Locks and their order (never take an earlier one while holding a later):
 *   qp->rx_mu  ->  qp->tx_mu  ->  qp->rq_mu  ->  cq->mu / evch->mu
 *   stag->mu is a leaf: nothing else is taken while holding it.
 *
 * Lifetimes. A QP is referenced by its user, by the device's epoll set and
 * by threads in rr_cq_wait. Destroy removes it from epoll, waits one
 * progress-loop epoch so no event in flight still names it, purges its
 * completions and events, and drops the user reference; the last reference
 * closes the socket and frees it. Reset (rr_qp_reset) does the same up to
 * the free, then closes the socket itself and makes the QP as new, keeping
 * its memory: a reconnect allocates nothing.
 */
#ifndef RR_IWARP_IW_H
#define RR_IWARP_IW_H

#include "base/refcount.h"
#include "fabric/iwarp/wire.h"
#include "fabric/provider.h"
#include "fabric/shm/shm_ring.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/uio.h>

#define IW_MAX_QP_WR	     4096
#define IW_MAX_SGE	     16
#define IW_MAX_CQE	     (1u << 20)
#define IW_MAX_IRD	     128
#define IW_MAX_ORD	     128
#define IW_HANDSHAKE_MS	     10000
#define IW_CQ_WAIT_MAX_QPS   4
#define IW_HANDBACK_MS	     2
#define IW_HANDBACK_MAX_MS   32	  /* what IW_HANDBACK_MS may grow to, per QP */
#define IW_HANDBACK_RESET_MS 1000 /* away this long, it starts again */
/*
 * shm: how long rr_cq_wait watches rings before it sleeps (iw_cq.c): the
 * long watch when its last wait was no longer than that (RPCRDMA_SHM_SPIN_US
 * overrides it, 0 leaves only the short one), else the short one.
 */
#define IW_SHM_SPIN_NS	    30000
#define IW_SHM_SPIN_LONG_NS 250000
#define IW_SHM_YIELD_NS	    5000 /* spun this long, yield between looks */
/*
 * TCP: how long rr_cq_wait looks at its sockets before it sleeps, when
 * its last wait was no longer than this (iw_cq.c); 0 turns it off.
 * RPCRDMA_IWARP_SPIN_US overrides it.
 */
#define IW_TCP_SPIN_NS 100000
/*
 * Bytes a receive reads ahead into its stash (iw_rx.c): after a small
 * payload, a burst of small messages (16 replies to 4 KiB READs, say);
 * with a header, whose payload may be large and is better placed by the
 * kernel than copied from the stash, less; after a large payload, only
 * the next header.
 */
#define IW_RX_STASH	 65536
#define IW_RX_STASH_HDR	 8192
#define IW_RX_STASH_BULK 64

#define IW_COUNT(dev, field)                                                   \
	__atomic_fetch_add(&(dev)->ctr.field, 1, __ATOMIC_RELAXED)

enum iw_poll_kind {
	IW_POLL_WAKE,
	IW_POLL_LISTENER,
	IW_POLL_CONNREQ,
	IW_POLL_QP
};

struct iw_pollable {
	enum iw_poll_kind kind;
};

/* ---------------------------------------------------------------- STags */

enum iw_stag_state { IW_STAG_FREE, IW_STAG_INVALID, IW_STAG_VALID };
enum iw_stag_kind { IW_STAG_MR, IW_STAG_MW };

struct iw_mr;

struct iw_stag {
	pthread_mutex_t mu;
	uint8_t key;
	uint8_t state; /* enum iw_stag_state */
	uint8_t kind;  /* enum iw_stag_kind */
	unsigned access;
	struct rr_pd *pd;
	uint64_t base;
	uint64_t len;
	struct iw_mr *mr; /* MW: the region it is bound into */
};

#define IW_STAG_CHUNK  4096
#define IW_STAG_CHUNKS 256

struct iw_stag_table {
	struct iw_stag *_Atomic chunk[IW_STAG_CHUNKS];
	uint32_t nchunks;
	uint32_t *free; /* stack of free indices */
	uint32_t nfree;
};

/* --------------------------------------------------------------- device */

struct iw_device {
	struct rr_device base;
	struct iw_pollable wake;
	int epfd;
	int wake_fd;
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t mu; /* STag allocation, epoch, handshake list */
	pthread_cond_t epoch_cv;
	uint64_t epoch;
	struct iw_stag_table stags;
	struct rr_fabric_counters ctr; /* updated with IW_COUNT */
	struct iw_connreq *pending;    /* handshakes not yet complete */
	struct iw_qp *connecting;      /* active handshakes, for their timer */
	struct iw_qp *handed;	       /* QPs whose input waiters read */
	/*
	 * The shm provider runs this engine over Unix sockets between
	 * processes of one user (src/fabric/shm/shm.h); iwarp leaves it false.
	 */
	bool shm;
};

struct iw_pd {
	struct rr_pd base;
	atomic_int users;
};

struct iw_mr {
	struct rr_mr base;
	uint32_t stag;
	atomic_int mw_refs;
};

struct iw_mw {
	struct rr_mw base;
	uint32_t idx;
	uint8_t next_key;
};

/* ----------------------------------------------------- CQ, event channel */

struct iw_qp;

struct iw_cqe {
	struct rr_wc wc;
	uint32_t sq_retire; /* send-queue slots this completion gives back */
};

struct iw_cq {
	struct rr_cq base;
	pthread_mutex_t mu;
	struct iw_cqe *ring;
	uint32_t head;
	uint32_t count;
	uint32_t reserved; /* sum of attached queue depths */
	int efd;
	bool signaled;
	/*
	 * The eventfd is written only when someone can be waiting on it: a
	 * thread in rr_cq_wait, or anyone once rr_cq_fd has handed it out.
	 * That saves two syscalls per completion on the latency path.
	 */
	bool fd_exposed;
	uint32_t waiters;
	/* the last wait was short: look at the sockets before sleeping */
	atomic_bool spin_tcp;
	/* ... no longer than the long watch of the rings */
	atomic_bool spin_shm;
	struct iw_qp *qps[IW_CQ_WAIT_MAX_QPS]; /* for progress in cq_wait */
	uint32_t nqps;
	uint32_t nqps_total;
};

/*
 * A queued CM event. Events of QPs and connection requests live in their
 * object (iw_qp.ev_reserve, iw_connreq.ev), so learning how a connection
 * attempt went never needs an allocation; an event beyond the reserve is
 * allocated (heap).
 */
struct iw_event {
	struct iw_event *next;
	bool heap;   /* allocated: freed when taken, else part of its object */
	bool queued; /* on a channel's list; under that channel's mu */
	struct rr_cm_event ev;
};

/*
 * A QP reports at most two events per connection: how the attempt ended
 * (ESTABLISHED, REJECTED or UNREACHABLE), then at most one of
 * DISCONNECTED and QP_ERROR (the first error transition only).
 */
#define IW_QP_EV_RESERVE 2

struct iw_evch {
	struct rr_evch base;
	pthread_mutex_t mu;
	struct iw_event *head, *tail;
	int efd;
	bool signaled;
};

/* ----------------------------------------------------------- CM objects */

struct iw_listener {
	struct rr_listener base;
	struct iw_pollable poll;
	int fd;
	struct iw_connreq *reqs; /* delivered to the app, not yet answered */
	struct sockaddr_storage shm_addr; /* shm: the address it stands for */
};

struct iw_connreq {
	struct rr_conn_req base;
	struct iw_pollable poll;
	struct iw_connreq *next;
	struct iw_listener *listener;
	int fd;
	pid_t peer_pid; /* shm */
	int ring_fd;	/* shm: the client's memfd, from its MPA request */
	bool dead;	/* its listener is closing */
	uint64_t deadline_ms;
	struct sockaddr_storage peer;
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	uint32_t have;
	struct iw_mpa_frame req;
	struct iw_event ev; /* its CONNECT_REQUEST */
};

/* ------------------------------------------------------------------- QP */

struct iw_wqe {
	uint64_t wr_id;
	uint8_t opcode; /* enum rr_wr_opcode */
	uint8_t flags;
	uint32_t num_sge;
	uint32_t inval_rkey;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t length; /* payload bytes (sum of SGEs), or REG length */
	struct iw_mw *mw;
	struct iw_mr *mr;
	uint64_t reg_addr;
	unsigned reg_access;
	struct rr_sge *sge;
};

struct iw_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint64_t length;
	struct rr_sge *sge;
};

/* An outbound RDMA Read waiting for its response. */
struct iw_orq {
	uint64_t wr_id;
	bool signaled;
	uint8_t opcode; /* RR_WR_RDMA_READ; shm: RR_WR_RDMA_WRITE pulled */
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint32_t got;
};

/* An inbound RDMA Read we owe a response to. */
struct iw_irq {
	struct iw_read_req rr;
	uint32_t sent;
	bool placed; /* shm: copied already; only the response goes out */
};

enum iw_rx_phase { RX_HDR, RX_PAYLOAD, RX_TRAILER };

struct iw_rx {
	enum iw_rx_phase phase;
	uint8_t hdr[IW_UNTAGGED_HDR_LEN];
	uint32_t hdr_have;
	struct iw_hdr h;
	uint32_t payload_left;
	uint32_t placed; /* payload bytes of this FPDU already placed */
	uint8_t trailer[8];
	uint32_t trailer_need;
	uint32_t trailer_have;
	uint32_t crc;
	/* where the payload goes */
	struct iw_stag *stag; /* tagged: entry locked per readv */
	uint64_t tagged_addr; /* tagged: next byte's address */
	struct iw_rwqe *rwqe; /* untagged Send: the receive being filled */
	uint8_t small[IW_READ_REQ_LEN + IW_TERM_MAX_HDR + 8]; /* QN 1, 2 */
	uint32_t msg_len;    /* untagged: bytes of this message so far */
	bool placed_by_peer; /* shm: a Read Response whose bytes are copied */
	/*
	 * An untagged header is 20 bytes but only 16 are read ahead. Its last
	 * field, MO, has exactly one valid value (the bytes of the message so
	 * far), so the payload is placed assuming that value and the 4 bytes
	 * are read with it, then checked: one syscall saved per Send.
	 */
	uint32_t mo_pending;
	uint32_t mo_expect;
	uint8_t mo_real[4];
	uint32_t msn[3]; /* next expected MSN per untagged queue */
	/*
	 * Read until EAGAIN. Needed when woken by edge-triggered epoll: a short
	 * read does not prove that no end-of-stream is queued behind the data.
	 * A thread woken by level-triggered poll may stop at a short read.
	 */
	bool drain;
	/*
	 * Bytes a readv took beyond what the FPDU being read needed: the next
	 * header, and for small messages the whole next FPDU, so a small Send
	 * costs one syscall. Consumed before the socket is read again, and
	 * always empty when rx_mu is let go (see rr__iw_rx_run), so a thread
	 * polling the socket never waits for bytes already read.
	 */
	uint32_t stash_off, stash_len;
	bool sock_empty; /* the last read got less than it asked for */
	uint8_t stash[IW_RX_STASH];
};

/* Bytes of one or more FPDUs queued for one sendmsg. */
#define IW_TX_MAX_IOV  128
#define IW_TX_MAX_FPDU 32
#define IW_TX_MAX_DONE 32
#define IW_TX_HDR_ROOM                                                         \
	(IW_UNTAGGED_HDR_LEN + IW_READ_REQ_LEN + 4 + IW_TERM_MAX_HDR + 4)
struct iw_tx {
	struct iovec iov[IW_TX_MAX_IOV];
	uint32_t iovcnt;
	uint32_t iov_first; /* first iov not fully sent */
	/* header, plus the payload of a Read Request or Terminate */
	uint8_t hdrs[IW_TX_MAX_FPDU][IW_TX_HDR_ROOM];
	uint8_t trailers[IW_TX_MAX_FPDU][8];
	uint32_t nfpdu;
	/* work requests that complete once this batch is on the wire */
	struct iw_wqe done[IW_TX_MAX_DONE];
	uint8_t done_st[IW_TX_MAX_DONE];
	uint32_t ndone;
	/*
	 * A batch carrying Read Response bytes names their source: the STag is
	 * revalidated and locked around every sendmsg, so an invalidation never
	 * completes while the kernel still copies from that memory.
	 */
	bool src_held;
	uint32_t src_stag;
	uint64_t src_to, src_len;
	bool dead; /* the socket failed; the receive path will flush */
	/* progress through the message at the head of the SQ or IRQ */
	uint64_t msg_off;
	bool blocked; /* socket full: progress thread resumes on EPOLLOUT */
	uint32_t msn[3];
};

struct iw_qp {
	struct rr_qp base;
	struct iw_pollable poll;
	struct rr_ref ref;
	struct iw_device *dev;
	struct iw_cq *scq, *rcq;
	struct iw_evch *evch;
	int fd;
	bool in_epoll;
	_Atomic int state; /* enum rr_qp_state */
	bool crc;
	uint16_t ird, ord; /* negotiated */
	uint32_t fpdu_max; /* payload bytes per FPDU */

	/* handshake (client side); on dev->connecting while in progress */
	struct iw_qp *cm_next;
	bool cm_listed;
	int cm_phase;
	uint64_t cm_deadline_ms;
	uint8_t cm_buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	uint32_t cm_len, cm_done;
	struct sockaddr_storage peer;
	pid_t peer_pid; /* shm: the peer process, from SO_PEERCRED */
	bool cma;	/* shm: copy bulk data with process_vm_readv/writev */
	int cm_err; /* shm: connect failed at once, reported from the loop */
	/*
	 * shm: the frames go through rings (shm_ring.h) and the socket only
	 * carries bells. The client makes the memfd at connect and sends
	 * ring_fd with its request; `ring` is set once established. The
	 * mapping changes only with rx_mu and tx_mu both held.
	 */
	struct shm_link link;
	int ring_fd;
	/* ring: read without locks by waiters and the progress loop */
	atomic_bool ring;
	atomic_bool ring_tx_wait; /* a transmit waits for ring space */
	atomic_bool bell_seen;	  /* poll or epoll saw the socket readable */

	/* send side: rx_mu -> tx_mu order */
	pthread_mutex_t tx_mu;
	struct iw_wqe *sq;
	struct rr_sge *sq_sge;
	uint32_t sq_head, sq_tail; /* tail: next to transmit */
	atomic_int sq_free;	   /* slots the user may still post */
	uint32_t unsig_done;	   /* unsignaled WRs done, not yet retired */
	struct iw_tx tx;
	struct iw_orq orq[IW_MAX_ORD];
	atomic_uint orq_head, orq_tail; /* tx pushes at tail, rx pops head */
	uint32_t pulls_out; /* shm: pulled Writes in the ORQ; under tx_mu */
	struct iw_irq irq[IW_MAX_IRD];
	atomic_uint irq_head, irq_tail; /* rx pushes at tail, tx pops head */
	bool term_pending;
	struct iw_term term;

	/* receive side */
	pthread_mutex_t rx_mu;
	atomic_int rx_kick;
	/*
	 * Threads blocked in rr_cq_wait that poll this QP's socket. While there
	 * are any, the progress thread leaves the receive work to them (it only
	 * notes rx_skipped), so the waiting thread is not beaten to the data
	 * and then woken a second time for the completion.
	 */
	atomic_int app_waiters;
	atomic_int rx_skipped;
	/*
	 * Input handed to the application: once a thread polls this socket in
	 * rr_cq_wait, EPOLLIN is switched off in the device's epoll set, so
	 * the progress thread is not woken for data the waiting thread reads
	 * anyway. The hand-over sticks while the application keeps coming back
	 * (no epoll_ctl per message; each syscall costs over a microsecond
	 * here); the progress thread takes input back once nobody has waited
	 * for hand_ms, so a QP is never left unwatched for long. hand_ms
	 * starts at IW_HANDBACK_MS and doubles, up to IW_HANDBACK_MAX_MS,
	 * each time a waiter comes back within IW_HANDBACK_RESET_MS of a
	 * take-back: that thread was busy, not gone (an event loop taking a
	 * burst of FUSE requests under qemu's TCG was away longer than 2 ms
	 * on every burst, and each take-back cost both threads a wake-up and
	 * an epoll_ctl). One that comes back later starts again at 2 ms.
	 */
	pthread_mutex_t arm_mu;
	bool handed;
	bool hand_listed; /* on dev->handed, holding a reference */
	struct iw_qp *hand_next;
	_Atomic uint64_t app_left_ms;
	_Atomic uint32_t hand_ms;
	uint64_t taken_ms; /* when input was last taken back */
	/*
	 * EPOLLOUT is registered only while a transmit is blocked: on loopback
	 * every ACK frees send space and would wake the progress thread.
	 */
	bool want_out;
	uint32_t armed; /* events registered now */
	struct iw_rx rx;
	pthread_mutex_t rq_mu;
	struct iw_rwqe *rq;
	struct rr_sge *rq_sge;
	uint32_t rq_head, rq_tail;
	atomic_int rq_free;

	/* first error seen, reported with the flush */
	enum rr_wc_status err_status;
	struct iw_event ev_reserve[IW_QP_EV_RESERVE];
};

static inline struct iw_device *to_iw_dev(struct rr_device *d)
{
	return (struct iw_device *)d;
}
static inline struct iw_pd *to_iw_pd(struct rr_pd *p)
{
	return (struct iw_pd *)p;
}
static inline struct iw_mr *to_iw_mr(struct rr_mr *m)
{
	return (struct iw_mr *)m;
}
static inline struct iw_mw *to_iw_mw(struct rr_mw *m)
{
	return (struct iw_mw *)m;
}
static inline struct iw_cq *to_iw_cq(struct rr_cq *c)
{
	return (struct iw_cq *)c;
}
static inline struct iw_evch *to_iw_evch(struct rr_evch *c)
{
	return (struct iw_evch *)c;
}
static inline struct iw_qp *to_iw_qp(struct rr_qp *q)
{
	return (struct iw_qp *)q;
}
static inline struct iw_listener *to_iw_listener(struct rr_listener *l)
{
	return (struct iw_listener *)l;
}

static inline int iw_qp_state(struct iw_qp *qp)
{
	return atomic_load_explicit(&qp->state, memory_order_acquire);
}

uint64_t rr__iw_now_ms(void);

/* iw_device.c */
int rr__iw_device_open_as(const struct rr_provider_ops *ops, bool shm,
			  struct rr_device **out);
void rr__iw_epoch_barrier(struct iw_device *dev);
int rr__iw_epoll_add(struct iw_device *dev, int fd, struct iw_pollable *p,
		     uint32_t events);
void rr__iw_epoll_del(struct iw_device *dev, int fd);
void rr__iw_epoll_mod(struct iw_device *dev, int fd, struct iw_pollable *p,
		      uint32_t events);
#define IW_QP_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)
void rr__iw_qp_waiter_enter(struct iw_qp *qp);
void rr__iw_qp_waiter_leave(struct iw_qp *qp);
int rr__iw_qp_take_back(struct iw_device *dev);
void rr__iw_qp_want_out(struct iw_qp *qp, bool on);
void rr__iw_qp_arm_established(struct iw_qp *qp);
void rr__iw_wake(struct iw_device *dev);

/* iw_mem.c */
int rr__iw_stag_table_init(struct iw_stag_table *t);
void rr__iw_stag_table_fini(struct iw_stag_table *t);
int rr__iw_stag_acquire(struct iw_device *dev, uint32_t stag, struct rr_pd *pd,
			unsigned access, uint64_t to, uint64_t len,
			struct iw_stag **out);
int rr__iw_sge_check(struct iw_device *dev, struct rr_pd *pd,
		     const struct rr_sge *sge, uint32_t n, bool write,
		     uint64_t *total);
int rr__iw_mw_bind_now(struct rr_mw *m, struct rr_mr *mr, uint64_t addr,
		       uint64_t length, unsigned access);
enum rr_wc_status rr__iw_mw_bind(struct iw_device *dev, struct rr_pd *pd,
				 const struct iw_wqe *w);
int rr__iw_stag_invalidate(struct iw_device *dev, struct rr_pd *pd,
			   uint32_t rkey, bool remote);

/* iw_cq.c */
void rr__iw_cq_push(struct iw_cq *cq, const struct rr_wc *wc, uint32_t retire);
void rr__iw_cq_purge(struct iw_cq *cq, struct rr_qp *qp);
int rr__iw_cq_attach(struct iw_cq *cq, struct iw_qp *qp, uint32_t slots);
void rr__iw_cq_detach(struct iw_cq *cq, struct iw_qp *qp, uint32_t slots);
void rr__iw_evch_push(struct iw_evch *ch, const struct rr_cm_event *ev,
		      struct iw_event *res, uint32_t nres);
void rr__iw_evch_purge(struct iw_evch *ch, const void *obj);
void rr__iw_cq_purge_locked(struct iw_cq *cq, struct rr_qp *qp);
void rr__iw_qp_event(struct iw_qp *qp, enum rr_cm_event_type t, int status,
		     const void *pd, size_t len);

/* iw_qp.c */
void rr__iw_qp_put(struct iw_qp *qp);
void rr__iw_qp_complete_send(struct iw_qp *qp, const struct iw_wqe *w,
			     enum rr_wc_status st, uint32_t byte_len);
void rr__iw_qp_fail(struct iw_qp *qp, enum rr_wc_status st,
		    enum rr_cm_event_type ev, int status);
void rr__iw_qp_rx_try(struct iw_qp *qp, bool drain);
void rr__iw_qp_rx_progress(struct iw_qp *qp);
void rr__iw_qp_set_established(struct iw_qp *qp, int fd);

/* iw_tx.c */
void rr__iw_tx_run(struct iw_qp *qp);
void rr__iw_tx_kick(struct iw_qp *qp);
void rr__iw_tx_terminate(struct iw_qp *qp, const struct iw_term *t);
void rr__iw_tx_error(struct iw_qp *qp);

/* iw_rx.c */
void rr__iw_rx_run(struct iw_qp *qp, bool drain);
void rr__iw_rx_reset(struct iw_rx *rx);

/* iw_cm.c */
void rr__iw_cm_listener_ready(struct iw_listener *l);
void rr__iw_cm_connreq_ready(struct iw_connreq *r);
void rr__iw_cm_connect_progress(struct iw_qp *qp, uint32_t events);
void rr__iw_cm_expire(struct iw_device *dev);
void rr__iw_cm_connreq_free(struct iw_connreq *r);
void rr__iw_cm_unlist(struct iw_qp *qp);

/* provider op implementations, spread over the files above */
int rr__iw_device_close(struct rr_device *dev);
int rr__iw_device_counters(struct rr_device *dev,
			   struct rr_fabric_counters *out);
int rr__iw_pd_alloc(struct rr_device *dev, struct rr_pd **out);
int rr__iw_pd_free(struct rr_pd *pd);
int rr__iw_mr_reg(struct rr_pd *pd, void *addr, size_t len, unsigned access,
		  struct rr_mr **out);
int rr__iw_mr_dereg(struct rr_mr *mr);
int rr__iw_mw_alloc(struct rr_pd *pd, struct rr_mw **out);
int rr__iw_mw_free(struct rr_mw *mw);
int rr__iw_mw_fence(struct rr_mw *mw);
uint32_t rr__iw_mw_rkey_next(const struct rr_mw *mw);
int rr__iw_cq_create(struct rr_device *dev, uint32_t depth, struct rr_cq **out);
int rr__iw_cq_destroy(struct rr_cq *cq);
int rr__iw_cq_poll(struct rr_cq *cq, struct rr_wc *wc, int n);
int rr__iw_cq_fd(struct rr_cq *cq);
int rr__iw_cq_wait(struct rr_cq *cq, int timeout_ms, int fd);
int rr__iw_evch_create(struct rr_device *dev, struct rr_evch **out);
int rr__iw_evch_destroy(struct rr_evch *ch);
int rr__iw_evch_fd(struct rr_evch *ch);
int rr__iw_evch_get(struct rr_evch *ch, struct rr_cm_event *ev, int timeout_ms);
int rr__iw_qp_create(struct rr_pd *pd, const struct rr_qp_attr *attr,
		     struct rr_qp **out);
int rr__iw_qp_destroy(struct rr_qp *qp);
int rr__iw_qp_reset(struct rr_qp *qp);
enum rr_qp_state rr__iw_qp_get_state(const struct rr_qp *qp);
int rr__iw_post_send(struct rr_qp *qp, struct rr_send_wr *wr,
		     struct rr_send_wr **bad);
int rr__iw_post_recv(struct rr_qp *qp, struct rr_recv_wr *wr,
		     struct rr_recv_wr **bad);
int rr__iw_listen(struct rr_device *dev, struct rr_evch *ch,
		  const struct sockaddr *addr, socklen_t addrlen, int backlog,
		  struct rr_listener **out);
int rr__iw_listener_close(struct rr_listener *l);
int rr__iw_listener_addr(struct rr_listener *l, struct sockaddr_storage *out);
int rr__iw_connect(struct rr_qp *qp, const struct sockaddr *addr,
		   socklen_t addrlen, const void *pdata, size_t len);
int rr__iw_accept(struct rr_conn_req *req, struct rr_qp *qp, const void *pdata,
		  size_t len);
int rr__iw_reject(struct rr_conn_req *req, const void *pdata, size_t len);
int rr__iw_disconnect(struct rr_qp *qp);
int rr__iw_drain(struct rr_qp *qp, uint64_t sq_wr_id, uint64_t rq_wr_id);

/*
 * The engine's ops, the same for every provider built on it (iwarp, shm):
 * a provider table adds its name and device_open.
 */
/* clang-format off */
#define RR_IW_ENGINE_OPS \
	.device_close = rr__iw_device_close, \
	.device_counters = rr__iw_device_counters, \
	.pd_alloc = rr__iw_pd_alloc, \
	.pd_free = rr__iw_pd_free, \
	.mr_reg = rr__iw_mr_reg, \
	.mr_dereg = rr__iw_mr_dereg, \
	.mw_alloc = rr__iw_mw_alloc, \
	.mw_free = rr__iw_mw_free, \
	.mw_fence = rr__iw_mw_fence, \
	.mw_rkey_next = rr__iw_mw_rkey_next, \
	.mw_bind = rr__iw_mw_bind_now, \
	.cq_create = rr__iw_cq_create, \
	.cq_destroy = rr__iw_cq_destroy, \
	.cq_poll = rr__iw_cq_poll, \
	.cq_fd = rr__iw_cq_fd, \
	.cq_wait = rr__iw_cq_wait, \
	.evch_create = rr__iw_evch_create, \
	.evch_destroy = rr__iw_evch_destroy, \
	.evch_fd = rr__iw_evch_fd, \
	.evch_get = rr__iw_evch_get, \
	.qp_create = rr__iw_qp_create, \
	.qp_destroy = rr__iw_qp_destroy, \
	.qp_reset = rr__iw_qp_reset, \
	.qp_state = rr__iw_qp_get_state, \
	.post_send = rr__iw_post_send, \
	.post_recv = rr__iw_post_recv, \
	.listen = rr__iw_listen, \
	.listener_close = rr__iw_listener_close, \
	.listener_addr = rr__iw_listener_addr, \
	.connect = rr__iw_connect, \
	.accept = rr__iw_accept, \
	.reject = rr__iw_reject, \
	.disconnect = rr__iw_disconnect, \
	.drain = rr__iw_drain
/* clang-format on */

#endif
