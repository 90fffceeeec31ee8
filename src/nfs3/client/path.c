// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Path resolution inside the export, one LOOKUP per component (RFC 1813
 * section 3.3.3: the server never walks a path for us).
 *
 * Symbolic links met on the way are read and their target spliced in
 * front of what is left of the path, as a kernel's path walk does; an
 * absolute target starts again from the export's root, since that is the
 * only root this client knows. A budget of link expansions turns a loop
 * into -ELOOP. ".." is the server's to answer (it keeps us inside the
 * export), except at the root, where it stays put.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "nfsc.h"

#define MAX_LINKS 40

static bool fh_eq(const struct nfsc_fh *a, const struct nfsc_fh *b)
{
	return a->len == b->len && !memcmp(a->data, b->data, a->len);
}

int rr__nfsc_getattr(struct rr_nfs *n, const struct nfsc_fh *fh, fattr3 *attr)
{
	GETATTR3args a;
	GETATTR3res r = {0};
	int rc;

	nfsc_fh_arg(&a.object, fh);
	rc = rr__nfsc_call(n, NFSPROC3_GETATTR, (xdrproc_t)rr__xdr_GETATTR3args,
			   &a, (xdrproc_t)rr__xdr_GETATTR3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc)
		*attr = r.GETATTR3res_u.resok.obj_attributes;
	xdr_free((xdrproc_t)rr__xdr_GETATTR3res, &r);
	return rc;
}

/* One LOOKUP: the child's handle and attributes (fetched if not sent). */
int rr__nfsc_lookup1(struct rr_nfs *n, const struct nfsc_fh *dir,
		     const char *name, struct nfsc_fh *fh, fattr3 *attr)
{
	LOOKUP3args a = {.what.name = (char *)name};
	LOOKUP3res r = {0};
	bool have_attr = false;
	int rc;

	nfsc_fh_arg(&a.what.dir, dir);
	rc = rr__nfsc_call(n, NFSPROC3_LOOKUP, (xdrproc_t)rr__xdr_LOOKUP3args,
			   &a, (xdrproc_t)rr__xdr_LOOKUP3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc) {
		LOOKUP3resok *ok = &r.LOOKUP3res_u.resok;

		rc = rr__nfsc_fh_set(fh, &ok->object);
		have_attr = ok->obj_attributes.attributes_follow;
		if (have_attr)
			*attr = ok->obj_attributes.post_op_attr_u.attributes;
	}
	xdr_free((xdrproc_t)rr__xdr_LOOKUP3res, &r);
	if (!rc && !have_attr)
		rc = rr__nfsc_getattr(n, fh, attr);
	return rc;
}

static int readlink_fh(struct rr_nfs *n, const struct nfsc_fh *fh,
		       char **target)
{
	READLINK3args a;
	READLINK3res r = {0};
	int rc;

	nfsc_fh_arg(&a.symlink, fh);
	rc = rr__nfsc_call(n, NFSPROC3_READLINK,
			   (xdrproc_t)rr__xdr_READLINK3args, &a,
			   (xdrproc_t)rr__xdr_READLINK3res, &r, 8192);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc) {
		*target = rr_strdup(r.READLINK3res_u.resok.data);
		if (!*target)
			rc = -ENOMEM;
	}
	xdr_free((xdrproc_t)rr__xdr_READLINK3res, &r);
	return rc;
}

int rr__nfsc_readlink_fh(struct rr_nfs *n, const struct nfsc_fh *fh,
			 char **target)
{
	return readlink_fh(n, fh, target);
}

/* rest becomes target + "/" + rest; *restp is replaced (malloc'd). */
static int splice_link(char **bufp, const char **restp, const char *target)
{
	size_t tl = strlen(target), rl = strlen(*restp);
	char *nb = rr_malloc(tl + rl + 2);

	if (!nb)
		return -ENOMEM;
	memcpy(nb, target, tl);
	nb[tl] = '/';
	memcpy(nb + tl + 1, *restp, rl + 1);
	free(*bufp);
	*bufp = nb;
	*restp = nb;
	return 0;
}

