// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RPC-over-RDMA Version 1 header and RFC 8797 parameter codecs: the bytes
 * the Linux kernel put on the wire (/work/shared/wire-vectors.md), layouts
 * written out by hand from RFC 8166, round trips, and every way a peer's
 * header can be short, oversized or of another version.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rpcrdma/hdr.h"
#include "vectors.h"

/* Fixed seed: a failure must reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static int decode_exact(const uint8_t *p, size_t len, struct rr_rdma_hdr *h)
{
	uint8_t *c = exact_copy(p, len);
	int ret = rr__rdma_hdr_decode(c, len, h);

	free(c);
	return ret;
}

static void poison(struct rr_rdma_hdr *h)
{
	memset(h, 0xa5, sizeof(*h));
}

static void assert_seg_equal(const struct rr_rdma_seg *a,
			     const struct rr_rdma_seg *b)
{
	assert_int_equal(a->handle, b->handle);
	assert_int_equal(a->length, b->length);
	assert_true(a->offset == b->offset);
}

static void assert_chunk_equal(const struct rr_rdma_chunk *a,
			       const struct rr_rdma_chunk *b)
{
	assert_int_equal(a->nsegs, b->nsegs);
	for (uint32_t i = 0; i < a->nsegs; i++)
		assert_seg_equal(&a->segs[i], &b->segs[i]);
}

/* Compares what the header carries; the unused array tails are junk. */
static void assert_hdr_equal(const struct rr_rdma_hdr *a,
			     const struct rr_rdma_hdr *b)
{
	assert_int_equal(a->xid, b->xid);
	assert_int_equal(a->vers, b->vers);
	assert_int_equal(a->credits, b->credits);
	assert_int_equal(a->proc, b->proc);
	if (a->proc == RR_RDMA_ERROR) {
		assert_int_equal(a->err, b->err);
		if (a->err == RR_ERR_VERS) {
			assert_int_equal(a->vers_low, b->vers_low);
			assert_int_equal(a->vers_high, b->vers_high);
		}
		return;
	}
	assert_int_equal(a->nread, b->nread);
	for (uint32_t i = 0; i < a->nread; i++) {
		assert_int_equal(a->reads[i].position, b->reads[i].position);
		assert_seg_equal(&a->reads[i].seg, &b->reads[i].seg);
	}
	assert_int_equal(a->nwrite, b->nwrite);
	for (uint32_t i = 0; i < a->nwrite; i++)
		assert_chunk_equal(&a->writes[i], &b->writes[i]);
	assert_int_equal(a->has_reply, b->has_reply);
	if (a->has_reply)
		assert_chunk_equal(&a->reply, &b->reply);
}

/* Encodes h, checks size agrees, decodes an exact copy and compares. */
static int round_trip(const struct rr_rdma_hdr *h, uint8_t *buf, size_t cap)
{
	struct rr_rdma_hdr d;
	int n = rr__rdma_hdr_encode(h, buf, cap);

	assert_true(n > 0);
	assert_int_equal((size_t)n, rr__rdma_hdr_size(h));
	poison(&d);
	assert_int_equal(decode_exact(buf, (size_t)n, &d), n);
	assert_hdr_equal(h, &d);
	return n;
}

/* ------------------------------------------------ the kernel's FPDUs */

/*
 * Whole FPDUs from wire-vectors.md: MPA length, DDP/RDMAP untagged
 * header (2 + 4 + 12 bytes), the Send payload, the MPA CRC word.
 */
static const char null_call_fpdu[] =
	"00 56 41 43 00000000 00000000 00000001 00000000"
	"28795526 00000001 00000080 00000000"
	"00000000 00000000 00000000"
	"28795526 00000000 00000002 000186a3 00000003 00000000"
	"00000000 00000000 00000000 00000000"
	"00000000";

static const char reply_fpdu[] =
	"00 46 41 43 00000000 00000000 00000001 00000000 28795526 00000001"
	"00000010 00000000 00000000 00000000 00000000 28795526 00000001"
	"00000000 00000000 00000000 00000000 00000000";

static const char fsinfo_fpdu[] =
	"00 82 41 43 00000000 00000000 00000002 00000000 29795526 00000001"
	"00000080 00000000 00000000 00000000 00000000 29795526 00000000"
	"00000002 000186a3 00000003 00000013 00000001 00000020 00000000"
	"0000000b 766d6c61622d6775657374 00 00000000 00000000 00000000"
	"00000000 00000000 00000008 0100010000000000 00000000";

