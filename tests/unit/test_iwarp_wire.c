// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * iWARP codecs against frames captured from Linux
 * (/work/shared/wire-vectors.md) and against hand-built bad input. Decoders get
 * exactly-sized heap copies so a sanitizer build catches any read past the
 * length they were given.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/crc32c.h"
#include "fabric/iwarp/wire.h"
#include "vectors.h"

static int hdr_decode_exact(const uint8_t *p, size_t avail, struct iw_hdr *h)
{
	uint8_t *c = exact_copy(p, avail);
	int rc = rr__iw_hdr_decode(c, avail, h);

	free(c);
	return rc;
}

/* ---------------------------------------------------------------- MPA */

static const char nfs_req[] = "4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65"
			      "10 02 00 0c 00 80 00 00 f6 ab 0e 18 01 01 03 03";
static const char rping_req[] = "4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d "
				"65 10 02 00 04 00 01 00 01";
static const char kernel_rep[] = "4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d "
				 "65 10 02 00 0c 00 10 00 10"
				 "f6 ab 0e 18 01 00 03 03";

static int mpa_decode(const uint8_t *b, size_t len, bool reply,
		      struct iw_mpa_frame *f)
{
	uint16_t pd_total = 0xffff;
	uint8_t *pd;
	int rc;

	assert_true(len >= IW_MPA_HDR_LEN);
	rc = rr__iw_mpa_decode_header(b, reply, f, &pd_total);
	if (rc)
		return rc;
	assert_int_equal(pd_total, len - IW_MPA_HDR_LEN);
	pd = exact_copy(b + IW_MPA_HDR_LEN, pd_total);
	rc = rr__iw_mpa_decode_pdata(pd, pd_total, f);
	free(pd);
	return rc;
}

static void assert_mpa_reencodes(const struct iw_mpa_frame *f, const uint8_t *b,
				 size_t len)
{
	uint8_t out[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];

	assert_int_equal(rr__iw_mpa_encode(f, out, sizeof(out)), (int)len);
	assert_memory_equal(out, b, len);
}

static void test_mpa_nfs_request(void **state)
{
	static const uint8_t app[] = {0xf6, 0xab, 0x0e, 0x18,
				      0x01, 0x01, 0x03, 0x03};
	uint8_t b[64];
	size_t len = unhex(nfs_req, b, sizeof(b));
	struct iw_mpa_frame f;

	(void)state;
	assert_int_equal(len, 32);
	assert_int_equal(mpa_decode(b, len, false, &f), 0);
	assert_false(f.reply);
	assert_int_equal(f.flags, IW_MPA_FLAG_ENHANCED);
	assert_int_equal(f.rev, 2);
	assert_int_equal(f.ird, 128);
	assert_int_equal(f.ord, 0);
	assert_false(f.p2p);
	assert_int_equal(f.rtr, 0);
	assert_int_equal(f.pd_len, 8);
	assert_memory_equal(f.pd, app, 8);
	assert_mpa_reencodes(&f, b, len);
	/* A request is not a reply. */
	assert_int_equal(mpa_decode(b, len, true, &f), -EBADMSG);
}

static void test_mpa_rping_request(void **state)
{
	uint8_t b[64];
	size_t len = unhex(rping_req, b, sizeof(b));
	struct iw_mpa_frame f;

	(void)state;
	assert_int_equal(len, 24);
	assert_int_equal(mpa_decode(b, len, false, &f), 0);
	assert_int_equal(f.ird, 1);
	assert_int_equal(f.ord, 1);
	assert_int_equal(f.pd_len, 0);
	assert_mpa_reencodes(&f, b, len);
}

static void test_mpa_kernel_reply(void **state)
{
	static const uint8_t app[] = {0xf6, 0xab, 0x0e, 0x18,
				      0x01, 0x00, 0x03, 0x03};
	uint8_t b[64];
	size_t len = unhex(kernel_rep, b, sizeof(b));
	struct iw_mpa_frame f;

	(void)state;
	assert_int_equal(mpa_decode(b, len, true, &f), 0);
	assert_true(f.reply);
	assert_int_equal(f.flags, IW_MPA_FLAG_ENHANCED);
	assert_int_equal(f.ird, 16);
	assert_int_equal(f.ord, 16);
	assert_int_equal(f.pd_len, 8);
	assert_memory_equal(f.pd, app, 8);
	assert_mpa_reencodes(&f, b, len);
	assert_int_equal(mpa_decode(b, len, false, &f), -EBADMSG);
}

