/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The CephFS backend: an export is a directory of a CephFS, reached
 * through libcephfs' low-level calls (ceph_ll_*), one mount per export.
 * This file holds the mount, handles, attributes and lookups;
 * cephfs_ns.c the namespace, cephfs_io.c files' contents, cephfs_dir.c
 * listings.
 *
 * A handle is backend.h's frame, version 2, carrying the file system's
 * id (fscid), the inode number and the snapshot id, sealed with the
 * server's key like the local backend's: no state of ours is in it, so
 * it stays good across restarts and is the same on every server that
 * shares the key (state_dir/fh.key) and the export's path. An inode
 * libcephfs no longer caches is looked up by number at the MDS
 * (ceph_ll_lookup_inode); one that is gone is STALE. As with Linux's
 * no_subtree_check, a handle names the inode, not the path: a file moved
 * out of ceph_path stays reachable to whoever holds its handle, and only
 * handles we made are accepted.
 *
 * Each call acts as its caller: libcephfs decides every permission from
 * a UserPerm of the call's (squashed) uid, gid and groups, made once per
 * call when first needed; resolving handles runs as the mount's own
 * credentials (root), as the local backend resolves as the server.
 * Inode references a call takes are the call's (c->be_held, 8 at most),
 * dropped when it ends; a lookup that is not acted on keeps none, so a
 * READDIRPLUS of any size holds at most its directory.
 *
 * What this backend keeps: nothing of its own per file. libcephfs keeps
 * its inode and dentry cache, bounded by client_cache_size (16384 inodes
 * by default; set it in the ceph.conf), and its data cache by
 * client_oc_size (200 MiB by default); what WRITEs gave it and the OSDs
 * have not yet stored, by a sync each client_oc_max_dirty bytes
 * (cephfs_writeback.c), since libcephfs does not bound that itself.
 *
 * libcephfs calls block (they wait for the MDS and the OSDs): a call run
 * where it must not block (c->nowait) is deferred to a worker at its
 * first handle.
 */
#include "nfs3/server/backend/cephfs.h"

#include "base/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(gid_t) == sizeof(uint32_t), "gids are passed as is");

void rr__nfsd_ceph_fill(const struct nfsd_cephfs *fs,
			const struct ceph_statx *x, struct nfsd_obj *o)
{
	struct stat *st = &o->st;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	st->st_dev = (dev_t)fs->fscid;
	st->st_ino = (ino_t)x->stx_ino;
	st->st_mode = x->stx_mode;
	st->st_nlink = x->stx_nlink;
	st->st_uid = x->stx_uid;
	st->st_gid = x->stx_gid;
	st->st_rdev = x->stx_rdev;
	st->st_size = (off_t)x->stx_size;
	st->st_blksize = x->stx_blksize;
	st->st_blocks = (blkcnt_t)x->stx_blocks;
	st->st_atim = x->stx_atime;
	st->st_mtim = x->stx_mtime;
	st->st_ctim = x->stx_ctime;
	o->snap = (uint64_t)x->stx_dev; /* libcephfs reports the snap id so */
}

const UserPerm *rr__nfsd_ceph_perm(struct nfsd_call *c)
{
	const struct nfsd_ident *id = &c->id;

	if (!c->be_perm)
		c->be_perm = ceph_userperm_new(id->uid, id->gid, (int)id->ngids,
					       (gid_t *)c->id.gids);
	return c->be_perm;
}

int rr__nfsd_ceph_hold(struct nfsd_call *c, struct Inode *in)
{
	if (c->nbe_held == (int)(sizeof(c->be_held) / sizeof(c->be_held[0]))) {
		ceph_ll_put(rr__nfsd_ceph(c)->cm, in);
		return -EMFILE;
	}
	c->be_held[c->nbe_held++] = in;
	return 0;
}

static void c_call_end(struct nfsd_call *c)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);

	while (c->nbe_held)
		ceph_ll_put(fs->cm, c->be_held[--c->nbe_held]);
	if (c->be_perm)
		ceph_userperm_destroy(c->be_perm);
	c->be_perm = NULL;
}

/* The inode of (ino, snap), referenced: the cache's, else the MDS's. */
static int find_inode(struct nfsd_cephfs *fs, uint64_t ino, uint64_t snap,
		      struct Inode **out)
{
	vinodeno_t vi = {.ino = {.val = ino}, .snapid = {.val = snap}};
	int rc;

	*out = ceph_ll_get_inode(fs->cm, vi);
	if (*out)
		return 0;
	if (snap == CEPH_NOSNAP)
		rc = ceph_ll_lookup_inode(fs->cm, (struct inodeno_t){ino}, out);
	else
		rc = ceph_ll_lookup_vino(fs->cm, vi, out);
	return rc == -ENOENT ? -ESTALE : rc;
}

