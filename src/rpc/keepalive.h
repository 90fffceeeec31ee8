/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client liveness, the part every transport shares: which call a probe
 * makes, and what its end says. A connection that stays silent for
 * keepalive_ms gets a NULL call (procedure 0 of the program and version
 * last used, unless the options name one); if that gets no reply within
 * keepalive_timeout_ms the connection is treated as lost. Any reply, even
 * an error, shows a live server; only silence condemns, and only the
 * connection the probe went out on. The transports keep the time of the
 * last sign of life and issue the probe as an ordinary call, so it takes
 * a credit like any other and cannot overrun the server's grant.
 */
#ifndef RR_RPC_KEEPALIVE_H
#define RR_RPC_KEEPALIVE_H

#include <rpcrdma/oncrpc.h>

#define RR_KA_DEFAULT_MS 60000

struct rr_ka {
	struct rr_call call; /* the probe: procedure 0 */
	bool busy;	     /* issued; its callback has not run yet */
	uint32_t gen;	     /* the connection it went out on */
	uint32_t prog, vers; /* of the last call made */
	/* from the options: 0 means those of the last call */
	uint32_t opt_prog, opt_vers;
	int timeout_ms;
};

/*
 * Fills in the defaults of keepalive_ms (0: a minute; negative: never)
 * and keepalive_timeout_ms (as keepalive_ms) and keeps what a probe needs.
 */
void rr__ka_init(struct rr_ka *k, int *keepalive_ms, int *keepalive_timeout_ms,
		 uint32_t prog, uint32_t vers);
/* Every call made: a probe calls the same program, unless told. */
void rr__ka_note(struct rr_ka *k, const struct rr_call *call);
/* Whether a probe may go now: none out, and a program to call. */
bool rr__ka_ready(const struct rr_ka *k);
/* The probe to issue on connection gen (counted by the caller). */
struct rr_call *rr__ka_probe(struct rr_ka *k, uint32_t gen);
/*
 * The probe ended with rc; up and gen_now say which connection is up.
 * true: it timed out on that very connection, which is then lost.
 */
bool rr__ka_end(struct rr_ka *k, int rc, bool up, uint32_t gen_now);

#endif
