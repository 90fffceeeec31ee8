/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The client's calls by file handle rather than by path, for the FUSE
 * adapter (src/fuse): the kernel names objects by inode, which the adapter
 * maps to handles, so walking paths again for every request would cost a
 * LOOKUP per component and could name a different object after a rename.
 * Internal to this build (rr__ names); the types need no rpcgen header.
 *
 * Every function returns 0 or a negative errno, and fills the object's
 * attributes (st, may be NULL) from the reply, with a GETATTR when the
 * server left them out. Calls carry the thread's credential
 * (rr_nfs_set_thread_cred).
 */
#ifndef RR_NFS3_CLIENT_HANDLE_H
#define RR_NFS3_CLIENT_HANDLE_H

#include <rpcrdma/nfs3.h>

#include <time.h>

#define NFSC_FHSIZE 64 /* NFS3_FHSIZE, RFC 1813 */

struct nfsc_fh {
	uint32_t len;
	uint8_t data[NFSC_FHSIZE];
};

/* Lowers the largest READ and WRITE (0: leave), in whole 4 KiB pages. */
void rr__nfsc_cap_io(struct rr_nfs *n, uint32_t rsize, uint32_t wsize);

/* The object the mount's URL names (its path inside the export). */
int rr__nfsc_h_root(struct rr_nfs *n, struct nfsc_fh *fh, struct stat *st);
int rr__nfsc_h_lookup(struct rr_nfs *n, const struct nfsc_fh *dir,
		      const char *name, struct nfsc_fh *fh, struct stat *st);
int rr__nfsc_h_getattr(struct rr_nfs *n, const struct nfsc_fh *fh,
		       struct stat *st);

/* SETATTR of the fields named in mask (NFSC_SET_*); st: after. */
#define NFSC_SET_MODE	   0x01
#define NFSC_SET_UID	   0x02
#define NFSC_SET_GID	   0x04
#define NFSC_SET_SIZE	   0x08
#define NFSC_SET_ATIME	   0x10 /* to atime, or the server's time: */
#define NFSC_SET_ATIME_NOW 0x20
#define NFSC_SET_MTIME	   0x40
#define NFSC_SET_MTIME_NOW 0x80
struct nfsc_set {
	unsigned mask;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;
	struct timespec atime, mtime;
};
int rr__nfsc_h_setattr(struct rr_nfs *n, const struct nfsc_fh *fh,
		       const struct nfsc_set *s, struct stat *st);

/* New objects: their handle and attributes. */
int rr__nfsc_h_create(struct rr_nfs *n, const struct nfsc_fh *dir,
		      const char *name, mode_t mode, bool excl,
		      struct nfsc_fh *fh, struct stat *st);
int rr__nfsc_h_mkdir(struct rr_nfs *n, const struct nfsc_fh *dir,
		     const char *name, mode_t mode, struct nfsc_fh *fh,
		     struct stat *st);
/* mode's type: S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK (with rdev). */
int rr__nfsc_h_mknod(struct rr_nfs *n, const struct nfsc_fh *dir,
		     const char *name, mode_t mode, dev_t rdev,
		     struct nfsc_fh *fh, struct stat *st);
int rr__nfsc_h_symlink(struct rr_nfs *n, const struct nfsc_fh *dir,
		       const char *name, const char *target, struct nfsc_fh *fh,
		       struct stat *st);
/* st: the file's attributes after (its link count moved). */
int rr__nfsc_h_link(struct rr_nfs *n, const struct nfsc_fh *fh,
		    const struct nfsc_fh *dir, const char *name,
		    struct stat *st);
int rr__nfsc_h_remove(struct rr_nfs *n, const struct nfsc_fh *dir,
		      const char *name, bool is_dir);
int rr__nfsc_h_rename(struct rr_nfs *n, const struct nfsc_fh *fdir,
		      const char *fname, const struct nfsc_fh *tdir,
		      const char *tname);
/* *target is rr_malloc'd. */
int rr__nfsc_h_readlink(struct rr_nfs *n, const struct nfsc_fh *fh,
			char **target);
int rr__nfsc_h_statfs(struct rr_nfs *n, const struct nfsc_fh *fh,
		      struct statvfs *sv);

/*
 * One READDIRPLUS round from cookie (verf: the server's cookie verifier,
 * zero at first, updated): each entry goes to fn with its handle and
 * attributes when the server sent both (else fh and st are NULL); "."
 * and ".." come with no handle and st saying only "a directory". fn
 * returns false to stop early: entries after it are not reported, and
 * *eof stays false.
 */
typedef bool (*nfsc_dirent_fn)(void *arg, const char *name, uint64_t fileid,
			       uint64_t cookie, const struct nfsc_fh *fh,
			       const struct stat *st);
int rr__nfsc_h_readdirplus(struct rr_nfs *n, const struct nfsc_fh *dir,
			   uint64_t cookie, uint8_t verf[8], uint32_t maxcount,
			   nfsc_dirent_fn fn, void *arg, bool *eof);

/*
 * ACCESS (RFC 1813 section 3.3.4): which of want's ACCESS3 bits
 * (NFSC_ACCESS_*) the server grants the caller, in *granted; st gets
 * the object's attributes (what it is decides which bits matter).
 */
#define NFSC_ACCESS_READ    0x01
#define NFSC_ACCESS_LOOKUP  0x02
#define NFSC_ACCESS_MODIFY  0x04
#define NFSC_ACCESS_EXTEND  0x08
#define NFSC_ACCESS_DELETE  0x10
#define NFSC_ACCESS_EXECUTE 0x20
int rr__nfsc_h_access(struct rr_nfs *n, const struct nfsc_fh *fh, uint32_t want,
		      uint32_t *granted, struct stat *st);

/*
 * An open file on a handle: ACCESS checks flags' mode for the caller
 * (skipped when checked is true: the caller just created it), O_TRUNC
 * truncates. Then rr_nfs_pread/pwrite/fsync/close as for rr_nfs_open.
 */
int rr__nfsc_h_open(struct rr_nfs *n, const struct nfsc_fh *fh, int flags,
		    bool checked, struct rr_nfs_file **out);

#endif