#define DDP_UNTAGGED_HLEN 18

/* Returns the Send payload's offset in the FPDU and its length. */
static size_t fpdu_payload(const uint8_t *fpdu, size_t n, size_t *len)
{
	size_t ulpdu = (size_t)fpdu[0] << 8 | fpdu[1];

	/* MPA length + ULPDU + CRC; all three vectors need no pad. */
	assert_int_equal(n, 2 + ulpdu + 4);
	*len = ulpdu - DDP_UNTAGGED_HLEN;
	return 2 + DDP_UNTAGGED_HLEN;
}

static void check_kernel_msg(const char *hex, uint32_t xid, uint32_t credits)
{
	uint8_t fpdu[256], out[64];
	struct rr_rdma_hdr h;
	size_t n = unhex(hex, fpdu, sizeof(fpdu)), len;
	size_t off = fpdu_payload(fpdu, n, &len);
	const uint8_t *msg = fpdu + off;

	poison(&h);
	assert_int_equal(decode_exact(msg, len, &h), RR_RDMA_HDR_EMPTY);
	assert_int_equal(h.xid, xid);
	assert_int_equal(h.vers, 1);
	assert_int_equal(h.credits, credits);
	assert_int_equal(h.proc, RR_RDMA_MSG);
	assert_int_equal(h.nread, 0);
	assert_int_equal(h.nwrite, 0);
	assert_false(h.has_reply);
	/* The RPC message starts right after: its first word is the xid. */
	assert_memory_equal(msg + RR_RDMA_HDR_EMPTY, msg, 4);

	/* The header alone, exactly sized, decodes the same. */
	assert_int_equal(decode_exact(msg, RR_RDMA_HDR_EMPTY, &h),
			 RR_RDMA_HDR_EMPTY);
	assert_int_equal(rr__rdma_hdr_size(&h), RR_RDMA_HDR_EMPTY);
	memset(out, 0xee, sizeof(out));
	assert_int_equal(rr__rdma_hdr_encode(&h, out, sizeof(out)),
			 RR_RDMA_HDR_EMPTY);
	assert_memory_equal(out, msg, RR_RDMA_HDR_EMPTY);
	assert_int_equal(out[RR_RDMA_HDR_EMPTY], 0xee);
}

static void test_kernel_null_call(void **state)
{
	(void)state;
	check_kernel_msg(null_call_fpdu, 0x28795526, 128);
}

static void test_kernel_reply(void **state)
{
	(void)state;
	check_kernel_msg(reply_fpdu, 0x28795526, 16);
}

static void test_kernel_fsinfo(void **state)
{
	(void)state;
	check_kernel_msg(fsinfo_fpdu, 0x29795526, 128);
}

/* ------------------------------------------------- layouts by hand */

/*
 * RFC 8166 section 4.3 written out: one read segment, one write chunk of
 * two segments, a reply chunk of one segment.
 */
static const char chunky_hex[] =
	"01020304 00000001 00000020 00000001" /* xid, vers, credits, NOMSG */
	"00000001 00000000 11111111 00000100 0000000a 0000000b" /* read */
	"00000000"	    /* read list end */
	"00000001 00000002" /* write chunk of two segments */
	"22222222 00001000 00000000 00010000"
	"33333333 00002000 ffffffff fffff000"
	"00000000"	    /* write list end */
	"00000001 00000001" /* reply chunk of one segment */
	"44444444 00008000 80000000 00000001";

static void fill_chunky(struct rr_rdma_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->xid = 0x01020304;
	h->vers = 1;
	h->credits = 32;
	h->proc = RR_RDMA_NOMSG;
	h->nread = 1;
	h->reads[0] = (struct rr_rdma_read_seg){
		0, {0x11111111, 0x100, 0x0000000a0000000bull}};
	h->nwrite = 1;
	h->writes[0].nsegs = 2;
	h->writes[0].segs[0] =
		(struct rr_rdma_seg){0x22222222, 0x1000, 0x10000};
	h->writes[0].segs[1] =
		(struct rr_rdma_seg){0x33333333, 0x2000, 0xfffffffffffff000ull};
	h->has_reply = true;
	h->reply.nsegs = 1;
	h->reply.segs[0] =
		(struct rr_rdma_seg){0x44444444, 0x8000, 0x8000000000000001ull};
}

