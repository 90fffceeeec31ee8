/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * READDIR and READDIRPLUS (RFC 1813 sections 3.3.16-3.3.17).
 *
 * A cookie is the backend's (backend.h): stable while the directory
 * changes, so a listing resumes where it stopped without state in the
 * server. The cookie verifier is a keyed hash of the directory's identity:
 * constant for one directory across restarts, so a client's cookies stay good,
 * yet a cookie of one directory is refused in another.
 *
 * Sizes are counted as the XDR they become: the reply must fit the
 * client's count (or maxcount) and our results buffer.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <string.h>

#define FATTR_XDR   84
#define POSTATTR    (4 + FATTR_XDR)
#define ENTRY_XDR   24 /* follows, fileid, name length, cookie */
#define POSTFH_XDR  (4 + 4 + NFSD_FH_LEN)
#define RESOK_FIXED (4 + POSTATTR + NFS3_COOKIEVERFSIZE + 4 + 4)

struct rd {
	const struct rr_nfs3_server *s;
	struct nfsd_call *c;
	struct nfsd_obj dir;
	bool acted; /* the call acts on dir: its attributes can be had */
	struct nfsd_be_dir *dp;
	size_t cap, used;   /* whole reply */
	size_t dcap, dused; /* READDIRPLUS dircount */
	bool eof;
	int err; /* readdir's errno when it failed */
};

static void cookie_verf(struct nfsd_call *c, const struct stat *st,
			cookieverf3 out)
{
	uint64_t id[2] = {(uint64_t)st->st_dev, (uint64_t)st->st_ino};

	rr__nfsd_siphash(c->s->key, id, sizeof(id), (uint8_t *)out);
}

