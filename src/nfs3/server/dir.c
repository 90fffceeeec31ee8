/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The procedures that change a directory (RFC 1813 sections 3.3.8-3.3.15):
 * CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK. Each asks
 * the backend to change one directory by a single checked name.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

/* A directory a call will change, and its attributes before. */
struct dirop {
	struct nfsd_obj dir;
	bool acted; /* the call acts on dir: its attributes can be had */
};

static nfsstat3 dirop_begin(struct nfsd_call *c, const diropargs3 *a,
			    struct dirop *d)
{
	nfsstat3 st = rr__nfsd_resolve(c, &a->dir, &d->dir);
	int rc;

	d->acted = false;
	if (st)
		return st;
	rc = rr__nfsd_act(c, &d->dir);
	if (rc)
		return rr__nfsd_errno(rc);
	d->acted = true;
	if (!S_ISDIR(d->dir.st.st_mode))
		return NFS3ERR_NOTDIR;
	if (c->id.ro)
		return NFS3ERR_ROFS;
	st = rr__nfsd_name_ok(a->name);
	if (st)
		return st;
	return rr__nfsd_may(c, &d->dir.st, ACCESS3_MODIFY | ACCESS3_LOOKUP);
}

static void dirop_end(struct nfsd_call *c, struct dirop *d, wcc_data *w)
{
	if (d->acted)
		rr__nfsd_wcc(c, &d->dir.st, &d->dir, w);
	else
		rr__nfsd_wcc(c, NULL, NULL, w);
}

/* The new object's handle and attributes (post_op: may be left out). */
static void new_obj(struct nfsd_call *c, struct dirop *d, const char *name,
		    post_op_fh3 *fh, post_op_attr *attr)
{
	struct nfsd_obj o;

	fh->handle_follows = FALSE;
	attr->attributes_follow = FALSE;
	if (rr__nfsd_be(c)->lookup(c, &d->dir, name, &o, 0))
		return;
	rr__nfsd_post_attr(&o.st, attr);
	fh->handle_follows =
		rr__nfsd_make_fh(c, &o, &fh->post_op_fh3_u.handle) == 0;
}

/* sattr3 on the child just made (mode included: the umask ate some). */
static nfsstat3 set_child(struct nfsd_call *c, struct dirop *d,
			  const char *name, const sattr3 *a)
{
	struct nfsd_obj o;
	int rc = rr__nfsd_be(c)->lookup(c, &d->dir, name, &o,
					NFSD_BE_LOOKUP_ACT);

	return rc ? rr__nfsd_errno(rc) : rr__nfsd_sattr(c, &o, a);
}

static mode_t mode_of(const sattr3 *a, mode_t dflt)
{
	return a->mode.set_it ? a->mode.set_mode3_u.mode & 07777 : dflt;
}

/* EXCLUSIVE: the verifier lives in atime and mtime (seconds), as usual. */
static void verf_times(const createverf3 v, struct nfsd_be_sattr *b)
{
	uint32_t a, m;

	memcpy(&a, v, 4);
	memcpy(&m, v + 4, 4);
	*b = (struct nfsd_be_sattr){.atime = {.tv_sec = a},
				    .mtime = {.tv_sec = m}};
}

static int set_verf(struct nfsd_call *c, struct dirop *d, const char *name,
		    const struct nfsd_be_sattr *b)
{
	struct nfsd_obj o;
	int rc = rr__nfsd_be(c)->lookup(c, &d->dir, name, &o,
					NFSD_BE_LOOKUP_ACT);

	return rc ? rc : rr__nfsd_be(c)->setattr(c, &o, b);
}

static nfsstat3 create_excl(struct nfsd_call *c, struct dirop *d,
			    const char *name, const createverf3 v)
{
	const struct nfsd_be_ops *be = rr__nfsd_be(c);
	struct nfsd_be_sattr b;
	struct nfsd_obj o;
	int rc;

	verf_times(v, &b);
	rc = be->mknod(c, &d->dir, name, S_IFREG | 0600, 0);
	if (!rc)
		return rr__nfsd_errno(set_verf(c, d, name, &b));
	if (rc != -EEXIST)
		return rr__nfsd_errno(rc);
	/* a retransmission of our own create succeeds again */
	if (!be->lookup(c, &d->dir, name, &o, 0) && S_ISREG(o.st.st_mode) &&
	    o.st.st_atim.tv_sec == b.atime.tv_sec &&
	    o.st.st_mtim.tv_sec == b.mtime.tv_sec)
		return NFS3_OK;
	return NFS3ERR_EXIST;
}

