// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ONC RPC over TCP beneath the one client and server interface of
 * <rpcrdma/oncrpc.h> (rpc/api.h). TCP moves no memory by RDMA: nothing to
 * register, and DDP-eligible items travel inline.
 */
#include "rpc/api.h"
#include "rpc/tcp_clnt.h"

#define CLNT(x) rr_container_of(x, struct rr_tcp_clnt, rpc)
#define SVC(x)	rr__tcp_svc_of(x) /* its struct is private to tcp_svc.c */

static int clnt_call(struct rr_rpc_clnt *c, struct rr_call *call)
{
	return rr_tcp_clnt_call(CLNT(c), call);
}

static int clnt_call_async(struct rr_rpc_clnt *c, struct rr_call *call,
			   rr_call_done_fn done, void *arg)
{
	return rr_tcp_clnt_call_async(CLNT(c), call, done, arg);
}

static int clnt_cancel(struct rr_rpc_clnt *c, struct rr_call *call)
{
	return rr_tcp_clnt_cancel(CLNT(c), call);
}

static int clnt_progress(struct rr_rpc_clnt *c, int timeout_ms, int fd)
{
	return rr__tc_progress(CLNT(c), timeout_ms, fd);
}

static int clnt_stats(struct rr_rpc_clnt *c, struct rr_xprt_stats *out)
{
	return rr_tcp_clnt_stats(CLNT(c), out);
}

static int clnt_disconnect(struct rr_rpc_clnt *c)
{
	return rr_tcp_clnt_disconnect(CLNT(c));
}

static int clnt_serve(struct rr_rpc_clnt *c, const struct rr_svc_prog *prog)
{
	return rr__tc_serve(CLNT(c), prog);
}

static int clnt_destroy(struct rr_rpc_clnt *c)
{
	return rr_tcp_clnt_destroy(CLNT(c));
}

const struct rr_rpc_clnt_ops rr__tcp_clnt_rpc_ops = {
	.netid = "tcp",
	.ddp = false,
	.call = clnt_call,
	.call_async = clnt_call_async,
	.cancel = clnt_cancel,
	.progress = clnt_progress,
	.stats = clnt_stats,
	.disconnect = clnt_disconnect,
	.serve = clnt_serve,
	.destroy = clnt_destroy,
};

struct rr_rpc_clnt *rr_tcp_clnt_rpc(struct rr_tcp_clnt *c)
{
	return c ? &c->rpc : NULL;
}

static int svc_reg(struct rr_rpc_svc *s, const struct rr_svc_prog *prog)
{
	return rr_tcp_svc_register(SVC(s), prog);
}

static int svc_port(struct rr_rpc_svc *s, uint16_t *port)
{
	return rr_tcp_svc_port(SVC(s), port);
}

static int svc_run(struct rr_rpc_svc *s)
{
	return rr_tcp_svc_run(SVC(s));
}

static void svc_stop(struct rr_rpc_svc *s)
{
	rr_tcp_svc_stop(SVC(s));
}

static int svc_destroy(struct rr_rpc_svc *s)
{
	return rr_tcp_svc_destroy(SVC(s));
}

static int svc_stats(struct rr_rpc_svc *s, struct rr_xprt_stats *out)
{
	return rr_tcp_svc_stats(SVC(s), out);
}

const struct rr_rpc_svc_ops rr__tcp_svc_rpc_ops = {
	.netid = "tcp",
	.reg = svc_reg,
	.port = svc_port,
	.run = svc_run,
	.stop = svc_stop,
	.destroy = svc_destroy,
	.stats = svc_stats,
	.conns = rr__tcp_svc_conns,
};
