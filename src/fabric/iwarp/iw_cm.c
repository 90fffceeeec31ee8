/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Connection management: TCP connect/accept and the MPA handshake (RFC 5044
 * section 7.1, enhanced mode of RFC 6581), all non-blocking in the progress
 * thread, so a peer that connects and goes silent costs one timer, not a
 * thread.
 *
 * Negotiation: CRC is used when either side asks for it (the reply's C bit
 * is authoritative). The RFC 6581 IRD/ORD block is always sent; our ORD is
 * capped by the peer's IRD. Markers are refused with a reject. No P2P
 * ready-to-receive message is requested (the Linux NFS stack uses none);
 * a zero-length Write sent as RTR by a peer is accepted as a no-op.
 */
#include "fabric/iwarp/iw.h"
#include "fabric/shm/shm.h"
#include "base/alloc.h"

#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { CM_TCP, CM_SEND_REQ, CM_RECV_REP };

static void connect_failed(struct iw_qp *qp, int err);
static void expire_connecting(struct iw_device *dev, uint64_t now);

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

static int mpa_build(struct iw_mpa_frame *f, bool reply, uint8_t flags,
		     uint16_t ird, uint16_t ord, const void *pd, size_t len,
		     uint8_t *buf, size_t cap)
{
	memset(f, 0, sizeof(*f));
	f->reply = reply;
	f->flags = flags | IW_MPA_FLAG_ENHANCED;
	f->rev = IW_MPA_REV;
	f->ird = ird;
	f->ord = ord;
	f->pd_len = (uint16_t)len;
	if (len)
		memcpy(f->pd, pd, len);
	return rr__iw_mpa_encode(f, buf, cap);
}

/* Writes a whole handshake frame on a fresh socket, waiting a bounded time. */
static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};

			if (poll(&p, 1, IW_HANDSHAKE_MS) <= 0)
				return -ETIMEDOUT;
			continue;
		}
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * shm: a client's request carries its memfd (SCM_RIGHTS). The first
 * descriptor is kept in *keep; any other one a peer sends is closed.
 */
#define FDS_MAX 4 /* descriptors one request's message may carry */

static ssize_t recv_with_fd(int fd, uint8_t *buf, size_t len, int *keep)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(FDS_MAX * sizeof(int))];
	} c;
	struct iovec v = {buf, len};
	struct msghdr m = {.msg_iov = &v,
			   .msg_iovlen = 1,
			   .msg_control = c.b,
			   .msg_controllen = sizeof(c.b)};
	ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return n;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		size_t nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[FDS_MAX];

		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		if (nfd > FDS_MAX) /* the kernel installs no more than fit */
			nfd = FDS_MAX;
		memcpy(fds, CMSG_DATA(h), nfd * sizeof(int));
		for (size_t i = 0; i < nfd; i++) {
			if (*keep < 0)
				*keep = fds[i];
			else
				close(fds[i]);
		}
	}
	return n;
}

/*
 * Reads a handshake frame incrementally: the header, then the private data
 * it announces. 1 when complete, 0 for more, negative errno on bad bytes.
 * A descriptor passed along is kept in *ring_fd when that is not NULL.
 */
static int read_frame(int fd, uint8_t *buf, uint32_t *have, bool reply,
		      struct iw_mpa_frame *f, int *ring_fd)
{
	for (;;) {
		uint16_t pd_total = 0;
		uint32_t need = IW_MPA_HDR_LEN;
		ssize_t n;
		int rc;

		if (*have >= IW_MPA_HDR_LEN) {
			rc = rr__iw_mpa_decode_header(buf, reply, f, &pd_total);
			if (rc)
				return rc;
			need += pd_total;
			if (*have == need)
				return rr__iw_mpa_decode_pdata(
					       buf + IW_MPA_HDR_LEN, pd_total,
					       f)
					       ?: 1;
		}
		n = ring_fd ? recv_with_fd(fd, buf + *have, need - *have,
					   ring_fd)
			    : recv(fd, buf + *have, need - *have, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0
								       : -errno;
		*have += (uint32_t)n;
	}
}

/* ------------------------------------------------------------ passive */

int rr__iw_listen(struct rr_device *d, struct rr_evch *ch,
		  const struct sockaddr *addr, socklen_t addrlen, int backlog,
		  struct rr_listener **out)
{
	struct iw_device *dev = to_iw_dev(d);
	struct iw_listener *l = rr_calloc(1, sizeof(*l));
	int one = 1, rc;

