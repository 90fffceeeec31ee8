/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one way a state machine of this project moves (docs/architecture.md
 * section 5): a table of the moves each state allows, and one function
 * every transition goes through, which checks the move against the table
 * and traces it. The USDT probe rpcrdma:state(machine, id, from, to)
 * fires on every move, so a live process's calls and connections can be
 * followed state by state, the id being what the machine's owner names
 * the object by (a call's xid, a connection's generation).
 *
 * A move the table does not allow is a bug of ours, not of a peer: it is
 * logged (rate-limited) and reported to the caller, which counts it
 * (rr_xprt_stats.state_violations, always 0 in a correct build, which the
 * tests check), and the move is made all the same: refusing it would
 * leave the object in a state its code no longer expects.
 */
#ifndef RR_BASE_FSM_H
#define RR_BASE_FSM_H

#include <stdbool.h>
#include <stdint.h>

#define RR_FSM_TO(s) (1u << (s))

struct rr_fsm {
	const char *name;	   /* "rpcrdma.call", ... */
	uint32_t nstates;	   /* at most 32 */
	const char *const *states; /* their names, for the log */
	const uint32_t *next;	   /* next[s]: RR_FSM_TO(t) set when allowed */
};

/* Staying in a state is always allowed. */
bool rr__fsm_allowed(const struct rr_fsm *m, uint32_t from, uint32_t to);
/* Traces and checks from -> to; false when the table forbids it. */
bool rr__fsm_move(const struct rr_fsm *m, uint64_t id, uint32_t from,
		  uint32_t to);

#endif
