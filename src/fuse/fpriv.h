/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The adapter's insides: the mount's state, open files, the write log. */
#ifndef RR_FUSE_FPRIV_H
#define RR_FUSE_FPRIV_H

#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fuse_lowlevel.h>

#include "fnode.h"
#include "nfs_fuse.h"

/*
 * An error for the kernel, as the kernel NFS client gives it: a call
 * that timed out on a soft mount, or whose transport is gone for good,
 * is EIO (nfs(5)), not the transport's own errno.
 */
static inline int rr__fuse_reply_err(fuse_req_t req, int err)
{
	if (err == ETIMEDOUT || err == ECONNRESET || err == ECONNREFUSED ||
	    err == ESHUTDOWN || err == ENOTCONN || err == EPIPE)
		err = EIO;
	return fuse_reply_err(req, err);
}

/* readahead.c: the mount's read-ahead window, in KiB (root only). */
int rr__fuse_set_readahead(const char *mountpoint, unsigned kb);
unsigned rr__fuse_readahead_kb(const struct rr_fuse_opts *o, uint32_t rtmax);

struct rrf {
	struct rr_nfs *n;
	struct fuse_session *se; /* for notifications to the kernel */
	struct ftable tab;
	struct rr_fuse_opts o;
};

/*
 * The bytes of an open file's UNSTABLE writes not yet committed: what
 * the kernel client keeps in its page cache until COMMIT, kept here
 * because FUSE (without writeback caching) hands us each write once.
 * rr_nfs_fsync's refill reads them back when the server's write verifier
 * changed (it restarted and may have lost them). Bounded: past
 * WLOG_MAX bytes the writer commits, and a commit empties it. The bytes
 * go one after another into an arena the log keeps across commits, so a
 * WRITE allocates nothing once the file's writing has reached its pace.
 */
#define WLOG_MAX (16u << 20)
struct wlog_ent {
	uint64_t off;
	size_t len;
	size_t at; /* where its bytes start in the arena */
};
struct wlog {
	struct wlog_ent *e;
	size_t n, cap, bytes;
	uint8_t *arena;
	size_t arena_cap;
};

/* A request's AUTH_SYS identity, kept past it (an open file's opener). */
struct fcred {
	struct rr_nfs_cred c; /* c.groups points at groups */
	uint32_t groups[16];  /* AUTH_SYS carries no more */
};

/*
 * An open file. ORDER: writes hold io for reading (they run in
 * parallel); fsync, flush and the commit a full log forces hold it for
 * writing, so that a COMMIT covers every write the log holds and
 * emptying the log after it loses nothing a later write put there.
 */
struct ofile {
	struct rr_nfs_file *f;
	uint64_t ino;
	/*
	 * RELEASE comes without a requester (Linux sends it with no
	 * credentials, uid 0), so its last COMMIT goes as the opener.
	 */
	struct fcred cred;
	bool rdonly; /* opened O_RDONLY: it never has writes to commit */
	pthread_rwlock_t io;
	pthread_mutex_t mu; /* guards log */
	struct wlog log;
};

int rr__wlog_add(struct wlog *l, uint64_t off, const void *buf, size_t len);
/* Copies the newest bytes logged for [off, off + len); -EIO if a gap. */
ssize_t rr__wlog_fill(const struct wlog *l, void *buf, size_t len,
		      uint64_t off);
/* Empties the log, keeping its memory for the next writes. */
void rr__wlog_reset(struct wlog *l);
/* Empties the log and frees its memory. */
void rr__wlog_clear(struct wlog *l);

/*
 * Every request's AUTH_SYS identity: the process that made it, for the
 * calls this thread makes next (ops.c); *cred (may be NULL) gets a copy.
 */
struct rrf *rr__fuse_req(fuse_req_t req, struct fcred *cred);
/* How long the kernel may trust st (seconds): the attribute cache. */
double rr__fuse_attr_tmo(const struct rrf *f, const struct stat *st);
/* How long a name found (found) or not found may be trusted: lookupcache. */
double rr__fuse_entry_tmo(const struct rrf *f, bool found);

extern const struct fuse_lowlevel_ops rr__fuse_ops;

/* File operations (fileops.c), in rr__fuse_ops. */
void rr__fuse_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void rr__fuse_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, struct fuse_file_info *fi);
void rr__fuse_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void rr__fuse_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		    size_t size, off_t off, struct fuse_file_info *fi);
void rr__fuse_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void rr__fuse_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi);
void rr__fuse_release(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi);
/* Replies to a lookup-like request with fh's node, referenced. */
void rr__fuse_reply_entry(struct rrf *f, fuse_req_t req,
			  const struct nfsc_fh *fh, const struct stat *st);

#endif