static void test_chunky_layout(void **state)
{
	uint8_t want[256], out[256];
	struct rr_rdma_hdr h, d;
	size_t n = unhex(chunky_hex, want, sizeof(want));

	(void)state;
	fill_chunky(&h);
	assert_int_equal(rr__rdma_hdr_size(&h), n);
	assert_int_equal(rr__rdma_hdr_encode(&h, out, sizeof(out)), (int)n);
	assert_memory_equal(out, want, n);
	poison(&d);
	assert_int_equal(decode_exact(want, n, &d), (int)n);
	assert_hdr_equal(&h, &d);
}

static void test_err_vers_layout(void **state)
{
	uint8_t want[64], out[64];
	size_t n = unhex("0a0b0c0d 00000001 00000040 00000004"
			 "00000001 00000001 00000001",
			 want, sizeof(want));
	struct rr_rdma_hdr h = {.xid = 0x0a0b0c0d,
				.vers = 1,
				.credits = 64,
				.proc = RR_RDMA_ERROR,
				.err = RR_ERR_VERS,
				.vers_low = 1,
				.vers_high = 1};
	struct rr_rdma_hdr d;

	(void)state;
	assert_int_equal(n, 28);
	assert_int_equal(rr__rdma_hdr_size(&h), n);
	assert_int_equal(rr__rdma_hdr_encode(&h, out, sizeof(out)), (int)n);
	assert_memory_equal(out, want, n);
	poison(&d);
	assert_int_equal(decode_exact(want, n, &d), (int)n);
	assert_hdr_equal(&h, &d);
	assert_int_equal(d.nread, 0);
	assert_int_equal(d.nwrite, 0);
	assert_false(d.has_reply);
}

/* knfsd answers vers 2 with an ERR_VERS whose vers echoes the 2. */
static void test_err_vers_echo(void **state)
{
	uint8_t out[64];
	struct rr_rdma_hdr h = {.xid = 7,
				.vers = 2,
				.credits = 64,
				.proc = RR_RDMA_ERROR,
				.err = RR_ERR_VERS,
				.vers_low = 1,
				.vers_high = 1};
	struct rr_rdma_hdr d;

	(void)state;
	assert_int_equal(rr__rdma_hdr_encode(&h, out, sizeof(out)), 28);
	assert_int_equal(out[7], 2);
	poison(&d);
	assert_int_equal(decode_exact(out, 28, &d), -EPROTONOSUPPORT);
	assert_int_equal(d.xid, 7);
	assert_int_equal(d.vers, 2);
}

static void test_err_chunk_layout(void **state)
{
	uint8_t want[64], out[64];
	size_t n = unhex("0a0b0c0d 00000001 00000040 00000004 00000002", want,
			 sizeof(want));
	struct rr_rdma_hdr h = {.xid = 0x0a0b0c0d,
				.vers = 1,
				.credits = 64,
				.proc = RR_RDMA_ERROR,
				.err = RR_ERR_CHUNK};
	struct rr_rdma_hdr d;

	(void)state;
	assert_int_equal(rr__rdma_hdr_size(&h), 20);
	assert_int_equal(rr__rdma_hdr_encode(&h, out, sizeof(out)), 20);
	assert_memory_equal(out, want, n);
	poison(&d);
	assert_int_equal(decode_exact(want, n, &d), 20);
	assert_hdr_equal(&h, &d);
	/* Trailing bytes (none are defined) do not change the length. */
	memset(want + n, 0, 8);
	assert_int_equal(decode_exact(want, n + 8, &d), 20);
}

/* ------------------------------------------------------ round trips */

static void rand_seg(struct rr_rdma_seg *s)
{
	s->handle = rng();
	s->length = rng();
	s->offset = (uint64_t)rng() << 32 | rng();
}

static void rand_chunk(struct rr_rdma_chunk *c, uint32_t nsegs)
{
	c->nsegs = nsegs;
	for (uint32_t i = 0; i < nsegs; i++)
		rand_seg(&c->segs[i]);
}

static void msg_hdr(struct rr_rdma_hdr *h, uint32_t proc)
{
	memset(h, 0, sizeof(*h));
	h->xid = rng();
	h->vers = 1;
	h->credits = rng() & 0xffff;
	h->proc = proc;
}

