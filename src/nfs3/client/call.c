// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Calls with rpcgen's XDR on both sides, and every mapping of a remote
 * answer to an errno: RPC accept/reject statuses here, nfsstat3 in
 * rr_nfs_errno. Keeping them in one file keeps the client's error story
 * consistent across operations.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "base/alloc.h"
#include "nfsc.h"

static __thread char last_error[256];
static __thread unsigned fail_count;
/* rr_nfs_set_thread_cred: for which mount, and who. */
static __thread const struct rr_nfs *cred_mount;
static __thread struct rr_cred cred_thread;
/* rr_nfs_set_thread_abort */
static __thread bool (*abort_fn)(void *arg);
static __thread void *abort_arg;

int rr__nfsc_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	fail_count++;
	return err;
}

unsigned rr__nfsc_fail_mark(void)
{
	return fail_count;
}

int rr__nfsc_said(int err, unsigned mark, const char *fmt, ...)
{
	char what[192];
	va_list ap;

	if (err >= 0 || mark != fail_count)
		return err;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return rr__nfsc_fail(err, "%s: %s", what, strerror(-err));
}

const char *rr_nfs_error(void)
{
	return last_error;
}

/*
 * Thread-local rather than an argument of every call: a FUSE worker
 * thread serves one request at a time, so setting the requester once
 * covers every call that request makes, pipelined READs and WRITEs
 * included, without a second set of functions. The rr_call points into
 * this thread's storage, which outlives the call: calls are synchronous.
 */
int rr_nfs_set_thread_cred(struct rr_nfs *n, const struct rr_nfs_cred *c)
{
	if (!c) {
		cred_mount = NULL;
		return 0;
	}
	if (c->ngroups && !c->groups)
		return -EINVAL;
	cred_thread = (struct rr_cred){.uid = c->uid, .gid = c->gid};
	/* AUTH_SYS carries 16 groups (RFC 5531 appendix A): the rest drop */
	for (uint32_t i = 0; i < c->ngroups && i < 16; i++)
		cred_thread.gids[cred_thread.ngids++] = c->groups[i];
	cred_thread.machine = n->cred.machine;
	cred_mount = n;
	return 0;
}

void rr_nfs_set_thread_abort(bool (*aborted)(void *arg), void *arg)
{
	abort_fn = aborted;
	abort_arg = arg;
}

bool rr__nfsc_abort_now(void)
{
	return abort_fn && abort_fn(abort_arg);
}

const struct rr_cred *rr__nfsc_cred(const struct rr_nfs *n)
{
	return cred_mount == n ? &cred_thread : &n->cred;
}

/*
 * RFC 1813 numbers most statuses after the errno of the Unix it came from;
 * where Linux numbers differ (NAMETOOLONG, NOTEMPTY, DQUOT, STALE, REMOTE)
 * only the name carries over, so every entry is spelled out.
 */
static const struct {
	uint32_t st;
	int err;
} stat_errno[] = {
	{NFS3ERR_PERM, EPERM},
	{NFS3ERR_NOENT, ENOENT},
	{NFS3ERR_IO, EIO},
	{NFS3ERR_NXIO, ENXIO},
	{NFS3ERR_ACCES, EACCES},
	{NFS3ERR_EXIST, EEXIST},
	{NFS3ERR_XDEV, EXDEV},
	{NFS3ERR_NODEV, ENODEV},
	{NFS3ERR_NOTDIR, ENOTDIR},
	{NFS3ERR_ISDIR, EISDIR},
	{NFS3ERR_INVAL, EINVAL},
	{NFS3ERR_FBIG, EFBIG},
	{NFS3ERR_NOSPC, ENOSPC},
	{NFS3ERR_ROFS, EROFS},
	{NFS3ERR_MLINK, EMLINK},
	{NFS3ERR_NAMETOOLONG, ENAMETOOLONG},
	{NFS3ERR_NOTEMPTY, ENOTEMPTY},
	{NFS3ERR_DQUOT, EDQUOT},
	{NFS3ERR_STALE, ESTALE},
	{NFS3ERR_REMOTE, EREMOTE},
	{NFS3ERR_BADHANDLE, ESTALE},
	{NFS3ERR_NOT_SYNC, EIO},
	{NFS3ERR_BAD_COOKIE, EINVAL},
	{NFS3ERR_NOTSUPP, EOPNOTSUPP},
	{NFS3ERR_TOOSMALL, EOVERFLOW},
	{NFS3ERR_SERVERFAULT, EREMOTEIO},
	{NFS3ERR_BADTYPE, EINVAL},
	{NFS3ERR_JUKEBOX, EAGAIN},
};

