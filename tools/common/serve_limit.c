// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* See serve_limit.h. */
#include "serve_limit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* The file READs come from: 64 MiB, or one block if larger. */
#define FILE_BYTES ((size_t)64 << 20)

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A memfd (tmpfs) of len bytes, every page written so it is resident. */
static int file_make(size_t len)
{
	static const uint8_t chunk[65536] = {0x5a};
	int fd = memfd_create("rr-serve-limit", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		size_t n =
			len - off < sizeof(chunk) ? len - off : sizeof(chunk);
		ssize_t w = pwrite(fd, chunk, n, (off_t)off);

		if (w <= 0) {
			int err = w < 0 ? -errno : -EIO;

			close(fd);
			return err;
		}
		off += (size_t)w;
	}
	return fd;
}

/* The far end of a READ's wire: reads until end of stream. */
static void *drain(void *arg)
{
	int fd = *(int *)arg;
	char *buf = malloc(1 << 20);

	while (buf && read(fd, buf, 1 << 20) > 0)
		;
	free(buf);
	return NULL;
}

/*
 * The far end of a WRITE's wire: sends blocks until the near end is
 * closed (its reset fails the send). MSG_NOSIGNAL: no SIGPIPE for that.
 * Its own end of stream tells the reader when it could not start.
 */
static void *feed(void *arg)
{
	int fd = *(int *)arg;
	char *buf = calloc(1, 1 << 20);

	while (buf && send(fd, buf, 1 << 20, MSG_NOSIGNAL) > 0)
		;
	shutdown(fd, SHUT_WR);
	free(buf);
	return NULL;
}

/* A connected loopback TCP pair: out[0] to write, out[1] to read. */
static int wire_make(int out[2])
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), err = 0;

	out[0] = out[1] = -1;
	if (l < 0)
		return -errno;
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		err = -errno;
	if (!err) {
		out[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (out[0] < 0 ||
		    connect(out[0], (struct sockaddr *)&a, sizeof(a)))
			err = -errno;
	}
	if (!err && (out[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0)
		err = -errno;
	close(l);
	return err;
}

static int send_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int recv_all(int fd, uint8_t *p, size_t len)
{
	while (len) {
		ssize_t r = recv(fd, p, len, MSG_WAITALL);

		if (r <= 0)
			return r < 0 ? -errno : -EPIPE;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int attrs(int fd)
{
	struct statx sx;

	return statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) ? -errno
								    : 0;
}

/* 0 when a file call moved the whole block, else why not. */
static int whole(ssize_t n, size_t size)
{
	if (n < 0)
		return -errno;
	return (size_t)n == size ? 0 : -EIO; /* tmpfs, ours: never short */
}

/* One WRITE as the server makes it: the wire, attributes, data. */
static int take_one(int fd, int wire, uint8_t *buf, size_t size, off_t off)
{
	struct iovec v = {buf, size};
	int err = wire < 0 ? 0 : recv_all(wire, buf, size);

	if (!err)
		err = attrs(fd);
	if (!err)
		err = whole(pwritev2(fd, &v, 1, off, 0), size);
	return err ? err : attrs(fd);
}

/* One READ as the server makes it: attributes, data, and the wire. */
static int serve_one(int fd, int wire, uint8_t *buf, size_t size, off_t off)
{
	struct iovec v = {buf, size};
	int err = attrs(fd);

	if (!err)
		err = whole(preadv2(fd, &v, 1, off, 0), size);
	if (err || wire < 0)
		return err;
	return send_all(wire, buf, size);
}

static int serve_loop(const struct serve_limit_opts *o, int fd, int wire,
		      size_t len, struct copy_limit *r)
{
	uint64_t blocks = len / o->size, rng = 0x9e3779b97f4a7c15u, i = 0;
	uint64_t start = now_ns(), now = start;
	uint64_t end = start + (uint64_t)(o->seconds * 1e9);
	uint8_t *buf = malloc(o->size);
	int err = buf ? 0 : -ENOMEM;

	while (!err && now < end) {
		if (o->random) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			i = rng % blocks;
		} else {
			i = (i + 1) % blocks;
		}
		err = (o->write ? take_one : serve_one)(fd, wire, buf, o->size,
							(off_t)(i * o->size));
		now = now_ns();
		r->ops++;
		r->bytes += o->size;
	}
	r->secs = (double)(now - start) / 1e9;
	free(buf);
	return err;
}

int serve_limit_run(const struct serve_limit_opts *o, struct copy_limit *r)
{
	size_t len = o->size > FILE_BYTES ? o->size : FILE_BYTES;
	int wire[2] = {-1, -1}, fd, err = 0;
	bool peer = false;
	pthread_t t;

	*r = (struct copy_limit){0};
	if (!o->size)
		return -EINVAL;
	fd = file_make(len);
	if (fd < 0)
		return fd;
	if (o->tcp && !(err = wire_make(wire))) {
		err = -pthread_create(&t, NULL, o->write ? feed : drain,
				      &wire[1]);
		peer = !err;
	}
	if (!err)
		err = serve_loop(o, fd, wire[0], len, r);
	if (wire[0] >= 0 && o->write) {
		close(wire[0]); /* unread data: a reset, which ends the feed */
		wire[0] = -1;
	} else if (wire[0] >= 0) {
		shutdown(wire[0], SHUT_WR); /* the reader sees the end */
	}
	if (peer)
		pthread_join(t, NULL);
	for (int i = 0; i < 2; i++)
		if (wire[i] >= 0)
			close(wire[i]);
	close(fd);
	return err;
}
