/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Registration with rpcbind, so clients that ask rpcbind find NFS and
 * MOUNT on TCP (portmap version 2 calls through libtirpc) and NFS on
 * RPC-over-RDMA: an rpcbind version 4 SET of netid "rdma" with the
 * listener's universal address, as Linux's nfsd registers its RDMA port
 * (RFC 5665 names the netid; portmap version 2 has no protocol number
 * for it, so `rpcinfo` shows it and `rpcinfo -p` does not). That SET goes
 * over rpcbind's local socket, which tells rpcbind who we are. Only when
 * rpcbind answers on 127.0.0.1:111 right away: without one, libtirpc would
 * retry for many seconds before giving up, and serving goes on regardless.
 * We listen on IPv4 only, so there is no "rdma6" to register.
 */
#include "nfsrdmad.h"

#include <rpc/pmap_clnt.h>
#include <rpc/rpc.h>
#include <rpc/rpcb_prot.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define NFS_PROG   100003
#define MOUNT_PROG 100005
#define PROBE_MS   300

static bool rpcbind_answers(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(111),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int err = 0;
	socklen_t len = sizeof(err);
	bool ok = false;

	if (fd < 0)
		return false;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
		ok = true;
	else if (errno == EINPROGRESS && poll(&p, 1, PROBE_MS) == 1 &&
		 !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && !err)
		ok = true;
	close(fd);
	return ok;
}

/* A client of rpcbind version 4 on its local socket, or NULL. */
static CLIENT *local_rpcbind(void)
{
	struct sockaddr_un sun = {.sun_family = AF_LOCAL};
	struct netbuf nb = {
		.len = sizeof(sun), .maxlen = sizeof(sun), .buf = &sun};
	int fd = socket(AF_LOCAL, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CLIENT *c;

	if (fd < 0)
		return NULL;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", _PATH_RPCBINDSOCK);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		close(fd);
		return NULL;
	}
	c = clnt_vc_create(fd, &nb, RPCBPROG, RPCBVERS4, 0, 0);
	if (!c) {
		close(fd);
		return NULL;
	}
	clnt_control(c, CLSET_FD_CLOSE, NULL);
	return c;
}

/* RPCBPROC_SET (set) or UNSET of NFS v3 on netid rdma at addr:port. */
static bool rdma_call(bool set, const char *addr, uint16_t port)
{
	char uaddr[64], netid[] = "rdma", owner[] = "nfsrdmad";
	struct timeval tmo = {.tv_sec = 2};
	rpcb parms = {.r_prog = NFS_PROG,
		      .r_vers = 3,
		      .r_netid = netid,
		      .r_addr = uaddr,
		      .r_owner = owner};
	CLIENT *c = local_rpcbind();
	bool_t ok = FALSE;

	if (!c)
		return false;
	/* a universal address: the IPv4 address, then the port's 2 bytes */
	snprintf(uaddr, sizeof(uaddr), "%s.%u.%u", addr, port >> 8,
		 port & 0xff);
	if (clnt_call(c, set ? RPCBPROC_SET : RPCBPROC_UNSET,
		      (xdrproc_t)xdr_rpcb, (char *)&parms, (xdrproc_t)xdr_bool,
		      (char *)&ok, tmo) != RPC_SUCCESS)
		ok = FALSE;
	clnt_destroy(c);
	return ok;
}

void nfsrdmad_rpcbind_set_rdma(const char *addr, uint16_t rdma_port)
{
	if (!rdma_port || !rpcbind_answers())
		return;
	rdma_call(false, addr, rdma_port); /* a stale one of ours */
	if (rdma_call(true, addr, rdma_port))
		fprintf(stderr,
			"nfsrdmad: registered NFS on rdma %s:%u with rpcbind\n",
			addr, rdma_port);
	else
		fprintf(stderr, "nfsrdmad: rpcbind refused NFS on rdma\n");
}

void nfsrdmad_rpcbind_unset_rdma(const char *addr, uint16_t rdma_port)
{
	if (rdma_port && rpcbind_answers())
		rdma_call(false, addr, rdma_port);
}

void nfsrdmad_rpcbind_set(uint16_t tcp_port, uint16_t mount_port)
{
	if (!rpcbind_answers()) {
		fprintf(stderr, "nfsrdmad: no rpcbind on 127.0.0.1:111, "
				"not registered\n");
		return;
	}
	pmap_unset(NFS_PROG, 3);
	pmap_unset(MOUNT_PROG, 3);
	if (tcp_port && !pmap_set(NFS_PROG, 3, IPPROTO_TCP, tcp_port))
		fprintf(stderr, "nfsrdmad: rpcbind refused NFS\n");
	if (mount_port && !pmap_set(MOUNT_PROG, 3, IPPROTO_TCP, mount_port))
		fprintf(stderr, "nfsrdmad: rpcbind refused MOUNT\n");
	else
		fprintf(stderr, "nfsrdmad: registered with rpcbind\n");
}

void nfsrdmad_rpcbind_unset(uint16_t tcp_port, uint16_t mount_port)
{
	if (!rpcbind_answers())
		return;
	if (tcp_port)
		pmap_unset(NFS_PROG, 3);
	if (mount_port)
		pmap_unset(MOUNT_PROG, 3);
}
