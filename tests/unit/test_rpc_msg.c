// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ONC RPC v2 headers: the calls and reply a real kernel put on the wire
 * (/work/shared/wire-vectors.md) decode field by field and re-encode byte
 * for byte; every reply arm round-trips; every truncation, oversized
 * length and wrong message type is refused; encoders refuse short buffers
 * without writing.
 *
 * Decoders get exactly-sized heap copies so that ASan reports any read
 * past len. Built with -DRR_TEST_WITH_TIRPC (and libtirpc's pkg-config
 * flags) it also compares our encodings with libtirpc's xdr_callmsg,
 * xdr_replymsg and xdr_authunix_parms for the same values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "vectors.h"

#include "rpc/msg.h"

#ifdef RR_TEST_WITH_TIRPC
#include <rpc/rpc.h>
#endif

/* NFSv3 NULL call from the first FPDU: AUTH_NONE cred and verifier. */
static const uint8_t null_call[] = {
	0x28, 0x79, 0x55, 0x26, 0x00, 0x00, 0x00, 0x00, /* xid, CALL */
	0x00, 0x00, 0x00, 0x02, 0x00, 0x01, 0x86, 0xa3, /* rpcvers, prog */
	0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, /* vers, proc 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* AUTH_NONE cred */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* AUTH_NONE verf */
};

/* FSINFO call: AUTH_SYS cred of 32 bytes, then an 8-byte file handle. */
#define FSINFO_HDR_LEN 72
static const uint8_t fsinfo_call[] = {
	0x29, 0x79, 0x55, 0x26, 0x00, 0x00, 0x00, 0x00, /* xid, CALL */
	0x00, 0x00, 0x00, 0x02, 0x00, 0x01, 0x86, 0xa3, /* rpcvers, prog */
	0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x13, /* vers, proc 19 */
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x20, /* AUTH_SYS, 32 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, /* stamp, 11 */
	0x76, 0x6d, 0x6c, 0x61, 0x62, 0x2d, 0x67, 0x75, /* "vmlab-gu" */
	0x65, 0x73, 0x74, 0x00, 0x00, 0x00, 0x00, 0x00, /* "est", pad, uid */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* gid, no gids */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* AUTH_NONE verf */
	0x00, 0x00, 0x00, 0x08, 0x01, 0x00, 0x01, 0x00, /* fh<8> */
	0x00, 0x00, 0x00, 0x00,
};

/* The accepted SUCCESS reply to the NULL call. */
static const uint8_t success_reply[] = {
	0x28, 0x79, 0x55, 0x26, 0x00, 0x00, 0x00, 0x01, /* xid, REPLY */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ACCEPTED, verf */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* (len 0), SUCCESS */
};

static size_t words(const uint32_t *w, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		out[4 * i] = (uint8_t)(w[i] >> 24);
		out[4 * i + 1] = (uint8_t)(w[i] >> 16);
		out[4 * i + 2] = (uint8_t)(w[i] >> 8);
		out[4 * i + 3] = (uint8_t)w[i];
	}
	return 4 * n;
}

static void assert_auth_equal(const struct rr_opaque_auth *a,
			      const struct rr_opaque_auth *b)
{
	assert_int_equal(a->flavor, b->flavor);
	assert_int_equal(a->len, b->len);
	if (a->len)
		assert_memory_equal(a->body, b->body, a->len);
}

static void assert_reply_equal(const struct rr_reply_hdr *a,
			       const struct rr_reply_hdr *b)
{
	assert_int_equal(a->xid, b->xid);
	assert_int_equal(a->stat, b->stat);
	assert_auth_equal(&a->verf, &b->verf);
	assert_int_equal(a->accept, b->accept);
	assert_int_equal(a->mismatch_low, b->mismatch_low);
	assert_int_equal(a->mismatch_high, b->mismatch_high);
	assert_int_equal(a->reject, b->reject);
	assert_int_equal(a->auth_error, b->auth_error);
}

static void assert_auth_sys_equal(const struct rr_auth_sys *a,
				  const struct rr_auth_sys *b)
{
	assert_int_equal(a->stamp, b->stamp);
	assert_int_equal(a->name_len, b->name_len);
	assert_memory_equal(a->name, b->name, a->name_len);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_int_equal(a->ngids, b->ngids);
	for (uint32_t i = 0; i < a->ngids; i++)
		assert_int_equal(a->gids[i], b->gids[i]);
}

static int call_decode(const uint8_t *buf, size_t len)
{
	struct rr_call_hdr h;

	return rr__call_hdr_decode(buf, len, &h);
}

