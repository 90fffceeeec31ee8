// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the server's call path without a network
 * (src/rpc/dispatch.c): the peer's RPC message goes through
 * rr__svc_req_parse, rr__dispatch (RPC version, credentials, program,
 * version and procedure lookup, the handler) and rr__reply_encode, as a
 * server transport runs them.
 *
 * The first input byte picks the results buffer's size and whether a
 * DDP-eligible result goes inline; the rest is the message. Checked: a
 * message that parses gets a reply header naming its xid, with the answer
 * RFC 5531 requires for what it carried (RPC_MISMATCH for rpcvers != 2,
 * PROG_UNAVAIL / PROG_MISMATCH with the versions served / PROC_UNAVAIL);
 * the reply fits rr__reply_len exactly, refuses one byte less, and decodes
 * back to the same header. Handlers read their arguments as a real program
 * does, so garbage XDR reaches them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xdr.h"
#include "rpc/dispatch.h"

#define PROG_A 0x20000099u /* versions 2..5 */
#define PROG_B 0x200000aau /* version 1 only */

static void check(int cond)
{
	if (!cond)
		abort();
}

/* ECHO: results are the arguments. */
static uint32_t h_echo(struct rr_svc_req *r, void *arg)
{
	size_t len, cap;
	const void *a = rr_svc_args(r, &len);
	void *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	if (len > cap)
		return RR_GARBAGE_ARGS;
	if (len)
		memcpy(res, a, len);
	return rr_svc_set_res(r, len, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

/* opaque<> argument: a length word and that many bytes, padded. */
static uint32_t h_opaque(struct rr_svc_req *r, void *arg)
{
	size_t len, cap, bcap;
	const uint8_t *a = rr_svc_args(r, &len);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint8_t *bulk = rr_svc_bulk_buf(r, &bcap);
	uint32_t n;

	(void)arg;
	if (len < 4 || cap < 4)
		return RR_GARBAGE_ARGS;
	n = rr_get32(a);
	if (n > len - 4 || len - 4 - n != rr_xdr_pad(n) || n > bcap)
		return RR_GARBAGE_ARGS;
	/* The bytes come back as the DDP-eligible result item. */
	memcpy(bulk, a + 4, n);
	rr_put32(res, n);
	return rr_svc_set_res(r, 4, bulk, n) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

/* WHOAMI: the AUTH_SYS identity dispatch decoded, or nothing. */
static uint32_t h_whoami(struct rr_svc_req *r, void *arg)
{
	const struct rr_cred *c = rr_svc_cred(r);
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	if (!c)
		return rr_svc_set_res(r, 0, NULL, 0) ? RR_SYSTEM_ERR
						     : RR_SUCCESS;
	check(c->ngids <= 16);
	if (cap < 8)
		return RR_SYSTEM_ERR;
	rr_put32(res, c->uid);
	rr_put32(res + 4, c->gid);
	return rr_svc_set_res(r, 8, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static const rr_svc_fn procs_a[] = {NULL, h_echo, h_opaque, h_whoami};
static const rr_svc_fn procs_b[] = {h_echo};

static void progtab(struct rr_progtab *t)
{
	struct rr_svc_prog p = {.prog = PROG_A, .nprocs = 4, .procs = procs_a};

	memset(t, 0, sizeof(*t));
	for (p.vers = 2; p.vers <= 5; p.vers++)
		check(rr__progtab_add(t, &p) == 0);
	p.vers = 3;
	check(rr__progtab_add(t, &p) == -EEXIST);
	p = (struct rr_svc_prog){
		.prog = PROG_B, .vers = 1, .nprocs = 1, .procs = procs_b};
	check(rr__progtab_add(t, &p) == 0);
}

/* What RFC 5531 says the answer must be, where dispatch alone decides. */
static void check_verdict(const struct rr_svc_req *r,
			  const struct rr_reply_hdr *rh)
{
	const struct rr_call_hdr *c = &r->call;

	check(rh->xid == c->xid);
	if (c->rpcvers != RR_RPC_VERSION) {
		check(rh->stat == RR_MSG_DENIED &&
		      rh->reject == RR_RPC_MISMATCH);
		check(rh->mismatch_low == 2 && rh->mismatch_high == 2);
		return;
	}
	if (rh->stat == RR_MSG_DENIED) {
		check(rh->reject == RR_AUTH_ERROR);
		/* an oversized credential or verifier: refused as parsed */
		if (r->auth_err)
			check(rh->auth_error == r->auth_err);
		else
			check(c->cred.flavor != RR_AUTH_NONE);
		return;
	}
	check(!r->auth_err);
	if (c->prog != PROG_A && c->prog != PROG_B) {
		check(rh->accept == RR_PROG_UNAVAIL);
	} else if (c->prog == PROG_A && (c->vers < 2 || c->vers > 5)) {
		check(rh->accept == RR_PROG_MISMATCH);
		check(rh->mismatch_low == 2 && rh->mismatch_high == 5);
	} else if (c->prog == PROG_B && c->vers != 1) {
		check(rh->accept == RR_PROG_MISMATCH);
		check(rh->mismatch_low == 1 && rh->mismatch_high == 1);
	} else if (c->proc >= (c->prog == PROG_A ? 4u : 1u) ||
		   (c->prog == PROG_A && c->proc == 0)) {
		check(rh->accept == RR_PROC_UNAVAIL);
	}
}

static void check_reply(const struct rr_svc_req *r,
			const struct rr_reply_hdr *rh, bool inline_bulk)
{
	size_t want = rr__reply_len(r, rh, inline_bulk);
	uint8_t *out = malloc(want);
	struct rr_reply_hdr back;
	int n;

	check(out != NULL);
	n = rr__reply_encode(r, rh, inline_bulk, out, want);
	check(n > 0 && (size_t)n <= want);
	check(rr__reply_encode(r, rh, inline_bulk, out, (size_t)n - 1) < 0);
	check(rr__reply_hdr_decode(out, (size_t)n, &back) > 0);
	check(back.xid == rh->xid && back.stat == rh->stat);
	if (rh->stat == RR_MSG_ACCEPTED)
		check(back.accept == rh->accept);
	else
		check(back.reject == rh->reject);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t bulk[4096];
	struct rr_progtab t;
	struct rr_svc_req r;
	struct rr_reply_hdr rh;
	uint8_t *res;
	bool inline_bulk;

	if (size < 1)
		return 0;
	progtab(&t);
	memset(&r, 0, sizeof(r));
	/* Exactly-sized heap buffers: ASan sees a handler's overrun. */
	r.res_cap = (size_t)(data[0] & 0x3f) * 16;
	res = malloc(r.res_cap ? r.res_cap : 1);
	check(res != NULL);
	r.res = res;
	r.bulk_buf = bulk;
	r.bulk_cap = sizeof(bulk);
	r.max_bulk = sizeof(bulk);
	inline_bulk = data[0] & 0x40;
	if (rr__svc_req_parse(&r, data + 1, size - 1) == 0) {
		check(r.auth_err ? !r.args && !r.args_len
				 : r.args >= data + 1 &&
					   r.args + r.args_len == data + size);
		rr__dispatch(&t, &r, &rh);
		check_verdict(&r, &rh);
		check(r.res_len <= r.res_cap && r.res_bulk_len <= r.max_bulk);
		check_reply(&r, &rh, inline_bulk);
	}
	free(res);
	return 0;
}
