/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * READ and WRITE (RFC 1813 sections 3.3.6-3.3.7), whose data is the
 * DDP-eligible item of RFC 8267: READ encodes READ3resok up to and
 * including the data's length word and hands the bytes over apart, read
 * straight into the transport's bulk buffer; WRITE decodes WRITE3args up to
 * the data's length word and takes the bytes from the read chunk when the
 * transport pulled one, else from the XDR right after that word.
 *
 * Both act through the open-file cache's descriptors where the mode bits
 * decide (ident.c): checked here, then no identity switch, open or close
 * per call. Otherwise the file is opened again as the caller.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

/* xdrmem over the call's results buffer, for encoding. */
static void res_xdr(struct nfsd_call *c, XDR *x)
{
	size_t cap;
	void *buf = rr_svc_res_buf(c->req, &cap);

	xdrmem_create(x, buf, (u_int)cap, XDR_ENCODE);
}

static uint32_t finish(struct nfsd_call *c, XDR *x, bool ok, const void *bulk,
		       size_t bulk_len)
{
	if (!ok || rr_svc_set_res(c->req, xdr_getpos(x), bulk, bulk_len))
		return RR_SYSTEM_ERR;
	return RR_SUCCESS;
}

static uint32_t read_fail(struct nfsd_call *c, nfsstat3 st, int fd)
{
	READ3res r = {.status = st};
	XDR x;

	rr__nfsd_post_attr_fd(fd, &r.READ3res_u.resfail.file_attributes);
	res_xdr(c, &x);
	return finish(c, &x, rr__xdr_READ3res(&x, &r), NULL, 0);
}

/*
 * The attributes are those the call's resolve just read (a statx of the
 * file, to prove the cached descriptor): the read changes none of them but
 * possibly atime, and one system call per READ is saved.
 */
static uint32_t read_ok(struct nfsd_call *c, const struct stat *sb,
			const void *data, uint32_t n, bool eof)
{
	nfsstat3 st = NFS3_OK;
	post_op_attr pa;
	count3 cnt = n;
	bool_t e = eof;
	u_int len = n;
	XDR x;
	bool ok;

	rr__nfsd_post_attr(sb, &pa);
	res_xdr(c, &x);
	ok = rr__xdr_nfsstat3(&x, &st) && rr__xdr_post_op_attr(&x, &pa) &&
	     rr__xdr_count3(&x, &cnt) && xdr_bool(&x, &e) &&
	     xdr_u_int(&x, &len);
	return finish(c, &x, ok, data, n);
}

