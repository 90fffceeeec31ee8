/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Completion queues and CM event channels: a locked ring/list plus an
 * eventfd that is readable exactly while entries are queued (written on
 * the empty -> non-empty transition, drained when a consumer empties it).
 *
 * Send- and receive-queue slots go back to their QP when a completion is
 * polled, not when it is produced; since a QP may attach only as many slots
 * as the CQ has room for, the ring can never overflow.
 */
#include "fabric/iwarp/iw.h"
#include "base/alloc.h"

#include "base/log.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void efd_raise(int efd, bool *signaled)
{
	uint64_t one = 1;

	if (*signaled)
		return;
	*signaled = true;
	if (write(efd, &one, sizeof(one)) < 0)
		rr_warn("iwarp: eventfd write: %s", strerror(errno));
}

static void efd_clear(int efd, bool *signaled)
{
	uint64_t v;

	if (!*signaled)
		return;
	*signaled = false;
	if (read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		rr_warn("iwarp: eventfd read: %s", strerror(errno));
}

/* Waits for fd to become readable; 0, -ETIMEDOUT or -errno. */
static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

int rr__iw_cq_create(struct rr_device *dev, uint32_t depth, struct rr_cq **out)
{
	struct iw_cq *cq = rr_calloc(1, sizeof(*cq));

	if (!cq)
		return -ENOMEM;
	cq->ring = rr_calloc(depth, sizeof(*cq->ring));
	cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!cq->ring || cq->efd < 0) {
		int rc = cq->efd < 0 ? -errno : -ENOMEM;

		if (cq->efd >= 0)
			close(cq->efd);
		free(cq->ring);
		free(cq);
		return rc;
	}
	pthread_mutex_init(&cq->mu, NULL);
	cq->base = (struct rr_cq){.dev = dev, .depth = depth};
	*out = &cq->base;
	return 0;
}

int rr__iw_cq_destroy(struct rr_cq *c)
{
	struct iw_cq *cq = to_iw_cq(c);

	if (cq->nqps_total)
		return -EBUSY;
	close(cq->efd);
	pthread_mutex_destroy(&cq->mu);
	free(cq->ring);
	free(cq);
	return 0;
}

int rr__iw_cq_attach(struct iw_cq *cq, struct iw_qp *qp, uint32_t slots)
{
	int rc = 0;

	pthread_mutex_lock(&cq->mu);
	if (cq->base.depth - cq->reserved < slots) {
		rc = -ENOSPC;
	} else {
		bool listed = false;

		cq->reserved += slots;
		cq->nqps_total++;
		/* A QP whose send and receive CQ are one is listed once. */
		for (uint32_t i = 0; i < cq->nqps; i++)
			listed |= cq->qps[i] == qp;
		if (!listed && cq->nqps < IW_CQ_WAIT_MAX_QPS)
			cq->qps[cq->nqps++] = qp;
	}
	pthread_mutex_unlock(&cq->mu);
	return rc;
}

void rr__iw_cq_detach(struct iw_cq *cq, struct iw_qp *qp, uint32_t slots)
{
	pthread_mutex_lock(&cq->mu);
	cq->reserved -= slots;
	cq->nqps_total--;
	for (uint32_t i = 0; i < cq->nqps; i++) {
		if (cq->qps[i] == qp) {
			cq->qps[i] = cq->qps[--cq->nqps];
			break;
		}
	}
	pthread_mutex_unlock(&cq->mu);
}

void rr__iw_cq_push(struct iw_cq *cq, const struct rr_wc *wc, uint32_t retire)
{
	struct iw_cqe *e;

	pthread_mutex_lock(&cq->mu);
	/* Cannot overflow: attach reserved a slot for every queue entry. */
	e = &cq->ring[(cq->head + cq->count) % cq->base.depth];
	e->wc = *wc;
	e->sq_retire = retire;
	cq->count++;
	if (cq->fd_exposed || cq->waiters)
		efd_raise(cq->efd, &cq->signaled);
	pthread_mutex_unlock(&cq->mu);
}

static void give_back(const struct iw_cqe *e)
{
	struct iw_qp *qp = to_iw_qp(e->wc.qp);

	if (e->wc.opcode == RR_WC_RECV)
		atomic_fetch_add(&qp->rq_free, 1);
	else
		atomic_fetch_add(&qp->sq_free, (int)e->sq_retire);
}