static nfsstat3 create_file(struct nfsd_call *c, struct dirop *d,
			    const char *name, const createhow3 *how)
{
	const struct nfsd_be_ops *be = rr__nfsd_be(c);
	const sattr3 *a = &how->createhow3_u.obj_attributes;
	struct nfsd_obj o;
	int rc;

	if (how->mode == EXCLUSIVE)
		return create_excl(c, d, name, how->createhow3_u.verf);
	if (how->mode != UNCHECKED && how->mode != GUARDED)
		return NFS3ERR_INVAL;
	rc = be->mknod(c, &d->dir, name, S_IFREG | mode_of(a, 0644), 0);
	if (rc) {
		if (rc != -EEXIST || how->mode == GUARDED)
			return rr__nfsd_errno(rc);
		rc = be->lookup(c, &d->dir, name, &o, 0);
		if (rc)
			return rr__nfsd_errno(rc);
		if (!S_ISREG(o.st.st_mode))
			return NFS3ERR_EXIST;
	}
	return set_child(c, d, name, a);
}

nfsstat3 rr__nfsd_create(struct nfsd_call *c, void *args, void *res)
{
	CREATE3args *a = args;
	CREATE3res *r = res;
	CREATE3resok *ok = &r->CREATE3res_u.resok;
	struct dirop d;
	nfsstat3 st = dirop_begin(c, &a->where, &d);

	if (!st)
		st = create_file(c, &d, a->where.name, &a->how);
	if (!st)
		new_obj(c, &d, a->where.name, &ok->obj, &ok->obj_attributes);
	dirop_end(c, &d, st ? &r->CREATE3res_u.resfail.dir_wcc : &ok->dir_wcc);
	return st;
}

nfsstat3 rr__nfsd_mkdir(struct nfsd_call *c, void *args, void *res)
{
	MKDIR3args *a = args;
	MKDIR3res *r = res;
	MKDIR3resok *ok = &r->MKDIR3res_u.resok;
	const char *name = a->where.name;
	struct dirop d;
	nfsstat3 st = dirop_begin(c, &a->where, &d);

	if (!st)
		st = rr__nfsd_errno(rr__nfsd_be(c)->mkdir(
			c, &d.dir, name, mode_of(&a->attributes, 0755)));
	if (!st)
		st = set_child(c, &d, name, &a->attributes);
	if (!st)
		new_obj(c, &d, name, &ok->obj, &ok->obj_attributes);
	dirop_end(c, &d, st ? &r->MKDIR3res_u.resfail.dir_wcc : &ok->dir_wcc);
	return st;
}

nfsstat3 rr__nfsd_symlink(struct nfsd_call *c, void *args, void *res)
{
	SYMLINK3args *a = args;
	SYMLINK3res *r = res;
	SYMLINK3resok *ok = &r->SYMLINK3res_u.resok;
	const char *name = a->where.name;
	struct dirop d;
	nfsstat3 st = dirop_begin(c, &a->where, &d);

	if (!st && !*a->symlink.symlink_data)
		st = NFS3ERR_INVAL;
	if (!st)
		st = rr__nfsd_errno(rr__nfsd_be(c)->symlink(
			c, &d.dir, name, a->symlink.symlink_data));
	if (!st)
		new_obj(c, &d, name, &ok->obj, &ok->obj_attributes);
	dirop_end(c, &d, st ? &r->SYMLINK3res_u.resfail.dir_wcc : &ok->dir_wcc);
	return st;
}

