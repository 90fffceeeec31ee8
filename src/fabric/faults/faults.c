/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The "faults" provider: device, protection domain, memory, event channel
 * and connection-manager objects, which only wrap and translate (see f.h),
 * the PRNG, and the ops table.
 */
#include "fabric/faults/f.h"
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ PRNG */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * One stream per object and purpose, so that a QP's decisions depend only
 * on the seed, the object's creation order and its own traffic, not on
 * what other QPs or threads do meanwhile.
 */
uint64_t rr__f_stream(uint64_t seed, uint64_t salt, uint64_t index)
{
	uint64_t x = seed ^ (salt * 0xd1b54a32d192ed03ull);
	uint64_t s;

	for (uint64_t i = 0; i <= index % 4; i++)
		splitmix64(&x);
	x ^= index * 0xa0761d6478bd642full;
	s = splitmix64(&x);
	return s ? s : 0x2545f4914f6cdd1dull; /* xorshift must not be 0 */
}

uint64_t rr__f_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Rates 0 and RR_PPM_ALWAYS draw nothing: the stream only moves for dice. */
bool rr__f_roll(uint64_t *state, uint32_t ppm)
{
	if (ppm == 0)
		return false;
	if (ppm >= RR_PPM_ALWAYS)
		return true;
	return rr__f_rand(state) % RR_PPM_ALWAYS < ppm;
}

/* --------------------------------------------------------------- device */

static bool plan_active(const struct rr_fault_plan *p)
{
	return p && (p->delay_send_cqe_ppm || p->reorder_ppm ||
		     p->fail_reg_ppm || p->fail_inv_ppm || p->flush_wr_ppm ||
		     p->guard_sends || p->hold_invs || p->hold_regs);
}

static int f_device_open(const struct rr_device_opts *opts,
			 struct rr_device **out)
{
	struct rr_device_opts in = {0};
	const char *name = NULL; /* the fabric's default */
	struct f_device *dev;
	int rc;

	if (opts) {
		in.flags = opts->flags;
		if (opts->inner)
			name = opts->inner;
	}
	dev = rr_calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	rc = rr_device_open(name, &in, &dev->inner);
	if (rc) {
		free(dev);
		return rc;
	}
	if (opts && opts->faults)
		dev->plan = *opts->faults;
	dev->active = plan_active(opts ? opts->faults : NULL);
	pthread_mutex_init(&dev->mu, NULL);
	pthread_mutex_init(&dev->qps_mu, NULL);
	dev->base.ops = &rr__faults_ops;
	dev->base.attr = dev->inner->attr;
	memset(dev->base.attr.provider, 0, sizeof(dev->base.attr.provider));
	strncpy(dev->base.attr.provider, "faults",
		sizeof(dev->base.attr.provider) - 1);
	*out = &dev->base;
	return 0;
}

static int f_device_close(struct rr_device *d)
{
	struct f_device *dev = to_f_dev(d);
	int rc = rr_device_close(dev->inner);

	if (rc)
		return rc;
	/* Requests never answered nor closed with their listener. */
	while (dev->reqs) {
		struct f_req *r = dev->reqs;

		dev->reqs = r->next;
		free(r);
	}
	pthread_mutex_destroy(&dev->mu);
	pthread_mutex_destroy(&dev->qps_mu);
	free(dev);
	return 0;
}

static int f_device_counters(struct rr_device *d, struct rr_fabric_counters *o)
{
	return rr_device_counters(to_f_dev(d)->inner, o);
}

