/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Byte range locks on CephFS. The MDS holds them, so every nfsrdmad on
 * the file system, and every other CephFS client, sees the same locks: a
 * lock is ceph_ll_setlk's, never waiting, under the owner's 64-bit cookie.
 *
 * libcephfs records a lock with the Fh it was taken through and drops it
 * when that Fh closes, while an NLM call opens the file for itself alone.
 * So each (file, owner) that holds a range has an Fh of its own here,
 * opened as the server when the owner takes its first range on the file,
 * closed when it holds none there any more, or when the export goes
 * (which gives back to the MDS whatever it still keeps for the owner).
 *
 * The server's lock table (lock_table.c) records what the MDS granted,
 * for what the MDS does not say: how many ranges an owner holds (NLM
 * bounds and forgets owners by it), and which of our owners holds a lock
 * in another's way. One mutex per export orders the two, and the table
 * may only be more cautious than the MDS: a grant it cannot record is
 * given back (an unlock of that range, which also ends what the owner
 * held there before), and a range the MDS dropped on its own (our
 * session evicted) is refused until the owner unlocks it.
 *
 * Snapshots are read only: no locks there (-EOPNOTSUPP).
 */
#include "nfs3/server/backend/cephfs.h"
#include "nfs3/server/backend/lock_table.h"

#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* One (file, owner) that holds ranges: the Fh they were taken through. */
struct ceph_lk_fh {
	struct ceph_lk_fh *next;
	uint64_t ino, owner;
	struct Fh *fh;
};

/* l as a struct flock of type; -EINVAL past what off_t holds. */
static int flock_of(const struct nfsd_be_lock *l, short type, struct flock *out)
{
	if (l->off > INT64_MAX)
		return -EINVAL;
	*out = (struct flock){
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = (off_t)l->off,
		/* a range past off_t's end runs to the file's end (0) */
		.l_len = l->len <= INT64_MAX - l->off ? (off_t)l->len : 0,
		.l_pid = getpid(),
	};
	return 0;
}

/* Caller holds fs->lk_mu. Where (ino, owner)'s entry is, or would go. */
static struct ceph_lk_fh **slot(struct nfsd_cephfs *fs, uint64_t ino,
				uint64_t owner)
{
	struct ceph_lk_fh **pp = &fs->lk_fhs;

	while (*pp && ((*pp)->ino != ino || (*pp)->owner != owner))
		pp = &(*pp)->next;
	return pp;
}

/* Caller holds fs->lk_mu. Opens the owner's Fh on f's file as the server. */
static int owner_fh(struct nfsd_call *c, struct nfsd_be_file *f, uint64_t owner,
		    struct ceph_lk_fh **out)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct ceph_lk_fh **pp = slot(fs, (uint64_t)f->obj->st.st_ino, owner);
	struct Inode *in;
	int rc;

	*out = *pp;
	if (*pp)
		return 0;
	*out = rr_calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	rc = rr__nfsd_ceph_inode(c, f->obj, &in);
	if (!rc)
		rc = ceph_ll_open(fs->cm, in, O_RDWR, &(*out)->fh, fs->server);
	if (rc == -EROFS || rc == -EACCES)
		rc = ceph_ll_open(fs->cm, in, O_RDONLY, &(*out)->fh,
				  fs->server);
	if (rc) {
		free(*out);
		*out = NULL;
		return rc;
	}
	(*out)->ino = (uint64_t)f->obj->st.st_ino;
	(*out)->owner = owner;
	*pp = *out;
	return 0;
}

/* Caller holds fs->lk_mu. Closes e's Fh once its owner holds nothing. */
static void drop_if_idle(struct nfsd_call *c, struct nfsd_be_file *f,
			 struct ceph_lk_fh *e)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct ceph_lk_fh **pp = slot(fs, e->ino, e->owner);

	if (rr__nfsd_lktab_count(c, f, e->owner) != 0)
		return;
	*pp = e->next;
	ceph_ll_close(fs->cm, e->fh);
	free(e);
}

