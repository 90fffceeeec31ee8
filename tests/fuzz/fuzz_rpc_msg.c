// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the ONC RPC v2 headers (src/rpc/msg.c).
 *
 * The input is tried as a call header, a reply header and an AUTH_SYS
 * body (and, for a call with an AUTH_SYS credential, its credential).
 * ASan/UBSan catch reads past the input; beyond that, whatever decodes
 * must re-encode to the same length and decode again to the same values,
 * or we abort. Bytes need not match: padding is not checked on decode and
 * is zero on encode.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/msg.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

static void check_auth(const struct rr_opaque_auth *a,
		       const struct rr_opaque_auth *b)
{
	check(a->flavor == b->flavor && a->len == b->len);
	check(a->len <= RR_AUTH_MAX_BODY);
	check(!a->len || !memcmp(a->body, b->body, a->len));
}

static void check_auth_sys(const struct rr_auth_sys *a,
			   const struct rr_auth_sys *b)
{
	check(a->stamp == b->stamp && a->name_len == b->name_len);
	check(a->name_len <= RR_AUTH_SYS_MAX_NAME);
	check(!memcmp(a->name, b->name, a->name_len));
	check(b->name[b->name_len] == '\0');
	check(a->uid == b->uid && a->gid == b->gid && a->ngids == b->ngids);
	check(a->ngids <= RR_AUTH_SYS_MAX_GIDS);
	check(!memcmp(a->gids, b->gids, a->ngids * sizeof(a->gids[0])));
}

/* Encodes into an exactly-sized heap buffer: ASan sees any overrun. */
static uint8_t *exact_buf(int n)
{
	uint8_t *p = malloc(n > 0 ? (size_t)n : 1);

	check(p != NULL);
	return p;
}

static void fuzz_auth_sys(const uint8_t *data, size_t size)
{
	struct rr_auth_sys a, b;
	uint8_t *out;
	int n;

	n = rr__auth_sys_decode(data, size, &a);
	if (n < 0)
		return;
	check((size_t)n <= size);
	out = exact_buf(n);
	check(rr__auth_sys_encode(&a, out, (size_t)n) == n);
	check(rr__auth_sys_encode(&a, out, (size_t)n - 1) == -ENOSPC);
	check(rr__auth_sys_decode(out, (size_t)n, &b) == n);
	check_auth_sys(&a, &b);
	free(out);
}

static void fuzz_call(const uint8_t *data, size_t size)
{
	struct rr_call_hdr a, b;
	uint8_t *out;
	int n;

	n = rr__call_hdr_decode(data, size, &a);
	if (n < 0)
		return;
	check((size_t)n <= size);
	out = exact_buf(n);
	check(rr__call_hdr_encode(&a, out, (size_t)n) == n);
	check(rr__call_hdr_encode(&a, out, (size_t)n - 1) == -ENOSPC);
	check(rr__call_hdr_decode(out, (size_t)n, &b) == n);
	check(a.xid == b.xid && a.rpcvers == b.rpcvers && a.prog == b.prog &&
	      a.vers == b.vers && a.proc == b.proc);
	check_auth(&a.cred, &b.cred);
	check_auth(&a.verf, &b.verf);
	if (a.cred.flavor == RR_AUTH_SYS)
		fuzz_auth_sys(a.cred.body, a.cred.len);
	free(out);
}

static void fuzz_reply(const uint8_t *data, size_t size)
{
	struct rr_reply_hdr a, b;
	uint8_t *out;
	int n;

	n = rr__reply_hdr_decode(data, size, &a);
	if (n < 0)
		return;
	check((size_t)n <= size);
	out = exact_buf(n);
	check(rr__reply_hdr_encode(&a, out, (size_t)n) == n);
	check(rr__reply_hdr_encode(&a, out, (size_t)n - 1) == -ENOSPC);
	check(rr__reply_hdr_decode(out, (size_t)n, &b) == n);
	check(a.xid == b.xid && a.stat == b.stat && a.accept == b.accept);
	check(a.mismatch_low == b.mismatch_low &&
	      a.mismatch_high == b.mismatch_high);
	check(a.reject == b.reject && a.auth_error == b.auth_error);
	check_auth(&a.verf, &b.verf);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t xid, type;

	if (rr__rpc_peek(data, size, &xid, &type) == 0)
		check(size >= 8);
	else
		check(size < 8);
	fuzz_call(data, size);
	fuzz_reply(data, size);
	fuzz_auth_sys(data, size);
	return 0;
}