int rr_faults_stats(struct rr_device *d, struct rr_fault_stats *out)
{
	struct f_device *dev = to_f_dev(d);

	if (!d || !out || d->ops != &rr__faults_ops)
		return -EINVAL;
	out->send_cqes_delayed = __atomic_load_n(&dev->stats.send_cqes_delayed,
						 __ATOMIC_RELAXED);
	out->batches_reordered = __atomic_load_n(&dev->stats.batches_reordered,
						 __ATOMIC_RELAXED);
	out->regs_failed =
		__atomic_load_n(&dev->stats.regs_failed, __ATOMIC_RELAXED);
	out->invs_failed =
		__atomic_load_n(&dev->stats.invs_failed, __ATOMIC_RELAXED);
	out->wrs_flushed =
		__atomic_load_n(&dev->stats.wrs_flushed, __ATOMIC_RELAXED);
	out->send_bufs_modified = __atomic_load_n(
		&dev->stats.send_bufs_modified, __ATOMIC_RELAXED);
	out->cqes_duplicated =
		__atomic_load_n(&dev->stats.cqes_duplicated, __ATOMIC_RELAXED);
	out->invs_held =
		__atomic_load_n(&dev->stats.invs_held, __ATOMIC_RELAXED);
	out->regs_held =
		__atomic_load_n(&dev->stats.regs_held, __ATOMIC_RELAXED);
	out->wrs_released =
		__atomic_load_n(&dev->stats.wrs_released, __ATOMIC_RELAXED);
	out->wrs_parked_flushed = __atomic_load_n(
		&dev->stats.wrs_parked_flushed, __ATOMIC_RELAXED);
	out->sq_overruns =
		__atomic_load_n(&dev->stats.sq_overruns, __ATOMIC_RELAXED);
	out->cqes_injected =
		__atomic_load_n(&dev->stats.cqes_injected, __ATOMIC_RELAXED);
	return 0;
}

/* ------------------------------------------------------- PD and memory */

static int f_pd_alloc(struct rr_device *d, struct rr_pd **out)
{
	struct f_pd *pd = rr_calloc(1, sizeof(*pd));
	int rc;

	if (!pd)
		return -ENOMEM;
	rc = rr_pd_alloc(to_f_dev(d)->inner, &pd->inner);
	if (rc) {
		free(pd);
		return rc;
	}
	pd->base.dev = d;
	*out = &pd->base;
	return 0;
}

static int f_pd_free(struct rr_pd *p)
{
	int rc = rr_pd_free(to_f_pd(p)->inner);

	if (!rc)
		free(p);
	return rc;
}

static int f_mr_reg(struct rr_pd *pd, void *addr, size_t len, unsigned access,
		    struct rr_mr **out)
{
	struct f_mr *mr = rr_calloc(1, sizeof(*mr));
	struct rr_mr *in;
	int rc;

	if (!mr)
		return -ENOMEM;
	rc = rr_mr_reg(to_f_pd(pd)->inner, addr, len, access, &mr->inner);
	if (rc) {
		free(mr);
		return rc;
	}
	/* The keys are the inner ones: SGEs and rkeys pass through as is. */
	in = mr->inner;
	mr->base = (struct rr_mr){.pd = pd,
				  .addr = in->addr,
				  .length = in->length,
				  .access = in->access,
				  .lkey = in->lkey,
				  .rkey = in->rkey};
	*out = &mr->base;
	return 0;
}

static int f_mr_dereg(struct rr_mr *m)
{
	int rc = rr_mr_dereg(to_f_mr(m)->inner);

	if (!rc)
		free(m);
	return rc;
}

static int f_mw_alloc(struct rr_pd *pd, struct rr_mw **out)
{
	struct f_mw *mw = rr_calloc(1, sizeof(*mw));
	int rc;

	if (!mw)
		return -ENOMEM;
	rc = rr_mw_alloc(to_f_pd(pd)->inner, &mw->inner);
	if (rc) {
		free(mw);
		return rc;
	}
	mw->base.pd = pd;
	mw->base.rkey = rr_mw_rkey(mw->inner);
	*out = &mw->base;
	return 0;
}

static int f_mw_free(struct rr_mw *m)
{
	int rc = rr_mw_free(to_f_mw(m)->inner);

	if (!rc)
		free(m);
	return rc;
}

/* The inner window is fenced; the wrapper shows the key it has now. */
static int f_mw_fence(struct rr_mw *m)
{
	struct f_mw *mw = to_f_mw(m);
	int rc = rr_mw_fence(mw->inner);

	__atomic_store_n(&mw->base.rkey, rr_mw_rkey(mw->inner),
			 __ATOMIC_RELEASE);
	return rc;
}