static void test_read_list_round_trip(void **state)
{
	static const uint32_t pos[] = {0, 0, 100, 100, 2048, 0xfffffffc};
	uint8_t buf[2048];
	struct rr_rdma_hdr h;

	(void)state;
	msg_hdr(&h, RR_RDMA_MSG);
	h.nread = 6;
	for (int i = 0; i < 6; i++) {
		h.reads[i].position = pos[i];
		rand_seg(&h.reads[i].seg);
	}
	assert_int_equal(round_trip(&h, buf, sizeof(buf)), 28 + 6 * 24);

	/* The limit itself is fine. */
	h.nread = RR_RDMA_MAX_READ_SEGS;
	for (int i = 6; i < RR_RDMA_MAX_READ_SEGS; i++) {
		h.reads[i].position = (uint32_t)i * 4096;
		rand_seg(&h.reads[i].seg);
	}
	round_trip(&h, buf, sizeof(buf));
}

static void test_write_list_round_trip(void **state)
{
	uint8_t buf[2048];
	struct rr_rdma_hdr h;

	(void)state;
	msg_hdr(&h, RR_RDMA_MSG);
	h.nwrite = 3;
	rand_chunk(&h.writes[0], 1);
	rand_chunk(&h.writes[1], 5);
	rand_chunk(&h.writes[2], 0); /* an empty chunk is legal XDR */
	assert_int_equal(round_trip(&h, buf, sizeof(buf)), 28 + 3 * 8 + 6 * 16);

	h.nwrite = RR_RDMA_MAX_WRITE_CHUNKS;
	for (int i = 0; i < RR_RDMA_MAX_WRITE_CHUNKS; i++)
		rand_chunk(&h.writes[i], RR_RDMA_MAX_CHUNK_SEGS);
	round_trip(&h, buf, sizeof(buf));
}

static void test_reply_chunk_round_trip(void **state)
{
	uint8_t buf[2048];
	struct rr_rdma_hdr h;

	(void)state;
	msg_hdr(&h, RR_RDMA_NOMSG);
	h.has_reply = true;
	rand_chunk(&h.reply, 3);
	assert_int_equal(round_trip(&h, buf, sizeof(buf)), 28 + 4 + 3 * 16);
	rand_chunk(&h.reply, RR_RDMA_MAX_CHUNK_SEGS);
	round_trip(&h, buf, sizeof(buf));
}

/* Everything at its limit: the largest header we ever accept. */
static void fill_max(struct rr_rdma_hdr *h)
{
	msg_hdr(h, RR_RDMA_MSG);
	h->nread = RR_RDMA_MAX_READ_SEGS;
	for (int i = 0; i < RR_RDMA_MAX_READ_SEGS; i++) {
		h->reads[i].position = (uint32_t)i * 8;
		rand_seg(&h->reads[i].seg);
	}
	h->nwrite = RR_RDMA_MAX_WRITE_CHUNKS;
	for (int i = 0; i < RR_RDMA_MAX_WRITE_CHUNKS; i++)
		rand_chunk(&h->writes[i], RR_RDMA_MAX_CHUNK_SEGS);
	h->has_reply = true;
	rand_chunk(&h->reply, RR_RDMA_MAX_CHUNK_SEGS);
}

static void test_max_round_trip(void **state)
{
	uint8_t buf[2048];
	struct rr_rdma_hdr h;

	(void)state;
	fill_max(&h);
	assert_int_equal(round_trip(&h, buf, sizeof(buf)),
			 28 + 16 * 24 + 4 * (8 + 16 * 16) + 4 + 16 * 16);
}

static void test_random_round_trips(void **state)
{
	uint8_t buf[2048];
	struct rr_rdma_hdr h;

	(void)state;
	for (int iter = 0; iter < 2000; iter++) {
		msg_hdr(&h, rng() & 1);
		h.nread = rng() % (RR_RDMA_MAX_READ_SEGS + 1);
		for (uint32_t i = 0; i < h.nread; i++) {
			h.reads[i].position = rng();
			rand_seg(&h.reads[i].seg);
		}
		h.nwrite = rng() % (RR_RDMA_MAX_WRITE_CHUNKS + 1);
		for (uint32_t i = 0; i < h.nwrite; i++)
			rand_chunk(&h.writes[i],
				   rng() % (RR_RDMA_MAX_CHUNK_SEGS + 1));
		h.has_reply = rng() & 1;
		if (h.has_reply)
			rand_chunk(&h.reply,
				   rng() % (RR_RDMA_MAX_CHUNK_SEGS + 1));
		round_trip(&h, buf, sizeof(buf));
	}
}

/* ------------------------------------------------------- rejections */

