/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC version 2 message headers (RFC 5531 sections 8-9): call and
 * reply headers, opaque_auth, AUTH_SYS credentials. Encoded and decoded in
 * place, without allocation; decoders bounds-check everything. Program
 * arguments and results are not here: they are XDR of their own program
 * (libtirpc XDR streams or rpcgen output).
 */
#ifndef RR_RPC_MSG_H
#define RR_RPC_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rpcrdma/oncrpc.h> /* reply/accept/reject/auth status codes */

#define RR_RPC_VERSION	 2
#define RR_AUTH_MAX_BODY 400 /* RFC 5531: opaque_auth body <= 400 bytes */

enum rr_msg_type { RR_RPC_CALL = 0, RR_RPC_REPLY = 1 };

struct rr_opaque_auth {
	uint32_t flavor;
	uint32_t len;
	const uint8_t *body; /* decode: into the message; NULL if len 0 */
};

#define RR_AUTH_SYS_MAX_NAME 255
#define RR_AUTH_SYS_MAX_GIDS 16
struct rr_auth_sys {
	uint32_t stamp;
	uint32_t name_len;
	char name[RR_AUTH_SYS_MAX_NAME + 1];
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[RR_AUTH_SYS_MAX_GIDS];
};

struct rr_call_hdr {
	uint32_t xid;
	uint32_t rpcvers;
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	struct rr_opaque_auth cred;
	struct rr_opaque_auth verf;
};

struct rr_reply_hdr {
	uint32_t xid;
	uint32_t stat; /* enum rr_reply_stat */
	/* accepted */
	struct rr_opaque_auth verf;
	uint32_t accept;		      /* enum rr_accept_stat */
	uint32_t mismatch_low, mismatch_high; /* PROG_MISMATCH, RPC_MISMATCH */
	/* denied */
	uint32_t reject;     /* enum rr_reject_stat */
	uint32_t auth_error; /* enum rr_auth_stat */
};

/*
 * Returns bytes written, -ENOSPC (nothing written) or -EINVAL (an auth body
 * over 400 bytes, or a nonzero len with a NULL body). rpcvers is written
 * as given.
 */
int rr__call_hdr_encode(const struct rr_call_hdr *h, uint8_t *buf, size_t cap);
/*
 * Returns the header length (arguments start there) or -EBADMSG (short,
 * not a CALL, auth body too long). rpcvers is returned as sent: the caller
 * answers RPC_MISMATCH when it is not 2.
 */
int rr__call_hdr_decode(const uint8_t *buf, size_t len, struct rr_call_hdr *h);
/*
 * For a message rr__call_hdr_decode refused: RR_AUTH_BADCRED or
 * RR_AUTH_BADVERF when it is a call whose credential or verifier length
 * word exceeds RFC 5531's 400 bytes (such a call is answered AUTH_ERROR,
 * not dropped), with h's xid, rpcvers, prog, vers and proc decoded; else 0.
 */
uint32_t rr__call_hdr_bad_auth(const uint8_t *buf, size_t len,
			       struct rr_call_hdr *h);

/*
 * Encodes the reply header; results follow for an accepted SUCCESS. Only
 * the fields of the arm that stat/accept/reject select are written. Returns
 * bytes written, -ENOSPC (nothing written) or -EINVAL (a verifier as
 * rr__call_hdr_encode rejects, stat not ACCEPTED/DENIED, or reject not
 * RPC_MISMATCH/AUTH_ERROR). An accept_stat outside the enum is sent with
 * no data (RFC 5531 "default: void").
 */
int rr__reply_hdr_encode(const struct rr_reply_hdr *h, uint8_t *buf,
			 size_t cap);
/*
 * Returns the header length (results start there) or -EBADMSG (short, not
 * a REPLY, verifier body too long, unknown reply_stat or reject_stat). The
 * fields of arms not present are zeroed; an unknown accept_stat decodes
 * with no data, as the RFC's default arm says.
 */
int rr__reply_hdr_decode(const uint8_t *buf, size_t len,
			 struct rr_reply_hdr *h);

/*
 * AUTH_SYS body (RFC 5531 appendix A). Encode returns bytes written,
 * -EINVAL (name_len > 255 or ngids > 16) or -ENOSPC. Decode copies the name
 * and NUL-terminates it (name_len is authoritative: the name may hold NULs)
 * and returns the bytes it used, or -EBADMSG (short, name over 255 bytes,
 * over 16 gids); the caller compares that with the credential's length.
 */
int rr__auth_sys_encode(const struct rr_auth_sys *a, uint8_t *buf, size_t cap);
int rr__auth_sys_decode(const uint8_t *body, size_t len, struct rr_auth_sys *a);

/*
 * Peeks the xid and message type of any RPC message (4+4 bytes), whatever
 * follows. Returns 0, or -EBADMSG when len < 8. The type is returned as
 * sent, even when it is neither CALL nor REPLY.
 */
int rr__rpc_peek(const uint8_t *buf, size_t len, uint32_t *xid, uint32_t *type);

/*
 * What every client (and a server calling its client back) sends before a
 * call's arguments: the call header for call with xid, its credential
 * AUTH_SYS when call->cred is set (machine names the host where the
 * credential does not), else AUTH_NONE. Returns the length, or as
 * rr__call_hdr_encode.
 */
int rr__call_msg_hdr(const struct rr_call *call, uint32_t xid,
		     const char *machine, uint8_t *buf, size_t cap);
/*
 * A reply to call (xid) taken into the caller's struct: the status fields
 * and the results, copied to res. 0; -EREMOTEIO when not accepted with
 * SUCCESS (the status fields say why); -EMSGSIZE when the results exceed
 * res_cap; -EPROTO for a malformed header or another xid (count it as a
 * bad header). res_bulk_len is the transport's to set.
 */
int rr__reply_take(struct rr_call *call, uint32_t xid, const uint8_t *msg,
		   size_t len);

/*
 * A call entering a transport (either direction): its results cleared and
 * its private part set for the wait, done(arg) to run at its end, waiter
 * the transport's (may be NULL), deadline_ms as the transport counts it.
 */
void rr__call_begin(struct rr_call *call, rr_call_done_fn done, void *arg,
		    void *waiter, uint64_t deadline_ms);

#endif
