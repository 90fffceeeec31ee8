/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * SETATTR's changes on the local directory, as the caller: through the
 * descriptor itself or its /proc path (chmod and truncate take no O_PATH
 * descriptor), never through a name a client could swap.
 */
#include "nfs3/server/backend/local.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/*
 * On a symlink the proc path would be followed to its target, so its times
 * are asked for without following (kernels without AT_EMPTY_PATH for
 * utimensat say EINVAL: EOPNOTSUPP then, never a silent success).
 */
static int apply_times(int fd, const char *p, const struct stat *st,
		       const struct nfsd_be_sattr *a)
{
	struct timespec ts[2] = {a->atime, a->mtime};

	if (a->atime.tv_nsec == UTIME_OMIT && a->mtime.tv_nsec == UTIME_OMIT)
		return 0;
	if (!S_ISLNK(st->st_mode))
		return utimensat(AT_FDCWD, p, ts, 0) ? -errno : 0;
	if (!utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return 0;
	return errno == EINVAL ? -EOPNOTSUPP : -errno;
}

static int apply_size(const char *p, uint64_t size)
{
	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	return truncate(p, (off_t)size) ? -errno : 0;
}

static int apply_owner(int fd, const struct nfsd_be_sattr *a)
{
	uid_t u = a->set_uid ? a->uid : (uid_t)-1;
	gid_t g = a->set_gid ? a->gid : (gid_t)-1;

	if (!a->set_uid && !a->set_gid)
		return 0;
	if (fchownat(fd, "", u, g, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -errno;
	return 0;
}

/* Linux keeps no mode on a symlink: one asked for is left alone. */
int rr__nfsd_local_setattr(struct nfsd_call *c, struct nfsd_obj *o,
			   const struct nfsd_be_sattr *a)
{
	int fd = rr__nfsd_obj_fd(c, o);
	char p[32];
	int rc;

	if (fd < 0)
		return fd;
	rr__nfsd_fd_path(fd, p);
	rc = apply_owner(fd, a);
	if (!rc && a->set_mode && !S_ISLNK(o->st.st_mode) &&
	    chmod(p, a->mode & 07777))
		rc = -errno;
	if (!rc && a->set_size)
		rc = apply_size(p, a->size);
	if (!rc)
		rc = apply_times(fd, p, &o->st, a);
	return rc;
}
