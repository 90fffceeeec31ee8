// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Open files: a handle, the open mode, and the write state that closing
 * commits (commit.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "handle.h"
#include "nfsc.h"

#define ACCESS3_READ   0x0001
#define ACCESS3_MODIFY 0x0004
#define ACCESS3_EXTEND 0x0008

static int create_file(struct rr_nfs *n, const char *path, int flags,
		       mode_t mode, struct nfsc_fh *fh)
{
	CREATE3args a = {0};
	CREATE3res r = {0};
	struct nfsc_fh dir;
	char *name;
	int rc = rr__nfsc_lookup_parent(n, path, &dir, &name);

	if (rc)
		return rc;
	nfsc_fh_arg(&a.where.dir, &dir);
	a.where.name = name;
	a.how.mode = flags & O_EXCL ? GUARDED : UNCHECKED;
	a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = mode & 07777;
	rc = rr__nfsc_call(n, NFSPROC3_CREATE, (xdrproc_t)rr__xdr_CREATE3args,
			   &a, (xdrproc_t)rr__xdr_CREATE3res, &r, 0);
	free(name);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	fh->len = 0;
	if (!rc && r.CREATE3res_u.resok.obj.handle_follows)
		rc = rr__nfsc_fh_set(
			fh, &r.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	xdr_free((xdrproc_t)rr__xdr_CREATE3res, &r);
	/* RFC 1813 lets the server leave the handle out: look it up */
	if (!rc && !fh->len)
		rc = rr__nfsc_lookup_path(n, path, false, fh, NULL);
	return rc;
}

int rr__nfsc_access(struct rr_nfs *n, const struct nfsc_fh *fh, int flags)
{
	int acc = flags & O_ACCMODE;
	uint32_t want = (acc != O_WRONLY ? ACCESS3_READ : 0) |
			(acc != O_RDONLY ? ACCESS3_MODIFY | ACCESS3_EXTEND : 0);
	uint32_t granted = 0;
	int rc = rr__nfsc_h_access(n, fh, want, &granted, NULL);

	return rc ? rc : granted != want ? -EACCES : 0;
}

/* Finds or creates the file; *created says which. */
static int open_fh(struct rr_nfs *n, const char *path, int flags, mode_t mode,
		   struct nfsc_fh *fh, bool *created)
{
	fattr3 attr;
	int rc = rr__nfsc_lookup_path(n, path, true, fh, &attr);

	*created = false;
	if (rc == -ENOENT && (flags & O_CREAT)) {
		*created = true;
		return create_file(n, path, flags, mode, fh);
	}
	if (rc)
		return rc;
	if ((flags & O_CREAT) && (flags & O_EXCL))
		return -EEXIST;
	if (attr.type == NF3DIR && (flags & O_ACCMODE) != O_RDONLY)
		return -EISDIR;
	if (attr.type != NF3REG && attr.type != NF3DIR)
		return -EINVAL;
	return 0;
}

static int do_open(struct rr_nfs *n, const char *path, int flags, mode_t mode,
		   struct rr_nfs_file **out)
{
	struct rr_nfs_file *f;
	bool created;
	int rc;

	if ((flags & O_ACCMODE) == O_ACCMODE)
		return -EINVAL;
	f = rr_calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->n = n;
	f->flags = flags;
	rc = open_fh(n, path, flags, mode, &f->fh, &created);
	/* a file we just made is ours whatever its mode says */
	if (!rc && !created)
		rc = rr__nfsc_access(n, &f->fh, flags);
	if (!rc && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY)
		rc = rr__nfsc_setsize(n, &f->fh, 0);
	if (rc) {
		free(f);
		return rc;
	}
	pthread_mutex_init(&f->mu, NULL);
	*out = f;
	return 0;
}

int rr__nfsc_file_new(struct rr_nfs *n, const struct nfsc_fh *fh, int flags,
		      struct rr_nfs_file **out)
{
	struct rr_nfs_file *f = rr_calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->n = n;
	f->fh = *fh;
	f->flags = flags;
	pthread_mutex_init(&f->mu, NULL);
	*out = f;
	return 0;
}

int rr_nfs_open(struct rr_nfs *n, const char *path, int flags, mode_t mode,
		struct rr_nfs_file **out)
{
	return NFSC_SAY(do_open(n, path, flags, mode, out), "open %s", path);
}

int rr_nfs_fstat(struct rr_nfs_file *f, struct stat *st)
{
	fattr3 attr;
	int rc = NFSC_SAY(rr__nfsc_getattr(f->n, &f->fh, &attr), "fstat");

	if (!rc)
		rr__nfsc_fattr_to_stat(&attr, st);
	return rc;
}

int rr_nfs_ftruncate(struct rr_nfs_file *f, uint64_t len)
{
	int rc = (f->flags & O_ACCMODE) == O_RDONLY
			 ? -EBADF
			 : rr__nfsc_setsize(f->n, &f->fh, len);

	return NFSC_SAY(rc, "ftruncate to %llu", (unsigned long long)len);
}

int rr_nfs_fsync(struct rr_nfs_file *f)
{
	return NFSC_SAY(rr__nfsc_fsync(f), "fsync");
}

static int do_close(struct rr_nfs_file *f)
{
	int rc = 0;

	if (!f)
		return 0;
	rc = rr__nfsc_fsync(f);
	rr__nfsc_ranges_free(&f->unstable);
	rr__nfsc_ranges_free(&f->spare);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return rc;
}

int rr_nfs_close(struct rr_nfs_file *f)
{
	return NFSC_SAY(do_close(f), "close");
}
