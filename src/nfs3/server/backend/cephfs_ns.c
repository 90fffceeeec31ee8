/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The CephFS backend's namespace and attributes: each op one ceph_ll_*
 * call on the directory's inode with one checked name, as the caller
 * (libcephfs makes the permission decision).
 */
#include "nfs3/server/backend/cephfs.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* The inode of o and the caller's credentials, or an error. */
static int prep(struct nfsd_call *c, struct nfsd_obj *o, struct Inode **in,
		const UserPerm **perm)
{
	int rc = rr__nfsd_ceph_inode(c, o, in);

	if (rc)
		return rc;
	*perm = rr__nfsd_ceph_perm(c);
	return *perm ? 0 : -ENOMEM;
}

/* libcephfs' setattr takes times, not "now": the server's clock then. */
static struct timespec when(struct timespec t)
{
	if (t.tv_nsec == UTIME_NOW)
		clock_gettime(CLOCK_REALTIME, &t);
	return t;
}

/* CephFS keeps no mode on a symlink either: one asked for is left alone. */
int rr__nfsd_ceph_setattr(struct nfsd_call *c, struct nfsd_obj *o,
			  const struct nfsd_be_sattr *a)
{
	struct ceph_statx x = {0};
	const UserPerm *perm;
	struct Inode *in;
	int mask = 0, rc = prep(c, o, &in, &perm);

	if (rc)
		return rc;
	if (a->set_mode && !S_ISLNK(o->st.st_mode)) {
		x.stx_mode = (uint16_t)(a->mode & 07777);
		mask |= CEPH_SETATTR_MODE;
	}
	if (a->set_uid) {
		x.stx_uid = a->uid;
		mask |= CEPH_SETATTR_UID;
	}
	if (a->set_gid) {
		x.stx_gid = a->gid;
		mask |= CEPH_SETATTR_GID;
	}
	if (a->set_size) {
		if (a->size > (uint64_t)INT64_MAX)
			return -EFBIG;
		x.stx_size = a->size;
		mask |= CEPH_SETATTR_SIZE;
	}
	if (a->atime.tv_nsec != UTIME_OMIT) {
		x.stx_atime = when(a->atime);
		mask |= CEPH_SETATTR_ATIME;
	}
	if (a->mtime.tv_nsec != UTIME_OMIT) {
		x.stx_mtime = when(a->mtime);
		mask |= CEPH_SETATTR_MTIME;
	}
	if (!mask)
		return 0;
	return ceph_ll_setattr(rr__nfsd_ceph(c)->cm, in, &x, mask, perm);
}

/* A new object's reference: the call made it, and needs none of it. */
static int made(struct nfsd_call *c, int rc, struct Inode *in)
{
	if (!rc)
		ceph_ll_put(rr__nfsd_ceph(c)->cm, in);
	return rc;
}

int rr__nfsd_ceph_mknod(struct nfsd_call *c, struct nfsd_obj *dir,
			const char *name, mode_t mode, dev_t rdev)
{
	struct ceph_statx x;
	const UserPerm *perm;
	struct Inode *din, *in = NULL;
	int rc = prep(c, dir, &din, &perm);

	if (rc)
		return rc;
	rc = ceph_ll_mknod(rr__nfsd_ceph(c)->cm, din, name, mode, rdev, &in, &x,
			   0, 0, perm);
	return made(c, rc, in);
}

int rr__nfsd_ceph_mkdir(struct nfsd_call *c, struct nfsd_obj *dir,
			const char *name, mode_t mode)
{
	struct ceph_statx x;
	const UserPerm *perm;
	struct Inode *din, *in = NULL;
	int rc = prep(c, dir, &din, &perm);

	if (rc)
		return rc;
	rc = ceph_ll_mkdir(rr__nfsd_ceph(c)->cm, din, name, mode, &in, &x, 0, 0,
			   perm);
	return made(c, rc, in);
}

/* The target is stored, never followed by us. */
int rr__nfsd_ceph_symlink(struct nfsd_call *c, struct nfsd_obj *dir,
			  const char *name, const char *target)
{
	struct ceph_statx x;
	const UserPerm *perm;
	struct Inode *din, *in = NULL;
	int rc = prep(c, dir, &din, &perm);

	if (rc)
		return rc;
	rc = ceph_ll_symlink(rr__nfsd_ceph(c)->cm, din, name, target, &in, &x,
			     0, 0, perm);
	return made(c, rc, in);
}

int rr__nfsd_ceph_link(struct nfsd_call *c, struct nfsd_obj *o,
		       struct nfsd_obj *dir, const char *name)
{
	const UserPerm *perm;
	struct Inode *in, *din;
	int rc = prep(c, o, &in, &perm);

	if (!rc)
		rc = rr__nfsd_ceph_inode(c, dir, &din);
	if (rc)
		return rc;
	return ceph_ll_link(rr__nfsd_ceph(c)->cm, in, din, name, perm);
}

int rr__nfsd_ceph_remove(struct nfsd_call *c, struct nfsd_obj *dir,
			 const char *name, bool isdir)
{
	struct ceph_mount_info *cm = rr__nfsd_ceph(c)->cm;
	const UserPerm *perm;
	struct Inode *din;
	int rc = prep(c, dir, &din, &perm);

	if (rc)
		return rc;
	return isdir ? ceph_ll_rmdir(cm, din, name, perm)
		     : ceph_ll_unlink(cm, din, name, perm);
}

int rr__nfsd_ceph_rename(struct nfsd_call *c, struct nfsd_obj *from,
			 const char *fname, struct nfsd_obj *to,
			 const char *tname)
{
	const UserPerm *perm;
	struct Inode *fin, *tin;
	int rc = prep(c, from, &fin, &perm);

	if (!rc)
		rc = rr__nfsd_ceph_inode(c, to, &tin);
	if (rc)
		return rc;
	return ceph_ll_rename(rr__nfsd_ceph(c)->cm, fin, fname, tin, tname,
			      perm);
}

ssize_t rr__nfsd_ceph_readlink(struct nfsd_call *c, struct nfsd_obj *o,
			       char *buf, size_t cap)
{
	const UserPerm *perm;
	struct Inode *in;
	int n = prep(c, o, &in, &perm);

	if (n)
		return n;
	n = ceph_ll_readlink(rr__nfsd_ceph(c)->cm, in, buf, cap - 1, perm);
	if (n < 0)
		return n;
	buf[n] = '\0';
	return n;
}
