// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rpc/keepalive.h"

#include <errno.h>

void rr__ka_init(struct rr_ka *k, int *keepalive_ms, int *keepalive_timeout_ms,
		 uint32_t prog, uint32_t vers)
{
	if (!*keepalive_ms)
		*keepalive_ms = RR_KA_DEFAULT_MS;
	if (*keepalive_timeout_ms <= 0)
		*keepalive_timeout_ms = *keepalive_ms > 0 ? *keepalive_ms : 0;
	k->opt_prog = prog;
	k->opt_vers = vers;
	k->timeout_ms = *keepalive_timeout_ms;
}

void rr__ka_note(struct rr_ka *k, const struct rr_call *call)
{
	k->prog = call->prog;
	k->vers = call->vers;
}

static uint32_t probe_prog(const struct rr_ka *k)
{
	return k->opt_prog ? k->opt_prog : k->prog;
}

bool rr__ka_ready(const struct rr_ka *k)
{
	return !k->busy && probe_prog(k);
}

struct rr_call *rr__ka_probe(struct rr_ka *k, uint32_t gen)
{
	k->call = (struct rr_call){
		.prog = probe_prog(k),
		.vers = k->opt_prog ? k->opt_vers : k->vers,
		.proc = 0,
		.timeout_ms = k->timeout_ms,
	};
	k->busy = true;
	k->gen = gen;
	return &k->call;
}

bool rr__ka_end(struct rr_ka *k, int rc, bool up, uint32_t gen_now)
{
	k->busy = false;
	return rc == -ETIMEDOUT && up && k->gen == gen_now;
}
