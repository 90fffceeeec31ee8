/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * STags (RFC 5040 section 2.1): index << 8 | key. Regions (MRs) and memory
 * windows share one table. Every remote access locks the entry, checks key,
 * PD, rights and bounds, and keeps the lock while bytes move into or out of
 * the memory, so an invalidation (which takes the same lock) cannot complete
 * while a placement or a Read Response still touches the memory.
 */
#include "fabric/iwarp/iw.h"
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rr__iw_stag_table_init(struct iw_stag_table *t)
{
	memset(t, 0, sizeof(*t));
	return 0;
}

void rr__iw_stag_table_fini(struct iw_stag_table *t)
{
	for (uint32_t c = 0; c < t->nchunks; c++) {
		struct iw_stag *ch = atomic_load(&t->chunk[c]);

		for (uint32_t i = 0; i < IW_STAG_CHUNK; i++)
			pthread_mutex_destroy(&ch[i].mu);
		free(ch);
	}
	free(t->free);
}

static int grow(struct iw_stag_table *t)
{
	struct iw_stag *ch;
	uint32_t *fl;
	uint32_t c = t->nchunks;

	if (c == IW_STAG_CHUNKS)
		return -ENOSPC;
	ch = rr_calloc(IW_STAG_CHUNK, sizeof(*ch));
	fl = rr_realloc(t->free, (size_t)(c + 1) * IW_STAG_CHUNK * sizeof(*fl));
	if (!ch || !fl) {
		free(ch);
		if (fl)
			t->free = fl;
		return -ENOMEM;
	}
	t->free = fl;
	for (uint32_t i = 0; i < IW_STAG_CHUNK; i++) {
		pthread_mutex_init(&ch[i].mu, NULL);
		ch[i].key = (uint8_t)(i * 37); /* keys need not start at 0 */
	}
	/* Index 0 is never handed out: STag 0 means "none" on the wire. */
	for (uint32_t i = IW_STAG_CHUNK; i-- > (c == 0 ? 1u : 0u);)
		t->free[t->nfree++] = c * IW_STAG_CHUNK + i;
	atomic_store(&t->chunk[c], ch);
	t->nchunks = c + 1;
	return 0;
}

static struct iw_stag *iw_stag_at(struct iw_device *dev, uint32_t idx)
{
	uint32_t c = idx / IW_STAG_CHUNK;
	struct iw_stag *ch;

	if (c >= IW_STAG_CHUNKS)
		return NULL;
	ch = atomic_load_explicit(&dev->stags.chunk[c], memory_order_acquire);
	return ch ? &ch[idx % IW_STAG_CHUNK] : NULL;
}

static int iw_stag_alloc(struct iw_device *dev, uint32_t *idx)
{
	struct iw_stag_table *t = &dev->stags;
	int rc = 0;

	pthread_mutex_lock(&dev->mu);
	if (!t->nfree)
		rc = grow(t);
	if (!rc)
		*idx = t->free[--t->nfree];
	pthread_mutex_unlock(&dev->mu);
	return rc;
}

static void iw_stag_release(struct iw_device *dev, uint32_t idx)
{
	struct iw_stag *s = iw_stag_at(dev, idx);

	pthread_mutex_lock(&s->mu);
	s->state = IW_STAG_FREE;
	s->key++; /* a stale rkey never matches a reused index */
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&dev->mu);
	dev->stags.free[dev->stags.nfree++] = idx;
	pthread_mutex_unlock(&dev->mu);
}

/*
 * On success the entry is returned LOCKED; the caller unlocks it when the
 * bytes have moved. Errors: -ENOENT (unknown/invalid/key), -EPERM (PD),
 * -EACCES (rights), -ERANGE (bounds).
 */
int rr__iw_stag_acquire(struct iw_device *dev, uint32_t stag, struct rr_pd *pd,
			unsigned access, uint64_t to, uint64_t len,
			struct iw_stag **out)
{
	struct iw_stag *s = iw_stag_at(dev, stag >> 8);
	int rc = 0;

	if (!s)
		return -ENOENT;
	pthread_mutex_lock(&s->mu);
	if (s->state != IW_STAG_VALID || s->key != (uint8_t)stag)
		rc = -ENOENT;
	else if (s->pd != pd)
		rc = -EPERM;
	else if ((s->access & access) != access)
		rc = -EACCES;
	else if (to < s->base || len > s->len || to - s->base > s->len - len)
		rc = -ERANGE;
	if (rc) {
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	*out = s;
	return 0;
}

/* Local SGEs name MRs by lkey. write: the memory will be written by us. */
int rr__iw_sge_check(struct iw_device *dev, struct rr_pd *pd,
		     const struct rr_sge *sge, uint32_t n, bool write,
		     uint64_t *total)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct iw_stag *s;
		int rc;

