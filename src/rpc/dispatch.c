/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Program dispatch (RFC 5531 sections 8-9): the decisions every server
 * transport makes the same way, so that RDMA and TCP peers get the same
 * answers: RPC_MISMATCH, AUTH_ERROR, PROG_UNAVAIL, PROG_MISMATCH with the
 * versions we serve, PROC_UNAVAIL, or whatever the handler returns.
 */
#include "rpc/dispatch.h"

#include <errno.h>
#include <string.h>

int rr__progtab_add(struct rr_progtab *t, const struct rr_svc_prog *p)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->p[i].prog == p->prog && t->p[i].vers == p->vers)
			return -EEXIST;
	if (t->n == RR_PROGTAB_MAX)
		return -ENOSPC;
	t->p[t->n++] = *p;
	return 0;
}

bool rr__progtab_drc(const struct rr_progtab *t, const struct rr_call_hdr *h)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->p[i].prog == h->prog && t->p[i].vers == h->vers)
			return h->proc < 64 &&
			       (t->p[i].drc_procs >> h->proc & 1);
	return false;
}

bool rr__progtab_nowait(const struct rr_progtab *t, const struct rr_call_hdr *h)
{
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t m = t->p[i].nowait_procs & ~t->p[i].drc_procs;

		if (t->p[i].prog == h->prog && t->p[i].vers == h->vers)
			return h->proc < 64 && (m >> h->proc & 1);
	}
	return false;
}

int rr__svc_req_parse(struct rr_svc_req *r, const uint8_t *msg, size_t len)
{
	int n = rr__call_hdr_decode(msg, len, &r->call);

	r->auth_err = 0;
	if (n < 0) {
		r->auth_err = rr__call_hdr_bad_auth(msg, len, &r->call);
		if (!r->auth_err)
			return n;
		r->args = NULL; /* answered AUTH_ERROR before any handler */
		r->args_len = 0;
		return 0;
	}
	r->args = msg + n;
	r->args_len = len - (size_t)n;
	r->args_xdr_len = r->args_len;
	return 0;
}

static uint32_t decode_cred(struct rr_svc_req *r)
{
	struct rr_auth_sys a;
	int n;

	r->has_cred = false;
	if (r->call.cred.flavor == RR_AUTH_NONE)
		return RR_AUTH_OK;
	if (r->call.cred.flavor != RR_AUTH_SYS)
		return RR_AUTH_REJECTEDCRED;
	n = rr__auth_sys_decode(r->call.cred.body, r->call.cred.len, &a);
	if (n < 0 || (uint32_t)n != r->call.cred.len)
		return RR_AUTH_BADCRED;
	r->cred =
		(struct rr_cred){.uid = a.uid, .gid = a.gid, .ngids = a.ngids};
	memcpy(r->cred.gids, a.gids, a.ngids * sizeof(a.gids[0]));
	r->has_cred = true;
	return RR_AUTH_OK;
}

/* The entry for prog and vers; lo and hi get the versions served. */
static const struct rr_svc_prog *find_prog(const struct rr_progtab *t,
					   uint32_t prog, uint32_t vers,
					   uint32_t *lo, uint32_t *hi)
{
	const struct rr_svc_prog *hit = NULL;

	*lo = UINT32_MAX;
	*hi = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		const struct rr_svc_prog *p = &t->p[i];

		if (p->prog != prog)
			continue;
		*lo = p->vers < *lo ? p->vers : *lo;
		*hi = p->vers > *hi ? p->vers : *hi;
		if (p->vers == vers)
			hit = p;
	}
	return hit;
}

static uint32_t run_proc(const struct rr_progtab *t, struct rr_svc_req *r,
			 struct rr_reply_hdr *rh)
{
	const struct rr_svc_prog *p;

	p = find_prog(t, r->call.prog, r->call.vers, &rh->mismatch_low,
		      &rh->mismatch_high);
	if (!p) {
		if (rh->mismatch_high == 0)
			return RR_PROG_UNAVAIL;
		return RR_PROG_MISMATCH;
	}
	if (r->call.proc >= p->nprocs || !p->procs[r->call.proc])
		return RR_PROC_UNAVAIL;
	r->res_len = 0;
	r->res_bulk = NULL;
	r->res_bulk_len = 0;
	return p->procs[r->call.proc](r, p->arg);
}

void rr__dispatch(const struct rr_progtab *t, struct rr_svc_req *r,
		  struct rr_reply_hdr *rh)
{
	uint32_t auth;