int rr__nfsd_ceph_inode(struct nfsd_call *c, struct nfsd_obj *o,
			struct Inode **out)
{
	struct Inode *in;
	int rc;

	if (o->be_ref) {
		*out = o->be_ref;
		return 0;
	}
	rc = find_inode(rr__nfsd_ceph(c), (uint64_t)o->st.st_ino, o->snap, &in);
	if (!rc)
		rc = rr__nfsd_ceph_hold(c, in);
	if (rc)
		return rc;
	o->be_ref = *out = in;
	return 0;
}

static int stat_inode(struct nfsd_cephfs *fs, struct Inode *in,
		      struct ceph_statx *x)
{
	return ceph_ll_getattr(fs->cm, in, x, NFSD_CEPH_WANT, 0, fs->server);
}

static int c_fh_decode(struct nfsd_call *c, const void *fh, size_t len,
		       struct nfsd_obj *o)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	uint64_t fscid, ino, snap;
	struct ceph_statx x;
	struct Inode *in;
	int rc;

	if (rr__nfsd_fh_sealed(c->s->key, fh, len) != NFSD_FH_V_CEPHFS)
		return -EBADMSG;
	rr__nfsd_fh_fields(fh, &fscid, &ino, &snap);
	if (fscid != fs->fscid)
		return -ESTALE; /* the export now names another file system */
	if (c->nowait)
		return rr__nfsd_defer(c);
	rc = find_inode(fs, ino, snap, &in);
	if (!rc)
		rc = rr__nfsd_ceph_hold(c, in);
	if (!rc)
		rc = stat_inode(fs, in, &x);
	if (rc)
		return rc == -ENOENT ? -ESTALE : rc;
	rr__nfsd_ceph_fill(fs, &x, o);
	o->be_ref = in;
	return 0;
}

static int c_fh_encode(struct nfsd_call *c, const struct nfsd_obj *o, void *out,
		       size_t *len)
{
	rr__nfsd_fh_seal(c->s->key, NFSD_FH_V_CEPHFS, rr__nfsd_ceph(c)->fscid,
			 (uint64_t)o->st.st_ino, o->snap, out);
	*len = NFSD_FH_LEN;
	return 0;
}

static int c_act(struct nfsd_call *c, struct nfsd_obj *o)
{
	struct Inode *in;

	if (c->nowait)
		return rr__nfsd_defer(c);
	return rr__nfsd_ceph_inode(c, o, &in);
}

static int c_getattr(struct nfsd_call *c, struct nfsd_obj *o, struct stat *st)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct ceph_statx x;
	struct nfsd_obj fresh;
	struct Inode *in;
	int rc = rr__nfsd_ceph_inode(c, o, &in);

	if (!rc)
		rc = stat_inode(fs, in, &x);
	if (rc)
		return rc;
	rr__nfsd_ceph_fill(fs, &x, &fresh);
	*st = fresh.st;
	return 0;
}

static int c_root(struct nfsd_call *c, struct nfsd_obj *o)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct ceph_statx x;
	int rc = stat_inode(fs, fs->root, &x);

	if (rc)
		return rc;
	rr__nfsd_ceph_fill(fs, &x, o);
	o->be_ref = fs->root; /* held by the mount, for as long as it lives */
	return 0;
}

static bool is_root(const struct nfsd_cephfs *fs, const struct nfsd_obj *o)
{
	return (uint64_t)o->st.st_ino == fs->root_ino && o->snap == CEPH_NOSNAP;
}

static int c_lookup(struct nfsd_call *c, struct nfsd_obj *dir, const char *name,
		    struct nfsd_obj *o, unsigned flags)
{
	struct nfsd_cephfs *fs = rr__nfsd_ceph(c);
	struct Inode *din, *in;
	const UserPerm *perm;
	struct ceph_statx x;
	int rc;

	if (!strcmp(name, ".")) {
		*o = *dir;
		return 0;
	}
	if (!strcmp(name, "..") && is_root(fs, dir))
		return c_root(c, o); /* never above the export */
	rc = rr__nfsd_ceph_inode(c, dir, &din);
	if (rc)
		return rc;
	perm = rr__nfsd_ceph_perm(c);
	rc = perm ? ceph_ll_lookup(fs->cm, din, name, &in, &x, NFSD_CEPH_WANT,
				   0, perm)
		  : -ENOMEM;
	if (rc)
		return rc;
	rr__nfsd_ceph_fill(fs, &x, o);
	if (!(flags & NFSD_BE_LOOKUP_ACT)) {
		ceph_ll_put(fs->cm, in);
		return 0;
	}
	rc = rr__nfsd_ceph_hold(c, in);
	if (!rc)
		o->be_ref = in;
	return rc;
}

