// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ONC RPC version 2 message headers (RFC 5531).
 *
 * Section 9 defines rpc_msg as an xid followed by a union on msg_type: a
 * call_body (rpcvers, prog, vers, proc, cred, verf) or a reply_body, which
 * is itself a union on reply_stat. An accepted_reply carries a verifier
 * and a union on accept_stat whose only arms with data are PROG_MISMATCH
 * (low, high) and SUCCESS (the results, which are not ours to parse); every
 * other accept_stat is "default: void". A rejected_reply is a union on
 * reject_stat with exactly two arms, RPC_MISMATCH (low, high) and
 * AUTH_ERROR (auth_stat), and no default: any other value is malformed.
 * Section 8.2 bounds opaque_auth bodies at 400 bytes; appendix A defines
 * authsys_parms (machinename<255>, gids<16>).
 *
 * XDR (RFC 4506): every item is a multiple of four bytes, big-endian,
 * variable-length opaque data is a 4-byte length then the bytes then zero
 * padding to a multiple of four.
 *
 * Every byte decoded here comes from the peer: each length is checked
 * against its protocol bound before it is used in any arithmetic (so the
 * padded size cannot overflow) and against what remains of the buffer
 * before anything is read. Padding must be present (a message cut inside
 * its padding is short) but its content is not checked, as libtirpc and
 * the kernel do not check it either. Encoders work out the whole size
 * first, so a short buffer fails with nothing written.
 */
#include <errno.h>
#include <string.h>

#include "rpc/call_priv.h"
#include "rpc/msg.h"

/* xid, msg_type, rpcvers, prog, vers, proc: a CALL before its cred. */
#define CALL_FIXED 24
/* xid, msg_type, reply_stat. */
#define REPLY_FIXED 12