static size_t xdr_len(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static size_t res_cap(struct nfsd_call *c, count3 count)
{
	size_t cap;

	rr_svc_res_buf(c->req, &cap);
	return count < cap ? count : cap;
}

static nfsstat3 rd_open(struct nfsd_call *c, const nfs_fh3 *fh, cookie3 ck,
			const cookieverf3 verf, struct rd *r)
{
	cookieverf3 ours;
	nfsstat3 st = rr__nfsd_resolve(c, fh, &r->dir);
	int rc;

	r->s = c->s;
	r->c = c;
	r->acted = false;
	r->dp = NULL;
	if (st)
		return st;
	if (!S_ISDIR(r->dir.st.st_mode))
		return NFS3ERR_NOTDIR;
	cookie_verf(c, &r->dir.st, ours);
	if (ck && memcmp(verf, ours, NFS3_COOKIEVERFSIZE))
		return NFS3ERR_BAD_COOKIE;
	rc = rr__nfsd_act(c, &r->dir);
	if (rc)
		return rr__nfsd_errno(rc);
	r->acted = true;
	st = rr__nfsd_may(c, &r->dir.st, ACCESS3_READ);
	if (st)
		return st;
	rc = rr__nfsd_be(c)->opendir(c, &r->dir, ck, &r->dp);
	if (rc == -ENOMEM)
		return NFS3ERR_SERVERFAULT;
	return rr__nfsd_errno(rc);
}

static void rd_close(struct rd *r, post_op_attr *attr)
{
	rr__nfsd_post_attr_obj(r->c, r->acted ? &r->dir : NULL, attr);
	if (r->dp)
		rr__nfsd_be(r->c)->closedir(r->dp);
}

/*
 * The next entry into *d if it fits in need more bytes (dneed of
 * dircount); false at the end (eof set) or when full. A refused entry is
 * sought back to, so that nothing read is lost.
 */
static bool rd_next(struct rd *r, struct nfsd_be_dirent *d, size_t *need,
		    size_t extra)
{
	const struct nfsd_be_ops *be = rr__nfsd_be(r->c);
	int rc = be->readdir(r->dp, d);
	size_t n;

	if (rc <= 0) {
		r->err = -rc;
		r->eof = rc == 0;
		return false;
	}
	n = ENTRY_XDR + xdr_len(strlen(d->name));
	if (r->used + n + extra > r->cap ||
	    (r->dcap && r->dused + n > r->dcap)) {
		be->seekdir(r->dp, d->at);
		return false;
	}
	r->used += n + extra;
	r->dused += n;
	*need = n;
	return true;
}

static nfsstat3 rd_status(struct rd *r, bool any)
{
	if (any || r->eof)
		return NFS3_OK;
	return r->err ? rr__nfsd_errno(r->err) : NFS3ERR_TOOSMALL;
}

/* "." and ".." report the directory and its parent; the root's is itself. */
static fileid3 entry_id(const struct rd *r, const struct nfsd_be_dirent *d)
{
	if (!strcmp(d->name, "..") && rr__nfsd_is_root(r->s, &r->dir.st))
		return (fileid3)r->dir.st.st_ino;
	return (fileid3)d->fileid;
}

nfsstat3 rr__nfsd_readdir(struct nfsd_call *c, void *args, void *res)
{
	READDIR3args *a = args;
	READDIR3res *out = res;
	READDIR3resok *ok = &out->READDIR3res_u.resok;
	entry3 **tail = &ok->reply.entries;
	struct rd r = {.cap = res_cap(c, a->count), .used = RESOK_FIXED};
	nfsstat3 st = rd_open(c, &a->dir, a->cookie, a->cookieverf, &r);
	struct nfsd_be_dirent d;
	bool any = false;
	size_t n;

	while (!st && rd_next(&r, &d, &n, 0)) {
		entry3 *e = rr__nfsd_alloc(c, sizeof(*e));

		if (!e || !(e->name = rr__nfsd_strdup(c, d.name))) {
			st = NFS3ERR_SERVERFAULT;
			break;
		}
		e->fileid = entry_id(&r, &d);
		e->cookie = (cookie3)d.cookie;
		*tail = e;
		tail = &e->nextentry;
		any = true;
	}
	if (!st)
		st = rd_status(&r, any);
	if (!st) {
		cookie_verf(c, &r.dir.st, ok->cookieverf);
		ok->reply.eof = r.eof;
	}
	/* dir_attributes is the first member of both arms */
	rd_close(&r, &ok->dir_attributes);
	return st;
}

/* Attributes and handle of one entry; left out when it cannot be had. */
static void plus_attrs(struct nfsd_call *c, struct rd *r, entryplus3 *e)
{
	struct nfsd_obj o;

	e->name_attributes.attributes_follow = FALSE;
	e->name_handle.handle_follows = FALSE;
	if (rr__nfsd_be(c)->lookup(c, &r->dir, e->name, &o, 0))
		return;
	rr__nfsd_post_attr(&o.st, &e->name_attributes);
	e->name_handle.handle_follows =
		rr__nfsd_make_fh(c, &o, &e->name_handle.post_op_fh3_u.handle) ==
		0;
}

nfsstat3 rr__nfsd_readdirplus(struct nfsd_call *c, void *args, void *res)
{
	READDIRPLUS3args *a = args;
	READDIRPLUS3res *out = res;
	READDIRPLUS3resok *ok = &out->READDIRPLUS3res_u.resok;
	entryplus3 **tail = &ok->reply.entries;
	struct rd r = {.cap = res_cap(c, a->maxcount),
		       .used = RESOK_FIXED,
		       .dcap = a->dircount};
	nfsstat3 st = rd_open(c, &a->dir, a->cookie, a->cookieverf, &r);
	struct nfsd_be_dirent d;
	bool any = false;
	size_t n;

	while (!st && rd_next(&r, &d, &n, POSTATTR + POSTFH_XDR)) {
		entryplus3 *e = rr__nfsd_alloc(c, sizeof(*e));

		if (!e || !(e->name = rr__nfsd_strdup(c, d.name))) {
			st = NFS3ERR_SERVERFAULT;
			break;
		}
		e->fileid = entry_id(&r, &d);
		e->cookie = (cookie3)d.cookie;
		plus_attrs(c, &r, e);
		*tail = e;
		tail = &e->nextentry;
		any = true;
	}
	if (!st)
		st = rd_status(&r, any);
	if (!st) {
		cookie_verf(c, &r.dir.st, ok->cookieverf);
		ok->reply.eof = r.eof;
	}
	rd_close(&r, &ok->dir_attributes);
	return st;
}