static int reply_decode(const uint8_t *buf, size_t len)
{
	struct rr_reply_hdr h;

	return rr__reply_hdr_decode(buf, len, &h);
}

static int auth_sys_decode(const uint8_t *buf, size_t len)
{
	struct rr_auth_sys a;

	return rr__auth_sys_decode(buf, len, &a);
}

/* Decoding msg[0..len) on the heap, exactly sized. */
static int decode_exact(int (*decode)(const uint8_t *, size_t),
			const uint8_t *msg, size_t len)
{
	uint8_t *copy = exact_copy(msg, len);
	int rc = decode(copy, len);

	free(copy);
	return rc;
}

/* Every strict prefix of a full header is short; the whole decodes. */
static void assert_prefixes_rejected(int (*decode)(const uint8_t *, size_t),
				     const uint8_t *msg, size_t full)
{
	for (size_t len = 0; len < full; len++)
		assert_int_equal(decode_exact(decode, msg, len), -EBADMSG);
	assert_int_equal(decode_exact(decode, msg, full), (int)full);
}

/* --------------------------------------------------- the wire vectors */

static void null_call_decodes_field_by_field(void **state)
{
	uint8_t *buf = exact_copy(null_call, sizeof(null_call));
	struct rr_call_hdr h;

	(void)state;
	assert_int_equal(rr__call_hdr_decode(buf, sizeof(null_call), &h), 40);
	assert_int_equal(h.xid, 0x28795526);
	assert_int_equal(h.rpcvers, RR_RPC_VERSION);
	assert_int_equal(h.prog, 100003);
	assert_int_equal(h.vers, 3);
	assert_int_equal(h.proc, 0);
	assert_int_equal(h.cred.flavor, RR_AUTH_NONE);
	assert_int_equal(h.cred.len, 0);
	assert_null(h.cred.body);
	assert_int_equal(h.verf.flavor, RR_AUTH_NONE);
	assert_int_equal(h.verf.len, 0);
	assert_null(h.verf.body);
	free(buf);
}

static void null_call_reencodes_identically(void **state)
{
	struct rr_call_hdr h;
	uint8_t out[64];

	(void)state;
	assert_int_equal(rr__call_hdr_decode(null_call, sizeof(null_call), &h),
			 40);
	assert_int_equal(rr__call_hdr_encode(&h, out, sizeof(out)), 40);
	assert_memory_equal(out, null_call, 40);
}

static void fsinfo_call_decodes_field_by_field(void **state)
{
	uint8_t *buf = exact_copy(fsinfo_call, sizeof(fsinfo_call));
	struct rr_call_hdr h;

	(void)state;
	assert_int_equal(rr__call_hdr_decode(buf, sizeof(fsinfo_call), &h),
			 FSINFO_HDR_LEN);
	assert_int_equal(h.xid, 0x29795526);
	assert_int_equal(h.rpcvers, 2);
	assert_int_equal(h.prog, 100003);
	assert_int_equal(h.vers, 3);
	assert_int_equal(h.proc, 19);
	assert_int_equal(h.cred.flavor, RR_AUTH_SYS);
	assert_int_equal(h.cred.len, 32);
	/* The body is not copied: it is the message's own bytes. */
	assert_ptr_equal(h.cred.body, buf + 32);
	assert_int_equal(h.verf.flavor, RR_AUTH_NONE);
	assert_int_equal(h.verf.len, 0);
	/* The arguments (the file handle) start at the returned length. */
	assert_int_equal(buf[FSINFO_HDR_LEN + 3], 8);
	free(buf);
}

static void fsinfo_auth_sys_decodes_field_by_field(void **state)
{
	uint8_t *body = exact_copy(fsinfo_call + 32, 32);
	struct rr_auth_sys a;

	(void)state;
	memset(&a, 0xa5, sizeof(a));
	assert_int_equal(rr__auth_sys_decode(body, 32, &a), 32);
	assert_int_equal(a.stamp, 0);
	assert_int_equal(a.name_len, 11);
	assert_string_equal(a.name, "vmlab-guest");
	assert_int_equal(a.uid, 0);
	assert_int_equal(a.gid, 0);
	assert_int_equal(a.ngids, 0);
	free(body);
}

static void fsinfo_call_reencodes_identically(void **state)
{
	struct rr_call_hdr h;
	struct rr_auth_sys a;
	uint8_t out[128], cred[64];

	(void)state;
	assert_int_equal(
		rr__call_hdr_decode(fsinfo_call, sizeof(fsinfo_call), &h),
		FSINFO_HDR_LEN);
	assert_int_equal(rr__auth_sys_decode(h.cred.body, h.cred.len, &a), 32);
	assert_int_equal(rr__auth_sys_encode(&a, cred, sizeof(cred)), 32);
	assert_memory_equal(cred, fsinfo_call + 32, 32);
	/* Re-encode from our own credential bytes, not the message's. */
	h.cred.body = cred;
	assert_int_equal(rr__call_hdr_encode(&h, out, sizeof(out)),
			 FSINFO_HDR_LEN);
	assert_memory_equal(out, fsinfo_call, FSINFO_HDR_LEN);
}