		if (!sge[i].length)
			continue;
		rc = rr__iw_stag_acquire(dev, sge[i].lkey, pd,
					 write ? RR_ACCESS_LOCAL_WRITE : 0,
					 sge[i].addr, sge[i].length, &s);
		if (rc)
			return rc;
		if (s->kind != IW_STAG_MR)
			rc = -EACCES;
		pthread_mutex_unlock(&s->mu);
		if (rc)
			return rc;
		sum += sge[i].length;
	}
	*total = sum;
	return 0;
}

int rr__iw_mr_reg(struct rr_pd *pd, void *addr, size_t len, unsigned access,
		  struct rr_mr **out)
{
	struct iw_device *dev = to_iw_dev(pd->dev);
	struct iw_mr *mr = rr_calloc(1, sizeof(*mr));
	struct iw_stag *s;
	uint32_t idx;
	int rc;

	if (!mr)
		return -ENOMEM;
	rc = iw_stag_alloc(dev, &idx);
	if (rc) {
		free(mr);
		return rc;
	}
	s = iw_stag_at(dev, idx);
	pthread_mutex_lock(&s->mu);
	s->key++;
	s->state = IW_STAG_VALID;
	s->kind = IW_STAG_MR;
	s->access = access;
	s->pd = pd;
	s->base = (uintptr_t)addr;
	s->len = len;
	s->mr = mr;
	mr->stag = idx << 8 | s->key;
	pthread_mutex_unlock(&s->mu);
	mr->base = (struct rr_mr){.pd = pd,
				  .addr = addr,
				  .length = len,
				  .access = access,
				  .lkey = mr->stag};
	if (access & (RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE))
		mr->base.rkey = mr->stag;
	atomic_fetch_add(&to_iw_pd(pd)->users, 1);
	*out = &mr->base;
	return 0;
}

int rr__iw_mr_dereg(struct rr_mr *m)
{
	struct iw_mr *mr = to_iw_mr(m);

	if (atomic_load(&mr->mw_refs))
		return -EBUSY;
	iw_stag_release(to_iw_dev(m->pd->dev), mr->stag >> 8);
	atomic_fetch_sub(&to_iw_pd(m->pd)->users, 1);
	free(mr);
	return 0;
}

int rr__iw_mw_alloc(struct rr_pd *pd, struct rr_mw **out)
{
	struct iw_device *dev = to_iw_dev(pd->dev);
	struct iw_mw *mw = rr_calloc(1, sizeof(*mw));
	struct iw_stag *s;
	int rc;

	if (!mw)
		return -ENOMEM;
	rc = iw_stag_alloc(dev, &mw->idx);
	if (rc) {
		free(mw);
		return rc;
	}
	s = iw_stag_at(dev, mw->idx);
	pthread_mutex_lock(&s->mu);
	s->state = IW_STAG_INVALID;
	s->kind = IW_STAG_MW;
	s->pd = pd;
	s->mr = NULL;
	mw->next_key = (uint8_t)(s->key + 1);
	mw->base.rkey = mw->idx << 8 | s->key;
	pthread_mutex_unlock(&s->mu);
	mw->base.pd = pd;
	atomic_fetch_add(&to_iw_pd(pd)->users, 1);
	*out = &mw->base;
	return 0;
}

int rr__iw_mw_free(struct rr_mw *m)
{
	struct iw_mw *mw = to_iw_mw(m);
	struct iw_device *dev = to_iw_dev(m->pd->dev);
	struct iw_stag *s = iw_stag_at(dev, mw->idx);

	pthread_mutex_lock(&s->mu);
	if (s->state == IW_STAG_VALID && s->mr)
		atomic_fetch_sub(&s->mr->mw_refs, 1);
	s->mr = NULL;
	pthread_mutex_unlock(&s->mu);
	iw_stag_release(dev, mw->idx);
	atomic_fetch_sub(&to_iw_pd(m->pd)->users, 1);
	free(mw);
	return 0;
}

/* What wqe_fill (iw_qp.c) installs at the next REG. */
uint32_t rr__iw_mw_rkey_next(const struct rr_mw *m)
{
	const struct iw_mw *mw = (const struct iw_mw *)m;

	return mw->idx << 8 | mw->next_key;
}

