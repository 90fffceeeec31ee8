/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NFS program's entry point: one handler for every procedure. It works
 * out the caller's identity (taken on once the procedure acts, fh.c),
 * decodes the arguments with rpcgen's routines, runs the procedure,
 * encodes its result and gives everything back; READ and WRITE code their
 * own XDR around the DDP-eligible data (rw.c).
 */
#include "nfs3/server/nfsd.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>

struct nfsd_proc {
	xdrproc_t xargs, xres;
	size_t args_size, res_size;
	nfsd_op_fn fn;
};

#define P(name, fn)                                                            \
	{                                                                      \
		(xdrproc_t) rr__xdr_##name##3args,                             \
			(xdrproc_t)rr__xdr_##name##3res, sizeof(name##3args),  \
			sizeof(name##3res), fn                                 \
	}

static const struct nfsd_proc procs[] = {
	[NFSPROC3_GETATTR] = P(GETATTR, rr__nfsd_getattr),
	[NFSPROC3_SETATTR] = P(SETATTR, rr__nfsd_setattr),
	[NFSPROC3_LOOKUP] = P(LOOKUP, rr__nfsd_lookup),
	[NFSPROC3_ACCESS] = P(ACCESS, rr__nfsd_access_op),
	[NFSPROC3_READLINK] = P(READLINK, rr__nfsd_readlink),
	[NFSPROC3_CREATE] = P(CREATE, rr__nfsd_create),
	[NFSPROC3_MKDIR] = P(MKDIR, rr__nfsd_mkdir),
	[NFSPROC3_SYMLINK] = P(SYMLINK, rr__nfsd_symlink),
	[NFSPROC3_MKNOD] = P(MKNOD, rr__nfsd_mknod),
	[NFSPROC3_REMOVE] = P(REMOVE, rr__nfsd_remove),
	[NFSPROC3_RMDIR] = P(RMDIR, rr__nfsd_rmdir),
	[NFSPROC3_RENAME] = P(RENAME, rr__nfsd_rename),
	[NFSPROC3_LINK] = P(LINK, rr__nfsd_link),
	[NFSPROC3_READDIR] = P(READDIR, rr__nfsd_readdir),
	[NFSPROC3_READDIRPLUS] = P(READDIRPLUS, rr__nfsd_readdirplus),
	[NFSPROC3_FSSTAT] = P(FSSTAT, rr__nfsd_fsstat),
	[NFSPROC3_FSINFO] = P(FSINFO, rr__nfsd_fsinfo),
	[NFSPROC3_PATHCONF] = P(PATHCONF, rr__nfsd_pathconf),
	[NFSPROC3_COMMIT] = P(COMMIT, rr__nfsd_commit),
};

#define NPROCS (NFSPROC3_COMMIT + 1)

/*
 * rpcgen decodes a string up to its first NUL: a name "x\0/../y" would
 * reach the handler as "x", and "..\0" as "..". Encoding the arguments
 * again tells: a string cut short comes out with another length word.
 * The comparison is of the bytes, so it also refuses what XDR forbids
 * elsewhere (padding that is not zero, a bool that is neither 0 nor 1).
 * 0, -EBADMSG (GARBAGE_ARGS, as Linux's nfsd answers a name holding a
 * NUL) or -ENOMEM.
 */
static int args_intact(struct nfsd_call *c, const struct nfsd_proc *p,
		       void *args, const void *in, u_int decoded)
{
	char *buf = rr__nfsd_alloc(c, decoded ? decoded : 1);
	XDR x;

	if (!buf)
		return -ENOMEM;
	xdrmem_create(&x, buf, decoded, XDR_ENCODE);
	if (!p->xargs(&x, args) || xdr_getpos(&x) != decoded)
		return -EBADMSG;
	return memcmp(buf, in, decoded) ? -EBADMSG : 0;
}

/*
 * The encoded results. READLINK's path is DDP-eligible (RFC 8267 section
 * 4): its bytes, already encoded last, are handed to the transport apart
 * from the XDR before them, so they can go in a write chunk the client
 * offered (or inline, or in the reply chunk, as the transport finds).
 */
static int set_res(struct nfsd_call *c, const struct nfsd_proc *p, void *res,
		   uint8_t *out, size_t len)
{
	const READLINK3res *rl = res;
	size_t n, tail;

	if (p->fn != rr__nfsd_readlink || rl->status != NFS3_OK)
		return rr_svc_set_res(c->req, len, NULL, 0);
	n = strlen(rl->READLINK3res_u.resok.data);
	tail = n + (-n & 3); /* and its XDR roundup */
	if (tail > len)
		return -EMSGSIZE;
	return rr_svc_set_res(c->req, len - tail, out + len - tail, n);
}

static uint32_t run(struct nfsd_call *c, const struct nfsd_proc *p)
{
	size_t len, cap;
	/* DDP-eligible arguments (SYMLINK's path) in place: one XDR stream */
	const void *in = rr_svc_args_xdr(c->req, &len);
	void *out = rr_svc_res_buf(c->req, &cap);
	void *args = rr__nfsd_alloc(c, p->args_size);
	void *res = rr__nfsd_alloc(c, p->res_size);
	uint32_t rc = RR_SYSTEM_ERR;
	int irc = 0;
	XDR x;

	if (!args || !res)
		return RR_SYSTEM_ERR;
	xdrmem_create(&x, (char *)in, (u_int)len, XDR_DECODE);
	if (!p->xargs(&x, args) ||
	    (irc = args_intact(c, p, args, in, xdr_getpos(&x))) == -EBADMSG) {
		char host[INET6_ADDRSTRLEN];

		atomic_fetch_add(&c->s->garbage_args, 1);
		rr__nfsd_host_of(c, host);
		rr_warn_rl("nfs3: %s: arguments that do not decode "
			   "(procedure %u)",
			   host, rr_svc_req_proc(c->req));
		rc = RR_GARBAGE_ARGS;
		goto out;
	}
	if (irc)
		goto out; /* no memory to check them: SYSTEM_ERR */
	/* every result union starts with its nfsstat3 */
	*(nfsstat3 *)res = p->fn(c, args, res);
	xdrmem_create(&x, out, (u_int)cap, XDR_ENCODE);
	if (p->xres(&x, res) && !set_res(c, p, res, out, xdr_getpos(&x)))
		rc = RR_SUCCESS;
out:
	xdr_free(p->xargs, args);
	return rc;
}

static uint32_t call(struct nfsd_call *c, uint32_t proc)
{
	switch (proc) {
	case NFSPROC3_NULL:
		return rr_svc_set_res(c->req, 0, NULL, 0) ? RR_SYSTEM_ERR
							  : RR_SUCCESS;
	case NFSPROC3_READ:
		return rr__nfsd_read(c);
	case NFSPROC3_WRITE:
		return rr__nfsd_write(c);
	default:
		if (proc >= NPROCS || !procs[proc].fn)
			return RR_PROC_UNAVAIL;
		return run(c, &procs[proc]);
	}
}

uint32_t rr__nfsd_nfs_call(struct nfsd_call *c, const struct nfsd_policy *p)
{
	uint32_t rc;

	c->nowait = rr_svc_req_nowait(c->req);
	rr__nfsd_ident_from_cred(p, rr_svc_cred(c->req), &c->id);
	rc = call(c, rr_svc_req_proc(c->req));
	rr__nfsd_call_close(c);
	rr__nfsd_arena_free(c);
	if (c->defer)
		return RR_SVC_DEFER; /* counted when a worker runs it */
	atomic_fetch_add(&c->s->calls, 1);
	return rc;
}

static uint32_t nfs_handler(struct rr_svc_req *req, void *arg)
{
	struct nfsd_call c = {.s = arg, .req = req};

	return rr__nfsd_nfs_call(&c, &c.s->pol);
}

static const rr_svc_fn nfs_table[NPROCS] = {
	[0 ... NPROCS - 1] = nfs_handler,
};

static const rr_svc_fn mount_table[MOUNTPROC3_EXPORT + 1] = {
	[0 ... MOUNTPROC3_EXPORT] = rr__nfsd_mount_handler,
};

/*
 * The procedures that change state in a way a second run would not repeat
 * (RFC 1813 section 4.1 and the kernel's nfsd agree on this set): a call
 * sent again after a reconnect is answered from the server's duplicate
 * request cache.
 */
#define BIT(p) (UINT64_C(1) << (p))
static const uint64_t nfs_drc_procs =
	BIT(NFSPROC3_SETATTR) | BIT(NFSPROC3_WRITE) | BIT(NFSPROC3_CREATE) |
	BIT(NFSPROC3_MKDIR) | BIT(NFSPROC3_SYMLINK) | BIT(NFSPROC3_MKNOD) |
	BIT(NFSPROC3_REMOVE) | BIT(NFSPROC3_RMDIR) | BIT(NFSPROC3_RENAME) |
	BIT(NFSPROC3_LINK) | BIT(NFSPROC3_COMMIT);

/*
 * The procedures tried on the thread that received them (see nfsd.h's
 * nowait): READ of a cached file whose data is in the page cache, and
 * NULL. Everything else may block or act as the caller: a worker runs it.
 */
static const uint64_t nfs_nowait_procs =
	BIT(NFSPROC3_NULL) | BIT(NFSPROC3_READ);

void rr_nfs3_server_progs(struct rr_nfs3_server *s, struct rr_svc_prog *nfs,
			  struct rr_svc_prog *mount)
{
	if (nfs)
		*nfs = (struct rr_svc_prog){.prog = NFS_PROGRAM,
					    .vers = NFS_V3,
					    .nprocs = NPROCS,
					    .procs = nfs_table,
					    .arg = s,
					    .drc_procs = nfs_drc_procs,
					    .nowait_procs = nfs_nowait_procs};
	if (mount)
		*mount = (struct rr_svc_prog){.prog = MOUNT_PROGRAM,
					      .vers = MOUNT_V3,
					      .nprocs = MOUNTPROC3_EXPORT + 1,
					      .procs = mount_table,
					      .arg = s};
}
