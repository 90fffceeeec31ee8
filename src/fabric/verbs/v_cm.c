/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Event channels, listeners and the connection handshake on rdma_cm.
 *
 * An rr_evch is an rdma_event_channel plus a queue of translated events.
 * rdma_cm's events are taken and acted upon inside rr_evch_get: the steps
 * that need no user decision (address and route resolution, the external
 * QP's RTR/RTS transitions, rdma_establish, answering a DREQ) happen
 * there and surface nothing; the rest become rr_cm_events. A completion
 * that fails a QP queues QP_ERROR here too (rr__v_qp_down); its eventfd keeps
 * the channel's fd readable. Each QP reports going down once.
 *
 * Connections use RDMA_PS_TCP and rnr_retry_count 0: a Send that finds no
 * receive fails the connection at once, as on iWARP, instead of being
 * retried while the peer is slow.
 */
#include "fabric/verbs/v.h"
#include "base/alloc.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define V_RESOLVE_MS	  2000
#define V_IB_REJ_CONSUMER 28 /* IB CM reject reason: the peer said no */
#define V_RETRY_COUNT	  7
#define V_RNR_RETRY_COUNT 0

#define container_of(p, type, member)                                          \
	((type *)((char *)(p)-offsetof(type, member)))

/* ------------------------------------------------------------ the queue */

static void push_locked(struct v_evch *ch, const struct rr_cm_event *ev)
{
	struct v_event *e = rr_malloc(sizeof(*e));

	if (!e)
		return; /* the QP is in ERROR regardless; only the news is lost
			 */
	e->ev = *ev;
	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	rr__v_efd_set(ch->efd, true);
}

static void v_evch_push(struct v_evch *ch, const struct rr_cm_event *ev)
{
	pthread_mutex_lock(&ch->mu);
	push_locked(ch, ev);
	pthread_mutex_unlock(&ch->mu);
}

static bool pop_locked(struct v_evch *ch, struct rr_cm_event *ev)
{
	struct v_event *e = ch->head;

	if (!e)
		return false;
	*ev = e->ev;
	ch->head = e->next;
	if (!ch->head) {
		ch->tail = NULL;
		rr__v_efd_set(ch->efd, false);
	}
	free(e);
	return true;
}

void rr__v_evch_purge(struct v_evch *ch, const struct v_qp *qp)
{
	struct v_event **pp, *e;

	pthread_mutex_lock(&ch->mu);
	ch->tail = NULL;
	for (pp = &ch->head; (e = *pp);) {
		if (e->ev.qp == &qp->base) {
			*pp = e->next;
			free(e);
		} else {
			ch->tail = e;
			pp = &e->next;
		}
	}
	if (!ch->head)
		rr__v_efd_set(ch->efd, false);
	pthread_mutex_unlock(&ch->mu);
}

/* ------------------------------------------------------------ QP going down */

static void down(struct v_qp *qp, enum rr_cm_event_type type, int status,
		 bool locked)
{
	struct rr_cm_event ev = {
		.type = type, .status = status, .qp = &qp->base};

	V_TRACE("qp %u down: %s %d\n", getpid(), qp->qp->qp_num,
		rr_cm_event_str(type), status);
	atomic_store(&qp->state, RR_QPS_ERROR);
	rr__v_qp_to_error(qp);
	if (atomic_exchange(&qp->down, true))
		return;
	if (locked)
		push_locked(qp->evch, &ev);
	else
		v_evch_push(qp->evch, &ev);
}

/* A completion failed the QP: tell the user, and the peer. */
void rr__v_qp_down(struct v_qp *qp, enum rr_cm_event_type type, int status)
{
	bool first = !atomic_load(&qp->down);

	down(qp, type, status, false);
	if (first && qp->id)
		rdma_disconnect(qp->id);
}

/* --------------------------------------------------------- event channel */

int rr__v_evch_create(struct rr_device *dev, struct rr_evch **out)
{
	struct v_evch *ch = rr_calloc(1, sizeof(*ch));
	int rc;

	if (!ch)
		return -ENOMEM;
	ch->efd = ch->epfd = -1;
	ch->ch = rdma_create_event_channel();
	rc = rr__v_ptr_rc(ch->ch);
	if (!rc)
		rc = rr__v_fd_nonblock(ch->ch->fd);
	if (!rc) {
		ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		rc = ch->efd < 0 ? -errno : 0;
	}
	if (!rc) {
		ch->epfd = rr__v_epoll_pair(ch->ch->fd, ch->efd);
		rc = ch->epfd < 0 ? ch->epfd : 0;
	}
	if (rc) {
		rr__v_evch_destroy(&ch->base);
		return rc;
	}
	pthread_mutex_init(&ch->mu, NULL);
	ch->base.dev = dev;
	*out = &ch->base;
	return 0;
}

int rr__v_evch_destroy(struct rr_evch *c)
{
	struct v_evch *ch = to_v_evch(c);
	struct rr_cm_event ev;

	while (pop_locked(ch, &ev))
		;
	if (ch->ch)
		rdma_destroy_event_channel(ch->ch);
	if (ch->efd >= 0)
		close(ch->efd);
	if (ch->epfd >= 0)
		close(ch->epfd);
	free(ch);
	return 0;
}

int rr__v_evch_fd(struct rr_evch *c)
{
	return to_v_evch(c)->epfd;
}

/* ------------------------------------------------------ handshake steps */

static void peer_of(struct rdma_cm_id *id, struct sockaddr_storage *out)
{
	const struct sockaddr *sa = rdma_get_peer_addr(id);

	memset(out, 0, sizeof(*out));
	if (sa)
		memcpy(out, sa,
		       sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						 : sizeof(struct sockaddr_in));
}

static void copy_pdata(struct rr_cm_event *ev, const struct rdma_cm_event *e)
{
	uint32_t n = e->param.conn.private_data_len;

	if (!e->param.conn.private_data)
		n = 0;
	ev->private_data_len =
		n < RR_MAX_PRIVATE_DATA ? n : RR_MAX_PRIVATE_DATA;
	if (n) /* memcpy from NULL is undefined even for 0 bytes */
		memcpy(ev->private_data, e->param.conn.private_data,
		       ev->private_data_len);
}

static struct rdma_conn_param conn_param(struct v_qp *qp, const void *pdata,
					 uint32_t len, int ird, int ord)
{
	return (struct rdma_conn_param){
		.private_data = len ? pdata : NULL,
		.private_data_len = (uint8_t)len,
		.responder_resources = (uint8_t)ird,
		.initiator_depth = (uint8_t)ord,
		.retry_count = V_RETRY_COUNT,
		.rnr_retry_count = V_RNR_RETRY_COUNT,
		.qp_num = qp->qp->qp_num,
	};
}

static void fail_connect(struct v_qp *qp, enum rr_cm_event_type type,
			 int status, const struct rdma_cm_event *e)
{
	struct rr_cm_event ev = {
		.type = type, .status = status, .qp = &qp->base};

	if (atomic_load(&qp->state) != RR_QPS_CONNECTING)
		return;
	if (type == RR_CM_REJECTED)
		V_COUNT(qp->dev, conn_rejected);
	else
		V_COUNT(qp->dev, conn_failed);
	if (e && type == RR_CM_REJECTED)
		copy_pdata(&ev, e);
	atomic_store(&qp->state, RR_QPS_ERROR);
	atomic_store(&qp->down, true);
	rr__v_qp_to_error(qp);
	push_locked(qp->evch, &ev);
}

static void established(struct v_qp *qp, const struct rdma_cm_event *e)
{
	struct rr_cm_event ev = {.type = RR_CM_ESTABLISHED, .qp = &qp->base};

	if (e)
		copy_pdata(&ev, e);
	peer_of(qp->id, &ev.peer);
	atomic_store(&qp->state, RR_QPS_RTS);
	V_COUNT(qp->dev, conn_established);
	push_locked(qp->evch, &ev);
}

/*
 * On InfiniBand and RoCE the acceptor's QP is in RTS before rdma_cm hears
 * the connector's RTU, so the first message can arrive before ESTABLISHED.
 * A receive completion proves the connection: tell rdma_cm (as the
 * COMM_EST async event would) and report ESTABLISHED now, so the reply to
 * that message can be posted. The late rdma_cm event then finds RTS.
 */
void rr__v_qp_comm_est(struct v_qp *qp)
{
	struct rr_cm_event ev = {.type = RR_CM_ESTABLISHED, .qp = &qp->base};
	int connecting = RR_QPS_CONNECTING;

	if (!atomic_compare_exchange_strong(&qp->state, &connecting,
					    RR_QPS_RTS))
		return;
	rdma_notify(qp->id, IBV_EVENT_COMM_EST);
	peer_of(qp->id, &ev.peer);
	V_COUNT(qp->dev, conn_established);
	v_evch_push(qp->evch, &ev);
}

static int route_resolved(struct v_qp *qp)
{
	const struct rr_qp_attr *a = &qp->base.attr;
	struct rdma_conn_param p =
		conn_param(qp, qp->pdata, qp->pdata_len, a->ird, a->ord);
	int rc = rr__v_qp_modify_cm(qp, IBV_QPS_INIT, 0);

	return rc ? rc : rr__v_cm_rc(rdma_connect(qp->id, &p));
}

/*
 * The acceptor answered: our external QP goes to RTS, then we confirm.
 * INIT is applied again first, as librdmacm and the kernel's rdma_cm do:
 * before the CM exchange the INIT attributes rdma_cm gives an active side
 * grant no remote access at all, so the peer's RDMA Writes and Reads into
 * our windows would be refused (rxe: "unsupported opcode") on an
 * otherwise healthy connection.
 */
static int connect_response(struct v_qp *qp, const struct rdma_cm_event *e)
{
	int ord = qp->base.attr.ord;
	int rc;

	if (e->param.conn.initiator_depth < ord) /* the acceptor's IRD */
		ord = e->param.conn.initiator_depth;
	rc = rr__v_qp_modify_cm(qp, IBV_QPS_INIT, 0);
	if (!rc)
		rc = rr__v_qp_modify_cm(qp, IBV_QPS_RTR, qp->base.attr.ird);
	if (!rc)
		rc = rr__v_qp_modify_cm(qp, IBV_QPS_RTS, ord);
	if (!rc)
		rc = rr__v_cm_rc(rdma_establish(qp->id));
	if (!rc)
		established(qp, e);
	return rc;
}

static bool consumer_reject(const struct v_qp *qp,
			    const struct rdma_cm_event *e)
{
	if (qp->dev->ctx->device->transport_type == IBV_TRANSPORT_IWARP)
		return e->param.conn.private_data_len > 0;
	return e->status == V_IB_REJ_CONSUMER;
}

static int cm_status(int status)
{
	return status < 0 ? status : -EHOSTUNREACH;
}

/* rdma_cm has its own context of each device; compare the devices. */
static bool same_device(const struct rdma_cm_id *id, const struct v_device *d)
{
	return id->verbs &&
	       ibv_get_device_guid(id->verbs->device) ==
		       ibv_get_device_guid(d->ctx->device) &&
	       strcmp(ibv_get_device_name(id->verbs->device),
		      ibv_get_device_name(d->ctx->device)) == 0;
}

static void qp_event(struct v_qp *qp, const struct rdma_cm_event *e)
{
	int rc = 0;

	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		rc = same_device(e->id, qp->dev)
			     ? rr__v_cm_rc(
				       rdma_resolve_route(e->id, V_RESOLVE_MS))
			     : -ENODEV; /* another device has that address */
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rc = route_resolved(qp);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		rc = connect_response(qp, e);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		/* iWARP's connector has no CONNECT_RESPONSE: the acceptor's
		 * private data (its inline sizes) comes here */
		if (atomic_load(&qp->state) == RR_QPS_CONNECTING)
			established(qp, e);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (consumer_reject(qp, e))
			fail_connect(qp, RR_CM_REJECTED, -ECONNREFUSED, e);
		else
			fail_connect(qp, RR_CM_UNREACHABLE, -ECONNREFUSED, e);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (atomic_load(&qp->state) == RR_QPS_CONNECTING)
			fail_connect(qp, RR_CM_UNREACHABLE,
				     cm_status(e->status), NULL);
		else
			down(qp, RR_CM_QP_ERROR, cm_status(e->status), true);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rdma_disconnect(e->id); /* answers the peer's DREQ */
		down(qp, RR_CM_DISCONNECTED, 0, true);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		down(qp, RR_CM_QP_ERROR, -ENODEV, true);
		break;
	default:
		break;
	}
	if (rc)
		fail_connect(qp, RR_CM_UNREACHABLE, rc, NULL);
}