int rr__iw_cq_poll(struct rr_cq *c, struct rr_wc *wc, int n)
{
	struct iw_cq *cq = to_iw_cq(c);
	int got = 0;

	pthread_mutex_lock(&cq->mu);
	while (got < n && cq->count) {
		struct iw_cqe *e = &cq->ring[cq->head];

		wc[got++] = e->wc;
		give_back(e);
		cq->head = (cq->head + 1) % cq->base.depth;
		cq->count--;
	}
	if (!cq->count)
		efd_clear(cq->efd, &cq->signaled);
	pthread_mutex_unlock(&cq->mu);
	return got;
}

/*
 * Drops a destroyed (or reset) QP's completions, keeping the others in
 * order. Caller holds cq->mu.
 */
void rr__iw_cq_purge_locked(struct iw_cq *cq, struct rr_qp *qp)
{
	uint32_t keep = 0, d = cq->base.depth;

	for (uint32_t i = 0; i < cq->count; i++) {
		struct iw_cqe *e = &cq->ring[(cq->head + i) % d];

		if (e->wc.qp != qp)
			cq->ring[(cq->head + keep++) % d] = *e;
	}
	cq->count = keep;
	if (!cq->count)
		efd_clear(cq->efd, &cq->signaled);
}

void rr__iw_cq_purge(struct iw_cq *cq, struct rr_qp *qp)
{
	pthread_mutex_lock(&cq->mu);
	rr__iw_cq_purge_locked(cq, qp);
	pthread_mutex_unlock(&cq->mu);
}

int rr__iw_cq_fd(struct rr_cq *c)
{
	struct iw_cq *cq = to_iw_cq(c);

	pthread_mutex_lock(&cq->mu);
	cq->fd_exposed = true;
	if (cq->count)
		efd_raise(cq->efd, &cq->signaled);
	pthread_mutex_unlock(&cq->mu);
	return cq->efd;
}

