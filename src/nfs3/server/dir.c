/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The procedures that change a directory (RFC 1813 sections 3.3.8-3.3.15):
 * CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK. Each works
 * on an O_PATH descriptor of the directory with a single checked name, so
 * nothing outside it is touched whatever the name says.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A directory a call will change, and its attributes before. */
struct dirop {
	struct nfsd_obj dir;
	int fd;
};

static nfsstat3 dirop_begin(struct nfsd_call *c, const diropargs3 *a,
			    struct dirop *d)
{
	nfsstat3 st = rr__nfsd_resolve(c, &a->dir, &d->dir);

	d->fd = -1;
	if (st)
		return st;
	d->fd = rr__nfsd_obj_fd(c, &d->dir);
	if (d->fd < 0)
		return rr__nfsd_errno(d->fd);
	if (!S_ISDIR(d->dir.st.st_mode))
		return NFS3ERR_NOTDIR;
	if (c->id.ro)
		return NFS3ERR_ROFS;
	st = rr__nfsd_name_ok(a->name);
	if (st)
		return st;
	return rr__nfsd_may(c, &d->dir.st, ACCESS3_MODIFY | ACCESS3_LOOKUP);
}

static void dirop_end(struct dirop *d, wcc_data *w)
{
	rr__nfsd_wcc(d->fd >= 0 ? &d->dir.st : NULL, d->fd, w);
}

/* The new object's handle and attributes (post_op: may be left out). */
static void new_obj(struct nfsd_call *c, struct dirop *d, const char *name,
		    post_op_fh3 *fh, post_op_attr *attr)
{
	struct nfsd_obj o;

	fh->handle_follows = FALSE;
	attr->attributes_follow = FALSE;
	rr__nfsd_obj_place(&o, &d->dir, name);
	if (rr__nfsd_stat(d->fd, name, &o.st, &o.birth))
		return;
	rr__nfsd_post_attr(&o.st, attr);
	fh->handle_follows =
		rr__nfsd_make_fh(c, &o, &fh->post_op_fh3_u.handle) == 0;
}

/* sattr3 on the child just made (mode included: the umask ate some). */
static nfsstat3 set_child(struct nfsd_call *c, struct dirop *d,
			  const char *name, const sattr3 *a)
{
	struct stat st;
	uint64_t birth;
	nfsstat3 ns;
	int fd = openat(d->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return rr__nfsd_errno(errno);
	ns = rr__nfsd_errno(rr__nfsd_stat(fd, "", &st, &birth));
	if (!ns)
		ns = rr__nfsd_sattr(c, fd, &st, a);
	close(fd);
	return ns;
}

static mode_t mode_of(const sattr3 *a, mode_t dflt)
{
	return a->mode.set_it ? a->mode.set_mode3_u.mode & 07777 : dflt;
}

/* EXCLUSIVE: the verifier lives in atime and mtime (seconds), as usual. */
static void verf_times(const createverf3 v, struct timespec ts[2])
{
	uint32_t a, m;

	memcpy(&a, v, 4);
	memcpy(&m, v + 4, 4);
	ts[0] = (struct timespec){.tv_sec = a};
	ts[1] = (struct timespec){.tv_sec = m};
}

static nfsstat3 create_excl(struct dirop *d, const char *name,
			    const createverf3 v)
{
	struct timespec ts[2];
	struct stat st;

	verf_times(v, ts);
	if (mknodat(d->fd, name, S_IFREG | 0600, 0) == 0)
		return utimensat(d->fd, name, ts, AT_SYMLINK_NOFOLLOW)
			       ? rr__nfsd_errno(errno)
			       : NFS3_OK;
	if (errno != EEXIST)
		return rr__nfsd_errno(errno);
	/* a retransmission of our own create succeeds again */
	if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && st.st_atim.tv_sec == ts[0].tv_sec &&
	    st.st_mtim.tv_sec == ts[1].tv_sec)
		return NFS3_OK;
	return NFS3ERR_EXIST;
}

static nfsstat3 create_file(struct nfsd_call *c, struct dirop *d,
			    const char *name, const createhow3 *how)
{
	const sattr3 *a = &how->createhow3_u.obj_attributes;
	struct stat st;

	if (how->mode == EXCLUSIVE)
		return create_excl(d, name, how->createhow3_u.verf);
	if (how->mode != UNCHECKED && how->mode != GUARDED)
		return NFS3ERR_INVAL;
	if (mknodat(d->fd, name, S_IFREG | mode_of(a, 0644), 0)) {
		if (errno != EEXIST || how->mode == GUARDED)
			return rr__nfsd_errno(errno);
		if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW))
			return rr__nfsd_errno(errno);
		if (!S_ISREG(st.st_mode))
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
	dirop_end(&d, st ? &r->CREATE3res_u.resfail.dir_wcc : &ok->dir_wcc);
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

	if (!st && mkdirat(d.fd, name, mode_of(&a->attributes, 0755)))
		st = rr__nfsd_errno(errno);
	if (!st)
		st = set_child(c, &d, name, &a->attributes);
	if (!st)
		new_obj(c, &d, name, &ok->obj, &ok->obj_attributes);
	dirop_end(&d, st ? &r->MKDIR3res_u.resfail.dir_wcc : &ok->dir_wcc);
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

	/* the target is stored, never followed by us */
	if (!st && !*a->symlink.symlink_data)
		st = NFS3ERR_INVAL;
	if (!st && symlinkat(a->symlink.symlink_data, d.fd, name))
		st = rr__nfsd_errno(errno);
	if (!st)
		new_obj(c, &d, name, &ok->obj, &ok->obj_attributes);
	dirop_end(&d, st ? &r->SYMLINK3res_u.resfail.dir_wcc : &ok->dir_wcc);
	return st;
}

