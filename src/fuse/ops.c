// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The namespace and attribute operations of the low-level API: each turns
 * node ids into handles (fnode.c), makes one or two NFS calls as the
 * requesting user, and answers. Replies naming an object (lookup, mkdir,
 * readdirplus, ...) take a node reference that the kernel's FORGET gives
 * back; a reply the kernel did not take (the request was interrupted)
 * gives it back at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "fpriv.h"
#include "locks.h"

#define NGROUPS_ASK  64
#define RDP_MAXCOUNT (32 * 1024)

/*
 * The requester's groups are read from /proc by libfuse; a process whose
 * groups cannot be read (it exited) is served with its primary gid alone.
 */
static void req_cred(fuse_req_t req, struct fcred *fc)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	gid_t groups[NGROUPS_ASK];
	int ng = fuse_req_getgroups(req, NGROUPS_ASK, groups);
	uint32_t n = ng > 0 ? (uint32_t)ng : 0;

	if (n > 16)
		n = 16; /* AUTH_SYS carries 16 (RFC 5531 appendix A) */
	for (uint32_t i = 0; i < n; i++)
		fc->groups[i] = groups[i];
	fc->c = (struct rr_nfs_cred){.uid = c->uid,
				     .gid = c->gid,
				     .ngroups = n,
				     .groups = fc->groups};
}

struct rrf *rr__fuse_req(fuse_req_t req, struct fcred *cred)
{
	struct rrf *f = fuse_req_userdata(req);
	struct fcred fc;

	req_cred(req, &fc);
	rr_nfs_set_thread_cred(f->n, &fc.c);
	rr__fuse_intr_arm(req);
	if (cred) {
		*cred = fc;
		cred->c.groups = cred->groups;
	}
	return f;
}

/*
 * As the kernel client does (nfs(5)): an object that changed recently is
 * trusted briefly, one unchanged for long is trusted longer; a tenth of
 * its age, between the min and the max.
 */
double rr__fuse_attr_tmo(const struct rrf *f, const struct stat *st)
{
	bool dir = S_ISDIR(st->st_mode);
	double lo = dir ? f->o.acdirmin : f->o.acregmin;
	double hi = dir ? f->o.acdirmax : f->o.acregmax;
	double age = difftime(time(NULL), st->st_mtim.tv_sec) / 10;

	if (f->o.noac)
		return 0;
	return age < lo ? lo : age > hi ? hi : age;
}

/* A name stays valid as long as its directory's attributes. */
double rr__fuse_entry_tmo(const struct rrf *f, bool found)
{
	if (f->o.noac || f->o.lookupcache == RR_FUSE_LC_NONE)
		return 0;
	if (!found && f->o.lookupcache != RR_FUSE_LC_ALL)
		return 0;
	return f->o.acdirmin;
}

/*
 * A write-behind WRITE of the node, in flight or ended since stamp (taken
 * before the call that gave st), may have changed the file after the
 * server answered: st would take back a size the kernel already has.
 * Once those WRITEs are back, a GETATTR gives what is true now.
 */
static int fresh_attr(struct rrf *f, uint64_t id, const struct nfsc_fh *fh,
		      struct stat *st, uint64_t stamp)
{
	if (!rr__ftab_wb_since(&f->tab, id, stamp))
		return 0;
	rr__ftab_wb_drain(&f->tab, id);
	return rr__nfsc_h_getattr(f->n, fh, st);
}

void rr__fuse_reply_entry(struct rrf *f, fuse_req_t req,
			  const struct nfsc_fh *fh, const struct stat *st,
			  uint64_t stamp)
{
	struct fuse_entry_param e = {.attr = *st};
	uint64_t id;
	int rc = rr__ftab_ref(&f->tab, fh, &id);

	if (!rc) {
		rc = fresh_attr(f, id, fh, &e.attr, stamp);
		if (rc)
			rr__ftab_forget(&f->tab, id, 1);
	}
	if (rc) {
		rr__fuse_reply_err(req, -rc);
		return;
	}
	e.ino = id;
	e.attr_timeout = rr__fuse_attr_tmo(f, &e.attr);
	e.entry_timeout = rr__fuse_entry_tmo(f, true);
	if (fuse_reply_entry(req, &e))
		rr__ftab_forget(&f->tab, id, 1);
}