static void success_reply_decodes_and_reencodes(void **state)
{
	uint8_t *buf = exact_copy(success_reply, sizeof(success_reply));
	struct rr_reply_hdr h;
	uint8_t out[64];

	(void)state;
	memset(&h, 0xa5, sizeof(h));
	assert_int_equal(rr__reply_hdr_decode(buf, sizeof(success_reply), &h),
			 24);
	assert_int_equal(h.xid, 0x28795526);
	assert_int_equal(h.stat, RR_MSG_ACCEPTED);
	assert_int_equal(h.verf.flavor, RR_AUTH_NONE);
	assert_int_equal(h.verf.len, 0);
	assert_int_equal(h.accept, RR_SUCCESS);
	/* Arms the reply does not carry are zero, not left over. */
	assert_int_equal(h.mismatch_low, 0);
	assert_int_equal(h.mismatch_high, 0);
	assert_int_equal(h.reject, 0);
	assert_int_equal(h.auth_error, 0);
	assert_int_equal(rr__reply_hdr_encode(&h, out, sizeof(out)), 24);
	assert_memory_equal(out, success_reply, 24);
	free(buf);
}

static void peek_reads_xid_and_type_of_any_message(void **state)
{
	uint32_t xid, type;
	uint8_t odd[8] = {1, 2, 3, 4, 0, 0, 0, 7};

	(void)state;
	assert_int_equal(rr__rpc_peek(null_call, 8, &xid, &type), 0);
	assert_int_equal(xid, 0x28795526);
	assert_int_equal(type, RR_RPC_CALL);
	assert_int_equal(
		rr__rpc_peek(success_reply, sizeof(success_reply), &xid, &type),
		0);
	assert_int_equal(type, RR_RPC_REPLY);
	assert_int_equal(rr__rpc_peek(odd, 8, &xid, &type), 0);
	assert_int_equal(xid, 0x01020304);
	assert_int_equal(type, 7);
	for (size_t len = 0; len < 8; len++) {
		uint8_t *buf = exact_copy(null_call, len);

		assert_int_equal(rr__rpc_peek(buf, len, &xid, &type), -EBADMSG);
		free(buf);
	}
}

/* ------------------------------------------------------- round trips */

struct reply_case {
	struct rr_reply_hdr h;
	uint32_t wire[8];
	size_t nwords;
};

#define ACCEPTED(st)                                                           \
	{                                                                      \
		.h = {.xid = 7, .stat = RR_MSG_ACCEPTED, .accept = st},        \
		.wire = {7, 1, 0, 0, 0, st}, .nwords = 6                       \
	}

static const struct reply_case reply_cases[] = {
	ACCEPTED(RR_SUCCESS),
	ACCEPTED(RR_PROG_UNAVAIL),
	{.h = {.xid = 7,
	       .stat = RR_MSG_ACCEPTED,
	       .accept = RR_PROG_MISMATCH,
	       .mismatch_low = 2,
	       .mismatch_high = 4},
	 .wire = {7, 1, 0, 0, 0, 2, 2, 4},
	 .nwords = 8},
	ACCEPTED(RR_PROC_UNAVAIL),
	ACCEPTED(RR_GARBAGE_ARGS),
	ACCEPTED(RR_SYSTEM_ERR),
	/* Outside the enum: the RFC's "default: void" arm. */
	ACCEPTED(6),
	{.h = {.xid = 0xfffffffe,
	       .stat = RR_MSG_DENIED,
	       .reject = RR_RPC_MISMATCH,
	       .mismatch_low = 2,
	       .mismatch_high = 2},
	 .wire = {0xfffffffe, 1, 1, 0, 2, 2},
	 .nwords = 6},
};

static void round_trip_reply(const struct rr_reply_hdr *h, const uint8_t *wire,
			     size_t len)
{
	uint8_t out[64], *buf;
	struct rr_reply_hdr back;

	assert_int_equal(rr__reply_hdr_encode(h, out, sizeof(out)), (int)len);
	assert_memory_equal(out, wire, len);
	buf = exact_copy(out, len);
	assert_int_equal(rr__reply_hdr_decode(buf, len, &back), (int)len);
	assert_reply_equal(h, &back);
	/* Every shorter copy of the same reply is refused. */
	assert_prefixes_rejected(reply_decode, buf, len);
	free(buf);
}

