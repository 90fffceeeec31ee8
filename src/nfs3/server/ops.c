/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The procedures that read or change one object (RFC 1813 section 3.3):
 * GETATTR, SETATTR, LOOKUP, ACCESS, READLINK, FSSTAT, FSINFO, PATHCONF,
 * COMMIT.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

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
	int fd;

	if (st)
		return st;
	fd = rr__nfsd_obj_fd(c, &o);
	if (fd < 0)
		return rr__nfsd_errno(fd);
	if (c->id.ro)
		st = NFS3ERR_ROFS;
	else if (a->guard.check &&
		 !ctime_is(&o.st, &a->guard.sattrguard3_u.obj_ctime))
		st = NFS3ERR_NOT_SYNC;
	else
		st = rr__nfsd_sattr(c, fd, &o.st, &a->new_attributes);
	rr__nfsd_wcc(&o.st, fd, w);
	return st;
}

static nfsstat3 lookup_child(struct nfsd_call *c, const struct nfsd_obj *dir,
			     int dirfd, const char *name, struct nfsd_obj *o)
{
	nfsstat3 st;

	if (!strcmp(name, ".")) {
		*o = *dir;
		return NFS3_OK;
	}
	if (!strcmp(name, "..")) /* never above the root */
		return rr__nfsd_errno(rr__nfsd_obj_parent(c, dir, o));
	st = rr__nfsd_name_ok(name);
	if (st)
		return st;
	rr__nfsd_obj_place(o, dir, name);
	return rr__nfsd_errno(rr__nfsd_stat(dirfd, name, &o->st, &o->birth));
}

nfsstat3 rr__nfsd_lookup(struct nfsd_call *c, void *args, void *res)
{
	diropargs3 *a = &((LOOKUP3args *)args)->what;
	LOOKUP3res *r = res;
	LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
	struct nfsd_obj dir, o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->dir, &dir);
	int dirfd;

	if (st)
		return st;
	if (!S_ISDIR(dir.st.st_mode))
		return NFS3ERR_NOTDIR;
	dirfd = rr__nfsd_obj_fd(c, &dir);
	if (dirfd < 0)
		return rr__nfsd_errno(dirfd);
	st = rr__nfsd_may(c, &dir.st, ACCESS3_LOOKUP);
	if (!st)
		st = lookup_child(c, &dir, dirfd, a->name, &o);
	if (!st && rr__nfsd_make_fh(c, &o, &ok->object))
		st = NFS3ERR_SERVERFAULT;
	if (st) {
		rr__nfsd_post_attr_fd(dirfd,
				      &r->LOOKUP3res_u.resfail.dir_attributes);
	} else {
		rr__nfsd_post_attr(&o.st, &ok->obj_attributes);
		rr__nfsd_post_attr_fd(dirfd, &ok->dir_attributes);
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
	int fd;

	if (st)
		return st;
	rr__nfsd_post_attr(&o.st, &ok->symlink_attributes);
	if (!S_ISLNK(o.st.st_mode))
		return NFS3ERR_INVAL;
	if (!buf)
		return NFS3ERR_SERVERFAULT;
	fd = rr__nfsd_obj_fd(c, &o);
	if (fd < 0)
		return rr__nfsd_errno(fd);
	n = readlinkat(fd, "", buf, PATH_MAX);
	st = n < 0 ? rr__nfsd_errno(errno) : NFS3_OK;
	if (n >= 0)
		buf[n] = '\0';
	ok->data = buf;
	return st;
}

nfsstat3 rr__nfsd_fsstat(struct nfsd_call *c, void *args, void *res)
{
	FSSTAT3args *a = args;
	FSSTAT3resok *ok = &((FSSTAT3res *)res)->FSSTAT3res_u.resok;
	struct statvfs v;
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->fsroot, &o);
	int fd;

	if (st)
		return st;
	rr__nfsd_post_attr(&o.st, &ok->obj_attributes);
	fd = rr__nfsd_obj_fd(c, &o);
	if (fd < 0)
		return rr__nfsd_errno(fd);
	st = fstatvfs(fd, &v) ? rr__nfsd_errno(errno) : NFS3_OK;
	if (st)
		return st;
	ok->tbytes = (uint64)v.f_blocks * v.f_frsize;
	ok->fbytes = (uint64)v.f_bfree * v.f_frsize;
	ok->abytes = (uint64)v.f_bavail * v.f_frsize;
	ok->tfiles = v.f_files;
	ok->ffiles = v.f_ffree;
	ok->afiles = v.f_favail;
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
	struct nfsd_obj o;
	nfsstat3 st = rr__nfsd_resolve(c, &a->object, &o);
	long lm, nm;
	int fd;

	if (st)
		return st;
	rr__nfsd_post_attr(&o.st, &ok->obj_attributes);
	fd = rr__nfsd_obj_fd(c, &o);
	if (fd < 0)
		return rr__nfsd_errno(fd);
	lm = fpathconf(fd, _PC_LINK_MAX);
	nm = fpathconf(fd, _PC_NAME_MAX);
	ok->linkmax = lm > 0 ? (uint32)lm : 1;
	ok->name_max = nm > 0 ? (uint32)nm : NAME_MAX;
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
	int pfd, fd;

	if (st)
		return st;
	if (!S_ISREG(o.st.st_mode))
		return S_ISDIR(o.st.st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	pfd = rr__nfsd_obj_fd(c, &o);
	if (pfd < 0)
		return rr__nfsd_errno(pfd);
	/* fsync needs an open file; reading it is enough to sync it */
	fd = rr__nfsd_reopen(pfd, O_RDONLY);
	if (fd < 0)
		fd = rr__nfsd_reopen(pfd, O_WRONLY);
	st = fd < 0	 ? rr__nfsd_errno(fd)
	     : fsync(fd) ? rr__nfsd_errno(errno)
			 : NFS3_OK;
	if (fd >= 0)
		close(fd);
	rr__nfsd_wcc(&o.st, pfd, &r->COMMIT3res_u.resok.file_wcc);
	memcpy(r->COMMIT3res_u.resok.verf, c->s->write_verf,
	       NFS3_WRITEVERFSIZE);
	return st;
}