static bool cq_ready(struct iw_cq *cq)
{
	bool r;

	pthread_mutex_lock(&cq->mu);
	r = cq->count != 0;
	pthread_mutex_unlock(&cq->mu);
	return r;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * A spin budget from the environment, read once into *cache: microseconds,
 * 0 to 10000; anything else keeps dflt_ns.
 */
static uint64_t env_spin_ns(const char *name, uint64_t dflt_ns,
			    _Atomic int64_t *cache)
{
	int64_t v = atomic_load_explicit(cache, memory_order_relaxed);

	if (v < 0) {
		const char *e = getenv(name);
		char *end = NULL;
		long us = e && *e ? strtol(e, &end, 10) : -1;

		if (!end || *end || us < 0 || us > 10000)
			us = (long)(dflt_ns / 1000);
		v = (int64_t)us * 1000;
		atomic_store_explicit(cache, v, memory_order_relaxed);
	}
	return (uint64_t)v;
}

static uint64_t tcp_spin_ns(void)
{
	static _Atomic int64_t ns = -1;

	return env_spin_ns("RPCRDMA_IWARP_SPIN_US", IW_TCP_SPIN_NS, &ns);
}

static uint64_t shm_spin_long_ns(void)
{
	static _Atomic int64_t ns = -1;

	return env_spin_ns("RPCRDMA_SHM_SPIN_US", IW_SHM_SPIN_LONG_NS, &ns);
}

/* The short watch, or the long one after a wait no longer than that. */
static uint64_t shm_spin_ns(struct iw_cq *cq)
{
	uint64_t lng = shm_spin_long_ns();

	if (lng > IW_SHM_SPIN_NS &&
	    atomic_load_explicit(&cq->spin_shm, memory_order_relaxed))
		return lng;
	return IW_SHM_SPIN_NS;
}

/*
 * shm: a ring is memory, so a waiter can watch it without a syscall, and
 * while it watches the peer need not ring (shm_ring.h). One look: the
 * ring's input is read here if any, else the ring is marked watched. Under
 * rx_mu, so that whoever reads next, and arms at the end, comes after.
 */
static void ring_look(struct iw_qp *qp)
{
	if (pthread_mutex_trylock(&qp->rx_mu))
		return; /* a reader is at it, and arms when done */
	if (qp->ring && iw_qp_state(qp) == RR_QPS_RTS) {
		if (rr__shm_ring_ready(&qp->link))
			rr__iw_rx_run(qp, true);
		else
			rr__shm_ring_watch(&qp->link);
	}
	pthread_mutex_unlock(&qp->rx_mu);
}

/*
 * Watches the rings of the QPs polled before the waiter sleeps: a peer
 * that answers meanwhile is heard at memory speed. Every watched ring is
 * read once more at the end, which arms it again (the peer rings from then
 * on). True when the CQ has entries.
 *
 * How long: IW_SHM_SPIN_NS, or IW_SHM_SPIN_LONG_NS when the last wait
 * ended within that. A server answers a batch of calls at once, so a
 * client at depth 16 waits the batch out (16 READs of 4 KiB from files:
 * 100 us and more), and with the short watch alone it often slept:
 * each batch then cost the server a bell and the client a wake-up, and
 * once started that kept itself going. NFS 4 KiB random reads over shm,
 * each side on a CPU of its own, six runs: on a busy host three at 96-100
 * thousand READs a second (a bell every 10 READs) and three at 143-148
 * thousand; with the long watch, unpinned, 150-159 thousand every time (a
 * bell every 300-900). On a quieter host 138-162 thousand, median 160 (a
 * bell every 20), against 134-171, median 164 (every 2000). A waiter whose
 * peer is slow or idle still sleeps after the short watch.
 *
 * After IW_SHM_YIELD_NS the watcher yields between looks, as the TCP look
 * does: where threads outnumber CPUs (nfsrdmad's loop watching while its
 * workers read files, beside the client) a watch that only burned the CPU
 * held back the threads with work. NFS 1 MiB reads over shm, depth 4, six
 * pairs: 4.0-5.9 GB/s against 3.2-3.8 without; 4 KiB random reads at
 * depth 16 within noise. A 64-byte ping-pong answers within the first
 * microseconds, before any yield (p50 3.2-3.7 us either way).
 */
static bool spin_rings(struct iw_cq *cq, struct iw_qp **qps, uint32_t nq)
{
	uint64_t end = 0, budget;
	bool any = false, ready = false;

	for (uint32_t i = 0; i < nq; i++)
		any |= qps[i]->ring;
	if (!any)
		return false;
	budget = shm_spin_ns(cq);
	for (uint32_t spins = 0; !ready; spins++) {
		for (uint32_t i = 0; i < nq; i++)
			if (qps[i]->ring)
				ring_look(qps[i]);
		ready = cq_ready(cq);
		if ((spins & 15) == 0) {
			uint64_t now = now_ns();

			if (!end)
				end = now + budget;
			else if (now >= end)
				break;
			else if (end - now < budget - IW_SHM_YIELD_NS)
				sched_yield();
		}
		cpu_relax();
	}
	for (uint32_t i = 0; i < nq; i++)
		if (qps[i]->ring)
			rr__iw_qp_rx_try(qps[i], true);
	return ready || cq_ready(cq);
}

/*
 * TCP: a waiter asleep in poll() must be woken by whoever queues data on
 * its socket, and where a wake-up across CPUs is dear (a hypervisor's
 * interrupt) the sender pays it for every segment of a large Write. So a
 * waiter whose last wait was short looks at its sockets, without sleeping,
 * for up to IW_TCP_SPIN_NS first; one whose last wait was longer sleeps
 * at once, so an idle or slow peer costs no CPU. Between looks it yields:
 * where threads outnumber CPUs (a server's workers, the progress thread
 * that moves the data) a look that only burned the CPU made 1 MiB WRITEs
 * over NFS 8% slower, and with the yield they were 8% faster. Rings spin
 * on their own. p holds n descriptors: the eventfd, the nq sockets and
 * perhaps the caller's (rr_cq_wait_fd). Returns what poll() returned, or 1
 * when the CQ has entries.
 */
static int spin_sockets(struct iw_cq *cq, struct iw_qp **qps, uint32_t nq,
			struct pollfd *p, nfds_t n, int timeout_ms)
{
	uint64_t end;
	int r = 0;

	if (!nq || timeout_ms == 0 ||
	    !atomic_load_explicit(&cq->spin_tcp, memory_order_relaxed))
		return 0;
	for (uint32_t i = 0; i < nq; i++)
		if (qps[i]->ring)
			return 0;
	end = now_ns() + tcp_spin_ns();
	while (r == 0 && !cq_ready(cq) && now_ns() < end) {
		r = poll(p, n, 0);
		if (r == 0)
			sched_yield();
	}
	return r == 0 && cq_ready(cq) ? 1 : r;
}

/*
 * Only a thread asleep in poll() needs the eventfd raised for it (a
 * spinning one sees the count), so `waiters` counts those, from a look at
 * the count under the same lock a completion is added under.
 */
static int sleep_once(struct iw_cq *cq, struct pollfd *p, nfds_t n,
		      int timeout_ms)
{
	int r;

	pthread_mutex_lock(&cq->mu);
	if (cq->count) {
		pthread_mutex_unlock(&cq->mu);
		return 1;
	}
	cq->waiters++;
	pthread_mutex_unlock(&cq->mu);
	r = poll(p, n, timeout_ms);
	pthread_mutex_lock(&cq->mu);
	cq->waiters--;
	pthread_mutex_unlock(&cq->mu);
	return r;
}

/*
 * Polls the CQ's eventfd and, for a CQ with few QPs, their sockets: when a
 * socket turns readable this thread does the receive work itself (if the
 * progress thread is not already doing it) instead of waiting to be woken.
 * The caller's fd, if any, goes last; -EAGAIN when it alone woke us.
 */
static int wait_once(struct iw_cq *cq, int timeout_ms, int fd)
{
	struct pollfd p[2 + IW_CQ_WAIT_MAX_QPS];
	struct iw_qp *qps[IW_CQ_WAIT_MAX_QPS];
	uint32_t nq = 0;
	uint64_t t0, waited;
	int n;

	pthread_mutex_lock(&cq->mu);
	if (cq->count) {
		pthread_mutex_unlock(&cq->mu);
		return 0;
	}
	p[0] = (struct pollfd){.fd = cq->efd, .events = POLLIN};
	for (uint32_t i = 0; i < cq->nqps; i++) {
		struct iw_qp *qp = cq->qps[i];

		if (iw_qp_state(qp) != RR_QPS_RTS)
			continue;
		rr_ref_get(&qp->ref);
		rr__iw_qp_waiter_enter(qp);
		qps[nq] = qp;
		p[1 + nq++] = (struct pollfd){.fd = qp->fd, .events = POLLIN};
	}
	pthread_mutex_unlock(&cq->mu);
	p[1 + nq] = (struct pollfd){.fd = fd, .events = POLLIN};
	t0 = now_ns();
	n = spin_rings(cq, qps, nq)
		    ? 1
		    : spin_sockets(cq, qps, nq, p, 2 + nq, timeout_ms);
	if (n == 0)
		n = sleep_once(cq, p, 2 + nq, timeout_ms);
	waited = now_ns() - t0;
	atomic_store_explicit(&cq->spin_tcp, waited <= tcp_spin_ns(),
			      memory_order_relaxed);
	atomic_store_explicit(&cq->spin_shm,
			      n > 0 && waited <= shm_spin_long_ns(),
			      memory_order_relaxed);
	for (uint32_t i = 0; i < nq; i++) {
		struct iw_qp *qp = qps[i];
		bool seen = n > 0 && p[1 + i].revents;

		if (seen && qp->ring)
			atomic_store(&qp->bell_seen, true);
		/*
		 * Still a waiter while it reads: reading 16 queued 1 MiB
		 * replies took longer than IW_HANDBACK_MS, and the progress
		 * thread, taking the input back, then fed us a completion
		 * and a wake-up at a time (half the rate, on one CPU).
		 */
		if (atomic_exchange(&qp->rx_skipped, 0) || seen)
			rr__iw_qp_rx_try(qp, false);
		rr__iw_qp_waiter_leave(qp);
		/* what the progress thread left to us meanwhile */
		if (atomic_exchange(&qp->rx_skipped, 0))
			rr__iw_qp_rx_try(qp, false);
		rr__iw_qp_put(qp);
	}
	if (n < 0 && errno != EINTR)
		return -errno;
	if (n > 0 && p[1 + nq].revents && !cq_ready(cq))
		return -EAGAIN;
	return n == 0 ? -ETIMEDOUT : 0;
}

int rr__iw_cq_wait(struct rr_cq *c, int timeout_ms, int fd)
{
	struct iw_cq *cq = to_iw_cq(c);
	uint64_t deadline =
		timeout_ms < 0 ? 0 : rr__iw_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		int left = -1, rc;

		if (cq_ready(cq))
			return 0;
		if (timeout_ms >= 0) {
			uint64_t now = rr__iw_now_ms();

			if (now >= deadline)
				return -ETIMEDOUT;
			left = (int)(deadline - now);
		}
		rc = wait_once(cq, left, fd);
		if (rc && rc != -ETIMEDOUT)
			return rc;
	}
}