static void every_accepted_and_mismatch_reply_round_trips(void **state)
{
	uint8_t wire[64];

	(void)state;
	for (size_t i = 0; i < sizeof(reply_cases) / sizeof(reply_cases[0]);
	     i++) {
		const struct reply_case *c = &reply_cases[i];

		round_trip_reply(&c->h, wire, words(c->wire, c->nwords, wire));
	}
}

static void auth_error_round_trips_with_each_auth_stat(void **state)
{
	/* RFC 5531 auth_stat: 0-5 remote, 6-7 local, 13-14 RPCSEC_GSS. */
	static const uint32_t stats[] = {
		RR_AUTH_OK,
		RR_AUTH_BADCRED,
		RR_AUTH_REJECTEDCRED,
		RR_AUTH_BADVERF,
		RR_AUTH_REJECTEDVERF,
		RR_AUTH_TOOWEAK,
		6,
		7,
		13,
		14,
	};
	uint8_t wire[64];

	(void)state;
	for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
		struct rr_reply_hdr h = {.xid = 0x28795526,
					 .stat = RR_MSG_DENIED,
					 .reject = RR_AUTH_ERROR,
					 .auth_error = stats[i]};
		uint32_t w[] = {0x28795526, 1, 1, 1, stats[i]};

		round_trip_reply(&h, wire, words(w, 5, wire));
	}
}

static void reply_verifier_body_is_padded_and_round_trips(void **state)
{
	static const uint8_t body[5] = {'a', 'b', 'c', 'd', 'e'};
	struct rr_reply_hdr h = {.xid = 9,
				 .stat = RR_MSG_ACCEPTED,
				 .verf = {.flavor = 6, .len = 5, .body = body},
				 .accept = RR_SUCCESS};
	uint8_t wire[64];
	uint32_t w[] = {9, 1, 0, 6, 5, 0x61626364, 0x65000000, 0};

	(void)state;
	round_trip_reply(&h, wire, words(w, 8, wire));
}

static void call_with_bodies_round_trips(void **state)
{
	static uint8_t cred[RR_AUTH_MAX_BODY], verf[3] = {1, 2, 3};
	struct rr_call_hdr h = {.xid = 1,
				.rpcvers = 2,
				.prog = 100003,
				.vers = 3,
				.proc = 4,
				.cred = {.flavor = 6, .len = 400, .body = cred},
				.verf = {.flavor = 6, .len = 3, .body = verf}},
			   back;
	uint8_t out[512], *buf;
	const int len = 24 + 8 + 400 + 8 + 4;

	(void)state;
	for (size_t i = 0; i < sizeof(cred); i++)
		cred[i] = (uint8_t)(i * 7);
	assert_int_equal(rr__call_hdr_encode(&h, out, sizeof(out)), len);
	assert_int_equal(out[len - 1], 0); /* verifier padding */
	buf = exact_copy(out, len);
	assert_int_equal(rr__call_hdr_decode(buf, len, &back), len);
	assert_int_equal(back.xid, 1);
	assert_int_equal(back.proc, 4);
	assert_auth_equal(&h.cred, &back.cred);
	assert_auth_equal(&h.verf, &back.verf);
	assert_prefixes_rejected(call_decode, buf, len);
	free(buf);
}

static void auth_sys_at_its_limits_round_trips(void **state)
{
	struct rr_auth_sys a = {.stamp = 0x5eed,
				.name_len = RR_AUTH_SYS_MAX_NAME,
				.uid = 1000,
				.gid = 100,
				.ngids = RR_AUTH_SYS_MAX_GIDS},
			   back;
	uint8_t out[512], *buf;
	const int len = 4 + 4 + 256 + 4 + 4 + 4 + 4 * 16;

	(void)state;
	memset(a.name, 'n', RR_AUTH_SYS_MAX_NAME);
	a.name[7] = '\0'; /* name_len, not a NUL, ends the name */
	for (uint32_t i = 0; i < RR_AUTH_SYS_MAX_GIDS; i++)
		a.gids[i] = 0x10000 + i;
	assert_int_equal(rr__auth_sys_encode(&a, out, sizeof(out)), len);
	buf = exact_copy(out, len);
	assert_int_equal(rr__auth_sys_decode(buf, len, &back), len);
	assert_auth_sys_equal(&a, &back);
	assert_int_equal(back.name[RR_AUTH_SYS_MAX_NAME], '\0');
	assert_prefixes_rejected(auth_sys_decode, buf, len);
	free(buf);
}

