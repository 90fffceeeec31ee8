/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The FUSE adapter: an NFSv3 mount (include/rpcrdma/nfs3.h) served to
 * the kernel through libfuse3's low-level API, so that ordinary programs
 * use it as a directory. Internal to this build: tools/nfsrdma's `mount`
 * is its one user.
 */
#ifndef RR_FUSE_NFS_FUSE_H
#define RR_FUSE_NFS_FUSE_H

#include <rpcrdma/nfs3.h>

#include <stdbool.h>

/*
 * The attribute cache, with the kernel NFS client's options (nfs(5)):
 * seconds a file's (reg) or a directory's (dir) attributes are trusted,
 * growing from min to max with the time since the object last changed.
 * noac: nothing is trusted, every stat asks the server.
 */
/*
 * Hard or soft (nfs(5)): a hard mount waits for the server as long as it
 * takes, its transport reconnecting and sending the calls again; a soft
 * one fails a call with EIO after timeo deciseconds and retrans more of
 * them. rsize and wsize cap READ and WRITE below what the server offers.
 * readahead (KiB) is the kernel's read-ahead window for the mount, set
 * through its backing device (root only); by default rsize * 15, the
 * kernel NFS client's.
 */
#define RR_FUSE_READAHEAD_AUTO (~0u)
struct rr_fuse_opts {
	double acregmin, acregmax, acdirmin, acdirmax;
	bool noac;
	bool soft;
	/*
	 * lookupcache= (nfs(5)): names found (pos) and names not found
	 * (all, the default) are trusted for acdirmin; none: neither.
	 */
	enum { RR_FUSE_LC_ALL, RR_FUSE_LC_POS, RR_FUSE_LC_NONE } lookupcache;
	unsigned max_threads; /* FUSE worker threads; 0: 16 */
	unsigned timeo;	      /* deciseconds */
	unsigned retrans;
	unsigned rsize, wsize; /* 0: the server's */
	unsigned readahead_kb;
};

/*
 * Splits a mount's -o list: our options (actimeo=, acregmin=, acregmax=,
 * acdirmin=, acdirmax=, noac, lookupcache=, hard, soft, timeo=,
 * retrans=, rsize=, wsize=, threads=, readahead=) into o (defaults first: 3,
 * 60, 30, 60 seconds, hard, timeo=600, retrans=2), the rest into *fuse_opts
 * (rr_malloc'd, "" when none) for libfuse (allow_other,
 * default_permissions, ro, ...). opts may be NULL. 0, -EINVAL (a bad
 * value, named in *bad), or -ENOMEM.
 */
int rr__fuse_opts_parse(const char *opts, struct rr_fuse_opts *o,
			char **fuse_opts, const char **bad);

/*
 * "MAJ:MIN" of the newest mount at mountpoint (an absolute path, as
 * /proc/self/mountinfo has it), from mountinfo: no request reaches the
 * mount, so its own daemon may ask. 0, -ENOENT, or -errno.
 */
int rr__fuse_mount_dev(const char *mountpoint, char *dev, size_t cap);

/* The mount's per-call timeout for rr_nfs_opts: -1 (none) when hard. */
int rr__fuse_timeout_ms(const struct rr_fuse_opts *o);

/*
 * Mounts n at mountpoint and serves it until it is unmounted or the
 * process gets SIGINT/SIGTERM/SIGHUP. mounted(arg) runs once the kernel
 * has the mount (a daemon then lets its parent go). fsname names the
 * mount in /proc/self/mountinfo (the URL). Returns 0 after a clean
 * unmount, or a negative errno (-ENOTCONN: FUSE could not mount).
 */
int rr__fuse_serve(struct rr_nfs *n, const char *mountpoint, const char *fsname,
		   const struct rr_fuse_opts *o, const char *fuse_opts,
		   void (*mounted)(void *arg), void *arg);

#endif
