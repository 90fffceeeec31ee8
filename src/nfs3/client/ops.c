// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The namespace operations: each resolves its path(s) with LOOKUPs, makes
 * one NFS call and maps its status. Weak cache consistency data is
 * ignored: this client caches nothing it could invalidate.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"
#include "nfsc.h"

static int stat_path(struct rr_nfs *n, const char *path, bool follow,
		     struct stat *st)
{
	struct nfsc_fh fh;
	fattr3 attr;
	int rc = rr__nfsc_lookup_path(n, path, follow, &fh, &attr);

	if (!rc)
		rr__nfsc_fattr_to_stat(&attr, st);
	return rc;
}

int rr_nfs_stat(struct rr_nfs *n, const char *path, struct stat *st)
{
	return NFSC_SAY(stat_path(n, path, true, st), "stat %s", path);
}

int rr_nfs_lstat(struct rr_nfs *n, const char *path, struct stat *st)
{
	return NFSC_SAY(stat_path(n, path, false, st), "lstat %s", path);
}

static sattr3 mode_attr(mode_t mode)
{
	sattr3 s = {0};

	s.mode.set_it = TRUE;
	s.mode.set_mode3_u.mode = mode & 07777;
	return s;
}

static int do_mkdir(struct rr_nfs *n, const char *path, mode_t mode)
{
	MKDIR3args a = {.attributes = mode_attr(mode)};
	MKDIR3res r = {0};
	char *name;
	struct nfsc_fh dir;
	int rc = rr__nfsc_lookup_parent(n, path, &dir, &name);

	if (rc)
		return rc;
	nfsc_fh_arg(&a.where.dir, &dir);
	a.where.name = name;
	rc = rr__nfsc_call(n, NFSPROC3_MKDIR, (xdrproc_t)rr__xdr_MKDIR3args, &a,
			   (xdrproc_t)rr__xdr_MKDIR3res, &r, 0);
	free(name);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	xdr_free((xdrproc_t)rr__xdr_MKDIR3res, &r);
	return rc;
}

int rr_nfs_mkdir(struct rr_nfs *n, const char *path, mode_t mode)
{
	return NFSC_SAY(do_mkdir(n, path, mode), "mkdir %s", path);
}

/* REMOVE and RMDIR share their argument and result shapes. */
static int remove_common(struct rr_nfs *n, const char *path, uint32_t proc)
{
	REMOVE3args a;
	REMOVE3res r = {0};
	struct nfsc_fh dir;
	char *name;
	int rc = rr__nfsc_lookup_parent(n, path, &dir, &name);

	if (rc)
		return rc;
	nfsc_fh_arg(&a.object.dir, &dir);
	a.object.name = name;
	rc = rr__nfsc_call(n, proc, (xdrproc_t)rr__xdr_REMOVE3args, &a,
			   (xdrproc_t)rr__xdr_REMOVE3res, &r, 0);
	free(name);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	xdr_free((xdrproc_t)rr__xdr_REMOVE3res, &r);
	return rc;
}

int rr_nfs_unlink(struct rr_nfs *n, const char *path)
{
	return NFSC_SAY(remove_common(n, path, NFSPROC3_REMOVE), "unlink %s",
			path);
}

int rr_nfs_rmdir(struct rr_nfs *n, const char *path)
{
	return NFSC_SAY(remove_common(n, path, NFSPROC3_RMDIR), "rmdir %s",
			path);
}

static int do_rename(struct rr_nfs *n, const char *from, const char *to)
{
	RENAME3args a;
	RENAME3res r = {0};
	struct nfsc_fh fdir, tdir;
	char *fname = NULL, *tname = NULL;
	int rc = rr__nfsc_lookup_parent(n, from, &fdir, &fname);

	if (!rc)
		rc = rr__nfsc_lookup_parent(n, to, &tdir, &tname);
	if (!rc) {
		nfsc_fh_arg(&a.from.dir, &fdir);
		nfsc_fh_arg(&a.to.dir, &tdir);
		a.from.name = fname;
		a.to.name = tname;
		rc = rr__nfsc_call(n, NFSPROC3_RENAME,
				   (xdrproc_t)rr__xdr_RENAME3args, &a,
				   (xdrproc_t)rr__xdr_RENAME3res, &r, 0);
	}
	free(fname);
	free(tname);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	xdr_free((xdrproc_t)rr__xdr_RENAME3res, &r);
	return rc;
}

