/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Files' contents on the local directory: opens, reads, writes, commits.
 *
 * Opens go through the open-file cache's descriptors where the mode bits
 * decide (ident.c): checked here, then no identity switch, open or close
 * per call. Otherwise the file is opened again as the caller, for this
 * call alone.
 */
#include "nfs3/server/backend/local.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

#define F_FD(f)	 ((f)->priv[0])
#define F_OWN(f) ((f)->priv[1]) /* F_FD is this call's to close */

/* Through the cache's descriptor, opened as the server once checked. */
static int open_cached(struct nfsd_call *c, struct nfsd_obj *o, int flags,
		       uint32_t want)
{
	int fd;

	if (rr__nfsd_access(c->s, &c->id, &o->st, want) != want)
		return -EACCES;
	rr__nfsd_as_server(c); /* the check is made: open as ourselves */
	fd = c->nowait ? rr__nfsd_file_fd_made(c->s->files, o->file, flags)
		       : rr__nfsd_file_fd(c->s->files, o->file, flags);
	if (fd == -EAGAIN && c->nowait)
		rr__nfsd_defer(c);
	return fd;
}

/* NFSv3 opens for one access at a time and keeps no share state. */
int rr__nfsd_local_open(struct nfsd_call *c, struct nfsd_obj *o,
			struct nfsd_be_file *f)
{
	bool write = f->access & NFSD_BE_WRITE;
	int flags = write ? O_WRONLY : O_RDONLY;
	uint32_t want = write ? ACCESS3_MODIFY : ACCESS3_READ;
	int pfd, fd;

	f->obj = o;
	F_FD(f) = -1;
	F_OWN(f) = 0;
	if (f->deny || f->access == (NFSD_BE_READ | NFSD_BE_WRITE))
		return -EOPNOTSUPP;
	if (rr__nfsd_mode_decides(o, write))
		fd = open_cached(c, o, flags, want);
	else if (c->nowait) /* the caller's identity decides: a worker's job */
		fd = rr__nfsd_defer(c);
	else if ((pfd = rr__nfsd_obj_fd(c, o)) < 0)
		fd = pfd;
	else if (rr__nfsd_may(c, &o->st, want))
		fd = -EACCES;
	else if ((fd = rr__nfsd_reopen(pfd, flags)) >= 0)
		F_OWN(f) = 1;
	if (fd < 0)
		return fd;
	F_FD(f) = fd;
	return 0;
}

void rr__nfsd_local_close(struct nfsd_call *c, struct nfsd_be_file *f)
{
	(void)c;
	if (F_OWN(f))
		close((int)F_FD(f));
	F_FD(f) = -1;
	F_OWN(f) = 0;
}

/*
 * A file system without RWF_NOWAIT says EOPNOTSUPP (tmpfs does, in the
 * guest's Linux 6.1). tmpfs and ramfs keep files in memory: a plain read
 * waits for no device there (swap aside), and beats a worker hand-off.
 * The answer is kept for the device, so that later READs there cost one
 * pread, not a failed preadv2 and an fstatfs before it.
 */
static bool in_memory(struct rr_nfs3_server *s, int fd, dev_t dev)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) ||
	    (sf.f_type != TMPFS_MAGIC && sf.f_type != RAMFS_MAGIC))
		return false;
	atomic_store(&s->mem_fs_dev, (uint64_t)dev + 1);
	return true;
}

/* What the page cache holds now, or the whole range on a memory fs. */
static ssize_t read_cached(struct nfsd_call *c, int fd, const struct iovec *iov,
			   int n, off_t off, dev_t dev)
{
	ssize_t got;

	if (atomic_load(&c->s->mem_fs_dev) == (uint64_t)dev + 1)
		return preadv(fd, iov, n, off);
	got = preadv2(fd, iov, n, off, RWF_NOWAIT);
	if (got < 0 && errno == EOPNOTSUPP && in_memory(c->s, fd, dev))
		got = preadv(fd, iov, n, off);
	return got;
}

