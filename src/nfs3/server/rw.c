/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * READ and WRITE (RFC 1813 sections 3.3.6-3.3.7), whose data is the
 * DDP-eligible item of RFC 8267: READ encodes READ3resok up to and
 * including the data's length word and hands the bytes over apart, read
 * straight into the transport's bulk buffer; WRITE decodes WRITE3args up to
 * the data's length word and takes the bytes from the read chunk when the
 * transport pulled one, else from the XDR right after that word.
 *
 * Both open the file in the backend for the one call, and read into (or
 * write from) the transport's buffers themselves.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

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

static uint32_t read_fail(struct nfsd_call *c, nfsstat3 st, struct nfsd_obj *o)
{
	READ3res r = {.status = st};
	XDR x;

	rr__nfsd_post_attr_obj(c, o, &r.READ3res_u.resfail.file_attributes);
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

/* o opened in the backend for one access (NFSD_BE_READ or _WRITE). */
static nfsstat3 io_open(struct nfsd_call *c, struct nfsd_obj *o,
			uint32_t access, struct nfsd_be_file *f, bool *opened)
{
	int rc;

	*f = (struct nfsd_be_file){.access = access};
	rc = rr__nfsd_be(c)->open(c, o, f);
	*opened = rc == 0;
	return rr__nfsd_errno(rc);
}

static uint32_t do_read(struct nfsd_call *c, const READ3args *a)
{
	size_t cap;
	uint8_t *buf = rr_svc_bulk_buf(c->req, &cap);
	uint32_t want = a->count;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->file, &o);
	struct nfsd_be_file f;
	struct iovec iov;
	ssize_t n = 0;
	uint32_t rc;
	bool opened = false;

	if (st)
		return read_fail(c, st, NULL);
	st = regular(&o.st);
	if (!st)
		st = io_open(c, &o, NFSD_BE_READ, &f, &opened);
	want = want < cap ? want : (uint32_t)cap;
	want = want < NFSD_MAX_IO ? want : NFSD_MAX_IO;
	iov = (struct iovec){buf, want};
	/* No file reaches 2^63: such a READ is zero bytes at the end. */
	if (!st && want && a->offset <= (uint64)INT64_MAX)
		n = rr__nfsd_be(c)->read(c, &f, &iov, 1, a->offset);
	if (!st && n < 0)
		st = rr__nfsd_errno((int)n);
	if (c->defer)
		rc = RR_SYSTEM_ERR; /* not an answer: a worker reads it all */
	else if (st)
		rc = read_fail(c, st, &o);
	else
		rc = read_ok(c, &o.st, buf, (uint32_t)n,
			     a->offset + (uint64)n >= (uint64)o.st.st_size);
	if (opened)
		rr__nfsd_be(c)->close(c, &f);
	return rc;
}

uint32_t rr__nfsd_read(struct nfsd_call *c)
{
	size_t len;
	const void *args = rr_svc_args_xdr(c->req, &len);
	char fh[NFS3_FHSIZE];
	/* xdr_bytes allocates only for a NULL buffer: nothing is freed */
	READ3args a = {.file.data.data_val = fh};
	uint32_t rc;
	XDR x;

	xdrmem_create(&x, (char *)args, (u_int)len, XDR_DECODE);
	if (!rr__xdr_READ3args(&x, &a)) {
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
 * was written before an error (ENOSPC, EFBIG), that part is the answer,
 * and the client's next WRITE meets the error.
 */
static nfsstat3 write_data(struct nfsd_call *c, struct nfsd_be_file *f,
			   const struct wargs *w, count3 *written)
{
	struct iovec iov = {(void *)w->data, w->count};
	ssize_t n = rr__nfsd_be(c)->write(c, f, &iov, 1, w->offset,
					  (enum nfsd_be_stable)w->stable);

	if (n < 0)
		return rr__nfsd_errno((int)n);
	*written = (count3)n;
	return NFS3_OK;
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
	struct nfsd_be_file f;
	struct stat after;
	bool opened = false, resolved;
	XDR x;

	r.status = rr__nfsd_resolve(c, &w->file, &o);
	resolved = r.status == NFS3_OK;
	if (!r.status)
		r.status = write_check(c, w, &o);
	if (!r.status)
		r.status = io_open(c, &o, NFSD_BE_WRITE, &f, &opened);
	if (!r.status)
		r.status = write_data(c, &f, w, &ok->count);
	if (opened)
		rr__nfsd_be(c)->close(c, &f);
	/* wcc data only where the backend can tell the attributes after */
	if (resolved && !rr__nfsd_be(c)->getattr(c, &o, &after))
		rr__nfsd_wcc(c, &o.st, &o, &ok->file_wcc);
	ok->committed = w->stable;
	memcpy(ok->verf, c->s->write_verf, NFS3_WRITEVERFSIZE);
	res_xdr(c, &x);
	return finish(c, &x, rr__xdr_WRITE3res(&x, &r), NULL, 0);
}

uint32_t rr__nfsd_write(struct nfsd_call *c)
{
	char fh[NFS3_FHSIZE];
	/* as READ's: the handle decoded in place, nothing to free */
	struct wargs w = {.file.data.data_val = fh};

	if (!write_decode(c, &w)) {
		atomic_fetch_add(&c->s->garbage_args, 1);
		return RR_GARBAGE_ARGS;
	}
	return do_write(c, &w);
}
