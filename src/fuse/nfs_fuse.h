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
struct rr_fuse_opts {
	double acregmin, acregmax, acdirmin, acdirmax;
	bool noac;
	unsigned max_threads; /* FUSE worker threads; 0: 16 */
};

/*
 * Splits a mount's -o list: our options (actimeo=, acregmin=, acregmax=,
 * acdirmin=, acdirmax=, noac, threads=) into o (defaults first: 3, 60,
 * 30, 60 seconds), the rest into *fuse_opts (rr_malloc'd, "" when none)
 * for libfuse (allow_other, default_permissions, ro, ...). opts may be
 * NULL. 0, -EINVAL (a bad value, named in *bad), or -ENOMEM.
 */
int rr__fuse_opts_parse(const char *opts, struct rr_fuse_opts *o,
			char **fuse_opts, const char **bad);

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
