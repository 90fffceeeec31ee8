// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The node table (fnode.h): two chained hash tables over the same nodes,
 * by id for every request and by handle for every reply that names one.
 * One lock: each use is a few pointer steps, far below an RPC's cost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fnode.h"

#define NBUCKETS (1u << 14)

/* A node's write-behind WRITEs in flight, made at its first. */
struct fwb {
	uint32_t n;	   /* in flight */
	uint32_t draining; /* drains waiting: no new WRITE starts */
	uint64_t last;	   /* wb_clock when one last ended */
	struct {
		uint64_t off, len;
	} r[FTAB_WB_DEPTH]; /* [0, n): the ranges in flight */
};

struct fnode {
	uint64_t id;
	uint64_t nlookup;
	struct nfsc_fh fh;
	struct fchange change;
	uint32_t nopen;	      /* opens not yet released */
	struct fsilly *silly; /* unlinked while open: renamed to this */
	struct fwb *wb;
	struct fnode *id_next, *fh_next;
};

/* FNV-1a: handles are opaque bytes, often with a common prefix. */
static size_t fh_bucket(const struct ftable *t, const struct nfsc_fh *fh)
{
	uint64_t h = 14695981039346656037ull;

	for (uint32_t i = 0; i < fh->len; i++)
		h = (h ^ fh->data[i]) * 1099511628211ull;
	return (size_t)(h & (t->nbuckets - 1));
}

static size_t id_bucket(const struct ftable *t, uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 50) & (t->nbuckets - 1);
}

static struct fnode *find_id(struct ftable *t, uint64_t id)
{
	struct fnode *p = t->by_id[id_bucket(t, id)];

	while (p && p->id != id)
		p = p->id_next;
	return p;
}

static struct fnode *find_fh(struct ftable *t, const struct nfsc_fh *fh)
{
	struct fnode *p = t->by_fh[fh_bucket(t, fh)];

	while (p &&
	       (p->fh.len != fh->len || memcmp(p->fh.data, fh->data, fh->len)))
		p = p->fh_next;
	return p;
}

static struct fnode *add(struct ftable *t, const struct nfsc_fh *fh,
			 uint64_t id)
{
	struct fnode *p = rr_calloc(1, sizeof(*p));
	size_t bi = id_bucket(t, id), bf = fh_bucket(t, fh);

	if (!p)
		return NULL;
	p->id = id;
	p->fh = *fh;
	p->id_next = t->by_id[bi];
	t->by_id[bi] = p;
	p->fh_next = t->by_fh[bf];
	t->by_fh[bf] = p;
	t->count++;
	return p;
}

static void unlink_node(struct ftable *t, struct fnode *p)
{
	struct fnode **pp = &t->by_id[id_bucket(t, p->id)];

	while (*pp != p)
		pp = &(*pp)->id_next;
	*pp = p->id_next;
	pp = &t->by_fh[fh_bucket(t, &p->fh)];
	while (*pp != p)
		pp = &(*pp)->fh_next;
	*pp = p->fh_next;
	t->count--;
	free(p->wb);
	free(p->silly);
	free(p);
}

int rr__ftab_init(struct ftable *t, const struct nfsc_fh *root)
{
	struct fnode *r;

	memset(t, 0, sizeof(*t));
	t->nbuckets = NBUCKETS;
	t->by_id = rr_calloc(NBUCKETS, sizeof(*t->by_id));
	t->by_fh = rr_calloc(NBUCKETS, sizeof(*t->by_fh));
	t->next_id = 2;
	r = t->by_id && t->by_fh ? add(t, root, 1) : NULL;
	if (!r) {
		free(t->by_id);
		free(t->by_fh);
		return -ENOMEM;
	}
	r->nlookup = 1; /* the kernel never forgets the root */
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->wb_cv, NULL);
	return 0;
}

void rr__ftab_fini(struct ftable *t)
{
	for (size_t i = 0; i < t->nbuckets; i++)
		while (t->by_id[i])
			unlink_node(t, t->by_id[i]);
	free(t->by_id);
	free(t->by_fh);
	pthread_cond_destroy(&t->wb_cv);
	pthread_mutex_destroy(&t->mu);
}

int rr__ftab_fh(struct ftable *t, uint64_t id, struct nfsc_fh *fh)
{
	struct fnode *p;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	if (p)
		*fh = p->fh;
	pthread_mutex_unlock(&t->mu);
	return p ? 0 : -ESTALE;
}

int rr__ftab_ref(struct ftable *t, const struct nfsc_fh *fh, uint64_t *id)
{
	struct fnode *p;

	pthread_mutex_lock(&t->mu);
	p = find_fh(t, fh);
	if (!p)
		p = add(t, fh, t->next_id++);
	if (p) {
		p->nlookup++;
		*id = p->id;
	}
	pthread_mutex_unlock(&t->mu);
	return p ? 0 : -ENOMEM;
}

void rr__ftab_forget(struct ftable *t, uint64_t id, uint64_t n)
{
	struct fnode *p;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	if (p && id != 1) {
		p->nlookup = p->nlookup > n ? p->nlookup - n : 0;
		if (!p->nlookup)
			unlink_node(t, p);
	}
	pthread_mutex_unlock(&t->mu);
}

