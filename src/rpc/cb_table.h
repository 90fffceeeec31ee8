/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A server's calls to one client over the client's own connection, as
 * both transports keep them: those not yet sent wait in issue order,
 * those on the wire sit in slots until the reply with their xid comes.
 * How many slots may be busy, and what sending one means, is the
 * transport's (credits over RDMA, queued bytes over TCP); ending a call
 * exactly once, by its reply, deadline, cancellation or the connection's
 * end, is this. The owner's lock covers every function here; ended
 * calls go to a list that is run after the lock is dropped.
 */
#ifndef RR_RPC_CB_TABLE_H
#define RR_RPC_CB_TABLE_H

#include "rpc/call_list.h"

#include <stdbool.h>
#include <stdint.h>

struct rr__cb_slot {
	struct rr_call *call; /* NULL when returned before its reply */
	uint32_t xid;
	bool busy; /* on the wire: its reply is still due */
};

struct rr__cb_table {
	struct rr__cb_slot *slots;
	uint32_t nslots;
	uint32_t nbusy;
	uint32_t xid_seq; /* the xid of the next call sent */
	/*
	 * A call that ends before its reply (timeout, cancellation) keeps
	 * its slot until the reply comes: over RDMA the client still counts
	 * the credit it took. Over TCP the slot is free at once.
	 */
	bool keep_slot;
	struct rr_call *wait_head, *wait_tail;
};

void rr__cb_table_init(struct rr__cb_table *t, struct rr__cb_slot *slots,
		       uint32_t nslots, bool keep_slot);

/*
 * When a call of timeout_ms (0: dflt_ms; below 0: never) times out:
 * a monotonic time, 0 for never.
 */
uint64_t rr__cb_deadline(const struct rr_call *call, int dflt_ms);

/* Starts call, ending at deadline_ms (0: never), behind the others. */
void rr__cb_queue(struct rr__cb_table *t, struct rr_call *call,
		  rr_call_done_fn done, void *arg, uint64_t deadline_ms);

static inline struct rr_call *rr__cb_head(const struct rr__cb_table *t)
{
	return t->wait_head;
}

struct rr__cb_slot *rr__cb_slot_free(struct rr__cb_table *t);

/* Takes the queue's head out, for sending; NULL if none waits. */
struct rr_call *rr__cb_pop(struct rr__cb_table *t);

/* The popped call went out with xid: sl holds it till its reply. */
void rr__cb_sent(struct rr__cb_table *t, struct rr__cb_slot *sl,
		 struct rr_call *call, uint32_t xid);

/*
 * Whether call was still the table's (queued or awaiting its reply): it
 * then ends with rc into l. A call already ended is not touched.
 */
bool rr__cb_end(struct rr__cb_table *t, struct rr_call *call, int rc,
		struct rr_call_list *l);

/*
 * The slot a reply with xid answers, freed: -ENOENT if none is busy
 * with it; else 0 and *call, NULL when the call ended before its reply.
 */
int rr__cb_answered(struct rr__cb_table *t, uint32_t xid,
		    struct rr_call **call);

/* Calls past their deadline end -ETIMEDOUT into l; returns how many. */
uint32_t rr__cb_expire(struct rr__cb_table *t, uint64_t now,
		       struct rr_call_list *l);

/* Every call ends with rc into l, and no slot stays busy. */
void rr__cb_fail_all(struct rr__cb_table *t, int rc, struct rr_call_list *l);

#endif
