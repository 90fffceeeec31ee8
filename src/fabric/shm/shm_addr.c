/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Addresses. The layers above speak IP addresses and ports (URLs, server
 * options); shm maps an address to an abstract Unix socket named after its
 * port only, since every address of a one-host provider is this host: a
 * listener on 0.0.0.0:P and a client of 127.0.0.1:P meet, as with TCP. The
 * abstract namespace needs no runtime directory and leaves nothing behind
 * when a process dies; it is per network namespace, like loopback.
 */
#include "fabric/shm/shm.h"

#include <errno.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SHM_PORT_LO	  32768
#define SHM_PORT_HI	  60999
#define SHM_PORT_ATTEMPTS 64

static int port_of(const struct sockaddr *a, socklen_t len, uint16_t *port)
{
	if (a->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		*port = ntohs(((const struct sockaddr_in *)a)->sin_port);
	else if (a->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		*port = ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	else
		return -EAFNOSUPPORT;
	return 0;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static socklen_t un_name(uint16_t port, struct sockaddr_un *un)
{
	int n;

	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	/* sun_path[0] stays NUL: the abstract namespace */
	n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1,
		     "rpcrdma-shm/%u", port);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

static int try_bind(int fd, uint16_t port)
{
	struct sockaddr_un un;
	socklen_t len = un_name(port, &un);

	return bind(fd, (struct sockaddr *)&un, len) ? -errno : 0;
}

/* Port 0 picks a free one at random from the usual ephemeral range. */
static int bind_port(int fd, uint16_t *port)
{
	if (*port)
		return try_bind(fd, *port);
	for (int i = 0; i < SHM_PORT_ATTEMPTS; i++) {
		uint32_t r = 0;
		uint16_t p;
		int rc;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			return -EIO;
		p = (uint16_t)(SHM_PORT_LO + r % (SHM_PORT_HI - SHM_PORT_LO));
		rc = try_bind(fd, p);
		if (rc == 0) {
			*port = p;
			return 0;
		}
		if (rc != -EADDRINUSE)
			return rc;
	}
	return -EADDRINUSE;
}

int rr__shm_listen_socket(const struct sockaddr *addr, socklen_t addrlen,
			  int backlog, int *fd_out,
			  struct sockaddr_storage *bound)
{
	uint16_t port;
	int fd, rc = port_of(addr, addrlen, &port);

	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = bind_port(fd, &port);
	if (rc == 0 && listen(fd, backlog))
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	memset(bound, 0, sizeof(*bound));
	memcpy(bound, addr, addrlen);
	set_port(bound, port);
	*fd_out = fd;
	return 0;
}

/*
 * A Unix socket's connect fails at once where TCP's would fail later; the
 * API reports it later (RR_CM_UNREACHABLE), so the error is kept in *failed
 * and an eventfd, always writable, stands in for the socket until the
 * progress loop reports it.
 */
int rr__shm_connect_socket(const struct sockaddr *addr, socklen_t addrlen,
			   int *fd_out, int *failed)
{
	struct sockaddr_un un;
	socklen_t len;
	uint16_t port;
	int fd, rc = port_of(addr, addrlen, &port);

	if (rc)
		return rc;
	if (port == 0)
		return -EINVAL;
	len = un_name(port, &un);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	*failed = 0;
	if (connect(fd, (struct sockaddr *)&un, len) && errno != EINPROGRESS &&
	    errno != EAGAIN) {
		*failed = errno == ENOENT ? -ECONNREFUSED : -errno;
		close(fd);
		fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	*fd_out = fd;
	return 0;
}

/*
 * The peer of an accepted connection, as the layers above expect one: the
 * listener's address, and a port that tells this connection from the
 * others (a Unix socket has no port): the next of a counter, above the
 * reserved range, since some servers trust a "privileged" port.
 */
void rr__shm_peer_addr(const struct sockaddr_storage *local,
		       struct sockaddr_storage *out)
{
	static _Atomic uint32_t next;
	uint32_t n = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);

	*out = *local;
	if (out->ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)out;

		if (in->sin_addr.s_addr == htonl(INADDR_ANY))
			in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else if (out->ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;

		if (!memcmp(&in6->sin6_addr, &in6addr_any, sizeof(in6addr_any)))
			in6->sin6_addr = in6addr_loopback;
	}
	set_port(out, (uint16_t)(1024 + n % (65536 - 1024)));
}