/* The handle of ino, or an error reply (false). */
static bool fh_of(struct rrf *f, fuse_req_t req, fuse_ino_t ino,
		  struct nfsc_fh *fh)
{
	int rc = rr__ftab_fh(&f->tab, ino, fh);

	if (rc)
		rr__fuse_reply_err(req, -rc);
	return !rc;
}

static void reply_made(struct rrf *f, fuse_req_t req, int rc,
		       const struct nfsc_fh *fh, const struct stat *st,
		       uint64_t stamp)
{
	if (rc)
		rr__fuse_reply_err(req, -rc);
	else
		rr__fuse_reply_entry(f, req, fh, st, stamp);
}

/*
 * A name the server does not have is answered as an entry with no inode,
 * which the kernel keeps as a negative dentry for its timeout: a build
 * probing many absent paths asks the server once per name.
 */
static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	uint64_t stamp = rr__ftab_wb_stamp(&f->tab);
	struct nfsc_fh dir, fh;
	struct stat st;
	int rc;

	if (!fh_of(f, req, parent, &dir))
		return;
	rc = rr__nfsc_h_lookup(f->n, &dir, name, &fh, &st);
	if (rc == -ENOENT && rr__fuse_entry_tmo(f, false) > 0) {
		struct fuse_entry_param e = {
			.ino = 0,
			.entry_timeout = rr__fuse_entry_tmo(f, false)};

		fuse_reply_entry(req, &e);
		return;
	}
	reply_made(f, req, rc, &fh, &st, stamp);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct rrf *f = fuse_req_userdata(req);

	rr__ftab_forget(&f->tab, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *fd)
{
	struct rrf *f = fuse_req_userdata(req);

	for (size_t i = 0; i < count; i++)
		rr__ftab_forget(&f->tab, fd[i].ino, fd[i].nlookup);
	fuse_reply_none(req);
}

static void reply_attr(struct rrf *f, fuse_req_t req, int rc,
		       const struct stat *st)
{
	if (rc)
		rr__fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, st, rr__fuse_attr_tmo(f, st));
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct nfsc_fh fh;
	struct stat st;

	(void)fi;
	if (!fh_of(f, req, ino, &fh))
		return;
	/* what the kernel's writes made, not what the server had before */
	rr__ftab_wb_drain(&f->tab, ino);
	reply_attr(f, req, rr__nfsc_h_getattr(f->n, &fh, &st), &st);
}

static struct nfsc_set set_of(const struct stat *a, int to_set)
{
	static const struct {
		int fuse;
		unsigned ours;
	} map[] = {
		{FUSE_SET_ATTR_MODE, NFSC_SET_MODE},
		{FUSE_SET_ATTR_UID, NFSC_SET_UID},
		{FUSE_SET_ATTR_GID, NFSC_SET_GID},
		{FUSE_SET_ATTR_SIZE, NFSC_SET_SIZE},
		{FUSE_SET_ATTR_ATIME, NFSC_SET_ATIME},
		{FUSE_SET_ATTR_MTIME, NFSC_SET_MTIME},
		{FUSE_SET_ATTR_ATIME_NOW, NFSC_SET_ATIME_NOW},
		{FUSE_SET_ATTR_MTIME_NOW, NFSC_SET_MTIME_NOW},
	};
	struct nfsc_set s = {.mode = a->st_mode,
			     .uid = a->st_uid,
			     .gid = a->st_gid,
			     .size = (uint64_t)a->st_size,
			     .atime = a->st_atim,
			     .mtime = a->st_mtim};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (to_set & map[i].fuse)
			s.mask |= map[i].ours;
	return s;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct nfsc_set s = set_of(attr, to_set);
	struct nfsc_fh fh;
	struct stat st;

	(void)fi;
	if (!fh_of(f, req, ino, &fh))
		return;
	/* a truncate lands after the writes made before it */
	rr__ftab_wb_drain(&f->tab, ino);
	reply_attr(f, req, rr__nfsc_h_setattr(f->n, &fh, &s, &st), &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct nfsc_fh fh;
	char *target = NULL;
	int rc;

	if (!fh_of(f, req, ino, &fh))
		return;
	rc = rr__nfsc_h_readlink(f->n, &fh, &target);
	if (rc)
		rr__fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, target);
	free(target);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	uint64_t stamp = rr__ftab_wb_stamp(&f->tab);
	struct nfsc_fh dir, fh;
	struct stat st;
	int rc;

