// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NFS3ERR_JUKEBOX (RFC 1813 section 2.6): the server cannot answer yet,
 * the call did nothing, and it is to be sent again later. Servers say it
 * for a file on its way back from tape, and nfsrdmad for a handle it has
 * to look for while its walk budget is spent (walk_budget.c): every
 * handle after a restart. It is never an answer for the application.
 *
 * Linux's client waits 5 s and sends again for as long as it takes. We
 * start sooner, since the usual causes (a walk budget, a recall) pass in
 * milliseconds to seconds, and back off to a second: a resend a second
 * is little for a server to answer, and 5 s steps would keep a caller
 * waiting seconds after the server could answer. A soft mount gives up
 * (-ETIMEDOUT, as for a server that does not answer) once its call
 * timeout has passed, a hard one never. The thread's abort check
 * (rr_nfs_set_thread_abort) ends the wait, as it ends a call's.
 */
#include <errno.h>
#include <time.h>

#include "base/clock.h"
#include "nfsc.h"

#define JUKEBOX_FIRST_MS 50
#define JUKEBOX_MAX_MS	 1000

bool rr__nfsc_jukebox(const struct rr_call *call)
{
	const unsigned char *p = call->res;

	if (call->prog != NFS_PROGRAM || call->vers != NFS_V3 ||
	    call->res_len < 4)
		return false;
	return ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | p[3]) == NFS3ERR_JUKEBOX;
}

int rr__nfsc_jukebox_next(const struct rr_nfs *n, struct nfsc_jukebox *j,
			  uint64_t *at_ms)
{
	uint64_t now = rr_mono_ms(), ms = JUKEBOX_MAX_MS;

	if (!j->tries)
		j->since_ms = now;
	if (n->timeout_ms > 0 && now - j->since_ms >= (uint64_t)n->timeout_ms)
		return rr__nfsc_fail(-ETIMEDOUT,
				     "the server said JUKEBOX (try later) "
				     "for %d ms",
				     n->timeout_ms);
	if (j->tries < 7)
		ms = (uint64_t)JUKEBOX_FIRST_MS << j->tries;
	if (ms > JUKEBOX_MAX_MS)
		ms = JUKEBOX_MAX_MS;
	j->tries++;
	*at_ms = now + ms;
	return 0;
}

/* Sleeps until at_ms in abort-check slices: 0, or -EINTR. */
static int sleep_until(uint64_t at_ms)
{
	for (;;) {
		uint64_t now = rr_mono_ms(), ms;
		struct timespec ts;

		if (rr__nfsc_abort_now())
			return rr__nfsc_fail(-EINTR, "interrupted while the "
						     "server said JUKEBOX");
		if (now >= at_ms)
			return 0;
		ms = at_ms - now < NFSC_ABORT_SLICE_MS ? at_ms - now
						       : NFSC_ABORT_SLICE_MS;
		ts = (struct timespec){(time_t)(ms / 1000),
				       (long)(ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
}

int rr__nfsc_jukebox_wait(const struct rr_nfs *n, struct nfsc_jukebox *j)
{
	uint64_t at = 0;
	int rc = rr__nfsc_jukebox_next(n, j, &at);

	return rc ? rc : sleep_until(at);
}