struct walk {
	struct rr_nfs *n;
	struct nfsc_fh cur; /* the directory we are in */
	fattr3 cur_attr;
	char *buf; /* owns the path text being walked */
	const char *rest;
	int links;
};

/* Takes the next component into name[]; false at the end. */
static bool next_comp(struct walk *w, char *name, size_t cap, int *rc)
{
	const char *s = w->rest, *e;

	while (*s == '/')
		s++;
	if (!*s) {
		w->rest = s;
		return false;
	}
	e = strchrnul(s, '/');
	if ((size_t)(e - s) >= cap) {
		*rc = -ENAMETOOLONG;
		return false;
	}
	memcpy(name, s, (size_t)(e - s));
	name[e - s] = '\0';
	w->rest = e;
	return true;
}

static bool at_end(const char *rest)
{
	while (*rest == '/')
		rest++;
	return !*rest;
}

/* A symlink in the walk: splice its target in. */
static int follow_link(struct walk *w, const struct nfsc_fh *link)
{
	char *target = NULL;
	int rc;

	if (++w->links > MAX_LINKS)
		return -ELOOP;
	rc = readlink_fh(w->n, link, &target);
	if (!rc && target[0] == '/') {
		w->cur = w->n->root;
		rc = rr__nfsc_getattr(w->n, &w->cur, &w->cur_attr);
	}
	if (!rc)
		rc = splice_link(&w->buf, &w->rest, target);
	free(target);
	return rc;
}

static int walk_step(struct walk *w, const char *name, bool follow)
{
	struct nfsc_fh fh;
	fattr3 attr;
	int rc;

	if (!strcmp(name, "."))
		return 0;
	if (!strcmp(name, "..") && fh_eq(&w->cur, &w->n->root))
		return 0;
	if (w->cur_attr.type != NF3DIR)
		return -ENOTDIR;
	rc = rr__nfsc_lookup1(w->n, &w->cur, name, &fh, &attr);
	if (rc)
		return rc;
	if (attr.type == NF3LNK && (follow || !at_end(w->rest)))
		return follow_link(w, &fh);
	w->cur = fh;
	w->cur_attr = attr;
	return 0;
}

int rr__nfsc_lookup_path(struct rr_nfs *n, const char *path, bool follow,
			 struct nfsc_fh *fh, fattr3 *attr)
{
	struct walk w = {.n = n, .cur = n->root};
	char name[NAME_MAX + 1];
	int rc;

	w.buf = rr_strdup(path ? path : "");
	if (!w.buf)
		return -ENOMEM;
	w.rest = w.buf;
	rc = rr__nfsc_getattr(n, &w.cur, &w.cur_attr);
	while (!rc && next_comp(&w, name, sizeof(name), &rc))
		rc = walk_step(&w, name, follow);
	free(w.buf);
	if (rc)
		return rc;
	*fh = w.cur;
	if (attr)
		*attr = w.cur_attr;
	return 0;
}

int rr__nfsc_lookup_parent(struct rr_nfs *n, const char *path,
			   struct nfsc_fh *dir, char **name)
{
	char *p = rr_strdup(path ? path : ""), *slash, *base;
	size_t len = strlen(p ? p : "");
	fattr3 attr;
	int rc;

	if (!p)
		return -ENOMEM;
	while (len > 1 && p[len - 1] == '/')
		p[--len] = '\0';
	slash = strrchr(p, '/');
	base = slash ? slash + 1 : p;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		free(p);
		return -EINVAL;
	}
	if (strlen(base) > NAME_MAX) {
		free(p);
		return -ENAMETOOLONG;
	}
	*name = rr_strdup(base);
	if (slash)
		slash[1] = '\0';
	else
		p[0] = '\0';
	rc = *name ? rr__nfsc_lookup_path(n, p, true, dir, &attr) : -ENOMEM;
	if (!rc && attr.type != NF3DIR)
		rc = -ENOTDIR;
	free(p);
	if (rc) {
		free(*name);
		*name = NULL;
	}
	return rc;
}
