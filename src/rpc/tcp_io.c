/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Non-blocking sends with an output queue: see tcp_io.h. */
#include "rpc/tcp_io.h"
#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define IOV_BATCH 16

struct rr__outbuf {
	struct rr__outbuf *next;
	size_t len, off;
	uint8_t data[];
};

/* One sendmsg; returns bytes taken (0 when the socket is full) or -errno. */
static ssize_t send_some(int fd, const struct iovec *iov, int n)
{
	struct msghdr m = {.msg_iov = (struct iovec *)iov,
			   .msg_iovlen = (size_t)n};

	for (;;) {
		ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k >= 0)
			return k;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
}

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Copies iov[0..n) from byte skip on into a new queue entry. */
static int enqueue(struct rr__outq *q, const struct iovec *iov, int n,
		   size_t skip)
{
	size_t len = iov_total(iov, n) - skip, at = 0;
	struct rr__outbuf *b = rr_malloc(sizeof(*b) + len);

	if (!b)
		return -ENOMEM;
	*b = (struct rr__outbuf){.len = len};
	for (int i = 0; i < n; i++) {
		size_t l = iov[i].iov_len;
		const uint8_t *p = iov[i].iov_base;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		memcpy(b->data + at, p + skip, l - skip);
		at += l - skip;
		skip = 0;
	}
	if (q->tail)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
	q->bytes += len;
	return 0;
}

int rr__outq_send(int fd, struct rr__outq *q, const struct iovec *iov, int n)
{
	ssize_t k = 0;

	if (!q->head) {
		k = send_some(fd, iov, n);
		if (k < 0)
			return (int)k;
		if ((size_t)k == iov_total(iov, n))
			return 0;
	}
	return enqueue(q, iov, n, (size_t)k);
}

int rr__outq_put(struct rr__outq *q, const struct iovec *iov, int n)
{
	return enqueue(q, iov, n, 0);
}

static void pop(struct rr__outq *q)
{
	struct rr__outbuf *b = q->head;

	q->head = b->next;
	if (!q->head)
		q->tail = NULL;
	free(b);
}

int rr__outq_flush(int fd, struct rr__outq *q)
{
	while (q->head) {
		struct iovec iov[IOV_BATCH];
		struct rr__outbuf *b = q->head;
		int n = 0;
		ssize_t k;

		for (; b && n < IOV_BATCH; b = b->next, n++)
			iov[n] = (struct iovec){b->data + b->off,
						b->len - b->off};
		k = send_some(fd, iov, n);
		if (k <= 0)
			return (int)k;
		q->bytes -= (size_t)k;
		while (k > 0) {
			size_t left = q->head->len - q->head->off;

			if ((size_t)k < left) {
				q->head->off += (size_t)k;
				break;
			}
			k -= (ssize_t)left;
			pop(q);
		}
	}
	return 0;
}

void rr__outq_free(struct rr__outq *q)
{
	while (q->head)
		pop(q);
	q->bytes = 0;
}

int rr__sock_port(int fd, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	if (ss.ss_family == AF_INET)
		*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	else if (ss.ss_family == AF_INET6)
		*port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	else
		return -EAFNOSUPPORT;
	return 0;
}

int rr__tcp_sock_setup(int fd)
{
	int one = 1, fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	return 0;
}