int rr_nfs_errno(uint32_t st)
{
	if (st == NFS3_OK)
		return 0;
	for (size_t i = 0; i < sizeof(stat_errno) / sizeof(stat_errno[0]); i++)
		if (stat_errno[i].st == st)
			return -stat_errno[i].err;
	return -EIO; /* a status the RFC does not define */
}

int rr__nfsc_rpc_errno(int rc, const struct rr_call *call)
{
	if (rc != -EREMOTEIO)
		return rc;
	if (call->reply_stat == RR_MSG_DENIED)
		return -EACCES; /* AUTH_ERROR; RPC_MISMATCH never for v2 */
	switch (call->accept_stat) {
	case RR_PROG_UNAVAIL:
	case RR_PROG_MISMATCH:
		return -EPROTONOSUPPORT;
	case RR_PROC_UNAVAIL:
		return -EOPNOTSUPP;
	case RR_GARBAGE_ARGS:
		return -EPROTO;
	default:
		return -EREMOTEIO;
	}
}

int rr__nfsc_encode(xdrproc_t xargs, void *args, char *buf, size_t cap,
		    size_t *len)
{
	XDR x;

	xdrmem_create(&x, buf, (u_int)cap, XDR_ENCODE);
	if (!xargs(&x, args)) {
		xdr_destroy(&x);
		return -EMSGSIZE;
	}
	*len = xdr_getpos(&x);
	xdr_destroy(&x);
	return 0;
}

static int decode(xdrproc_t xres, void *res, char *buf, size_t len)
{
	XDR x;
	bool_t ok;

	xdrmem_create(&x, buf, (u_int)len, XDR_DECODE);
	ok = xres(&x, res);
	xdr_destroy(&x);
	if (!ok) {
		xdr_free(xres, res);
		return -EPROTO;
	}
	return 0;
}

/*
 * The arguments' last item_len bytes (and their roundup) are a
 * DDP-eligible item (RFC 8267 section 4): handed to the transport apart,
 * so that a call too large to go inline carries them in a read chunk at
 * their position rather than the whole call in a position-zero chunk.
 */
static void split_ddp(struct rr_call *call, size_t item_len)
{
	size_t tail = item_len + (-item_len & 3);

	if (!item_len || tail > call->args_len)
		return;
	call->args_len -= tail;
	call->arg_bulk = (const uint8_t *)call->args + call->args_len;
	call->arg_bulk_len = item_len;
}

/* A call in flight that the thread's abort check may cancel. */
struct abortable {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rc;
};

static void abortable_done(struct rr_call *call, int rc, void *arg)
{
	struct abortable *a = arg;

	(void)call;
	pthread_mutex_lock(&a->mu);
	a->done = true;
	a->rc = rc;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

/*
 * Waits out a slice for a call another thread may be driving to its
 * end: true once it is done.
 */
static bool abortable_wait(struct abortable *a, bool sleep)
{
	struct timespec ts;
	bool done;

	pthread_mutex_lock(&a->mu);
	if (!a->done && sleep) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)NFSC_ABORT_SLICE_MS * 1000000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&a->cv, &a->mu, &ts);
	}
	done = a->done;
	pthread_mutex_unlock(&a->mu);
	return done;
}

/*
 * rr_rpc_clnt_call with the thread's abort check between slices of
 * progress: asked to stop, the call is cancelled and, once the transport
 * has fenced it, fails with -EINTR (unless it completed meanwhile).
 */
static int call_abortable(struct rr_rpc_clnt *xp, struct rr_call *call)
{
	struct abortable a = {.mu = PTHREAD_MUTEX_INITIALIZER,
			      .cv = PTHREAD_COND_INITIALIZER};
	bool cancelled = false;
	int rc = rr_rpc_clnt_call_async(xp, call, abortable_done, &a);

	while (!rc && !abortable_wait(&a, false)) {
		int prc = rr_rpc_clnt_progress(xp, NFSC_ABORT_SLICE_MS);

		/* someone else drives, or the transport is down: sleep */
		if (prc && prc != -ETIMEDOUT)
			abortable_wait(&a, true);
		if (!cancelled && rr__nfsc_abort_now()) {
			rr_rpc_clnt_cancel(xp, call);
			cancelled = true;
		}
	}
	pthread_cond_destroy(&a.cv);
	pthread_mutex_destroy(&a.mu);
	if (rc)
		return rc;
	if (cancelled && a.rc == -ECANCELED)
		return rr__nfsc_fail(-EINTR, "call %u interrupted", call->proc);
	return a.rc;
}