static void auth_sys_with_empty_name_round_trips(void **state)
{
	struct rr_auth_sys a = {.stamp = 1,
				.uid = 2,
				.gid = 3,
				.ngids = 1,
				.gids = {4}},
			   back;
	uint8_t out[64];
	uint8_t wire[64];
	uint32_t w[] = {1, 0, 2, 3, 1, 4};

	(void)state;
	assert_int_equal(rr__auth_sys_encode(&a, out, sizeof(out)), 24);
	assert_memory_equal(out, wire, words(w, 6, wire));
	assert_int_equal(rr__auth_sys_decode(out, 24, &back), 24);
	assert_auth_sys_equal(&a, &back);
	assert_string_equal(back.name, "");
}

/* ------------------------------------------------------- rejections */

static void every_truncated_vector_is_rejected(void **state)
{
	(void)state;
	assert_prefixes_rejected(call_decode, null_call, sizeof(null_call));
	assert_prefixes_rejected(call_decode, fsinfo_call, FSINFO_HDR_LEN);
	assert_prefixes_rejected(reply_decode, success_reply,
				 sizeof(success_reply));
	assert_prefixes_rejected(auth_sys_decode, fsinfo_call + 32, 32);
}

/* A NULL call whose cred claims len, followed by room bytes. */
static size_t call_claiming(uint32_t len, size_t room, uint8_t *out)
{
	uint32_t w[] = {1, 0, 2, 100003, 3, 0, 1, len};
	size_t n = words(w, 8, out);

	memset(out + n, 0, room);
	return n + room;
}

static void auth_body_over_400_bytes_is_rejected(void **state)
{
	static uint8_t msg[1024];
	size_t len;

	(void)state;
	/* 400 is the RFC's bound and decodes... */
	len = call_claiming(400, 400 + 8, msg);
	assert_int_equal(decode_exact(call_decode, msg, len), (int)len);
	/* ...401 is refused although the buffer holds it. */
	len = call_claiming(401, 404 + 8, msg);
	assert_int_equal(decode_exact(call_decode, msg, len), -EBADMSG);
	/* The same bound holds for a verifier, in a call and in a reply. */
	len = call_claiming(0, 8, msg);
	msg[38] = 0x01;
	msg[39] = 0x91; /* verf len 401 */
	memset(msg + len, 0, 404);
	assert_int_equal(decode_exact(call_decode, msg, len + 404), -EBADMSG);
	{
		uint32_t w[] = {1, 1, 0, 0, 401};

		len = words(w, 5, msg);
		memset(msg + len, 0, 408);
		assert_int_equal(decode_exact(reply_decode, msg, len + 408),
				 -EBADMSG);
	}
}

static void auth_body_longer_than_buffer_is_rejected(void **state)
{
	static const uint32_t claims[] = {17, 100, 0x7fffffff, 0xfffffffd,
					  0xffffffff};
	uint8_t msg[64];

	(void)state;
	for (size_t i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
		size_t len = call_claiming(claims[i], 8 + 8, msg);

		assert_int_equal(decode_exact(call_decode, msg, len), -EBADMSG);
	}
	/* Body present but its padding is not: still short. */
	assert_int_equal(
		decode_exact(call_decode, msg, call_claiming(1, 1, msg)),
		-EBADMSG);
}

static void wrong_message_type_is_rejected(void **state)
{
	uint8_t msg[64];

	(void)state;
	assert_int_equal(
		decode_exact(call_decode, success_reply, sizeof(success_reply)),
		-EBADMSG);
	assert_int_equal(
		decode_exact(reply_decode, null_call, sizeof(null_call)),
		-EBADMSG);
	memcpy(msg, null_call, sizeof(null_call));
	msg[7] = 2;
	assert_int_equal(decode_exact(call_decode, msg, sizeof(null_call)),
			 -EBADMSG);
	/*
	 * A call's layout marked REPLY: it would parse as a call, so only
	 * the type tells (a reverse-direction reply the server never asked
	 * for must not run as a call).
	 */
	msg[7] = 1;
	assert_int_equal(decode_exact(call_decode, msg, sizeof(null_call)),
			 -EBADMSG);
	memcpy(msg, success_reply, sizeof(success_reply));
	msg[7] = 2;
	assert_int_equal(decode_exact(reply_decode, msg, sizeof(success_reply)),
			 -EBADMSG);
}

static void unknown_reply_and_reject_stat_are_rejected(void **state)
{
	uint32_t bad_stat[] = {1, 1, 2, 0, 0, 0};
	uint32_t bad_reject[] = {1, 1, 1, 2, 0, 0};
	uint8_t msg[64];

	(void)state;
	assert_int_equal(
		decode_exact(reply_decode, msg, words(bad_stat, 6, msg)),
		-EBADMSG);
	assert_int_equal(
		decode_exact(reply_decode, msg, words(bad_reject, 6, msg)),
		-EBADMSG);
}