static uint32_t f_mw_rkey_next(const struct rr_mw *m)
{
	return rr_mw_rkey_next(((const struct f_mw *)m)->inner);
}

/* Registration per call passes through; the wrapper shows the new key. */
static int f_mw_bind(struct rr_mw *m, struct rr_mr *mr, uint64_t addr,
		     uint64_t length, unsigned access)
{
	struct f_mw *mw = to_f_mw(m);
	int rc =
		rr_mw_bind(mw->inner, to_f_mr(mr)->inner, addr, length, access);

	__atomic_store_n(&mw->base.rkey, rr_mw_rkey(mw->inner),
			 __ATOMIC_RELEASE);
	return rc;
}

/* -------------------------------------------------------- event channel */

static int f_evch_create(struct rr_device *d, struct rr_evch **out)
{
	struct f_evch *ch = rr_calloc(1, sizeof(*ch));
	int rc;

	if (!ch)
		return -ENOMEM;
	rc = rr_evch_create(to_f_dev(d)->inner, &ch->inner);
	if (rc) {
		free(ch);
		return rc;
	}
	ch->base.dev = d;
	*out = &ch->base;
	return 0;
}

static int f_evch_destroy(struct rr_evch *c)
{
	int rc = rr_evch_destroy(to_f_evch(c)->inner);

	if (!rc)
		free(c);
	return rc;
}

static int f_evch_fd(struct rr_evch *c)
{
	return rr_evch_fd(to_f_evch(c)->inner);
}

/* Caller holds dev->mu. */
static struct f_listener *find_listener(struct f_device *dev,
					const struct rr_listener *inner)
{
	for (struct f_listener *l = dev->listeners; l; l = l->next)
		if (l->inner == inner)
			return l;
	return NULL;
}

/* A connection request is wrapped so rr_conn_req_accept/rr_conn_req_reject come
 * to us. */
static int wrap_request(struct f_device *dev, struct rr_cm_event *ev)
{
	struct f_req *r = rr_calloc(1, sizeof(*r));

	pthread_mutex_lock(&dev->mu);
	if (r) {
		r->base.dev = &dev->base;
		r->inner = ev->req;
		r->l = find_listener(dev, ev->listener);
		r->next = dev->reqs;
		dev->reqs = r;
		ev->listener = r->l ? &r->l->base : NULL;
		ev->req = &r->base;
	}
	pthread_mutex_unlock(&dev->mu);
	if (r)
		return 0;
	rr_conn_req_reject(ev->req, NULL, 0);
	return -ENOMEM;
}

static int f_evch_get(struct rr_evch *c, struct rr_cm_event *ev, int timeout)
{
	struct f_device *dev = to_f_dev(c->dev);
	int rc = rr_evch_get(to_f_evch(c)->inner, ev, timeout);

	if (rc)
		return rc;
	if (ev->qp)
		ev->qp = rr_qp_context(ev->qp);
	if (ev->req)
		return wrap_request(dev, ev);
	if (ev->listener) {
		struct f_listener *l;

		pthread_mutex_lock(&dev->mu);
		l = find_listener(dev, ev->listener);
		pthread_mutex_unlock(&dev->mu);
		ev->listener = l ? &l->base : NULL;
	}
	return 0;
}

/* --------------------------------------------------------------- CM */

static int f_listen(struct rr_device *d, struct rr_evch *ch,
		    const struct sockaddr *addr, socklen_t addrlen, int backlog,
		    struct rr_listener **out)
{
	struct f_device *dev = to_f_dev(d);
	struct f_listener *l = rr_calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return -ENOMEM;
	rc = rr_listener_create(dev->inner, to_f_evch(ch)->inner, addr, addrlen,
				backlog, &l->inner);
	if (rc) {
		free(l);
		return rc;
	}
	l->base = (struct rr_listener){.dev = d, .evch = ch};
	pthread_mutex_lock(&dev->mu);
	l->next = dev->listeners;
	dev->listeners = l;
	pthread_mutex_unlock(&dev->mu);
	*out = &l->base;
	return 0;
}