int rr_nfs_rename(struct rr_nfs *n, const char *from, const char *to)
{
	return NFSC_SAY(do_rename(n, from, to), "rename %s to %s", from, to);
}

static int do_symlink(struct rr_nfs *n, const char *target, const char *path)
{
	SYMLINK3args a = {.symlink.symlink_attributes = mode_attr(0777),
			  .symlink.symlink_data = (char *)target};
	SYMLINK3res r = {0};
	struct nfsc_fh dir;
	char *name;
	int rc;

	if (!target || !*target || strlen(target) >= NFSC_ARGS_MAX - 1024)
		return -EINVAL;
	rc = rr__nfsc_lookup_parent(n, path, &dir, &name);
	if (rc)
		return rc;
	nfsc_fh_arg(&a.where.dir, &dir);
	a.where.name = name;
	rc = rr__nfsc_call_ddp(
		n, NFSPROC3_SYMLINK, (xdrproc_t)rr__xdr_SYMLINK3args, &a,
		strlen(target), (xdrproc_t)rr__xdr_SYMLINK3res, &r, 0);
	free(name);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	xdr_free((xdrproc_t)rr__xdr_SYMLINK3res, &r);
	return rc;
}

int rr_nfs_symlink(struct rr_nfs *n, const char *target, const char *path)
{
	return NFSC_SAY(do_symlink(n, target, path), "symlink %s", path);
}

static ssize_t do_readlink(struct rr_nfs *n, const char *path, char *buf,
			   size_t size)
{
	struct nfsc_fh fh;
	fattr3 attr;
	char *target = NULL;
	size_t len;
	int rc = rr__nfsc_lookup_path(n, path, false, &fh, &attr);

	if (!rc && attr.type != NF3LNK)
		rc = -EINVAL;
	if (!rc)
		rc = rr__nfsc_readlink_fh(n, &fh, &target);
	if (rc)
		return rc;
	len = strlen(target);
	if (size) {
		size_t c = len < size ? len + 1 : size;

		memcpy(buf, target, c);
		if (len >= size)
			buf[size - 1] = '\0';
	}
	free(target);
	return (ssize_t)len;
}

ssize_t rr_nfs_readlink(struct rr_nfs *n, const char *path, char *buf,
			size_t size)
{
	return NFSC_SAY(do_readlink(n, path, buf, size), "readlink %s", path);
}

static int do_statvfs(struct rr_nfs *n, const char *path, struct statvfs *sv)
{
	struct nfsc_fh fh;
	int rc = rr__nfsc_lookup_path(n, path, true, &fh, NULL);

	return rc ? rc : rr__nfsc_h_statfs(n, &fh, sv);
}

int rr_nfs_statvfs(struct rr_nfs *n, const char *path, struct statvfs *sv)
{
	return NFSC_SAY(do_statvfs(n, path, sv), "statvfs %s", path);
}

int rr__nfsc_setsize(struct rr_nfs *n, const struct nfsc_fh *fh, uint64_t len)
{
	SETATTR3args a = {0};
	SETATTR3res r = {0};
	int rc;

	nfsc_fh_arg(&a.object, fh);
	a.new_attributes.size.set_it = TRUE;
	a.new_attributes.size.set_size3_u.size = len;
	rc = rr__nfsc_call(n, NFSPROC3_SETATTR, (xdrproc_t)rr__xdr_SETATTR3args,
			   &a, (xdrproc_t)rr__xdr_SETATTR3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	xdr_free((xdrproc_t)rr__xdr_SETATTR3res, &r);
	return rc;
}

static int do_truncate(struct rr_nfs *n, const char *path, uint64_t len)
{
	struct nfsc_fh fh;
	fattr3 attr;
	int rc = rr__nfsc_lookup_path(n, path, true, &fh, &attr);

	if (!rc && attr.type == NF3DIR)
		rc = -EISDIR;
	return rc ? rc : rr__nfsc_setsize(n, &fh, len);
}

int rr_nfs_truncate(struct rr_nfs *n, const char *path, uint64_t len)
{
	return NFSC_SAY(do_truncate(n, path, len), "truncate %s", path);
}
