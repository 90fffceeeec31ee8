// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RPC-over-RDMA Version 1 header codec (RFC 8166 section 4.2-4.3) and the
 * RFC 8797 connection parameters.
 *
 * This runs on every Send and Receive, so it is written as straight-line
 * big-endian loads and stores: one bounds check per list item (or per
 * segment array), no allocation and no indirect calls. The decoder fills
 * only the fields the header carries; it never clears the whole struct,
 * which is far larger than any header.
 */
#include <errno.h>
#include <string.h>

#include "rpcrdma/hdr.h"

/* Wire sizes in bytes (XDR: every item is a multiple of 4). */
#define XDR_WORD      4
#define SEG_LEN	      16 /* handle, length, offset (64) */
#define READ_ITEM_LEN 24 /* discriminator, position, segment */
#define ERR_VERS_LEN  28 /* fixed part, err, low, high */
#define ERR_CHUNK_LEN 20 /* fixed part, err */

/*
 * memcpy keeps unaligned loads legal (headers sit at any offset in a
 * receive buffer); compilers turn it and the swap into one movbe/rev.
 */
static inline uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline void st32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline void st64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, sizeof(v));
}

/* ------------------------------------------------------------- decode */

static inline size_t left(const uint8_t *p, const uint8_t *end)
{
	return (size_t)(end - p);
}

static inline void ld_seg(const uint8_t *p, struct rr_rdma_seg *s)
{
	s->handle = ld32(p);
	s->length = ld32(p + 4);
	s->offset = ld64(p + 8);
}

/*
 * Reads a discriminator: 0 ends a list or says "absent", 1 says an item
 * follows. Returns 0/1, or -EBADMSG for anything else or no room.
 */
static inline int ld_disc(const uint8_t **pp, const uint8_t *end)
{
	uint32_t d;

	if (left(*pp, end) < XDR_WORD)
		return -EBADMSG;
	d = ld32(*pp);
	*pp += XDR_WORD;
	return d <= 1 ? (int)d : -EBADMSG;
}

static int dec_read_list(const uint8_t **pp, const uint8_t *end,
			 struct rr_rdma_hdr *h)
{
	const uint8_t *p = *pp;
	uint32_t n = 0;
	int more;

	while ((more = ld_disc(&p, end)) == 1) {
		if (n == RR_RDMA_MAX_READ_SEGS)
			return -E2BIG;
		if (left(p, end) < READ_ITEM_LEN - XDR_WORD)
			return -EBADMSG;
		h->reads[n].position = ld32(p);
		ld_seg(p + 4, &h->reads[n].seg);
		p += READ_ITEM_LEN - XDR_WORD;
		n++;
	}
	h->nread = n;
	*pp = p;
	return more;
}

/*
 * A counted array of segments (a write chunk or the reply chunk). The
 * count is checked against the limit before the length, so a peer that
 * claims 0x7fffffff segments gets -E2BIG (ERR_CHUNK) however short its
 * message is, and nsegs * SEG_LEN cannot overflow.
 */
static int dec_chunk(const uint8_t **pp, const uint8_t *end,
		     struct rr_rdma_chunk *c)
{
	const uint8_t *p = *pp;
	uint32_t n;

	if (left(p, end) < XDR_WORD)
		return -EBADMSG;
	n = ld32(p);
	p += XDR_WORD;
	if (n > RR_RDMA_MAX_CHUNK_SEGS)
		return -E2BIG;
	if (left(p, end) < (size_t)n * SEG_LEN)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++, p += SEG_LEN)
		ld_seg(p, &c->segs[i]);
	c->nsegs = n;
	*pp = p;
	return 0;
}

static int dec_write_list(const uint8_t **pp, const uint8_t *end,
			  struct rr_rdma_hdr *h)
{
	uint32_t n = 0;
	int more, ret;

	while ((more = ld_disc(pp, end)) == 1) {
		if (n == RR_RDMA_MAX_WRITE_CHUNKS)
			return -E2BIG;
		ret = dec_chunk(pp, end, &h->writes[n]);
		if (ret)
			return ret;
		n++;
	}
	h->nwrite = n;
	return more;
}