static nfsstat3 make_node(struct nfsd_call *c, struct dirop *d,
			  const char *name, const mknoddata3 *w)
{
	const sattr3 *a = &w->mknoddata3_u.pipe_attributes;
	mode_t kind;
	dev_t dev = 0;

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
	if (mknodat(d->fd, name, kind | mode_of(a, 0644), dev))
		return rr__nfsd_errno(errno);
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
	dirop_end(&d, st ? &r->MKNOD3res_u.resfail.dir_wcc : &ok->dir_wcc);
	return st;
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

static nfsstat3 unlink_op(struct nfsd_call *c, const diropargs3 *a, int flags,
			  wcc_data *w)
{
	struct stat gone = {0};
	struct dirop d;
	nfsstat3 st;

	if (flags && !strcmp(a->name, "..")) {
		st = NFS3ERR_EXIST; /* RFC 1813 3.3.13 */
		d.fd = -1;
	} else {
		st = dirop_begin(c, a, &d);
	}
	if (!st)
		gone = named(d.fd, a->name);
	if (!st && unlinkat(d.fd, a->name, flags))
		st = rr__nfsd_errno(errno);
	if (!st)
		forget(c, &gone);
	dirop_end(&d, w);
	return st;
}

nfsstat3 rr__nfsd_remove(struct nfsd_call *c, void *args, void *res)
{
	return unlink_op(c, &((REMOVE3args *)args)->object, 0,
			 &((REMOVE3res *)res)->REMOVE3res_u.resok.dir_wcc);
}

nfsstat3 rr__nfsd_rmdir(struct nfsd_call *c, void *args, void *res)
{
	return unlink_op(c, &((RMDIR3args *)args)->object, AT_REMOVEDIR,
			 &((RMDIR3res *)res)->RMDIR3res_u.resok.dir_wcc);
}

nfsstat3 rr__nfsd_rename(struct nfsd_call *c, void *args, void *res)
{
	RENAME3args *a = args;
	RENAME3resok *ok = &((RENAME3res *)res)->RENAME3res_u.resok;
	struct dirop from, to;
	struct nfsd_obj o;
	struct stat gone = {0};
	nfsstat3 st = dirop_begin(c, &a->from, &from);

	to.fd = -1;
	if (!st)
		st = dirop_begin(c, &a->to, &to);
	if (!st)
		gone = named(to.fd, a->to.name); /* replaced, if anything */
	if (!st && renameat(from.fd, a->from.name, to.fd, a->to.name))
		st = rr__nfsd_errno(errno);
	if (!st)
		forget(c, &gone);
	/* the moved object's handle finds it at once under its new name */
	if (!st && !rr__nfsd_stat(to.fd, a->to.name, &o.st, &o.birth)) {
		rr__nfsd_cache_put(c->s, &o.st, (uint64_t)to.dir.st.st_dev,
				   (uint64_t)to.dir.st.st_ino, a->to.name);
		forget(c, &o.st); /* its entry holds the old path */
	}
	dirop_end(&from, &ok->fromdir_wcc);
	dirop_end(&to, &ok->todir_wcc);
	return st;
}

nfsstat3 rr__nfsd_link(struct nfsd_call *c, void *args, void *res)
{
	LINK3args *a = args;
	LINK3resok *ok = &((LINK3res *)res)->LINK3res_u.resok;
	struct nfsd_obj file;
	struct dirop d = {.fd = -1};
	char p[32];
	nfsstat3 st = rr__nfsd_resolve(c, &a->file, &file);
	int fd = st ? -1 : rr__nfsd_obj_fd(c, &file);

	if (!st && fd < 0)
		st = rr__nfsd_errno(fd);
	if (!st && S_ISDIR(file.st.st_mode))
		st = NFS3ERR_ISDIR;
	if (!st)
		st = dirop_begin(c, &a->link, &d);
	if (!st) {
		/* linking an fd needs no privilege through /proc */
		rr__nfsd_fd_path(fd, p);
		if (linkat(AT_FDCWD, p, d.fd, a->link.name, AT_SYMLINK_FOLLOW))
			st = rr__nfsd_errno(errno);
	}
	rr__nfsd_post_attr_fd(fd, &ok->file_attributes);
	dirop_end(&d, &ok->linkdir_wcc);
	return st;
}
