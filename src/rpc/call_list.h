/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Calls that have ended, in the order they ended, whose done callbacks
 * run later, once the lock under which they ended is dropped: a callback
 * may issue the next call on the same transport. Every transport, both
 * directions, ends its calls through this list.
 */
#ifndef RR_RPC_CALL_LIST_H
#define RR_RPC_CALL_LIST_H

#include "rpc/call_priv.h"

#include <stdint.h>

struct rr_call_list {
	struct rr_call *head, *tail;
	uint32_t n; /* calls on the list */
};

/*
 * call has left its transport (its slot or queue) with result rc, which
 * waits in its status until the list runs.
 */
static inline void rr__call_list_end(struct rr_call_list *l,
				     struct rr_call *call, int rc)
{
	rr__call_priv(call)->req = NULL;
	rr__call_priv(call)->next = NULL;
	call->status = rc;
	if (l->tail)
		rr__call_priv(l->tail)->next = call;
	else
		l->head = call;
	l->tail = call;
	l->n++;
}

/* Runs every done callback, in order, and leaves l empty. */
static inline void rr__call_list_run(struct rr_call_list *l)
{
	struct rr_call *call = l->head;

	*l = (struct rr_call_list){0};
	while (call) {
		struct rr__call_priv *p = rr__call_priv(call);
		/* ORDER: next first: the callback may reuse the call. */
		struct rr_call *next = p->next;

		p->done(call, call->status, p->arg);
		call = next;
	}
}

#endif