/* ----------------------------------------------------------- mount */

static void unmount(struct nfsd_cephfs *fs)
{
	rr__nfsd_ceph_locks_drop(fs);
	rr__nfsd_ceph_opens_free(fs->opens);
	rr__nfsd_ceph_waits_free(fs->waits);
	pthread_mutex_destroy(&fs->lk_mu);
	rr__nfsd_ceph_wb_destroy(&fs->wb);
	if (fs->root)
		ceph_ll_put(fs->cm, fs->root);
	if (ceph_is_mounted(fs->cm))
		ceph_unmount(fs->cm);
	ceph_release(fs->cm);
	free(fs);
}

static void c_destroy(struct nfsd_be *be)
{
	if (be->priv)
		unmount(be->priv);
	be->priv = NULL;
}

/* "ceph_conf=F ceph_id=I ceph_fs=N": the options that chose the cluster */
static void who(const struct nfsd_be_conf *bc, char *out, size_t len)
{
	snprintf(out, len, "ceph_conf=%s ceph_id=%s ceph_fs=%s",
		 bc->ceph_conf ? bc->ceph_conf : "(default)",
		 bc->ceph_id ? bc->ceph_id : "admin",
		 bc->ceph_fs ? bc->ceph_fs : "(default)");
}

/*
 * libcephfs waits client_mount_timeout (300 s by default) for a cluster
 * that does not answer; a server that starts wants to say so sooner. A
 * value the ceph.conf sets is kept.
 */
static void mount_timeout(struct ceph_mount_info *cm)
{
	char v[64];

	if (ceph_conf_get(cm, "client_mount_timeout", v, sizeof(v)) ||
	    atof(v) == 300.0)
		ceph_conf_set(cm, "client_mount_timeout", "15");
}

/*
 * Ceph gathers log entries in memory above the level it writes, for a
 * dump when it crashes: 0/5 for the client and its object cacher, 0/1
 * for the objecter. Each READ's entries went to Ceph's log thread, a
 * wake-up for every few calls, and cost 4 KiB random reads a fifth of
 * their rate. Levels at those defaults gather nothing here; levels the
 * ceph.conf sets are kept, so debugging works as Ceph documents it.
 */
static void quiet_gather(struct ceph_mount_info *cm)
{
	static const char *const subsys[][2] = {{"debug_client", "0/5"},
						{"debug_objectcacher", "0/5"},
						{"debug_objecter", "0/1"}};
	char v[64];

	for (size_t i = 0; i < sizeof(subsys) / sizeof(subsys[0]); i++)
		if (!ceph_conf_get(cm, subsys[i][0], v, sizeof(v)) &&
		    !strcmp(v, subsys[i][1]))
			ceph_conf_set(cm, subsys[i][0], "0/0");
}

static int configure(struct nfsd_cephfs *fs, const struct nfsd_be_conf *bc,
		     const char *path, char *err, size_t errlen)
{
	char w[2048];
	int rc = ceph_create(&fs->cm, bc->ceph_id);

	if (rc) {
		snprintf(err, errlen, "export %s: ceph_id=%s: %s", path,
			 bc->ceph_id ? bc->ceph_id : "admin", strerror(-rc));
		return rc;
	}
	rc = ceph_conf_read_file(fs->cm, bc->ceph_conf);
	if (rc) {
		snprintf(err, errlen, "export %s: ceph_conf=%s: %s", path,
			 bc->ceph_conf ? bc->ceph_conf : "(default)",
			 strerror(-rc));
		return rc;
	}
	mount_timeout(fs->cm);
	quiet_gather(fs->cm);
	rc = ceph_init(fs->cm);
	if (!rc && bc->ceph_fs)
		rc = ceph_select_filesystem(fs->cm, bc->ceph_fs);
	if (!rc)
		rc = ceph_mount(fs->cm, "/");
	if (rc) {
		who(bc, w, sizeof(w));
		snprintf(err, errlen,
			 "export %s: cannot mount the CephFS (%s): %s%s", path,
			 w, strerror(-rc),
			 rc == -ETIMEDOUT || rc == -ENOENT
				 ? " (is the cluster up, and the file "
				   "system there?)"
				 : "");
	}
	return rc;
}

/* The exported directory, held for as long as the mount lives. */
static int find_root(struct nfsd_cephfs *fs, const struct nfsd_be_conf *bc,
		     const char *path, char *err, size_t errlen)
{
	const char *dir = bc->ceph_path ? bc->ceph_path : "/";
	struct ceph_statx x;
	int rc = ceph_ll_walk(fs->cm, dir, &fs->root, &x, NFSD_CEPH_WANT, 0,
			      fs->server);

	if (!rc && !S_ISDIR(x.stx_mode))
		rc = -ENOTDIR;
	if (rc) {
		snprintf(err, errlen, "export %s: ceph_path=%s: %s", path, dir,
			 strerror(-rc));
		return rc;
	}
	fs->root_ino = x.stx_ino;
	return 0;
}

