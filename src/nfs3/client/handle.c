// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Calls by file handle (handle.h), one NFS procedure each (RFC 1813
 * section 3.3). The object-making procedures (CREATE, MKDIR, SYMLINK,
 * MKNOD) may leave out the new handle or its attributes (post_op_fh3,
 * post_op_attr): a LOOKUP or GETATTR then fetches what is missing, since
 * the adapter needs both to answer the kernel.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "base/alloc.h"
#include "nfsc.h"

int rr__nfsc_h_getattr(struct rr_nfs *n, const struct nfsc_fh *fh,
		       struct stat *st)
{
	fattr3 attr;
	int rc = rr__nfsc_getattr(n, fh, &attr);

	if (!rc && st)
		rr__nfsc_fattr_to_stat(&attr, st);
	return rc;
}

int rr__nfsc_h_root(struct rr_nfs *n, struct nfsc_fh *fh, struct stat *st)
{
	fattr3 attr;
	int rc = rr__nfsc_lookup_path(n, n->url_path, true, fh, &attr);

	if (!rc && attr.type != NF3DIR)
		rc = -ENOTDIR;
	if (!rc && st)
		rr__nfsc_fattr_to_stat(&attr, st);
	return rc;
}

int rr__nfsc_h_lookup(struct rr_nfs *n, const struct nfsc_fh *dir,
		      const char *name, struct nfsc_fh *fh, struct stat *st)
{
	fattr3 attr;
	int rc;

	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	rc = rr__nfsc_lookup1(n, dir, name, fh, &attr);
	if (!rc && st)
		rr__nfsc_fattr_to_stat(&attr, st);
	return rc;
}

static void set_time(time_how *how, nfstime3 *t, bool now, bool given,
		     const struct timespec *ts)
{
	*how = now ? SET_TO_SERVER_TIME
		   : (given ? SET_TO_CLIENT_TIME : DONT_CHANGE);
	if (*how == SET_TO_CLIENT_TIME) {
		t->seconds = (uint32_t)ts->tv_sec;
		t->nseconds = (uint32_t)ts->tv_nsec;
	}
}

static void to_sattr(const struct nfsc_set *s, sattr3 *a)
{
	memset(a, 0, sizeof(*a));
	a->mode.set_it = !!(s->mask & NFSC_SET_MODE);
	a->mode.set_mode3_u.mode = s->mode & 07777;
	a->uid.set_it = !!(s->mask & NFSC_SET_UID);
	a->uid.set_uid3_u.uid = s->uid;
	a->gid.set_it = !!(s->mask & NFSC_SET_GID);
	a->gid.set_gid3_u.gid = s->gid;
	a->size.set_it = !!(s->mask & NFSC_SET_SIZE);
	a->size.set_size3_u.size = s->size;
	set_time(&a->atime.set_it, &a->atime.set_atime_u.atime,
		 s->mask & NFSC_SET_ATIME_NOW, s->mask & NFSC_SET_ATIME,
		 &s->atime);
	set_time(&a->mtime.set_it, &a->mtime.set_mtime_u.mtime,
		 s->mask & NFSC_SET_MTIME_NOW, s->mask & NFSC_SET_MTIME,
		 &s->mtime);
}

/* The attributes after a change: from its wcc_data, else a GETATTR. */
static int attr_after(struct rr_nfs *n, const struct nfsc_fh *fh,
		      const post_op_attr *pa, struct stat *st)
{
	if (!st)
		return 0;
	if (pa->attributes_follow) {
		rr__nfsc_fattr_to_stat(&pa->post_op_attr_u.attributes, st);
		return 0;
	}
	return rr__nfsc_h_getattr(n, fh, st);
}

int rr__nfsc_h_setattr(struct rr_nfs *n, const struct nfsc_fh *fh,
		       const struct nfsc_set *s, struct stat *st)
{
	SETATTR3args a = {0};
	SETATTR3res r = {0};
	post_op_attr after = {0};
	int rc;

	nfsc_fh_arg(&a.object, fh);
	to_sattr(s, &a.new_attributes);
	rc = rr__nfsc_call(n, NFSPROC3_SETATTR, (xdrproc_t)rr__xdr_SETATTR3args,
			   &a, (xdrproc_t)rr__xdr_SETATTR3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc)
		after = r.SETATTR3res_u.resok.obj_wcc.after;
	xdr_free((xdrproc_t)rr__xdr_SETATTR3res, &r);
	return rc ? rc : attr_after(n, fh, &after, st);
}

