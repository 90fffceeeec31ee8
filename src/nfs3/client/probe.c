// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A first word with a TCP port before trusting it with a mount. The
 * transports reconnect and send a call again when a connection drops,
 * which a server of another protocol on that port (nfsrdmad's RDMA port
 * is iWARP over TCP: it closes a connection that opens with anything but
 * an MPA request) turns into a loop that ends only with the call timeout.
 * One NULL call on a connection that is not made again tells at once, and
 * says what the port did.
 */
#include <errno.h>
#include <string.h>

#include "nfsc.h"

/* NULL's arguments and results: nothing (libtirpc's xdr_void takes none). */
static bool_t xdr_nothing(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

static int said(int rc, const char *service, const char *host, uint16_t port,
		const char *what)
{
	return rr__nfsc_fail(rc, "%s at %s port %u %s", service, host, port,
			     what);
}

int rr__nfsc_probe_tcp(const char *host, uint16_t port, uint32_t prog,
		       uint32_t vers, int timeout_ms, const char *service)
{
	struct nfsc_xprt_opts o = {.timeout_ms = timeout_ms,
				   .connect_timeout_ms = timeout_ms,
				   .max_bulk = 4096,
				   .no_reconnect = true};
	struct rr_rpc_clnt *x;
	int rc = rr__nfsc_xprt_tcp(host, port, &o, &x);

	if (rc)
		return rr__nfsc_fail(rc,
				     "cannot reach %s service at %s port "
				     "%u: %s",
				     service, host, port, strerror(-rc));
	rc = rr__nfsc_xcall(x, NULL, prog, vers, 0, (xdrproc_t)xdr_nothing,
			    NULL, (xdrproc_t)xdr_nothing, NULL, 0);
	rr_rpc_clnt_destroy(x);
	switch (rc) {
	case 0:
		return 0;
	case -ECONNRESET:
		return said(-EPROTO, service, host, port,
			    "closed the connection without an RPC reply: not "
			    "ONC RPC over TCP (an RDMA port?)");
	case -EPROTO:
		return said(-EPROTO, service, host, port,
			    "answered with something that is not an RPC "
			    "reply");
	case -EPROTONOSUPPORT:
		return said(rc, service, host, port,
			    "does not serve that program and version");
	case -ETIMEDOUT:
		return said(rc, service, host, port,
			    "gave no answer to a NULL call");
	default:
		return said(rc, service, host, port, strerror(-rc));
	}
}