static const struct nfsd_be_ops ops;

int rr__nfsd_cephfs_open(struct rr_nfs3_server *s,
			 const struct nfsd_be_conf *bc, char *err,
			 size_t errlen)
{
	struct nfsd_cephfs *fs = rr_calloc(1, sizeof(*fs));
	char scratch[8];
	int64_t id;
	int rc;

	if (!fs)
		return -ENOMEM;
	pthread_mutex_init(&fs->lk_mu, NULL);
	rr__nfsd_ceph_wb_init(&fs->wb);
	if (!err || !errlen) {
		err = scratch;
		errlen = sizeof(scratch);
	}
	rc = configure(fs, bc, s->export_path, err, errlen);
	if (!rc) {
		rr__nfsd_ceph_wb_configure(&fs->wb, fs->cm);
		fs->server = ceph_mount_perms(fs->cm);
		id = ceph_get_fs_cid(fs->cm);
		fs->fscid = (uint64_t)id;
		rc = id < 0 ? (int)id
			    : find_root(fs, bc, s->export_path, err, errlen);
	}
	if (!rc)
		rc = rr__nfsd_ceph_opens_new(fs->cm, &fs->opens);
	if (!rc)
		rc = rr__nfsd_ceph_waits_new(fs->cm, fs->server, &fs->waits);
	if (rc) {
		if (fs->cm) {
			unmount(fs);
		} else {
			pthread_mutex_destroy(&fs->lk_mu);
			rr__nfsd_ceph_wb_destroy(&fs->wb);
			free(fs);
		}
		return rc;
	}
	s->be = (struct nfsd_be){.ops = &ops, .priv = fs};
	s->root_dev = (dev_t)fs->fscid;
	s->root_ino = (ino_t)fs->root_ino;
	return 0;
}

static void c_stats(struct nfsd_be *be, struct rr_nfs3_server_stats *out)
{
	struct nfsd_cephfs *fs = be->priv;

	out->kept_opens = rr__nfsd_ceph_opens_count(fs->opens);
	out->write_syncs = rr__nfsd_ceph_wb_syncs(&fs->wb);
}

/*
 * What libcephfs allocates inside a READ or WRITE: ceph_ll_writev copies
 * the data into a buffer of its size, and what the OSDs send back arrives
 * in buffers of its own, each at most an object (4 MiB in CephFS' default
 * layout). Twice that leaves room for somewhat larger objects.
 */
#define IO_ALLOC (8u << 20)
/*
 * What libcephfs holds for WRITEs in flight at most, with its default
 * bounds: twice client_oc_max_dirty (cephfs_writeback.c), and a margin.
 * Trimmed back to the system after each sync's burst of frees, that heap
 * faulted in 70-100 pages per MiB written and took three times the
 * daemon's CPU per MiB; kept, 1-2 pages once it has grown.
 */
#define IO_RETAIN (256u << 20)

static const struct nfsd_be_ops ops = {
	.name = "cephfs",
	.locks_shared = true,
	.io_alloc = IO_ALLOC,
	.io_retain = IO_RETAIN,
	.fh_decode = c_fh_decode,
	.fh_encode = c_fh_encode,
	.act = c_act,
	.getattr = c_getattr,
	.setattr = rr__nfsd_ceph_setattr,
	.lookup = c_lookup,
	.open = rr__nfsd_ceph_open,
	.close = rr__nfsd_ceph_close,
	.read = rr__nfsd_ceph_read,
	.write = rr__nfsd_ceph_write,
	.commit = rr__nfsd_ceph_commit,
	.mknod = rr__nfsd_ceph_mknod,
	.mkdir = rr__nfsd_ceph_mkdir,
	.symlink = rr__nfsd_ceph_symlink,
	.link = rr__nfsd_ceph_link,
	.remove = rr__nfsd_ceph_remove,
	.rename = rr__nfsd_ceph_rename,
	.readlink = rr__nfsd_ceph_readlink,
	.opendir = rr__nfsd_ceph_opendir,
	.readdir = rr__nfsd_ceph_readdir,
	.seekdir = rr__nfsd_ceph_seekdir,
	.closedir = rr__nfsd_ceph_closedir,
	.statfs = rr__nfsd_ceph_statfs,
	.lock = rr__nfsd_ceph_lock,
	.unlock = rr__nfsd_ceph_unlock,
	.lock_test = rr__nfsd_ceph_lock_test,
	.lock_count = rr__nfsd_ceph_lock_count,
	.root = c_root,
	.call_end = c_call_end,
	.stats = c_stats,
	.destroy = c_destroy,
};
