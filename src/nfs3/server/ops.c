/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The procedures that read or change one object (RFC 1813 section 3.3):
 * GETATTR, SETATTR, LOOKUP, ACCESS, READLINK, FSSTAT, FSINFO, PATHCONF,
 * COMMIT.
 */
#include "nfs3/server/nfsd.h"

#include <limits.h>
#include <string.h>

nfsstat3 rr__nfsd_getattr(struct nfsd_call *c, void *args, void *res)
{
	GETATTR3args *a = args;
	GETATTR3res *r = res;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->object, &o);

	if (st == NFS3_OK)
		rr__nfsd_fattr(&o.st, &r->GETATTR3res_u.resok.obj_attributes);
	return st;
}

static bool ctime_is(const struct stat *st, const nfstime3 *t)
{
	return (uint32)st->st_ctim.tv_sec == t->seconds &&
	       (uint32)st->st_ctim.tv_nsec == t->nseconds;
}

nfsstat3 rr__nfsd_setattr(struct nfsd_call *c, void *args, void *res)
{
	SETATTR3args *a = args;
	wcc_data *w = &((SETATTR3res *)res)->SETATTR3res_u.resok.obj_wcc;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->object, &o);
	int rc;

	if (st)
		return st;
	rc = rr__nfsd_act(c, &o);
	if (rc)
		return rr__nfsd_errno(rc);
	if (c->id.ro)
		st = NFS3ERR_ROFS;
	else if (a->guard.check &&
		 !ctime_is(&o.st, &a->guard.sattrguard3_u.obj_ctime))
		st = NFS3ERR_NOT_SYNC;
	else
		st = rr__nfsd_sattr(c, &o, &a->new_attributes);
	rr__nfsd_wcc(c, &o.st, &o, w);
	return st;
}

/* "." and ".." are the backend's to answer; other names are checked. */
static nfsstat3 lookup_child(struct nfsd_call *c, struct nfsd_obj *dir,
			     const char *name, struct nfsd_obj *o)
{
	nfsstat3 st = NFS3_OK;

	if (strcmp(name, ".") && strcmp(name, ".."))
		st = rr__nfsd_name_ok(name);
	if (st)
		return st;
	return rr__nfsd_errno(rr__nfsd_be(c)->lookup(c, dir, name, o, 0));
}

nfsstat3 rr__nfsd_lookup(struct nfsd_call *c, void *args, void *res)
{
	diropargs3 *a = &((LOOKUP3args *)args)->what;
	LOOKUP3res *r = res;
	LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
	struct nfsd_obj dir, o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->dir, &dir);
	int rc;

	if (st)
		return st;
	if (!S_ISDIR(dir.st.st_mode))
		return NFS3ERR_NOTDIR;
	rc = rr__nfsd_act(c, &dir);
	if (rc)
		return rr__nfsd_errno(rc);
	st = rr__nfsd_may(c, &dir.st, ACCESS3_LOOKUP);
	if (!st)
		st = lookup_child(c, &dir, a->name, &o);
	if (!st && rr__nfsd_make_fh(c, &o, &ok->object))
		st = NFS3ERR_SERVERFAULT;
	if (st) {
		rr__nfsd_post_attr_obj(c, &dir,
				       &r->LOOKUP3res_u.resfail.dir_attributes);
	} else {
		rr__nfsd_post_attr(&o.st, &ok->obj_attributes);
		rr__nfsd_post_attr_obj(c, &dir, &ok->dir_attributes);
	}
	return st;
}

nfsstat3 rr__nfsd_access_op(struct nfsd_call *c, void *args, void *res)
{
	ACCESS3args *a = args;
	ACCESS3resok *ok = &((ACCESS3res *)res)->ACCESS3res_u.resok;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->object, &o);

	if (st)
		return st;
	rr__nfsd_post_attr(&o.st, &ok->obj_attributes);
	ok->access = rr__nfsd_access(c->s, &c->id, &o.st, a->access);
	return NFS3_OK;
}