static int dec_reply(const uint8_t **pp, const uint8_t *end,
		     struct rr_rdma_hdr *h)
{
	int present = ld_disc(pp, end);

	if (present < 0)
		return present;
	h->has_reply = present;
	return present ? dec_chunk(pp, end, &h->reply) : 0;
}

static int dec_msg(const uint8_t *buf, size_t len, struct rr_rdma_hdr *h)
{
	const uint8_t *p = buf + RR_RDMA_HDR_MIN, *end = buf + len;
	int ret;

	h->err = 0;
	h->vers_low = 0;
	h->vers_high = 0;
	ret = dec_read_list(&p, end, h);
	if (!ret)
		ret = dec_write_list(&p, end, h);
	if (!ret)
		ret = dec_reply(&p, end, h);
	return ret ? ret : (int)(p - buf);
}

static int dec_error(const uint8_t *buf, size_t len, struct rr_rdma_hdr *h)
{
	h->nread = 0;
	h->nwrite = 0;
	h->has_reply = false;
	h->vers_low = 0;
	h->vers_high = 0;
	if (len < ERR_CHUNK_LEN)
		return -EBADMSG;
	h->err = ld32(buf + RR_RDMA_HDR_MIN);
	if (h->err == RR_ERR_CHUNK)
		return ERR_CHUNK_LEN;
	/* rpc_rdma_error is an XDR union with no default arm. */
	if (h->err != RR_ERR_VERS || len < ERR_VERS_LEN)
		return -EBADMSG;
	h->vers_low = ld32(buf + ERR_CHUNK_LEN);
	h->vers_high = ld32(buf + ERR_CHUNK_LEN + 4);
	return ERR_VERS_LEN;
}

int rr__rdma_hdr_decode(const uint8_t *buf, size_t len, struct rr_rdma_hdr *h)
{
	if (len < RR_RDMA_HDR_MIN)
		return -EBADMSG;
	h->xid = ld32(buf);
	h->vers = ld32(buf + 4);
	h->credits = ld32(buf + 8);
	h->proc = ld32(buf + 12);
	/* Another version may lay out everything after vers differently. */
	if (h->vers != RR_RDMA_VERSION)
		return -EPROTONOSUPPORT;
	switch (h->proc) {
	case RR_RDMA_MSG:
	case RR_RDMA_NOMSG:
		return dec_msg(buf, len, h);
	case RR_RDMA_ERROR:
		return dec_error(buf, len, h);
	default:
		return -EOPNOTSUPP;
	}
}

/* ------------------------------------------------------------- encode */

static bool chunk_ok(const struct rr_rdma_chunk *c)
{
	return c->nsegs <= RR_RDMA_MAX_CHUNK_SEGS;
}

/* Returns the encoded size, or 0 when h cannot be encoded. */
static size_t msg_size(const struct rr_rdma_hdr *h)
{
	size_t n;

	if (h->nread > RR_RDMA_MAX_READ_SEGS ||
	    h->nwrite > RR_RDMA_MAX_WRITE_CHUNKS)
		return 0;
	/* Fixed part, the three list terminators, then the items. */
	n = RR_RDMA_HDR_EMPTY + (size_t)h->nread * READ_ITEM_LEN;
	for (uint32_t i = 0; i < h->nwrite; i++) {
		if (!chunk_ok(&h->writes[i]))
			return 0;
		n += 2 * XDR_WORD + (size_t)h->writes[i].nsegs * SEG_LEN;
	}
	if (h->has_reply) {
		if (!chunk_ok(&h->reply))
			return 0;
		n += XDR_WORD + (size_t)h->reply.nsegs * SEG_LEN;
	}
	return n;
}

size_t rr__rdma_hdr_size(const struct rr_rdma_hdr *h)
{
	switch (h->proc) {
	case RR_RDMA_MSG:
	case RR_RDMA_NOMSG:
		return msg_size(h);
	case RR_RDMA_ERROR:
		if (h->err == RR_ERR_VERS)
			return ERR_VERS_LEN;
		return h->err == RR_ERR_CHUNK ? ERR_CHUNK_LEN : 0;
	default:
		return 0;
	}
}

