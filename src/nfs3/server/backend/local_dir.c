/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Listings of the local directory. A cookie is the directory offset the
 * kernel gives each entry (d_off, which seekdir takes back): file systems
 * keep those stable while the directory changes (ext4 hashes names, tmpfs
 * and others keep offsets), so a listing resumes where it stopped without
 * state in the server.
 */
#include "nfs3/server/backend/local.h"

#include "base/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

struct nfsd_be_dir {
	DIR *dp;
};

/* The listing lives in the call's arena; -ENOMEM: no memory for it. */
int rr__nfsd_local_opendir(struct nfsd_call *c, struct nfsd_obj *dir,
			   uint64_t cookie, struct nfsd_be_dir **out)
{
	struct nfsd_be_dir *d = rr__nfsd_alloc(c, sizeof(*d));
	int pfd = rr__nfsd_obj_fd(c, dir);
	int fd;

	if (pfd < 0)
		return pfd;
	if (!d)
		return -ENOMEM;
	fd = rr__nfsd_reopen(pfd, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	/* fdopendir allocates its DIR: it fails when the injector says so */
	d->dp = RR_ALLOC_FAILS() ? NULL : fdopendir(fd);
	if (!d->dp) {
		close(fd);
		return -ENOMEM;
	}
	if (cookie)
		seekdir(d->dp, (long)cookie);
	*out = d;
	return 0;
}

int rr__nfsd_local_readdir(struct nfsd_be_dir *d, struct nfsd_be_dirent *e)
{
	long at = telldir(d->dp);
	struct dirent *de;

	errno = 0;
	de = readdir(d->dp);
	if (!de)
		return errno ? -errno : 0;
	e->name = de->d_name;
	e->fileid = (uint64_t)de->d_ino;
	e->cookie = (uint64_t)de->d_off;
	e->at = (uint64_t)at;
	return 1;
}

void rr__nfsd_local_seekdir(struct nfsd_be_dir *d, uint64_t cookie)
{
	seekdir(d->dp, (long)cookie);
}

void rr__nfsd_local_closedir(struct nfsd_be_dir *d)
{
	if (d)
		closedir(d->dp);
}
