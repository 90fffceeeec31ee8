/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * READs and WRITEs waiting inside libcephfs, watched, and woken when
 * libcephfs forgets to.
 *
 * A read asks libcephfs for the Fr cap and would like Fc (its cache).
 * While the MDS is taking Fc back and a cache reference (another read,
 * or read-ahead) still holds it, the read waits for the revocation to
 * end. libcephfs 16.2 (Debian 12's) ends it without waking the waiters
 * (Ceph tracker 65971 and 67403, fixed in later releases): they sleep
 * until the next cap message for that inode, which may never come. It
 * happens whenever another client (a second server, NFS-Ganesha) has
 * the file open for writing while we read it, and it took every worker
 * thread of ours, one retransmitted READ at a time.
 *
 * Each call that may wait records its inode here while it is inside
 * libcephfs. A ticker looks every WAITS_TICK_MS: for an inode a call has
 * been in for WAITS_NUDGE_MS, it asks the MDS for the inode's size and
 * times. To answer, the MDS grants the Fs cap, and every cap grant wakes
 * the inode's waiters, which then find the revocation over. A call that
 * is merely slow (a busy OSD) costs one getattr a second. Each call's
 * first nudge is said (rate-limited); the slots are a fixed array, and a
 * call that finds none runs unwatched, which is said too.
 */
#include "nfs3/server/backend/cephfs.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/ticker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WAITS_MAX      256
#define WAITS_TICK_MS  250
#define WAITS_NUDGE_MS 1000
#define WAITS_BATCH    16 /* inodes nudged per tick at most */

struct ceph_wait {
	uint64_t ino, snap;
	uint64_t since_ms, nudged_ms;
	bool busy;
};

struct ceph_waits {
	pthread_mutex_t mu;
	struct ceph_mount_info *cm;
	const UserPerm *perm;
	struct rr_ticker ticker;
	uint32_t nfree;
	uint16_t free[WAITS_MAX];
	struct ceph_wait slot[WAITS_MAX];
};

int rr__nfsd_ceph_waits_begin(struct ceph_waits *w, uint64_t ino, uint64_t snap)
{
	int i = -1;

	pthread_mutex_lock(&w->mu);
	if (w->nfree) {
		i = w->free[--w->nfree];
		w->slot[i] = (struct ceph_wait){.ino = ino,
						.snap = snap,
						.since_ms = rr_coarse_ms(),
						.busy = true};
	}
	pthread_mutex_unlock(&w->mu);
	if (i < 0)
		rr_warn_rl("cephfs: more than %d READs and WRITEs in libcephfs "
			   "at once: one runs unwatched",
			   WAITS_MAX);
	return i;
}

void rr__nfsd_ceph_waits_end(struct ceph_waits *w, int i)
{
	if (i < 0)
		return;
	pthread_mutex_lock(&w->mu);
	w->slot[i].busy = false;
	w->free[w->nfree++] = (uint16_t)i;
	pthread_mutex_unlock(&w->mu);
}

/*
 * Inodes calls have waited on too long, each once, into out; first[k]
 * when a call on out[k] is nudged for the first time. Holds mu.
 */
static int overdue(struct ceph_waits *w, uint64_t now, uint64_t *out,
		   bool *first)
{
	int n = 0;

	for (int i = 0; i < WAITS_MAX && n < WAITS_BATCH; i++) {
		struct ceph_wait *s = &w->slot[i];
		int k = 0;

		/* a snapshot's caps are never taken back: nothing to wake */
		if (!s->busy || s->snap != CEPH_NOSNAP ||
		    now - s->since_ms < WAITS_NUDGE_MS ||
		    now - s->nudged_ms < WAITS_NUDGE_MS)
			continue;
		while (k < n && out[k] != s->ino)
			k++;
		if (k == n) {
			out[n] = s->ino;
			first[n++] = false;
		}
		first[k] |= !s->nudged_ms;
		s->nudged_ms = now;
	}
	return n;
}

/* The getattr that makes the MDS grant, and so wake ino's waiters. */
static int nudge(struct ceph_waits *w, uint64_t ino)
{
	struct ceph_statx stx;
	struct Inode *in;
	int rc = ceph_ll_lookup_inode(w->cm, (struct inodeno_t){ino}, &in);

	if (rc)
		return rc;
	rc = ceph_ll_getattr(w->cm, in, &stx,
			     CEPH_STATX_SIZE | CEPH_STATX_MTIME, 0, w->perm);
	ceph_ll_put(w->cm, in);
	return rc;
}

static void watch(void *arg)
{
	struct ceph_waits *w = arg;
	uint64_t ino[WAITS_BATCH];
	bool first[WAITS_BATCH];
	int n;

	pthread_mutex_lock(&w->mu);
	n = overdue(w, rr_coarse_ms(), ino, first);
	pthread_mutex_unlock(&w->mu);
	for (int i = 0; i < n; i++) {
		int rc = nudge(w, ino[i]);

		if (first[i] || rc)
			rr_warn_rl("cephfs: a call has waited in libcephfs for "
				   "%u ms on inode %#llx: asked the MDS for "
				   "its attributes, to wake it%s%s",
				   WAITS_NUDGE_MS, (unsigned long long)ino[i],
				   rc ? ": " : "", rc ? strerror(-rc) : "");
	}
}

int rr__nfsd_ceph_waits_new(struct ceph_mount_info *cm, const UserPerm *perm,
			    struct ceph_waits **out)
{
	struct ceph_waits *w = rr_calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->cm = cm;
	w->perm = perm;
	for (int i = WAITS_MAX; i > 0; i--)
		w->free[w->nfree++] = (uint16_t)(i - 1);
	pthread_mutex_init(&w->mu, NULL);
	rc = rr__ticker_start(&w->ticker, WAITS_TICK_MS, watch, w);
	if (rc) {
		pthread_mutex_destroy(&w->mu);
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* Stops the watch: no call may be inside libcephfs. */
void rr__nfsd_ceph_waits_free(struct ceph_waits *w)
{
	if (!w)
		return;
	rr__ticker_stop(&w->ticker);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
