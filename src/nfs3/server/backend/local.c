/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The local directory backend: objects are O_PATH descriptors below the
 * export root, found again from handles by fh.c (and the open-file cache,
 * fcache.c); the call acts as the caller through them (ident.c), so the
 * kernel makes each permission decision. This file holds the handles,
 * attributes and namespace ops; local_io.c the files' contents,
 * local_dir.c listings.
 *
 * Each namespace op works on an O_PATH descriptor of the directory with a
 * single checked name, so nothing outside it is touched whatever the name
 * says.
 */
#include "nfs3/server/backend/local.h"
#include "nfs3/server/backend/lock_table.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* nfsstat3 of fh.c's resolve as the interface's errno, and back (obj.c). */
static int resolve_errno(nfsstat3 st)
{
	switch (st) {
	case NFS3_OK:
		return 0;
	case NFS3ERR_BADHANDLE:
		return -EBADMSG;
	case NFS3ERR_STALE:
		return -ESTALE;
	case NFS3ERR_XDEV:
		return -EXDEV;
	case NFS3ERR_ACCES:
		return -EACCES;
	case NFS3ERR_JUKEBOX:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

static int l_fh_decode(struct nfsd_call *c, const void *fh, size_t len,
		       struct nfsd_obj *o)
{
	nfs_fh3 h = {.data = {.data_len = (u_int)len, .data_val = (char *)fh}};

	return resolve_errno(rr__nfsd_local_resolve(c, &h, o));
}

/* A handle made is a place the handle cache learns (o->name's directory). */
static int l_fh_encode(struct nfsd_call *c, const struct nfsd_obj *o, void *out,
		       size_t *len)
{
	rr__nfsd_fh_encode(c->s->key, &o->st, o->birth, out);
	*len = NFSD_FH_LEN;
	if (o->name)
		rr__nfsd_cache_put(c->s, &o->st, o->pdev, o->pino, o->name);
	return 0;
}

static int l_act(struct nfsd_call *c, struct nfsd_obj *o)
{
	int fd = rr__nfsd_obj_fd(c, o);

	return fd < 0 ? fd : 0;
}

/* The descriptor o was acted on through, or -EBADF: never opens one. */
int rr__nfsd_local_fd(const struct nfsd_obj *o)
{
	return o->fd >= 0 ? o->fd : -EBADF;
}

static int l_getattr(struct nfsd_call *c, struct nfsd_obj *o, struct stat *st)
{
	int fd = rr__nfsd_local_fd(o);

	(void)c;
	if (fd < 0)
		return fd;
	return fstat(fd, st) ? -errno : 0;
}

/* A child opened for acting on (NFSD_BE_LOOKUP_ACT), as the caller now. */
static int lookup_act(struct nfsd_call *c, int dirfd, const char *name,
		      struct nfsd_obj *o)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
	rc = rr__nfsd_track(c, fd);
	if (rc)
		return rc;
	o->fd = fd;
	return rr__nfsd_stat(fd, "", &o->st, &o->birth);
}

static int l_lookup(struct nfsd_call *c, struct nfsd_obj *dir, const char *name,
		    struct nfsd_obj *o, unsigned flags)
{
	int dirfd;

	if (!strcmp(name, ".")) {
		*o = *dir;
		return 0;
	}
	if (!strcmp(name, "..")) /* never above the root */
		return rr__nfsd_obj_parent(c, dir, o);
	dirfd = rr__nfsd_obj_fd(c, dir);
	if (dirfd < 0)
		return dirfd;
	rr__nfsd_obj_place(o, dir, name);
	if (flags & NFSD_BE_LOOKUP_ACT)
		return lookup_act(c, dirfd, name, o);
	return rr__nfsd_stat(dirfd, name, &o->st, &o->birth);
}

static int l_mknod(struct nfsd_call *c, struct nfsd_obj *dir, const char *name,
		   mode_t mode, dev_t rdev)
{
	int dirfd = rr__nfsd_obj_fd(c, dir);

	if (dirfd < 0)
		return dirfd;
	return mknodat(dirfd, name, mode, rdev) ? -errno : 0;
}

static int l_mkdir(struct nfsd_call *c, struct nfsd_obj *dir, const char *name,
		   mode_t mode)
{
	int dirfd = rr__nfsd_obj_fd(c, dir);

	if (dirfd < 0)
		return dirfd;
	return mkdirat(dirfd, name, mode) ? -errno : 0;
}

/* The target is stored, never followed by us. */
static int l_symlink(struct nfsd_call *c, struct nfsd_obj *dir,
		     const char *name, const char *target)
{
	int dirfd = rr__nfsd_obj_fd(c, dir);

	if (dirfd < 0)
		return dirfd;
	return symlinkat(target, dirfd, name) ? -errno : 0;
}

/* Linking an fd needs no privilege through /proc. */
static int l_link(struct nfsd_call *c, struct nfsd_obj *o, struct nfsd_obj *dir,
		  const char *name)
{
	int fd = rr__nfsd_obj_fd(c, o);
	int dirfd = fd < 0 ? fd : rr__nfsd_obj_fd(c, dir);
	char p[32];

	if (dirfd < 0)
		return dirfd;
	rr__nfsd_fd_path(fd, p);
	return linkat(AT_FDCWD, p, dirfd, name, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

/*
 * What name in dirfd is now, to be forgotten by the open-file cache once
 * the name goes: a file removed through us is closed at once (its blocks
 * freed) unless a call is using it. dev 0: nothing there.
 */
static struct stat named(int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		st.st_dev = st.st_ino = 0;
	return st;
}

static void forget(struct nfsd_call *c, const struct stat *st)
{
	if (st->st_dev || st->st_ino)
		rr__nfsd_fcache_forget(c->s->files, st->st_dev, st->st_ino);
}

static int l_remove(struct nfsd_call *c, struct nfsd_obj *dir, const char *name,
		    bool isdir)
{
	int dirfd = rr__nfsd_obj_fd(c, dir);
	struct stat gone;

	if (dirfd < 0)
		return dirfd;
	gone = named(dirfd, name);
	if (unlinkat(dirfd, name, isdir ? AT_REMOVEDIR : 0))
		return -errno;
	forget(c, &gone);
	return 0;
}

/* The moved object's handle finds it at once under its new name. */
static void moved(struct nfsd_call *c, const struct nfsd_obj *to, int tofd,
		  const char *tname)
{
	struct stat st;
	uint64_t birth;

	if (rr__nfsd_stat(tofd, tname, &st, &birth))
		return;
	rr__nfsd_cache_put(c->s, &st, (uint64_t)to->st.st_dev,
			   (uint64_t)to->st.st_ino, tname);
	forget(c, &st); /* its entry holds the old path */
}

static int l_rename(struct nfsd_call *c, struct nfsd_obj *from,
		    const char *fname, struct nfsd_obj *to, const char *tname)
{
	int ffd = rr__nfsd_obj_fd(c, from);
	int tfd = ffd < 0 ? ffd : rr__nfsd_obj_fd(c, to);
	struct stat gone;

	if (tfd < 0)
		return tfd;
	gone = named(tfd, tname); /* replaced, if anything */
	if (renameat(ffd, fname, tfd, tname))
		return -errno;
	forget(c, &gone);
	moved(c, to, tfd, tname);
	return 0;
}

static ssize_t l_readlink(struct nfsd_call *c, struct nfsd_obj *o, char *buf,
			  size_t cap)
{
	int fd = rr__nfsd_obj_fd(c, o);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = readlinkat(fd, "", buf, cap - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

static int l_statfs(struct nfsd_call *c, struct nfsd_obj *o,
		    struct nfsd_be_statfs *out)
{
	int fd = rr__nfsd_obj_fd(c, o);
	struct statvfs v;
	long lm, nm;

	if (fd < 0)
		return fd;
	if (fstatvfs(fd, &v))
		return -errno;
	out->tbytes = (uint64_t)v.f_blocks * v.f_frsize;
	out->fbytes = (uint64_t)v.f_bfree * v.f_frsize;
	out->abytes = (uint64_t)v.f_bavail * v.f_frsize;
	out->tfiles = v.f_files;
	out->ffiles = v.f_ffree;
	out->afiles = v.f_favail;
	lm = fpathconf(fd, _PC_LINK_MAX);
	nm = fpathconf(fd, _PC_NAME_MAX);
	out->linkmax = lm > 0 ? (uint32_t)lm : 0;
	out->namemax = nm > 0 ? (uint32_t)nm : 0;
	return 0;
}

const struct nfsd_be_ops rr__nfsd_be_local_ops = {
	.name = "local",
	.fh_decode = l_fh_decode,
	.fh_encode = l_fh_encode,
	.act = l_act,
	.getattr = l_getattr,
	.setattr = rr__nfsd_local_setattr,
	.lookup = l_lookup,
	.open = rr__nfsd_local_open,
	.close = rr__nfsd_local_close,
	.read = rr__nfsd_local_read,
	.write = rr__nfsd_local_write,
	.commit = rr__nfsd_local_commit,
	.mknod = l_mknod,
	.mkdir = l_mkdir,
	.symlink = l_symlink,
	.link = l_link,
	.remove = l_remove,
	.rename = l_rename,
	.readlink = l_readlink,
	.opendir = rr__nfsd_local_opendir,
	.readdir = rr__nfsd_local_readdir,
	.seekdir = rr__nfsd_local_seekdir,
	.closedir = rr__nfsd_local_closedir,
	.statfs = l_statfs,
	.lock = rr__nfsd_lktab_lock,
	.unlock = rr__nfsd_lktab_unlock,
	.lock_test = rr__nfsd_lktab_test,
	.lock_count = rr__nfsd_lktab_count,
};
