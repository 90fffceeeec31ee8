// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Directories: the whole listing is read at open with READDIRPLUS
 * (RFC 1813 section 3.3.17), following cookies and handing the server's
 * cookie verifier back, so a listing is one consistent pass that later
 * reads cannot fail half-way; a server without READDIRPLUS (NOTSUPP) gets
 * READDIR and the entries come without attributes. "." and ".." are left
 * out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "nfsc.h"

#define RDP_MAXCOUNT (64 * 1024)
/* A server whose listing never ends gets cut off here. */
#define MAX_ENTRIES (16u << 20)

struct rr_nfs_dir {
	struct rr_nfs_dirent *ents;
	size_t n, cap, pos;
};

static int add_name(struct rr_nfs_dir *d, const char *name, uint64_t ino,
		    uint64_t cookie, struct rr_nfs_dirent **out)
{
	struct rr_nfs_dirent *de;

	*out = NULL;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		void *p = rr_realloc(d->ents, cap * sizeof(*d->ents));

		if (!p)
			return -ENOMEM;
		d->ents = p;
		d->cap = cap;
	}
	de = &d->ents[d->n];
	memset(de, 0, sizeof(*de));
	de->name = rr_strdup(name);
	if (!de->name)
		return -ENOMEM;
	de->ino = ino;
	de->cookie = cookie;
	d->n++;
	*out = de;
	return 0;
}

static int add_entry(struct rr_nfs_dir *d, const entryplus3 *e)
{
	const post_op_attr *pa = &e->name_attributes;
	struct rr_nfs_dirent *de;
	int rc = add_name(d, e->name, e->fileid, e->cookie, &de);

	if (rc || !de)
		return rc;
	de->has_attr = pa->attributes_follow;
	if (de->has_attr)
		rr__nfsc_fattr_to_stat(&pa->post_op_attr_u.attributes, &de->st);
	return 0;
}

/* One READDIRPLUS round; *cookie and verf move on, *eof at the end. */
static int rdp_round(struct rr_nfs *n, const struct nfsc_fh *fh,
		     struct rr_nfs_dir *d, cookie3 *cookie, char *verf,
		     bool *eof)
{
	READDIRPLUS3args a = {.cookie = *cookie,
			      .dircount = n->dtpref,
			      .maxcount = RDP_MAXCOUNT};
	READDIRPLUS3res r = {0};
	int rc;

	nfsc_fh_arg(&a.dir, fh);
	memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	rc = rr__nfsc_call(n, NFSPROC3_READDIRPLUS,
			   (xdrproc_t)rr__xdr_READDIRPLUS3args, &a,
			   (xdrproc_t)rr__xdr_READDIRPLUS3res, &r,
			   RDP_MAXCOUNT + 1024);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc) {
		READDIRPLUS3resok *ok = &r.READDIRPLUS3res_u.resok;
		entryplus3 *e = ok->reply.entries;

		memcpy(verf, ok->cookieverf, NFS3_COOKIEVERFSIZE);
		*eof = ok->reply.eof;
		if (!e && !*eof)
			rc = -EPROTO; /* nothing and no end: no progress */
		for (; !rc && e; e = e->nextentry) {
			rc = add_entry(d, e);
			*cookie = e->cookie;
		}
	}
	xdr_free((xdrproc_t)rr__xdr_READDIRPLUS3res, &r);
	return rc;
}

/* READDIR, for servers without READDIRPLUS: names without attributes. */
static int rd_round(struct rr_nfs *n, const struct nfsc_fh *fh,
		    struct rr_nfs_dir *d, cookie3 *cookie, char *verf,
		    bool *eof)
{
	READDIR3args a = {.cookie = *cookie, .count = RDP_MAXCOUNT};
	READDIR3res r = {0};
	struct rr_nfs_dirent *de;
	int rc;

	nfsc_fh_arg(&a.dir, fh);
	memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	rc = rr__nfsc_call(n, NFSPROC3_READDIR, (xdrproc_t)rr__xdr_READDIR3args,
			   &a, (xdrproc_t)rr__xdr_READDIR3res, &r,
			   RDP_MAXCOUNT + 1024);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc) {
		READDIR3resok *ok = &r.READDIR3res_u.resok;
		entry3 *e = ok->reply.entries;

		memcpy(verf, ok->cookieverf, NFS3_COOKIEVERFSIZE);
		*eof = ok->reply.eof;
		if (!e && !*eof)
			rc = -EPROTO;
		for (; !rc && e; e = e->nextentry) {
			rc = add_name(d, e->name, e->fileid, e->cookie, &de);
			*cookie = e->cookie;
		}
	}
	xdr_free((xdrproc_t)rr__xdr_READDIR3res, &r);
	return rc;
}

/* Every round of one listing; READDIR when READDIRPLUS is not there. */
static int read_all(struct rr_nfs *n, const struct nfsc_fh *fh,
		    struct rr_nfs_dir *d)
{
	char verf[NFS3_COOKIEVERFSIZE] = {0};
	cookie3 cookie = 0;
	bool eof = false, plus = true;
	int rc = 0;

	for (uint32_t i = 0; !rc && !eof; i++) {
		cookie3 last = cookie;

		rc = plus ? rdp_round(n, fh, d, &cookie, verf, &eof)
			  : rd_round(n, fh, d, &cookie, verf, &eof);
		/* each round must move on, and a listing must end */
		if (!rc && !eof && (cookie == last || d->n > MAX_ENTRIES))
			rc = -EPROTO;
		if (rc == -EOPNOTSUPP && plus && !i) {
			plus = false;
			rc = 0;
		}
	}
	return rc;
}

static int do_opendir(struct rr_nfs *n, const char *path,
		      struct rr_nfs_dir **out)
{
	struct rr_nfs_dir *d;
	struct nfsc_fh fh;
	fattr3 attr;
	int rc = rr__nfsc_lookup_path(n, path, true, &fh, &attr);

	if (!rc && attr.type != NF3DIR)
		rc = -ENOTDIR;
	if (rc)
		return rc;
	d = rr_calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	rc = read_all(n, &fh, d);
	if (rc) {
		rr_nfs_closedir(d);
		return rc;
	}
	*out = d;
	return 0;
}

int rr_nfs_opendir(struct rr_nfs *n, const char *path, struct rr_nfs_dir **out)
{
	return NFSC_SAY(do_opendir(n, path, out), "opendir %s", path);
}

const struct rr_nfs_dirent *rr_nfs_readdir(struct rr_nfs_dir *d)
{
	return d->pos < d->n ? &d->ents[d->pos++] : NULL;
}

void rr_nfs_closedir(struct rr_nfs_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free((char *)d->ents[i].name);
	free(d->ents);
	free(d);
}