static void test_mpa_p2p_rtr_roundtrip(void **state)
{
	struct iw_mpa_frame f = {
		.reply = true,
		.flags = IW_MPA_FLAG_ENHANCED | IW_MPA_FLAG_CRC,
		.rev = 2,
		.ird = 0x3fff,
		.ord = 7,
		.p2p = true,
		.rtr = IW_MPA_RTR_WRITE | IW_MPA_RTR_READ | IW_MPA_RTR_SEND,
		.pd_len = 3,
		.pd = {1, 2, 3},
	};
	struct iw_mpa_frame g;
	uint8_t b[64];
	int n;

	(void)state;
	n = rr__iw_mpa_encode(&f, b, sizeof(b));
	assert_int_equal(n, 27);
	assert_int_equal(b[16], 0x50);
	assert_int_equal(b[18] << 8 | b[19], 7);
	/* P2P and Send RTR in the IRD word; Write and Read RTR in ORD's. */
	assert_int_equal(b[20], 0xff);
	assert_int_equal(b[21], 0xff);
	assert_int_equal(b[22], 0xc0);
	assert_int_equal(b[23], 0x07);
	assert_int_equal(mpa_decode(b, (size_t)n, true, &g), 0);
	assert_int_equal(g.ird, f.ird);
	assert_int_equal(g.ord, f.ord);
	assert_true(g.p2p);
	assert_int_equal(g.rtr, f.rtr);
	assert_int_equal(g.pd_len, 3);
	assert_memory_equal(g.pd, f.pd, 3);
	assert_mpa_reencodes(&g, b, (size_t)n);
}

