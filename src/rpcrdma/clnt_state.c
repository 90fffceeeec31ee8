// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Client: the moves of its machines, a request slot's (enum req_state,
 * drawn in clnt.h), the connection's (enum clnt_conn_state, clnt_conn.c)
 * and a served call's of the server's (enum cb_state, clnt.h), through
 * base/fsm.h, which checks each against these tables and traces it.
 * Caller holds c->mu.
 */
#include "rpcrdma/clnt.h"

#include "base/clock.h"
#include "base/fsm.h"

#define TO RR_FSM_TO

static const char *const req_names[REQ_NSTATES] = {
	[REQ_FREE] = "FREE",	       [REQ_SENT] = "SENT",
	[REQ_FENCING] = "FENCING",     [REQ_FENCING_OWED] = "FENCING_OWED",
	[REQ_ABANDONED] = "ABANDONED", [REQ_RESEND] = "RESEND",
};

static const uint32_t req_next[REQ_NSTATES] = {
	[REQ_FREE] = TO(REQ_SENT),
	[REQ_SENT] = TO(REQ_FENCING) | TO(REQ_FENCING_OWED) | TO(REQ_RESEND) |
		     TO(REQ_FREE),
	[REQ_FENCING] = TO(REQ_FREE),
	[REQ_FENCING_OWED] = TO(REQ_FENCING) | TO(REQ_ABANDONED),
	[REQ_ABANDONED] = TO(REQ_FREE),
	[REQ_RESEND] = TO(REQ_SENT) | TO(REQ_FENCING),
};

static const struct rr_fsm req_fsm = {
	.name = "rpcrdma.call",
	.nstates = REQ_NSTATES,
	.states = req_names,
	.next = req_next,
};

static const char *const conn_names[CLNT_NSTATES] = {
	[CLNT_CONNECTING] = "CONNECTING",
	[CLNT_UP] = "UP",
	[CLNT_DRAINING] = "DRAINING",
	[CLNT_BACKOFF] = "BACKOFF",
	[CLNT_DOWN] = "DOWN",
};

/* A failed attempt drains like a lost connection (invariant 4). */
static const uint32_t conn_next[CLNT_NSTATES] = {
	[CLNT_CONNECTING] = TO(CLNT_UP) | TO(CLNT_DRAINING) | TO(CLNT_BACKOFF) |
			    TO(CLNT_DOWN),
	[CLNT_UP] = TO(CLNT_DRAINING) | TO(CLNT_DOWN),
	[CLNT_DRAINING] = TO(CLNT_BACKOFF) | TO(CLNT_DOWN),
	[CLNT_BACKOFF] = TO(CLNT_CONNECTING) | TO(CLNT_DOWN),
	[CLNT_DOWN] = 0,
};

static const struct rr_fsm conn_fsm = {
	.name = "rpcrdma.clnt_conn",
	.nstates = CLNT_NSTATES,
	.states = conn_names,
	.next = conn_next,
};

static const char *const cb_names[CB_NSTATES] = {
	[CB_FREE] = "FREE",
	[CB_PENDING] = "PENDING",
	[CB_RUNNING] = "RUNNING",
	[CB_SENDING] = "SENDING",
};

static const uint32_t cb_next[CB_NSTATES] = {
	[CB_FREE] = TO(CB_PENDING),
	[CB_PENDING] = TO(CB_RUNNING) | TO(CB_FREE),
	[CB_RUNNING] = TO(CB_SENDING) | TO(CB_FREE),
	[CB_SENDING] = TO(CB_FREE),
};

static const struct rr_fsm cb_fsm = {
	.name = "rpcrdma.clnt_callback",
	.nstates = CB_NSTATES,
	.states = cb_names,
	.next = cb_next,
};

void rr__clnt_cb_move(struct rr_clnt *c, struct clnt_cb_slot *s,
		      enum cb_state to)
{
	if (!rr__fsm_move(&cb_fsm, s->xid, s->state, to))
		c->st.state_violations++;
	s->state = to;
}

void rr__clnt_req_move(struct rr_clnt *c, struct clnt_req *r, enum req_state to)
{
	if (!rr__fsm_move(&req_fsm, r->xid, r->state, to))
		c->st.state_violations++;
	r->state = to;
}

void rr__clnt_conn_move(struct rr_clnt *c, enum clnt_conn_state to)
{
	if (!rr__fsm_move(&conn_fsm, c->gen, c->conn_state, to))
		c->st.state_violations++;
	c->conn_state = to;
	c->state_ms = rr_mono_ms();
}