/*
 * Every proper prefix of a valid header is short of its own lists. Each
 * prefix is decoded twice: alone (a read past it is a sanitizer's
 * report), and in place, where the valid rest of the header follows it:
 * a decoder that forgot a room test reads that rest and succeeds.
 */
static void check_truncations(const uint8_t *msg, size_t n)
{
	struct rr_rdma_hdr h;

	for (size_t len = 0; len < n; len++) {
		poison(&h);
		assert_int_equal(decode_exact(msg, len, &h), -EBADMSG);
		poison(&h);
		assert_int_equal(rr__rdma_hdr_decode(msg, len, &h), -EBADMSG);
	}
	assert_int_equal(decode_exact(msg, n, &h), (int)n);
}

static void test_truncations(void **state)
{
	uint8_t buf[2048];
	struct rr_rdma_hdr h;
	size_t n;

	(void)state;
	n = unhex(null_call_fpdu, buf, sizeof(buf));
	check_truncations(buf + 20, RR_RDMA_HDR_EMPTY);
	n = unhex(chunky_hex, buf, sizeof(buf));
	check_truncations(buf, n);
	n = unhex("0a0b0c0d 00000001 00000040 00000004 00000001 00000001"
		  "00000001",
		  buf, sizeof(buf));
	check_truncations(buf, n);
	n = unhex("0a0b0c0d 00000001 00000040 00000004 00000002", buf,
		  sizeof(buf));
	check_truncations(buf, n);
	fill_max(&h);
	n = (size_t)rr__rdma_hdr_encode(&h, buf, sizeof(buf));
	check_truncations(buf, n);
}

static void test_null_buffer_empty(void **state)
{
	struct rr_rdma_hdr h;

	(void)state;
	assert_int_equal(rr__rdma_hdr_decode(NULL, 0, &h), -EBADMSG);
}

/* Overwrites the word at byte offset off of an encoded header. */
static void put32(uint8_t *p, size_t off, uint32_t v)
{
	p[off] = (uint8_t)(v >> 24);
	p[off + 1] = (uint8_t)(v >> 16);
	p[off + 2] = (uint8_t)(v >> 8);
	p[off + 3] = (uint8_t)v;
}

static void test_bad_discriminators(void **state)
{
	/* Offsets of each discriminator in chunky_hex. */
	static const size_t disc_off[] = {16, 40, 44, 84, 88};
	static const uint32_t bad[] = {2, 3, 0x80000000, 0xffffffff};
	uint8_t good[256], buf[256];
	struct rr_rdma_hdr h;
	size_t n = unhex(chunky_hex, good, sizeof(good));

	(void)state;
	for (size_t i = 0; i < sizeof(disc_off) / sizeof(disc_off[0]); i++) {
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			memcpy(buf, good, n);
			put32(buf, disc_off[i], bad[j]);
			assert_int_equal(decode_exact(buf, n, &h), -EBADMSG);
		}
	}
	/* And in the empty lists of the NULL call. */
	for (size_t off = 16; off < 28; off += 4) {
		n = unhex(null_call_fpdu, good, sizeof(good));
		memcpy(buf, good + 20, 28);
		put32(buf, off, 2);
		assert_int_equal(decode_exact(buf, 28, &h), -EBADMSG);
	}
}

static void test_oversized_counts(void **state)
{
	static const uint32_t counts[] = {17, 0x100, 0x7fffffff, 0xffffffff};
	uint8_t buf[256];
	struct rr_rdma_hdr h;
	size_t n = unhex(chunky_hex, buf, sizeof(buf));

	(void)state;
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		/* Write chunk segment count, whole message and cut short. */
		put32(buf, 48, counts[i]);
		assert_int_equal(decode_exact(buf, n, &h), -E2BIG);
		assert_int_equal(decode_exact(buf, 52, &h), -E2BIG);
		put32(buf, 48, 2);
		/* Reply chunk segment count. */
		put32(buf, 92, counts[i]);
		assert_int_equal(decode_exact(buf, n, &h), -E2BIG);
		assert_int_equal(decode_exact(buf, 96, &h), -E2BIG);
		put32(buf, 92, 1);
	}
	assert_int_equal(decode_exact(buf, n, &h), (int)n);
}