/*
 * What a making procedure answered: the new handle (looked up by name
 * when left out) and its attributes.
 */
static int made(struct rr_nfs *n, const struct nfsc_fh *dir, const char *name,
		const post_op_fh3 *pfh, const post_op_attr *pa,
		struct nfsc_fh *fh, struct stat *st)
{
	int rc;

	if (!pfh->handle_follows)
		return rr__nfsc_h_lookup(n, dir, name, fh, st);
	rc = rr__nfsc_fh_set(fh, &pfh->post_op_fh3_u.handle);
	return rc ? rc : attr_after(n, fh, pa, st);
}

/* The result shapes of CREATE, MKDIR, SYMLINK and MKNOD agree. */
#define MADE(res, resok)                                                       \
	({                                                                     \
		int rc_ = rr_nfs_errno((res).status);                          \
		if (!rc_)                                                      \
			rc_ = made(n, dir, name, &(res).resok.obj,             \
				   &(res).resok.obj_attributes, fh, st);       \
		rc_;                                                           \
	})

static sattr3 mode_only(mode_t mode)
{
	sattr3 s = {0};

	s.mode.set_it = TRUE;
	s.mode.set_mode3_u.mode = mode & 07777;
	return s;
}

int rr__nfsc_h_create(struct rr_nfs *n, const struct nfsc_fh *dir,
		      const char *name, mode_t mode, bool excl,
		      struct nfsc_fh *fh, struct stat *st)
{
	CREATE3args a = {.where.name = (char *)name};
	CREATE3res r = {0};
	int rc;

	nfsc_fh_arg(&a.where.dir, dir);
	a.how.mode = excl ? GUARDED : UNCHECKED;
	a.how.createhow3_u.obj_attributes = mode_only(mode);
	rc = rr__nfsc_call(n, NFSPROC3_CREATE, (xdrproc_t)rr__xdr_CREATE3args,
			   &a, (xdrproc_t)rr__xdr_CREATE3res, &r, 0);
	if (rc)
		return rc;
	rc = MADE(r, CREATE3res_u.resok);
	xdr_free((xdrproc_t)rr__xdr_CREATE3res, &r);
	return rc;
}

int rr__nfsc_h_mkdir(struct rr_nfs *n, const struct nfsc_fh *dir,
		     const char *name, mode_t mode, struct nfsc_fh *fh,
		     struct stat *st)
{
	MKDIR3args a = {.where.name = (char *)name,
			.attributes = mode_only(mode)};
	MKDIR3res r = {0};
	int rc;

	nfsc_fh_arg(&a.where.dir, dir);
	rc = rr__nfsc_call(n, NFSPROC3_MKDIR, (xdrproc_t)rr__xdr_MKDIR3args, &a,
			   (xdrproc_t)rr__xdr_MKDIR3res, &r, 0);
	if (rc)
		return rc;
	rc = MADE(r, MKDIR3res_u.resok);
	xdr_free((xdrproc_t)rr__xdr_MKDIR3res, &r);
	return rc;
}

static int mknod_what(mode_t mode, dev_t rdev, mknoddata3 *w)
{
	switch (mode & S_IFMT) {
	case S_IFIFO:
	case S_IFSOCK:
		w->type = S_ISFIFO(mode) ? NF3FIFO : NF3SOCK;
		w->mknoddata3_u.pipe_attributes = mode_only(mode);
		return 0;
	case S_IFCHR:
	case S_IFBLK:
		w->type = S_ISCHR(mode) ? NF3CHR : NF3BLK;
		w->mknoddata3_u.device.dev_attributes = mode_only(mode);
		w->mknoddata3_u.device.spec.specdata1 = major(rdev);
		w->mknoddata3_u.device.spec.specdata2 = minor(rdev);
		return 0;
	default:
		return -EINVAL;
	}
}

int rr__nfsc_h_mknod(struct rr_nfs *n, const struct nfsc_fh *dir,
		     const char *name, mode_t mode, dev_t rdev,
		     struct nfsc_fh *fh, struct stat *st)
{
	MKNOD3args a = {.where.name = (char *)name};
	MKNOD3res r = {0};
	int rc = mknod_what(mode, rdev, &a.what);

