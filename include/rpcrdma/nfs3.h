/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * An NFSv3 client (RFC 1813) over RPC-over-RDMA or ONC RPC over TCP, with
 * a synchronous, file-oriented API in the style of libnfs.
 *
 * A mount names a server and a path by URL, as libnfs writes them:
 *
 *   nfs://host[:port]/export/path[?arg=value[&arg=value]...]
 *
 * host may be a name, an IPv4 address or an IPv6 address in brackets; a
 * port in the authority is the NFS port. Arguments: nfsport=N and
 * mountport=N (libnfs's), nlmport=N (the lock manager's TCP port, as
 * nfs(5)'s mountport; rpcbind is asked without it), uid=N and gid=N
 * (the AUTH_SYS identity; the
 * caller's own by default), version=3, and ours: proto=rdma|tcp (rdma by
 * default) and provider=iwarp|verbs (the fabric provider for rdma).
 * Unknown arguments are ignored, as libnfs does.
 *
 * Default ports: NFS over RDMA 20049, NFS over TCP 2049, MOUNT over TCP
 * 20048; when the URL gives none, the server's rpcbind is asked first
 * (over TCP, briefly) for the TCP ports. MOUNT always goes over TCP.
 * The export is the longest leading part of the URL's path that the
 * server's EXPORT list names; the rest is a path inside it
 * (rr_nfs_url_path).
 *
 * Paths given to the functions below are inside the export: "/a/b" and
 * "a/b" both name a/b under the export's root. Symbolic links are followed
 * on the way (an absolute target resolves from the export's root), and by
 * rr_nfs_stat and rr_nfs_open at the end too; rr_nfs_lstat,
 * rr_nfs_readlink, rr_nfs_unlink and rr_nfs_rename do not follow the last
 * component.
 *
 * Errors are negative errno values; NFS3ERR_* statuses map as
 * rr_nfs_errno documents. rr_nfs_error() describes the last failure of the
 * calling thread in one line.
 *
 * Threads: one struct rr_nfs may be used by several threads at once, and
 * so may the I/O calls of one struct rr_nfs_file (pread, pwrite, stream,
 * fsync, fstat); closing it, and a struct rr_nfs_dir, are one thread's.
 */
#ifndef RPCRDMA_NFS3_H
#define RPCRDMA_NFS3_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports what this header declares (-fvisibility=hidden). */
#pragma GCC visibility push(default)

#define RR_NFS_PORT_RDMA  20049
#define RR_NFS_PORT_TCP	  2049
#define RR_NFS_PORT_MOUNT 20048

enum rr_nfs_proto { RR_NFS_PROTO_RDMA = 0, RR_NFS_PROTO_TCP = 1 };

/* A server to fail over to, from nfs://host,other[:port]/... */
#define RR_NFS_FAILOVER_MAX 7
struct rr_nfs_url_server {
	char *host;
	uint16_t port; /* 0: the first server's NFS port */
};

/* A parsed URL. Strings are owned by it (rr_nfs_url_free). */
struct rr_nfs_url {
	char *host;	/* without IPv6 brackets */
	char *path;	/* decoded, normalised; "/" at least */
	char *provider; /* NULL: the transport's default */
	enum rr_nfs_proto proto;
	uint16_t nfsport;   /* 0: default (or rpcbind) */
	uint16_t mountport; /* 0: default (or rpcbind) */
	int64_t uid, gid;   /* -1: the caller's */
	uint16_t nlmport;   /* the lock manager's TCP port; 0: rpcbind's */
	/* the servers after host, in the URL's order (failover) */
	struct rr_nfs_url_server failover[RR_NFS_FAILOVER_MAX];
	uint32_t nfailover;
};

/*
 * Returns 0, -EINVAL (not an nfs:// URL, bad host, port, argument value,
 * or a path that leaves the root with "..") or -ENOMEM.
 */
int rr_nfs_url_parse(const char *url, struct rr_nfs_url *out);
void rr_nfs_url_free(struct rr_nfs_url *u);

/*
 * nfsstat3 -> negative errno (0 for NFS3_OK). The statuses named after a
 * Unix errno map to that errno by name (NFS3ERR_NOTEMPTY, 66 on the wire,
 * is Linux's ENOTEMPTY, 39); BADHANDLE and STALE to -ESTALE, NOT_SYNC to
 * -EIO, BAD_COOKIE and BADTYPE to -EINVAL, NOTSUPP to -EOPNOTSUPP,
 * TOOSMALL to -EOVERFLOW, SERVERFAULT to -EREMOTEIO, JUKEBOX to -EAGAIN,
 * anything else to -EIO. (A mount's calls never return JUKEBOX's -EAGAIN:
 * they ask again, and fail with -ETIMEDOUT when the call timeout passes.)
 */
int rr_nfs_errno(uint32_t nfsstat3);

struct rr_nfs_opts {
	int timeout_ms;		/* per RPC; 0: 60000; -1: none */
	int connect_timeout_ms; /* 0: 10000 */
	uint32_t depth;		/* READ/WRITE calls in flight per call; 0: 16 */
	uint32_t max_io;	/* largest READ/WRITE; 0: the server's (FSINFO),
				   at most 1 MiB */
};

struct rr_nfs;
struct rr_nfs_file;
struct rr_nfs_dir;

int rr_nfs_mount(const char *url, const struct rr_nfs_opts *o,
		 struct rr_nfs **out);
/*
 * Unmounts (MOUNT UMNT, best effort, waiting at most 5 s) and frees.
 * Open files must be closed.
 */
int rr_nfs_umount(struct rr_nfs *n);
/* The URL's path inside the export ("/" when it named the export). */
const char *rr_nfs_url_path(const struct rr_nfs *n);
/* The export mounted, as the server names it. */
const char *rr_nfs_export(const struct rr_nfs *n);
/* Largest READ and WRITE this mount issues (after FSINFO). */
uint32_t rr_nfs_max_read(const struct rr_nfs *n);
uint32_t rr_nfs_max_write(const struct rr_nfs *n);
/*
 * The counters of the mount's RPC-over-RDMA transport (rpc.h); -ENOTSUP
 * when it goes over TCP.
 */
struct rr_xprt_stats;
int rr_nfs_xprt_stats(const struct rr_nfs *n, struct rr_xprt_stats *out);
/*
 * One line about this thread's last failure ("" if none): every failing
 * call above sets it, naming the call, its path where it has one, and why.
 */
const char *rr_nfs_error(void);

/*
 * An AUTH_SYS identity for the calls one thread makes on a mount, as a
 * server of many users (a FUSE mount) makes each request as the user who
 * asked. groups: ngroups supplementary group ids; AUTH_SYS carries 16,
 * the rest are left out (the server then decides as if they were not
 * held, as for the kernel client).
 */
struct rr_nfs_cred {
	uint32_t uid, gid;
	uint32_t ngroups;
	const uint32_t *groups;
};
/*
 * From now on, this thread's calls on n carry c (copied), until the next
 * call; c NULL: the mount's own credential again (the URL's uid and gid,
 * else the caller's). Setting it for one mount resets it for any other.
 * Returns 0 or -EINVAL (groups NULL with ngroups > 0).
 */
int rr_nfs_set_thread_cred(struct rr_nfs *n, const struct rr_nfs_cred *c);

/*
 * Interrupting a thread's calls, as a fatal signal interrupts a process
 * waiting on a hard mount: from now on, while one of this thread's calls
 * waits (on any mount), aborted(arg) is asked about every 100 ms, and
 * once it says true the call is cancelled (its memory fenced, as
 * rr_rpc_clnt_cancel does) and fails with -EINTR; a pipelined READ or
 * WRITE cancels every call it has in flight. A call that completed
 * meanwhile keeps its result. aborted NULL: calls wait as before (the
 * default). A FUSE mount sets it to "the requester was killed".
 */
void rr_nfs_set_thread_abort(bool (*aborted)(void *arg), void *arg);

int rr_nfs_stat(struct rr_nfs *n, const char *path, struct stat *st);
int rr_nfs_lstat(struct rr_nfs *n, const char *path, struct stat *st);
/*
 * flags: O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT (mode), O_EXCL,
 * O_TRUNC. Others are ignored.
 */
int rr_nfs_open(struct rr_nfs *n, const char *path, int flags, mode_t mode,
		struct rr_nfs_file **out);
int rr_nfs_fstat(struct rr_nfs_file *f, struct stat *st);
/*
 * Large transfers are split at the mount's READ/WRITE size and pipelined,
 * depth calls in flight. pread returns fewer bytes than asked only at end
 * of file. Writes are UNSTABLE until rr_nfs_fsync or rr_nfs_close commits
 * them. A server that restarted in between (its write verifier changed)
 * may have lost them: they are sent again from rr_nfs_set_refill's
 * callback, or, without one, fsync and close fail with -EIO. A WRITE that
 * failed is reported again by the next fsync or close, which then send
 * no COMMIT (the data is not all there to commit).
 */
ssize_t rr_nfs_pread(struct rr_nfs_file *f, void *buf, size_t len,
		     uint64_t off);
ssize_t rr_nfs_pwrite(struct rr_nfs_file *f, const void *buf, size_t len,
		      uint64_t off);
/*
 * As rr_nfs_pwrite, but every WRITE asks FILE_SYNC: when it returns, the
 * bytes are on the server's stable storage and wait for no COMMIT, as
 * the kernel client's O_DIRECT writes are. A server that answers with
 * less (RFC 1813 forbids it) leaves them to fsync or close, as UNSTABLE.
 */
ssize_t rr_nfs_pwrite_sync(struct rr_nfs_file *f, const void *buf, size_t len,
			   uint64_t off);
/*
 * Independent READs (write false) or WRITEs of one file, depth calls in
 * flight from this thread: next() describes each call to make (buf, len
 * of at most rr_nfs_max_read/_write, off; false: no more) and done() gets
 * every io that next() gave back with result set (bytes, fewer at end of
 * file, or a negative errno); nothing is retried or split. Both run in
 * this thread. Returns 0 once every call is back, or the error that
 * stopped issuing (-EINVAL for an io that next() made wrong: that one is
 * not handed back).
 */
struct rr_nfs_io {
	void *buf;
	size_t len;
	uint64_t off;
	ssize_t result;
	void *user;
};
int rr_nfs_stream(struct rr_nfs_file *f, bool write, uint32_t depth,
		  bool (*next)(void *arg, struct rr_nfs_io *io),
		  void (*done)(void *arg, struct rr_nfs_io *io), void *arg);
/*
 * Registers buf with the RDMA transport until rr_nfs_mem_unreg: READ data
 * then lands in it and WRITE data leaves from it with no copy through
 * the client's bounce buffers. rr_nfs_pread and rr_nfs_pwrite register
 * a large buffer (1 MiB or more) by themselves for the call, which costs
 * a registration each time; one inside a region registered here is used
 * as it is, so transfers from it allocate nothing. This is also for
 * rr_nfs_stream's buffers, used call after call. 0, -EOPNOTSUPP over TCP
 * (nothing to register), or the transport's error (-ENOSPC: too many regions).
 * Unregister only once no call uses the buffer.
 */
int rr_nfs_mem_reg(struct rr_nfs *n, void *buf, size_t len);
int rr_nfs_mem_unreg(struct rr_nfs *n, void *buf);
/*
 * Where the bytes of f's uncommitted writes come from when they must be
 * sent again, as a kernel client sends them again from its page cache:
 * the library remembers which ranges were written UNSTABLE since the last
 * COMMIT, not their bytes. When a COMMIT (or a WRITE) shows the server's
 * write verifier changed, rr_nfs_fsync and rr_nfs_close call
 * refill(arg, buf, len, off) for each such range, a piece at a time:
 * it fills buf with the len bytes last written at off and returns len, or
 * a negative errno that fsync then returns. They write them again and
 * commit again, a few rounds at most if the server keeps restarting.
 * fn NULL: no refill (the default).
 */
typedef ssize_t (*rr_nfs_refill_fn)(void *arg, void *buf, size_t len,
				    uint64_t off);
void rr_nfs_set_refill(struct rr_nfs_file *f, rr_nfs_refill_fn fn, void *arg);
/* A COMMIT of the UNSTABLE writes since the last; none: nothing is sent. */
int rr_nfs_fsync(struct rr_nfs_file *f);
int rr_nfs_ftruncate(struct rr_nfs_file *f, uint64_t len);
/* Commits pending writes, then frees f even when that fails. */
int rr_nfs_close(struct rr_nfs_file *f);

struct rr_nfs_dirent {
	const char *name;
	uint64_t ino;
	uint64_t cookie;
	bool has_attr; /* st is filled (READDIRPLUS gave attributes) */
	struct stat st;
};
/* Reads the whole directory (READDIRPLUS) at open. */
int rr_nfs_opendir(struct rr_nfs *n, const char *path, struct rr_nfs_dir **out);
/* The next entry, NULL at the end. Valid until the next call. */
const struct rr_nfs_dirent *rr_nfs_readdir(struct rr_nfs_dir *d);
void rr_nfs_closedir(struct rr_nfs_dir *d);

int rr_nfs_mkdir(struct rr_nfs *n, const char *path, mode_t mode);
int rr_nfs_unlink(struct rr_nfs *n, const char *path);
int rr_nfs_rmdir(struct rr_nfs *n, const char *path);
int rr_nfs_rename(struct rr_nfs *n, const char *from, const char *to);
int rr_nfs_symlink(struct rr_nfs *n, const char *target, const char *path);
/* Returns the target's length (NUL-terminated when it fits in size). */
ssize_t rr_nfs_readlink(struct rr_nfs *n, const char *path, char *buf,
			size_t size);
int rr_nfs_statvfs(struct rr_nfs *n, const char *path, struct statvfs *sv);
int rr_nfs_truncate(struct rr_nfs *n, const char *path, uint64_t len);

/*
 * POSIX byte-range locks on an open file, kept by the server's lock
 * manager (NLM version 4 over TCP; its port is the URL's nlmport, else
 * rpcbind's answer): advisory, as fcntl's, and they conflict with the
 * locks other clients of the server take, the kernel's included.
 *
 * A lock belongs to an owner: owner (0: the calling process) and pid
 * (the owner's process, NLM's svid; 0: getpid()), on this mount. Two
 * mounts are two clients, whose owners never share a lock. An owner's
 * locks on a range merge and split as fcntl's do, and stay after
 * rr_nfs_close: a process drops them with rr_nfs_unlock (the whole file:
 * start 0, len 0), as closing an fd does for fcntl.
 *
 * rr_nfs_lock takes type F_RDLCK (shared) or F_WRLCK (exclusive) of
 * [start, start + len) (len 0: to the end of the file, however it grows).
 * A conflict is -EAGAIN at once, or with RR_NFS_LOCK_WAIT is waited out:
 * the request is made again, every 10 ms at first and at most every
 * 500 ms, until it is granted, cancelled(arg) says true, or a signal
 * interrupts the wait (-EINTR); the server's GRANTED callback is not
 * listened for. rr_nfs_unlock releases the range (what was not held is
 * no error). rr_nfs_testlock asks whether type could be taken: l->type
 * becomes F_UNLCK if so, else l describes one lock in the way (its type,
 * range and pid, the holder's svid), as fcntl's F_GETLK.
 *
 * Errors: -ENOLCK (no lock manager answers, or the server keeps no more
 * locks for us), -EAGAIN (conflict), -EDEADLK, -ESTALE, -EROFS, -EFBIG,
 * -EINVAL (a bad type, or a range past 2^64), -EINTR, or the transport's.
 * The server's grace period after a restart (it grants only reclaims) is
 * waited out for up to the mount's call timeout, then -ENOLCK.
 */
#define RR_NFS_LOCK_WAIT 1
struct rr_nfs_lock {
	int type; /* F_RDLCK, F_WRLCK (testlock: F_UNLCK if free) */
	uint64_t start;
	uint64_t len;		      /* 0: to the end of the file */
	uint64_t owner;		      /* 0: the calling process */
	int32_t pid;		      /* 0: getpid() */
	bool (*cancelled)(void *arg); /* RR_NFS_LOCK_WAIT: stop waiting? */
	void *arg;
};
int rr_nfs_lock(struct rr_nfs_file *f, const struct rr_nfs_lock *l, int flags);
int rr_nfs_unlock(struct rr_nfs_file *f, const struct rr_nfs_lock *l);
int rr_nfs_testlock(struct rr_nfs_file *f, struct rr_nfs_lock *l);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
