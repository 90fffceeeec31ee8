/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Registration with rpcbind (portmap version 2 calls through libtirpc), so
 * clients that ask rpcbind find NFS and MOUNT on TCP. Only when rpcbind
 * answers on 127.0.0.1:111 right away: without one, libtirpc would retry
 * for many seconds before giving up, and serving goes on regardless.
 */
#include "nfsrdmad.h"

#include <rpc/pmap_clnt.h>
#include <rpc/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
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
