/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Built without libcephfs (RR_CEPHFS off, or libcephfs-dev missing): an
 * export asking for backend=cephfs is refused at start, saying why.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <stdio.h>

int rr__nfsd_cephfs_open(struct rr_nfs3_server *s,
			 const struct nfsd_be_conf *bc, char *err,
			 size_t errlen)
{
	(void)bc;
	if (err && errlen)
		snprintf(err, errlen,
			 "export %s: backend=cephfs: this nfsrdmad was built "
			 "without libcephfs (libcephfs-dev, -DRR_CEPHFS=ON)",
			 s->export_path);
	return -EOPNOTSUPP;
}