	if (!fh_of(f, req, parent, &dir))
		return;
	if (S_ISREG(mode))
		rc = rr__nfsc_h_create(f->n, &dir, name, mode, true, &fh, &st);
	else
		rc = rr__nfsc_h_mknod(f->n, &dir, name, mode, rdev, &fh, &st);
	reply_made(f, req, rc, &fh, &st, stamp);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	uint64_t stamp = rr__ftab_wb_stamp(&f->tab);
	struct nfsc_fh dir, fh;
	struct stat st;

	if (fh_of(f, req, parent, &dir))
		reply_made(f, req,
			   rr__nfsc_h_mkdir(f->n, &dir, name, mode, &fh, &st),
			   &fh, &st, stamp);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	uint64_t stamp = rr__ftab_wb_stamp(&f->tab);
	struct nfsc_fh dir, fh;
	struct stat st;

	if (fh_of(f, req, parent, &dir))
		reply_made(
			f, req,
			rr__nfsc_h_symlink(f->n, &dir, name, target, &fh, &st),
			&fh, &st, stamp);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		    const char *name)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	uint64_t stamp = rr__ftab_wb_stamp(&f->tab);
	struct nfsc_fh dir, fh;
	struct stat st;

	if (fh_of(f, req, ino, &fh) && fh_of(f, req, parent, &dir))
		reply_made(f, req, rr__nfsc_h_link(f->n, &fh, &dir, name, &st),
			   &fh, &st, stamp);
}

static void remove_common(fuse_req_t req, fuse_ino_t parent, const char *name,
			  bool is_dir)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct nfsc_fh dir;

	if (fh_of(f, req, parent, &dir))
		rr__fuse_reply_err(
			req, -rr__nfsc_h_remove(f->n, &dir, name, is_dir));
}

/*
 * A file some opener still uses is renamed, not removed: READs and
 * WRITEs by its handle would find nothing on the server (ESTALE). The
 * LOOKUP that tells which file the name is costs a round trip only
 * while some file of the mount is open.
 */
static int silly_rename(struct rrf *f, const struct nfsc_fh *dir,
			const char *name, bool *renamed)
{
	static _Atomic uint32_t seq;
	struct fsilly *s;
	struct nfsc_fh fh;
	struct stat st;
	int rc;

	*renamed = false;
	if (rr__nfsc_h_lookup(f->n, dir, name, &fh, &st) ||
	    !rr__ftab_is_open(&f->tab, &fh))
		return 0;
	s = rr_calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dir = *dir;
	snprintf(s->name, sizeof(s->name), ".nfs%016llx%08x",
		 (unsigned long long)st.st_ino, (unsigned)++seq);
	rc = rr__nfsc_h_rename(f->n, dir, name, dir, s->name);
	if (!rc && rr__ftab_set_silly(&f->tab, &fh, s)) /* closed since */
		rc = rr__nfsc_h_remove(f->n, dir, s->name, false);
	else if (!rc)
		s = NULL;
	free(s);
	*renamed = !rc;
	return rc;
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct nfsc_fh dir;
	bool renamed = false;
	int rc = 0;

	if (!rr__ftab_any_open(&f->tab)) {
		remove_common(req, parent, name, false);
		return;
	}
	if (!fh_of(f, req, parent, &dir))
		return;
	rc = silly_rename(f, &dir, name, &renamed);
	if (!rc && !renamed)
		rc = rr__nfsc_h_remove(f->n, &dir, name, false);
	rr__fuse_reply_err(req, -rc);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_common(req, parent, name, true);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct nfsc_fh from, to;

	/* NFSv3 has neither RENAME_NOREPLACE nor RENAME_EXCHANGE */
	if (flags) {
		rr__fuse_reply_err(req, EINVAL);
		return;
	}
	if (fh_of(f, req, parent, &from) && fh_of(f, req, newparent, &to))
		rr__fuse_reply_err(req, -rr__nfsc_h_rename(f->n, &from, name,
							   &to, newname));
}

/*
 * access(2) asks the server, as the kernel client does: the mode bits
 * alone do not say what the server lets this user do (root squashing,
 * ACLs). Writing a directory means adding and removing names in it.
 */