nfsstat3 rr__nfsd_readlink(struct nfsd_call *c, void *args, void *res)
{
	READLINK3args *a = args;
	READLINK3resok *ok = &((READLINK3res *)res)->READLINK3res_u.resok;
	char *buf = rr__nfsd_alloc(c, PATH_MAX + 1);
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->symlink, &o);
	ssize_t n;
	int rc;

	if (st)
		return st;
	rr__nfsd_post_attr(&o.st, &ok->symlink_attributes);
	if (!S_ISLNK(o.st.st_mode))
		return NFS3ERR_INVAL;
	if (!buf)
		return NFS3ERR_SERVERFAULT;
	rc = rr__nfsd_act(c, &o);
	if (rc)
		return rr__nfsd_errno(rc);
	n = rr__nfsd_be(c)->readlink(c, &o, buf, PATH_MAX + 1);
	ok->data = buf;
	return n < 0 ? rr__nfsd_errno((int)n) : NFS3_OK;
}

nfsstat3 rr__nfsd_fsstat(struct nfsd_call *c, void *args, void *res)
{
	FSSTAT3args *a = args;
	FSSTAT3resok *ok = &((FSSTAT3res *)res)->FSSTAT3res_u.resok;
	struct nfsd_be_statfs v;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->fsroot, &o);
	int rc;

	if (st)
		return st;
	rr__nfsd_post_attr(&o.st, &ok->obj_attributes);
	rc = rr__nfsd_act(c, &o);
	if (!rc)
		rc = rr__nfsd_be(c)->statfs(c, &o, &v);
	if (rc)
		return rr__nfsd_errno(rc);
	ok->tbytes = v.tbytes;
	ok->fbytes = v.fbytes;
	ok->abytes = v.abytes;
	ok->tfiles = v.tfiles;
	ok->ffiles = v.ffiles;
	ok->afiles = v.afiles;
	ok->invarsec = 0; /* the file system changes under us any time */
	return NFS3_OK;
}

nfsstat3 rr__nfsd_fsinfo(struct nfsd_call *c, void *args, void *res)
{
	FSINFO3args *a = args;
	FSINFO3resok *ok = &((FSINFO3res *)res)->FSINFO3res_u.resok;
	size_t cap;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->fsroot, &o);
	uint32 io;

	if (st)
		return st;
	rr_svc_bulk_buf(c->req, &cap);
	io = cap < NFSD_MAX_IO ? (uint32)cap : NFSD_MAX_IO;
	rr__nfsd_post_attr(&o.st, &ok->obj_attributes);
	ok->rtmax = ok->rtpref = ok->wtmax = ok->wtpref = io;
	ok->rtmult = ok->wtmult = 4096;
	ok->dtpref = 64 << 10;
	ok->maxfilesize = (uint64)INT64_MAX;
	ok->time_delta = (nfstime3){.seconds = 0, .nseconds = 1};
	ok->properties =
		FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	return NFS3_OK;
}

nfsstat3 rr__nfsd_pathconf(struct nfsd_call *c, void *args, void *res)
{
	PATHCONF3args *a = args;
	PATHCONF3resok *ok = &((PATHCONF3res *)res)->PATHCONF3res_u.resok;
	struct nfsd_be_statfs v = {0};
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->object, &o);
	int rc;

	if (st)
		return st;
	rr__nfsd_post_attr(&o.st, &ok->obj_attributes);
	rc = rr__nfsd_act(c, &o);
	if (rc)
		return rr__nfsd_errno(rc);
	/* limits the backend cannot tell are the usual ones */
	if (rr__nfsd_be(c)->statfs(c, &o, &v))
		v.linkmax = v.namemax = 0;
	ok->linkmax = v.linkmax ? v.linkmax : 1;
	ok->name_max = v.namemax ? v.namemax : NAME_MAX;
	ok->no_trunc = TRUE;
	ok->chown_restricted = TRUE;
	ok->case_insensitive = FALSE;
	ok->case_preserving = TRUE;
	return NFS3_OK;
}

nfsstat3 rr__nfsd_commit(struct nfsd_call *c, void *args, void *res)
{
	COMMIT3args *a = args;
	COMMIT3res *r = res;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->file, &o);
	int rc;

	if (st)
		return st;
	if (!S_ISREG(o.st.st_mode))
		return S_ISDIR(o.st.st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	rc = rr__nfsd_act(c, &o);
	if (rc)
		return rr__nfsd_errno(rc);
	st = rr__nfsd_errno(rr__nfsd_be(c)->commit(c, &o, a->offset, a->count));
	rr__nfsd_wcc(c, &o.st, &o, &r->COMMIT3res_u.resok.file_wcc);
	memcpy(r->COMMIT3res_u.resok.verf, c->s->write_verf,
	       NFS3_WRITEVERFSIZE);
	return st;
}
