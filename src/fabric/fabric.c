/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The public fabric API: argument checks that do not depend on the provider,
 * then one indirect call. Providers are found by name in a static table.
 */
#include "fabric/provider.h"
#include "fabric/trace.h"

#include <errno.h>
#include <string.h>

#ifdef RR_HAVE_SDT
static _Thread_local uint64_t wr_hits; /* trace.h: "hit" */
#define RR_WR_HIT() (++wr_hits)
#else
#define RR_WR_HIT() 0
#endif

static const struct rr_provider_ops *const providers[] = {
	&rr__iwarp_ops,
	&rr__shm_ops,
	&rr__faults_ops,
#ifdef RR_HAVE_VERBS
	&rr__verbs_ops,
#endif
};

const char *rr_fabric_default_provider(void)
{
	return "iwarp";
}

int rr_device_open(const char *provider, const struct rr_device_opts *opts,
		   struct rr_device **out)
{
	if (!out)
		return -EINVAL;
	if (!provider)
		provider = rr_fabric_default_provider();
	for (size_t i = 0; i < sizeof(providers) / sizeof(providers[0]); i++)
		if (strcmp(providers[i]->name, provider) == 0)
			return providers[i]->device_open(opts, out);
	return -ENODEV;
}

int rr_device_close(struct rr_device *dev)
{
	if (!dev)
		return -EINVAL;
	RR_TRACE1(device_close, dev);
	return dev->ops->device_close(dev);
}

int rr_device_query(struct rr_device *dev, struct rr_device_attr *attr)
{
	if (!dev || !attr)
		return -EINVAL;
	*attr = dev->attr;
	return 0;
}

int rr_device_counters(struct rr_device *dev, struct rr_fabric_counters *out)
{
	if (!dev || !out)
		return -EINVAL;
	return dev->ops->device_counters(dev, out);
}

int rr_pd_alloc(struct rr_device *dev, struct rr_pd **out)
{
	if (!dev || !out)
		return -EINVAL;
	return dev->ops->pd_alloc(dev, out);
}

int rr_pd_free(struct rr_pd *pd)
{
	return pd ? pd->dev->ops->pd_free(pd) : -EINVAL;
}

int rr_mr_reg(struct rr_pd *pd, void *addr, size_t len, unsigned access,
	      struct rr_mr **out)
{
	const unsigned all = RR_ACCESS_LOCAL_WRITE | RR_ACCESS_REMOTE_READ |
			     RR_ACCESS_REMOTE_WRITE;

	if (!pd || !out || (!addr && len) || (access & ~all))
		return -EINVAL;
	if (len > pd->dev->attr.max_mr_size)
		return -EINVAL;
	return pd->dev->ops->mr_reg(pd, addr, len, access, out);
}

int rr_mr_dereg(struct rr_mr *mr)
{
	return mr ? mr->pd->dev->ops->mr_dereg(mr) : -EINVAL;
}

uint32_t rr_mr_lkey(const struct rr_mr *mr)
{
	return mr->lkey;
}

uint32_t rr_mr_rkey(const struct rr_mr *mr)
{
	return mr->rkey;
}

void *rr_mr_addr(const struct rr_mr *mr)
{
	return mr->addr;
}

size_t rr_mr_length(const struct rr_mr *mr)
{
	return mr->length;
}

int rr_mw_alloc(struct rr_pd *pd, struct rr_mw **out)
{
	if (!pd || !out)
		return -EINVAL;
	return pd->dev->ops->mw_alloc(pd, out);
}

int rr_mw_free(struct rr_mw *mw)
{
	return mw ? mw->pd->dev->ops->mw_free(mw) : -EINVAL;
}

int rr_mw_fence(struct rr_mw *mw)
{
	return mw ? mw->pd->dev->ops->mw_fence(mw) : -EINVAL;
}

int rr_mw_bind(struct rr_mw *mw, struct rr_mr *mr, uint64_t addr,
	       uint64_t length, unsigned access)
{
	if (!mw || !mr || mr->pd != mw->pd ||
	    (access & ~(RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE)))
		return -EINVAL;
	if (addr < (uintptr_t)mr->addr || length > mr->length ||
	    addr - (uintptr_t)mr->addr > mr->length - length)
		return -EINVAL;
	if (!mw->pd->dev->ops->mw_bind)
		return -EOPNOTSUPP;
	return mw->pd->dev->ops->mw_bind(mw, mr, addr, length, access);
}

uint32_t rr_mw_rkey(const struct rr_mw *mw)
{
	return __atomic_load_n(&mw->rkey, __ATOMIC_ACQUIRE);
}

uint32_t rr_mw_rkey_next(const struct rr_mw *mw)
{
	return mw->pd->dev->ops->mw_rkey_next(mw);
}

int rr_cq_create(struct rr_device *dev, uint32_t depth, struct rr_cq **out)
{
	if (!dev || !out || depth == 0 || depth > dev->attr.max_cqe)
		return -EINVAL;
	return dev->ops->cq_create(dev, depth, out);
}

