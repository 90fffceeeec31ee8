/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Who a call acts as, and errno to nfsstat3 in one place.
 *
 * AUTH_SYS (RFC 5531 appendix A) names uid, gid and up to 16 groups; with
 * root_squash uid 0 and gid 0 become the anonymous ids, with all_squash
 * every uid and gid (and the groups are dropped), as is every AUTH_NONE
 * call. Which of them applies is the export's rule for the caller's
 * address (exports.c), decided before any credential is used. A server running
 * as root acts as the caller: setfsuid, setfsgid and the raw setgroups system
 * call change only the calling thread's credentials (glibc's setgroups would
 * change every thread's), so the kernel makes each permission decision. A
 * server that is not root cannot become anyone else; it checks mode bits itself
 * before acting.
 *
 * READ and WRITE are the exception, for speed: through a descriptor the
 * open-file cache keeps (opened as the server) they check the mode bits
 * here, as the kernel's generic permission check would for the caller's
 * fsuid, fsgid and groups (owner class, else group class, else other;
 * uid 0 may read and write anything). That is the kernel's answer only
 * for a regular file with no POSIX ACL; a write must also not be the one
 * that has to clear set-id bits as the caller, nor meet the immutable or
 * append-only flag. Everything else acts as the caller, as above.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

nfsstat3 rr__nfsd_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return NFS3_OK;
	case EPERM:
		return NFS3ERR_PERM;
	case ENOENT:
		return NFS3ERR_NOENT;
	case ENXIO:
		return NFS3ERR_NXIO;
	case EACCES:
	case ELOOP: /* a symlink where a directory must be: not followed */
	case ETXTBSY:
		return NFS3ERR_ACCES;
	case EEXIST:
		return NFS3ERR_EXIST;
	case EXDEV:
		return NFS3ERR_XDEV;
	case ENODEV:
		return NFS3ERR_NODEV;
	case ENOTDIR:
		return NFS3ERR_NOTDIR;
	case EISDIR:
		return NFS3ERR_ISDIR;
	case EINVAL:
		return NFS3ERR_INVAL;
	case EFBIG:
		return NFS3ERR_FBIG;
	case ENOSPC:
		return NFS3ERR_NOSPC;
	case EROFS:
		return NFS3ERR_ROFS;
	case EMLINK:
		return NFS3ERR_MLINK;
	case ENAMETOOLONG:
		return NFS3ERR_NAMETOOLONG;
	case ENOTEMPTY:
		return NFS3ERR_NOTEMPTY;
	case EDQUOT:
		return NFS3ERR_DQUOT;
	case ESTALE:
		return NFS3ERR_STALE;
	case EOPNOTSUPP:
		return NFS3ERR_NOTSUPP;
	case EAGAIN:
	case ENOMEM:
	case EMFILE: /* out of descriptors: passing, never STALE */
	case ENFILE:
		return NFS3ERR_JUKEBOX; /* try again later */
	default:
		return NFS3ERR_IO;
	}
}

void rr__nfsd_ident_from_cred(const struct nfsd_policy *p,
			      const struct rr_cred *cr, struct nfsd_ident *id)
{
	bool root_sq = p->squash == NFSD_SQUASH_ROOT;
	uint32_t n = 0;

	id->ro = p->ro;
	if (!cr || p->squash == NFSD_SQUASH_ALL) {
		id->uid = p->anon_uid;
		id->gid = p->anon_gid;
		id->ngids = 0;
		return;
	}
	id->uid = root_sq && cr->uid == 0 ? p->anon_uid : cr->uid;
	id->gid = root_sq && cr->gid == 0 ? p->anon_gid : cr->gid;
	for (uint32_t i = 0; i < cr->ngids && i < 16; i++) {
		if (root_sq && cr->gids[i] == 0)
			continue;
		id->gids[n++] = cr->gids[i];
	}
	id->ngids = n;
}

int rr__nfsd_ident_enter(const struct rr_nfs3_server *s,
			 const struct nfsd_ident *id)
{
	gid_t g[16];

	if (!s->as_root)
		return 0;
	for (uint32_t i = 0; i < id->ngids; i++)
		g[i] = id->gids[i];
	if (syscall(SYS_setgroups, (size_t)id->ngids, g))
		return -errno;
	setfsgid(id->gid);
	setfsuid(id->uid);
	/* setfsuid reports no error; asking again does */
	if ((uint32_t)setfsuid((uid_t)-1) != id->uid ||
	    (uint32_t)setfsgid((gid_t)-1) != id->gid) {
		rr__nfsd_ident_leave(s);
		return -EPERM;
	}
	return 0;
}

void rr__nfsd_ident_leave(const struct rr_nfs3_server *s)
{
	if (!s->as_root)
		return;
	setfsuid(0);
	setfsgid(s->egid);
	syscall(SYS_setgroups, (size_t)s->ngroups, s->groups);
}

static bool in_group(const struct nfsd_ident *id, gid_t g)
{
	if (id->gid == g)
		return true;
	for (uint32_t i = 0; i < id->ngids; i++)
		if (id->gids[i] == g)
			return true;
	return false;
}

static uint32_t from_bits(unsigned rwx, bool dir)
{
	uint32_t a = 0;

	if (rwx & 4)
		a |= ACCESS3_READ;
	if (rwx & 2)
		a |= ACCESS3_MODIFY | ACCESS3_EXTEND |
		     (dir ? ACCESS3_DELETE : 0);
	if (rwx & 1)
		a |= dir ? ACCESS3_LOOKUP : ACCESS3_EXECUTE;
	return a;
}

uint32_t rr__nfsd_access(const struct rr_nfs3_server *s,
			 const struct nfsd_ident *id, const struct stat *st,
			 uint32_t want)
{
	bool dir = S_ISDIR(st->st_mode);
	unsigned rwx;
	uint32_t have;

	(void)s; /* what the call may do is in id, per client */
	if (id->uid == 0) {
		/* root may execute only what someone may execute */
		rwx = 6 | (dir || (st->st_mode & 0111) ? 1 : 0);
	} else if (id->uid == st->st_uid) {
		rwx = (st->st_mode >> 6) & 7;
	} else if (in_group(id, st->st_gid)) {
		rwx = (st->st_mode >> 3) & 7;
	} else {
		rwx = st->st_mode & 7;
	}
	have = from_bits(rwx, dir);
	if (id->ro)
		have &= ~(ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE);
	return have & want;
}

nfsstat3 rr__nfsd_may(const struct nfsd_call *c, const struct stat *st,
		      uint32_t want)
{
	if (c->s->as_root)
		return NFS3_OK; /* the kernel decides, as the caller */
	return rr__nfsd_access(c->s, &c->id, st, want) == want ? NFS3_OK
							       : NFS3ERR_ACCES;
}

bool rr__nfsd_mode_decides(const struct nfsd_obj *o, bool write)
{
	const uint64_t flags = STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND;

	if (!o->file || o->acl || !S_ISREG(o->st.st_mode))
		return false;
	if (!write)
		return true;
	/* a write by someone else clears these: let the kernel do that */
	if (o->st.st_mode & (S_ISUID | S_ISGID))
		return false;
	/* flags the file system does not report might be set */
	return (o->attrs_mask & flags) == flags && !(o->attrs & flags);
}
