// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The one client and server interface of <rpcrdma/oncrpc.h>, dispatched to
 * the transport beneath (rpc/api.h). Argument checks live in the
 * transports, which are also called directly.
 */
#include "rpc/api.h"

#include <errno.h>
#include <poll.h>

int rr_rpc_clnt_call(struct rr_rpc_clnt *c, struct rr_call *call)
{
	return c ? c->ops->call(c, call) : -EINVAL;
}

int rr_rpc_clnt_call_async(struct rr_rpc_clnt *c, struct rr_call *call,
			   rr_call_done_fn done, void *arg)
{
	return c ? c->ops->call_async(c, call, done, arg) : -EINVAL;
}

int rr_rpc_clnt_cancel(struct rr_rpc_clnt *c, struct rr_call *call)
{
	return c ? c->ops->cancel(c, call) : -EINVAL;
}

int rr_rpc_clnt_progress(struct rr_rpc_clnt *c, int timeout_ms)
{
	return c ? c->ops->progress(c, timeout_ms, -1) : -EINVAL;
}

int rr_rpc_clnt_progress_fd(struct rr_rpc_clnt *c, int timeout_ms, int fd)
{
	return c && fd >= 0 ? c->ops->progress(c, timeout_ms, fd) : -EINVAL;
}

int rr__rpc_wait_fd(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (timeout_ms < 0 || timeout_ms > RR_PROGRESS_FD_SLICE_MS)
		timeout_ms = RR_PROGRESS_FD_SLICE_MS;
	/* EINTR: the caller comes back, as after a timeout */
	return poll(&p, 1, timeout_ms) > 0 ? -EAGAIN : -ETIMEDOUT;
}

int rr_rpc_clnt_stats(struct rr_rpc_clnt *c, struct rr_xprt_stats *out)
{
	return c ? c->ops->stats(c, out) : -EINVAL;
}

int rr_rpc_clnt_disconnect(struct rr_rpc_clnt *c)
{
	return c ? c->ops->disconnect(c) : -EINVAL;
}

int rr_rpc_clnt_mem_reg(struct rr_rpc_clnt *c, void *addr, size_t len)
{
	if (!c)
		return -EINVAL;
	return c->ops->mem_reg ? c->ops->mem_reg(c, addr, len) : 0;
}

int rr_rpc_clnt_mem_unreg(struct rr_rpc_clnt *c, void *addr)
{
	if (!c)
		return -EINVAL;
	return c->ops->mem_unreg ? c->ops->mem_unreg(c, addr) : 0;
}

int rr_rpc_clnt_serve(struct rr_rpc_clnt *c, const struct rr_svc_prog *prog)
{
	if (!c || !prog)
		return -EINVAL;
	return c->ops->serve ? c->ops->serve(c, prog) : -EOPNOTSUPP;
}

int rr_rpc_clnt_destroy(struct rr_rpc_clnt *c)
{
	return c ? c->ops->destroy(c) : 0;
}

const char *rr_rpc_clnt_netid(const struct rr_rpc_clnt *c)
{
	return c ? c->ops->netid : "";
}

bool rr_rpc_clnt_ddp(const struct rr_rpc_clnt *c)
{
	return c && c->ops->ddp;
}

int rr_rpc_svc_register(struct rr_rpc_svc *s, const struct rr_svc_prog *prog)
{
	return s ? s->ops->reg(s, prog) : -EINVAL;
}

int rr_rpc_svc_port(struct rr_rpc_svc *s, uint16_t *port)
{
	return s ? s->ops->port(s, port) : -EINVAL;
}

int rr_rpc_svc_run(struct rr_rpc_svc *s)
{
	return s ? s->ops->run(s) : -EINVAL;
}

void rr_rpc_svc_stop(struct rr_rpc_svc *s)
{
	if (s)
		s->ops->stop(s);
}

int rr_rpc_svc_shutdown(struct rr_rpc_svc *s)
{
	if (!s)
		return -EINVAL;
	return s->ops->shutdown ? s->ops->shutdown(s) : 0;
}

int rr_rpc_svc_destroy(struct rr_rpc_svc *s)
{
	return s ? s->ops->destroy(s) : 0;
}

int rr_rpc_svc_stats(struct rr_rpc_svc *s, struct rr_xprt_stats *out)
{
	return s ? s->ops->stats(s, out) : -EINVAL;
}

int rr_rpc_svc_mem_reg(struct rr_rpc_svc *s, const void *addr, size_t len)
{
	if (!s)
		return -EINVAL;
	return s->ops->mem_reg ? s->ops->mem_reg(s, addr, len) : 0;
}

int rr_rpc_svc_mem_unreg(struct rr_rpc_svc *s, const void *addr)
{
	if (!s)
		return -EINVAL;
	return s->ops->mem_unreg ? s->ops->mem_unreg(s, addr) : 0;
}

const char *rr_rpc_svc_netid(const struct rr_rpc_svc *s)
{
	return s ? s->ops->netid : "";
}

int rr_rpc_svc_conns(struct rr_rpc_svc *s, struct rr_svc_conn_info *out,
		     uint32_t cap, uint32_t *shown, uint32_t *hidden)
{
	if (!s || !shown || !hidden || (cap && !out))
		return -EINVAL;
	if (!s->ops->conns)
		return -EOPNOTSUPP;
	return s->ops->conns(s, out, cap, shown, hidden);
}
