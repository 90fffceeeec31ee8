/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Between the files of the local directory backend (local*.c), which
 * builds on the server's handle and open-file machinery (fh.c, fcache.c,
 * ident.c).
 */
#ifndef RR_NFSD_BACKEND_LOCAL_H
#define RR_NFSD_BACKEND_LOCAL_H

#include "nfs3/server/backend/backend.h"
#include "nfs3/server/nfsd.h"

int rr__nfsd_local_fd(const struct nfsd_obj *o);

/* local_attr.c */
int rr__nfsd_local_setattr(struct nfsd_call *c, struct nfsd_obj *o,
			   const struct nfsd_be_sattr *a);

/* local_io.c */
int rr__nfsd_local_open(struct nfsd_call *c, struct nfsd_obj *o,
			struct nfsd_be_file *f);
void rr__nfsd_local_close(struct nfsd_call *c, struct nfsd_be_file *f);
ssize_t rr__nfsd_local_read(struct nfsd_call *c, struct nfsd_be_file *f,
			    const struct iovec *iov, int iovcnt, uint64_t off);
ssize_t rr__nfsd_local_write(struct nfsd_call *c, struct nfsd_be_file *f,
			     const struct iovec *iov, int iovcnt, uint64_t off,
			     enum nfsd_be_stable how);
int rr__nfsd_local_commit(struct nfsd_call *c, struct nfsd_obj *o, uint64_t off,
			  uint64_t len);
/* local_dir.c */
int rr__nfsd_local_opendir(struct nfsd_call *c, struct nfsd_obj *dir,
			   uint64_t cookie, struct nfsd_be_dir **out);
int rr__nfsd_local_readdir(struct nfsd_be_dir *d, struct nfsd_be_dirent *e);
void rr__nfsd_local_seekdir(struct nfsd_be_dir *d, uint64_t cookie);
void rr__nfsd_local_closedir(struct nfsd_be_dir *d);

#endif
