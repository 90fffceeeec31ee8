/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The iwarp device: its progress thread, the epoll set every socket of the
 * device lives in, counters, and protection domains.
 */
#include "fabric/iwarp/iw.h"
#include "base/alloc.h"
#include "base/clock.h"

#include "base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

uint64_t rr__iw_now_ms(void)
{
	return rr_mono_ms();
}

int rr__iw_epoll_add(struct iw_device *dev, int fd, struct iw_pollable *p,
		     uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = p};

	return epoll_ctl(dev->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

void rr__iw_epoll_mod(struct iw_device *dev, int fd, struct iw_pollable *p,
		      uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = p};

	epoll_ctl(dev->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void rr__iw_epoll_del(struct iw_device *dev, int fd)
{
	epoll_ctl(dev->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void rr__iw_wake(struct iw_device *dev)
{
	uint64_t one = 1;

	if (write(dev->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		rr_warn("iwarp: wake write: %s", strerror(errno));
}

/*
 * ORDER: after an epoll_ctl(DEL), an epoll_wait that already returned may
 * still hold a pointer to the object. The epoch advances (under dev->mu)
 * once per loop iteration, after its events are dispatched, so once it has
 * moved past the value read here, any iteration that could have seen the
 * object is over; later epoll_waits cannot return it.
 */
void rr__iw_epoch_barrier(struct iw_device *dev)
{
	uint64_t target;

	if (pthread_equal(pthread_self(), dev->thread))
		return; /* the loop itself holds no stale pointer here */
	pthread_mutex_lock(&dev->mu);
	target = dev->epoch + 1;
	rr__iw_wake(dev);
	while (dev->epoch < target && !atomic_load(&dev->stop))
		pthread_cond_wait(&dev->epoch_cv, &dev->mu);
	pthread_mutex_unlock(&dev->mu);
}

static void dispatch(struct iw_device *dev, struct epoll_event *ev)
{
	struct iw_pollable *p = ev->data.ptr;
	uint64_t v;

	switch (p->kind) {
	case IW_POLL_WAKE:
		if (read(dev->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			rr_warn("iwarp: wake read: %s", strerror(errno));
		break;
	case IW_POLL_LISTENER:
		rr__iw_cm_listener_ready(
			(struct iw_listener *)((char *)p -
					       offsetof(struct iw_listener,
							poll)));
		break;
	case IW_POLL_CONNREQ:
		rr__iw_cm_connreq_ready(
			(struct iw_connreq *)((char *)p -
					      offsetof(struct iw_connreq,
						       poll)));
		break;
	case IW_POLL_QP: {
		struct iw_qp *qp =
			(struct iw_qp *)((char *)p -
					 offsetof(struct iw_qp, poll));

		if (iw_qp_state(qp) == RR_QPS_CONNECTING) {
			rr__iw_cm_connect_progress(qp, ev->events);
			break;
		}
		if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
			if (qp->ring)
				atomic_store(&qp->bell_seen, true);
			rr__iw_qp_rx_progress(qp);
		}
		if (ev->events & EPOLLOUT)
			rr__iw_tx_kick(qp);
		break;
	}
	}
}

static void *progress_main(void *arg)
{
	struct iw_device *dev = arg;
	struct epoll_event evs[64];
	int hand_due = IW_HANDBACK_MS;

	pthread_setname_np(pthread_self(), dev->shm ? "rr-shm" : "rr-iwarp");
	while (!atomic_load(&dev->stop)) {
		int timeout, n;

		/* Handshakes in progress need the loop to wake for their timer.
		 */
		pthread_mutex_lock(&dev->mu);
		timeout = dev->pending || dev->connecting ? 200 : -1;
		if (dev->handed)
			timeout = hand_due;
		pthread_mutex_unlock(&dev->mu);
		n = epoll_wait(dev->epfd, evs, 64, timeout);

		for (int i = 0; i < n; i++)
			dispatch(dev, &evs[i]);
		rr__iw_cm_expire(dev);
		hand_due = rr__iw_qp_take_back(dev);
		pthread_mutex_lock(&dev->mu);
		dev->epoch++;
		pthread_cond_broadcast(&dev->epoch_cv);
		pthread_mutex_unlock(&dev->mu);
	}
	return NULL;
}

static void set_attr(struct rr_device_attr *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->provider, sizeof(a->provider), "%s", name);
	a->max_qp_wr = IW_MAX_QP_WR;
	a->max_sge = IW_MAX_SGE;
	a->max_cqe = IW_MAX_CQE;
	a->max_ird = IW_MAX_IRD;
	a->max_ord = IW_MAX_ORD;
	a->max_private_data = IW_MPA_MAX_APP_PD;
	a->max_mr_size = UINT32_MAX; /* RDMA Read size is a 32-bit field */
	a->mw_bind = RR_MW_BIND_WR | RR_MW_BIND_SYNC;
	a->responder_reasons = 1;
}

int rr__iw_device_open_as(const struct rr_provider_ops *ops, bool shm,
			  struct rr_device **out)
{
	struct iw_device *dev;
	int rc;

	dev = rr_calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->base.ops = ops;
	dev->shm = shm;
	set_attr(&dev->base.attr, ops->name);
	dev->wake.kind = IW_POLL_WAKE;
	pthread_mutex_init(&dev->mu, NULL);
	pthread_cond_init(&dev->epoch_cv, NULL);
	rc = rr__iw_stag_table_init(&dev->stags);
	if (rc)
		goto err_free;
	dev->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dev->epfd < 0) {
		rc = -errno;
		goto err_stags;
	}
	dev->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (dev->wake_fd < 0) {
		rc = -errno;
		goto err_ep;
	}
	rc = rr__iw_epoll_add(dev, dev->wake_fd, &dev->wake, EPOLLIN);
	if (rc)
		goto err_wake;
	rc = -pthread_create(&dev->thread, NULL, progress_main, dev);
	if (rc)
		goto err_wake;
	*out = &dev->base;
	return 0;

err_wake:
	close(dev->wake_fd);
err_ep:
	close(dev->epfd);
err_stags:
	rr__iw_stag_table_fini(&dev->stags);
err_free:
	free(dev);
	return rc;
}

static int iw_device_open(const struct rr_device_opts *opts,
			  struct rr_device **out)
{
	(void)opts;
	return rr__iw_device_open_as(&rr__iwarp_ops, false, out);
}

int rr__iw_device_close(struct rr_device *d)
{
	struct iw_device *dev = to_iw_dev(d);

	atomic_store(&dev->stop, true);
	rr__iw_wake(dev);
	pthread_join(dev->thread, NULL);
	while (dev->pending) {
		struct iw_connreq *r = dev->pending;

		dev->pending = r->next;
		rr__iw_cm_connreq_free(r);
	}
	close(dev->wake_fd);
	close(dev->epfd);
	rr__iw_stag_table_fini(&dev->stags);
	pthread_cond_destroy(&dev->epoch_cv);
	pthread_mutex_destroy(&dev->mu);
	free(dev);
	return 0;
}

int rr__iw_device_counters(struct rr_device *d, struct rr_fabric_counters *out)
{
	struct iw_device *dev = to_iw_dev(d);
	const uint64_t *src = (const uint64_t *)&dev->ctr;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	return 0;
}

int rr__iw_pd_alloc(struct rr_device *d, struct rr_pd **out)
{
	struct iw_pd *pd = rr_calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->base.dev = d;
	*out = &pd->base;
	return 0;
}

int rr__iw_pd_free(struct rr_pd *p)
{
	struct iw_pd *pd = to_iw_pd(p);

	if (atomic_load(&pd->users))
		return -EBUSY;
	free(pd);
	return 0;
}

const struct rr_provider_ops rr__iwarp_ops = {
	.name = "iwarp",
	.device_open = iw_device_open,
	RR_IW_ENGINE_OPS,
};
