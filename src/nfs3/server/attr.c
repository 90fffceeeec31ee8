/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Attributes (RFC 1813 section 2.6): fattr3 from stat, weak cache
 * consistency data around modifying calls, and sattr3 applied.
 */
#include "nfs3/server/nfsd.h"

#include <fcntl.h>
#include <sys/sysmacros.h>

static ftype3 ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR:
		return NF3DIR;
	case S_IFBLK:
		return NF3BLK;
	case S_IFCHR:
		return NF3CHR;
	case S_IFLNK:
		return NF3LNK;
	case S_IFSOCK:
		return NF3SOCK;
	case S_IFIFO:
		return NF3FIFO;
	default:
		return NF3REG;
	}
}

static nfstime3 ntime(const struct timespec *ts)
{
	return (nfstime3){.seconds = (uint32)ts->tv_sec,
			  .nseconds = (uint32)ts->tv_nsec};
}

void rr__nfsd_fattr(const struct stat *st, fattr3 *a)
{
	a->type = ftype(st->st_mode);
	a->mode = st->st_mode & 07777;
	a->nlink = (uint32)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->size = (uint64)st->st_size;
	a->used = (uint64)st->st_blocks * 512;
	a->rdev.specdata1 = major(st->st_rdev);
	a->rdev.specdata2 = minor(st->st_rdev);
	a->fsid = (uint64)st->st_dev;
	a->fileid = (uint64)st->st_ino;
	a->atime = ntime(&st->st_atim);
	a->mtime = ntime(&st->st_mtim);
	a->ctime = ntime(&st->st_ctim);
}

void rr__nfsd_post_attr(const struct stat *st, post_op_attr *p)
{
	p->attributes_follow = TRUE;
	rr__nfsd_fattr(st, &p->post_op_attr_u.attributes);
}

void rr__nfsd_post_attr_obj(struct nfsd_call *c, struct nfsd_obj *o,
			    post_op_attr *p)
{
	struct stat st;

	p->attributes_follow = o && rr__nfsd_be(c)->getattr(c, o, &st) == 0;
	if (p->attributes_follow)
		rr__nfsd_fattr(&st, &p->post_op_attr_u.attributes);
}

void rr__nfsd_pre_attr(const struct stat *st, pre_op_attr *p)
{
	wcc_attr *w = &p->pre_op_attr_u.attributes;

	p->attributes_follow = TRUE;
	w->size = (uint64)st->st_size;
	w->mtime = ntime(&st->st_mtim);
	w->ctime = ntime(&st->st_ctim);
}

void rr__nfsd_wcc(struct nfsd_call *c, const struct stat *pre,
		  struct nfsd_obj *o, wcc_data *w)
{
	w->before.attributes_follow = FALSE;
	if (pre)
		rr__nfsd_pre_attr(pre, &w->before);
	rr__nfsd_post_attr_obj(c, o, &w->after);
}

static struct timespec set_time(time_how how, const nfstime3 *t)
{
	switch (how) {
	case SET_TO_SERVER_TIME:
		return (struct timespec){.tv_nsec = UTIME_NOW};
	case SET_TO_CLIENT_TIME:
		return (struct timespec){.tv_sec = t->seconds,
					 .tv_nsec = t->nseconds};
	default:
		return (struct timespec){.tv_nsec = UTIME_OMIT};
	}
}

/* Without root we check as chmod/chown/utimes would for the caller. */
static nfsstat3 may_sattr(struct nfsd_call *c, const struct stat *st,
			  const sattr3 *a)
{
	bool owner = c->id.uid == 0 || c->id.uid == st->st_uid;

	if (c->s->as_root)
		return NFS3_OK;
	if ((a->mode.set_it || a->uid.set_it || a->gid.set_it ||
	     a->atime.set_it == SET_TO_CLIENT_TIME ||
	     a->mtime.set_it == SET_TO_CLIENT_TIME) &&
	    !owner)
		return NFS3ERR_PERM;
	if (a->size.set_it || a->atime.set_it || a->mtime.set_it)
		return owner ? NFS3_OK : rr__nfsd_may(c, st, ACCESS3_MODIFY);
	return NFS3_OK;
}

/* A size on anything but a regular file: refused before anything changes. */
static nfsstat3 size_ok(const struct stat *st, const sattr3 *a)
{
	if (!a->size.set_it || S_ISREG(st->st_mode))
		return NFS3_OK;
	return S_ISDIR(st->st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
}

static void be_sattr(const sattr3 *a, struct nfsd_be_sattr *b)
{
	b->set_mode = a->mode.set_it;
	b->mode = a->mode.set_mode3_u.mode & 07777;
	b->set_uid = a->uid.set_it;
	b->uid = a->uid.set_uid3_u.uid;
	b->set_gid = a->gid.set_it;
	b->gid = a->gid.set_gid3_u.gid;
	b->set_size = a->size.set_it;
	b->size = a->size.set_size3_u.size;
	b->atime = set_time(a->atime.set_it, &a->atime.set_atime_u.atime);
	b->mtime = set_time(a->mtime.set_it, &a->mtime.set_mtime_u.mtime);
}

/*
 * A mode on a symlink is left alone by the backend and the rest applied,
 * as the Linux nfsd does: clients send one with every SETATTR they build
 * from a chmod-less utimes.
 */
nfsstat3 rr__nfsd_sattr(struct nfsd_call *c, struct nfsd_obj *o,
			const sattr3 *a)
{
	nfsstat3 ns = may_sattr(c, &o->st, a);
	struct nfsd_be_sattr b;

	if (!ns)
		ns = size_ok(&o->st, a);
	if (ns)
		return ns;
	be_sattr(a, &b);
	return rr__nfsd_errno(rr__nfsd_be(c)->setattr(c, o, &b));
}
