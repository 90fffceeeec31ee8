// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Server: the moves of a call's machine (enum sreq_state), through
 * base/fsm.h, which checks each against this table and traces it:
 *
 *   FREE -> RECEIVED -> PULLING (read chunks) -> READY -> RUNNING -> FREE
 *                    \\-----------------------/
 *   and to FREE from any state when the call is refused or its
 *   connection goes.
 */
#include "rpcrdma/svc.h"

#include "base/fsm.h"

#define TO RR_FSM_TO

static const char *const names[SREQ_NSTATES] = {
	[SREQ_FREE] = "FREE",	    [SREQ_RECEIVED] = "RECEIVED",
	[SREQ_PULLING] = "PULLING", [SREQ_READY] = "READY",
	[SREQ_RUNNING] = "RUNNING",
};

static const uint32_t next[SREQ_NSTATES] = {
	[SREQ_FREE] = TO(SREQ_RECEIVED),
	[SREQ_RECEIVED] = TO(SREQ_PULLING) | TO(SREQ_READY) | TO(SREQ_FREE),
	[SREQ_PULLING] = TO(SREQ_READY) | TO(SREQ_FREE),
	[SREQ_READY] = TO(SREQ_RUNNING) | TO(SREQ_FREE),
	[SREQ_RUNNING] = TO(SREQ_FREE),
};

static const struct rr_fsm fsm = {
	.name = "rpcrdma.svc_call",
	.nstates = SREQ_NSTATES,
	.states = names,
	.next = next,
};

void rr__svc_req_move(struct svc_conn *cn, struct svc_req *r,
		      enum sreq_state to)
{
	if (!rr__fsm_move(&fsm, r->h.xid, r->state, to))
		cn->s->st.state_violations++;
	r->state = to;
}
