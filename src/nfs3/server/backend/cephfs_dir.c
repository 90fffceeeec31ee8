/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Listings and space of CephFS. A cookie is the offset libcephfs gives
 * each entry (d_off, which ceph_seekdir takes back): CephFS orders a
 * directory by a hash of the names and makes offsets of that hash, so
 * they stay valid while other entries come and go, and a listing
 * resumes where it stopped without state in the server.
 */
#include "nfs3/server/backend/cephfs.h"

#include <dirent.h>
#include <errno.h>

struct nfsd_be_dir {
	struct ceph_mount_info *cm;
	struct ceph_dir_result *dr;
	struct dirent de;
};

/* The listing lives in the call's arena; -ENOMEM: no memory for it. */
int rr__nfsd_ceph_opendir(struct nfsd_call *c, struct nfsd_obj *dir,
			  uint64_t cookie, struct nfsd_be_dir **out)
{
	struct nfsd_be_dir *d = rr__nfsd_alloc(c, sizeof(*d));
	const UserPerm *perm = rr__nfsd_ceph_perm(c);
	struct Inode *in;
	int rc;

	if (!d || !perm)
		return -ENOMEM;
	rc = rr__nfsd_ceph_inode(c, dir, &in);
	if (rc)
		return rc;
	d->cm = rr__nfsd_ceph(c)->cm;
	rc = ceph_ll_opendir(d->cm, in, &d->dr, perm);
	if (rc)
		return rc;
	if (cookie)
		ceph_seekdir(d->cm, d->dr, (int64_t)cookie);
	*out = d;
	return 0;
}

int rr__nfsd_ceph_readdir(struct nfsd_be_dir *d, struct nfsd_be_dirent *e)
{
	int64_t at = ceph_telldir(d->cm, d->dr);
	int rc = ceph_readdir_r(d->cm, d->dr, &d->de);

	if (rc <= 0)
		return rc;
	e->name = d->de.d_name;
	e->fileid = (uint64_t)d->de.d_ino;
	e->cookie = (uint64_t)d->de.d_off;
	e->at = (uint64_t)at;
	return 1;
}

void rr__nfsd_ceph_seekdir(struct nfsd_be_dir *d, uint64_t cookie)
{
	ceph_seekdir(d->cm, d->dr, (int64_t)cookie);
}

void rr__nfsd_ceph_closedir(struct nfsd_be_dir *d)
{
	if (d)
		ceph_ll_releasedir(d->cm, d->dr);
}

int rr__nfsd_ceph_statfs(struct nfsd_call *c, struct nfsd_obj *o,
			 struct nfsd_be_statfs *out)
{
	struct statvfs v;
	struct Inode *in;
	int rc = rr__nfsd_ceph_inode(c, o, &in);

	if (!rc)
		rc = ceph_ll_statfs(rr__nfsd_ceph(c)->cm, in, &v);
	if (rc)
		return rc;
	out->tbytes = (uint64_t)v.f_blocks * v.f_frsize;
	out->fbytes = (uint64_t)v.f_bfree * v.f_frsize;
	out->abytes = (uint64_t)v.f_bavail * v.f_frsize;
	out->tfiles = v.f_files;
	out->ffiles = v.f_ffree;
	out->afiles = v.f_favail;
	out->linkmax = 0; /* CephFS sets no limit we could tell */
	out->namemax = (uint32_t)v.f_namemax;
	return 0;
}