/* Returns an id to destroy once the event is acked, or NULL. */
static struct rdma_cm_id *connect_request(struct v_evch *ch,
					  struct rdma_cm_event *e)
{
	struct v_listener *l =
		container_of(e->listen_id->context, struct v_listener, kind);
	struct v_req *req = rr_calloc(1, sizeof(*req));
	struct rr_cm_event ev = {.type = RR_CM_CONNECT_REQUEST,
				 .listener = &l->base};

	if (!req) {
		rdma_reject(e->id, NULL, 0);
		return e->id;
	}
	req->kind = V_REQ;
	req->id = e->id;
	/* rdma_cm reports the two depths from the recipient's side: its
	 * initiator_depth is the peer's responder resources (our ORD limit). */
	req->peer_ird = e->param.conn.initiator_depth;
	req->peer_ord = e->param.conn.responder_resources;
	req->base.dev = l->base.dev;
	e->id->context = &req->kind;
	ev.req = &req->base;
	peer_of(e->id, &ev.peer);
	copy_pdata(&ev, e);
	push_locked(ch, &ev);
	return NULL;
}

static struct rdma_cm_id *dispatch(struct v_evch *ch, struct rdma_cm_event *e)
{
	enum v_kind *k = e->id->context;

	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return connect_request(ch, e);
	if (k && *k == V_QP)
		qp_event(container_of(k, struct v_qp, kind), e);
	return NULL;
}