int rr_cq_destroy(struct rr_cq *cq)
{
	return cq ? cq->dev->ops->cq_destroy(cq) : -EINVAL;
}

int rr_cq_poll(struct rr_cq *cq, struct rr_wc *wc, int n)
{
	int got;

	if (!cq || (!wc && n) || n < 0)
		return -EINVAL;
	got = cq->dev->ops->cq_poll(cq, wc, n);
	for (int i = 0; i < got; i++)
		RR_TRACE6(completion, wc[i].qp, wc[i].wr_id, (int)wc[i].status,
			  (int)wc[i].opcode, wc[i].byte_len, RR_WR_HIT());
	return got;
}

int rr_cq_fd(struct rr_cq *cq)
{
	return cq ? cq->dev->ops->cq_fd(cq) : -EINVAL;
}

int rr_cq_wait(struct rr_cq *cq, int timeout_ms)
{
	return cq ? cq->dev->ops->cq_wait(cq, timeout_ms, -1) : -EINVAL;
}

int rr_cq_wait_fd(struct rr_cq *cq, int timeout_ms, int fd)
{
	return cq ? cq->dev->ops->cq_wait(cq, timeout_ms, fd) : -EINVAL;
}

int rr_evch_create(struct rr_device *dev, struct rr_evch **out)
{
	if (!dev || !out)
		return -EINVAL;
	return dev->ops->evch_create(dev, out);
}

int rr_evch_destroy(struct rr_evch *ch)
{
	return ch ? ch->dev->ops->evch_destroy(ch) : -EINVAL;
}

int rr_evch_fd(struct rr_evch *ch)
{
	return ch ? ch->dev->ops->evch_fd(ch) : -EINVAL;
}

int rr_evch_get(struct rr_evch *ch, struct rr_cm_event *ev, int timeout_ms)
{
	if (!ch || !ev)
		return -EINVAL;
	return ch->dev->ops->evch_get(ch, ev, timeout_ms);
}

static int qp_attr_check(struct rr_pd *pd, const struct rr_qp_attr *a)
{
	const struct rr_device_attr *d = &pd->dev->attr;

	if (!a->send_cq || !a->recv_cq || !a->evch)
		return -EINVAL;
	if (a->send_cq->dev != pd->dev || a->recv_cq->dev != pd->dev ||
	    a->evch->dev != pd->dev)
		return -EINVAL;
	if (!a->sq_depth || !a->rq_depth || a->sq_depth > d->max_qp_wr ||
	    a->rq_depth > d->max_qp_wr)
		return -EINVAL;
	if (!a->max_send_sge || !a->max_recv_sge ||
	    a->max_send_sge > d->max_sge || a->max_recv_sge > d->max_sge)
		return -EINVAL;
	if (a->ird > d->max_ird || a->ord > d->max_ord ||
	    (a->flags & ~RR_QP_CRC))
		return -EINVAL;
	return 0;
}

int rr_qp_create(struct rr_pd *pd, const struct rr_qp_attr *attr,
		 struct rr_qp **out)
{
	int rc;

	if (!pd || !attr || !out)
		return -EINVAL;
	rc = qp_attr_check(pd, attr);
	if (rc)
		return rc;
	return pd->dev->ops->qp_create(pd, attr, out);
}

int rr_qp_destroy(struct rr_qp *qp)
{
	if (!qp)
		return -EINVAL;
	RR_TRACE1(qp_destroy, qp);
	return qp->pd->dev->ops->qp_destroy(qp);
}

int rr_qp_reset(struct rr_qp *qp)
{
	if (!qp)
		return -EINVAL;
	RR_TRACE1(qp_reset, qp);
	return qp->pd->dev->ops->qp_reset(qp);
}

enum rr_qp_state rr_qp_state(const struct rr_qp *qp)
{
	return qp->pd->dev->ops->qp_state(qp);
}

void *rr_qp_context(const struct rr_qp *qp)
{
	return qp->attr.context;
}

int rr_qp_post_send(struct rr_qp *qp, struct rr_send_wr *wr,
		    struct rr_send_wr **bad)
{
	struct rr_send_wr *first_bad = NULL;
	int rc;

	if (!qp || !wr) {
		if (bad)
			*bad = wr;
		return -EINVAL;
	}
	/* Before the post: its completion may be polled before it returns. */
	for (const struct rr_send_wr *w = wr; w; w = w->next)
		RR_TRACE5(post_send, qp, w->wr_id, (int)w->opcode, w->flags,
			  RR_WR_HIT());
	rc = qp->pd->dev->ops->post_send(qp, wr, &first_bad);
	for (const struct rr_send_wr *w = rc ? first_bad : NULL; w; w = w->next)
		RR_TRACE4(post_error, qp, w->wr_id, rc, RR_WR_HIT());
	if (bad)
		*bad = first_bad;
	return rc;
}

