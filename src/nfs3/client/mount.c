// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MOUNT version 3 (RFC 1813 section 5) over TCP, and rpcbind's GETPORT.
 *
 * The URL names a path, not an export; as libnfs does, the export is the
 * longest leading part of the path, component by component, that the
 * server's EXPORT list names. A server that refuses EXPORT is asked MNT
 * for the whole path and then each shorter prefix.
 *
 * rpcbind is asked with PMAP version 2 over our own TCP client, bounded by
 * a short timeout: libtirpc's pmap_getport would retry over UDP for up to
 * a minute when nothing answers, and an absent rpcbind is the normal case
 * for a user-level server.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "nfsc.h"

#include <rpc/pmap_prot.h>

#define EXPORT_RES_CAP (256 * 1024)
#define RPCBIND_PORT   111

/* libtirpc declares xdr_void without parameters; this one has them. */
static bool_t xdr_none(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

static int mnt_errno(mountstat3 st)
{
	switch (st) {
	case MNT3_OK:
		return 0;
	case MNT3ERR_NOTSUPP:
		return -EOPNOTSUPP;
	case MNT3ERR_SERVERFAULT:
		return -EREMOTEIO;
	default: /* the others share their numbers with nfsstat3 */
		return rr_nfs_errno((uint32_t)st);
	}
}

uint16_t rr__nfsc_rpcbind_port(const char *host, uint32_t prog, uint32_t vers,
			       int timeout_ms)
{
	struct nfsc_xprt_opts o = {.timeout_ms = timeout_ms,
				   .connect_timeout_ms = timeout_ms,
				   .max_bulk = 4096};
	struct pmap args = {
		.pm_prog = prog, .pm_vers = vers, .pm_prot = IPPROTO_TCP};
	struct rr_rpc_clnt *x;
	u_int port = 0;

	if (rr__nfsc_xprt_tcp(host, RPCBIND_PORT, &o, &x))
		return 0;
	if (rr__nfsc_xcall(x, NULL, PMAPPROG, PMAPVERS, PMAPPROC_GETPORT,
			   (xdrproc_t)xdr_pmap, &args, (xdrproc_t)xdr_u_int,
			   &port, 0))
		port = 0;
	rr_rpc_clnt_destroy(x);
	return port <= 65535 ? (uint16_t)port : 0;
}

static int mount_call(struct rr_nfs *n, struct rr_rpc_clnt *x, uint32_t proc,
		      xdrproc_t xa, void *a, xdrproc_t xr, void *r, size_t cap)
{
	return rr__nfsc_xcall(x, &n->cred, MOUNT_PROGRAM, MOUNT_V3, proc, xa, a,
			      xr, r, cap);
}

/* Is ex a leading path of path, component-wise? */
static bool is_prefix(const char *ex, const char *path)
{
	size_t el = strlen(ex);

	while (el > 1 && ex[el - 1] == '/')
		el--;
	if (el == 1 && ex[0] == '/')
		return true;
	return !strncmp(ex, path, el) && (path[el] == '/' || !path[el]);
}

/* The longest export that leads path; NULL (and a message) if none. */
static char *pick_export(exports list, const char *path)
{
	char names[160] = "";
	size_t best = 0, nl = 0;
	const char *pick = NULL;

	for (exportnode *e = list; e; e = e->ex_next) {
		size_t l = strlen(e->ex_dir);

		if (is_prefix(e->ex_dir, path) && (!pick || l > best)) {
			pick = e->ex_dir;
			best = l;
		}
		if (nl < sizeof(names) - 1)
			nl += (size_t)snprintf(names + nl, sizeof(names) - nl,
					       "%s%s", nl ? ", " : "",
					       e->ex_dir);
	}
	if (!pick) {
		rr__nfsc_fail(-ENOENT,
			      "export not found for %s (server exports: %s)",
			      path, nl ? names : "none");
		return NULL;
	}
	return rr_strdup(pick);
}

/* EXPORT: 0 and the pick, -ENOENT (none fits), or the call's error. */
static int choose_export(struct rr_nfs *n, struct rr_rpc_clnt *x,
			 const char *path, char **export)
{
	exports list = NULL;
	int rc = mount_call(n, x, MOUNTPROC3_EXPORT, (xdrproc_t)xdr_none, NULL,
			    (xdrproc_t)rr__xdr_exports, &list, EXPORT_RES_CAP);

	if (rc)
		return rc;
	*export = pick_export(list, path);
	xdr_free((xdrproc_t)rr__xdr_exports, &list);
	if (!*export)
		return -ENOENT;
	return 0;
}

static bool flavor_ok(const mountres3_ok *ok)
{
	u_int nf = ok->auth_flavors.auth_flavors_len;

	for (u_int i = 0; i < nf; i++) {
		int f = ok->auth_flavors.auth_flavors_val[i];

		if (f == RR_AUTH_SYS || f == RR_AUTH_NONE)
			return true;
	}
	return nf == 0; /* RFC 1813: an empty list is AUTH_NONE/SYS alike */
}

static int mnt(struct rr_nfs *n, struct rr_rpc_clnt *x, const char *dir,
	       struct nfsc_fh *root)
{
	mountres3 r = {0};
	dirpath d = (char *)dir;
	int rc = mount_call(n, x, MOUNTPROC3_MNT, (xdrproc_t)rr__xdr_dirpath,
			    &d, (xdrproc_t)rr__xdr_mountres3, &r, 0);

	if (rc)
		return rc;
	rc = mnt_errno(r.fhs_status);
	if (!rc) {
		mountres3_ok *ok = &r.mountres3_u.mountinfo;
		nfs_fh3 fh = {.data.data_len = ok->fhandle.fhandle3_len,
			      .data.data_val = ok->fhandle.fhandle3_val};

		rc = flavor_ok(ok) ? rr__nfsc_fh_set(root, &fh) : -EACCES;
	}
	xdr_free((xdrproc_t)rr__xdr_mountres3, &r);
	return rc;
}

/* Without EXPORT: MNT the path, then each shorter prefix. */
static int mnt_prefixes(struct rr_nfs *n, struct rr_rpc_clnt *x,
			const char *path, struct nfsc_fh *root, char **export)
{
	char *p = rr_strdup(path);
	int rc = -ENOENT;

	if (!p)
		return -ENOMEM;
	for (;;) {
		char *slash;

		rc = mnt(n, x, p, root);
		if (!rc || (rc != -ENOENT && rc != -EACCES && rc != -EPERM))
			break;
		slash = strrchr(p, '/');
		if (!slash || slash == p)
			break;
		*slash = '\0';
	}
	if (!rc)
		*export = p;
	else
		free(p);
	return rc;
}

static int mount_over(struct rr_nfs *n, struct rr_rpc_clnt *x, const char *path,
		      struct nfsc_fh *root, char **export)
{
	int rc = choose_export(n, x, path, export);

	if (rc == -ENOENT)
		return rc;
	if (rc) /* no EXPORT list here: try MNT itself */
		return mnt_prefixes(n, x, path, root, export);
	rc = mnt(n, x, *export, root);
	if (rc) {
		rr__nfsc_fail(rc, "MOUNT of %s refused: %s", *export,
			      strerror(-rc));
		free(*export);
		*export = NULL;
	}
	return rc;
}

int rr__nfsc_mount_export(struct rr_nfs *n, const char *host, uint16_t port,
			  const char *path, struct nfsc_fh *root, char **export)
{
	struct nfsc_xprt_opts o = {.timeout_ms = n->timeout_ms,
				   .connect_timeout_ms = n->connect_timeout_ms,
				   .max_bulk = 4096};
	struct rr_rpc_clnt *x;
	int rc = rr__nfsc_probe_tcp(host, port, MOUNT_PROGRAM, MOUNT_V3,
				    nfsc_probe_ms(n), "MOUNT");

	if (rc)
		return rc;
	rc = rr__nfsc_xprt_tcp(host, port, &o, &x);
	if (rc)
		return rr__nfsc_fail(
			rc, "cannot reach MOUNT service at %s port %u: %s",
			host, port, strerror(-rc));
	rc = mount_over(n, x, path, root, export);
	rr_rpc_clnt_destroy(x);
	if (rc && !rr_nfs_error()[0])
		rr__nfsc_fail(rc, "MOUNT of %s failed: %s", path,
			      strerror(-rc));
	return rc;
}

/*
 * Best effort: the server's mount list is advisory (RFC 1813 5.2). So
 * UMNT waits a bounded time even on a hard mount, whose calls otherwise
 * wait forever: an unmount must finish when the server is gone.
 */
void rr__nfsc_mount_umnt(struct rr_nfs *n)
{
	int ms = nfsc_probe_ms(n) < NFSC_UMNT_MAX_MS ? nfsc_probe_ms(n)
						     : NFSC_UMNT_MAX_MS;
	struct nfsc_xprt_opts o = {
		.timeout_ms = ms, .connect_timeout_ms = ms, .max_bulk = 4096};
	dirpath d = n->export;
	struct rr_rpc_clnt *x;

	if (rr__nfsc_xprt_tcp(n->host, n->mountport, &o, &x))
		return;
	mount_call(n, x, MOUNTPROC3_UMNT, (xdrproc_t)rr__xdr_dirpath, &d,
		   (xdrproc_t)xdr_none, NULL, 0);
	rr_rpc_clnt_destroy(x);
}