static inline uint32_t xdr_pad(uint32_t len)
{
	return (len + 3) & ~3u;
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* ------------------------------------------------------------ decoding */

/* A read cursor: pos never passes len. */
struct xdr_in {
	const uint8_t *buf;
	size_t len;
	size_t pos;
};

static bool in_u32(struct xdr_in *in, uint32_t *v)
{
	if (in->len - in->pos < 4)
		return false;
	*v = get_be32(in->buf + in->pos);
	in->pos += 4;
	return true;
}

/*
 * Variable-length opaque of at most max bytes. The body is not copied:
 * *body points into the buffer (NULL when empty, so a zero-length body
 * never points past the end).
 */
static bool in_opaque(struct xdr_in *in, uint32_t max, uint32_t *len,
		      const uint8_t **body)
{
	uint32_t n;

	if (!in_u32(in, &n) || n > max)
		return false;
	if (in->len - in->pos < xdr_pad(n))
		return false;
	*len = n;
	*body = n ? in->buf + in->pos : NULL;
	in->pos += xdr_pad(n);
	return true;
}

static bool in_auth(struct xdr_in *in, struct rr_opaque_auth *a)
{
	return in_u32(in, &a->flavor) &&
	       in_opaque(in, RR_AUTH_MAX_BODY, &a->len, &a->body);
}

static bool in_call(struct xdr_in *in, struct rr_call_hdr *h)
{
	uint32_t type;

	/*
	 * The body is read with the version 2 layout whatever rpcvers says:
	 * a caller answering RPC_MISMATCH only needs the xid, which
	 * rr__rpc_peek gives it even when the rest does not parse.
	 */
	return in_u32(in, &h->xid) && in_u32(in, &type) &&
	       type == RR_RPC_CALL && in_u32(in, &h->rpcvers) &&
	       in_u32(in, &h->prog) && in_u32(in, &h->vers) &&
	       in_u32(in, &h->proc) && in_auth(in, &h->cred) &&
	       in_auth(in, &h->verf);
}

int rr__call_hdr_decode(const uint8_t *buf, size_t len, struct rr_call_hdr *h)
{
	struct xdr_in in = {.buf = buf, .len = len};

	if (!in_call(&in, h))
		return -EBADMSG;
	return (int)in.pos;
}

/* An opaque_auth whose length word says more than RFC 5531 allows. */
static bool in_auth_oversize(struct xdr_in *in)
{
	uint32_t flavor, n;

	return in_u32(in, &flavor) && in_u32(in, &n) && n > RR_AUTH_MAX_BODY;
}

static bool in_auth_skip(struct xdr_in *in)
{
	struct rr_opaque_auth a;

	return in_auth(in, &a);
}

uint32_t rr__call_hdr_bad_auth(const uint8_t *buf, size_t len,
			       struct rr_call_hdr *h)
{
	struct xdr_in in = {.buf = buf, .len = len};
	uint32_t type;
	struct xdr_in at;

	memset(h, 0, sizeof(*h));
	if (!in_u32(&in, &h->xid) || !in_u32(&in, &type) ||
	    type != RR_RPC_CALL || !in_u32(&in, &h->rpcvers) ||
	    !in_u32(&in, &h->prog) || !in_u32(&in, &h->vers) ||
	    !in_u32(&in, &h->proc))
		return 0;
	at = in;
	if (in_auth_oversize(&at))
		return RR_AUTH_BADCRED;
	if (!in_auth_skip(&in))
		return 0;
	return in_auth_oversize(&in) ? RR_AUTH_BADVERF : 0;
}

static bool in_accepted(struct xdr_in *in, struct rr_reply_hdr *h)
{
	if (!in_auth(in, &h->verf) || !in_u32(in, &h->accept))
		return false;
	/* SUCCESS: the results follow, and are the caller's. */
	if (h->accept != RR_PROG_MISMATCH)
		return true;
	return in_u32(in, &h->mismatch_low) && in_u32(in, &h->mismatch_high);
}

static bool in_denied(struct xdr_in *in, struct rr_reply_hdr *h)
{
	if (!in_u32(in, &h->reject))
		return false;
	switch (h->reject) {
	case RR_RPC_MISMATCH:
		return in_u32(in, &h->mismatch_low) &&
		       in_u32(in, &h->mismatch_high);
	case RR_AUTH_ERROR:
		return in_u32(in, &h->auth_error);
	default:
		return false;
	}
}

static bool in_reply(struct xdr_in *in, struct rr_reply_hdr *h)
{
	uint32_t type;

	if (!in_u32(in, &h->xid) || !in_u32(in, &type) ||
	    type != RR_RPC_REPLY || !in_u32(in, &h->stat))
		return false;
	switch (h->stat) {
	case RR_MSG_ACCEPTED:
		return in_accepted(in, h);
	case RR_MSG_DENIED:
		return in_denied(in, h);
	default:
		return false;
	}
}

int rr__reply_hdr_decode(const uint8_t *buf, size_t len, struct rr_reply_hdr *h)
{
	struct xdr_in in = {.buf = buf, .len = len};

	/* Arms the message does not carry read as zero, not as stale data. */
	*h = (struct rr_reply_hdr){0};
	if (!in_reply(&in, h))
		return -EBADMSG;
	return (int)in.pos;
}

static bool in_auth_sys(struct xdr_in *in, struct rr_auth_sys *a)
{
	const uint8_t *name;

	if (!in_u32(in, &a->stamp) ||
	    !in_opaque(in, RR_AUTH_SYS_MAX_NAME, &a->name_len, &name))
		return false;
	if (a->name_len)
		memcpy(a->name, name, a->name_len);
	a->name[a->name_len] = '\0';
	if (!in_u32(in, &a->uid) || !in_u32(in, &a->gid) ||
	    !in_u32(in, &a->ngids) || a->ngids > RR_AUTH_SYS_MAX_GIDS)
		return false;
	for (uint32_t i = 0; i < a->ngids; i++)
		if (!in_u32(in, &a->gids[i]))
			return false;
	return true;
}

int rr__auth_sys_decode(const uint8_t *body, size_t len, struct rr_auth_sys *a)
{
	struct xdr_in in = {.buf = body, .len = len};

	if (!in_auth_sys(&in, a))
		return -EBADMSG;
	return (int)in.pos;
}

int rr__rpc_peek(const uint8_t *buf, size_t len, uint32_t *xid, uint32_t *type)
{
	if (len < 8)
		return -EBADMSG;
	*xid = get_be32(buf);
	*type = get_be32(buf + 4);
	return 0;
}

/* ------------------------------------------------------------ encoding */

/* Sizes were checked before the first put: these cannot overrun. */
static uint8_t *out_u32(uint8_t *p, uint32_t v)
{
	put_be32(p, v);
	return p + 4;
}

static uint8_t *out_opaque(uint8_t *p, const uint8_t *body, uint32_t len)
{
	uint32_t padded = xdr_pad(len);

	p = out_u32(p, len);
	if (len)
		memcpy(p, body, len);
	memset(p + len, 0, padded - len);
	return p + padded;
}

static uint8_t *out_auth(uint8_t *p, const struct rr_opaque_auth *a)
{
	p = out_u32(p, a->flavor);
	return out_opaque(p, a->body, a->len);
}

/* Wire size of a, or 0 when it cannot be sent. */
static size_t auth_size(const struct rr_opaque_auth *a)
{
	if (a->len > RR_AUTH_MAX_BODY || (a->len && !a->body))
		return 0;
	return 8 + xdr_pad(a->len);
}

int rr__call_hdr_encode(const struct rr_call_hdr *h, uint8_t *buf, size_t cap)
{
	size_t cred = auth_size(&h->cred), verf = auth_size(&h->verf);
	size_t need = CALL_FIXED + cred + verf;
	uint8_t *p = buf;

	if (!cred || !verf)
		return -EINVAL;
	if (cap < need)
		return -ENOSPC;
	p = out_u32(p, h->xid);
	p = out_u32(p, RR_RPC_CALL);
	p = out_u32(p, h->rpcvers);
	p = out_u32(p, h->prog);
	p = out_u32(p, h->vers);
	p = out_u32(p, h->proc);
	p = out_auth(p, &h->cred);
	out_auth(p, &h->verf);
	return (int)need;
}

/* Wire size of the reply_body after reply_stat, or 0 when invalid. */
static size_t reply_arm_size(const struct rr_reply_hdr *h)
{
	size_t verf;

	if (h->stat == RR_MSG_ACCEPTED) {
		verf = auth_size(&h->verf);
		if (!verf)
			return 0;
		return verf + 4 + (h->accept == RR_PROG_MISMATCH ? 8 : 0);
	}
	if (h->stat != RR_MSG_DENIED)
		return 0;
	if (h->reject == RR_RPC_MISMATCH)
		return 4 + 8;
	if (h->reject == RR_AUTH_ERROR)
		return 4 + 4;
	return 0;
}

static void out_accepted(uint8_t *p, const struct rr_reply_hdr *h)
{
	p = out_auth(p, &h->verf);
	p = out_u32(p, h->accept);
	if (h->accept != RR_PROG_MISMATCH)
		return;
	p = out_u32(p, h->mismatch_low);
	out_u32(p, h->mismatch_high);
}

static void out_denied(uint8_t *p, const struct rr_reply_hdr *h)
{
	p = out_u32(p, h->reject);
	if (h->reject == RR_AUTH_ERROR) {
		out_u32(p, h->auth_error);
		return;
	}
	p = out_u32(p, h->mismatch_low);
	out_u32(p, h->mismatch_high);
}

int rr__reply_hdr_encode(const struct rr_reply_hdr *h, uint8_t *buf, size_t cap)
{
	size_t arm = reply_arm_size(h);
	size_t need = REPLY_FIXED + arm;
	uint8_t *p = buf;

	if (!arm)
		return -EINVAL;
	if (cap < need)
		return -ENOSPC;
	p = out_u32(p, h->xid);
	p = out_u32(p, RR_RPC_REPLY);
	p = out_u32(p, h->stat);
	if (h->stat == RR_MSG_ACCEPTED)
		out_accepted(p, h);
	else
		out_denied(p, h);
	return (int)need;
}

int rr__auth_sys_encode(const struct rr_auth_sys *a, uint8_t *buf, size_t cap)
{
	size_t need;
	uint8_t *p = buf;

	if (a->name_len > RR_AUTH_SYS_MAX_NAME ||
	    a->ngids > RR_AUTH_SYS_MAX_GIDS)
		return -EINVAL;
	/* stamp, name length, name, uid, gid, gid count, gids */
	need = 4 + 4 + xdr_pad(a->name_len) + 4 + 4 + 4 + 4 * (size_t)a->ngids;
	if (cap < need)
		return -ENOSPC;
	p = out_u32(p, a->stamp);
	p = out_opaque(p, (const uint8_t *)a->name, a->name_len);
	p = out_u32(p, a->uid);
	p = out_u32(p, a->gid);
	p = out_u32(p, a->ngids);
	for (uint32_t i = 0; i < a->ngids; i++)
		p = out_u32(p, a->gids[i]);
	return (int)need;
}

static int cred_sys_encode(const struct rr_cred *cr, const char *machine,
			   uint8_t *buf, size_t cap)
{
	struct rr_auth_sys a = {.uid = cr->uid, .gid = cr->gid};
	const char *m = cr->machine ? cr->machine : machine;

	a.name_len = (uint32_t)strnlen(m, RR_AUTH_SYS_MAX_NAME);
	memcpy(a.name, m, a.name_len);
	a.ngids = cr->ngids > RR_AUTH_SYS_MAX_GIDS ? RR_AUTH_SYS_MAX_GIDS
						   : cr->ngids;
	memcpy(a.gids, cr->gids, a.ngids * sizeof(a.gids[0]));
	return rr__auth_sys_encode(&a, buf, cap);
}

int rr__call_msg_hdr(const struct rr_call *call, uint32_t xid,
		     const char *machine, uint8_t *buf, size_t cap)
{
	uint8_t cred[RR_AUTH_MAX_BODY];
	struct rr_call_hdr h = {.xid = xid,
				.rpcvers = RR_RPC_VERSION,
				.prog = call->prog,
				.vers = call->vers,
				.proc = call->proc};

	if (call->cred) {
		int n = cred_sys_encode(call->cred, machine, cred,
					sizeof(cred));

		if (n < 0)
			return n;
		h.cred =
			(struct rr_opaque_auth){RR_AUTH_SYS, (uint32_t)n, cred};
	}
	return rr__call_hdr_encode(&h, buf, cap);
}

int rr__reply_take(struct rr_call *call, uint32_t xid, const uint8_t *msg,
		   size_t len)
{
	struct rr_reply_hdr h;
	int n = rr__reply_hdr_decode(msg, len, &h);

	if (n < 0 || h.xid != xid)
		return -EPROTO;
	call->reply_stat = h.stat;
	call->accept_stat = h.accept;
	call->mismatch_low = h.mismatch_low;
	call->mismatch_high = h.mismatch_high;
	call->res_len = 0;
	if (h.stat != RR_MSG_ACCEPTED || h.accept != RR_SUCCESS)
		return -EREMOTEIO;
	if (len - (size_t)n > call->res_cap)
		return -EMSGSIZE;
	if (len > (size_t)n) /* res may be NULL when none is expected */
		memcpy(call->res, msg + n, len - (size_t)n);
	call->res_len = len - (size_t)n;
	return 0;
}

void rr__call_begin(struct rr_call *call, rr_call_done_fn done, void *arg,
		    void *waiter, uint64_t deadline_ms)
{
	call->res_len = call->res_bulk_len = 0;
	call->accept_stat = call->reply_stat = 0;
	call->status = 0;
	rr__call_priv(call)->req = NULL;
	rr__call_priv(call)->next = NULL;
	rr__call_priv(call)->done = done;
	rr__call_priv(call)->arg = arg;
	rr__call_priv(call)->waiter = waiter;
	rr__call_priv(call)->cancel = false;
	rr__call_priv(call)->waited = 0;
	rr__call_priv(call)->deadline_ms = deadline_ms;
}
