/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Byte range locks kept by the server itself, one table per server, made
 * on the first lock. For the local directory backend they are the locks:
 * POSIX record locks belong to a process (or, OFD locks, to one open file
 * description), never to an NFS lock owner, so local processes do not see
 * these locks, nor these the processes'. For CephFS, whose MDS holds the
 * locks, the table records what it granted (cephfs_lock.c says why).
 *
 * The table keeps POSIX semantics per owner: an owner's ranges on a file
 * never overlap (a new lock replaces what it covers of the owner's own,
 * and an unlock may split one), and a lock conflicts with another owner's
 * overlapping range when either is exclusive.
 *
 * WARNING: one mutex and one list for every file: enough for NLM's and
 * NFSv4.1's few locks, not for thousands.
 */
#include "nfs3/server/backend/lock_table.h"

#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>

struct lk {
	struct lk *next;
	uint64_t dev, ino, owner;
	uint64_t off, end; /* [off, end) */
	bool excl;
};

struct nfsd_locks {
	pthread_mutex_t mu;
	struct lk *head;
};

struct key {
	uint64_t dev, ino, owner, off, end;
};

static struct key key_of(const struct nfsd_be_file *f,
			 const struct nfsd_be_lock *l)
{
	uint64_t end = l->len && l->len <= UINT64_MAX - l->off ? l->off + l->len
							       : UINT64_MAX;

	return (struct key){.dev = (uint64_t)f->obj->st.st_dev,
			    .ino = (uint64_t)f->obj->st.st_ino,
			    .owner = l->owner,
			    .off = l->off,
			    .end = end};
}

/* The server's table, made once whichever call comes first. */
static struct nfsd_locks *table(struct rr_nfs3_server *s)
{
	struct nfsd_locks *t = atomic_load(&s->locks), *none = NULL;

	if (t)
		return t;
	t = rr_calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->mu, NULL);
	if (atomic_compare_exchange_strong(&s->locks, &none, t))
		return t;
	pthread_mutex_destroy(&t->mu);
	free(t);
	return none; /* another call made it first */
}

void rr__nfsd_locks_free(struct rr_nfs3_server *s)
{
	struct nfsd_locks *t = atomic_load(&s->locks);

	if (!t)
		return;
	while (t->head) {
		struct lk *e = t->head;

		t->head = e->next;
		free(e);
	}
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static bool same_file(const struct lk *e, const struct key *k)
{
	return e->dev == k->dev && e->ino == k->ino;
}

static bool overlaps(const struct lk *e, const struct key *k)
{
	return same_file(e, k) && e->off < k->end && k->off < e->end;
}

/* Caller holds t->mu. Another owner's lock in the way of k, or NULL. */
static struct lk *conflict(struct nfsd_locks *t, const struct key *k, bool excl)
{
	struct lk *e;

	for (e = t->head; e; e = e->next)
		if (e->owner != k->owner && overlaps(e, k) && (e->excl || excl))
			return e;
	return NULL;
}

/*
 * Caller holds t->mu. Takes [k->off, k->end) out of the owner's ranges;
 * the one range that may straddle it takes spare for its right part
 * (*spare NULL once used).
 */
static void cut(struct nfsd_locks *t, const struct key *k, struct lk **spare)
{
	struct lk **pp = &t->head, *e;

	while ((e = *pp)) {
		if (e->owner != k->owner || !overlaps(e, k)) {
			pp = &e->next;
		} else if (e->off < k->off && e->end > k->end) {
			**spare = *e; /* split: the right part */
			(*spare)->off = k->end;
			e->end = k->off;
			(*spare)->next = e->next;
			e->next = *spare;
			*spare = NULL;
			return;
		} else if (e->off < k->off) {
			e->end = k->off;
			pp = &e->next;
		} else if (e->end > k->end) {
			e->off = k->end;
			pp = &e->next;
		} else {
			*pp = e->next;
			free(e);
		}
	}
}

int rr__nfsd_lktab_lock(struct nfsd_call *c, struct nfsd_be_file *f,
			const struct nfsd_be_lock *l)
{
	struct nfsd_locks *t = table(c->s);
	struct key k = key_of(f, l);
	struct lk *n = rr_calloc(1, sizeof(*n));
	struct lk *spare = rr_calloc(1, sizeof(*spare));
	int rc = -EAGAIN;

	if (!t || !n || !spare) {
		rc = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&t->mu);
	if (!conflict(t, &k, l->excl)) {
		cut(t, &k, &spare);
		*n = (struct lk){.next = t->head,
				 .dev = k.dev,
				 .ino = k.ino,
				 .owner = k.owner,
				 .off = k.off,
				 .end = k.end,
				 .excl = l->excl};
		t->head = n;
		n = NULL;
		rc = 0;
	}
	pthread_mutex_unlock(&t->mu);
out:
	free(n);
	free(spare);
	return rc;
}

/* Unlocking what the owner does not hold is no error (POSIX's F_UNLCK). */
int rr__nfsd_lktab_unlock(struct nfsd_call *c, struct nfsd_be_file *f,
			  const struct nfsd_be_lock *l)
{
	struct nfsd_locks *t = table(c->s);
	struct key k = key_of(f, l);
	struct lk *spare = rr_calloc(1, sizeof(*spare));

	if (!t || !spare) {
		free(spare);
		return -ENOMEM;
	}
	pthread_mutex_lock(&t->mu);
	cut(t, &k, &spare);
	pthread_mutex_unlock(&t->mu);
	free(spare);
	return 0;
}

int rr__nfsd_lktab_test(struct nfsd_call *c, struct nfsd_be_file *f,
			struct nfsd_be_lock *l)
{
	struct nfsd_locks *t = table(c->s);
	struct key k = key_of(f, l);
	struct lk *e;
	int rc = 0;

	if (!t)
		return -ENOMEM;
	pthread_mutex_lock(&t->mu);
	e = conflict(t, &k, l->excl);
	if (e) {
		*l = (struct nfsd_be_lock){
			.owner = e->owner,
			.off = e->off,
			.len = e->end == UINT64_MAX ? 0 : e->end - e->off,
			.excl = e->excl};
		rc = -EAGAIN;
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

int rr__nfsd_lktab_count(struct nfsd_call *c, struct nfsd_be_file *f,
			 uint64_t owner)
{
	struct nfsd_locks *t = table(c->s);
	struct key k = key_of(f, &(struct nfsd_be_lock){.owner = owner});
	int n = 0;

	if (!t)
		return -ENOMEM;
	pthread_mutex_lock(&t->mu);
	for (struct lk *e = t->head; e; e = e->next)
		n += e->owner == owner && same_file(e, &k);
	pthread_mutex_unlock(&t->mu);
	return n;
}