static size_t iov_len(const struct iovec *iov, int n)
{
	size_t len = 0;

	while (n--)
		len += iov[n].iov_len;
	return len;
}

/*
 * Under c->nowait only what the page cache holds (RWF_NOWAIT): a miss, or
 * a short read before the end of the file (the rest is not cached), defers
 * the call to a worker, which reads it all; so does any error, for the
 * worker to answer.
 */
ssize_t rr__nfsd_local_read(struct nfsd_call *c, struct nfsd_be_file *f,
			    const struct iovec *iov, int iovcnt, uint64_t off)
{
	const struct stat *st = &f->obj->st;
	int fd = (int)F_FD(f);
	ssize_t got;

	if (iovcnt < 0 || iovcnt > NFSD_BE_IOV_MAX)
		return -EINVAL;
	if (!c->nowait) {
		got = preadv(fd, iov, iovcnt, (off_t)off);
		return got < 0 ? -errno : got;
	}
	got = read_cached(c, fd, iov, iovcnt, (off_t)off, st->st_dev);
	if (got < 0 || ((size_t)got < iov_len(iov, iovcnt) &&
			(off_t)off + got < st->st_size))
		return rr__nfsd_defer(c);
	return got;
}

/* Skips done bytes of iov into out (as many pieces). */
static int iov_skip(const struct iovec *iov, int n, size_t done,
		    struct iovec *out)
{
	int k = 0;

	for (; n; iov++, n--) {
		if (done >= iov->iov_len) {
			done -= iov->iov_len;
			continue;
		}
		out[k].iov_base = (char *)iov->iov_base + done;
		out[k++].iov_len = iov->iov_len - done;
		done = 0;
	}
	return k;
}

static int sync_as(int fd, enum nfsd_be_stable how)
{
	if (how == NFSD_BE_FILE_SYNC && fsync(fd))
		return -errno;
	if (how == NFSD_BE_DATA_SYNC && fdatasync(fd))
		return -errno;
	return 0;
}

/*
 * A part written before an error (ENOSPC, EFBIG) is the answer, and the
 * client's next write meets the error.
 */
ssize_t rr__nfsd_local_write(struct nfsd_call *c, struct nfsd_be_file *f,
			     const struct iovec *iov, int iovcnt, uint64_t off,
			     enum nfsd_be_stable how)
{
	size_t want = iov_len(iov, iovcnt), done = 0;
	struct iovec rest[NFSD_BE_IOV_MAX];
	int fd = (int)F_FD(f), err = 0, rc;

	(void)c;
	if (iovcnt < 0 || iovcnt > NFSD_BE_IOV_MAX)
		return -EINVAL;
	while (!err && done < want) {
		int n = iov_skip(iov, iovcnt, done, rest);
		ssize_t w = pwritev(fd, rest, n, (off_t)(off + done));

		if (w < 0 && errno != EINTR)
			err = -errno;
		else if (w > 0)
			done += (size_t)w;
	}
	if (err && !done)
		return err;
	rc = sync_as(fd, how);
	return rc ? rc : (ssize_t)done;
}

/* fsync needs an open file; reading it is enough to sync it. */
int rr__nfsd_local_commit(struct nfsd_call *c, struct nfsd_obj *o, uint64_t off,
			  uint64_t len)
{
	int pfd = rr__nfsd_obj_fd(c, o);
	int fd, rc;

	(void)off; /* the whole file: no range sync for a plain descriptor */
	(void)len;
	if (pfd < 0)
		return pfd;
	fd = rr__nfsd_reopen(pfd, O_RDONLY);
	if (fd < 0)
		fd = rr__nfsd_reopen(pfd, O_WRONLY);
	if (fd < 0)
		return fd;
	rc = fsync(fd) ? -errno : 0;
	close(fd);
	return rc;
}