static inline uint8_t *st_seg(uint8_t *p, const struct rr_rdma_seg *s)
{
	st32(p, s->handle);
	st32(p + 4, s->length);
	st64(p + 8, s->offset);
	return p + SEG_LEN;
}

static uint8_t *st_chunk(uint8_t *p, const struct rr_rdma_chunk *c)
{
	st32(p, c->nsegs);
	p += XDR_WORD;
	for (uint32_t i = 0; i < c->nsegs; i++)
		p = st_seg(p, &c->segs[i]);
	return p;
}

/* The caller has checked the counts and the room (msg_size). */
static uint8_t *enc_lists(uint8_t *p, const struct rr_rdma_hdr *h)
{
	for (uint32_t i = 0; i < h->nread; i++) {
		st32(p, 1);
		st32(p + 4, h->reads[i].position);
		p = st_seg(p + 8, &h->reads[i].seg);
	}
	st32(p, 0);
	p += XDR_WORD;
	for (uint32_t i = 0; i < h->nwrite; i++) {
		st32(p, 1);
		p = st_chunk(p + XDR_WORD, &h->writes[i]);
	}
	st32(p, 0);
	p += XDR_WORD;
	st32(p, h->has_reply);
	p += XDR_WORD;
	return h->has_reply ? st_chunk(p, &h->reply) : p;
}

int rr__rdma_hdr_encode(const struct rr_rdma_hdr *h, uint8_t *buf, size_t cap)
{
	size_t n = rr__rdma_hdr_size(h);

	if (!n)
		return -EINVAL;
	if (cap < n)
		return -ENOSPC;
	/* vers is written as given: ERR_VERS echoes the peer's value. */
	st32(buf, h->xid);
	st32(buf + 4, h->vers);
	st32(buf + 8, h->credits);
	st32(buf + 12, h->proc);
	if (h->proc != RR_RDMA_ERROR) {
		enc_lists(buf + RR_RDMA_HDR_MIN, h);
		return (int)n;
	}
	st32(buf + RR_RDMA_HDR_MIN, h->err);
	if (h->err == RR_ERR_VERS) {
		st32(buf + ERR_CHUNK_LEN, h->vers_low);
		st32(buf + ERR_CHUNK_LEN + 4, h->vers_high);
	}
	return (int)n;
}

/* ----------------------------------------------- RFC 8797 parameters */

#define CP_F_REM_INV 0x01 /* RFC 8797 section 4: Remote Invalidation */
#define CP_UNIT	     1024
#define CP_MAX_UNITS 256

/* RFC 8797 section 4: one octet holds (size / 1 KiB) - 1. */
static uint8_t cp_size_enc(uint32_t bytes)
{
	uint32_t units = bytes / CP_UNIT;

	if (units < 1)
		units = 1;
	if (units > CP_MAX_UNITS)
		units = CP_MAX_UNITS;
	return (uint8_t)(units - 1);
}

void rr__cparams_encode(const struct rr_cparams *p, uint8_t out[RR_CPARAMS_LEN])
{
	st32(out, RR_CPARAMS_MAGIC);
	out[4] = RR_CPARAMS_VERSION;
	out[5] = p->rem_inv_ok ? CP_F_REM_INV : 0;
	out[6] = cp_size_enc(p->inline_send);
	out[7] = cp_size_enc(p->inline_recv);
}

int rr__cparams_decode(const uint8_t *pd, size_t len, struct rr_cparams *p)
{
	/* Private data is often padded (IB CM), so more than 8 bytes is fine.
	 */
	if (!pd || len < XDR_WORD || ld32(pd) != RR_CPARAMS_MAGIC)
		return -ENOENT;
	if (len < RR_CPARAMS_LEN || pd[4] != RR_CPARAMS_VERSION)
		return -EINVAL;
	/* Flag bits we do not know are ignored: later senders may set them. */
	p->rem_inv_ok = pd[5] & CP_F_REM_INV;
	p->inline_send = ((uint32_t)pd[6] + 1) * CP_UNIT;
	p->inline_recv = ((uint32_t)pd[7] + 1) * CP_UNIT;
	return 0;
}
