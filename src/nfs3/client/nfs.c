// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rr_nfs_mount: URL -> ports -> MOUNT (TCP) -> NFS transport -> FSINFO.
 *
 * Ports come from the URL, else from rpcbind when one answers, else from
 * the defaults (NFS/RDMA 20049, NFS/TCP 2049, MOUNT 20048). rpcbind has no
 * entry kind for RDMA in version 2, so the RDMA port is never asked for.
 *
 * A URL may list servers to fail over to (nfs://a,b:port/export): servers
 * of one export that make the same file handles, as nfsrdmad's on one
 * CephFS with one key. The mount goes to the first that answers MOUNT;
 * its NFS transport holds the others as failover addresses, so a call
 * whose server went away is sent again to another with the same handle.
 * A server listed without a port has the first server's NFS port.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "nfsc.h"

#define DEFAULT_TIMEOUT_MS	   60000
#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define DEFAULT_DEPTH		   16
#define MAX_IO			   (1u << 20)
#define RPCBIND_TIMEOUT_MS	   1000

static void set_cred(struct rr_nfs *n, const struct rr_nfs_url *u)
{
	gid_t groups[16];
	int ng;

	n->cred.uid = u->uid >= 0 ? (uint32_t)u->uid : getuid();
	n->cred.gid = u->gid >= 0 ? (uint32_t)u->gid : getgid();
	n->cred.ngids = 0;
	if (u->uid >= 0 || u->gid >= 0)
		return; /* another identity: our groups are not its groups */
	ng = getgroups(16, groups);
	for (int i = 0; i < ng; i++)
		n->cred.gids[n->cred.ngids++] = groups[i];
}

/* Server i of the URL: its host first, then those to fail over to. */
static const char *server_host(const struct rr_nfs_url *u, uint32_t i)
{
	return i ? u->failover[i - 1].host : u->host;
}

static uint16_t mount_port(const struct rr_nfs_url *u, const char *host)
{
	uint16_t mnt = u->mountport;

	if (!mnt)
		mnt = rr__nfsc_rpcbind_port(host, MOUNT_PROGRAM, MOUNT_V3,
					    RPCBIND_TIMEOUT_MS);
	return mnt ? mnt : RR_NFS_PORT_MOUNT;
}

static uint16_t nfs_port(const struct rr_nfs_url *u, const char *host)
{
	bool tcp = u->proto == RR_NFS_PROTO_TCP;
	uint16_t nfs = u->nfsport;

	if (!nfs && tcp)
		nfs = rr__nfsc_rpcbind_port(host, NFS_PROGRAM, NFS_V3,
					    RPCBIND_TIMEOUT_MS);
	if (!nfs)
		nfs = tcp ? RR_NFS_PORT_TCP : RR_NFS_PORT_RDMA;
	return nfs;
}

/* The NFS port of server i: its own, else the first server's, else port. */
static uint16_t port_of(const struct rr_nfs_url *u, uint32_t i, uint16_t port)
{
	if (i && u->failover[i - 1].port)
		return u->failover[i - 1].port;
	return u->nfsport ? u->nfsport : port;
}

/* A server that cannot be reached, rather than one that said no. */
static bool unreachable(int rc)
{
	return rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EHOSTUNREACH ||
	       rc == -ENETUNREACH || rc == -ECONNRESET;
}

static uint32_t clamp_io(uint32_t srv, uint32_t pref, uint32_t max)
{
	uint32_t v = srv ? srv : pref;

	if (!v)
		v = 32768;
	if (v > max)
		v = max;
	return v < 4096 ? 4096 : v;
}

static int fsinfo(struct rr_nfs *n, uint32_t max_io)
{
	FSINFO3args a;
	FSINFO3res r = {0};
	int rc;

	nfsc_fh_arg(&a.fsroot, &n->root);
	rc = rr__nfsc_call(n, NFSPROC3_FSINFO, (xdrproc_t)rr__xdr_FSINFO3args,
			   &a, (xdrproc_t)rr__xdr_FSINFO3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc) {
		FSINFO3resok *ok = &r.FSINFO3res_u.resok;

		n->rtmax = clamp_io(ok->rtmax, ok->rtpref, max_io);
		n->wtmax = clamp_io(ok->wtmax, ok->wtpref, max_io);
		n->dtpref = ok->dtpref ? ok->dtpref : 8192;
	}
	xdr_free((xdrproc_t)rr__xdr_FSINFO3res, &r);
	return rc;
}

/*
 * The NFS transport to server first, port, with the URL's other servers
 * (each with its own port, or that of the first) to fail over to.
 */
static int connect_nfs(struct rr_nfs *n, const struct rr_nfs_url *u,
		       uint32_t first, uint16_t port, uint32_t max_io)
{
	struct rr_failover_server fo[RR_NFS_FAILOVER_MAX];
	struct nfsc_xprt_opts o = {.provider = u->provider,
				   .timeout_ms = n->timeout_ms,
				   .connect_timeout_ms = n->connect_timeout_ms,
				   .depth = n->depth,
				   .max_bulk = max_io,
				   .failover = fo};
	bool tcp = u->proto == RR_NFS_PROTO_TCP;
	const char *host = server_host(u, first);
	int rc = tcp ? rr__nfsc_probe_tcp(host, port, NFS_PROGRAM, NFS_V3,
					  nfsc_probe_ms(n), "NFS")
		     : 0;

	for (uint32_t i = 0; i <= u->nfailover; i++)
		if (i != first)
			fo[o.nfailover++] = (struct rr_failover_server){
				server_host(u, i), port_of(u, i, port)};
	if (rc)
		return rc;
	rc = tcp ? rr__nfsc_xprt_tcp(host, port, &o, &n->x)
		 : rr__nfsc_xprt_rdma(host, port, &o, &n->x);
	if (rc)
		return rr__nfsc_fail(rc,
				     "cannot reach NFS service at %s port %u "
				     "over %s: %s%s",
				     host, port, tcp ? "tcp" : "rdma",
				     strerror(-rc),
				     !tcp && rc == -ECONNRESET
					     ? " (not an RPC-over-RDMA port? "
					       "proto=tcp)"
					     : "");
	rc = fsinfo(n, max_io);
	if (rc)
		rr__nfsc_fail(rc, "FSINFO of the export's root failed: %s",
			      strerror(-rc));
	return rc;
}

/* What is left of the URL's path once the export is taken off. */
static char *rel_path(const char *path, const char *export)
{
	size_t el = strlen(export);

	while (el && export[el - 1] == '/')
		el--;
	return rr_strdup(path[el] ? path + el : "/");
}

static void apply_opts(struct rr_nfs *n, const struct rr_nfs_opts *o,
		       uint32_t *max_io)
{
	n->timeout_ms = o && o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	n->connect_timeout_ms = o && o->connect_timeout_ms
					? o->connect_timeout_ms
					: DEFAULT_CONNECT_TIMEOUT_MS;
	n->depth = o && o->depth ? o->depth : DEFAULT_DEPTH;
	*max_io = o && o->max_io && o->max_io < MAX_IO ? o->max_io : MAX_IO;
}

/* MOUNT at the first server that can be reached; which one, in *srv. */
static int mount_any(struct rr_nfs *n, const struct rr_nfs_url *u,
		     uint32_t *srv)
{
	int rc = -EHOSTUNREACH;

	for (uint32_t i = 0; i <= u->nfailover; i++) {
		const char *host = server_host(u, i);

		free(n->export);
		n->export = NULL;
		n->mountport = mount_port(u, host);
		rc = rr__nfsc_mount_export(n, host, n->mountport, u->path,
					   &n->root, &n->export);
		*srv = i;
		if (!unreachable(rc))
			break;
	}
	return rc;
}

static int mount_url(struct rr_nfs *n, const struct rr_nfs_url *u,
		     uint32_t max_io)
{
	uint32_t srv = 0;
	int rc;

	set_cred(n, u);
	n->nlmport = u->nlmport;
	rc = mount_any(n, u, &srv);
	if (rc)
		return rc;
	n->host = rr_strdup(server_host(u, srv));
	n->url_path = rel_path(u->path, n->export);
	if (!n->host || !n->url_path)
		return -ENOMEM;
	return connect_nfs(n, u, srv, port_of(u, srv, nfs_port(u, n->host)),
			   max_io);
}

static void nfs_free(struct rr_nfs *n)
{
	rr__nfsc_nlm_free(n);
	rr_rpc_clnt_destroy(n->x);
	rr__nfsc_io_fini(n);
	free(n->host);
	free(n->export);
	free(n->url_path);
	free(n);
}

int rr_nfs_mount(const char *url, const struct rr_nfs_opts *o,
		 struct rr_nfs **out)
{
	struct rr_nfs_url u;
	struct rr_nfs *n;
	uint32_t max_io;
	int rc;

	rr__nfsc_fail(0, "%s", "");
	rc = rr_nfs_url_parse(url, &u);
	if (rc)
		return rc; /* its message names the bad part */
	n = rr_calloc(1, sizeof(*n));
	if (!n) {
		rr_nfs_url_free(&u);
		return -ENOMEM;
	}
	rr__nfsc_io_init(n);
	apply_opts(n, o, &max_io);
	rc = mount_url(n, &u, max_io);
	rr_nfs_url_free(&u);
	if (rc) {
		if (n->x)
			rr__nfsc_mount_umnt(n);
		nfs_free(n);
		return rc;
	}
	rr__nfsc_fail(0, "%s", ""); /* a fallback on the way may have failed */
	*out = n;
	return 0;
}

static int do_umount(struct rr_nfs *n)
{
	int rc;

	if (!n)
		return 0;
	rc = rr_rpc_clnt_destroy(n->x);
	n->x = NULL;
	rr__nfsc_mount_umnt(n);
	nfs_free(n);
	return rc;
}

int rr_nfs_umount(struct rr_nfs *n)
{
	return NFSC_SAY(do_umount(n), "umount");
}

const char *rr_nfs_url_path(const struct rr_nfs *n)
{
	return n->url_path;
}

const char *rr_nfs_export(const struct rr_nfs *n)
{
	return n->export;
}

uint32_t rr_nfs_max_read(const struct rr_nfs *n)
{
	return n->rtmax;
}

uint32_t rr_nfs_max_write(const struct rr_nfs *n)
{
	return n->wtmax;
}

int rr_nfs_xprt_stats(const struct rr_nfs *n, struct rr_xprt_stats *out)
{
	int rc = rr_rpc_clnt_stats(n->x, out);

	return NFSC_SAY(rc, "transport counters");
}

void rr__nfsc_cap_io(struct rr_nfs *n, uint32_t rsize, uint32_t wsize)
{
	if (rsize >= 4096 && rsize < n->rtmax)
		n->rtmax = rsize & ~4095u;
	if (wsize >= 4096 && wsize < n->wtmax)
		n->wtmax = wsize & ~4095u;
}
