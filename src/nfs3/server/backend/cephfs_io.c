/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Files' contents on CephFS: an open is a libcephfs file handle (Fh)
 * opened as the caller, kept for the caller's later calls (cephfs_opens.c), and
 * READ and WRITE move the data straight between CephFS and the caller's iovecs
 * (the transport's registered buffers) with ceph_ll_readv and ceph_ll_writev:
 * no bounce copy of ours. (Locks: cephfs_lock.c.)
 */
#include "nfs3/server/backend/cephfs.h"

#include <errno.h>
#include <fcntl.h>

#define F_FH(f)	  NFSD_CEPH_FH(f)
#define F_OPEN(f) NFSD_CEPH_OPEN(f)

int rr__nfsd_ceph_open(struct nfsd_call *c, struct nfsd_obj *o,
		       struct nfsd_be_file *f)
{
	int flags = f->access == (NFSD_BE_READ | NFSD_BE_WRITE) ? O_RDWR
		    : f->access & NFSD_BE_WRITE			? O_WRONLY
								: O_RDONLY;
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	const UserPerm *perm;
	struct ceph_open *e;
	struct Inode *in;
	struct Fh *fh = NULL;
	int rc;

	f->obj = o;
	F_FH(f) = F_OPEN(f) = 0;
	if (f->deny)
		return -EOPNOTSUPP; /* no share reservations in CephFS */
	if (c->nowait)
		return rr__nfsd_defer(c);
	rc = rr__nfsd_ceph_inode(c, o, &in);
	if (rc)
		return rc;
	e = rr__nfsd_ceph_opens_get(fs->opens, o, flags, &c->id, &fh);
	if (!e) {
		perm = rr__nfsd_ceph_perm(c);
		if (!perm)
			return -ENOMEM;
		rc = ceph_ll_open(fs->cm, in, flags, &fh, perm);
		if (rc)
			return rc;
		e = rr__nfsd_ceph_opens_add(fs->opens, o, flags, &c->id, &fh);
	}
	F_FH(f) = (intptr_t)fh;
	F_OPEN(f) = (intptr_t)e;
	return 0;
}

void rr__nfsd_ceph_close(struct nfsd_call *c, struct nfsd_be_file *f)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);

	if (F_OPEN(f))
		rr__nfsd_ceph_opens_put(fs->opens,
					(struct ceph_open *)F_OPEN(f));
	else if (F_FH(f))
		ceph_ll_close(fs->cm, (struct Fh *)F_FH(f));
	F_FH(f) = F_OPEN(f) = 0;
}

/* ceph_ll_readv or _writev, watched while inside (cephfs_waits.c) */
static int64_t io(struct nfsd_call *c, struct nfsd_be_file *f,
		  const struct iovec *iov, int iovcnt, uint64_t off, bool write)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct Fh *fh = (struct Fh *)F_FH(f);
	int slot = rr__nfsd_ceph_waits_begin(
		fs->waits, (uint64_t)f->obj->st.st_ino, f->obj->snap);
	int64_t n =
		write ? ceph_ll_writev(fs->cm, fh, iov, iovcnt, (int64_t)off)
		      : ceph_ll_readv(fs->cm, fh, iov, iovcnt, (int64_t)off);

	rr__nfsd_ceph_waits_end(fs->waits, slot);
	return n;
}

ssize_t rr__nfsd_ceph_read(struct nfsd_call *c, struct nfsd_be_file *f,
			   const struct iovec *iov, int iovcnt, uint64_t off)
{
	if (iovcnt < 0 || iovcnt > NFSD_BE_IOV_MAX || off > INT64_MAX)
		return -EINVAL;
	if (c->nowait)
		return rr__nfsd_defer(c);
	return io(c, f, iov, iovcnt, off, false);
}

static size_t iov_len(const struct iovec *iov, int n)
{
	size_t len = 0;

	while (n--)
		len += iov[n].iov_len;
	return len;
}

/*
 * libcephfs writes all or fails (it waits for room in its cache, not
 * for the OSDs unless asked to sync); a short count is passed on.
 */
ssize_t rr__nfsd_ceph_write(struct nfsd_call *c, struct nfsd_be_file *f,
			    const struct iovec *iov, int iovcnt, uint64_t off,
			    enum nfsd_be_stable how)
{
	struct ceph_mount_info *cm = rr__nfsd_ceph(c)->cm;
	struct Fh *fh = (struct Fh *)F_FH(f);
	int64_t n;
	int rc = 0;

	if (iovcnt < 0 || iovcnt > NFSD_BE_IOV_MAX ||
	    off > INT64_MAX - iov_len(iov, iovcnt))
		return -EINVAL;
	if (c->nowait)
		return rr__nfsd_defer(c);
	n = io(c, f, iov, iovcnt, off, true);
	if (n <= 0)
		return n;
	if (how == NFSD_BE_UNSTABLE)
		rr__nfsd_ceph_wb_wrote(&rr__nfsd_ceph(c)->wb, cm, (uint64_t)n);
	else
		rc = ceph_ll_fsync(cm, fh, how == NFSD_BE_DATA_SYNC);
	return rc ? rc : (ssize_t)n;
}

/*
 * The whole file, data and metadata, to the OSDs and the MDS: what
 * ceph_ll_fsync does for an Fh, done on the inode (no open needed).
 */
int rr__nfsd_ceph_commit(struct nfsd_call *c, struct nfsd_obj *o, uint64_t off,
			 uint64_t len)
{
	struct Inode *in;
	int rc = rr__nfsd_ceph_inode(c, o, &in);

	(void)off;
	(void)len;
	return rc ? rc : ceph_ll_sync_inode(rr__nfsd_ceph(c)->cm, in, 0);
}