	if (rc)
		return rc;
	nfsc_fh_arg(&a.where.dir, dir);
	rc = rr__nfsc_call(n, NFSPROC3_MKNOD, (xdrproc_t)rr__xdr_MKNOD3args, &a,
			   (xdrproc_t)rr__xdr_MKNOD3res, &r, 0);
	if (rc)
		return rc;
	rc = MADE(r, MKNOD3res_u.resok);
	xdr_free((xdrproc_t)rr__xdr_MKNOD3res, &r);
	return rc;
}

int rr__nfsc_h_symlink(struct rr_nfs *n, const struct nfsc_fh *dir,
		       const char *name, const char *target, struct nfsc_fh *fh,
		       struct stat *st)
{
	SYMLINK3args a = {.where.name = (char *)name,
			  .symlink.symlink_attributes = mode_only(0777),
			  .symlink.symlink_data = (char *)target};
	SYMLINK3res r = {0};
	int rc;

	if (!*target || strlen(target) >= NFSC_ARGS_MAX - 1024)
		return -ENAMETOOLONG;
	nfsc_fh_arg(&a.where.dir, dir);
	rc = rr__nfsc_call_ddp(
		n, NFSPROC3_SYMLINK, (xdrproc_t)rr__xdr_SYMLINK3args, &a,
		strlen(target), (xdrproc_t)rr__xdr_SYMLINK3res, &r, 0);
	if (rc)
		return rc;
	rc = MADE(r, SYMLINK3res_u.resok);
	xdr_free((xdrproc_t)rr__xdr_SYMLINK3res, &r);
	return rc;
}

int rr__nfsc_h_link(struct rr_nfs *n, const struct nfsc_fh *fh,
		    const struct nfsc_fh *dir, const char *name,
		    struct stat *st)
{
	LINK3args a = {.link.name = (char *)name};
	LINK3res r = {0};
	post_op_attr after = {0};
	int rc;

	nfsc_fh_arg(&a.file, fh);
	nfsc_fh_arg(&a.link.dir, dir);
	rc = rr__nfsc_call(n, NFSPROC3_LINK, (xdrproc_t)rr__xdr_LINK3args, &a,
			   (xdrproc_t)rr__xdr_LINK3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc)
		after = r.LINK3res_u.resok.file_attributes;
	xdr_free((xdrproc_t)rr__xdr_LINK3res, &r);
	return rc ? rc : attr_after(n, fh, &after, st);
}

