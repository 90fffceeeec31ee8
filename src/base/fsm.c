// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "base/fsm.h"

#include "base/log.h"
#include "base/usdt.h"

bool rr__fsm_allowed(const struct rr_fsm *m, uint32_t from, uint32_t to)
{
	if (from >= m->nstates || to >= m->nstates)
		return false;
	return from == to || (m->next[from] & RR_FSM_TO(to));
}

static const char *state_name(const struct rr_fsm *m, uint32_t s)
{
	return s < m->nstates ? m->states[s] : "?";
}

bool rr__fsm_move(const struct rr_fsm *m, uint64_t id, uint32_t from,
		  uint32_t to)
{
	RR_TRACE4(state, m->name, id, from, to);
	if (rr__fsm_allowed(m, from, to))
		return true;
	rr_warn_rl("%s %llx: move %s -> %s is not allowed (a bug)", m->name,
		   (unsigned long long)id, state_name(m, from),
		   state_name(m, to));
	return false;
}