static nfsstat3 regular(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return NFS3_OK;
	return S_ISDIR(st->st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
}

/*
 * The descriptor to read or write o through (flags O_RDONLY or O_WRONLY).
 * *own: opened for this call alone, the caller closes it; else the cache's.
 */
static nfsstat3 io_fd(struct nfsd_call *c, struct nfsd_obj *o, int flags,
		      int *fd, bool *own)
{
	uint32_t want = flags == O_RDONLY ? ACCESS3_READ : ACCESS3_MODIFY;
	nfsstat3 st;
	int pfd;

	*own = false;
	*fd = -1;
	if (rr__nfsd_mode_decides(o, flags != O_RDONLY)) {
		if (rr__nfsd_access(c->s, &c->id, &o->st, want) != want)
			return NFS3ERR_ACCES;
		rr__nfsd_as_server(
			c); /* the check is made: open as ourselves */
		*fd = c->nowait ? rr__nfsd_file_fd_made(c->s->files, o->file,
							flags)
				: rr__nfsd_file_fd(c->s->files, o->file, flags);
		if (*fd == -EAGAIN && c->nowait)
			rr__nfsd_defer(c);
		return *fd < 0 ? rr__nfsd_errno(*fd) : NFS3_OK;
	}
	if (c->nowait) /* the caller's identity decides: a worker's job */
		return rr__nfsd_errno(rr__nfsd_defer(c));
	pfd = rr__nfsd_obj_fd(c, o);
	if (pfd < 0)
		return rr__nfsd_errno(pfd);
	st = rr__nfsd_may(c, &o->st, want);
	if (st)
		return st;
	*fd = rr__nfsd_reopen(pfd, flags);
	if (*fd < 0)
		return rr__nfsd_errno(*fd);
	*own = true;
	return NFS3_OK;
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
static ssize_t read_cached(struct nfsd_call *c, int fd, struct iovec *iov,
			   off_t off, dev_t dev)
{
	ssize_t got;

	if (atomic_load(&c->s->mem_fs_dev) == (uint64_t)dev + 1)
		return pread(fd, iov->iov_base, iov->iov_len, off);
	got = preadv2(fd, iov, 1, off, RWF_NOWAIT);
	if (got < 0 && errno == EOPNOTSUPP && in_memory(c->s, fd, dev))
		got = pread(fd, iov->iov_base, iov->iov_len, off);
	return got;
}

/*
 * Reads up to n bytes at off. Under c->nowait only what the page cache
 * holds (RWF_NOWAIT): a miss, or a short read before the end of the file
 * (the rest is not cached), defers the call to a worker, which reads it
 * all; so does any error, for the worker to answer.
 */
static ssize_t read_at(struct nfsd_call *c, int fd, void *buf, size_t n,
		       off_t off, const struct stat *st)
{
	struct iovec iov = {buf, n};
	off_t size = st->st_size;
	ssize_t got;

	if (!c->nowait)
		return pread(fd, buf, n, off);
	got = read_cached(c, fd, &iov, off, st->st_dev);
	if (got < 0 || ((size_t)got < n && off + got < size)) {
		errno = -rr__nfsd_defer(c);
		return -1;
	}
	return got;
}

static uint32_t do_read(struct nfsd_call *c, const READ3args *a)
{
	size_t cap;
	uint8_t *buf = rr_svc_bulk_buf(c->req, &cap);
	uint32_t want = a->count;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->file, &o);
	ssize_t n = 0;
	uint32_t rc;
	bool own = false;
	int fd = -1;

	if (st)
		return read_fail(c, st, -1);
	st = regular(&o.st);
	if (!st)
		st = io_fd(c, &o, O_RDONLY, &fd, &own);
	want = want < cap ? want : (uint32_t)cap;
	want = want < NFSD_MAX_IO ? want : NFSD_MAX_IO;
	/* No file reaches 2^63: such a READ is zero bytes at the end. */
	if (!st && want && a->offset <= (uint64)INT64_MAX)
		n = read_at(c, fd, buf, want, (off_t)a->offset, &o.st);
	if (!st && n < 0)
		st = rr__nfsd_errno(errno);
	if (c->defer)
		rc = RR_SYSTEM_ERR; /* not an answer: a worker reads it all */
	else if (st)
		rc = read_fail(c, st, o.fd);
	else
		rc = read_ok(c, &o.st, buf, (uint32_t)n,
			     a->offset + (uint64)n >= (uint64)o.st.st_size);
	if (own)
		close(fd);
	return rc;
}

uint32_t rr__nfsd_read(struct nfsd_call *c)
{
	size_t len;
	const void *args = rr_svc_args_xdr(c->req, &len);
	READ3args a = {0};
	uint32_t rc;
	XDR x;

	xdrmem_create(&x, (char *)args, (u_int)len, XDR_DECODE);
	if (!rr__xdr_READ3args(&x, &a)) {
		xdr_free((xdrproc_t)rr__xdr_READ3args, (char *)&a);
		atomic_fetch_add(&c->s->garbage_args, 1);
		return RR_GARBAGE_ARGS;
	}
	/*
	 * Copying a large READ takes longer than handing it to a worker,
	 * and workers copy several at once; the thread that receives calls
	 * keeps to small ones.
	 */
	if (c->nowait && a.count > NFSD_NOWAIT_READ_MAX) {
		rr__nfsd_defer(c);
		rc = RR_SYSTEM_ERR; /* not an answer: a worker reads it */
	} else {
		rc = do_read(c, &a);
	}
	xdr_free((xdrproc_t)rr__xdr_READ3args, (char *)&a);
	return rc;
}

/* WRITE3args without its data, and where the data is. */
struct wargs {
	nfs_fh3 file;
	offset3 offset;
	count3 count;
	stable_how stable;
	const uint8_t *data;
	u_int len;
};

static bool write_decode(struct nfsd_call *c, struct wargs *w)
{
	size_t len, blen;
	const uint8_t *args = rr_svc_args(c->req, &len);
	const uint8_t *bulk = rr_svc_arg_bulk(c->req, &blen);
	size_t pos;
	XDR x;

	xdrmem_create(&x, (char *)args, (u_int)len, XDR_DECODE);
	if (!rr__xdr_nfs_fh3(&x, &w->file) ||
	    !rr__xdr_offset3(&x, &w->offset) ||
	    !rr__xdr_count3(&x, &w->count) ||
	    !rr__xdr_stable_how(&x, &w->stable) || !xdr_u_int(&x, &w->len))
		return false;
	pos = xdr_getpos(&x);
	if (bulk) {
		/* by read chunk: the length word ends the inline XDR */
		w->data = bulk;
		return blen == w->len && pos == len;
	}
	w->data = args + pos;
	return len - pos >= w->len;
}

/*
 * RFC 1813 lets WRITE answer a count below the one asked for: when part
 * was written before an error (ENOSPC, EFBIG), that part is the answer
 * (*written), and the client's next WRITE meets the error.
 */
static nfsstat3 write_data(int fd, const struct wargs *w, count3 *written)
{
	nfsstat3 st = NFS3_OK;
	size_t done = 0;

	while (!st && done < w->count) {
		ssize_t n = pwrite(fd, w->data + done, w->count - done,
				   (off_t)(w->offset + done));

		if (n < 0 && errno != EINTR)
			st = rr__nfsd_errno(errno);
		else if (n > 0)
			done += (size_t)n;
	}
	if (st && done)
		st = NFS3_OK;
	*written = (count3)done;
	if (!st && w->stable == FILE_SYNC && fsync(fd))
		st = rr__nfsd_errno(errno);
	if (!st && w->stable == DATA_SYNC && fdatasync(fd))
		st = rr__nfsd_errno(errno);
	return st;
}

static nfsstat3 write_check(struct nfsd_call *c, const struct wargs *w,
			    const struct nfsd_obj *o)
{
	nfsstat3 st = regular(&o->st);

	if (st)
		return st;
	if (c->id.ro)
		return NFS3ERR_ROFS;
	if (w->count > w->len || w->stable > FILE_SYNC)
		return NFS3ERR_INVAL;
	if (w->offset > (uint64)INT64_MAX - w->count)
		return NFS3ERR_FBIG;
	return rr__nfsd_may(c, &o->st, ACCESS3_MODIFY);
}

static uint32_t do_write(struct nfsd_call *c, const struct wargs *w)
{
	WRITE3res r = {0};
	WRITE3resok *ok = &r.WRITE3res_u.resok;
	struct nfsd_obj o;
	bool own = false;
	int fd = -1;
	XDR x;

	r.status = rr__nfsd_resolve(c, &w->file, &o);
	if (r.status)
		o.fd = -1;
	else
		r.status = write_check(c, w, &o);
	if (!r.status)
		r.status = io_fd(c, &o, O_WRONLY, &fd, &own);
	if (!r.status)
		r.status = write_data(fd, w, &ok->count);
	if (own)
		close(fd);
	if (o.fd >= 0)
		rr__nfsd_wcc(&o.st, o.fd, &ok->file_wcc);
	ok->committed = w->stable;
	memcpy(ok->verf, c->s->write_verf, NFS3_WRITEVERFSIZE);
	res_xdr(c, &x);
	return finish(c, &x, rr__xdr_WRITE3res(&x, &r), NULL, 0);
}

uint32_t rr__nfsd_write(struct nfsd_call *c)
{
	struct wargs w = {0};
	uint32_t rc;

	if (!write_decode(c, &w)) {
		xdr_free((xdrproc_t)rr__xdr_nfs_fh3, (char *)&w.file);
		atomic_fetch_add(&c->s->garbage_args, 1);
		return RR_GARBAGE_ARGS;
	}
	rc = do_write(c, &w);
	xdr_free((xdrproc_t)rr__xdr_nfs_fh3, (char *)&w.file);
	return rc;
}
