// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The two transports behind one table of calls. Both take a struct
 * rr_call with the same meaning; they differ in where a DDP-eligible
 * result lands: RDMA places READ data in call->res_bulk by RDMA Write (or
 * inline after the length word when the server chose so), TCP always
 * inline in call->res.
 */
#include <errno.h>
#include <stdlib.h>

#include <rpcrdma/rpc_tcp.h>

#include "base/alloc.h"
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

static int rdma_call(struct nfsc_xprt *x, struct rr_call *call)
{
	return rr_clnt_call(x->impl, call);
}

static int rdma_call_async(struct nfsc_xprt *x, struct rr_call *call,
			   rr_call_done_fn done, void *arg)
{
	return rr_clnt_call_async(x->impl, call, done, arg);
}

static int rdma_progress(struct nfsc_xprt *x, int ms)
{
	return rr_clnt_progress(x->impl, ms);
}

static int rdma_mem_reg(struct nfsc_xprt *x, void *buf, size_t len)
{
	return rr_clnt_mem_reg(x->impl, buf, len);
}

static int rdma_mem_unreg(struct nfsc_xprt *x, void *buf)
{
	return rr_clnt_mem_unreg(x->impl, buf);
}

static int rdma_stats(struct nfsc_xprt *x, struct rr_xprt_stats *out)
{
	return rr_clnt_stats(x->impl, out);
}

static int rdma_destroy(struct nfsc_xprt *x)
{
	int rc = rr_clnt_destroy(x->impl);

	free(x);
	return rc;
}

static const struct nfsc_xprt_ops rdma_ops = {
	.call = rdma_call,
	.call_async = rdma_call_async,
	.progress = rdma_progress,
	.mem_reg = rdma_mem_reg,
	.mem_unreg = rdma_mem_unreg,
	.stats = rdma_stats,
	.destroy = rdma_destroy,
};

int rr__nfsc_xprt_rdma(const char *host, uint16_t port,
		       const struct nfsc_xprt_opts *o, struct nfsc_xprt **out)
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
	};
	struct nfsc_xprt *x = rr_calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return -ENOMEM;
	rc = rr_clnt_create(host, port, &co, (struct rr_clnt **)&x->impl);
	if (rc) {
		free(x);
		return rc;
	}
	x->ops = &rdma_ops;
	x->ddp = true;
	*out = x;
	return 0;
}

/* ------------------------------------------------------------------ TCP */

static int tcp_call(struct nfsc_xprt *x, struct rr_call *call)
{
	return rr_tcp_clnt_call(x->impl, call);
}

static int tcp_call_async(struct nfsc_xprt *x, struct rr_call *call,
			  rr_call_done_fn done, void *arg)
{
	return rr_tcp_clnt_call_async(x->impl, call, done, arg);
}

static int tcp_progress(struct nfsc_xprt *x, int ms)
{
	return rr_tcp_clnt_progress(x->impl, ms);
}

static int tcp_destroy(struct nfsc_xprt *x)
{
	int rc = rr_tcp_clnt_destroy(x->impl);

	free(x);
	return rc;
}

static const struct nfsc_xprt_ops tcp_ops = {
	.call = tcp_call,
	.call_async = tcp_call_async,
	.progress = tcp_progress,
	.destroy = tcp_destroy,
};

int rr__nfsc_xprt_tcp(const char *host, uint16_t port,
		      const struct nfsc_xprt_opts *o, struct nfsc_xprt **out)
{
	struct rr_tcp_clnt_opts to = {
		.timeout_ms = o->timeout_ms < 0 ? 0 : o->timeout_ms,
		.connect_timeout_ms = o->connect_timeout_ms,
		/* a whole READ reply or WRITE call in one record */
		.max_record = o->max_bulk + 64 * 1024,
		/* it reconnects and sends calls again, as over RDMA */
		.keepalive_ms = keepalive_ms(o),
		.keepalive_timeout_ms = keepalive_ms(o),
	};
	struct nfsc_xprt *x = rr_calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return -ENOMEM;
	rc = rr_tcp_clnt_create(host, port, &to,
				(struct rr_tcp_clnt **)&x->impl);
	if (rc) {
		free(x);
		return rc;
	}
	x->ops = &tcp_ops;
	x->ddp = false;
	*out = x;
	return 0;
}
