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

struct fcalls;
struct rrf {
	struct rr_nfs *n;
	struct fuse_session *se; /* for notifications to the kernel */
	struct ftable tab;
	struct rr_fuse_opts o;
	struct fcalls *ac; /* calls answered from completions (acall.c) */
};

/*
 * The bytes of an open file's UNSTABLE writes not yet committed: what
 * the kernel client keeps in its page cache until COMMIT, kept here
 * because FUSE (without writeback caching) hands us each write once.
 * A write-behind WRITE is sent from the log's copy after the kernel has
 * its reply, and rr_nfs_fsync's refill reads the log back when the
 * server's write verifier changed (it restarted and may have lost them).
 * The bytes go into blocks of WLOG_BLK that never move and that the log
 * keeps across commits, so a WRITE allocates nothing once the file's
 * writing has reached its pace.
 */
#define WLOG_BLK (4u << 20)
struct wlog_ent {
	uint64_t off;
	size_t len;
	uint8_t *at; /* its bytes, in a block */
};
struct wlog_blk {
	uint8_t *data;
	size_t cap, used;
};
struct wlog {
	struct wlog_ent *e;
	size_t n, cap, bytes;
	struct wlog_blk *b;
	size_t nb, bcap;
	size_t cur; /* the first block that may have room */
};

/* A request's AUTH_SYS identity, kept past it (an open file's opener). */
struct fcred {
	struct rr_nfs_cred c; /* c.groups points at groups */
	uint32_t groups[16];  /* AUTH_SYS carries no more */
};

/*
 * An open file. ORDER: writes hold io for reading (they run in
 * parallel; a write-behind WRITE holds it until it is sent, or, sent
 * synchronously, until the server has answered, as does the COMMIT of a
 * full generation); fsync, flush and release hold it for writing, and
 * wait out the node's WRITEs still out (rr__ftab_wb_drain), so that
 * their COMMIT covers every write the logs hold and emptying them after
 * it loses nothing a later write put there. io prefers writers, or a
 * steady stream of writes would hold a flush off.
 *
 * The log has two generations (wbehind.c). Writes go into log[cur];
 * once it holds WLOG_MAX bytes it is sealed and committed while the
 * writes go on into the other, as the kernel client's COMMITs overlap
 * its WRITEs. A file's write-behind memory is so at most 2 * WLOG_MAX
 * plus one write.
 */
#define WLOG_MAX (32u << 20)
struct ofile {
	struct rr_nfs_file *f;
	uint64_t ino;
	/*
	 * RELEASE comes without a requester (Linux sends it with no
	 * credentials, uid 0), so its last COMMIT goes as the opener.
	 */
	struct fcred cred;
	bool rdonly; /* opened O_RDONLY: it never has writes to commit */
	bool direct; /* O_DIRECT: each write answered once stable (FILE_SYNC) */
	pthread_rwlock_t io;
	pthread_mutex_t mu; /* guards what follows */
	pthread_cond_t cv;  /* inflight or committing moved */
	struct wlog log[2];
	unsigned cur;
	uint32_t inflight[2]; /* each generation's WRITEs not yet back */
	bool committing;      /* log[!cur] is being committed */
	int werr; /* a write-behind WRITE failed: the next write says so */
};

/* Logs len bytes written at off; *at (may be NULL): where they now are. */
int rr__wlog_add(struct wlog *l, uint64_t off, const void *buf, size_t len,
		 const void **at);
/*
 * Copies the newest bytes logged for [off, off + len) in nl logs, the
 * oldest first; -EIO if a byte is in none.
 */
ssize_t rr__wlog_fill(const struct wlog *const *l, size_t nl, void *buf,
		      size_t len, uint64_t off);
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
/*
 * intr.c: the calls req makes from now on end with EINTR if its thread
 * is killed while they wait; disarmed, calls made for a request already
 * answered (a write-behind WRITE) go on whatever becomes of it. Either
 * way they end when the session does.
 */
void rr__fuse_intr_arm(fuse_req_t req);
void rr__fuse_intr_disarm(struct rrf *f);
/* A fatal signal is pending for thread tid (or it is gone). */
bool rr__fuse_dying(pid_t tid);

/*
 * acall.c: READs and write-behind WRITEs answered from their
 * completions. rr__fuse_aread and rr__fuse_awrite are false when the
 * call is to be made synchronously (none free, too large); a WRITE
 * started ends in rr__fuse_wb_sent. rr__fuse_acalls_max: how many a
 * mount keeps out (0: none).
 */
int rr__fuse_acalls_start(struct rrf *f);
void rr__fuse_acalls_stop(struct rrf *f);
uint32_t rr__fuse_acalls_max(const struct rrf *f);
/*
 * For loop.c: whether calls are out; whether a READ would go out as one
 * now; on: the loop's thread drives the transport, the driver thread
 * only keeps the calls' clocks (off again before the mount ends).
 */
bool rr__fuse_acalls_busy(struct rrf *f);
bool rr__fuse_aread_ready(struct rrf *f, uint64_t ino, size_t size);
void rr__fuse_acalls_loop_drives(struct rrf *f, bool on);
/*
 * loop.c: serves se until it ends, reading /dev/fuse in this thread and
 * running the rest in up to max_threads workers. 0 or -errno.
 */
int rr__fuse_loop(struct rrf *f, struct fuse_session *se, unsigned max_threads);
bool rr__fuse_aread(struct rrf *f, fuse_req_t req, struct ofile *of,
		    size_t size, off_t off);
bool rr__fuse_awrite(struct rrf *f, struct ofile *of, unsigned gen,
		     const void *at, size_t size, off_t off);

/* Write-behind (wbehind.c). The ofile's write state, made and ended. */
void rr__fuse_wb_init(struct ofile *of);
void rr__fuse_wb_fini(struct ofile *of);
/* Once of->f is open: the library's refill reads the logs. */
void rr__fuse_wb_set_refill(struct ofile *of);
/*
 * Answers req and sends the write after: true. false: it could not be
 * logged, nothing was answered. Caller holds io for reading; *full: the
 * logs need a commit under io held for writing (rr__fuse_commit).
 * rr__fuse_wb_sent: such a WRITE of size bytes at off ended, n being
 * what it moved or -errno.
 */
void rr__fuse_wb_sent(struct rrf *f, struct ofile *of, unsigned g, off_t off,
		      size_t size, ssize_t n);
bool rr__fuse_write_behind(struct rrf *f, fuse_req_t req, struct ofile *of,
			   const char *buf, size_t size, off_t off, bool *full);
/* A write's bytes logged after it was sent (unlogged behind): 0, -ENOMEM. */
int rr__fuse_wb_log(struct ofile *of, const char *buf, size_t size, off_t off,
		    bool *full);
/* A failed write-behind WRITE's errno, negated, taken; 0 if none. */
int rr__fuse_wb_err(struct ofile *of);
/* Keeps err (positive) for the next write, unless one is kept already. */
void rr__fuse_wb_keep_err(struct ofile *of, int err);
/*
 * Commits every write of the file, this open's and others', and empties
 * the logs. Takes io for writing. if_full: only if they are still full.
 */
int rr__fuse_commit(struct rrf *f, struct ofile *of, bool if_full);
/*
 * Replies to a lookup-like request with fh's node, referenced; stamp:
 * rr__ftab_wb_stamp taken before the call that gave st.
 */
void rr__fuse_reply_entry(struct rrf *f, fuse_req_t req,
			  const struct nfsc_fh *fh, const struct stat *st,
			  uint64_t stamp);

#endif