static void test_mpa_rev1_plain(void **state)
{
	struct iw_mpa_frame f = {
		.flags = IW_MPA_FLAG_CRC, .rev = 1, .pd_len = IW_MPA_MAX_PD};
	uint8_t b[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	struct iw_mpa_frame g;

	(void)state;
	memset(f.pd, 0x5a, sizeof(f.pd));
	assert_int_equal(rr__iw_mpa_encode(&f, b, sizeof(b)), (int)sizeof(b));
	assert_int_equal(mpa_decode(b, sizeof(b), false, &g), 0);
	assert_int_equal(g.rev, 1);
	assert_int_equal(g.pd_len, IW_MPA_MAX_PD);
	assert_memory_equal(g.pd, f.pd, IW_MPA_MAX_PD);
}

static void test_mpa_decode_rejects(void **state)
{
	uint8_t b[64], bad[64];
	size_t len = unhex(nfs_req, b, sizeof(b));
	struct iw_mpa_frame f;
	uint16_t pd_total;

	(void)state;
	for (size_t i = 0; i < IW_MPA_KEY_LEN; i++) {
		memcpy(bad, b, len);
		bad[i] ^= 0x01;
		assert_int_equal(
			rr__iw_mpa_decode_header(bad, false, &f, &pd_total),
			-EBADMSG);
	}
	memcpy(bad, b, len);
	bad[17] = 3;
	assert_int_equal(rr__iw_mpa_decode_header(bad, false, &f, &pd_total),
			 -EPROTO);
	bad[17] = 0;
	assert_int_equal(rr__iw_mpa_decode_header(bad, false, &f, &pd_total),
			 -EPROTO);
	/* Revision 1 has no enhanced mode... */
	bad[17] = 1;
	assert_int_equal(rr__iw_mpa_decode_header(bad, false, &f, &pd_total),
			 -EPROTO);
	/* ...but is fine without it. */
	bad[16] = 0;
	assert_int_equal(rr__iw_mpa_decode_header(bad, false, &f, &pd_total),
			 0);

	memcpy(bad, b, len);
	bad[18] = 0x01;
	bad[19] = 0x01; /* 257 */
	assert_int_equal(rr__iw_mpa_decode_header(bad, false, &f, &pd_total),
			 -EMSGSIZE);
	bad[19] = 0x00; /* 256 */
	assert_int_equal(rr__iw_mpa_decode_header(bad, false, &f, &pd_total),
			 0);
	assert_int_equal(pd_total, 256);
	bad[18] = 0;
	bad[19] = 3; /* too short for the IRD/ORD block */
	assert_int_equal(rr__iw_mpa_decode_header(bad, false, &f, &pd_total),
			 -EMSGSIZE);

	f.flags = IW_MPA_FLAG_ENHANCED;
	assert_int_equal(rr__iw_mpa_decode_pdata(b + 20, 3, &f), -EMSGSIZE);
	assert_int_equal(rr__iw_mpa_decode_pdata(b + 20, 257, &f), -EMSGSIZE);
}

static void test_mpa_encode_rejects(void **state)
{
	struct iw_mpa_frame f = {.flags = IW_MPA_FLAG_ENHANCED, .rev = 2};
	uint8_t b[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];

	(void)state;
	f.pd_len = IW_MPA_MAX_APP_PD + 1;
	assert_int_equal(rr__iw_mpa_encode(&f, b, sizeof(b)), -EINVAL);
	f.pd_len = IW_MPA_MAX_APP_PD;
	assert_int_equal(rr__iw_mpa_encode(&f, b, sizeof(b)), (int)sizeof(b));
	assert_int_equal(rr__iw_mpa_encode(&f, b, sizeof(b) - 1), -ENOSPC);
	f.pd_len = 0;
	f.ird = 0x4000;
	assert_int_equal(rr__iw_mpa_encode(&f, b, sizeof(b)), -EINVAL);
	f.ird = 0;
	f.ord = 0x4000;
	assert_int_equal(rr__iw_mpa_encode(&f, b, sizeof(b)), -EINVAL);
	f.ord = 0;
	f.rtr = 0x0100;
	assert_int_equal(rr__iw_mpa_encode(&f, b, sizeof(b)), -EINVAL);
	f.rtr = 0;
	assert_int_equal(rr__iw_mpa_encode(&f, b, IW_MPA_HDR_LEN + 3), -ENOSPC);
	f.flags = 0;
	f.pd_len = IW_MPA_MAX_PD + 1;
	assert_int_equal(rr__iw_mpa_encode(&f, b, sizeof(b)), -EINVAL);
}

/* ---------------------------------------------------------- DDP/RDMAP */

static bool tagged_op(uint8_t op)
{
	return op == IW_OP_WRITE || op == IW_OP_READ_RESP;
}

static void test_hdr_roundtrip_all_opcodes(void **state)
{
	(void)state;
	for (uint8_t op = IW_OP_WRITE; op <= IW_OP_TERMINATE; op++) {
		for (int last = 0; last < 2; last++) {
			struct iw_hdr h = {.opcode = op,
					   .last = last,
					   .tagged = tagged_op(op)};
			struct iw_hdr g;
			uint8_t b[IW_UNTAGGED_HDR_LEN], c[IW_UNTAGGED_HDR_LEN];
			size_t n;

			if (h.tagged) {
				h.stag = 0x89abcdefu;
				h.to = 0x0123456789abcdefull;
			} else {
				h.inval_stag = 0xfedcba98u;
				h.qn = 2;
				h.msn = 0x80000001u;
				h.mo = 0x12345678u;
			}
			n = h.tagged ? IW_TAGGED_HDR_LEN : IW_UNTAGGED_HDR_LEN;
			h.mpa_len = (uint16_t)(n - 2 + 100);
			assert_int_equal(rr__iw_hdr_encode(&h, b), n);
			assert_int_equal(b[2], (h.tagged ? 0x80 : 0) |
						       (last ? 0x40 : 0) | 1);
			assert_int_equal(b[3], 0x40 | op);
			assert_int_equal(hdr_decode_exact(b, n, &g), (int)n);
			assert_int_equal(g.mpa_len, h.mpa_len);
			assert_int_equal(g.tagged, h.tagged);
			assert_int_equal(g.last, h.last);
			assert_int_equal(g.opcode, op);
			assert_int_equal(g.stag, h.stag);
			assert_true(g.to == h.to);
			assert_int_equal(g.inval_stag, h.inval_stag);
			assert_int_equal(g.qn, h.qn);
			assert_int_equal(g.msn, h.msn);
			assert_int_equal(g.mo, h.mo);
			assert_int_equal(iw_hdr_payload_len(&g), 100);
			assert_int_equal(rr__iw_hdr_encode(&g, c), n);
			assert_memory_equal(b, c, n);
		}
	}
}

static void test_hdr_short_input(void **state)
{
	struct iw_hdr h = {.opcode = IW_OP_SEND, .last = true, .mpa_len = 18};
	struct iw_hdr t = {
		.opcode = IW_OP_WRITE, .tagged = true, .mpa_len = 14};
	uint8_t b[IW_UNTAGGED_HDR_LEN];
	struct iw_hdr g;

	(void)state;
	rr__iw_hdr_encode(&h, b);
	for (size_t n = 0; n < IW_UNTAGGED_HDR_LEN; n++)
		assert_int_equal(hdr_decode_exact(b, n, &g), 0);
	assert_int_equal(hdr_decode_exact(b, IW_UNTAGGED_HDR_LEN, &g),
			 IW_UNTAGGED_HDR_LEN);
	rr__iw_hdr_encode(&t, b);
	for (size_t n = 0; n < IW_TAGGED_HDR_LEN; n++)
		assert_int_equal(hdr_decode_exact(b, n, &g), 0);
	assert_int_equal(hdr_decode_exact(b, IW_TAGGED_HDR_LEN, &g),
			 IW_TAGGED_HDR_LEN);
	assert_int_equal(iw_hdr_payload_len(&g), 0);
}

static int decode_with_ctrl(uint8_t ddp, uint8_t rdmap, uint16_t mpa_len)
{
	uint8_t b[IW_UNTAGGED_HDR_LEN] = {0};
	struct iw_hdr g;

	b[0] = mpa_len >> 8;
	b[1] = (uint8_t)mpa_len;
	b[2] = ddp;
	b[3] = rdmap;
	return hdr_decode_exact(b, sizeof(b), &g);
}

static void test_hdr_rejects(void **state)
{
	(void)state;
	/* Sanity: the base case decodes. */
	assert_int_equal(decode_with_ctrl(0x41, 0x43, 18), 20);
	/* DDP version 0, 2, 3. */
	assert_int_equal(decode_with_ctrl(0x40, 0x43, 18), -EPROTO);
	assert_int_equal(decode_with_ctrl(0x42, 0x43, 18), -EPROTO);
	assert_int_equal(decode_with_ctrl(0x43, 0x43, 18), -EPROTO);
	/* DDP reserved bits. */
	for (uint8_t bit = 0x04; bit <= 0x20; bit <<= 1)
		assert_int_equal(decode_with_ctrl(0x41 | bit, 0x43, 18),
				 -EPROTO);
	/* RDMAP version 0, 2, 3 and reserved bits. */
	assert_int_equal(decode_with_ctrl(0x41, 0x03, 18), -EPROTO);
	assert_int_equal(decode_with_ctrl(0x41, 0x83, 18), -EPROTO);
	assert_int_equal(decode_with_ctrl(0x41, 0xc3, 18), -EPROTO);
	assert_int_equal(decode_with_ctrl(0x41, 0x53, 18), -EPROTO);
	assert_int_equal(decode_with_ctrl(0x41, 0x63, 18), -EPROTO);
	/* Opcodes outside RFC 5040 (atomics included) in both models. */
	for (uint8_t op = 8; op < 16; op++) {
		assert_int_equal(decode_with_ctrl(0x41, 0x40 | op, 18),
				 -EOPNOTSUPP);
		assert_int_equal(decode_with_ctrl(0xc1, 0x40 | op, 18),
				 -EOPNOTSUPP);
	}
	/* Tagged bit disagreeing with the opcode. */
	assert_int_equal(decode_with_ctrl(0xc1, 0x43, 18), -EOPNOTSUPP);
	assert_int_equal(decode_with_ctrl(0xc1, 0x41, 18), -EOPNOTSUPP);
	assert_int_equal(decode_with_ctrl(0xc1, 0x47, 18), -EOPNOTSUPP);
	assert_int_equal(decode_with_ctrl(0x41, 0x40, 18), -EOPNOTSUPP);
	assert_int_equal(decode_with_ctrl(0x41, 0x42, 18), -EOPNOTSUPP);
	/* MPA length shorter than the header. */
	assert_int_equal(decode_with_ctrl(0x41, 0x43, 17), -EMSGSIZE);
	assert_int_equal(decode_with_ctrl(0x41, 0x43, 0), -EMSGSIZE);
	assert_int_equal(decode_with_ctrl(0xc1, 0x40, 13), -EMSGSIZE);
	assert_int_equal(decode_with_ctrl(0xc1, 0x40, 14), 16);
}

/* Bad control bytes are reported before the rest of the header arrives. */
static void test_hdr_rejects_early(void **state)
{
	uint8_t b[4] = {0x00, 0x56, 0x42, 0x43};
	struct iw_hdr g;

	(void)state;
	assert_int_equal(hdr_decode_exact(b, 4, &g), -EPROTO);
	b[2] = 0x41;
	b[1] = 0x10;
	assert_int_equal(hdr_decode_exact(b, 4, &g), -EMSGSIZE);
}

/* ------------------------------------------------------ captured FPDUs */

static const char null_call[] =
	"00 56 41 43 00000000 00000000 00000001 00000000"
	"28795526 00000001 00000080 00000000"
	"00000000 00000000 00000000"
	"28795526 00000000 00000002 000186a3 00000003 00000000"
	"00000000 00000000 00000000 00000000"
	"00000000";
static const char null_reply[] =
	"00 46 41 43 00000000 00000000 00000001 00000000 28795526 00000001"
	"00000010 00000000 00000000 00000000 00000000 28795526 00000001"
	"00000000 00000000 00000000 00000000 00000000";
static const char fsinfo_call[] =
	"00 82 41 43 00000000 00000000 00000002 00000000 29795526 00000001"
	"00000080 00000000 00000000 00000000 00000000 29795526 00000000"
	"00000002 000186a3 00000003 00000013 00000001 00000020 00000000"
	"0000000b 766d6c61622d6775657374 00 00000000 00000000 00000000"
	"00000000 00000000 00000008 0100010000000000 00000000";

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

/*
 * Decodes a whole captured Send FPDU (CRC off), checks the framing, and
 * rebuilds it from the decoded header plus the payload.
 */
static void check_send_fpdu(const char *hex, uint16_t mpa_len, uint32_t msn,
			    uint32_t xid, uint32_t credits)
{
	uint8_t b[256], out[256];
	size_t len = unhex(hex, b, sizeof(b));
	struct iw_hdr h;
	uint32_t pay, pad;

	assert_int_equal(hdr_decode_exact(b, len, &h), IW_UNTAGGED_HDR_LEN);
	assert_int_equal(h.mpa_len, mpa_len);
	assert_false(h.tagged);
	assert_true(h.last);
	assert_int_equal(h.opcode, IW_OP_SEND);
	assert_int_equal(h.inval_stag, 0);
	assert_int_equal(h.qn, IW_QN_SEND);
	assert_int_equal(h.msn, msn);
	assert_int_equal(h.mo, 0);
	pay = iw_hdr_payload_len(&h);
	assert_int_equal(pay, mpa_len - 18u);
	pad = iw_fpdu_pad(h.mpa_len);
	assert_int_equal(len, 2u + mpa_len + pad + IW_CRC_LEN);
	/* RPC-over-RDMA: xid, version 1, credits, RDMA_MSG. */
	assert_int_equal(be32_at(b + 20), xid);
	assert_int_equal(be32_at(b + 24), 1);
	assert_int_equal(be32_at(b + 28), credits);
	assert_int_equal(be32_at(b + 32), 0);
	/* CRC not negotiated: the trailer is zero. */
	assert_int_equal(rr__iw_crc_load(b + len - IW_CRC_LEN), 0);

	memset(out, 0, sizeof(out));
	assert_int_equal(rr__iw_hdr_encode(&h, out), IW_UNTAGGED_HDR_LEN);
	memcpy(out + IW_UNTAGGED_HDR_LEN, b + IW_UNTAGGED_HDR_LEN, pay);
	assert_memory_equal(out, b, len);
}

static void test_fpdu_null_call(void **state)
{
	(void)state;
	check_send_fpdu(null_call, 86, 1, 0x28795526, 128);
}

static void test_fpdu_null_reply(void **state)
{
	(void)state;
	check_send_fpdu(null_reply, 70, 1, 0x28795526, 16);
}

static void test_fpdu_fsinfo(void **state)
{
	uint8_t b[256];

	(void)state;
	check_send_fpdu(fsinfo_call, 130, 2, 0x29795526, 128);
	unhex(fsinfo_call, b, sizeof(b));
	/* RPC proc 19 after the 28-byte transport header. */
	assert_int_equal(be32_at(b + 20 + 28 + 20), 19);
}

/* ---------------------------------------------------------------- CRC */

static void test_mpa_crc_vector(void **state)
{
	uint8_t b[64];
	size_t len = unhex("00 0e c1 40 00 00 00 01 00 00 00 00 00 00 00 00"
			   "eb d3 4c 5f",
			   b, sizeof(b));
	uint8_t trailer[IW_CRC_LEN];
	struct iw_hdr h;
	uint32_t covered, crc;

	(void)state;
	assert_int_equal(hdr_decode_exact(b, len, &h), IW_TAGGED_HDR_LEN);
	assert_true(h.tagged);
	assert_true(h.last);
	assert_int_equal(h.opcode, IW_OP_WRITE);
	assert_int_equal(h.stag, 1);
	assert_true(h.to == 0);
	assert_int_equal(iw_hdr_payload_len(&h), 0);
	covered = 2u + h.mpa_len + iw_fpdu_pad(h.mpa_len);
	assert_int_equal(covered, 16);
	crc = rr_crc32c(b, covered);
	assert_int_equal(crc, 0x5f4cd3ebu);
	rr__iw_crc_store(trailer, crc);
	assert_memory_equal(trailer, b + covered, IW_CRC_LEN);
	assert_int_equal(rr__iw_crc_load(b + covered), crc);
}

static void test_crc_store_load(void **state)
{
	uint8_t b[IW_CRC_LEN];

	(void)state;
	rr__iw_crc_store(b, 0x11223344u);
	assert_int_equal(b[0], 0x44);
	assert_int_equal(b[3], 0x11);
	assert_int_equal(rr__iw_crc_load(b), 0x11223344u);
}

/* -------------------------------------------------------- Read Request */

static void test_read_req_roundtrip(void **state)
{
	struct iw_read_req r = {
		.sink_stag = 0x11223344u,
		.sink_to = 0x0102030405060708ull,
		.size = 0x00010000u,
		.src_stag = 0xa1b2c3d4u,
		.src_to = 0xf0e0d0c0b0a09080ull,
	};
	static const char want[] = "11223344 0102030405060708 00010000"
				   "a1b2c3d4 f0e0d0c0b0a09080";
	uint8_t b[IW_READ_REQ_LEN], w[IW_READ_REQ_LEN];
	struct iw_read_req g;
	uint8_t *c;

	(void)state;
	rr__iw_read_req_encode(&r, b);
	assert_int_equal(unhex(want, w, sizeof(w)), IW_READ_REQ_LEN);
	assert_memory_equal(b, w, IW_READ_REQ_LEN);
	c = exact_copy(b, IW_READ_REQ_LEN);
	assert_int_equal(rr__iw_read_req_decode(c, IW_READ_REQ_LEN, &g), 0);
	free(c);
	assert_int_equal(g.sink_stag, r.sink_stag);
	assert_true(g.sink_to == r.sink_to);
	assert_int_equal(g.size, r.size);
	assert_int_equal(g.src_stag, r.src_stag);
	assert_true(g.src_to == r.src_to);
	c = exact_copy(b, IW_READ_REQ_LEN - 1);
	assert_int_equal(rr__iw_read_req_decode(c, IW_READ_REQ_LEN - 1, &g),
			 -EMSGSIZE);
	free(c);
	assert_int_equal(rr__iw_read_req_decode(b, IW_READ_REQ_LEN + 1, &g),
			 -EMSGSIZE);
}

/* A whole Read Request FPDU as the knfsd capture describes: queue 1, MSN 1. */
static void test_read_req_fpdu(void **state)
{
	struct iw_hdr h = {.last = true,
			   .opcode = IW_OP_READ_REQ,
			   .qn = IW_QN_READ_REQ,
			   .msn = 1,
			   .mpa_len =
				   IW_UNTAGGED_HDR_LEN - 2 + IW_READ_REQ_LEN};
	struct iw_read_req r = {.sink_stag = 7, .size = 4096, .src_stag = 9};
	uint8_t b[IW_UNTAGGED_HDR_LEN + IW_READ_REQ_LEN];
	struct iw_read_req g;
	struct iw_hdr d;

	(void)state;
	rr__iw_hdr_encode(&h, b);
	rr__iw_read_req_encode(&r, b + IW_UNTAGGED_HDR_LEN);
	assert_int_equal(b[3], 0x41);
	assert_int_equal(hdr_decode_exact(b, sizeof(b), &d),
			 IW_UNTAGGED_HDR_LEN);
	assert_int_equal(d.qn, IW_QN_READ_REQ);
	assert_int_equal(iw_hdr_payload_len(&d), IW_READ_REQ_LEN);
	assert_int_equal(iw_fpdu_pad(d.mpa_len), 0);
	assert_int_equal(rr__iw_read_req_decode(b + IW_UNTAGGED_HDR_LEN,
						iw_hdr_payload_len(&d), &g),
			 0);
	assert_int_equal(g.size, 4096);
}

/* ----------------------------------------------------------- Terminate */

static int term_decode_exact(const uint8_t *p, size_t len, struct iw_term *t)
{
	uint8_t *c = exact_copy(p, len);
	int rc = rr__iw_term_decode(c, len, t);

	free(c);
	return rc;
}

static void assert_term_equal(const struct iw_term *a, const struct iw_term *b)
{
	assert_int_equal(a->layer, b->layer);
	assert_int_equal(a->etype, b->etype);
	assert_int_equal(a->ecode, b->ecode);
	assert_int_equal(a->hdr_mpa, b->hdr_mpa);
	assert_int_equal(a->hdr_ddp, b->hdr_ddp);
	assert_int_equal(a->hdr_rdmap, b->hdr_rdmap);
	assert_int_equal(a->hdr_len, b->hdr_len);
	assert_memory_equal(a->hdr, b->hdr, a->hdr_len);
}

static void test_term_ddp_untagged(void **state)
{
	struct iw_hdr bad = {.last = true,
			     .opcode = IW_OP_SEND,
			     .qn = 0,
			     .msn = 99,
			     .mpa_len = 18 + 4};
	struct iw_term t = {
		.layer = IW_TERM_DDP,
		.etype = IW_TERM_DDP_UNTAGGED,
		.ecode = IW_TERM_DDP_U_NO_BUFFER,
		.hdr_mpa = true,
		.hdr_ddp = true,
		.hdr_len = IW_UNTAGGED_HDR_LEN,
	};
	uint8_t b[64];
	struct iw_term g;

	(void)state;
	rr__iw_hdr_encode(&bad, t.hdr);
	assert_int_equal(rr__iw_term_encode(&t, b, sizeof(b)), 24);
	assert_int_equal(b[0], 0x12);
	assert_int_equal(b[1], 0x02);
	assert_int_equal(b[2], 0xc0);
	assert_int_equal(b[3], 0x00);
	assert_memory_equal(b + 4, t.hdr, IW_UNTAGGED_HDR_LEN);
	assert_int_equal(term_decode_exact(b, 24, &g), 0);
	assert_term_equal(&g, &t);
	/* The bits promise 20 header bytes: anything else is malformed. */
	assert_int_equal(term_decode_exact(b, 23, &g), -EMSGSIZE);
	assert_int_equal(term_decode_exact(b, 4, &g), -EMSGSIZE);
	assert_int_equal(term_decode_exact(b, 6, &g), -EMSGSIZE);
	assert_int_equal(rr__iw_term_encode(&t, b, 23), -ENOSPC);
	t.hdr_len = 16;
	assert_int_equal(rr__iw_term_encode(&t, b, sizeof(b)), -EINVAL);
}

static void test_term_ddp_tagged(void **state)
{
	struct iw_hdr bad = {.tagged = true,
			     .opcode = IW_OP_WRITE,
			     .stag = 0x1234,
			     .to = 0x1000,
			     .mpa_len = 14 + 8};
	struct iw_term t = {
		.layer = IW_TERM_DDP,
		.etype = IW_TERM_DDP_TAGGED,
		.ecode = IW_TERM_DDP_T_BASE_BOUNDS,
		.hdr_mpa = true,
		.hdr_ddp = true,
		.hdr_len = IW_TAGGED_HDR_LEN,
	};
	uint8_t b[64];
	struct iw_term g;

	(void)state;
	rr__iw_hdr_encode(&bad, t.hdr);
	assert_int_equal(rr__iw_term_encode(&t, b, sizeof(b)), 20);
	assert_int_equal(b[0], 0x11);
	assert_int_equal(b[1], 0x01);
	assert_int_equal(term_decode_exact(b, 20, &g), 0);
	assert_term_equal(&g, &t);
}

/* Remote protection error on a Read Request: M, D and R, 2 + 18 + 28 bytes. */
static void test_term_rdmap_read_req(void **state)
{
	struct iw_hdr rq = {.last = true,
			    .opcode = IW_OP_READ_REQ,
			    .qn = IW_QN_READ_REQ,
			    .msn = 3,
			    .mpa_len = 18 + IW_READ_REQ_LEN};
	struct iw_read_req r = {.sink_stag = 5, .size = 64, .src_stag = 6};
	struct iw_term t = {
		.layer = IW_TERM_RDMAP,
		.etype = IW_TERM_RDMAP_REMOTE_PROT,
		.ecode = IW_TERM_ECODE_ACCESS_RIGHTS,
		.hdr_mpa = true,
		.hdr_ddp = true,
		.hdr_rdmap = true,
		.hdr_len = IW_UNTAGGED_HDR_LEN + IW_READ_REQ_LEN,
	};
	uint8_t b[64];
	struct iw_term g;

	(void)state;
	rr__iw_hdr_encode(&rq, t.hdr);
	rr__iw_read_req_encode(&r, t.hdr + IW_UNTAGGED_HDR_LEN);
	assert_int_equal(rr__iw_term_encode(&t, b, sizeof(b)), 52);
	assert_int_equal(b[0], 0x01);
	assert_int_equal(b[1], 0x02);
	assert_int_equal(b[2], 0xe0);
	assert_int_equal(term_decode_exact(b, 52, &g), 0);
	assert_term_equal(&g, &t);
	assert_int_equal(term_decode_exact(b, 51, &g), -EMSGSIZE);
}

static void test_term_llp_no_header(void **state)
{
	struct iw_term t = {
		.layer = IW_TERM_LLP,
		.etype = 0,
		.ecode = IW_TERM_LLP_CRC,
	};
	uint8_t b[8];
	struct iw_term g;

	(void)state;
	assert_int_equal(rr__iw_term_encode(&t, b, sizeof(b)), 4);
	assert_int_equal(b[0], 0x20);
	assert_int_equal(b[1], 0x02);
	assert_int_equal(b[2], 0x00);
	assert_int_equal(term_decode_exact(b, 4, &g), 0);
	assert_term_equal(&g, &t);
	/* Header bytes nobody announced. */
	memset(b + 4, 0, 4);
	assert_int_equal(term_decode_exact(b, 8, &g), -EMSGSIZE);
	assert_int_equal(term_decode_exact(b, 3, &g), -EMSGSIZE);
	b[0] = 0x30; /* layer 3 does not exist */
	assert_int_equal(term_decode_exact(b, 4, &g), -EPROTO);
}

/* Error numbers as RFC 5040 section 7 / RFC 5041 section 7 / RFC 6581 set. */
static void test_term_code_values(void **state)
{
	(void)state;
	assert_int_equal(IW_TERM_ECODE_CANT_INVALIDATE, 0x09);
	assert_int_equal(IW_TERM_ECODE_UNSPECIFIED, 0xff);
	assert_int_equal(IW_TERM_DDP_T_VERSION, 0x04);
	assert_int_equal(IW_TERM_DDP_U_VERSION, 0x06);
	assert_int_equal(IW_TERM_LLP_LOST_ALIGN, 0x01);
	assert_int_equal(IW_TERM_LLP_CRC, 0x02);
	assert_int_equal(IW_TERM_LLP_BAD_MARKER, 0x03);
	assert_int_equal(IW_TERM_LLP_INVALID_REQ_RESP, 0x04);
	assert_int_equal(IW_TERM_LLP_LOCAL_CATA, 0x05);
	assert_int_equal(IW_TERM_LLP_INSUFFICIENT_IRD, 0x06);
	assert_int_equal(IW_TERM_LLP_NO_MATCHING_RTR, 0x07);
}

/*
 * Linux siw on x86 writes the control word through a little-endian bitfield:
 * layer in the low nibble, etype in the high one, M/D/R as 0x01/0x02/0x04 of
 * byte 2. With header bits set that layout is recognisable.
 */
static void test_term_siw_le_layout(void **state)
{
	struct iw_hdr bad = {.last = true, .opcode = IW_OP_SEND, .mpa_len = 18};
	uint8_t b[4 + IW_UNTAGGED_HDR_LEN] = {0x21, 0x02, 0x03, 0x00};
	struct iw_term g;

	(void)state;
	rr__iw_hdr_encode(&bad, b + 4);
	assert_int_equal(term_decode_exact(b, sizeof(b), &g), 0);
	assert_int_equal(g.layer, IW_TERM_DDP);
	assert_int_equal(g.etype, IW_TERM_DDP_UNTAGGED);
	assert_int_equal(g.ecode, IW_TERM_DDP_U_NO_BUFFER);
	assert_true(g.hdr_mpa);
	assert_true(g.hdr_ddp);
	assert_false(g.hdr_rdmap);
	assert_int_equal(g.hdr_len, IW_UNTAGGED_HDR_LEN);
}

/*
 * Whole Terminate FPDUs as Linux 6.1's siw (x86) sent them to a raw peer
 * (tests/vm/siw_term_probe.c): after a Send on queue 5, a Write to an
 * unknown STag and a Read Request from one. Each control word is in the
 * bitfield layout; the Read Request one reconstructs the request (M, D
 * and R, 48 header bytes) with a DDP Segment Length of 0.
 */
static void test_term_siw_captured(void **state)
{
	static const struct {
		const char *hex;
		uint8_t layer, etype, ecode;
		bool r;
		uint16_t hdr_len;
	} v[] = {
		{"002a4147 00000000 00000002 00000001 00000000 21010300"
		 "00054143 00000000 00000005 00000001 00000000 00000000",
		 IW_TERM_DDP, IW_TERM_DDP_UNTAGGED, IW_TERM_DDP_U_INVALID_QN,
		 false, IW_UNTAGGED_HDR_LEN},
		{"00264147 00000000 00000002 00000001 00000000 11000300"
		 "0005c140 dead0100 00000000 00000000 00000000",
		 IW_TERM_DDP, IW_TERM_DDP_TAGGED, IW_TERM_DDP_T_INVALID_STAG,
		 false, IW_TAGGED_HDR_LEN},
		{"00464147 00000000 00000002 00000001 00000000 10000700"
		 "00004141 00000000 00000001 00000040 00000000 00001234"
		 "00000000 00000000 00000040 dead0100 00000000 00000000"
		 "00000000",
		 IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_PROT,
		 IW_TERM_ECODE_INVALID_STAG, true,
		 IW_UNTAGGED_HDR_LEN + IW_READ_REQ_LEN},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t b[128];
		size_t n = unhex(v[i].hex, b, sizeof(b));
		struct iw_hdr h;
		struct iw_term g;

		assert_int_equal(rr__iw_hdr_decode(b, n, &h),
				 IW_UNTAGGED_HDR_LEN);
		assert_int_equal(h.opcode, IW_OP_TERMINATE);
		assert_int_equal(h.qn, IW_QN_TERMINATE);
		assert_int_equal(
			2 + h.mpa_len + iw_fpdu_pad(h.mpa_len) + IW_CRC_LEN, n);
		assert_int_equal(term_decode_exact(b + IW_UNTAGGED_HDR_LEN,
						   iw_hdr_payload_len(&h), &g),
				 0);
		assert_int_equal(g.layer, v[i].layer);
		assert_int_equal(g.etype, v[i].etype);
		assert_int_equal(g.ecode, v[i].ecode);
		assert_true(g.hdr_mpa);
		assert_true(g.hdr_ddp);
		assert_int_equal(g.hdr_rdmap, v[i].r);
		assert_int_equal(g.hdr_len, v[i].hdr_len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mpa_nfs_request),
		cmocka_unit_test(test_mpa_rping_request),
		cmocka_unit_test(test_mpa_kernel_reply),
		cmocka_unit_test(test_mpa_p2p_rtr_roundtrip),
		cmocka_unit_test(test_mpa_rev1_plain),
		cmocka_unit_test(test_mpa_decode_rejects),
		cmocka_unit_test(test_mpa_encode_rejects),
		cmocka_unit_test(test_hdr_roundtrip_all_opcodes),
		cmocka_unit_test(test_hdr_short_input),
		cmocka_unit_test(test_hdr_rejects),
		cmocka_unit_test(test_hdr_rejects_early),
		cmocka_unit_test(test_fpdu_null_call),
		cmocka_unit_test(test_fpdu_null_reply),
		cmocka_unit_test(test_fpdu_fsinfo),
		cmocka_unit_test(test_mpa_crc_vector),
		cmocka_unit_test(test_crc_store_load),
		cmocka_unit_test(test_read_req_roundtrip),
		cmocka_unit_test(test_read_req_fpdu),
		cmocka_unit_test(test_term_ddp_untagged),
		cmocka_unit_test(test_term_ddp_tagged),
		cmocka_unit_test(test_term_rdmap_read_req),
		cmocka_unit_test(test_term_llp_no_header),
		cmocka_unit_test(test_term_code_values),
		cmocka_unit_test(test_term_siw_le_layout),
		cmocka_unit_test(test_term_siw_captured),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
