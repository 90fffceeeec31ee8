// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fcntl and flock locks on the mount, kept by the server's lock manager
 * (rr_nfs_lock: NLM) so that they conflict with every client's, the
 * kernel's and other mounts' included, rather than only within this one.
 *
 * The kernel names an fcntl lock's owner by its lock owner id (one per
 * process's file table) and gives the process id with a lock, but not
 * with an unlock (0), nor with the FLUSH by which a closing process
 * drops its locks (FUSE keeps no lock records of its own when the file
 * system takes them). NLM's owner includes the process (svid), so the
 * svid each (file, owner) locked with is kept here, in `held`: unlocks
 * and closes go as that owner, and a close by an owner that holds
 * nothing here makes no NLM call. The process id as svid is what
 * another process's F_GETLK then reports, as for a local lock.
 *
 * flock is a whole-file lock of the open file's owner, as the kernel's
 * NFS client emulates it (nfs(5) local_lock): NLM has no flock, so a
 * flock and an fcntl lock of one file conflict, as they do on NFS.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/file.h>

#include "base/alloc.h"
#include "base/log.h"
#include "locks.h"

/* An owner holding locks on a file of a mount, and its svid. */
struct held {
	struct held *next;
	const struct rrf *f;
	uint64_t ino, owner;
	int32_t svid;
};

/* Few: one per locking process and file, made by this host's processes. */
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static struct held *held_head;

static struct held **held_find(const struct rrf *f, uint64_t ino,
			       uint64_t owner)
{
	struct held **pp = &held_head;

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->f == f && (*pp)->ino == ino && (*pp)->owner == owner)
			break;
	return pp;
}

/* The svid owner uses on ino: the one it locked with, else pid. */
static int32_t held_svid(const struct rrf *f, uint64_t ino, uint64_t owner,
			 int32_t pid, bool *known)
{
	struct held **pp;
	int32_t svid = pid;

	pthread_mutex_lock(&held_mu);
	pp = held_find(f, ino, owner);
	*known = *pp != NULL;
	if (*pp)
		svid = (*pp)->svid;
	pthread_mutex_unlock(&held_mu);
	return svid;
}

static int held_note(const struct rrf *f, uint64_t ino, uint64_t owner,
		     int32_t svid)
{
	struct held **pp, *h;
	int rc = 0;

	pthread_mutex_lock(&held_mu);
	pp = held_find(f, ino, owner);
	if (!*pp) {
		h = rr_calloc(1, sizeof(*h));
		if (h) {
			*h = (struct held){.next = held_head,
					   .f = f,
					   .ino = ino,
					   .owner = owner,
					   .svid = svid};
			held_head = h;
		} else {
			rc = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&held_mu);
	return rc;
}

/* Forgets owner on ino: true, and its svid, if it was there. */
static bool held_take(const struct rrf *f, uint64_t ino, uint64_t owner,
		      int32_t *svid)
{
	struct held **pp, *h;

	pthread_mutex_lock(&held_mu);
	pp = held_find(f, ino, owner);
	h = *pp;
	if (h)
		*pp = h->next;
	pthread_mutex_unlock(&held_mu);
	if (h)
		*svid = h->svid;
	free(h);
	return h != NULL;
}

static struct ofile *of_of(const struct fuse_file_info *fi)
{
	return (struct ofile *)(uintptr_t)fi->fh;
}

static bool interrupted(void *req)
{
	return fuse_req_interrupted(req);
}

/* The whole file's locks of owner (with svid), released. */
static int unlock_all(struct ofile *of, uint64_t owner, int32_t svid)
{
	struct rr_nfs_lock l = {.type = F_UNLCK, .owner = owner, .pid = svid};

	return rr_nfs_unlock(of->f, &l);
}

/* A struct flock's range: -EINVAL for a negative start or length. */
static int range_of(const struct flock *lk, struct rr_nfs_lock *l)
{
	if (lk->l_start < 0 || lk->l_len < 0)
		return -EINVAL;
	l->start = (uint64_t)lk->l_start;
	l->len = (uint64_t)lk->l_len; /* libfuse: 0 is to the end */
	return 0;
}

static int set(struct rrf *f, fuse_req_t req, fuse_ino_t ino,
	       struct fuse_file_info *fi, struct rr_nfs_lock *l, bool wait)
{
	bool known;
	int rc;

	l->owner = fi->lock_owner;
	l->pid = held_svid(f, ino, l->owner, l->pid, &known);
	if (l->type == F_UNLCK) {
		if (!known)
			return 0; /* this owner took nothing here */
		rc = rr_nfs_unlock(of_of(fi)->f, l);
		if (!rc && !l->start && !l->len)
			held_take(f, ino, l->owner, &l->pid);
		return rc;
	}
	l->cancelled = interrupted;
	l->arg = req;
	rc = rr_nfs_lock(of_of(fi)->f, l, wait ? RR_NFS_LOCK_WAIT : 0);
	if (!rc && held_note(f, ino, l->owner, l->pid)) {
		/* unrecorded, it could not be released on close: undo it */
		rr_nfs_unlock(of_of(fi)->f, l);
		rc = -ENOLCK;
	}
	return rc;
}

void rr__fuse_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock, int sleep)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct rr_nfs_lock l = {.type = lock->l_type, .pid = lock->l_pid};
	int rc = range_of(lock, &l);

	if (!rc)
		rc = set(f, req, ino, fi, &l, sleep);
	rr__fuse_reply_err(req, -rc);
}