/* Takes what rdma_cm has for this channel, without blocking. */
static void drain_cm(struct v_evch *ch)
{
	struct rdma_cm_event *e;

	while (rdma_get_cm_event(ch->ch, &e) == 0) {
		struct rdma_cm_id *dead;

		V_TRACE("cm event %s status %d private data %u\n", getpid(),
			rdma_event_str(e->event), e->status,
			e->param.conn.private_data
				? e->param.conn.private_data_len
				: 0);
		dead = dispatch(ch, e);

		rdma_ack_cm_event(e);
		if (dead) /* destroying waits for its events to be acked */
			rdma_destroy_id(dead);
	}
}

/* For rr__v_cq_wait: what rdma_cm has queued is taken now (a DREQ flushes). */
void rr__v_evch_drain(struct v_evch *ch)
{
	pthread_mutex_lock(&ch->mu);
	drain_cm(ch);
	pthread_mutex_unlock(&ch->mu);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rr__v_evch_get(struct rr_evch *c, struct rr_cm_event *ev, int timeout_ms)
{
	struct v_evch *ch = to_v_evch(c);
	/* no clock for a look: it is a system call where the vDSO has none */
	int64_t end = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
	struct pollfd p = {.fd = ch->epfd, .events = POLLIN};

	for (;;) {
		int64_t left;
		bool got;

		pthread_mutex_lock(&ch->mu);
		got = pop_locked(ch, ev);
		if (!got) {
			drain_cm(ch);
			got = pop_locked(ch, ev);
		}
		pthread_mutex_unlock(&ch->mu);
		if (got)
			return 0;
		if (timeout_ms == 0)
			return -EAGAIN;
		left = timeout_ms < 0 ? -1 : end - now_ms();
		if (timeout_ms > 0 && left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
	}
}

/* ------------------------------------------------------------- listeners */

int rr__v_listen(struct rr_device *dev, struct rr_evch *c,
		 const struct sockaddr *addr, socklen_t addrlen, int backlog,
		 struct rr_listener **out)
{
	struct v_listener *l = rr_calloc(1, sizeof(*l));
	int rc;

	(void)addrlen;
	if (!l)
		return -ENOMEM;
	l->kind = V_LISTENER;
	rc = rr__v_cm_rc(rdma_create_id(to_v_evch(c)->ch, &l->id, &l->kind,
					RDMA_PS_TCP));
	if (!rc)
		rc = rr__v_cm_rc(
			rdma_bind_addr(l->id, (struct sockaddr *)addr));
	if (!rc)
		rc = rr__v_cm_rc(rdma_listen(l->id, backlog));
	if (rc) {
		if (l->id)
			rdma_destroy_id(l->id);
		free(l);
		return rc;
	}
	l->base.dev = dev;
	l->base.evch = c;
	*out = &l->base;
	return 0;
}

int rr__v_listener_close(struct rr_listener *ls)
{
	struct v_listener *l = (struct v_listener *)ls;
	int rc = rr__v_cm_rc(rdma_destroy_id(l->id));

	if (rc)
		return rc;
	free(l);
	return 0;
}

int rr__v_listener_addr(struct rr_listener *ls, struct sockaddr_storage *out)
{
	struct v_listener *l = (struct v_listener *)ls;
	const struct sockaddr *sa = rdma_get_local_addr(l->id);

	memset(out, 0, sizeof(*out));
	memcpy(out, sa,
	       sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in));
	return 0;
}

/* ------------------------------------------------------------ connections */

int rr__v_connect(struct rr_qp *q, const struct sockaddr *addr,
		  socklen_t addrlen, const void *pdata, size_t len)
{
	struct v_qp *qp = to_v_qp(q);
	int rc;

	(void)addrlen;
	pthread_mutex_lock(&qp->mu);
	if (atomic_load(&qp->state) != RR_QPS_INIT || qp->id) {
		pthread_mutex_unlock(&qp->mu);
		return -EINVAL;
	}
	if (len)
		memcpy(qp->pdata, pdata, len);
	qp->pdata_len = (uint32_t)len;
	rc = rr__v_cm_rc(
		rdma_create_id(qp->evch->ch, &qp->id, &qp->kind, RDMA_PS_TCP));
	if (!rc) {
		atomic_store(&qp->state, RR_QPS_CONNECTING);
		rc = rr__v_cm_rc(rdma_resolve_addr(
			qp->id, NULL, (struct sockaddr *)addr, V_RESOLVE_MS));
	}
	if (rc) {
		if (qp->id)
			rdma_destroy_id(qp->id);
		qp->id = NULL;
		atomic_store(&qp->state, RR_QPS_INIT);
	}
	pthread_mutex_unlock(&qp->mu);
	return rc;
}

static int accept_steps(struct v_qp *qp, struct v_req *req, const void *pdata,
			size_t len)
{
	const struct rr_qp_attr *a = &qp->base.attr;
	int ird = a->ird < req->peer_ord ? a->ird : req->peer_ord;
	int ord = a->ord < req->peer_ird ? a->ord : req->peer_ird;
	struct rdma_conn_param p =
		conn_param(qp, pdata, (uint32_t)len, ird, ord);
	int rc = 0;

	if (req->id->channel != qp->evch->ch)
		rc = rr__v_cm_rc(rdma_migrate_id(req->id, qp->evch->ch));
	if (rc)
		return rc;
	qp->id = req->id;
	req->id->context = &qp->kind;
	rc = rr__v_qp_modify_cm(qp, IBV_QPS_INIT, 0);
	if (!rc)
		rc = rr__v_qp_modify_cm(qp, IBV_QPS_RTR, ird);
	if (!rc)
		rc = rr__v_qp_modify_cm(qp, IBV_QPS_RTS, ord);
	if (!rc) {
		atomic_store(&qp->state, RR_QPS_CONNECTING);
		rc = rr__v_cm_rc(rdma_accept(req->id, &p));
	}
	return rc;
}

int rr__v_accept(struct rr_conn_req *r, struct rr_qp *q, const void *pdata,
		 size_t len)
{
	struct v_req *req = (struct v_req *)r;
	struct v_qp *qp = to_v_qp(q);
	int rc;

	pthread_mutex_lock(&qp->mu);
	if (atomic_load(&qp->state) != RR_QPS_INIT || qp->id) {
		pthread_mutex_unlock(&qp->mu);
		return -EINVAL;
	}
	rc = accept_steps(qp, req, pdata, len);
	if (rc) {
		rdma_reject(req->id, NULL, 0);
		rdma_destroy_id(req->id);
		qp->id = NULL;
		atomic_store(&qp->state, RR_QPS_ERROR);
		rr__v_qp_to_error(qp);
	}
	pthread_mutex_unlock(&qp->mu);
	free(req);
	return rc;
}

int rr__v_reject(struct rr_conn_req *r, const void *pdata, size_t len)
{
	struct v_req *req = (struct v_req *)r;
	int rc;

	/* checked before anything is consumed, as for connect and accept */
	if (len > r->dev->attr.max_private_data)
		return -EINVAL;
	rc = rr__v_cm_rc(rdma_reject(req->id, pdata, (uint8_t)len));

	rdma_destroy_id(req->id);
	free(req);
	return rc;
}

/*
 * rdma_cm reports our own disconnect only when the peer's application
 * answers the DREQ (or it times out, seconds later); the QP is flushed
 * already, so the event is ours to give at once.
 */
int rr__v_disconnect(struct rr_qp *q)
{
	struct v_qp *qp = to_v_qp(q);
	int prev;

	V_TRACE("qp %u disconnect\n", getpid(), qp->qp->qp_num);
	pthread_mutex_lock(&qp->mu);
	prev = atomic_exchange(&qp->state, RR_QPS_ERROR);
	rr__v_qp_to_error(qp);
	if (qp->id && (prev == RR_QPS_RTS || prev == RR_QPS_CONNECTING))
		rdma_disconnect(qp->id);
	pthread_mutex_unlock(&qp->mu);
	down(qp, RR_CM_DISCONNECTED, 0, false);
	return 0;
}