/* A list one longer than the limit, laid out in full. */
static void test_too_many_items(void **state)
{
	uint8_t buf[4096];
	struct rr_rdma_hdr h;
	size_t p = 16;

	(void)state;
	memset(buf, 0, sizeof(buf));
	put32(buf, 4, 1);
	for (int i = 0; i <= RR_RDMA_MAX_READ_SEGS; i++, p += 24)
		put32(buf, p, 1);
	p += 8; /* read list end, write list end */
	p += 4; /* no reply chunk */
	assert_int_equal(decode_exact(buf, p, &h), -E2BIG);

	memset(buf, 0, sizeof(buf));
	put32(buf, 4, 1);
	p = 20; /* empty read list */
	for (int i = 0; i <= RR_RDMA_MAX_WRITE_CHUNKS; i++, p += 8 + 16) {
		put32(buf, p, 1);
		put32(buf, p + 4, 1);
	}
	p += 8;
	assert_int_equal(decode_exact(buf, p, &h), -E2BIG);
}

static void test_other_versions(void **state)
{
	static const uint32_t vers[] = {0, 2, 0xffffffff};
	uint8_t fpdu[256], msg[64];
	struct rr_rdma_hdr h;

	(void)state;
	unhex(null_call_fpdu, fpdu, sizeof(fpdu));
	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
		memcpy(msg, fpdu + 20, 28);
		put32(msg, 4, vers[i]);
		poison(&h);
		assert_int_equal(decode_exact(msg, 28, &h), -EPROTONOSUPPORT);
		assert_int_equal(h.xid, 0x28795526);
		assert_int_equal(h.vers, vers[i]);
		/* Later versions need not be 28 bytes: 16 suffice to say so. */
		poison(&h);
		assert_int_equal(decode_exact(msg, 16, &h), -EPROTONOSUPPORT);
		assert_int_equal(h.xid, 0x28795526);
		assert_int_equal(h.vers, vers[i]);
	}
}

static void test_other_procs(void **state)
{
	static const uint32_t procs[] = {RR_RDMA_MSGP, RR_RDMA_DONE, 5, 7,
					 0xffffffff};
	uint8_t fpdu[256], msg[64];
	struct rr_rdma_hdr h;

	(void)state;
	unhex(null_call_fpdu, fpdu, sizeof(fpdu));
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		memcpy(msg, fpdu + 20, 28);
		put32(msg, 12, procs[i]);
		poison(&h);
		assert_int_equal(decode_exact(msg, 28, &h), -EOPNOTSUPP);
		assert_int_equal(h.xid, 0x28795526);
		assert_int_equal(h.proc, procs[i]);
		assert_int_equal(decode_exact(msg, 16, &h), -EOPNOTSUPP);
	}
}

static void test_unknown_err(void **state)
{
	uint8_t msg[64];
	struct rr_rdma_hdr h;
	size_t n = unhex("0a0b0c0d 00000001 00000040 00000004 00000003"
			 "00000001 00000001",
			 msg, sizeof(msg));

	(void)state;
	assert_int_equal(decode_exact(msg, n, &h), -EBADMSG);
	put32(msg, 16, 0);
	assert_int_equal(decode_exact(msg, n, &h), -EBADMSG);
}

/* Random bytes behind a valid fixed part: never a crash or overread. */
static void test_random_garbage(void **state)
{
	uint8_t buf[512], out[2048];
	struct rr_rdma_hdr h, d;

	(void)state;
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = rng() % sizeof(buf);
		int ret;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rng();
		if (len >= 16) {
			put32(buf, 4, 1);
			put32(buf, 12, rng() % 5);
			/* Small words make lists that go on and on. */
			for (size_t off = 16; off + 4 <= len; off += 4)
				if (rng() & 1)
					put32(buf, off, rng() % 3);
		}
		ret = decode_exact(buf, len, &h);
		if (ret < 0)
			continue;
		assert_true((size_t)ret <= len);
		assert_int_equal(rr__rdma_hdr_encode(&h, out, sizeof(out)),
				 ret);
		assert_memory_equal(out, buf, (size_t)ret);
		assert_int_equal(decode_exact(out, (size_t)ret, &d), ret);
		assert_hdr_equal(&h, &d);
	}
}

/* ----------------------------------------------------------- encode */

static void check_nospc(const struct rr_rdma_hdr *h)
{
	size_t n = rr__rdma_hdr_size(h);
	uint8_t *buf;

	assert_true(n > 0);
	/* Exactly cap bytes on the heap: ASan sees any write past them. */
	for (size_t cap = 0; cap < n; cap++) {
		buf = malloc(cap ? cap : 1);
		assert_non_null(buf);
		assert_int_equal(rr__rdma_hdr_encode(h, buf, cap), -ENOSPC);
		free(buf);
	}
	buf = malloc(n);
	assert_non_null(buf);
	assert_int_equal(rr__rdma_hdr_encode(h, buf, n), (int)n);
	free(buf);
}