void rr__fuse_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct rr_nfs_lock l = {.type = lock->l_type,
				.owner = fi->lock_owner,
				.pid = lock->l_pid};
	bool known;
	int rc = range_of(lock, &l);

	l.pid = held_svid(f, ino, l.owner, l.pid, &known);
	if (!rc)
		rc = rr_nfs_testlock(of_of(fi)->f, &l);
	if (rc) {
		rr__fuse_reply_err(req, -rc);
		return;
	}
	lock->l_type = (short)l.type;
	lock->l_whence = SEEK_SET;
	if (l.type != F_UNLCK) {
		/* a range off_t cannot say reaches the end */
		bool fits =
			l.start <= INT64_MAX && l.len <= INT64_MAX - l.start;

		lock->l_start = l.start <= INT64_MAX ? (off_t)l.start : 0;
		lock->l_len = fits ? (off_t)l.len : 0;
		lock->l_pid = l.pid;
	}
	fuse_reply_lock(req, lock);
}

void rr__fuse_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    int op)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct rr_nfs_lock l = {.pid = fuse_req_ctx(req)->pid};
	int kind = op & (LOCK_SH | LOCK_EX | LOCK_UN);

	l.type = kind == LOCK_SH   ? F_RDLCK
		 : kind == LOCK_EX ? F_WRLCK
				   : F_UNLCK;
	if (kind != LOCK_SH && kind != LOCK_EX && kind != LOCK_UN) {
		rr__fuse_reply_err(req, EINVAL);
		return;
	}
	rr__fuse_reply_err(req, -set(f, req, ino, fi, &l, !(op & LOCK_NB)));
}

/* The closing owner's locks on ino go; kept for a retry if they cannot. */
static void drop_owner(struct rrf *f, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int32_t svid;
	int rc;

	if (!held_take(f, ino, fi->lock_owner, &svid))
		return;
	rc = unlock_all(of_of(fi), fi->lock_owner, svid);
	if (!rc)
		return;
	rr_warn_rl("nfsrdma mount: locks of a closed file kept: %s",
		   rr_nfs_error());
	held_note(f, ino, fi->lock_owner, svid);
}

/* close(2): POSIX drops the process's fcntl locks on the file. */
void rr__fuse_lk_flush(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	drop_owner(rr__fuse_req(req, NULL), ino, fi);
	rr__fuse_flush(req, ino, fi);
}

/* The last close of an open file drops its flock. */
void rr__fuse_lk_release(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	struct rrf *f = fuse_req_userdata(req);

	/* the kernel's own request, for no process: nothing to interrupt */
	rr__fuse_intr_disarm(f);
	if (fi->flock_release) {
		rr_nfs_set_thread_cred(f->n, &of_of(fi)->cred.c);
		drop_owner(f, ino, fi);
	}
	rr__fuse_release(req, ino, fi);
}
