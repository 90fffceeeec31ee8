/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Handles and objects as the procedures see them: the backend decodes and
 * encodes the handle's bytes; here its errors become NFSv3's.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <string.h>

nfsstat3 rr__nfsd_resolve(struct nfsd_call *c, const nfs_fh3 *fh,
			  struct nfsd_obj *o)
{
	int rc = rr__nfsd_be(c)->fh_decode(c, fh->data.data_val,
					   fh->data.data_len, o);

	/* no errno says "not a handle": the backend's EBADMSG does */
	return rc == -EBADMSG ? NFS3ERR_BADHANDLE : rr__nfsd_errno(rc);
}

int rr__nfsd_make_fh(struct nfsd_call *c, const struct nfsd_obj *o, nfs_fh3 *fh)
{
	uint8_t buf[NFSD_BE_FH_MAX];
	size_t len = 0;
	uint8_t *p;
	int rc = rr__nfsd_be(c)->fh_encode(c, o, buf, &len);

	if (rc)
		return rc;
	p = rr__nfsd_alloc(c, len);
	if (!p)
		return -ENOMEM;
	memcpy(p, buf, len);
	fh->data.data_val = (char *)p;
	fh->data.data_len = (u_int)len;
	return 0;
}

int rr__nfsd_act(struct nfsd_call *c, struct nfsd_obj *o)
{
	return rr__nfsd_be(c)->act(c, o);
}