static nfsstat3 make_node(struct nfsd_call *c, struct dirop *d,
			  const char *name, const mknoddata3 *w)
{
	const sattr3 *a = &w->mknoddata3_u.pipe_attributes;
	mode_t kind;
	dev_t dev = 0;
	int rc;

	switch (w->type) {
	case NF3CHR:
	case NF3BLK:
		a = &w->mknoddata3_u.device.dev_attributes;
		kind = w->type == NF3CHR ? S_IFCHR : S_IFBLK;
		dev = makedev(w->mknoddata3_u.device.spec.specdata1,
			      w->mknoddata3_u.device.spec.specdata2);
		break;
	case NF3SOCK:
		kind = S_IFSOCK;
		break;
	case NF3FIFO:
		kind = S_IFIFO;
		break;
	default:
		return NFS3ERR_BADTYPE;
	}
	rc = rr__nfsd_be(c)->mknod(c, &d->dir, name, kind | mode_of(a, 0644),
				   dev);
	if (rc)
		return rr__nfsd_errno(rc);
	return set_child(c, d, name, a);
}

nfsstat3 rr__nfsd_mknod(struct nfsd_call *c, void *args, void *res)
{
	MKNOD3args *a = args;
	MKNOD3res *r = res;
	MKNOD3resok *ok = &r->MKNOD3res_u.resok;
	struct dirop d;
	nfsstat3 st = dirop_begin(c, &a->where, &d);

	if (!st)
		st = make_node(c, &d, a->where.name, &a->what);
	if (!st)
		new_obj(c, &d, a->where.name, &ok->obj, &ok->obj_attributes);
	dirop_end(c, &d, st ? &r->MKNOD3res_u.resfail.dir_wcc : &ok->dir_wcc);
	return st;
}

static nfsstat3 unlink_op(struct nfsd_call *c, const diropargs3 *a, bool isdir,
			  wcc_data *w)
{
	struct dirop d;
	nfsstat3 st;

	if (isdir && !strcmp(a->name, "..")) {
		st = NFS3ERR_EXIST; /* RFC 1813 3.3.13 */
		d.acted = false;
	} else {
		st = dirop_begin(c, a, &d);
	}
	if (!st)
		st = rr__nfsd_errno(
			rr__nfsd_be(c)->remove(c, &d.dir, a->name, isdir));
	dirop_end(c, &d, w);
	return st;
}

nfsstat3 rr__nfsd_remove(struct nfsd_call *c, void *args, void *res)
{
	return unlink_op(c, &((REMOVE3args *)args)->object, false,
			 &((REMOVE3res *)res)->REMOVE3res_u.resok.dir_wcc);
}

nfsstat3 rr__nfsd_rmdir(struct nfsd_call *c, void *args, void *res)
{
	return unlink_op(c, &((RMDIR3args *)args)->object, true,
			 &((RMDIR3res *)res)->RMDIR3res_u.resok.dir_wcc);
}

nfsstat3 rr__nfsd_rename(struct nfsd_call *c, void *args, void *res)
{
	RENAME3args *a = args;
	RENAME3resok *ok = &((RENAME3res *)res)->RENAME3res_u.resok;
	struct dirop from, to;
	nfsstat3 st = dirop_begin(c, &a->from, &from);

	to.acted = false;
	if (!st)
		st = dirop_begin(c, &a->to, &to);
	if (!st)
		st = rr__nfsd_errno(rr__nfsd_be(c)->rename(
			c, &from.dir, a->from.name, &to.dir, a->to.name));
	dirop_end(c, &from, &ok->fromdir_wcc);
	dirop_end(c, &to, &ok->todir_wcc);
	return st;
}

nfsstat3 rr__nfsd_link(struct nfsd_call *c, void *args, void *res)
{
	LINK3args *a = args;
	LINK3resok *ok = &((LINK3res *)res)->LINK3res_u.resok;
	struct nfsd_obj file;
	struct dirop d = {.acted = false};
	nfsstat3 st = rr__nfsd_resolve(c, &a->file, &file);
	int rc = st ? -ESTALE : rr__nfsd_act(c, &file);

	if (!st)
		st = rr__nfsd_errno(rc);
	if (!st && S_ISDIR(file.st.st_mode))
		st = NFS3ERR_ISDIR;
	if (!st)
		st = dirop_begin(c, &a->link, &d);
	if (!st)
		st = rr__nfsd_errno(
			rr__nfsd_be(c)->link(c, &file, &d.dir, a->link.name));
	rr__nfsd_post_attr_obj(c, rc ? NULL : &file, &ok->file_attributes);
	dirop_end(c, &d, &ok->linkdir_wcc);
	return st;
}
