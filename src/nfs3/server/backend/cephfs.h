/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Between the files of the CephFS backend (cephfs*.c): one libcephfs
 * mount per export, reached through the low-level ceph_ll_* calls.
 */
#ifndef RR_NFSD_BACKEND_CEPHFS_H
#define RR_NFSD_BACKEND_CEPHFS_H

#include "nfs3/server/backend/backend.h"
#include "nfs3/server/nfsd.h"

#include <cephfs/libcephfs.h>
#include <pthread.h>
#include <stdatomic.h>

/* cephfs_writeback.c: bytes UNSTABLE WRITEs gave libcephfs, bounded */
struct ceph_writeback {
	pthread_mutex_t mu; /* held through a sync: writers at the bound wait */
	_Atomic uint64_t unsynced; /* written since the last sync began */
	uint64_t bound;		   /* client_oc_max_dirty, at least 8 MiB */
	_Atomic uint64_t syncs;	   /* syncs the bound made */
};
void rr__nfsd_ceph_wb_init(struct ceph_writeback *wb);
/* The bound from the mount's configuration (after ceph_init). */
void rr__nfsd_ceph_wb_configure(struct ceph_writeback *wb,
				struct ceph_mount_info *cm);
void rr__nfsd_ceph_wb_destroy(struct ceph_writeback *wb);
/* n bytes written UNSTABLE; syncs, or waits for a sync, at the bound. */
void rr__nfsd_ceph_wb_wrote(struct ceph_writeback *wb,
			    struct ceph_mount_info *cm, uint64_t n);
uint64_t rr__nfsd_ceph_wb_syncs(struct ceph_writeback *wb);

struct nfsd_cephfs {
	struct ceph_mount_info *cm;
	struct Inode *root; /* the exported directory, held while mounted */
	uint64_t root_ino;
	uint64_t fscid; /* the file system's id: handles and st_dev carry it */
	UserPerm *server; /* the mount's own (root) credentials */
	/* cephfs_lock.c: the Fhs lock owners' ranges were taken through */
	pthread_mutex_t lk_mu;
	struct ceph_lk_fh *lk_fhs;
	struct ceph_opens *opens; /* cephfs_opens.c */
	struct ceph_waits *waits; /* cephfs_waits.c */
	struct ceph_writeback wb; /* cephfs_writeback.c */
};

/*
 * An open file's libcephfs Fh (cephfs_io.c opens it), and the kept open
 * it is borrowed from (cephfs_opens.c), if it is.
 */
#define NFSD_CEPH_FH(f)	  ((f)->priv[0])
#define NFSD_CEPH_OPEN(f) ((f)->priv[1])

static inline struct nfsd_cephfs *rr__nfsd_ceph(const struct nfsd_call *c)
{
	return c->s->be.priv;
}

/* cephfs.c */
/* The caller's credentials (c->id), made once per call; NULL: no memory. */
const UserPerm *rr__nfsd_ceph_perm(struct nfsd_call *c);
/* The call holds in (it drops it at its end); -EMFILE when full. */
int rr__nfsd_ceph_hold(struct nfsd_call *c, struct Inode *in);
/* The inode o stands for, held by the call (looked up if not cached). */
int rr__nfsd_ceph_inode(struct nfsd_call *c, struct nfsd_obj *o,
			struct Inode **out);
/* Fills o (st, snap) from stx; the inode's reference stays the caller's. */
void rr__nfsd_ceph_fill(const struct nfsd_cephfs *fs,
			const struct ceph_statx *stx, struct nfsd_obj *o);
/* The statx fields every object's attributes need. */
#define NFSD_CEPH_WANT CEPH_STATX_BASIC_STATS

/* cephfs_opens.c: Fhs kept between calls, per identity and access */
struct ceph_opens;
struct ceph_open;
int rr__nfsd_ceph_opens_new(struct ceph_mount_info *cm,
			    struct ceph_opens **out);
void rr__nfsd_ceph_opens_free(struct ceph_opens *t);
struct ceph_open *rr__nfsd_ceph_opens_get(struct ceph_opens *t,
					  const struct nfsd_obj *o, int flags,
					  const struct nfsd_ident *id,
					  struct Fh **fh);
struct ceph_open *rr__nfsd_ceph_opens_add(struct ceph_opens *t,
					  const struct nfsd_obj *o, int flags,
					  const struct nfsd_ident *id,
					  struct Fh **fh);