	if (!l)
		return -ENOMEM;
	if (dev->shm) {
		rc = rr__shm_listen_socket(addr, addrlen, backlog, &l->fd,
					   &l->shm_addr);
		if (rc)
			goto err_free;
		goto listening;
	}
	l->fd = socket(addr->sa_family,
		       SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		rc = -errno;
		goto err_free;
	}
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->fd, addr, addrlen) || listen(l->fd, backlog)) {
		rc = -errno;
		goto err_close;
	}
listening:
	l->base = (struct rr_listener){.dev = d, .evch = ch};
	l->poll.kind = IW_POLL_LISTENER;
	rc = rr__iw_epoll_add(dev, l->fd, &l->poll, EPOLLIN);
	if (rc)
		goto err_close;
	*out = &l->base;
	return 0;
err_close:
	close(l->fd);
err_free:
	free(l);
	return rc;
}

int rr__iw_listener_addr(struct rr_listener *l, struct sockaddr_storage *out)
{
	socklen_t len = sizeof(*out);

	if (to_iw_dev(l->dev)->shm) {
		*out = to_iw_listener(l)->shm_addr;
		return 0;
	}
	return getsockname(to_iw_listener(l)->fd, (struct sockaddr *)out, &len)
		       ? -errno
		       : 0;
}

void rr__iw_cm_connreq_free(struct iw_connreq *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->ring_fd >= 0)
		close(r->ring_fd);
	free(r);
}

static void unlink_req(struct iw_connreq **head, struct iw_connreq *r)
{
	for (struct iw_connreq **pp = head; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			return;
		}
	}
}

int rr__iw_listener_close(struct rr_listener *lb)
{
	struct iw_listener *l = to_iw_listener(lb);
	struct iw_device *dev = to_iw_dev(lb->dev);
	struct iw_connreq *mine = NULL, **pp, *r;

	rr__iw_epoll_del(dev, l->fd);
	pthread_mutex_lock(&dev->mu);
	for (pp = &dev->pending; (r = *pp);) {
		if (r->listener != l) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		r->dead = true;
		rr__iw_epoll_del(dev, r->fd);
		r->next = mine;
		mine = r;
	}
	pthread_mutex_unlock(&dev->mu);
	/* ORDER: nothing in the progress loop may still hold these. */
	rr__iw_epoch_barrier(dev);
	/* ORDER: a queued CONNECT_REQUEST lives in its request. */
	rr__iw_evch_purge(to_iw_evch(lb->evch), lb);
	while ((r = mine)) {
		mine = r->next;
		rr__iw_cm_connreq_free(r);
	}
	while ((r = l->reqs)) {
		l->reqs = r->next;
		rr__iw_cm_connreq_free(r);
	}
	close(l->fd);
	free(l);
	return 0;
}

/*
 * Frees a pending request, unless a closing listener took it meanwhile
 * (r->dead): that one frees it, after the progress loop is done with it.
 */
static void connreq_unpend(struct iw_device *dev, struct iw_connreq *r)
{
	bool ours;

	pthread_mutex_lock(&dev->mu);
	ours = !r->dead;
	if (ours)
		unlink_req(&dev->pending, r);
	pthread_mutex_unlock(&dev->mu);
	if (ours)
		rr__iw_cm_connreq_free(r);
}