/* Unanswered requests die with their listener, as the inner ones do. */
static int f_listener_close(struct rr_listener *lb)
{
	struct f_device *dev = to_f_dev(lb->dev);
	struct f_listener *l = to_f_listener(lb), **lp;
	struct f_req **pp, *r;
	int rc = rr_listener_close(l->inner);

	if (rc)
		return rc;
	pthread_mutex_lock(&dev->mu);
	for (lp = &dev->listeners; *lp; lp = &(*lp)->next) {
		if (*lp == l) {
			*lp = l->next;
			break;
		}
	}
	for (pp = &dev->reqs; (r = *pp);) {
		if (r->l == l) {
			*pp = r->next;
			free(r);
		} else {
			pp = &r->next;
		}
	}
	pthread_mutex_unlock(&dev->mu);
	free(l);
	return 0;
}

static int f_listener_addr(struct rr_listener *l, struct sockaddr_storage *out)
{
	return rr_listener_addr(to_f_listener(l)->inner, out);
}

static void req_free(struct f_device *dev, struct f_req *r)
{
	pthread_mutex_lock(&dev->mu);
	for (struct f_req **pp = &dev->reqs; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	pthread_mutex_unlock(&dev->mu);
	free(r);
}

/*
 * -EINVAL means the request was refused before being consumed (bad private
 * data, a QP not in INIT), so it may be answered again: keep the wrapper.
 */
static void req_answered(struct rr_conn_req *req, int rc)
{
	if (rc != -EINVAL)
		req_free(to_f_dev(req->dev), (struct f_req *)req);
}

static int f_accept(struct rr_conn_req *req, struct rr_qp *qp,
		    const void *pdata, size_t len)
{
	struct f_req *r = (struct f_req *)req;
	int rc;

	if (req->dev != qp->pd->dev)
		return -EINVAL;
	rc = rr_conn_req_accept(r->inner, to_f_qp(qp)->inner, pdata, len);
	req_answered(req, rc);
	return rc;
}

static int f_reject(struct rr_conn_req *req, const void *pdata, size_t len)
{
	int rc = rr_conn_req_reject(((struct f_req *)req)->inner, pdata, len);

	req_answered(req, rc);
	return rc;
}

const struct rr_provider_ops rr__faults_ops = {
	.name = "faults",
	.device_open = f_device_open,
	.device_close = f_device_close,
	.device_counters = f_device_counters,
	.pd_alloc = f_pd_alloc,
	.pd_free = f_pd_free,
	.mr_reg = f_mr_reg,
	.mr_dereg = f_mr_dereg,
	.mw_alloc = f_mw_alloc,
	.mw_free = f_mw_free,
	.mw_fence = f_mw_fence,
	.mw_rkey_next = f_mw_rkey_next,
	.mw_bind = f_mw_bind,
	.cq_create = rr__f_cq_create,
	.cq_destroy = rr__f_cq_destroy,
	.cq_poll = rr__f_cq_poll,
	.cq_fd = rr__f_cq_fd,
	.cq_wait = rr__f_cq_wait,
	.evch_create = f_evch_create,
	.evch_destroy = f_evch_destroy,
	.evch_fd = f_evch_fd,
	.evch_get = f_evch_get,
	.qp_create = rr__f_qp_create,
	.qp_destroy = rr__f_qp_destroy,
	.qp_reset = rr__f_qp_reset,
	.qp_state = rr__f_qp_state,
	.post_send = rr__f_post_send,
	.post_recv = rr__f_post_recv,
	.listen = f_listen,
	.listener_close = f_listener_close,
	.listener_addr = f_listener_addr,
	.connect = rr__f_connect,
	.accept = f_accept,
	.reject = f_reject,
	.disconnect = rr__f_disconnect,
	.drain = rr__f_drain,
};
