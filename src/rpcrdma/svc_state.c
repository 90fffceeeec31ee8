// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Server: the moves of a connection's machine (enum svc_conn_state, drawn
 * in svc.h) and of a call's (enum sreq_state), through base/fsm.h, which
 * checks each against these tables and traces it. A call:
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

static const char *const conn_names[SCONN_NSTATES] = {
	[SCONN_UP] = "UP",
	[SCONN_DEAD] = "DEAD",
	[SCONN_DRAINING] = "DRAINING",
};

static const uint32_t conn_next[SCONN_NSTATES] = {
	[SCONN_UP] = TO(SCONN_DEAD),
	[SCONN_DEAD] = TO(SCONN_DRAINING),
	[SCONN_DRAINING] = 0,
};

static const struct rr_fsm conn_fsm = {
	.name = "rpcrdma.svc_conn",
	.nstates = SCONN_NSTATES,
	.states = conn_names,
	.next = conn_next,
};

void rr__svc_conn_move(struct svc_conn *cn, enum svc_conn_state to)
{
	if (!rr__fsm_move(&conn_fsm, cn->gen, cn->state, to))
		cn->s->st.state_violations++;
	cn->state = to;
}

void rr__svc_conn_kill(struct svc_conn *cn, const char *why)
{
	if (cn->state != SCONN_UP)
		return;
	cn->why = why;
	rr__svc_conn_move(cn, SCONN_DEAD);
}

void rr__svc_req_move(struct svc_conn *cn, struct svc_req *r,
		      enum sreq_state to)
{
	if (!rr__fsm_move(&fsm, r->h.xid, r->state, to))
		cn->s->st.state_violations++;
	r->state = to;
}