static uint32_t access_needed(int mask, bool dir)
{
	uint32_t need = 0;

	if (mask & R_OK)
		need |= dir ? NFSC_ACCESS_READ | NFSC_ACCESS_LOOKUP
			    : NFSC_ACCESS_READ;
	if (mask & W_OK)
		need |= NFSC_ACCESS_MODIFY | NFSC_ACCESS_EXTEND |
			(dir ? NFSC_ACCESS_DELETE : 0);
	if (mask & X_OK)
		need |= dir ? NFSC_ACCESS_LOOKUP : NFSC_ACCESS_EXECUTE;
	return need;
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	const uint32_t all = 0x3f; /* every ACCESS3 bit: one call */
	uint32_t granted = 0, need;
	struct nfsc_fh fh;
	struct stat st;
	int rc;

	if (!fh_of(f, req, ino, &fh))
		return;
	rc = rr__nfsc_h_access(f->n, &fh, all, &granted, &st);
	if (!rc) {
		need = access_needed(mask, S_ISDIR(st.st_mode));
		rc = (granted & need) == need ? 0 : -EACCES;
	}
	rr__fuse_reply_err(req, -rc);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct nfsc_fh fh;
	struct statvfs sv;
	int rc;

	if (!fh_of(f, req, ino, &fh))
		return;
	rc = rr__nfsc_h_statfs(f->n, &fh, &sv);
	if (rc)
		rr__fuse_reply_err(req, -rc);
	else
		fuse_reply_statfs(req, &sv);
}

/* --------------------------------------------------------- directories */

/*
 * A directory open for reading: the server's cookie verifier, which
 * every READDIRPLUS of one listing hands back. The kernel's offsets are
 * the server's cookies, so a listing resumes where the kernel asks.
 */
struct odir {
	uint8_t verf[8];
};

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct odir *d = rr_calloc(1, sizeof(*d));

	(void)ino;
	if (!d) {
		rr__fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uintptr_t)d;
	if (fuse_reply_open(req, fi))
		free(d);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	free((struct odir *)(uintptr_t)fi->fh);
	rr__fuse_reply_err(req, 0);
}

/* One reply's buffer being filled from a READDIRPLUS round. */
struct fill {
	struct rrf *f;
	fuse_req_t req;
	bool plus;
	char *buf;
	size_t size, used;
	uint64_t last;	/* the cookie of the last entry taken */
	uint64_t stamp; /* rr__ftab_wb_stamp before the listing's calls */
	uint64_t *ids;	/* readdirplus: the nodes referenced, to undo */
	size_t nids;
};

static size_t add_plain(struct fill *fl, const char *name, uint64_t fileid,
			uint64_t cookie, const struct stat *st)
{
	struct stat s = {.st_ino = fileid, .st_mode = st ? st->st_mode : 0};

	return fuse_add_direntry(fl->req, fl->buf + fl->used,
				 fl->size - fl->used, name, &s, (off_t)cookie);
}

/*
 * A file written behind while the listing was made: its entry goes
 * without attributes (id 0), which the kernel takes as a name alone,
 * keeping the size its writes gave it.
 */
static bool stale(struct fill *fl, uint64_t id)
{
	return rr__ftab_wb_since(&fl->f->tab, id, fl->stamp);
}

/*
 * readdirplus: each entry with a handle is a lookup the kernel will
 * FORGET; one without (the server sent none) has id 0, which the kernel
 * lists without making a node.
 */
static size_t add_plus(struct fill *fl, const char *name, uint64_t fileid,
		       uint64_t cookie, const struct nfsc_fh *fh,
		       const struct stat *st)
{
	struct fuse_entry_param e = {.attr.st_ino = fileid,
				     .attr.st_mode = st ? st->st_mode : 0};
	size_t need = fuse_add_direntry_plus(fl->req, NULL, 0, name, NULL, 0);
	uint64_t id = 0;

	if (need > fl->size - fl->used)
		return need;
	if (fh && st && rr__ftab_ref(&fl->f->tab, fh, &id) == 0 &&
	    stale(fl, id)) {
		rr__ftab_forget(&fl->f->tab, id, 1);
	} else if (id) {
		fl->ids[fl->nids++] = id;
		e.ino = id;
		e.attr = *st;
		e.attr_timeout = rr__fuse_attr_tmo(fl->f, st);
		e.entry_timeout = rr__fuse_entry_tmo(fl->f, true);
	}
	return fuse_add_direntry_plus(fl->req, fl->buf + fl->used,
				      fl->size - fl->used, name, &e,
				      (off_t)cookie);
}

