/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * READDIR and READDIRPLUS (RFC 1813 sections 3.3.16-3.3.17).
 *
 * A cookie is the directory offset the kernel gives each entry (d_off,
 * which seekdir takes back): file systems keep those stable while the
 * directory changes (ext4 hashes names, tmpfs and others keep offsets), so
 * a listing resumes where it stopped without state in the server. The
 * cookie verifier is a keyed hash of the directory's identity: constant
 * for one directory across restarts, so a client's cookies stay good, yet
 * a cookie of one directory is refused in another.
 *
 * Sizes are counted as the XDR they become: the reply must fit the
 * client's count (or maxcount) and our results buffer.
 */
#include "nfs3/server/nfsd.h"

#include "base/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define FATTR_XDR   84
#define POSTATTR    (4 + FATTR_XDR)
#define ENTRY_XDR   24 /* follows, fileid, name length, cookie */
#define POSTFH_XDR  (4 + 4 + NFSD_FH_LEN)
#define RESOK_FIXED (4 + POSTATTR + NFS3_COOKIEVERFSIZE + 4 + 4)

struct rd {
	const struct rr_nfs3_server *s;
	struct nfsd_obj dir;
	int pfd;
	DIR *dp;
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
	int fd;

	r->s = c->s;
	r->pfd = -1;
	r->dp = NULL;
	if (st)
		return st;
	if (!S_ISDIR(r->dir.st.st_mode))
		return NFS3ERR_NOTDIR;
	cookie_verf(c, &r->dir.st, ours);
	if (ck && memcmp(verf, ours, NFS3_COOKIEVERFSIZE))
		return NFS3ERR_BAD_COOKIE;
	r->pfd = rr__nfsd_obj_fd(c, &r->dir);
	if (r->pfd < 0)
		return rr__nfsd_errno(r->pfd);
	st = rr__nfsd_may(c, &r->dir.st, ACCESS3_READ);
	if (st)
		return st;
	fd = rr__nfsd_reopen(r->pfd, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return rr__nfsd_errno(fd);
	/* fdopendir allocates its DIR: it fails when the injector says so */
	r->dp = RR_ALLOC_FAILS() ? NULL : fdopendir(fd);
	if (!r->dp) {
		close(fd);
		return NFS3ERR_SERVERFAULT;
	}
	if (ck)
		seekdir(r->dp, (long)ck);
	return NFS3_OK;
}

static void rd_close(struct rd *r, post_op_attr *attr)
{
	rr__nfsd_post_attr_fd(r->pfd, attr);
	if (r->dp)
		closedir(r->dp);
}

/*
 * The next entry if it fits in need more bytes (dneed of dircount);
 * NULL at the end (eof set) or when full. telldir() after a refused entry
 * is rewound so that nothing read is lost.
 */
static struct dirent *rd_next(struct rd *r, size_t *need, size_t extra)
{
	long pos = telldir(r->dp);
	struct dirent *d;
	size_t n;

	errno = 0;
	d = readdir(r->dp);
	if (!d) {
		r->err = errno;
		r->eof = errno == 0;
		return NULL;
	}
	n = ENTRY_XDR + xdr_len(strlen(d->d_name));
	if (r->used + n + extra > r->cap ||
	    (r->dcap && r->dused + n > r->dcap)) {
		seekdir(r->dp, pos);
		return NULL;
	}
	r->used += n + extra;
	r->dused += n;
	*need = n;
	return d;
}

static nfsstat3 rd_status(struct rd *r, bool any)
{
	if (any || r->eof)
		return NFS3_OK;
	return r->err ? rr__nfsd_errno(r->err) : NFS3ERR_TOOSMALL;
}

/* "." and ".." report the directory and its parent; the root's is itself. */
static fileid3 entry_id(const struct rd *r, const struct dirent *d)
{
	if (!strcmp(d->d_name, "..") && rr__nfsd_is_root(r->s, &r->dir.st))
		return (fileid3)r->dir.st.st_ino;
	return (fileid3)d->d_ino;
}

nfsstat3 rr__nfsd_readdir(struct nfsd_call *c, void *args, void *res)
{
	READDIR3args *a = args;
	READDIR3res *out = res;
	READDIR3resok *ok = &out->READDIR3res_u.resok;
	entry3 **tail = &ok->reply.entries;
	struct rd r = {.cap = res_cap(c, a->count), .used = RESOK_FIXED};
	nfsstat3 st = rd_open(c, &a->dir, a->cookie, a->cookieverf, &r);
	struct dirent *d;
	bool any = false;
	size_t n;

	while (!st && (d = rd_next(&r, &n, 0))) {
		entry3 *e = rr__nfsd_alloc(c, sizeof(*e));

		if (!e || !(e->name = rr__nfsd_strdup(c, d->d_name))) {
			st = NFS3ERR_SERVERFAULT;
			break;
		}
		e->fileid = entry_id(&r, d);
		e->cookie = (cookie3)d->d_off;
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
	int rc;

	e->name_attributes.attributes_follow = FALSE;
	e->name_handle.handle_follows = FALSE;
	if (!strcmp(e->name, ".")) {
		o = r->dir;
		rc = 0;
	} else if (!strcmp(e->name, "..")) {
		rc = rr__nfsd_obj_parent(c, &r->dir, &o);
	} else {
		rr__nfsd_obj_place(&o, &r->dir, e->name);
		rc = rr__nfsd_stat(dirfd(r->dp), e->name, &o.st, &o.birth);
	}
	if (rc)
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
	struct dirent *d;
	bool any = false;
	size_t n;

	while (!st && (d = rd_next(&r, &n, POSTATTR + POSTFH_XDR))) {
		entryplus3 *e = rr__nfsd_alloc(c, sizeof(*e));

		if (!e || !(e->name = rr__nfsd_strdup(c, d->d_name))) {
			st = NFS3ERR_SERVERFAULT;
			break;
		}
		e->fileid = entry_id(&r, d);
		e->cookie = (cookie3)d->d_off;
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