void rr__nfsd_ceph_opens_put(struct ceph_opens *t, struct ceph_open *e);
uint64_t rr__nfsd_ceph_opens_count(struct ceph_opens *t);

/* cephfs_waits.c: READs and WRITEs inside libcephfs, woken if forgotten */
struct ceph_waits;
int rr__nfsd_ceph_waits_new(struct ceph_mount_info *cm, const UserPerm *perm,
			    struct ceph_waits **out);
void rr__nfsd_ceph_waits_free(struct ceph_waits *w);
/* A slot to give back to _end, or -1 (none free: the call is unwatched). */
int rr__nfsd_ceph_waits_begin(struct ceph_waits *w, uint64_t ino,
			      uint64_t snap);
void rr__nfsd_ceph_waits_end(struct ceph_waits *w, int slot);

/* cephfs_ns.c: the namespace and attributes */
int rr__nfsd_ceph_setattr(struct nfsd_call *c, struct nfsd_obj *o,
			  const struct nfsd_be_sattr *a);
int rr__nfsd_ceph_mknod(struct nfsd_call *c, struct nfsd_obj *dir,
			const char *name, mode_t mode, dev_t rdev);
int rr__nfsd_ceph_mkdir(struct nfsd_call *c, struct nfsd_obj *dir,
			const char *name, mode_t mode);
int rr__nfsd_ceph_symlink(struct nfsd_call *c, struct nfsd_obj *dir,
			  const char *name, const char *target);
int rr__nfsd_ceph_link(struct nfsd_call *c, struct nfsd_obj *o,
		       struct nfsd_obj *dir, const char *name);
int rr__nfsd_ceph_remove(struct nfsd_call *c, struct nfsd_obj *dir,
			 const char *name, bool isdir);
int rr__nfsd_ceph_rename(struct nfsd_call *c, struct nfsd_obj *from,
			 const char *fname, struct nfsd_obj *to,
			 const char *tname);
ssize_t rr__nfsd_ceph_readlink(struct nfsd_call *c, struct nfsd_obj *o,
			       char *buf, size_t cap);

/* cephfs_io.c: files' contents */
int rr__nfsd_ceph_open(struct nfsd_call *c, struct nfsd_obj *o,
		       struct nfsd_be_file *f);
void rr__nfsd_ceph_close(struct nfsd_call *c, struct nfsd_be_file *f);
ssize_t rr__nfsd_ceph_read(struct nfsd_call *c, struct nfsd_be_file *f,
			   const struct iovec *iov, int iovcnt, uint64_t off);
ssize_t rr__nfsd_ceph_write(struct nfsd_call *c, struct nfsd_be_file *f,
			    const struct iovec *iov, int iovcnt, uint64_t off,
			    enum nfsd_be_stable how);
int rr__nfsd_ceph_commit(struct nfsd_call *c, struct nfsd_obj *o, uint64_t off,
			 uint64_t len);

/* cephfs_lock.c: byte range locks, held by the MDS */
int rr__nfsd_ceph_lock(struct nfsd_call *c, struct nfsd_be_file *f,
		       const struct nfsd_be_lock *l);
int rr__nfsd_ceph_unlock(struct nfsd_call *c, struct nfsd_be_file *f,
			 const struct nfsd_be_lock *l);
int rr__nfsd_ceph_lock_test(struct nfsd_call *c, struct nfsd_be_file *f,
			    struct nfsd_be_lock *l);
int rr__nfsd_ceph_lock_count(struct nfsd_call *c, struct nfsd_be_file *f,
			     uint64_t owner);
/* Closes every owner's Fh (the MDS drops their locks); no call may run. */
void rr__nfsd_ceph_locks_drop(struct nfsd_cephfs *fs);

/* cephfs_dir.c: listings and space */
int rr__nfsd_ceph_opendir(struct nfsd_call *c, struct nfsd_obj *dir,
			  uint64_t cookie, struct nfsd_be_dir **out);
int rr__nfsd_ceph_readdir(struct nfsd_be_dir *d, struct nfsd_be_dirent *e);
void rr__nfsd_ceph_seekdir(struct nfsd_be_dir *d, uint64_t cookie);
void rr__nfsd_ceph_closedir(struct nfsd_be_dir *d);
int rr__nfsd_ceph_statfs(struct nfsd_call *c, struct nfsd_obj *o,
			 struct nfsd_be_statfs *out);

#endif
