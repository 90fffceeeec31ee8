/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Device, protection domains, memory regions and windows.
 *
 * RR_VERBS_DEVICE picks a device by name, else the first is used.
 * Limits come from the device.
 */
#include "fabric/verbs/v.h"
#include "base/alloc.h"
#include "base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* rdma_cm's header takes 36 of an IB CM REQ's 92 private data bytes */
#define V_IB_CONNECT_PDATA 56
/*
 * iWARP: librdmacm carries the length in a byte (rdma_conn_param), so 256
 * arrives as 0; and siw (Linux 6.1) adds its 4-byte MPA IRD/ORD block to
 * that byte when it sends (siw_send_mpareqrep), so past 251 the peer
 * reads a wrapped length and drops the connection.
 */
#define V_IW_PDATA 251

int rr__v_trace;

static struct ibv_device *pick(struct ibv_device **list, int n)
{
	const char *want = getenv("RR_VERBS_DEVICE");

	for (int i = 0; i < n; i++)
		if (!want || !*want ||
		    strcmp(ibv_get_device_name(list[i]), want) == 0)
			return list[i];
	return NULL;
}

static uint32_t min_u32(uint64_t a, uint64_t b)
{
	uint64_t m = a < b ? a : b;

	return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

static int query(struct v_device *d)
{
	struct ibv_device_attr_ex x;
	struct rr_device_attr *a = &d->base.attr;
	int rc = rr__v_ibv_rc(ibv_query_device_ex(d->ctx, NULL, &x));

	if (rc)
		return rc;
	snprintf(a->provider, sizeof(a->provider), "verbs");
	a->max_qp_wr = (uint32_t)x.orig_attr.max_qp_wr;
	/* a Read's scatter list may be shorter than a Send's */
	a->max_sge = min_u32((uint32_t)x.orig_attr.max_sge,
			     x.orig_attr.max_sge_rd
				     ? (uint32_t)x.orig_attr.max_sge_rd
				     : (uint32_t)x.orig_attr.max_sge);
	a->max_cqe = (uint32_t)x.orig_attr.max_cqe;
	a->max_ird = (uint32_t)x.orig_attr.max_qp_rd_atom;
	/* ibverbs cannot tell a doorbell page from a write(2) doorbell */
	a->post_checks_creds = 1;
	a->max_ord = (uint32_t)x.orig_attr.max_qp_init_rd_atom;
	a->max_private_data =
		d->ctx->device->transport_type == IBV_TRANSPORT_IWARP
			? V_IW_PDATA
			: V_IB_CONNECT_PDATA;
	a->max_mr_size = x.orig_attr.max_mr_size;
	d->has_mw = (x.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		    (x.orig_attr.device_cap_flags &
		     IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
		    x.orig_attr.max_mw > 0;
	/* RR_VERBS_MW=0: registration per call even where windows exist */
	if (getenv("RR_VERBS_MW") && *getenv("RR_VERBS_MW") == '0')
		d->has_mw = false;
	a->mw_bind = d->has_mw ? RR_MW_BIND_WR : RR_MW_BIND_SYNC;
	d->soft_drain = d->ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	d->swi_quirks = d->soft_drain;
	return 0;
}

/*
 * Our own context, not librdmacm's cached ones: those are opened once per
 * process, and the kernel refuses uverbs commands written to a descriptor
 * that a forked child inherited.
 */
static int v_device_open(const struct rr_device_opts *opts,
			 struct rr_device **out)
{
	struct ibv_device **list, *dev;
	struct v_device *d;
	int n = 0, rc;

	if (opts && opts->flags)
		return -EINVAL;
	__atomic_store_n(&rr__v_trace,
			 getenv("RR_VERBS_TRACE") &&
				 *getenv("RR_VERBS_TRACE") == '1',
			 __ATOMIC_RELAXED);
	d = rr_calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	list = ibv_get_device_list(&n);
	rc = rr__v_ptr_rc(list);
	if (!rc) {
		dev = pick(list, n);
		d->ctx = dev ? ibv_open_device(dev) : NULL;
		rc = dev ? rr__v_ptr_rc(d->ctx) : -ENODEV;
		ibv_free_device_list(list);
	}
	if (!rc && (rc = query(d)))
		ibv_close_device(d->ctx);
	if (rc) {
		free(d);
		return rc;
	}
	d->base.ops = &rr__verbs_ops;
	*out = &d->base;
	return 0;
}

static int v_device_close(struct rr_device *dev)
{
	struct v_device *d = to_v_dev(dev);
	int rc = rr__v_ibv_rc(ibv_close_device(d->ctx));

	if (rc)
		return rc;
	free(d);
	return 0;
}

static int v_device_counters(struct rr_device *dev,
			     struct rr_fabric_counters *out)
{
	struct v_device *d = to_v_dev(dev);
	uint64_t *src = (uint64_t *)&d->counters, *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	return 0;
}

static int v_pd_alloc(struct rr_device *dev, struct rr_pd **out)
{
	struct v_pd *p = rr_calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->pd = ibv_alloc_pd(to_v_dev(dev)->ctx);
	rc = rr__v_ptr_rc(p->pd);
	if (rc) {
		free(p);
		return rc;
	}
	p->base.dev = dev;
	*out = &p->base;
	return 0;
}

static int v_pd_free(struct rr_pd *pd)
{
	struct v_pd *p = to_v_pd(pd);
	int rc = rr__v_ibv_rc(ibv_dealloc_pd(p->pd));

	if (rc)
		return rc;
	free(p);
	return 0;
}

/*
 * InfiniBand wants local write wherever remote write is granted, and a
 * region must allow binding for a window to be bound to it.
 */
static int mr_flags(const struct v_device *d, unsigned access)
{
	int f = 0;

	if (access & (RR_ACCESS_LOCAL_WRITE | RR_ACCESS_REMOTE_WRITE))
		f |= IBV_ACCESS_LOCAL_WRITE;
	if (access & RR_ACCESS_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (access & RR_ACCESS_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (d->has_mw)
		f |= IBV_ACCESS_MW_BIND;
	return f;
}

/*
 * siw and rxe charge pinned pages to RLIMIT_MEMLOCK, for root too: the
 * usual 8 MiB runs out early, and ENOMEM alone does not say why.
 */
static int reg_rc(const void *mr, size_t len)
{
	static atomic_bool told;
	struct rlimit rl;
	int rc = rr__v_ptr_rc(mr);

	if (rc == -ENOMEM && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
	    rl.rlim_cur != RLIM_INFINITY && !atomic_exchange(&told, true))
		rr_warn("verbs: registering %zu bytes: ENOMEM; the "
			"locked-memory "
			"limit is %llu KiB (raise it: ulimit -l)",
			len, (unsigned long long)rl.rlim_cur / 1024);
	return rc;
}

static int v_mr_reg(struct rr_pd *pd, void *addr, size_t len, unsigned access,
		    struct rr_mr **out)
{
	struct v_device *d = to_v_dev(pd->dev);
	struct v_mr *m = rr_calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	m->mr = ibv_reg_mr(to_v_pd(pd)->pd, addr, len, mr_flags(d, access));
	rc = reg_rc(m->mr, len);
	if (rc) {
		free(m);
		return rc;
	}
	m->base = (struct rr_mr){
		.pd = pd,
		.addr = addr,
		.length = len,
		.access = access,
		.lkey = m->mr->lkey,
		.rkey = access & (RR_ACCESS_REMOTE_READ |
				  RR_ACCESS_REMOTE_WRITE)
				? m->mr->rkey
				: 0,
	};
	*out = &m->base;
	return 0;
}

static int v_mr_dereg(struct rr_mr *mr)
{
	struct v_mr *m = (struct v_mr *)mr;
	int rc = rr__v_ibv_rc(ibv_dereg_mr(m->mr));

	/* rxe says EINVAL while windows are bound; the contract says EBUSY */
	if (rc == -EINVAL)
		return -EBUSY;
	if (rc)
		return rc;
	free(m);
	return 0;
}

/*
 * Without device windows (siw has none), a window is a memory region of
 * its own, registered by rr_mw_bind over the range a call exposes and
 * deregistered by rr_mw_fence: deregistration is the synchronous
 * invalidation, and each registration gets a fresh key from the device.
 */
static int v_mw_alloc(struct rr_pd *pd, struct rr_mw **out)
{
	struct v_mw *w = rr_calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->base.pd = pd;
	if (to_v_dev(pd->dev)->has_mw) {
		w->mw = ibv_alloc_mw(to_v_pd(pd)->pd, IBV_MW_TYPE_2);
		rc = rr__v_ptr_rc(w->mw);
		if (rc) {
			free(w);
			return rc;
		}
		w->base.rkey = w->mw->rkey;
	}
	*out = &w->base;
	return 0;
}

static int v_mw_bind(struct rr_mw *mw, struct rr_mr *mr, uint64_t addr,
		     uint64_t length, unsigned access)
{
	struct v_mw *w = (struct v_mw *)mw;
	int rc;

	if (to_v_dev(mw->pd->dev)->has_mw)
		return -EOPNOTSUPP; /* a type 2 window binds through a QP */
	if (w->reg)
		return -EBUSY;
	(void)mr; /* rr_mw_bind checked the range lies within it */
	w->reg = ibv_reg_mr(to_v_pd(mw->pd)->pd, (void *)(uintptr_t)addr,
			    length, mr_flags(to_v_dev(mw->pd->dev), access));
	rc = reg_rc(w->reg, length);
	if (rc) {
		w->reg = NULL;
		return rc;
	}
	__atomic_store_n(&w->base.rkey, w->reg->rkey, __ATOMIC_RELEASE);
	V_TRACE("reg per call rkey %#x addr %#llx len %llu\n", getpid(),
		w->reg->rkey, (unsigned long long)addr,
		(unsigned long long)length);
	return 0;
}

/*
 * fill_reg (v_qp.c) binds under the next key. Registration per call has no
 * next key: the device picks one at registration.
 */
static uint32_t v_mw_rkey_next(const struct rr_mw *mw)
{
	uint32_t rkey = __atomic_load_n(&mw->rkey, __ATOMIC_ACQUIRE);

	return to_v_dev(mw->pd->dev)->has_mw ? ibv_inc_rkey(rkey) : rkey;
}

/* Registration per call: the key dies with the region. */
static int unreg(struct v_mw *w)
{
	int rc = w->reg ? rr__v_ibv_rc(ibv_dereg_mr(w->reg)) : 0;

	if (!rc)
		w->reg = NULL;
	return rc;
}

static int v_mw_free(struct rr_mw *mw)
{
	struct v_mw *w = (struct v_mw *)mw;
	struct v_qp *qp = w->bound;
	int rc;

	if (qp) {
		pthread_mutex_lock(&qp->mu);
		rr__v_mw_unlink(w);
		pthread_mutex_unlock(&qp->mu);
	}
	rc = w->mw ? rr__v_ibv_rc(ibv_dealloc_mw(w->mw)) : unreg(w);
	if (rc)
		return rc;
	free(w);
	return 0;
}

/*
 * rr_mw_fence: a type 2 window is invalidated by LOCAL_INV on a QP in RTS,
 * which the connection being fenced no longer has; deallocating the
 * device window kills its key, and a fresh one takes its place (rdma-core
 * allocates it). If that allocation fails the old key is dead all the
 * same and REG fails (fill_reg) until a later fence succeeds.
 */
static int v_mw_fence(struct rr_mw *mw)
{
	struct v_mw *w = (struct v_mw *)mw;
	struct v_qp *qp = w->bound;
	struct ibv_mw *fresh;
	int rc;

	if (!to_v_dev(mw->pd->dev)->has_mw)
		return unreg(w);
	if (qp) {
		pthread_mutex_lock(&qp->mu);
		rr__v_mw_unlink(w);
		pthread_mutex_unlock(&qp->mu);
	}
	if (w->mw) {
		rc = rr__v_ibv_rc(ibv_dealloc_mw(w->mw));
		if (rc)
			return rc; /* still bound: only a teardown fences it */
		w->mw = NULL;
	}
	fresh = ibv_alloc_mw(to_v_pd(mw->pd)->pd, IBV_MW_TYPE_2);
	rc = rr__v_ptr_rc(fresh);
	if (rc)
		return rc;
	w->mw = fresh;
	__atomic_store_n(&w->base.rkey, fresh->rkey, __ATOMIC_RELEASE);
	return 0;
}

const struct rr_provider_ops rr__verbs_ops = {
	.name = "verbs",
	.device_open = v_device_open,
	.device_close = v_device_close,
	.device_counters = v_device_counters,
	.pd_alloc = v_pd_alloc,
	.pd_free = v_pd_free,
	.mr_reg = v_mr_reg,
	.mr_dereg = v_mr_dereg,
	.mw_alloc = v_mw_alloc,
	.mw_free = v_mw_free,
	.mw_fence = v_mw_fence,
	.mw_rkey_next = v_mw_rkey_next,
	.mw_bind = v_mw_bind,
	.cq_create = rr__v_cq_create,
	.cq_destroy = rr__v_cq_destroy,
	.cq_poll = rr__v_cq_poll,
	.cq_fd = rr__v_cq_fd,
	.cq_wait = rr__v_cq_wait,
	.evch_create = rr__v_evch_create,
	.evch_destroy = rr__v_evch_destroy,
	.evch_fd = rr__v_evch_fd,
	.evch_get = rr__v_evch_get,
	.qp_create = rr__v_qp_create,
	.qp_destroy = rr__v_qp_destroy,
	.qp_reset = rr__v_qp_reset,
	.qp_state = rr__v_qp_state,
	.post_send = rr__v_post_send,
	.post_recv = rr__v_post_recv,
	.listen = rr__v_listen,
	.listener_close = rr__v_listener_close,
	.listener_addr = rr__v_listener_addr,
	.connect = rr__v_connect,
	.accept = rr__v_accept,
	.reject = rr__v_reject,
	.disconnect = rr__v_disconnect,
	.drain = rr__v_drain,
};
