/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the TCP transport tests: the test program's number, byte
 * helpers, bounded reads of a child's pipe, and a raw record-marking
 * client written from RFC 5531 independently of src/rpc (so a mistake
 * shared by our client and server cannot hide).
 */
#ifndef RR_TESTS_TCP_COMMON_H
#define RR_TESTS_TCP_COMMON_H

#include "clock.h"
#include "io.h"
#include "tprog.h" /* the pattern, checksum and byte helpers */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TPROG 0x20000099u

/* ------------------------------------------------------ raw client */

static inline int raw_connect(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* An RPC call message with AUTH_NONE; returns its length (40 + len). */
static inline size_t raw_call_msg(uint8_t *buf, uint32_t xid, uint32_t rpcvers,
				  uint32_t prog, uint32_t vers, uint32_t proc,
				  const void *args, size_t len)
{
	uint32_t w[10] = {xid, 0, rpcvers, prog, vers, proc, 0, 0, 0, 0};

	for (int i = 0; i < 10; i++)
		rr_t_put32(buf + 4 * i, w[i]);
	if (len)
		memcpy(buf + 40, args, len);
	return 40 + len;
}

/*
 * Sends msg as fragments of the given sizes in turn (cycled), a size of 0
 * being an empty fragment; the last fragment carries the rest.
 */
static inline bool raw_send_frags(int fd, const uint8_t *msg, size_t len,
				  const uint32_t *sizes, size_t nsizes)
{
	size_t off = 0, k = 0;

	for (;;) {
		uint32_t n = sizes[k++ % nsizes];
		bool last = off + n >= len;
		uint8_t h[4];

		if (last)
			n = (uint32_t)(len - off);
		rr_t_put32(h, n | (last ? 0x80000000u : 0));
		if (!rr_t_write_all(fd, h, 4) ||
		    !rr_t_write_all(fd, msg + off, n))
			return false;
		off += n;
		if (last)
			return true;
	}
}

static inline bool raw_send_record(int fd, const uint8_t *msg, size_t len)
{
	uint32_t all = (uint32_t)len;

	return raw_send_frags(fd, msg, len, &all, 1);
}

/*
 * Reads one record (any fragmentation) into a malloc'd buffer; returns
 * its length, or -1 on EOF, error, timeout or a record over cap. *nfrags
 * (if not NULL) gets the number of fragments it came in.
 */
static inline ssize_t raw_read_record_frags(int fd, uint8_t **out, size_t cap,
					    int tmo_ms, uint32_t *nfrags)
{
	uint8_t *b = malloc(cap ? cap : 1);
	size_t len = 0;
	uint32_t n = 0;
	uint8_t h[4];
	uint32_t w;

	*out = b;
	if (!b)
		return -1;
	do {
		if (nfrags)
			*nfrags = ++n;
		if (!rr_t_read_within(fd, h, 4, tmo_ms))
			return -1;
		w = rr_t_get32(h);
		if (len + (w & 0x7fffffffu) > cap)
			return -1;
		if (!rr_t_read_within(fd, b + len, w & 0x7fffffffu, tmo_ms))
			return -1;
		len += w & 0x7fffffffu;
	} while (!(w & 0x80000000u));
	return (ssize_t)len;
}

static inline ssize_t raw_read_record(int fd, uint8_t **out, size_t cap,
				      int tmo_ms)
{
	return raw_read_record_frags(fd, out, cap, tmo_ms, NULL);
}

/* A decoded reply: where its results start, or its error. */
struct raw_reply {
	uint32_t xid, stat, accept, reject, low, high;
	size_t res_off;
};

static inline bool raw_parse_reply(const uint8_t *b, size_t len,
				   struct raw_reply *r)
{
	size_t vlen;

	memset(r, 0, sizeof(*r));
	if (len < 12 || rr_t_get32(b + 4) != 1)
		return false;
	r->xid = rr_t_get32(b);
	r->stat = rr_t_get32(b + 8);
	if (r->stat == 1) { /* MSG_DENIED */
		if (len < 16)
			return false;
		r->reject = rr_t_get32(b + 12);
		if (r->reject == 0 && len >= 24) {
			r->low = rr_t_get32(b + 16);
			r->high = rr_t_get32(b + 20);
		}
		return true;
	}
	if (len < 24)
		return false;
	vlen = rr_t_get32(b + 16);
	if (20 + vlen + rr_t_xdr_pad(vlen) + 4 > len)
		return false;
	r->res_off = 20 + vlen + rr_t_xdr_pad(vlen);
	r->accept = rr_t_get32(b + r->res_off);
	r->res_off += 4;
	if (r->accept == 2 && r->res_off + 8 <= len) {
		r->low = rr_t_get32(b + r->res_off);
		r->high = rr_t_get32(b + r->res_off + 4);
	}
	return true;
}

#endif
