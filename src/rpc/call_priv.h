/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a transport keeps in a call while the call is in it. The caller
 * owns struct rr_call (so issuing one allocates nothing); its priv_
 * member is only room for this, which no header of ours shows.
 */
#ifndef RR_RPC_CALL_PRIV_H
#define RR_RPC_CALL_PRIV_H

#include <rpcrdma/oncrpc.h>

#include <stdbool.h>
#include <stdint.h>

struct rr__call_priv {
	void *req;	      /* the transport's record of it: slot, request */
	struct rr_call *next; /* on a wait queue or an ended-call list */
	rr_call_done_fn done;
	void *arg;
	void *waiter;	      /* a synchronous caller's, if any */
	uint64_t deadline_ms; /* monotonic; "none" is the transport's mark */
	bool cancel;
	uint8_t waited; /* counted in credit_waits (1), sq_waits (2) */
};

_Static_assert(sizeof(struct rr__call_priv) <=
		       sizeof(((struct rr_call *)0)->priv_),
	       "rr_call.priv_ has no room for struct rr__call_priv");

/* -fno-strict-aliasing: priv_ is read and written only through this. */
static inline struct rr__call_priv *rr__call_priv(struct rr_call *call)
{
	return (struct rr__call_priv *)(void *)&call->priv_;
}

#endif