int rr__nfsd_ceph_lock(struct nfsd_call *c, struct nfsd_be_file *f,
		       const struct nfsd_be_lock *l)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct flock fl, un;
	struct ceph_lk_fh *e;
	int rc = flock_of(l, l->excl ? F_WRLCK : F_RDLCK, &fl);

	if (rc)
		return rc;
	if (f->obj->snap != CEPH_NOSNAP)
		return -EOPNOTSUPP;
	un = fl;
	un.l_type = F_UNLCK;
	pthread_mutex_lock(&fs->lk_mu);
	rc = owner_fh(c, f, l->owner, &e);
	if (!rc)
		rc = ceph_ll_setlk(fs->cm, e->fh, &fl, l->owner, 0);
	if (!rc && (rc = rr__nfsd_lktab_lock(c, f, l)))
		ceph_ll_setlk(fs->cm, e->fh, &un, l->owner, 0);
	if (e)
		drop_if_idle(c, f, e);
	pthread_mutex_unlock(&fs->lk_mu);
	return rc == -EWOULDBLOCK ? -EAGAIN : rc;
}

/* Unlocking what the owner does not hold is no error (POSIX's F_UNLCK). */
int rr__nfsd_ceph_unlock(struct nfsd_call *c, struct nfsd_be_file *f,
			 const struct nfsd_be_lock *l)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct flock fl;
	struct ceph_lk_fh *e;
	int rc = flock_of(l, F_UNLCK, &fl);

	if (rc || f->obj->snap != CEPH_NOSNAP)
		return rc;
	pthread_mutex_lock(&fs->lk_mu);
	e = *slot(fs, (uint64_t)f->obj->st.st_ino, l->owner);
	if (e) {
		rc = ceph_ll_setlk(fs->cm, e->fh, &fl, l->owner, 0);
		if (!rc)
			rc = rr__nfsd_lktab_unlock(c, f, l);
		drop_if_idle(c, f, e);
	}
	pthread_mutex_unlock(&fs->lk_mu);
	return rc;
}

/*
 * The MDS says whether l could be taken, through the call's own Fh; when
 * not, one of our owners in the way is named from the table, and a lock
 * of another server's or client's is reported by its range, owner 0.
 */
int rr__nfsd_ceph_lock_test(struct nfsd_call *c, struct nfsd_be_file *f,
			    struct nfsd_be_lock *l)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct nfsd_be_lock ours = *l;
	struct flock fl;
	int rc = flock_of(l, l->excl ? F_WRLCK : F_RDLCK, &fl);

	if (rc)
		return rc;
	if (f->obj->snap != CEPH_NOSNAP)
		return -EOPNOTSUPP;
	rc = ceph_ll_getlk(fs->cm, (struct Fh *)NFSD_CEPH_FH(f), &fl, l->owner);
	if (rc || fl.l_type == F_UNLCK)
		return rc;
	pthread_mutex_lock(&fs->lk_mu);
	if (rr__nfsd_lktab_test(c, f, &ours) == -EAGAIN)
		*l = ours;
	else
		*l = (struct nfsd_be_lock){.off = (uint64_t)fl.l_start,
					   .len = (uint64_t)fl.l_len,
					   .excl = fl.l_type == F_WRLCK};
	pthread_mutex_unlock(&fs->lk_mu);
	return -EAGAIN;
}

int rr__nfsd_ceph_lock_count(struct nfsd_call *c, struct nfsd_be_file *f,
			     uint64_t owner)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	int n;

	pthread_mutex_lock(&fs->lk_mu);
	n = rr__nfsd_lktab_count(c, f, owner);
	pthread_mutex_unlock(&fs->lk_mu);
	return n;
}

void rr__nfsd_ceph_locks_drop(struct nfsd_cephfs *fs)
{
	while (fs->lk_fhs) {
		struct ceph_lk_fh *e = fs->lk_fhs;

		fs->lk_fhs = e->next;
		ceph_ll_close(fs->cm, e->fh);
		free(e);
	}
}
