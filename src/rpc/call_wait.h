/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A caller that waits for one call's done callback, on a lock of its own
 * rather than its transport's: the callback runs on whichever thread ends
 * the call (a reply, a timeout, a cancellation, the connection's end),
 * exactly once, so the wait itself needs no deadline.
 */
#ifndef RR_RPC_CALL_WAIT_H
#define RR_RPC_CALL_WAIT_H

#include <rpcrdma/oncrpc.h>

#include <pthread.h>
#include <stdbool.h>

struct rr_call_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rc; /* what done was given */
};

void rr__call_wait_init(struct rr_call_wait *w);
void rr__call_wait_fini(struct rr_call_wait *w);
/* The rr_call_done_fn to pass with arg w. */
void rr__call_wait_done(struct rr_call *call, int rc, void *w);
/* Blocks until done has run; its rc. */
int rr__call_wait_end(struct rr_call_wait *w);

#endif
