/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Open files kept between calls. Opening and closing a libcephfs Fh for
 * every READ costs more than the read: the client's lock, its caps asked
 * for at open and given up again at close. With 4 KiB random reads that
 * was two and a half times slower than reading through a kept Fh.
 *
 * An entry is an Fh opened as one identity (uid, gid, groups) with one
 * access mode, so libcephfs itself decided that identity's permission at
 * open. It serves only calls of the same identity, and only while the
 * file's mode, owner and group are those it was opened under, as the
 * call's fresh attributes (its handle's getattr) show them; else the entry
 * goes and the call opens afresh, asking libcephfs again. Those three are
 * all libcephfs decides by unless it enforces POSIX ACLs (client_acl_type
 * = posix_acl), which it does not by default. Where it does, an ACL can
 * change and leave them as they were, so ctime, which any change moves,
 * must match too; a write moves it as well, and written files are then
 * opened per call. (Opened per call, every WRITE's close also flushed its
 * caps to the MDS, which journalled each: 0.08 s of MDS CPU per second
 * of 1 MiB writes, against Ganesha's 0.006.)
 *
 * Bounded: at most OPENS_MAX entries, the least recently used idle ones
 * closed first; a reaper closes entries idle for OPENS_IDLE_MS, so a
 * quiet server keeps no file open (an open file keeps its caps, and a
 * file removed elsewhere would stay in the MDS's strays). One mutex
 * covers the table; no libcephfs call is made under it.
 */
#include "nfs3/server/backend/cephfs.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/ticker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define OPENS_MAX     1024
#define OPENS_BUCKETS 256
#define OPENS_IDLE_MS 2000
#define OPENS_REAP_MS 1000 /* the reaper looks this often */

struct ceph_open {
	struct ceph_open *newer, *older; /* LRU, newest at the head */
	struct ceph_open *hnext;
	uint64_t ino, snap;
	int flags;
	struct nfsd_ident id;
	mode_t mode;
	uid_t fuid;
	gid_t fgid;
	struct timespec ctime;
	struct Fh *fh;
	uint32_t users; /* calls using fh now */
	bool gone;	/* out of the table: closed by its last user */
	uint64_t used_ms;
};

struct ceph_opens {
	pthread_mutex_t mu;
	struct rr_ticker reaper;
	struct ceph_mount_info *cm;
	struct ceph_open *bucket[OPENS_BUCKETS];
	struct ceph_open *head, *tail;
	uint32_t n;
	bool acls; /* libcephfs enforces POSIX ACLs: ctime must match too */
};

static uint32_t bucket_of(uint64_t ino, uint32_t uid)
{
	return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 40 ^ uid) %
	       OPENS_BUCKETS;
}

static bool same_id(const struct nfsd_ident *a, const struct nfsd_ident *b)
{
	return a->uid == b->uid && a->gid == b->gid && a->ngids == b->ngids &&
	       !memcmp(a->gids, b->gids, a->ngids * sizeof(a->gids[0]));
}

static bool same_attrs(const struct ceph_opens *t, const struct ceph_open *e,
		       const struct stat *st)
{
	if (e->mode != st->st_mode || e->fuid != st->st_uid ||
	    e->fgid != st->st_gid)
		return false;
	return !t->acls || (e->ctime.tv_sec == st->st_ctim.tv_sec &&
			    e->ctime.tv_nsec == st->st_ctim.tv_nsec);
}

static void lru_out(struct ceph_opens *t, struct ceph_open *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		t->head = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		t->tail = e->newer;
}

static void lru_front(struct ceph_opens *t, struct ceph_open *e)
{
	e->newer = NULL;
	e->older = t->head;
	if (t->head)
		t->head->newer = e;
	t->head = e;
	if (!t->tail)
		t->tail = e;
}

/* Takes e out of the table and the LRU. Caller holds mu. */
static void unlink_entry(struct ceph_opens *t, struct ceph_open *e)
{
	struct ceph_open **p = &t->bucket[bucket_of(e->ino, e->id.uid)];

	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	lru_out(t, e);
	e->gone = true;
	t->n--;
}

static void close_entries(struct ceph_opens *t, struct ceph_open *list)
{
	while (list) {
		struct ceph_open *next = list->hnext;

		ceph_ll_close(t->cm, list->fh);
		free(list);
		list = next;
	}
}

/*
 * Drops idle entries from the old end: all idle ones past the bound, and
 * those unused since before idle_before. Returns those to close (chained
 * by hnext). Caller holds mu.
 */
static struct ceph_open *shed(struct ceph_opens *t, uint32_t max,
			      uint64_t idle_before)
{
	struct ceph_open *e = t->tail, *out = NULL;

	while (e) {
		struct ceph_open *newer = e->newer;

		if (!e->users && (t->n > max || e->used_ms < idle_before)) {
			unlink_entry(t, e);
			e->hnext = out;
			out = e;
		} else if (t->n <= max) {
			break; /* the rest are newer */
		}
		e = newer;
	}
	return out;
}

static struct ceph_open *find(struct ceph_opens *t, const struct nfsd_obj *o,
			      int flags, const struct nfsd_ident *id)
{
	struct ceph_open *e =
		t->bucket[bucket_of((uint64_t)o->st.st_ino, id->uid)];

	for (; e; e = e->hnext)
		if (e->ino == (uint64_t)o->st.st_ino && e->snap == o->snap &&
		    e->flags == flags && same_id(&e->id, id))
			return e;
	return NULL;
}

/*
 * The entry for o, flags and id, taken (users++), if it is still valid;
 * a stale one goes out of the table, into *dead when nobody uses it (to
 * be closed once mu is let go). Caller holds mu.
 */
static struct ceph_open *take(struct ceph_opens *t, const struct nfsd_obj *o,
			      int flags, const struct nfsd_ident *id,
			      struct ceph_open **dead)
{
	struct ceph_open *e = find(t, o, flags, id);

	*dead = NULL;
	if (e && !same_attrs(t, e, &o->st)) {
		unlink_entry(t, e);
		if (!e->users) {
			e->hnext = NULL;
			*dead = e;
		}
		return NULL;
	}
	if (e) {
		e->users++;
		e->used_ms = rr_coarse_ms();
		lru_out(t, e);
		lru_front(t, e);
	}
	return e;
}

/*
 * A kept Fh for o, flags and the call's identity, taken for the call
 * (rr__nfsd_ceph_opens_put gives it back); NULL when there is none still
 * valid (a stale one goes).
 */
struct ceph_open *rr__nfsd_ceph_opens_get(struct ceph_opens *t,
					  const struct nfsd_obj *o, int flags,
					  const struct nfsd_ident *id,
					  struct Fh **fh)
{
	struct ceph_open *e, *dead;

	pthread_mutex_lock(&t->mu);
	e = take(t, o, flags, id, &dead);
	if (e)
		*fh = e->fh;
	pthread_mutex_unlock(&t->mu);
	close_entries(t, dead);
	return e;
}

/*
 * Keeps *fh, just opened by the call for o with flags, for later calls of
 * the same identity, and takes it for this one. Calls of one identity
 * that missed at once each opened an Fh: the first kept wins, and the
 * later ones close theirs and take it (*fh becomes its), so one file
 * has one entry per identity and access. NULL (out of memory): the
 * caller keeps *fh and closes it itself.
 */
struct ceph_open *rr__nfsd_ceph_opens_add(struct ceph_opens *t,
					  const struct nfsd_obj *o, int flags,
					  const struct nfsd_ident *id,
					  struct Fh **fh)
{
	struct ceph_open *e = rr_calloc(1, sizeof(*e)), *dead, *twin, *shed_out;
	uint32_t b;

	if (!e)
		return NULL;
	*e = (struct ceph_open){.ino = (uint64_t)o->st.st_ino,
				.snap = o->snap,
				.flags = flags,
				.id = *id,
				.mode = o->st.st_mode,
				.fuid = o->st.st_uid,
				.fgid = o->st.st_gid,
				.ctime = o->st.st_ctim,
				.fh = *fh,
				.users = 1,
				.used_ms = rr_coarse_ms()};
	b = bucket_of(e->ino, id->uid);
	pthread_mutex_lock(&t->mu);
	twin = take(t, o, flags, id, &dead);
	if (twin) {
		pthread_mutex_unlock(&t->mu);
		close_entries(t, e); /* ours: the twin serves this call */
		*fh = twin->fh;
		return twin;
	}
	e->hnext = t->bucket[b];
	t->bucket[b] = e;
	lru_front(t, e);
	t->n++;
	shed_out = shed(t, OPENS_MAX, 0);
	pthread_mutex_unlock(&t->mu);
	close_entries(t, dead);
	close_entries(t, shed_out);
	return e;
}

void rr__nfsd_ceph_opens_put(struct ceph_opens *t, struct ceph_open *e)
{
	bool close_it;

	pthread_mutex_lock(&t->mu);
	close_it = --e->users == 0 && e->gone;
	pthread_mutex_unlock(&t->mu);
	if (close_it) {
		e->hnext = NULL;
		close_entries(t, e);
	}
}

/* ------------------------------------------------------------ reaper */

static void reap(void *arg)
{
	struct ceph_opens *t = arg;
	uint64_t now = rr_coarse_ms();
	struct ceph_open *dead;

	pthread_mutex_lock(&t->mu);
	dead = shed(t, OPENS_MAX,
		    now > OPENS_IDLE_MS ? now - OPENS_IDLE_MS : 0);
	pthread_mutex_unlock(&t->mu);
	close_entries(t, dead);
}

/* Whether libcephfs checks POSIX ACLs (unknown: as if it did). */
static bool enforces_acls(struct ceph_mount_info *cm)
{
	char v[64];

	return ceph_conf_get(cm, "client_acl_type", v, sizeof(v)) ||
	       !strcmp(v, "posix_acl");
}

int rr__nfsd_ceph_opens_new(struct ceph_mount_info *cm, struct ceph_opens **out)
{
	struct ceph_opens *t = rr_calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	t->cm = cm;
	t->acls = enforces_acls(cm);
	pthread_mutex_init(&t->mu, NULL);
	rc = rr__ticker_start(&t->reaper, OPENS_REAP_MS, reap, t);
	if (rc) {
		pthread_mutex_destroy(&t->mu);
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

uint64_t rr__nfsd_ceph_opens_count(struct ceph_opens *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->mu);
	n = t->n;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* Stops the reaper and closes every entry: no call may hold one. */
void rr__nfsd_ceph_opens_free(struct ceph_opens *t)
{
	if (!t)
		return;
	rr__ticker_stop(&t->reaper);
	close_entries(t, shed(t, 0, UINT64_MAX));
	pthread_mutex_destroy(&t->mu);
	free(t);
}
