// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The NFS client's choice of transport options; everything after creation
 * goes through the RPC layer's one client interface (rr_rpc_clnt). The
 * transports differ in where a DDP-eligible result lands: RDMA places READ
 * data in call->res_bulk by RDMA Write (or inline after the length word
 * when the server chose so), TCP always inline in call->res.
 */
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "nfsc.h"

/*
 * Liveness: a connection gone silent is dropped, and its calls sent again
 * on a new one (a server's reply cache answers those it already ran), well
 * before the calls time out: a probe after a third of the call timeout
 * without a reply, and another third for its answer. Without a call
 * timeout, the transports' defaults (a minute each).
 */
static int keepalive_ms(const struct nfsc_xprt_opts *o)
{
	if (o->timeout_ms <= 0)
		return 0;
	return o->timeout_ms / 3 > 1000 ? o->timeout_ms / 3 : 1000;
}

/* ----------------------------------------------------------------- RDMA */

int rr__nfsc_xprt_rdma(const char *host, uint16_t port,
		       const struct nfsc_xprt_opts *o, struct rr_rpc_clnt **out)
{
	struct rr_clnt_opts co = {
		.provider = o->provider,
		.timeout_ms = o->timeout_ms,
		.connect_timeout_ms = o->connect_timeout_ms,
		.max_bulk = o->max_bulk,
		/* every READ/WRITE in flight may need one for its data */
		.bounce_bufs = o->depth,
		.keepalive_ms = keepalive_ms(o),
		.keepalive_timeout_ms = keepalive_ms(o),
		.failover = o->failover,
		.nfailover = o->nfailover,
	};
	struct rr_clnt *c;
	int rc = rr_clnt_create(host, port, &co, &c);

	if (!rc)
		*out = rr_clnt_rpc(c);
	return rc;
}

/* ------------------------------------------------------------------ TCP */

int rr__nfsc_xprt_tcp(const char *host, uint16_t port,
		      const struct nfsc_xprt_opts *o, struct rr_rpc_clnt **out)
{
	struct rr_tcp_clnt_opts to = {
		.timeout_ms = o->timeout_ms < 0 ? 0 : o->timeout_ms,
		.connect_timeout_ms = o->connect_timeout_ms,
		/* a whole READ reply or WRITE call in one record */
		.max_record = o->max_bulk + 64 * 1024,
		/* it reconnects and sends calls again, as over RDMA */
		.keepalive_ms = keepalive_ms(o),
		.keepalive_timeout_ms = keepalive_ms(o),
		.no_reconnect = o->no_reconnect,
		.failover = o->failover,
		.nfailover = o->nfailover,
	};
	struct rr_tcp_clnt *c;
	int rc = rr_tcp_clnt_create(host, port, &to, &c);

	if (!rc)
		*out = rr_tcp_clnt_rpc(c);
	return rc;
}
