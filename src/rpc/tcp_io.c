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

/* Queued bytes: a copy in data, or a lent buffer's (lent) bytes at p. */
struct rr__outbuf {
	struct rr__outbuf *next;
	const uint8_t *p;
	size_t len, off;
	void *lent;
	size_t cap; /* room in data */
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

static void pop(struct rr__outq *q);

static void link_buf(struct rr__outq *q, struct rr__outbuf *b)
{
	if (q->tail)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
	q->bytes += b->len;
}

/* An entry with room for len bytes: a spare if one is large enough. */
static struct rr__outbuf *entry(struct rr__outq *q, size_t len)
{
	struct rr__outbuf **pp = &q->spares, *b;

	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->cap >= len) {
			b = *pp;
			*pp = b->next;
			q->nspares--;
			return b;
		}
	}
	/*
	 * Room for the next piece of its kind, whatever its size: a record's
	 * small pieces vary by a few bytes, and the part of a record the
	 * socket did not take varies up to the whole record.
	 */
	if (len <= OUTQ_SMALL)
		len = OUTQ_SMALL;
	else if (len <= q->spare_max)
		len = q->spare_max;
	b = rr_malloc(sizeof(*b) + len);
	if (b)
		b->cap = len;
	return b;
}

/* A sent entry: kept as a spare if it may be, else freed. */
static void retire(struct rr__outq *q, struct rr__outbuf *b)
{
	if (q->nspares < OUTQ_SPARES && b->cap <= q->spare_max) {
		b->next = q->spares;
		q->spares = b;
		q->nspares++;
		return;
	}
	free(b);
}

/* A queue entry holding a copy of iov[from..to), from byte skip of it on. */
static struct rr__outbuf *copy_buf(struct rr__outq *q, const struct iovec *iov,
				   int from, int to, size_t skip)
{
	size_t len = iov_total(iov + from, to - from) - skip, at = 0;
	struct rr__outbuf *b = entry(q, len);

	if (!b)
		return NULL;
	*b = (struct rr__outbuf){.p = b->data, .len = len, .cap = b->cap};
	for (int i = from; i < to; i++) {
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
	return b;
}

/* The piece [p, p + len) of the lent buffer buf, kept rather than copied. */
static struct rr__outbuf *lent_buf(struct rr__outq *q, void *buf, const void *p,
				   size_t len)
{
	struct rr__outbuf *b = entry(q, 0);

	if (b)
		*b = (struct rr__outbuf){
			.p = p, .len = len, .lent = buf, .cap = b->cap};
	return b;
}

/* Whether the queue keeps the loan's piece of iov (past skip) by reference. */
static bool borrow(const struct rr__outq *q, const struct iovec *iov,
		   size_t skip, const struct rr__outq_loan *loan)
{
	if (!loan || !q->give_back)
		return false;
	if (iov_total(iov, loan->idx + 1) <= skip)
		return false; /* sent already: nothing to keep */
	return loan->swap(loan->arg);
}

/*
 * Queues iov[0..n) from byte skip on: copied, but for the loan's piece
 * when the caller can do without it. All or nothing: on -ENOMEM nothing
 * is queued (a buffer already lent goes back through give_back).
 */
static int enqueue(struct rr__outq *q, const struct iovec *iov, int n,
		   size_t skip, const struct rr__outq_loan *loan)
{
	struct rr__outq part = {.give_back = q->give_back, .arg = q->arg};
	/* part's entries may be q's spares; a failure frees them (pop) */
	int cut = borrow(q, iov, skip, loan) ? loan->idx : n;
	struct rr__outbuf *b[3] = {NULL, NULL, NULL};
	size_t before = iov_total(iov, cut), at;
	bool after = cut + 1 < n && iov_total(iov + cut + 1, n - cut - 1);

	if (skip < before)
		b[0] = copy_buf(q, iov, 0, cut, skip);
	if (cut < n) {
		at = skip > before ? skip - before : 0;
		b[1] = lent_buf(q, loan->buf,
				(const uint8_t *)iov[cut].iov_base + at,
				iov[cut].iov_len - at);
		if (after)
			b[2] = copy_buf(q, iov, cut + 1, n, 0);
	}
	for (int i = 0; i < 3; i++) {
		if (b[i])
			link_buf(&part, b[i]);
	}
	if ((skip < before && !b[0]) || (cut < n && !b[1]) ||
	    (after && !b[2])) {
		if (cut < n && !b[1])
			q->give_back(q->arg, loan->buf);
		while (part.head)
			pop(&part);
		return -ENOMEM;
	}
	if (!part.head)
		return 0;
	if (q->tail)
		q->tail->next = part.head;
	else
		q->head = part.head;
	q->tail = part.tail;
	q->bytes += part.bytes;
	return 0;
}

int rr__outq_send_lent(int fd, struct rr__outq *q, const struct iovec *iov,
		       int n, const struct rr__outq_loan *loan)
{
	ssize_t k = 0;

	if (!q->head) {
		k = send_some(fd, iov, n);
		if (k < 0)
			return (int)k;
		if ((size_t)k == iov_total(iov, n))
			return 0;
	}
	return enqueue(q, iov, n, (size_t)k, loan);
}

int rr__outq_send(int fd, struct rr__outq *q, const struct iovec *iov, int n)
{
	return rr__outq_send_lent(fd, q, iov, n, NULL);
}

int rr__outq_put_lent(struct rr__outq *q, const struct iovec *iov, int n,
		      const struct rr__outq_loan *loan)
{
	return enqueue(q, iov, n, 0, loan);
}

int rr__outq_put(struct rr__outq *q, const struct iovec *iov, int n)
{
	return enqueue(q, iov, n, 0, NULL);
}

static void pop(struct rr__outq *q)
{
	struct rr__outbuf *b = q->head;

	q->head = b->next;
	if (!q->head)
		q->tail = NULL;
	if (b->lent)
		q->give_back(q->arg, b->lent);
	retire(q, b);
}

int rr__outq_flush(int fd, struct rr__outq *q)
{
	while (q->head) {
		struct iovec iov[IOV_BATCH];
		struct rr__outbuf *b = q->head;
		int n = 0;
		ssize_t k;

		for (; b && n < IOV_BATCH; b = b->next, n++)
			iov[n] = (struct iovec){(void *)(b->p + b->off),
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
	while (q->spares) {
		struct rr__outbuf *b = q->spares;

		q->spares = b->next;
		free(b);
	}
	q->nspares = 0;
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
