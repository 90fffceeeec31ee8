// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RPC-over-RDMA beneath the one client and server interface of
 * <rpcrdma/oncrpc.h> (rpc/api.h).
 */
#include "rpc/api.h"
#include "rpcrdma/clnt.h"
#include "rpcrdma/svc.h"

#define CLNT(x) rr_container_of(x, struct rr_clnt, rpc)
#define SVC(x)	rr_container_of(x, struct rr_svc, rpc)

static int clnt_call(struct rr_rpc_clnt *c, struct rr_call *call)
{
	return rr_clnt_call(CLNT(c), call);
}

static int clnt_call_async(struct rr_rpc_clnt *c, struct rr_call *call,
			   rr_call_done_fn done, void *arg)
{
	return rr_clnt_call_async(CLNT(c), call, done, arg);
}

static int clnt_cancel(struct rr_rpc_clnt *c, struct rr_call *call)
{
	return rr_clnt_cancel(CLNT(c), call);
}

static int clnt_progress(struct rr_rpc_clnt *c, int timeout_ms, int fd)
{
	return fd < 0 ? rr_clnt_progress(CLNT(c), timeout_ms)
		      : rr__clnt_progress_fd(CLNT(c), timeout_ms, fd);
}

static int clnt_stats(struct rr_rpc_clnt *c, struct rr_xprt_stats *out)
{
	return rr_clnt_stats(CLNT(c), out);
}

static int clnt_disconnect(struct rr_rpc_clnt *c)
{
	return rr_clnt_disconnect(CLNT(c));
}

static int clnt_mem_reg(struct rr_rpc_clnt *c, void *addr, size_t len)
{
	return rr_clnt_mem_reg(CLNT(c), addr, len);
}

static int clnt_mem_unreg(struct rr_rpc_clnt *c, void *addr)
{
	return rr_clnt_mem_unreg(CLNT(c), addr);
}

static int clnt_serve(struct rr_rpc_clnt *c, const struct rr_svc_prog *prog)
{
	return rr_clnt_serve(CLNT(c), prog);
}

static int clnt_destroy(struct rr_rpc_clnt *c)
{
	return rr_clnt_destroy(CLNT(c));
}

const struct rr_rpc_clnt_ops rr__clnt_rpc_ops = {
	.netid = "rdma",
	.ddp = true,
	.call = clnt_call,
	.call_async = clnt_call_async,
	.cancel = clnt_cancel,
	.progress = clnt_progress,
	.stats = clnt_stats,
	.disconnect = clnt_disconnect,
	.mem_reg = clnt_mem_reg,
	.mem_unreg = clnt_mem_unreg,
	.serve = clnt_serve,
	.destroy = clnt_destroy,
};

struct rr_rpc_clnt *rr_clnt_rpc(struct rr_clnt *c)
{
	return c ? &c->rpc : NULL;
}

static int svc_reg(struct rr_rpc_svc *s, const struct rr_svc_prog *prog)
{
	return rr_svc_register(SVC(s), prog);
}

static int svc_port(struct rr_rpc_svc *s, uint16_t *port)
{
	return rr_svc_port(SVC(s), port);
}

static int svc_run(struct rr_rpc_svc *s)
{
	return rr_svc_run(SVC(s));
}

static void svc_stop(struct rr_rpc_svc *s)
{
	rr_svc_stop(SVC(s));
}

static int svc_shutdown(struct rr_rpc_svc *s)
{
	return rr_svc_shutdown(SVC(s));
}

static int svc_destroy(struct rr_rpc_svc *s)
{
	return rr_svc_destroy(SVC(s));
}

static int svc_stats(struct rr_rpc_svc *s, struct rr_xprt_stats *out)
{
	return rr_svc_stats(SVC(s), out);
}

static int svc_mem_reg(struct rr_rpc_svc *s, const void *addr, size_t len)
{
	return rr_svc_mem_reg(SVC(s), addr, len);
}

static int svc_mem_unreg(struct rr_rpc_svc *s, const void *addr)
{
	return rr_svc_mem_unreg(SVC(s), addr);
}

const struct rr_rpc_svc_ops rr__svc_rpc_ops = {
	.netid = "rdma",
	.reg = svc_reg,
	.port = svc_port,
	.run = svc_run,
	.stop = svc_stop,
	.shutdown = svc_shutdown,
	.destroy = svc_destroy,
	.stats = svc_stats,
	.mem_reg = svc_mem_reg,
	.mem_unreg = svc_mem_unreg,
	.conns = rr__svc_conns,
};

struct rr_rpc_svc *rr_svc_rpc(struct rr_svc *s)
{
	return s ? &s->rpc : NULL;
}