int rr_qp_post_recv(struct rr_qp *qp, struct rr_recv_wr *wr,
		    struct rr_recv_wr **bad)
{
	struct rr_recv_wr *first_bad = NULL;
	int rc;

	if (!qp || !wr) {
		if (bad)
			*bad = wr;
		return -EINVAL;
	}
	for (const struct rr_recv_wr *w = wr; w; w = w->next)
		RR_TRACE3(post_recv, qp, w->wr_id, RR_WR_HIT());
	rc = qp->pd->dev->ops->post_recv(qp, wr, &first_bad);
	for (const struct rr_recv_wr *w = rc ? first_bad : NULL; w; w = w->next)
		RR_TRACE4(post_error, qp, w->wr_id, rc, RR_WR_HIT());
	if (bad)
		*bad = first_bad;
	return rc;
}

int rr_listener_create(struct rr_device *dev, struct rr_evch *ch,
		       const struct sockaddr *addr, socklen_t addrlen,
		       int backlog, struct rr_listener **out)
{
	if (!dev || !ch || !addr || !out || ch->dev != dev)
		return -EINVAL;
	return dev->ops->listen(dev, ch, addr, addrlen, backlog, out);
}

int rr_listener_close(struct rr_listener *l)
{
	return l ? l->dev->ops->listener_close(l) : -EINVAL;
}

int rr_listener_addr(struct rr_listener *l, struct sockaddr_storage *out)
{
	if (!l || !out)
		return -EINVAL;
	return l->dev->ops->listener_addr(l, out);
}

static int pdata_check(struct rr_device *dev, const void *pdata, size_t len)
{
	if (len && !pdata)
		return -EINVAL;
	return len > dev->attr.max_private_data ? -EINVAL : 0;
}

int rr_qp_connect(struct rr_qp *qp, const struct sockaddr *addr,
		  socklen_t addrlen, const void *pdata, size_t len)
{
	int rc;

	if (!qp || !addr)
		return -EINVAL;
	rc = pdata_check(qp->pd->dev, pdata, len);
	if (rc)
		return rc;
	return qp->pd->dev->ops->connect(qp, addr, addrlen, pdata, len);
}

int rr_conn_req_accept(struct rr_conn_req *req, struct rr_qp *qp,
		       const void *pdata, size_t len)
{
	int rc;

	if (!req || !qp)
		return -EINVAL;
	rc = pdata_check(qp->pd->dev, pdata, len);
	if (rc)
		return rc;
	return qp->pd->dev->ops->accept(req, qp, pdata, len);
}

int rr_conn_req_reject(struct rr_conn_req *req, const void *pdata, size_t len)
{
	if (!req || (len && !pdata))
		return -EINVAL;
	return req->dev->ops->reject(req, pdata, len);
}

int rr_qp_disconnect(struct rr_qp *qp)
{
	return qp ? qp->pd->dev->ops->disconnect(qp) : -EINVAL;
}

int rr_qp_drain(struct rr_qp *qp, uint64_t sq_wr_id, uint64_t rq_wr_id)
{
	int rc;

	if (!qp)
		return -EINVAL;
	RR_TRACE4(post_drain, qp, sq_wr_id, rq_wr_id, RR_WR_HIT());
	rc = qp->pd->dev->ops->drain(qp, sq_wr_id, rq_wr_id);
	if (rc) {
		RR_TRACE4(post_error, qp, sq_wr_id, rc, RR_WR_HIT());
		RR_TRACE4(post_error, qp, rq_wr_id, rc, RR_WR_HIT());
	}
	return rc;
}

const char *rr_wc_status_str(enum rr_wc_status s)
{
	static const char *const names[] = {
		[RR_WC_SUCCESS] = "success",
		[RR_WC_LOC_LEN_ERR] = "local length error",
		[RR_WC_LOC_PROT_ERR] = "local protection error",
		[RR_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[RR_WC_WR_FLUSH_ERR] = "flushed",
		[RR_WC_MW_BIND_ERR] = "memory window bind error",
		[RR_WC_REM_ACCESS_ERR] = "remote access error",
		[RR_WC_REM_OP_ERR] = "remote operation error",
		[RR_WC_REM_INV_REQ_ERR] = "remote invalid request",
		[RR_WC_GENERAL_ERR] = "general error",
	};

	if ((unsigned)s >= sizeof(names) / sizeof(names[0]) || !names[s])
		return "unknown";
	return names[s];
}

const char *rr_cm_event_str(enum rr_cm_event_type t)
{
	static const char *const names[] = {
		[RR_CM_CONNECT_REQUEST] = "connect request",
		[RR_CM_ESTABLISHED] = "established",
		[RR_CM_REJECTED] = "rejected",
		[RR_CM_UNREACHABLE] = "unreachable",
		[RR_CM_DISCONNECTED] = "disconnected",
		[RR_CM_QP_ERROR] = "qp error",
	};

	if ((unsigned)t >= sizeof(names) / sizeof(names[0]) || !names[t])
		return "unknown";
	return names[t];
}
