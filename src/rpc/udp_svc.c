// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ONC RPC server over UDP (<rpcrdma/rpc_udp.h>): one socket, one loop,
 * each datagram a whole call answered before the next is read. Its
 * buffers are fixed at creation (a datagram's largest), so nothing a peer
 * sends decides what is allocated. There is no duplicate request cache:
 * the one program served this way (NSM) has idempotent procedures.
 */
#include <rpcrdma/rpc_udp.h>

#include "base/alloc.h"
#include "rpc/api.h"
#include "rpc/dispatch.h"
#include "rpc/tcp_io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define UDP_MAX 65536 /* the largest datagram: calls and replies */

struct rr_udp_svc {
	struct rr_rpc_svc rpc;
	int fd;
	int stop_fd; /* eventfd: rr_rpc_svc_stop may come from a signal */
	struct rr_progtab progs;
	_Atomic uint64_t calls, bad_headers, send_errors;
	uint8_t *msg, *res, *out; /* UDP_MAX each */
};

#define UDP(x) rr_container_of(x, struct rr_udp_svc, rpc)

static int udp_reg(struct rr_rpc_svc *s, const struct rr_svc_prog *prog)
{
	return rr__progtab_add(&UDP(s)->progs, prog);
}

static int udp_port(struct rr_rpc_svc *s, uint16_t *port)
{
	return rr__sock_port(UDP(s)->fd, port);
}

/* One datagram in, its reply out (or nothing, when it was no call). */
static void serve_one(struct rr_udp_svc *u)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	ssize_t n = recvfrom(u->fd, u->msg, UDP_MAX, MSG_DONTWAIT,
			     (struct sockaddr *)&peer, &plen);
	int out;

	if (n < 0)
		return; /* EAGAIN, or an ICMP error of an earlier send */
	out = rr__serve_whole(&u->progs, (struct sockaddr *)&peer, u->msg,
			      (size_t)n, u->res, UDP_MAX, u->out, UDP_MAX);
	if (out < 0) {
		u->bad_headers++;
		return;
	}
	u->calls++;
	/* a reply lost here is one lost on the way: the client sends again */
	if (sendto(u->fd, u->out, (size_t)out, MSG_DONTWAIT,
		   (struct sockaddr *)&peer, plen) != out)
		u->send_errors++;
}

static int udp_run(struct rr_rpc_svc *s)
{
	struct rr_udp_svc *u = UDP(s);
	struct pollfd p[2] = {{.fd = u->fd, .events = POLLIN},
			      {.fd = u->stop_fd, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents)
			return 0;
		if (p[0].revents)
			serve_one(u);
	}
}

static void udp_stop(struct rr_rpc_svc *s)
{
	uint64_t one = 1;

	/* async-signal-safe; the counter cannot overflow from stops */
	if (write(UDP(s)->stop_fd, &one, sizeof(one)) < 0)
		return;
}

static void udp_free(struct rr_udp_svc *u)
{
	if (u->fd >= 0)
		close(u->fd);
	if (u->stop_fd >= 0)
		close(u->stop_fd);
	free(u->msg);
	free(u->res);
	free(u->out);
	free(u);
}

static int udp_destroy(struct rr_rpc_svc *s)
{
	udp_free(UDP(s));
	return 0;
}

static int udp_stats(struct rr_rpc_svc *s, struct rr_xprt_stats *out)
{
	struct rr_udp_svc *u = UDP(s);

	*out = (struct rr_xprt_stats){.calls = u->calls,
				      .bad_headers = u->bad_headers,
				      .conn_lost = u->send_errors};
	return 0;
}

static const struct rr_rpc_svc_ops udp_ops = {
	.netid = "udp",
	.reg = udp_reg,
	.port = udp_port,
	.run = udp_run,
	.stop = udp_stop,
	.destroy = udp_destroy,
	.stats = udp_stats,
};

static int udp_open(const struct sockaddr *addr, socklen_t len)
{
	int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, addr, len)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int rr_udp_svc_create(const struct sockaddr *addr, socklen_t len,
		      struct rr_rpc_svc **out)
{
	struct rr_udp_svc *u;

	if (!addr || !out)
		return -EINVAL;
	u = rr_calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->rpc.ops = &udp_ops;
	u->msg = rr_malloc(UDP_MAX);
	u->res = rr_malloc(UDP_MAX);
	u->out = rr_malloc(UDP_MAX);
	u->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	u->fd = udp_open(addr, len);
	if (u->fd < 0 || u->stop_fd < 0 || !u->msg || !u->res || !u->out) {
		int rc = u->fd < 0 ? u->fd : -ENOMEM;

		udp_free(u);
		return rc;
	}
	*out = &u->rpc;
	return 0;
}