/* ------------------------------------------------------- event channels */

int rr__iw_evch_create(struct rr_device *dev, struct rr_evch **out)
{
	struct iw_evch *ch = rr_calloc(1, sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->efd < 0) {
		int rc = -errno;

		free(ch);
		return rc;
	}
	pthread_mutex_init(&ch->mu, NULL);
	ch->base.dev = dev;
	*out = &ch->base;
	return 0;
}

/* Caller holds ch->mu: e leaves the list; a reserved slot is free again. */
static void event_release(struct iw_event *e)
{
	e->queued = false;
	if (e->heap)
		free(e);
}

int rr__iw_evch_destroy(struct rr_evch *c)
{
	struct iw_evch *ch = to_iw_evch(c);

	while (ch->head) {
		struct iw_event *e = ch->head;

		ch->head = e->next;
		event_release(e);
	}
	close(ch->efd);
	pthread_mutex_destroy(&ch->mu);
	free(ch);
	return 0;
}

int rr__iw_evch_fd(struct rr_evch *c)
{
	return to_iw_evch(c)->efd;
}

/* Caller holds ch->mu. A free slot of the caller's reserve, or NULL. */
static struct iw_event *reserved_slot(struct iw_event *res, uint32_t nres)
{
	for (uint32_t i = 0; i < nres; i++)
		if (!res[i].queued)
			return &res[i];
	return NULL;
}