static bool ts_eq(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

bool rr__ftab_same_change(struct ftable *t, uint64_t id, const struct stat *now)
{
	struct fchange c = {.mtime = now->st_mtim,
			    .ctime = now->st_ctim,
			    .size = now->st_size,
			    .valid = true};
	struct fnode *p;
	bool same = false;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	if (p) {
		same = p->change.valid && ts_eq(&p->change.mtime, &c.mtime) &&
		       ts_eq(&p->change.ctime, &c.ctime) &&
		       p->change.size == c.size;
		p->change = c;
	}
	pthread_mutex_unlock(&t->mu);
	return same;
}

size_t rr__ftab_count(struct ftable *t)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = t->count;
	pthread_mutex_unlock(&t->mu);
	return n;
}

void rr__ftab_opened(struct ftable *t, uint64_t id)
{
	struct fnode *p;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	if (p) {
		p->nopen++;
		t->nopen++;
	}
	pthread_mutex_unlock(&t->mu);
}

struct fsilly *rr__ftab_closed(struct ftable *t, uint64_t id)
{
	struct fsilly *s = NULL;
	struct fnode *p;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	if (p && p->nopen) {
		p->nopen--;
		t->nopen--;
		if (!p->nopen) {
			s = p->silly;
			p->silly = NULL;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return s;
}

bool rr__ftab_any_open(struct ftable *t)
{
	bool any;

	pthread_mutex_lock(&t->mu);
	any = t->nopen > 0;
	pthread_mutex_unlock(&t->mu);
	return any;
}

bool rr__ftab_is_open(struct ftable *t, const struct nfsc_fh *fh)
{
	struct fnode *p;
	bool open;

	pthread_mutex_lock(&t->mu);
	p = find_fh(t, fh);
	open = p && p->nopen;
	pthread_mutex_unlock(&t->mu);
	return open;
}

int rr__ftab_set_silly(struct ftable *t, const struct nfsc_fh *fh,
		       struct fsilly *s)
{
	struct fnode *p;
	int rc = -ENOENT;

	pthread_mutex_lock(&t->mu);
	p = find_fh(t, fh);
	if (p && p->nopen && !p->silly) {
		p->silly = s;
		rc = 0;
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

static bool wb_blocked(const struct fwb *w, uint64_t off, uint64_t len)
{
	if (w->draining || w->n == FTAB_WB_DEPTH)
		return true;
	for (uint32_t i = 0; i < w->n; i++)
		if (off < w->r[i].off + w->r[i].len && w->r[i].off < off + len)
			return true;
	return false;
}

int rr__ftab_wb_begin(struct ftable *t, uint64_t id, uint64_t off, uint64_t len)
{
	struct fnode *p;
	int rc = 0;

	pthread_mutex_lock(&t->mu);
	/* an open file's node stays: the kernel forgets no open inode */
	p = find_id(t, id);
	if (!p)
		rc = -ESTALE;
	else if (!p->wb && !(p->wb = rr_calloc(1, sizeof(*p->wb))))
		rc = -ENOMEM;
	while (!rc && wb_blocked(p->wb, off, len))
		pthread_cond_wait(&t->wb_cv, &t->mu);
	if (!rc) {
		p->wb->r[p->wb->n].off = off;
		p->wb->r[p->wb->n].len = len;
		p->wb->n++;
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

void rr__ftab_wb_end(struct ftable *t, uint64_t id, uint64_t off, uint64_t len)
{
	struct fnode *p;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	for (uint32_t i = 0; p && p->wb && i < p->wb->n; i++) {
		if (p->wb->r[i].off == off && p->wb->r[i].len == len) {
			p->wb->r[i] = p->wb->r[--p->wb->n];
			p->wb->last = ++t->wb_clock;
			break;
		}
	}
	pthread_cond_broadcast(&t->wb_cv);
	pthread_mutex_unlock(&t->mu);
}

void rr__ftab_wb_drain(struct ftable *t, uint64_t id)
{
	struct fnode *p;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	if (p && p->wb && p->wb->n) {
		p->wb->draining++;
		while (p->wb->n)
			pthread_cond_wait(&t->wb_cv, &t->mu);
		p->wb->draining--;
		pthread_cond_broadcast(&t->wb_cv);
	}
	pthread_mutex_unlock(&t->mu);
}

bool rr__ftab_wb_out(struct ftable *t, uint64_t id)
{
	struct fnode *p;
	bool out;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	out = p && p->wb && p->wb->n;
	pthread_mutex_unlock(&t->mu);
	return out;
}

uint64_t rr__ftab_wb_stamp(struct ftable *t)
{
	uint64_t now;

	pthread_mutex_lock(&t->mu);
	now = t->wb_clock;
	pthread_mutex_unlock(&t->mu);
	return now;
}

bool rr__ftab_wb_since(struct ftable *t, uint64_t id, uint64_t stamp)
{
	struct fnode *p;
	bool moved;

	pthread_mutex_lock(&t->mu);
	p = find_id(t, id);
	moved = p && p->wb && (p->wb->n || p->wb->last > stamp);
	pthread_mutex_unlock(&t->mu);
	return moved;
}
