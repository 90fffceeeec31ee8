// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The table of a server's calls to one client (cb_table.h). A slot is
 * found by scanning: a connection has a few, and the scan needs no index
 * kept right through every way a call ends.
 */
#include "rpc/cb_table.h"

#include "base/clock.h"
#include "rpc/msg.h"

#include <errno.h>

void rr__cb_table_init(struct rr__cb_table *t, struct rr__cb_slot *slots,
		       uint32_t nslots, bool keep_slot)
{
	*t = (struct rr__cb_table){
		.slots = slots, .nslots = nslots, .keep_slot = keep_slot};
}

uint64_t rr__cb_deadline(const struct rr_call *call, int dflt_ms)
{
	int t = call->timeout_ms ? call->timeout_ms : dflt_ms;

	return t > 0 ? rr_mono_ms() + (uint64_t)t : 0;
}

void rr__cb_queue(struct rr__cb_table *t, struct rr_call *call,
		  rr_call_done_fn done, void *arg, uint64_t deadline_ms)
{
	rr__call_begin(call, done, arg, NULL, deadline_ms);
	if (t->wait_tail)
		rr__call_priv(t->wait_tail)->next = call;
	else
		t->wait_head = call;
	t->wait_tail = call;
}

struct rr__cb_slot *rr__cb_slot_free(struct rr__cb_table *t)
{
	for (uint32_t i = 0; i < t->nslots; i++)
		if (!t->slots[i].busy)
			return &t->slots[i];
	return NULL;
}

struct rr_call *rr__cb_pop(struct rr__cb_table *t)
{
	struct rr_call *call = t->wait_head;

	if (!call)
		return NULL;
	t->wait_head = rr__call_priv(call)->next;
	if (!t->wait_head)
		t->wait_tail = NULL;
	rr__call_priv(call)->next = NULL;
	return call;
}

void rr__cb_sent(struct rr__cb_table *t, struct rr__cb_slot *sl,
		 struct rr_call *call, uint32_t xid)
{
	*sl = (struct rr__cb_slot){.call = call, .xid = xid, .busy = true};
	rr__call_priv(call)->req = sl;
	t->nbusy++;
}

/* Unlinks call from the queue, after prev (NULL: it is the head). */
static void unlink_after(struct rr__cb_table *t, struct rr_call *prev,
			 struct rr_call *call)
{
	struct rr_call *next = rr__call_priv(call)->next;

	if (prev)
		rr__call_priv(prev)->next = next;
	else
		t->wait_head = next;
	if (t->wait_tail == call)
		t->wait_tail = prev;
}

static bool unqueue(struct rr__cb_table *t, struct rr_call *call)
{
	struct rr_call *prev = NULL;

	for (struct rr_call *q = t->wait_head; q;
	     prev = q, q = rr__call_priv(q)->next) {
		if (q == call) {
			unlink_after(t, prev, call);
			return true;
		}
	}
	return false;
}

/* The call leaves its slot; the slot stays busy if its reply is owed. */
static void slot_release(struct rr__cb_table *t, struct rr__cb_slot *sl)
{
	sl->call = NULL;
	if (t->keep_slot)
		return;
	sl->busy = false;
	t->nbusy--;
}

bool rr__cb_end(struct rr__cb_table *t, struct rr_call *call, int rc,
		struct rr_call_list *l)
{
	struct rr__cb_slot *sl = rr__call_priv(call)->req;

	/* req may be any transport's record: trust it only if it is ours. */
	if (sl && sl >= t->slots && sl < t->slots + t->nslots &&
	    sl->call == call)
		slot_release(t, sl);
	else if (!unqueue(t, call))
		return false;
	rr__call_list_end(l, call, rc);
	return true;
}

int rr__cb_answered(struct rr__cb_table *t, uint32_t xid, struct rr_call **call)
{
	for (uint32_t i = 0; i < t->nslots; i++) {
		struct rr__cb_slot *sl = &t->slots[i];

		if (sl->busy && sl->xid == xid) {
			*call = sl->call;
			*sl = (struct rr__cb_slot){0};
			t->nbusy--;
			return 0;
		}
	}
	return -ENOENT;
}

static bool due(struct rr_call *call, uint64_t now)
{
	uint64_t d = rr__call_priv(call)->deadline_ms;

	return d && d <= now;
}

uint32_t rr__cb_expire(struct rr__cb_table *t, uint64_t now,
		       struct rr_call_list *l)
{
	struct rr_call *prev = NULL, *call = t->wait_head;
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nslots; i++) {
		struct rr_call *c = t->slots[i].call;

		if (c && due(c, now)) {
			slot_release(t, &t->slots[i]);
			rr__call_list_end(l, c, -ETIMEDOUT);
			n++;
		}
	}
	while (call) {
		struct rr_call *next = rr__call_priv(call)->next;

		if (due(call, now)) {
			unlink_after(t, prev, call);
			rr__call_list_end(l, call, -ETIMEDOUT);
			n++;
		} else {
			prev = call;
		}
		call = next;
	}
	return n;
}

void rr__cb_fail_all(struct rr__cb_table *t, int rc, struct rr_call_list *l)
{
	struct rr_call *call;

	for (uint32_t i = 0; i < t->nslots; i++) {
		if (t->slots[i].call)
			rr__call_list_end(l, t->slots[i].call, rc);
		t->slots[i] = (struct rr__cb_slot){0};
	}
	t->nbusy = 0;
	while ((call = rr__cb_pop(t)))
		rr__call_list_end(l, call, rc);
}