static void other_rpc_version_is_returned_as_sent(void **state)
{
	uint8_t msg[64];
	struct rr_call_hdr h;

	(void)state;
	memcpy(msg, null_call, sizeof(null_call));
	msg[11] = 3;
	assert_int_equal(rr__call_hdr_decode(msg, sizeof(null_call), &h), 40);
	assert_int_equal(h.rpcvers, 3);
}

/*
 * An AUTH_SYS body whose name claims name_len (all present) and whose gid
 * count claims ngids, of which present are there.
 */
static size_t auth_sys_claiming(uint32_t name_len, uint32_t ngids,
				uint32_t present, uint8_t *out)
{
	uint32_t head[] = {0, name_len}, tail[] = {0, 0, ngids};
	size_t n = words(head, 2, out);

	memset(out + n, 'x', (name_len + 3) & ~3u);
	n += (name_len + 3) & ~3u;
	n += words(tail, 3, out + n);
	memset(out + n, 0, 4 * present);
	return n + 4 * present;
}

static void auth_sys_over_its_limits_is_rejected(void **state)
{
	static uint8_t msg[512];

	(void)state;
	assert_int_equal(decode_exact(auth_sys_decode, msg,
				      auth_sys_claiming(255, 16, 16, msg)),
			 4 + 4 + 256 + 12 + 64);
	assert_int_equal(decode_exact(auth_sys_decode, msg,
				      auth_sys_claiming(256, 0, 0, msg)),
			 -EBADMSG);
	assert_int_equal(decode_exact(auth_sys_decode, msg,
				      auth_sys_claiming(0, 17, 17, msg)),
			 -EBADMSG);
	assert_int_equal(decode_exact(auth_sys_decode, msg,
				      auth_sys_claiming(0, 0xffffffff, 2, msg)),
			 -EBADMSG);
}

/* ------------------------------------------------------- encoders */

/*
 * Every cap below the size fails with -ENOSPC on an exactly-sized heap
 * buffer (ASan sees any write past it) that is left untouched.
 */
static void assert_short_caps_refused(int (*encode)(const void *, uint8_t *,
						    size_t),
				      const void *obj, size_t need)
{
	for (size_t cap = 0; cap < need; cap++) {
		uint8_t *buf = malloc(cap ? cap : 1), *clean = malloc(cap + 1);

		assert_non_null(buf);
		assert_non_null(clean);
		memset(buf, 0xa5, cap);
		memset(clean, 0xa5, cap);
		assert_int_equal(encode(obj, buf, cap), -ENOSPC);
		assert_memory_equal(buf, clean, cap);
		free(buf);
		free(clean);
	}
}

static int call_encode(const void *h, uint8_t *buf, size_t cap)
{
	return rr__call_hdr_encode(h, buf, cap);
}

static int reply_encode(const void *h, uint8_t *buf, size_t cap)
{
	return rr__reply_hdr_encode(h, buf, cap);
}

static int auth_sys_encode(const void *a, uint8_t *buf, size_t cap)
{
	return rr__auth_sys_encode(a, buf, cap);
}

static void encoders_refuse_short_buffers(void **state)
{
	static const uint8_t verf[5];
	struct rr_call_hdr call;
	struct rr_auth_sys sys;

	(void)state;
	assert_int_equal(
		rr__call_hdr_decode(fsinfo_call, sizeof(fsinfo_call), &call),
		FSINFO_HDR_LEN);
	assert_int_equal(rr__auth_sys_decode(call.cred.body, 32, &sys), 32);
	assert_short_caps_refused(call_encode, &call, FSINFO_HDR_LEN);
	assert_short_caps_refused(auth_sys_encode, &sys, 32);
	for (size_t i = 0; i < sizeof(reply_cases) / sizeof(reply_cases[0]);
	     i++)
		assert_short_caps_refused(reply_encode, &reply_cases[i].h,
					  4 * reply_cases[i].nwords);
	{
		struct rr_reply_hdr h = {.stat = RR_MSG_DENIED,
					 .reject = RR_AUTH_ERROR};
		struct rr_reply_hdr v = {.verf = {.len = 5, .body = verf}};

		assert_short_caps_refused(reply_encode, &h, 20);
		assert_short_caps_refused(reply_encode, &v, 32);
	}
}

