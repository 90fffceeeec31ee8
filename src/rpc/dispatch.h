/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Program dispatch shared by every server transport (RPC-over-RDMA and
 * TCP record marking): one call in, one reply header and results out.
 *

 * The buffers handed to handlers belong to the thread running the call
 * (or, for RDMA, bulk_buf may be the registered buffer the result is
 * written from, which saves a copy).
 *
 * A transport fills a struct rr_svc_req from the message it received
 * (rr__svc_req_parse), points res at a results buffer it owns, calls
 * rr__dispatch, then sends what rr__reply_encode writes (or, for RDMA, moves
 * the DDP-eligible result by RDMA Write instead of inline). Handlers see
 * only the accessors in <rpcrdma/oncrpc.h>, so a program is written once.
 */
#ifndef RR_RPC_DISPATCH_H
#define RR_RPC_DISPATCH_H

#include "base/xdr.h"
#include "rpc/msg.h"

#define RR_PROGTAB_MAX 16

struct rr_svc_req {
	struct rr_call_hdr call;
	const uint8_t *args; /* XDR arguments after the call header */
	size_t args_len;
	const uint8_t *arg_bulk; /* DDP-eligible item pulled apart, or NULL */
	size_t arg_bulk_len;
	/*
	 * The arguments as one XDR stream from args: args_len, or with
	 * arg_bulk (which then follows args in place) and its roundup.
	 */
	size_t args_xdr_len;
	struct rr_cred cred;
	bool has_cred;
	/* results: the transport provides res/res_cap/max_bulk */
	uint8_t *res;
	size_t res_cap;
	size_t max_bulk;
	uint8_t *bulk_buf; /* where a DDP-eligible result may be built */
	size_t bulk_cap;
	size_t res_len;
	const void *res_bulk;
	size_t res_bulk_len;
	bool nowait;	   /* rr__dispatch_nowait is running it */
	uint32_t auth_err; /* set by parse: the call is refused AUTH_ERROR */
	const struct sockaddr *peer;  /* set by the transport, may be NULL */
	const struct sockaddr *local; /* the same, our end */
	/* the connection to call the client back on (rpc/api.h), or NULL */
	struct rr_svc_conn *conn;
};

struct rr_progtab {
	struct rr_svc_prog p[RR_PROGTAB_MAX];
	uint32_t n;
};

/* -ENOSPC when full, -EEXIST when prog/vers is already there. */
int rr__progtab_add(struct rr_progtab *t, const struct rr_svc_prog *p);

/* Whether the call's procedure is one its program keeps in the DRC. */
bool rr__progtab_drc(const struct rr_progtab *t, const struct rr_call_hdr *h);

/*
 * Whether the call's procedure may be tried where handlers must not block
 * (rr_svc_prog.nowait_procs, less any of drc_procs).
 */
bool rr__progtab_nowait(const struct rr_progtab *t,
			const struct rr_call_hdr *h);

/*
 * Decodes the call header of msg and points args at what follows
 * (args_xdr_len = args_len). The transport sets arg_bulk itself. Returns 0
 * or -EBADMSG (not a call: the transport drops it, there is no xid to
 * answer). A call whose credential or verifier is longer than RFC 5531
 * allows parses (0) with auth_err set, so that rr__dispatch answers it
 * AUTH_ERROR as for any bad credential.
 */
int rr__svc_req_parse(struct rr_svc_req *r, const uint8_t *msg, size_t len);

/*
 * Checks RPC version and credentials, finds the procedure and runs it.
 * rh is the reply header to send; when it says MSG_ACCEPTED and SUCCESS,
 * the results are r->res[0..res_len) and then r->res_bulk.
 */
void rr__dispatch(const struct rr_progtab *t, struct rr_svc_req *r,
		  struct rr_reply_hdr *rh);
/*
 * rr__dispatch for a call of rr__progtab_nowait, on a thread that must not
 * block. true: rh is the reply to send, as from rr__dispatch. false: the
 * handler deferred; nothing is to be sent, and a worker runs the call
 * with rr__dispatch (the request as parsed, its results buffers again).
 */
bool rr__dispatch_nowait(const struct rr_progtab *t, struct rr_svc_req *r,
			 struct rr_reply_hdr *rh);

/* Bytes rr__reply_encode needs at most, inline_bulk as it will be passed. */
size_t rr__reply_len(const struct rr_svc_req *r, const struct rr_reply_hdr *rh,
		     bool inline_bulk);
/*
 * Writes the reply: header, then for SUCCESS the results and, when
 * inline_bulk, the DDP-eligible item with its XDR padding. Returns the
 * length or -ENOSPC.
 */
int rr__reply_encode(const struct rr_svc_req *r, const struct rr_reply_hdr *rh,
		     bool inline_bulk, uint8_t *dst, size_t cap);

/*
 * A client serving a call its server made back (rr_rpc_clnt_serve): parses
 * msg, runs the handler with res[0..res_cap) for its results and writes
 * the whole reply, results inline, into out. Returns the reply's length,
 * or -EBADMSG (no call: drop it; there is no xid to answer). A reply too
 * long for out is answered SYSTEM_ERR; a program the client does not
 * serve, PROG_UNAVAIL, as any server does.
 */
int rr__cb_serve(const struct rr_progtab *t, const uint8_t *msg, size_t len,
		 uint8_t *res, size_t res_cap, uint8_t *out, size_t out_cap);
/* The same for a server taking whole calls (UDP), peer the caller's. */
int rr__serve_whole(const struct rr_progtab *t, const struct sockaddr *peer,
		    const uint8_t *msg, size_t len, uint8_t *res,
		    size_t res_cap, uint8_t *out, size_t out_cap);

#endif