/*
 * One exchange of call: synchronous, or in slices between the thread's
 * abort checks when it has one.
 */
static int exchange(struct rr_rpc_clnt *xp, struct rr_call *call)
{
	return rr__nfsc_rpc_errno(abort_fn ? call_abortable(xp, call)
					   : rr_rpc_clnt_call(xp, call),
				  call);
}

/* n: the mount of an NFS call, which JUKEBOX sends again; else NULL. */
static int xcall(struct rr_rpc_clnt *xp, const struct rr_nfs *n,
		 const struct rr_cred *cred, uint32_t prog, uint32_t vers,
		 uint32_t proc, xdrproc_t xargs, void *args, xdrproc_t xres,
		 void *res, size_t res_cap, size_t item_len)
{
	char abuf[NFSC_ARGS_MAX], fixed[NFSC_RES_FIXED];
	struct rr_call once = {.prog = prog,
			       .vers = vers,
			       .proc = proc,
			       .cred = cred,
			       .args = abuf},
		       call;
	struct nfsc_jukebox jb = {0};
	int rc = rr__nfsc_encode(xargs, args, abuf, sizeof(abuf),
				 &once.args_len);

	if (rc)
		return rc;
	split_ddp(&once, item_len);
	/* a result of fixed shape (GETATTR, COMMIT, ...) needs no heap */
	once.res_cap = res_cap ? res_cap : NFSC_RES_FIXED;
	once.res = res_cap ? rr_malloc(once.res_cap) : fixed;
	if (!once.res)
		return -ENOMEM;
	do {
		call = once;
		rc = exchange(xp, &call);
	} while (!rc && n && rr__nfsc_jukebox(&call) &&
		 !(rc = rr__nfsc_jukebox_wait(n, &jb)));
	if (!rc)
		rc = decode(xres, res, call.res, call.res_len);
	if (once.res != fixed)
		free(once.res);
	return rc;
}

int rr__nfsc_xcall(struct rr_rpc_clnt *xp, const struct rr_cred *cred,
		   uint32_t prog, uint32_t vers, uint32_t proc, xdrproc_t xargs,
		   void *args, xdrproc_t xres, void *res, size_t res_cap)
{
	return xcall(xp, NULL, cred, prog, vers, proc, xargs, args, xres, res,
		     res_cap, 0);
}

int rr__nfsc_call(struct rr_nfs *n, uint32_t proc, xdrproc_t xargs, void *args,
		  xdrproc_t xres, void *res, size_t res_cap)
{
	return xcall(n->x, n, rr__nfsc_cred(n), NFS_PROGRAM, NFS_V3, proc,
		     xargs, args, xres, res, res_cap, 0);
}

int rr__nfsc_call_ddp(struct rr_nfs *n, uint32_t proc, xdrproc_t xargs,
		      void *args, size_t item_len, xdrproc_t xres, void *res,
		      size_t res_cap)
{
	return xcall(n->x, n, rr__nfsc_cred(n), NFS_PROGRAM, NFS_V3, proc,
		     xargs, args, xres, res, res_cap, item_len);
}

int rr__nfsc_fh_set(struct nfsc_fh *fh, const nfs_fh3 *w)
{
	if (w->data.data_len > NFS3_FHSIZE || !w->data.data_len)
		return -EPROTO;
	fh->len = w->data.data_len;
	memcpy(fh->data, w->data.data_val, fh->len);
	return 0;
}

static mode_t type_bits(ftype3 t)
{
	switch (t) {
	case NF3DIR:
		return S_IFDIR;
	case NF3BLK:
		return S_IFBLK;
	case NF3CHR:
		return S_IFCHR;
	case NF3LNK:
		return S_IFLNK;
	case NF3SOCK:
		return S_IFSOCK;
	case NF3FIFO:
		return S_IFIFO;
	default:
		return S_IFREG;
	}
}

static struct timespec ts_of(const nfstime3 *t)
{
	return (struct timespec){.tv_sec = t->seconds, .tv_nsec = t->nseconds};
}

void rr__nfsc_fattr_to_stat(const fattr3 *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = type_bits(a->type) | (a->mode & 07777);
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)((a->used + 511) / 512);
	st->st_blksize = 4096;
	st->st_rdev = makedev(a->rdev.specdata1, a->rdev.specdata2);
	st->st_dev = (dev_t)a->fsid;
	st->st_ino = (ino_t)a->fileid;
	st->st_atim = ts_of(&a->atime);
	st->st_mtim = ts_of(&a->mtime);
	st->st_ctim = ts_of(&a->ctime);
}