static void test_encode_nospc(void **state)
{
	struct rr_rdma_hdr h;

	(void)state;
	fill_chunky(&h);
	check_nospc(&h);
	fill_max(&h);
	check_nospc(&h);
	msg_hdr(&h, RR_RDMA_MSG);
	check_nospc(&h);
	h.proc = RR_RDMA_ERROR;
	h.err = RR_ERR_VERS;
	check_nospc(&h);
	h.err = RR_ERR_CHUNK;
	check_nospc(&h);
}

static void check_einval(const struct rr_rdma_hdr *h)
{
	uint8_t buf[4096];

	assert_int_equal(rr__rdma_hdr_size(h), 0);
	assert_int_equal(rr__rdma_hdr_encode(h, buf, sizeof(buf)), -EINVAL);
}

static void test_encode_einval(void **state)
{
	struct rr_rdma_hdr h;

	(void)state;
	fill_max(&h);
	h.nread = RR_RDMA_MAX_READ_SEGS + 1;
	check_einval(&h);
	fill_max(&h);
	h.nwrite = RR_RDMA_MAX_WRITE_CHUNKS + 1;
	check_einval(&h);
	fill_max(&h);
	h.writes[3].nsegs = RR_RDMA_MAX_CHUNK_SEGS + 1;
	check_einval(&h);
	fill_max(&h);
	h.reply.nsegs = 0xffffffff;
	check_einval(&h);
	fill_max(&h);
	h.proc = RR_RDMA_MSGP;
	check_einval(&h);
	h.proc = RR_RDMA_DONE;
	check_einval(&h);
	h.proc = 9;
	check_einval(&h);
	h.proc = RR_RDMA_ERROR;
	h.err = 3;
	check_einval(&h);
	/* A reply chunk that is absent is not looked at. */
	fill_max(&h);
	h.has_reply = false;
	h.reply.nsegs = 0xffffffff;
	assert_int_equal(rr__rdma_hdr_size(&h), 28 + 16 * 24 + 4 * 264);
}

/* ---------------------------------------------------------- cparams */

static void test_cparams_kernel_request(void **state)
{
	static const uint8_t want[] = {0xf6, 0xab, 0x0e, 0x18,
				       0x01, 0x01, 0x03, 0x03};
	struct rr_cparams p = {
		.rem_inv_ok = true, .inline_send = 4096, .inline_recv = 4096};
	struct rr_cparams d;
	uint8_t out[RR_CPARAMS_LEN];

	(void)state;
	rr__cparams_encode(&p, out);
	assert_memory_equal(out, want, sizeof(want));
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(rr__cparams_decode(want, sizeof(want), &d), 0);
	assert_true(d.rem_inv_ok);
	assert_int_equal(d.inline_send, 4096);
	assert_int_equal(d.inline_recv, 4096);
}

/* The MPA Reply the kernel accepted: its block follows IRD/ORD. */
static void test_cparams_kernel_reply(void **state)
{
	uint8_t mpa[64];
	struct rr_cparams d;
	size_t n = unhex("4d504120494420526570204672616d65 10 02 000c"
			 "0010 0010 f6ab0e18 01 00 03 03",
			 mpa, sizeof(mpa));

	(void)state;
	assert_int_equal(n, 32);
	assert_int_equal(mpa[19], 12); /* PD length: IRD/ORD + our 8 */
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(rr__cparams_decode(mpa + 24, 8, &d), 0);
	assert_false(d.rem_inv_ok);
	assert_int_equal(d.inline_send, 4096);
	assert_int_equal(d.inline_recv, 4096);
}

static int cp_decode_exact(const uint8_t *p, size_t len, struct rr_cparams *d)
{
	uint8_t *c = exact_copy(p, len);
	int ret = rr__cparams_decode(c, len, d);

	free(c);
	return ret;
}