/* REMOVE and RMDIR share their argument and result shapes. */
int rr__nfsc_h_remove(struct rr_nfs *n, const struct nfsc_fh *dir,
		      const char *name, bool is_dir)
{
	REMOVE3args a = {.object.name = (char *)name};
	REMOVE3res r = {0};
	int rc;

	nfsc_fh_arg(&a.object.dir, dir);
	rc = rr__nfsc_call(n, is_dir ? NFSPROC3_RMDIR : NFSPROC3_REMOVE,
			   (xdrproc_t)rr__xdr_REMOVE3args, &a,
			   (xdrproc_t)rr__xdr_REMOVE3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	xdr_free((xdrproc_t)rr__xdr_REMOVE3res, &r);
	return rc;
}

int rr__nfsc_h_rename(struct rr_nfs *n, const struct nfsc_fh *fdir,
		      const char *fname, const struct nfsc_fh *tdir,
		      const char *tname)
{
	RENAME3args a = {.from.name = (char *)fname, .to.name = (char *)tname};
	RENAME3res r = {0};
	int rc;

	nfsc_fh_arg(&a.from.dir, fdir);
	nfsc_fh_arg(&a.to.dir, tdir);
	rc = rr__nfsc_call(n, NFSPROC3_RENAME, (xdrproc_t)rr__xdr_RENAME3args,
			   &a, (xdrproc_t)rr__xdr_RENAME3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	xdr_free((xdrproc_t)rr__xdr_RENAME3res, &r);
	return rc;
}

int rr__nfsc_h_readlink(struct rr_nfs *n, const struct nfsc_fh *fh,
			char **target)
{
	return rr__nfsc_readlink_fh(n, fh, target);
}

int rr__nfsc_h_statfs(struct rr_nfs *n, const struct nfsc_fh *fh,
		      struct statvfs *sv)
{
	FSSTAT3args a;
	FSSTAT3res r = {0};
	int rc;

	nfsc_fh_arg(&a.fsroot, fh);
	rc = rr__nfsc_call(n, NFSPROC3_FSSTAT, (xdrproc_t)rr__xdr_FSSTAT3args,
			   &a, (xdrproc_t)rr__xdr_FSSTAT3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc) {
		FSSTAT3resok *ok = &r.FSSTAT3res_u.resok;
		const uint32_t bs = 4096;

		memset(sv, 0, sizeof(*sv));
		sv->f_bsize = sv->f_frsize = bs;
		sv->f_blocks = ok->tbytes / bs;
		sv->f_bfree = ok->fbytes / bs;
		sv->f_bavail = ok->abytes / bs;
		sv->f_files = ok->tfiles;
		sv->f_ffree = ok->ffiles;
		sv->f_favail = ok->afiles;
		sv->f_namemax = NAME_MAX;
	}
	xdr_free((xdrproc_t)rr__xdr_FSSTAT3res, &r);
	return rc;
}

/* One entry to fn; false when fn wants no more. */
static bool give_entry(const entryplus3 *e, nfsc_dirent_fn fn, void *arg)
{
	struct nfsc_fh fh;
	struct stat st = {.st_mode = S_IFDIR};
	bool full;

	if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
		return fn(arg, e->name, e->fileid, e->cookie, NULL, &st);
	full = e->name_attributes.attributes_follow &&
	       e->name_handle.handle_follows &&
	       !rr__nfsc_fh_set(&fh, &e->name_handle.post_op_fh3_u.handle);
	if (full)
		rr__nfsc_fattr_to_stat(
			&e->name_attributes.post_op_attr_u.attributes, &st);
	return fn(arg, e->name, e->fileid, e->cookie, full ? &fh : NULL,
		  full ? &st : NULL);
}

int rr__nfsc_h_readdirplus(struct rr_nfs *n, const struct nfsc_fh *dir,
			   uint64_t cookie, uint8_t verf[8], uint32_t maxcount,
			   nfsc_dirent_fn fn, void *arg, bool *eof)
{
	READDIRPLUS3args a = {
		.cookie = cookie, .dircount = n->dtpref, .maxcount = maxcount};
	READDIRPLUS3res r = {0};
	int rc;

	nfsc_fh_arg(&a.dir, dir);
	memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	rc = rr__nfsc_call(
		n, NFSPROC3_READDIRPLUS, (xdrproc_t)rr__xdr_READDIRPLUS3args,
		&a, (xdrproc_t)rr__xdr_READDIRPLUS3res, &r, maxcount + 1024);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	*eof = false;
	if (!rc) {
		READDIRPLUS3resok *ok = &r.READDIRPLUS3res_u.resok;
		const entryplus3 *e = ok->reply.entries;

		memcpy(verf, ok->cookieverf, NFS3_COOKIEVERFSIZE);
		while (e && give_entry(e, fn, arg))
			e = e->nextentry;
		*eof = !e && ok->reply.eof;
	}
	xdr_free((xdrproc_t)rr__xdr_READDIRPLUS3res, &r);
	return rc;
}

int rr__nfsc_h_access(struct rr_nfs *n, const struct nfsc_fh *fh, uint32_t want,
		      uint32_t *granted, struct stat *st)
{
	ACCESS3args a = {.access = want};
	ACCESS3res r = {0};
	post_op_attr pa = {0};
	int rc;

	nfsc_fh_arg(&a.object, fh);
	rc = rr__nfsc_call(n, NFSPROC3_ACCESS, (xdrproc_t)rr__xdr_ACCESS3args,
			   &a, (xdrproc_t)rr__xdr_ACCESS3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc) {
		*granted = r.ACCESS3res_u.resok.access & want;
		pa = r.ACCESS3res_u.resok.obj_attributes;
	}
	xdr_free((xdrproc_t)rr__xdr_ACCESS3res, &r);
	return rc ? rc : attr_after(n, fh, &pa, st);
}

int rr__nfsc_h_open(struct rr_nfs *n, const struct nfsc_fh *fh, int flags,
		    bool checked, struct rr_nfs_file **out)
{
	int rc = checked ? 0 : rr__nfsc_access(n, fh, flags);

	if (!rc && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY)
		rc = rr__nfsc_setsize(n, fh, 0);
	return rc ? rc : rr__nfsc_file_new(n, fh, flags, out);
}