void rr__iw_cm_listener_ready(struct iw_listener *l)
{
	struct iw_device *dev = to_iw_dev(l->base.dev);

	for (;;) {
		struct iw_connreq *r;
		socklen_t alen = sizeof(r->peer);
		struct sockaddr_storage peer;
		int fd = accept4(l->fd, (struct sockaddr *)&peer, &alen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		pid_t pid = 0;

		if (fd < 0)
			return;
		if (dev->shm) {
			if (rr__shm_peer_check(dev, fd, &pid)) {
				IW_COUNT(dev, conn_failed);
				close(fd);
				continue;
			}
			rr__shm_peer_addr(&l->shm_addr, &peer);
		}
		r = rr_calloc(1, sizeof(*r));
		if (!r) {
			IW_COUNT(dev, conn_failed);
			close(fd);
			continue;
		}
		r->base.dev = &dev->base;
		r->poll.kind = IW_POLL_CONNREQ;
		r->listener = l;
		r->fd = fd;
		r->ring_fd = -1;
		r->peer_pid = pid;
		r->peer = peer;
		r->deadline_ms = rr__iw_now_ms() + IW_HANDSHAKE_MS;
		pthread_mutex_lock(&dev->mu);
		r->next = dev->pending;
		dev->pending = r;
		pthread_mutex_unlock(&dev->mu);
		if (rr__iw_epoll_add(dev, fd, &r->poll, EPOLLIN))
			connreq_unpend(dev, r);
	}
}

/* Refuses a request we cannot serve with an MPA reply carrying R. */
static void send_reject(int fd, const struct iw_mpa_frame *req)
{
	struct iw_mpa_frame f;
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	int len = mpa_build(&f, true, IW_MPA_FLAG_REJECT, 0, 0, NULL, 0, buf,
			    sizeof(buf));

	(void)req;
	if (len > 0)
		write_all(fd, buf, (size_t)len);
}

static void connreq_drop(struct iw_device *dev, struct iw_connreq *r)
{
	IW_COUNT(dev, conn_failed);
	rr__iw_epoll_del(dev, r->fd);
	connreq_unpend(dev, r);
}

void rr__iw_cm_connreq_ready(struct iw_connreq *r)
{
	struct iw_listener *l = r->listener;
	struct iw_device *dev = to_iw_dev(l->base.dev);
	struct rr_cm_event ev = {.type = RR_CM_CONNECT_REQUEST};
	int rc = read_frame(r->fd, r->buf, &r->have, false, &r->req,
			    dev->shm ? &r->ring_fd : NULL);

	if (rc == 0)
		return;
	if (rc > 0 && dev->shm &&
	    (r->ring_fd < 0 || rr__shm_link_fd_ok(r->ring_fd))) {
		IW_COUNT(dev, shm_ring_refused);
		send_reject(r->fd, &r->req);
		connreq_drop(dev, r);
		return;
	}
	if (rc < 0 || (r->req.flags & IW_MPA_FLAG_MARKERS)) {
		if (rc == -EBADMSG || rc == -EPROTO || rc == -EMSGSIZE)
			IW_COUNT(dev, mpa_bad_frame);
		if (rc > 0) {
			IW_COUNT(dev, mpa_markers_refused);
			send_reject(r->fd, &r->req);
		}
		connreq_drop(dev, r);
		return;
	}
	rr__iw_epoll_del(dev, r->fd);
	ev.listener = &l->base;
	ev.req = &r->base;
	ev.peer = r->peer;
	ev.private_data_len = r->req.pd_len;
	memcpy(ev.private_data, r->req.pd, r->req.pd_len);
	pthread_mutex_lock(&dev->mu);
	if (!r->dead) {
		unlink_req(&dev->pending, r);
		r->next = l->reqs;
		l->reqs = r;
		rr__iw_evch_push(to_iw_evch(l->base.evch), &ev, &r->ev, 1);
	}
	pthread_mutex_unlock(&dev->mu);
}

/* Handshakes that did not complete in time are dropped. */
void rr__iw_cm_expire(struct iw_device *dev)
{
	uint64_t now = rr__iw_now_ms();
	struct iw_connreq *r, *next, *late = NULL;

	pthread_mutex_lock(&dev->mu);
	for (r = dev->pending; r; r = next) {
		next = r->next;
		if (now < r->deadline_ms)
			continue;
		unlink_req(&dev->pending, r);
		r->next = late;
		late = r;
	}
	pthread_mutex_unlock(&dev->mu);
	for (r = late; r; r = next) {
		next = r->next;
		IW_COUNT(dev, conn_failed);
		rr__iw_epoll_del(dev, r->fd);
		rr__iw_cm_connreq_free(r);
	}
	expire_connecting(dev, now);
}

static struct iw_connreq *take_req(struct rr_conn_req *req)
{
	struct iw_connreq *r = (struct iw_connreq *)req;
	struct iw_device *dev = to_iw_dev(r->listener->base.dev);

	pthread_mutex_lock(&dev->mu);
	unlink_req(&r->listener->reqs, r);
	pthread_mutex_unlock(&dev->mu);
	return r;
}

int rr__iw_accept(struct rr_conn_req *req, struct rr_qp *q, const void *pdata,
		  size_t len)
{
	struct iw_qp *qp = to_iw_qp(q);
	struct iw_connreq *r = (struct iw_connreq *)req;
	struct iw_mpa_frame f;
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	bool crc =
		(r->req.flags & IW_MPA_FLAG_CRC) || (q->attr.flags & RR_QP_CRC);
	int n, rc;

	if (iw_qp_state(qp) != RR_QPS_INIT)
		return -EINVAL;
	r = take_req(req);
	qp->ord = min16(qp->ord, r->req.ird);
	n = mpa_build(&f, true, crc ? IW_MPA_FLAG_CRC : 0, qp->ird, qp->ord,
		      pdata, len, buf, sizeof(buf));
	rc = n < 0 ? n : 0;
	if (!rc && r->ring_fd >= 0)
		rc = rr__shm_link_attach(&qp->link, r->ring_fd);
	if (!rc)
		rc = write_all(r->fd, buf, (size_t)n);
	if (rc) {
		rr__shm_link_close(&qp->link);
		IW_COUNT(qp->dev, conn_failed);
		rr__iw_cm_connreq_free(r);
		return rc;
	}
	qp->crc = crc;
	qp->peer = r->peer;
	qp->peer_pid = r->peer_pid;
	pthread_mutex_lock(&qp->rx_mu);
	rr__iw_qp_set_established(qp, r->fd);
	r->fd = -1;
	rc = rr__iw_epoll_add(qp->dev, qp->fd, &qp->poll, IW_QP_EVENTS);
	qp->in_epoll = rc == 0;
	rr__iw_qp_arm_established(qp);
	pthread_mutex_unlock(&qp->rx_mu);
	rr__iw_cm_connreq_free(r);
	IW_COUNT(qp->dev, conn_established);
	rr__iw_qp_event(qp, RR_CM_ESTABLISHED, 0, NULL, 0);
	if (rc)
		rr__iw_disconnect(q);
	else
		rr__iw_qp_rx_try(qp, true); /* the peer may have sent already */
	return 0;
}

int rr__iw_reject(struct rr_conn_req *req, const void *pdata, size_t len)
{
	struct iw_connreq *r;
	struct iw_mpa_frame f;
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	int n;

	if (len > IW_MPA_MAX_APP_PD)
		return -EINVAL;
	r = take_req(req);
	n = mpa_build(&f, true, IW_MPA_FLAG_REJECT, 0, 0, pdata, len, buf,
		      sizeof(buf));
	if (n > 0)
		write_all(r->fd, buf, (size_t)n);
	IW_COUNT(to_iw_dev(r->listener->base.dev), conn_rejected);
	rr__iw_cm_connreq_free(r);
	return n < 0 ? n : 0;
}

/* ------------------------------------------------------------- active */

int rr__iw_connect(struct rr_qp *q, const struct sockaddr *addr,
		   socklen_t addrlen, const void *pdata, size_t len)
{
	struct iw_qp *qp = to_iw_qp(q);
	bool crc = q->attr.flags & RR_QP_CRC;
	struct iw_mpa_frame f;
	int fd, n, rc;

	if (iw_qp_state(qp) != RR_QPS_INIT || addrlen > sizeof(qp->peer))
		return -EINVAL;
	n = mpa_build(&f, false, crc ? IW_MPA_FLAG_CRC : 0, qp->ird, qp->ord,
		      pdata, len, qp->cm_buf, sizeof(qp->cm_buf));
	if (n < 0)
		return n;
	if (qp->dev->shm) {
		rc = rr__shm_connect_socket(addr, addrlen, &fd, &qp->cm_err);
		if (rc)
			return rc;
		rc = rr__shm_link_create(&qp->link, &qp->ring_fd);
		if (rc) {
			close(fd);
			return rc;
		}
		goto connecting;
	}
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -errno;
	if (connect(fd, addr, addrlen) && errno != EINPROGRESS) {
		rc = -errno;
		close(fd);
		return rc;
	}
connecting:
	pthread_mutex_lock(&qp->rx_mu);
	qp->fd = fd;
	qp->cm_len = (uint32_t)n;
	qp->cm_done = 0;
	qp->cm_phase = CM_TCP;
	qp->cm_deadline_ms = rr__iw_now_ms() + IW_HANDSHAKE_MS;
	memcpy(&qp->peer, addr, addrlen);
	atomic_store(&qp->state, RR_QPS_CONNECTING);
	pthread_mutex_lock(&qp->dev->mu);
	qp->cm_next = qp->dev->connecting;
	qp->dev->connecting = qp;
	qp->cm_listed = true;
	pthread_mutex_unlock(&qp->dev->mu);
	rc = rr__iw_epoll_add(qp->dev, fd, &qp->poll, IW_QP_EVENTS);
	qp->in_epoll = rc == 0;
	if (rc)
		atomic_store(&qp->state, RR_QPS_INIT);
	pthread_mutex_unlock(&qp->rx_mu);
	rr__iw_wake(
		qp->dev); /* the loop's timer now has a handshake to watch */
	return rc;
}

void rr__iw_cm_unlist(struct iw_qp *qp)
{
	struct iw_device *dev = qp->dev;

	pthread_mutex_lock(&dev->mu);
	if (qp->cm_listed) {
		for (struct iw_qp **pp = &dev->connecting; *pp;
		     pp = &(*pp)->cm_next) {
			if (*pp == qp) {
				*pp = qp->cm_next;
				break;
			}
		}
		qp->cm_listed = false;
	}
	pthread_mutex_unlock(&dev->mu);
}

/* Active handshakes past their deadline fail with -ETIMEDOUT. */
static void expire_connecting(struct iw_device *dev, uint64_t now)
{
	struct iw_qp *late[16];
	int n = 0;

	pthread_mutex_lock(&dev->mu);
	for (struct iw_qp *qp = dev->connecting; qp && n < 16;
	     qp = qp->cm_next) {
		if (now >= qp->cm_deadline_ms) {
			rr_ref_get(&qp->ref);
			late[n++] = qp;
		}
	}
	pthread_mutex_unlock(&dev->mu);
	for (int i = 0; i < n; i++) {
		/* Again under rx_mu: a reset QP may be connecting anew. */
		pthread_mutex_lock(&late[i]->rx_mu);
		if (iw_qp_state(late[i]) == RR_QPS_CONNECTING &&
		    now >= late[i]->cm_deadline_ms)
			connect_failed(late[i], -ETIMEDOUT);
		pthread_mutex_unlock(&late[i]->rx_mu);
		rr__iw_cm_unlist(late[i]);
		rr__iw_qp_put(late[i]);
	}
}

static void connect_failed(struct iw_qp *qp, int err)
{
	IW_COUNT(qp->dev, conn_failed);
	rr__iw_qp_fail(qp, RR_WC_WR_FLUSH_ERR, RR_CM_UNREACHABLE, err);
}

/* The reply arrived: reject, or switch the stream to FPDUs. */
static void connect_reply(struct iw_qp *qp, const struct iw_mpa_frame *f)
{
	if (f->flags & IW_MPA_FLAG_REJECT) {
		IW_COUNT(qp->dev, conn_rejected);
		rr__iw_qp_fail(qp, RR_WC_WR_FLUSH_ERR,
			       (enum rr_cm_event_type) - 1, 0);
		rr__iw_qp_event(qp, RR_CM_REJECTED, -ECONNREFUSED, f->pd,
				f->pd_len);
		return;
	}
	if (f->flags & IW_MPA_FLAG_MARKERS) {
		IW_COUNT(qp->dev, mpa_markers_refused);
		connect_failed(qp, -EPROTO);
		return;
	}
	qp->crc = f->flags & IW_MPA_FLAG_CRC;
	qp->ord = min16(qp->ord, f->ird);
	rr__iw_qp_set_established(qp, qp->fd);
	rr__iw_qp_arm_established(qp);
	IW_COUNT(qp->dev, conn_established);
	rr__iw_qp_event(qp, RR_CM_ESTABLISHED, 0, f->pd, f->pd_len);
	rr__iw_rx_run(
		qp, true); /* FPDUs may follow the reply in the same segment */
}

/* The request; on shm its first byte carries the rings' memfd. */
static ssize_t send_req(struct iw_qp *qp)
{
	ssize_t n = rr__shm_send_fd(qp->fd, qp->cm_buf + qp->cm_done,
				    qp->cm_len - qp->cm_done, qp->ring_fd);

	if (n > 0 && qp->ring_fd >= 0) {
		close(qp->ring_fd); /* the server has its own now */
		qp->ring_fd = -1;
	}
	return n;
}

static int connect_step(struct iw_qp *qp, uint32_t events)
{
	struct iw_mpa_frame f;
	int err = 0, rc;
	socklen_t el = sizeof(err);
	ssize_t n;

	switch (qp->cm_phase) {
	case CM_TCP:
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return 0;
		getsockopt(qp->fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err)
			return -err;
		if (qp->cm_err)
			return qp->cm_err;
		if (qp->dev->shm) {
			int rc2 = rr__shm_peer_check(qp->dev, qp->fd,
						     &qp->peer_pid);

			if (rc2)
				return rc2;
		}
		qp->cm_phase = CM_SEND_REQ;
		return 1;
	case CM_SEND_REQ:
		n = send_req(qp);
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		qp->cm_done += (uint32_t)n;
		if (qp->cm_done == qp->cm_len) {
			qp->cm_phase = CM_RECV_REP;
			qp->cm_done = 0;
		}
		return 1;
	default:
		rc = read_frame(qp->fd, qp->cm_buf, &qp->cm_done, true, &f,
				NULL);
		if (rc <= 0)
			return rc;
		connect_reply(qp, &f);
		return 0;
	}
}

void rr__iw_cm_connect_progress(struct iw_qp *qp, uint32_t events)
{
	int rc;

	pthread_mutex_lock(&qp->rx_mu);
	do {
		if (iw_qp_state(qp) != RR_QPS_CONNECTING) {
			rc = 0;
			break;
		}
		rc = connect_step(qp, events);
		if (rc < 0) {
			if (rc == -EBADMSG || rc == -EPROTO || rc == -EMSGSIZE)
				IW_COUNT(qp->dev, mpa_bad_frame);
			connect_failed(qp, rc);
		}
	} while (rc > 0);
	pthread_mutex_unlock(&qp->rx_mu);
	if (iw_qp_state(qp) != RR_QPS_CONNECTING)
		rr__iw_cm_unlist(qp);
}