/*
 * Queues ev in a free slot of res (the object's own event memory), or in
 * an allocated one when the reserve is all queued (not expected: see
 * IW_QP_EV_RESERVE).
 */
void rr__iw_evch_push(struct iw_evch *ch, const struct rr_cm_event *ev,
		      struct iw_event *res, uint32_t nres)
{
	struct iw_event *e;

	pthread_mutex_lock(&ch->mu);
	e = reserved_slot(res, nres);
	if (!e) {
		pthread_mutex_unlock(&ch->mu);
		e = rr_malloc(sizeof(*e));
		if (!e) {
			rr_err_rl("iwarp: lost CM event %s: out of memory",
				  rr_cm_event_str(ev->type));
			return;
		}
		e->heap = true;
		pthread_mutex_lock(&ch->mu);
	}
	e->ev = *ev;
	e->next = NULL;
	e->queued = true;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	efd_raise(ch->efd, &ch->signaled);
	pthread_mutex_unlock(&ch->mu);
}

/* Drops queued events that name obj (a QP or listener being destroyed). */
void rr__iw_evch_purge(struct iw_evch *ch, const void *obj)
{
	struct iw_event **pp, *e;

	pthread_mutex_lock(&ch->mu);
	ch->tail = NULL;
	for (pp = &ch->head; (e = *pp);) {
		if ((const void *)e->ev.qp == obj ||
		    (const void *)e->ev.listener == obj) {
			*pp = e->next;
			event_release(e);
			continue;
		}
		ch->tail = e;
		pp = &e->next;
	}
	if (!ch->head)
		efd_clear(ch->efd, &ch->signaled);
	pthread_mutex_unlock(&ch->mu);
}

static bool evch_pop(struct iw_evch *ch, struct rr_cm_event *ev)
{
	struct iw_event *e;

	pthread_mutex_lock(&ch->mu);
	e = ch->head;
	if (e) {
		ch->head = e->next;
		if (!ch->head) {
			ch->tail = NULL;
			efd_clear(ch->efd, &ch->signaled);
		}
		/* ORDER: copied before a reserved slot can be reused. */
		*ev = e->ev;
		event_release(e);
	}
	pthread_mutex_unlock(&ch->mu);
	return e != NULL;
}

int rr__iw_evch_get(struct rr_evch *c, struct rr_cm_event *ev, int timeout_ms)
{
	struct iw_evch *ch = to_iw_evch(c);
	uint64_t deadline =
		rr__iw_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);

	for (;;) {
		int left = -1, rc;

		if (evch_pop(ch, ev))
			return 0;
		if (timeout_ms == 0)
			return -EAGAIN;
		if (timeout_ms > 0) {
			uint64_t now = rr__iw_now_ms();

			if (now >= deadline)
				return -ETIMEDOUT;
			left = (int)(deadline - now);
		}
		rc = wait_readable(ch->efd, left);
		if (rc && rc != -ETIMEDOUT)
			return rc;
	}
}

void rr__iw_qp_event(struct iw_qp *qp, enum rr_cm_event_type t, int status,
		     const void *pd, size_t len)
{
	struct rr_cm_event ev = {.type = t, .status = status, .qp = &qp->base};

	ev.peer = qp->peer;
	if (len > sizeof(ev.private_data))
		len = sizeof(ev.private_data);
	if (len)
		memcpy(ev.private_data, pd, len);
	ev.private_data_len = (uint32_t)len;
	rr__iw_evch_push(qp->evch, &ev, qp->ev_reserve, IW_QP_EV_RESERVE);
}