	memset(rh, 0, sizeof(*rh));
	rh->xid = r->call.xid;
	if (r->call.rpcvers != RR_RPC_VERSION) {
		rh->stat = RR_MSG_DENIED;
		rh->reject = RR_RPC_MISMATCH;
		rh->mismatch_low = rh->mismatch_high = RR_RPC_VERSION;
		return;
	}
	auth = r->auth_err ? r->auth_err : decode_cred(r);
	if (auth != RR_AUTH_OK) {
		rh->stat = RR_MSG_DENIED;
		rh->reject = RR_AUTH_ERROR;
		rh->auth_error = auth;
		return;
	}
	rh->stat = RR_MSG_ACCEPTED;
	rh->accept = run_proc(t, r, rh);
	/* A handler that defers when it was not asked to broke its contract. */
	if (rh->accept == RR_SVC_DEFER && !r->nowait)
		rh->accept = RR_SYSTEM_ERR;
	if (rh->accept != RR_PROG_MISMATCH)
		rh->mismatch_low = rh->mismatch_high = 0;
}

bool rr__dispatch_nowait(const struct rr_progtab *t, struct rr_svc_req *r,
			 struct rr_reply_hdr *rh)
{
	r->nowait = true;
	rr__dispatch(t, r, rh);
	r->nowait = false;
	return !(rh->stat == RR_MSG_ACCEPTED && rh->accept == RR_SVC_DEFER);
}

static size_t bulk_xdr_len(const struct rr_svc_req *r)
{
	return r->res_bulk_len + rr_xdr_pad(r->res_bulk_len);
}

static bool has_results(const struct rr_reply_hdr *rh)
{
	return rh->stat == RR_MSG_ACCEPTED && rh->accept == RR_SUCCESS;
}

size_t rr__reply_len(const struct rr_svc_req *r, const struct rr_reply_hdr *rh,
		     bool inline_bulk)
{
	/* xid, type, stat, verf (8), accept or reject, two more words */
	size_t n = 4 * 8;

	if (has_results(rh))
		n += r->res_len + (inline_bulk ? bulk_xdr_len(r) : 0);
	return n;
}

int rr__reply_encode(const struct rr_svc_req *r, const struct rr_reply_hdr *rh,
		     bool inline_bulk, uint8_t *dst, size_t cap)
{
	int n = rr__reply_hdr_encode(rh, dst, cap);
	size_t len;

	if (n < 0 || !has_results(rh))
		return n;
	len = (size_t)n + r->res_len + (inline_bulk ? bulk_xdr_len(r) : 0);
	if (len > cap)
		return -ENOSPC;
	memcpy(dst + n, r->res, r->res_len);
	n += (int)r->res_len;
	if (inline_bulk && r->res_bulk_len) {
		memcpy(dst + n, r->res_bulk, r->res_bulk_len);
		memset(dst + n + r->res_bulk_len, 0,
		       rr_xdr_pad(r->res_bulk_len));
		n += (int)bulk_xdr_len(r);
	}
	return n;
}

/* ------------------------------------------------------ handler side */

uint32_t rr_svc_req_proc(const struct rr_svc_req *r)
{
	return r->call.proc;
}

uint32_t rr_svc_req_vers(const struct rr_svc_req *r)
{
	return r->call.vers;
}

const struct sockaddr *rr_svc_req_peer(const struct rr_svc_req *r)
{
	return r->peer;
}

const struct sockaddr *rr_svc_req_local(const struct rr_svc_req *r)
{
	return r->local && r->local->sa_family != AF_UNSPEC ? r->local : NULL;
}

bool rr_svc_req_nowait(const struct rr_svc_req *r)
{
	return r->nowait;
}

const void *rr_svc_args(const struct rr_svc_req *r, size_t *len)
{
	*len = r->args_len;
	return r->args;
}

const void *rr_svc_args_xdr(const struct rr_svc_req *r, size_t *len)
{
	*len = r->args_xdr_len;
	return r->args;
}

const void *rr_svc_arg_bulk(const struct rr_svc_req *r, size_t *len)
{
	*len = r->arg_bulk_len;
	return r->arg_bulk;
}

const struct rr_cred *rr_svc_cred(const struct rr_svc_req *r)
{
	return r->has_cred ? &r->cred : NULL;
}

void *rr_svc_res_buf(struct rr_svc_req *r, size_t *cap)
{
	*cap = r->res_cap;
	return r->res;
}

void *rr_svc_bulk_buf(struct rr_svc_req *r, size_t *cap)
{
	*cap = r->bulk_cap;
	return r->bulk_buf;
}

int rr_svc_set_res(struct rr_svc_req *r, size_t res_len, const void *bulk,
		   size_t bulk_len)
{
	if (res_len > r->res_cap || bulk_len > r->max_bulk)
		return -EMSGSIZE;
	r->res_len = res_len;
	r->res_bulk = bulk;
	r->res_bulk_len = bulk_len;
	return 0;
}