static void encoders_refuse_invalid_values(void **state)
{
	static const uint8_t big[RR_AUTH_MAX_BODY + 1];
	struct rr_call_hdr call = {.rpcvers = 2};
	struct rr_reply_hdr reply = {.stat = RR_MSG_ACCEPTED};
	struct rr_auth_sys sys = {0};
	uint8_t out[1024];

	(void)state;
	call.cred = (struct rr_opaque_auth){.len = 401, .body = big};
	assert_int_equal(rr__call_hdr_encode(&call, out, sizeof(out)), -EINVAL);
	call.cred = (struct rr_opaque_auth){0};
	call.verf = (struct rr_opaque_auth){.len = 401, .body = big};
	assert_int_equal(rr__call_hdr_encode(&call, out, sizeof(out)), -EINVAL);
	call.verf = (struct rr_opaque_auth){.len = 1, .body = NULL};
	assert_int_equal(rr__call_hdr_encode(&call, out, sizeof(out)), -EINVAL);
	/* -EINVAL wins over -ENOSPC: the values are wrong at any size. */
	assert_int_equal(rr__call_hdr_encode(&call, out, 0), -EINVAL);

	reply.verf = (struct rr_opaque_auth){.len = 401, .body = big};
	assert_int_equal(rr__reply_hdr_encode(&reply, out, sizeof(out)),
			 -EINVAL);
	reply = (struct rr_reply_hdr){.stat = 2};
	assert_int_equal(rr__reply_hdr_encode(&reply, out, sizeof(out)),
			 -EINVAL);
	reply = (struct rr_reply_hdr){.stat = RR_MSG_DENIED, .reject = 2};
	assert_int_equal(rr__reply_hdr_encode(&reply, out, sizeof(out)),
			 -EINVAL);

	sys.name_len = RR_AUTH_SYS_MAX_NAME + 1;
	assert_int_equal(rr__auth_sys_encode(&sys, out, sizeof(out)), -EINVAL);
	sys.name_len = 0;
	sys.ngids = RR_AUTH_SYS_MAX_GIDS + 1;
	assert_int_equal(rr__auth_sys_encode(&sys, out, sizeof(out)), -EINVAL);
}

/* ------------------------------------------- libtirpc's own encoder */

#ifdef RR_TEST_WITH_TIRPC
static size_t tirpc_encode(bool_t (*proc)(XDR *, struct rpc_msg *),
			   struct rpc_msg *m, uint8_t *out, size_t cap)
{
	XDR x;
	size_t len;

	xdrmem_create(&x, (char *)out, (u_int)cap, XDR_ENCODE);
	assert_true(proc(&x, m));
	len = xdr_getpos(&x);
	xdr_destroy(&x);
	return len;
}

static void call_encodings_match_libtirpc(void **state)
{
	gid_t gids[3] = {10, 20, 30};
	struct authunix_parms parms = {.aup_time = 0x5eed,
				       .aup_machname = "vmlab-guest",
				       .aup_uid = 1000,
				       .aup_gid = 100,
				       .aup_len = 3,
				       .aup_gids = gids};
	struct rr_auth_sys sys = {.stamp = 0x5eed,
				  .name_len = 11,
				  .name = "vmlab-guest",
				  .uid = 1000,
				  .gid = 100,
				  .ngids = 3,
				  .gids = {10, 20, 30}};
	uint8_t theirs[512], ours[512], cred[512];
	struct rpc_msg m = {0};
	struct rr_call_hdr h = {.xid = 0x29795526,
				.rpcvers = 2,
				.prog = 100003,
				.vers = 3,
				.proc = 19};
	XDR x;
	int n, clen;

	(void)state;
	xdrmem_create(&x, (char *)theirs, sizeof(theirs), XDR_ENCODE);
	assert_true(xdr_authunix_parms(&x, &parms));
	clen = rr__auth_sys_encode(&sys, cred, sizeof(cred));
	assert_int_equal(clen, (int)xdr_getpos(&x));
	assert_memory_equal(cred, theirs, clen);
	xdr_destroy(&x);

	m.rm_xid = h.xid;
	m.rm_direction = CALL;
	m.rm_call.cb_rpcvers = 2;
	m.rm_call.cb_prog = h.prog;
	m.rm_call.cb_vers = h.vers;
	m.rm_call.cb_proc = h.proc;
	m.rm_call.cb_cred =
		(struct opaque_auth){AUTH_SYS, (caddr_t)cred, (u_int)clen};
	m.rm_call.cb_verf = _null_auth;
	h.cred = (struct rr_opaque_auth){RR_AUTH_SYS, (uint32_t)clen, cred};
	n = rr__call_hdr_encode(&h, ours, sizeof(ours));
	assert_int_equal(
		n, (int)tirpc_encode(xdr_callmsg, &m, theirs, sizeof(theirs)));
	assert_memory_equal(ours, theirs, n);
}

