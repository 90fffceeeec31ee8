/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The server's own table of its lock owners' byte ranges (lock_table.c):
 * the locks themselves for the local backend, a record of what the MDS
 * granted for CephFS's (cephfs_lock.c). The ops have the backend ops'
 * shapes, keyed by the file's (st_dev, st_ino).
 */
#ifndef RR_NFSD_BACKEND_LOCK_TABLE_H
#define RR_NFSD_BACKEND_LOCK_TABLE_H

#include "nfs3/server/backend/backend.h"
#include "nfs3/server/nfsd.h"

int rr__nfsd_lktab_lock(struct nfsd_call *c, struct nfsd_be_file *f,
			const struct nfsd_be_lock *l);
int rr__nfsd_lktab_unlock(struct nfsd_call *c, struct nfsd_be_file *f,
			  const struct nfsd_be_lock *l);
int rr__nfsd_lktab_test(struct nfsd_call *c, struct nfsd_be_file *f,
			struct nfsd_be_lock *l);
int rr__nfsd_lktab_count(struct nfsd_call *c, struct nfsd_be_file *f,
			 uint64_t owner);
/* Frees the server's lock table (no call may run). */
void rr__nfsd_locks_free(struct rr_nfs3_server *s);

#endif