/*
 * rr_mw_fence: the entry goes INVALID under its lock, which every remote
 * access holds while bytes move, so no access is in progress on return and
 * none can start (an access needs VALID and the key). The key is left
 * alone: REG installs a new one from next_key anyway, and a Send With
 * Invalidate naming the old one is refused, as for any window not VALID.
 * The entry, the index and the wrapper stay: nothing is allocated.
 */
int rr__iw_mw_fence(struct rr_mw *m)
{
	struct iw_mw *mw = to_iw_mw(m);
	struct iw_stag *s = iw_stag_at(to_iw_dev(m->pd->dev), mw->idx);

	pthread_mutex_lock(&s->mu);
	if (s->state == IW_STAG_VALID) {
		s->state = IW_STAG_INVALID;
		atomic_fetch_sub(&s->mr->mw_refs, 1);
		s->mr = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* The window becomes valid under rkey's key, unless it is valid already. */
static enum rr_wc_status stag_bind(struct iw_stag *s, struct iw_mr *mr,
				   uint32_t rkey, uint64_t addr,
				   uint64_t length, unsigned access)
{
	enum rr_wc_status st = RR_WC_SUCCESS;

	pthread_mutex_lock(&s->mu);
	if (s->state == IW_STAG_VALID) {
		st = RR_WC_MW_BIND_ERR; /* invalidate before rebinding */
	} else {
		s->key = (uint8_t)rkey;
		s->access = access;
		s->base = addr;
		s->len = length;
		s->mr = mr;
		s->state = IW_STAG_VALID;
		atomic_fetch_add(&mr->mw_refs, 1);
	}
	pthread_mutex_unlock(&s->mu);
	return st;
}

/* Executes a REG work request: the MW becomes valid under w->rkey's key. */
enum rr_wc_status rr__iw_mw_bind(struct iw_device *dev, struct rr_pd *pd,
				 const struct iw_wqe *w)
{
	struct iw_mr *mr = w->mr;
	uint64_t mbase = (uintptr_t)mr->base.addr;

	if (mr->base.pd != pd || w->mw->base.pd != pd)
		return RR_WC_MW_BIND_ERR;
	if (w->reg_addr < mbase || w->length > mr->base.length ||
	    w->reg_addr - mbase > mr->base.length - w->length)
		return RR_WC_MW_BIND_ERR;
	return stag_bind(iw_stag_at(dev, w->mw->idx), mr, w->rkey, w->reg_addr,
			 w->length, w->reg_access);
}

/*
 * rr_mw_bind: the same binding, at once (rr_mw_bind checked the range).
 * The caller owns the window, so no REG of it is queued on any QP.
 */
int rr__iw_mw_bind_now(struct rr_mw *m, struct rr_mr *mr, uint64_t addr,
		       uint64_t length, unsigned access)
{
	struct iw_mw *mw = to_iw_mw(m);
	uint32_t rkey = mw->idx << 8 | mw->next_key;
	struct iw_stag *s = iw_stag_at(to_iw_dev(m->pd->dev), mw->idx);

	if (stag_bind(s, to_iw_mr(mr), rkey, addr, length, access))
		return -EBUSY;
	mw->next_key++;
	__atomic_store_n(&m->rkey, rkey, __ATOMIC_RELEASE);
	return 0;
}

/*
 * LOCAL_INV (remote=false) or the peer's Send With Invalidate (remote=true).
 * Only memory windows of the QP's PD can be invalidated. Invalidating an
 * already invalid window whose key matches succeeds: the result is the same.
 */
int rr__iw_stag_invalidate(struct iw_device *dev, struct rr_pd *pd,
			   uint32_t rkey, bool remote)
{
	struct iw_stag *s = iw_stag_at(dev, rkey >> 8);
	int rc = 0;

	if (!s)
		return -ENOENT;
	pthread_mutex_lock(&s->mu);
	if (s->kind != IW_STAG_MW || s->state == IW_STAG_FREE ||
	    s->key != (uint8_t)rkey)
		rc = -ENOENT;
	else if (s->pd != pd)
		rc = -EPERM;
	else if (s->state == IW_STAG_VALID) {
		s->state = IW_STAG_INVALID;
		atomic_fetch_sub(&s->mr->mw_refs, 1);
		s->mr = NULL;
	} else if (remote) {
		rc = -ENOENT; /* the peer names a key that is not live */
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}
