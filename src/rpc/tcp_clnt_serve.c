// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The TCP client serving calls its server makes back over the client's
 * connection (RFC 5531 section 11: a record's msg_type says CALL or
 * REPLY; NFSv4.1's backchannel, RFC 8881 section 2.10.3.1, is one use).
 *
 * A CALL is served where it was read, by the thread holding the reader
 * role (tcp_clnt_drive.c), before that thread reads on: so the server
 * can make the client run one callback at a time and no more, and can
 * make it hold nothing beyond the record being read. The reply goes out
 * on the same output queue as the client's calls; while that queue holds
 * CB_MAX_QUEUED bytes (the server is not reading) a callback's reply is
 * dropped and counted (cb_replies_dropped), and the server's own timeout
 * deals with it: queueing it would let the server grow our memory by
 * sending calls it never takes the answers of.
 */
#include "rpc/tcp_clnt.h"

#include "base/alloc.h"
#include "base/log.h"

#include <errno.h>
#include <stdlib.h>

#define CB_RES_CAP    (64u << 10) /* a callback's results */
#define CB_REPLY_ROOM 512	  /* reply header and verifier */
#define CB_MAX_QUEUED (256u << 10)
#define CB_SMALL_LEN  64 /* a reply without results (PROG_UNAVAIL, ...) */

int rr__tc_serve(struct rr_tcp_clnt *c, const struct rr_svc_prog *prog)
{
	int rc = 0;

	if (!prog || (prog->nprocs && !prog->procs))
		return -EINVAL;
	pthread_mutex_lock(&c->mu);
	if (!c->cb_res) {
		c->cb_res = rr_malloc(CB_RES_CAP);
		c->cb_out =
			rr_malloc(RR_RM_HDR_LEN + CB_RES_CAP + CB_REPLY_ROOM);
		if (!c->cb_res || !c->cb_out) {
			free(c->cb_res);
			free(c->cb_out);
			c->cb_res = c->cb_out = NULL;
			rc = -ENOMEM;
		}
	}
	if (!rc)
		rc = rr__progtab_add(&c->cb_progs, prog);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void rr__tc_serve_fini(struct rr_tcp_clnt *c)
{
	free(c->cb_res);
	free(c->cb_out);
	c->cb_res = c->cb_out = NULL;
}

/* Queues the reply rec[0..len) (its record mark included). Caller: mu. */
static void send_cb_reply(struct rr_tcp_clnt *c, const uint8_t *rec, size_t len,
			  struct rr_call_list *l)
{
	struct iovec iov = {(void *)rec, len};
	bool queued_before = c->out.head != NULL;

	if (c->out.bytes >= CB_MAX_QUEUED) {
		c->st.cb_replies_dropped++;
		rr_warn_rl(
			"tcp clnt: server not reading: callback reply dropped");
		return;
	}
	if (rr__outq_send(c->fd, &c->out, &iov, 1)) {
		rr__tc_conn_lost(c, l);
		return;
	}
	c->st.cb_replies++;
	if (!queued_before && c->out.head)
		rr__tc_wake(c); /* the I/O thread must watch for POLLOUT now */
}

/*
 * The reader, without c->mu: the handler runs unlocked (it may issue
 * asynchronous calls). With no program registered there are no buffers,
 * and none are needed: every call gets PROG_UNAVAIL, a header alone.
 */
void rr__tc_serve_call(struct rr_tcp_clnt *c, const uint8_t *rec, size_t len,
		       struct rr_call_list *l)
{
	uint8_t small[RR_RM_HDR_LEN + CB_SMALL_LEN];
	uint8_t *out = c->cb_out ? c->cb_out : small;
	size_t cap = c->cb_out ? CB_RES_CAP + CB_REPLY_ROOM : CB_SMALL_LEN;
	int n = rr__cb_serve(&c->cb_progs, rec, len, c->cb_res,
			     c->cb_res ? CB_RES_CAP : 0, out + RR_RM_HDR_LEN,
			     cap);

	pthread_mutex_lock(&c->mu);
	if (n < 0) {
		c->st.bad_headers++; /* no call: no xid to answer */
	} else if (c->state == TC_UP) {
		c->st.cb_calls++;
		rr__rm_hdr(out, (uint32_t)n, true);
		send_cb_reply(c, out, RR_RM_HDR_LEN + (size_t)n, l);
	}
	pthread_mutex_unlock(&c->mu);
}