static bool fill_one(void *arg, const char *name, uint64_t fileid,
		     uint64_t cookie, const struct nfsc_fh *fh,
		     const struct stat *st)
{
	struct fill *fl = arg;
	size_t n;

	n = fl->plus ? add_plus(fl, name, fileid, cookie, fh, st)
		     : add_plain(fl, name, fileid, cookie, st);
	if (n > fl->size - fl->used)
		return false; /* full: the kernel asks again from here */
	fl->used += n;
	fl->last = cookie;
	return true;
}

static void unref_all(struct fill *fl)
{
	for (size_t i = 0; i < fl->nids; i++)
		rr__ftab_forget(&fl->f->tab, fl->ids[i], 1);
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi, bool plus)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct odir *d = (struct odir *)(uintptr_t)fi->fh;
	struct fill fl = {.f = f,
			  .req = req,
			  .plus = plus,
			  .size = size,
			  .stamp = rr__ftab_wb_stamp(&f->tab)};
	uint64_t cookie = (uint64_t)off;
	struct nfsc_fh fh;
	bool eof = false;
	int rc = 0;

	if (!fh_of(f, req, ino, &fh))
		return;
	fl.buf = rr_malloc(size ? size : 1);
	/* an entry takes at least 64 bytes of the reply */
	fl.ids = rr_malloc((size / 64 + 1) * sizeof(*fl.ids));
	if (!fl.buf || !fl.ids) {
		free(fl.buf);
		free(fl.ids);
		rr__fuse_reply_err(req, ENOMEM);
		return;
	}
	if (!off)
		memset(d->verf, 0, sizeof(d->verf)); /* a listing anew */
	/* a round the server sent empty fills nothing: go on */
	while (!rc && !eof && !fl.used) {
		fl.last = cookie;
		rc = rr__nfsc_h_readdirplus(f->n, &fh, cookie, d->verf,
					    RDP_MAXCOUNT, fill_one, &fl, &eof);
		if (!rc && !eof && !fl.used && fl.last == cookie)
			rc = -EPROTO; /* no progress */
		cookie = fl.last;
	}
	if (rc)
		rr__fuse_reply_err(req, -rc);
	else if (fuse_reply_buf(req, fl.buf, fl.used))
		unref_all(&fl); /* the kernel took none of these entries */
	free(fl.buf);
	free(fl.ids);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, true);
}

/*
 * Every listing is READDIRPLUS, so `ls -l` is answered in one pass
 * rather than the kernel choosing plain READDIR then a LOOKUP per name.
 * Writes and read-ahead as large as the mount's WRITE and READ (libfuse
 * trims them to its buffer, 1 MiB): one FUSE request, one NFS call,
 * rather than FUSE's 128 KiB cut into eight.
 */
static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct rrf *f = userdata;
	uint32_t w = rr_nfs_max_write(f->n), r = rr_nfs_max_read(f->n);

	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	if (w > conn->max_write)
		conn->max_write = w;
	/* the window readahead.c opens: INIT may only narrow it */
	uint64_t ra = (uint64_t)rr__fuse_readahead_kb(&f->o, r) * 1024;

	if (ra < r)
		ra = r;
	if (ra > conn->max_readahead)
		conn->max_readahead =
			(unsigned)(ra > UINT32_MAX ? UINT32_MAX : ra);
	/* read-ahead and O_DIRECT READs in flight: as many as acall.c keeps */
	if (rr__fuse_acalls_max(f) > conn->max_background) {
		conn->max_background = (unsigned)rr__fuse_acalls_max(f);
		conn->congestion_threshold = conn->max_background * 3 / 4;
	}
}

const struct fuse_lowlevel_ops rr__fuse_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = rr__fuse_open,
	.read = rr__fuse_read,
	.write = rr__fuse_write,
	.flush = rr__fuse_lk_flush,
	.release = rr__fuse_lk_release,
	.fsync = rr__fuse_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.access = op_access,
	.create = rr__fuse_create,
	.getlk = rr__fuse_getlk,
	.setlk = rr__fuse_setlk,
	.flock = rr__fuse_flock,
};