/* ar_vers and ar_results share a union: set only the arm sent. */
static void set_accepted_arm(struct accepted_reply *ar,
			     const struct rr_reply_hdr *h)
{
	if (h->accept == RR_PROG_MISMATCH) {
		ar->ar_vers.low = h->mismatch_low;
		ar->ar_vers.high = h->mismatch_high;
		return;
	}
	ar->ar_results.where = NULL;
	/* Through void (*)(void): xdr_void takes no arguments. */
	ar->ar_results.proc = (xdrproc_t)(void (*)(void))xdr_void;
}

static void reply_encodings_match_libtirpc(void **state)
{
	uint8_t theirs[128], ours[128];

	(void)state;
	for (size_t i = 0; i < sizeof(reply_cases) / sizeof(reply_cases[0]);
	     i++) {
		const struct rr_reply_hdr *h = &reply_cases[i].h;
		struct rpc_msg m = {.rm_xid = h->xid, .rm_direction = REPLY};
		int n;

		m.rm_reply.rp_stat = h->stat;
		if (h->stat == RR_MSG_ACCEPTED) {
			m.rm_reply.rp_acpt.ar_verf = _null_auth;
			m.rm_reply.rp_acpt.ar_stat = h->accept;
			set_accepted_arm(&m.rm_reply.rp_acpt, h);
		} else {
			m.rm_reply.rp_rjct.rj_stat = h->reject;
			m.rm_reply.rp_rjct.rj_vers.low = h->mismatch_low;
			m.rm_reply.rp_rjct.rj_vers.high = h->mismatch_high;
		}
		n = rr__reply_hdr_encode(h, ours, sizeof(ours));
		assert_int_equal(n, (int)tirpc_encode(xdr_replymsg, &m, theirs,
						      sizeof(theirs)));
		assert_memory_equal(ours, theirs, n);
	}
	for (uint32_t why = 0; why <= 7; why++) {
		struct rr_reply_hdr h = {.xid = 3,
					 .stat = RR_MSG_DENIED,
					 .reject = RR_AUTH_ERROR,
					 .auth_error = why};
		struct rpc_msg m = {.rm_xid = 3, .rm_direction = REPLY};
		int n;

		m.rm_reply.rp_stat = MSG_DENIED;
		m.rm_reply.rp_rjct.rj_stat = AUTH_ERROR;
		m.rm_reply.rp_rjct.rj_why = why;
		n = rr__reply_hdr_encode(&h, ours, sizeof(ours));
		assert_int_equal(n, (int)tirpc_encode(xdr_replymsg, &m, theirs,
						      sizeof(theirs)));
		assert_memory_equal(ours, theirs, n);
	}
}
#define TIRPC_TESTS                                                            \
	cmocka_unit_test(call_encodings_match_libtirpc),                       \
		cmocka_unit_test(reply_encodings_match_libtirpc),
#else
#define TIRPC_TESTS
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(null_call_decodes_field_by_field),
		cmocka_unit_test(null_call_reencodes_identically),
		cmocka_unit_test(fsinfo_call_decodes_field_by_field),
		cmocka_unit_test(fsinfo_auth_sys_decodes_field_by_field),
		cmocka_unit_test(fsinfo_call_reencodes_identically),
		cmocka_unit_test(success_reply_decodes_and_reencodes),
		cmocka_unit_test(peek_reads_xid_and_type_of_any_message),
		cmocka_unit_test(every_accepted_and_mismatch_reply_round_trips),
		cmocka_unit_test(auth_error_round_trips_with_each_auth_stat),
		cmocka_unit_test(reply_verifier_body_is_padded_and_round_trips),
		cmocka_unit_test(call_with_bodies_round_trips),
		cmocka_unit_test(auth_sys_at_its_limits_round_trips),
		cmocka_unit_test(auth_sys_with_empty_name_round_trips),
		cmocka_unit_test(every_truncated_vector_is_rejected),
		cmocka_unit_test(auth_body_over_400_bytes_is_rejected),
		cmocka_unit_test(auth_body_longer_than_buffer_is_rejected),
		cmocka_unit_test(wrong_message_type_is_rejected),
		cmocka_unit_test(unknown_reply_and_reject_stat_are_rejected),
		cmocka_unit_test(other_rpc_version_is_returned_as_sent),
		cmocka_unit_test(auth_sys_over_its_limits_is_rejected),
		cmocka_unit_test(encoders_refuse_short_buffers),
		cmocka_unit_test(encoders_refuse_invalid_values),
		TIRPC_TESTS};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