static void test_cparams_rejects(void **state)
{
	uint8_t blk[64] = {0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03};
	static const uint8_t zeros[8];
	struct rr_cparams d;

	(void)state;
	/* Ours but cut short. */
	for (size_t len = 4; len < RR_CPARAMS_LEN; len++)
		assert_int_equal(cp_decode_exact(blk, len, &d), -EINVAL);
	/* Too short to tell: not ours. */
	for (size_t len = 0; len < 4; len++)
		assert_int_equal(cp_decode_exact(blk, len, &d), -ENOENT);
	assert_int_equal(rr__cparams_decode(NULL, 0, &d), -ENOENT);
	assert_int_equal(cp_decode_exact(zeros, sizeof(zeros), &d), -ENOENT);
	/* rping's private data is empty; another ULP's is anything. */
	assert_int_equal(cp_decode_exact((const uint8_t *)"\x18\x0e\xab\xf6"
							  "\x01\x01\x03\x03",
					 8, &d),
			 -ENOENT);
	/* Another version of ours. */
	blk[4] = 2;
	assert_int_equal(cp_decode_exact(blk, 8, &d), -EINVAL);
	blk[4] = 0;
	assert_int_equal(cp_decode_exact(blk, 8, &d), -EINVAL);
	/* Padding after the block (IB CM private data) is fine. */
	blk[4] = 1;
	assert_int_equal(cp_decode_exact(blk, 56, &d), 0);
	/* Unassigned flag bits are ignored. */
	blk[5] = 0xfe;
	assert_int_equal(cp_decode_exact(blk, 8, &d), 0);
	assert_false(d.rem_inv_ok);
}

static void test_cparams_sizes(void **state)
{
	uint8_t out[RR_CPARAMS_LEN];
	struct rr_cparams p, d;

	(void)state;
	for (uint32_t sz = 1024; sz <= 262144; sz += 1024) {
		p.rem_inv_ok = sz & 1024;
		p.inline_send = sz;
		p.inline_recv = 263168 - sz;
		rr__cparams_encode(&p, out);
		assert_int_equal(out[6], sz / 1024 - 1);
		assert_int_equal(cp_decode_exact(out, sizeof(out), &d), 0);
		assert_int_equal(d.rem_inv_ok, p.rem_inv_ok);
		assert_int_equal(d.inline_send, p.inline_send);
		assert_int_equal(d.inline_recv, p.inline_recv);
	}
	/* Rounded down to a KiB and clamped to what one octet says. */
	p = (struct rr_cparams){false, 4097, 2047};
	rr__cparams_encode(&p, out);
	assert_int_equal(out[6], 3);
	assert_int_equal(out[7], 0);
	p = (struct rr_cparams){false, 0, 1u << 20};
	rr__cparams_encode(&p, out);
	assert_int_equal(out[6], 0);
	assert_int_equal(out[7], 255);
	/* Just past what fits: no wrap into a small size. */
	p = (struct rr_cparams){false, 300 * 1024, 257 * 1024};
	rr__cparams_encode(&p, out);
	assert_int_equal(out[6], 255);
	assert_int_equal(out[7], 255);
	p = (struct rr_cparams){false, 0xffffffff, 1023};
	rr__cparams_encode(&p, out);
	assert_int_equal(out[6], 255);
	assert_int_equal(out[7], 0);
	assert_int_equal(out[5], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_null_call),
		cmocka_unit_test(test_kernel_reply),
		cmocka_unit_test(test_kernel_fsinfo),
		cmocka_unit_test(test_chunky_layout),
		cmocka_unit_test(test_err_vers_layout),
		cmocka_unit_test(test_err_vers_echo),
		cmocka_unit_test(test_err_chunk_layout),
		cmocka_unit_test(test_read_list_round_trip),
		cmocka_unit_test(test_write_list_round_trip),
		cmocka_unit_test(test_reply_chunk_round_trip),
		cmocka_unit_test(test_max_round_trip),
		cmocka_unit_test(test_random_round_trips),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_null_buffer_empty),
		cmocka_unit_test(test_bad_discriminators),
		cmocka_unit_test(test_oversized_counts),
		cmocka_unit_test(test_too_many_items),
		cmocka_unit_test(test_other_versions),
		cmocka_unit_test(test_other_procs),
		cmocka_unit_test(test_unknown_err),
		cmocka_unit_test(test_random_garbage),
		cmocka_unit_test(test_encode_nospc),
		cmocka_unit_test(test_encode_einval),
		cmocka_unit_test(test_cparams_kernel_request),
		cmocka_unit_test(test_cparams_kernel_reply),
		cmocka_unit_test(test_cparams_rejects),
		cmocka_unit_test(test_cparams_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
