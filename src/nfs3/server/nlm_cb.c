// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Calls to a client host: NLM's GRANTED callback, and NSM's SM_NOTIFY
 * when we restarted. GRANTED: a blocked lock, now taken for its owner, told
 * to the client host's lock manager, found as Linux's lockd finds it:
 * the host's rpcbind (PMAP version 2 GETPORT over TCP, port 111) names
 * its NLM version 4 TCP port. A connection per callback, made and
 * dropped: blocked locks are rare, and a client's lock manager may
 * have moved since.
 *
 * Bounded in time (CB_TIMEOUT_MS each for rpcbind and the call) so a
 * dead client holds the callback thread briefly, never forever. GRANTED
 * comes from the address the client locked at: Linux's lockd matches a
 * callback to its blocked lock by the server's address, and on a host
 * with several a routed source may be another (it then answers DENIED).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>
#include <rpc/pmap_prot.h>
#include <rpcrdma/oncrpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "base/alloc.h"
#include "nlm_cb.h"

#define CB_TIMEOUT_MS 5000
#define CB_RES_CAP    512
#define CB_ARGS_CAP   (LM_MAXSTRLEN + 3 * MAXNETOBJ_SZ + 256)
#define RPCBIND_PORT  111

static int clnt(const char *host, const char *source, uint16_t port,
		struct rr_tcp_clnt **out)
{
	struct rr_tcp_clnt_opts o = {.source = source,
				     .timeout_ms = CB_TIMEOUT_MS,
				     .connect_timeout_ms = CB_TIMEOUT_MS,
				     .max_record = 64 * 1024,
				     .no_reconnect = true,
				     .keepalive_ms = -1};

	return rr_tcp_clnt_create(host, port, &o, out);
}

/* One call with rpcgen's XDR both ways; res decoded when 0. */
static int xcall(const char *host, const char *source, uint16_t port,
		 uint32_t prog, uint32_t vers, uint32_t proc, xdrproc_t xa,
		 void *a, xdrproc_t xr, void *r)
{
	char *buf = rr_malloc(CB_ARGS_CAP + CB_RES_CAP);
	struct rr_call call = {.prog = prog, .vers = vers, .proc = proc};
	struct rr_tcp_clnt *c;
	XDR x;
	int rc;

	if (!buf)
		return -ENOMEM;
	xdrmem_create(&x, buf, CB_ARGS_CAP, XDR_ENCODE);
	if (!xa(&x, a)) {
		free(buf);
		return -EMSGSIZE;
	}
	call.args = buf;
	call.args_len = xdr_getpos(&x);
	call.res = buf + CB_ARGS_CAP;
	call.res_cap = CB_RES_CAP;
	rc = clnt(host, source, port, &c);
	if (!rc) {
		rc = rr_tcp_clnt_call(c, &call);
		rr_tcp_clnt_destroy(c);
	}
	if (!rc) {
		xdrmem_create(&x, call.res, (u_int)call.res_len, XDR_DECODE);
		rc = xr(&x, r) ? 0 : -EPROTO;
	}
	free(buf);
	return rc;
}

/* prog/vers's TCP port as host's rpcbind names it; 0: none. */
static uint16_t tcp_port(const char *host, const char *source, uint32_t prog,
			 uint32_t vers)
{
	struct pmap args = {
		.pm_prog = prog, .pm_vers = vers, .pm_prot = IPPROTO_TCP};
	u_int port = 0;

	if (xcall(host, source, RPCBIND_PORT, PMAPPROG, PMAPVERS,
		  PMAPPROC_GETPORT, (xdrproc_t)xdr_pmap, &args,
		  (xdrproc_t)xdr_u_int, &port))
		return 0;
	return port <= 65535 ? (uint16_t)port : 0;
}

int rr__nfsd_nlm_granted(const char *host, const char *source,
			 const nlm4_testargs *a)
{
	uint16_t port = tcp_port(host, source, NLM_PROG, NLM4_VERS);
	nlm4_res res;
	int rc;

	if (!port)
		return -EHOSTUNREACH;
	memset(&res, 0, sizeof(res));
	rc = xcall(host, source, port, NLM_PROG, NLM4_VERS, NLMPROC4_GRANTED,
		   (xdrproc_t)rr__xdr_nlm4_testargs, (void *)a,
		   (xdrproc_t)rr__xdr_nlm4_res, &res);
	if (rc)
		return rc;
	/* anything but GRANTED: the client no longer wants the lock */
	rc = res.stat.stat == NLM4_GRANTED ? 0 : -ECANCELED;
	xdr_free((xdrproc_t)rr__xdr_nlm4_res, (char *)&res);
	return rc;
}

int rr__nfsd_nsm_tell(const char *host, const char *my_name, int32_t state)
{
	uint16_t port = tcp_port(host, NULL, SM_PROG, SM_VERS);
	sm_stat_chge a = {.mon_name = (char *)my_name, .state = state};

	if (!port)
		return -EHOSTUNREACH;
	return xcall(host, NULL, port, SM_PROG, SM_VERS, SM_NOTIFY,
		     (xdrproc_t)rr__xdr_sm_stat_chge, &a,
		     (xdrproc_t)(void (*)(void))xdr_void, NULL);
}
