/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fcntl and flock locks on the mount (locks.c), kept by the server's
 * lock manager through the client library's rr_nfs_lock: operations of
 * rr__fuse_ops. flush and release release the closing owner's locks,
 * then do fileops.c's work.
 */
#ifndef RR_FUSE_LOCKS_H
#define RR_FUSE_LOCKS_H

#include "fpriv.h"

void rr__fuse_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock);
void rr__fuse_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock, int sleep);
void rr__fuse_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    int op);
void rr__fuse_lk_flush(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi);
void rr__fuse_lk_release(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi);

#endif
