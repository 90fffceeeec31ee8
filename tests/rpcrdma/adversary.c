/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Invariant 1 against a hostile server: a server process written on the
 * fabric API that answers a call and then keeps the client's keys, trying
 * RDMA Write and RDMA Read through them after the call has returned to the
 * caller. Every attempt must fail with a remote access error and the
 * client's memory must be unchanged. The same for a call that timed out,
 * for keys the server invalidated by Send With Invalidate, and a Send With
 * Invalidate naming a key that is not the call's must make the client
 * tear the connection down.
 */
#include "rpc/msg.h"
#include "rpcrdma/hdr.h"

#include <rpcrdma/rpc.h>

#include <arpa/inet.h>
#include <stdbool.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define PROG	0x20000055
#define WAIT_MS 10000
#define BUF_LEN (64 * 1024)

enum mode {
	M_REPLY,	   /* reply with a plain Send, keep the keys */
	M_REPLY_INV,	   /* reply With Invalidate of the one key */
	M_REPLY_WRONG_INV, /* reply With Invalidate naming a wrong key */
	M_SILENT,	   /* never reply */
};

/* What the adversary reports back after its attack. */
struct verdict {
	int attacked;	 /* number of RDMA operations tried */
	int succeeded;	 /* how many completed successfully */
	uint32_t status; /* first non-success status seen */
	int invited_inv; /* the client's connect data invited Send With Inv. */
};

struct adv {
	int ctl; /* socketpair end */
	enum mode mode;
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_evch *ch;
	struct rr_cq *cq;
	struct rr_qp *qp;
	struct rr_listener *l;
	struct rr_mr *mr;
	uint8_t *buf; /* [0,4K) recv, [4K,8K) send, rest: attack data */
	bool invited_inv;
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "adversary: %s: %d\n", what, rc);
	_exit(2);
}

static void adv_setup(struct adv *a)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_storage ss;
	struct rr_qp_attr qa = {.sq_depth = 64,
				.rq_depth = 8,
				.max_send_sge = 1,
				.max_recv_sge = 1,
				.ird = 8,
				.ord = 8};
	uint16_t port;
	int rc;

	a->buf = aligned_alloc(4096, BUF_LEN);
	memset(a->buf, 0xee, BUF_LEN);
	if ((rc = rr_device_open("iwarp", NULL, &a->dev)) ||
	    (rc = rr_pd_alloc(a->dev, &a->pd)) ||
	    (rc = rr_evch_create(a->dev, &a->ch)) ||
	    (rc = rr_cq_create(a->dev, 128, &a->cq)) ||
	    (rc = rr_mr_reg(a->pd, a->buf, BUF_LEN, RR_ACCESS_LOCAL_WRITE,
			    &a->mr)))
		die("setup", rc);
	qa.send_cq = qa.recv_cq = a->cq;
	qa.evch = a->ch;
	if ((rc = rr_qp_create(a->pd, &qa, &a->qp)) ||
	    (rc = rr_listener_create(a->dev, a->ch, (struct sockaddr *)&sin,
				     sizeof(sin), 4, &a->l)) ||
	    (rc = rr_listener_addr(a->l, &ss)))
		die("listen", rc);
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (write(a->ctl, &port, sizeof(port)) != sizeof(port))
		die("ctl", errno);
}

static struct rr_wc adv_wc(struct adv *a)
{
	struct rr_wc wc;

	for (;;) {
		if (rr_cq_poll(a->cq, &wc, 1) == 1)
			return wc;
		if (rr_cq_wait(a->cq, WAIT_MS))
			die("no completion", -ETIMEDOUT);
	}
}

static void adv_accept(struct adv *a)
{
	struct rr_cm_event ev;
	struct rr_sge sge = {(uintptr_t)a->buf, 4096, rr_mr_lkey(a->mr)};
	struct rr_recv_wr rw = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
	/* RFC 8797: 4 KiB inline both ways; we take Send With Invalidate. */
	const uint8_t pd[8] = {0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3};
	int rc;

	if ((rc = rr_qp_post_recv(a->qp, &rw, NULL)))
		die("recv", rc);
	if ((rc = rr_evch_get(a->ch, &ev, WAIT_MS)) ||
	    ev.type != RR_CM_CONNECT_REQUEST)
		die("request", rc);
	struct rr_cparams cp;

	a->invited_inv = !rr__cparams_decode(ev.private_data,
					     ev.private_data_len, &cp) &&
			 cp.rem_inv_ok;
	if ((rc = rr_conn_req_accept(ev.req, a->qp, pd, sizeof(pd))) ||
	    (rc = rr_evch_get(a->ch, &ev, WAIT_MS)) ||
	    ev.type != RR_CM_ESTABLISHED)
		die("accept", rc);
}

/* An RDMA_MSG reply: accepted SUCCESS with empty results. */
static void adv_reply(struct adv *a, const struct rr_rdma_hdr *call,
		      uint32_t rpc_xid, uint32_t inv)
{
	struct rr_rdma_hdr h = {
		.xid = call->xid, .vers = 1, .credits = 8, .proc = RR_RDMA_MSG};
	struct rr_reply_hdr rh = {.xid = rpc_xid, .stat = RR_MSG_ACCEPTED};
	uint8_t *sb = a->buf + 4096;
	struct rr_sge sge = {(uintptr_t)sb, 0, rr_mr_lkey(a->mr)};
	struct rr_send_wr wr = {.wr_id = 2,
				.sg_list = &sge,
				.num_sge = 1,
				.flags = RR_SEND_SIGNALED,
				.opcode =
					inv ? RR_WR_SEND_WITH_INV : RR_WR_SEND,
				.invalidate_rkey = inv};
	int n = rr__rdma_hdr_encode(&h, sb, 1024), m;

	m = rr__reply_hdr_encode(&rh, sb + n, 1024);
	sge.length = (uint32_t)(n + m);
	if (rr_qp_post_send(a->qp, &wr, NULL))
		die("reply", -1);
	adv_wc(a);
}

/*
 * One attack through a segment, with the access its window was bound for:
 * a read chunk is read; a write or reply chunk is written, then fenced by a
 * zero-length Read (which names no memory, so only tells whether the peer
 * accepted the Write). Returns the status that decides, SUCCESS meaning
 * the client's memory was reached.
 */
static uint32_t attack_seg(struct adv *a, const struct rr_rdma_seg *seg,
			   bool readable)
{
	struct rr_sge sge = {(uintptr_t)a->buf + 8192, 64, rr_mr_lkey(a->mr)};
	struct rr_sge fsge = {(uintptr_t)a->buf + 8192, 0, rr_mr_lkey(a->mr)};
	struct rr_send_wr wr[2] = {
		{.wr_id = 10,
		 .opcode = RR_WR_RDMA_WRITE,
		 .sg_list = &sge,
		 .num_sge = 1,
		 .flags = RR_SEND_SIGNALED,
		 .rdma = {seg->offset, seg->handle}},
		{.wr_id = 11,
		 .opcode = RR_WR_RDMA_READ,
		 .sg_list = &fsge,
		 .num_sge = 1,
		 .flags = RR_SEND_SIGNALED,
		 .rdma = {seg->offset, seg->handle}},
	};
	struct rr_send_wr *first = &wr[0];
	uint32_t st = RR_WC_SUCCESS;
	int n = 2;

	if (readable) {
		wr[1].sg_list = &sge; /* a real Read of 64 bytes */
		first = &wr[1];
		n = 1;
	} else {
		wr[0].next = &wr[1];
	}
	if (rr_qp_post_send(a->qp, first, NULL))
		return RR_WC_WR_FLUSH_ERR; /* the connection is already gone */
	while (n--) {
		struct rr_wc wc = adv_wc(a);

		if (wc.wr_id == 11)
			st = wc.status;
	}
	return st;
}

/* Attacks every segment the call exposed, after the call returned. */
static struct verdict adv_attack(struct adv *a, const struct rr_rdma_hdr *h)
{
	struct verdict v = {0};

#define TRY(seg, readable)                                                     \
	do {                                                                   \
		uint32_t st = attack_seg(a, (seg), (readable));                \
		v.attacked++;                                                  \
		if (st == RR_WC_SUCCESS)                                       \
			v.succeeded++;                                         \
		else if (!v.status)                                            \
			v.status = st;                                         \
	} while (0)
	/* Writes first: each refused attempt ends the connection. */
	for (uint32_t i = 0; i < h->nwrite; i++)
		TRY(&h->writes[i].segs[0], false);
	if (h->has_reply)
		TRY(&h->reply.segs[0], false);
	for (uint32_t i = 0; i < h->nread; i++)
		TRY(&h->reads[i].seg, true);
#undef TRY
	return v;
}

/* Attacks only the read chunk: exposure of the call's arguments. */
static struct verdict adv_attack_reads(struct adv *a,
				       const struct rr_rdma_hdr *h)
{
	struct rr_rdma_hdr only = *h;

	only.nwrite = 0;
	only.has_reply = false;
	return adv_attack(a, &only);
}

static void adversary(int ctl, enum mode mode)
{
	struct adv a = {.ctl = ctl, .mode = mode};
	struct rr_rdma_hdr h;
	struct rr_call_hdr ch;
	struct verdict v;
	struct rr_wc wc;
	uint32_t inv = 0;
	char go;
	int hl;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	adv_setup(&a);
	adv_accept(&a);
	wc = adv_wc(&a);
	hl = rr__rdma_hdr_decode(a.buf, wc.byte_len, &h);
	if (hl < 0 ||
	    rr__call_hdr_decode(a.buf + hl, wc.byte_len - hl, &ch) < 0)
		die("decode", hl);
	if (mode == M_REPLY_INV && h.nwrite)
		inv = h.writes[0].segs[0].handle;
	if (mode == M_REPLY_WRONG_INV)
		inv = 0x4242; /* a key this call never exposed */
	if (mode != M_SILENT)
		adv_reply(&a, &h, ch.xid, inv);
	/* Wait until the call has returned to the caller, then attack. */
	if (read(ctl, &go, 1) != 1)
		die("ctl", errno);
	v = go == 'r' ? adv_attack_reads(&a, &h) : adv_attack(&a, &h);
	v.invited_inv = a.invited_inv;
	if (write(ctl, &v, sizeof(v)) != sizeof(v))
		die("ctl", errno);
	_exit(0);
}

/* ----------------------------------------------------------- the client */

struct env {
	pid_t pid;
	int ctl;
	struct rr_clnt *c;
	uint8_t *mem; /* registered with the client: zero-copy windows */
};

static void start_with(struct env *e, enum mode mode, enum rr_registration r)
{
	int sv[2];
	uint16_t port;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	e->pid = fork();
	assert_true(e->pid >= 0);
	if (e->pid == 0) {
		close(sv[0]);
		adversary(sv[1], mode);
	}
	close(sv[1]);
	e->ctl = sv[0];
	assert_int_equal(read(e->ctl, &port, sizeof(port)), sizeof(port));
	/* The adversary serves one connection: a lost one is final. */
	struct rr_clnt_opts o = {.no_reconnect = true, .registration = r};

	assert_int_equal(rr_clnt_create("127.0.0.1", port, &o, &e->c), 0);
	e->mem = aligned_alloc(4096, BUF_LEN);
	for (int i = 0; i < BUF_LEN; i++)
		e->mem[i] = (uint8_t)(i * 13 + 1);
	assert_int_equal(rr_clnt_mem_reg(e->c, e->mem, BUF_LEN), 0);
}

static void start(struct env *e, enum mode mode)
{
	start_with(e, mode, RR_REG_AUTO);
}

static struct verdict attack_now(struct env *e, const char *how)
{
	struct verdict v = {0};

	assert_int_equal(write(e->ctl, how, 1), 1);
	assert_int_equal(read(e->ctl, &v, sizeof(v)), sizeof(v));
	return v;
}

/* Every segment the call exposed is attacked; every access is refused. */
static struct verdict attack_refused(struct env *e)
{
	struct verdict v = attack_now(e, "g");

	assert_true(v.attacked > 0);
	assert_int_equal(v.succeeded, 0);
	assert_int_equal(v.status, RR_WC_REM_ACCESS_ERR);
	return v;
}

static void finish(struct env *e)
{
	struct rr_xprt_stats xs;
	int st;

	/* Invariant 4: the client's queues drain to zero at teardown. */
	assert_int_equal(rr_clnt_shutdown(e->c), 0);
	assert_int_equal(rr_clnt_stats(e->c, &xs), 0);
	assert_int_equal(xs.teardown_unbalanced, 0);
	assert_int_equal(rr_clnt_destroy(e->c), 0);
	assert_int_equal(waitpid(e->pid, &st, 0), e->pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	close(e->ctl);
	free(e->mem);
}

static void expect_unchanged(const struct env *e)
{
	for (int i = 0; i < BUF_LEN; i++)
		if (e->mem[i] != (uint8_t)(i * 13 + 1))
			fail_msg("client memory changed at byte %d", i);
}

/* A call exposing a write chunk (results) and a read chunk (arguments). */
static int exposing_call(struct env *e, struct rr_call *call, int timeout)
{
	static uint8_t res[64];
	static const uint8_t args[4] = {0, 0, 0x80, 0};

	*call = (struct rr_call){.prog = PROG,
				 .vers = 1,
				 .proc = 1,
				 .args = args,
				 .args_len = sizeof(args),
				 .arg_bulk = e->mem,
				 .arg_bulk_len = 32768,
				 .res = res,
				 .res_cap = sizeof(res),
				 .res_bulk = e->mem + 32768,
				 .res_bulk_cap = 16384,
				 .timeout_ms = timeout};
	return rr_clnt_call(e->c, call);
}

static void keys_kept_by_the_server_are_dead_after_the_reply(void **state)
{
	struct env e;
	struct rr_call call;
	struct rr_xprt_stats st;
	struct verdict v;

	(void)state;
	start(&e, M_REPLY);
	assert_int_equal(exposing_call(&e, &call, 0), 0);
	v = attack_refused(&e);
	expect_unchanged(&e);
	assert_int_equal(rr_clnt_stats(e.c, &st), 0);
	assert_int_equal(st.local_invs, 2); /* no Send With Invalidate */
	assert_int_equal(st.remote_invs, 0);
	assert_int_equal(v.invited_inv, 1); /* windows welcome it */
	finish(&e);
}

/*
 * Registration per call (devices without windows): the regions die when
 * the call returns, by deregistration, with no work request; and the
 * server is not invited to invalidate them.
 */
static void keys_registered_per_call_are_dead_after_the_reply(void **state)
{
	struct env e;
	struct rr_call call;
	struct rr_xprt_stats st;
	struct verdict v;

	(void)state;
	start_with(&e, M_REPLY, RR_REG_PER_CALL);
	assert_int_equal(exposing_call(&e, &call, 0), 0);
	v = attack_refused(&e);
	assert_int_equal(v.invited_inv, 0);
	expect_unchanged(&e);
	assert_int_equal(rr_clnt_stats(e.c, &st), 0);
	assert_int_equal(st.regs, 2);
	assert_int_equal(st.sync_invs, 2);
	assert_int_equal(st.local_invs, 0);
	finish(&e);
}

/* Uninvited, it is counted as bad, and the region is deregistered still. */
static void uninvited_send_with_invalidate_is_counted(void **state)
{
	struct env e;
	struct rr_call call;
	struct rr_xprt_stats st;
	struct verdict v;

	(void)state;
	start_with(&e, M_REPLY_INV, RR_REG_PER_CALL);
	assert_int_equal(exposing_call(&e, &call, 0), 0);
	v = attack_now(&e, "g");
	assert_int_equal(v.succeeded, 0);
	expect_unchanged(&e);
	assert_int_equal(rr_clnt_stats(e.c, &st), 0);
	assert_int_equal(st.bad_remote_invs, 1);
	assert_int_equal(st.remote_invs, 0);
	assert_int_equal(st.sync_invs, 2);
	finish(&e);
}

static void timed_out_call_registered_per_call_leaves_no_key(void **state)
{
	struct env e;
	struct rr_call call;

	(void)state;
	start_with(&e, M_SILENT, RR_REG_PER_CALL);
	assert_int_equal(exposing_call(&e, &call, 300), -ETIMEDOUT);
	attack_refused(&e);
	expect_unchanged(&e);
	finish(&e);
}

static void key_invalidated_by_the_server_is_not_invalidated_twice(void **state)
{
	struct env e;
	struct rr_call call;
	struct rr_xprt_stats st;
	struct verdict v;

	(void)state;
	start(&e, M_REPLY_INV);
	assert_int_equal(exposing_call(&e, &call, 0), 0);
	v = attack_now(&e, "g");
	assert_int_equal(v.succeeded, 0);
	assert_int_equal(v.status, RR_WC_REM_ACCESS_ERR);
	expect_unchanged(&e);
	assert_int_equal(rr_clnt_stats(e.c, &st), 0);
	assert_int_equal(st.remote_invs, 1);
	assert_int_equal(st.local_invs, 1); /* only the read chunk's */
	finish(&e);
}

static void timed_out_call_leaves_no_key_alive(void **state)
{
	struct env e;
	struct rr_call call;

	(void)state;
	start(&e, M_SILENT);
	assert_int_equal(exposing_call(&e, &call, 300), -ETIMEDOUT);
	attack_refused(&e);
	expect_unchanged(&e);
	finish(&e);
}

static void send_with_invalidate_of_a_foreign_key_tears_down(void **state)
{
	struct env e;
	struct rr_call call;
	struct rr_xprt_stats st;
	struct verdict v;

	(void)state;
	start(&e, M_REPLY_WRONG_INV);
	/* Our provider refuses to invalidate a key that is not live (the
	 * connection dies), so the call fails before the client's own key
	 * check runs: that one is tested with a live key of another call
	 * (race_server.c, invalidation_of_another_calls_key_tears_down). */
	assert_true(exposing_call(&e, &call, 0) < 0);
	v = attack_now(&e, "g");
	assert_int_equal(v.succeeded, 0);
	expect_unchanged(&e);
	assert_int_equal(rr_clnt_stats(e.c, &st), 0);
	assert_int_equal(st.conn_lost, 1);
	/* the call's keys went with the connection, and are counted */
	assert_true(st.loss_fences >= 1);
	assert_int_equal(exposing_call(&e, &call, 0), -ECONNRESET);
	finish(&e);
}

static void arguments_cannot_be_read_after_the_reply(void **state)
{
	struct env e;
	struct rr_call call;
	struct verdict v;

	(void)state;
	start(&e, M_REPLY);
	assert_int_equal(exposing_call(&e, &call, 0), 0);
	v = attack_now(&e, "r");
	assert_int_equal(v.attacked, 1);
	assert_int_equal(v.succeeded, 0);
	assert_int_equal(v.status, RR_WC_REM_ACCESS_ERR);
	finish(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(keys_kept_by_the_server_are_dead_after_the_reply,
			     CASE_S, NULL, NULL),
		RR_T_LIMITED(arguments_cannot_be_read_after_the_reply, CASE_S,
			     NULL, NULL),
		RR_T_LIMITED(
			key_invalidated_by_the_server_is_not_invalidated_twice,
			CASE_S, NULL, NULL),
		RR_T_LIMITED(timed_out_call_leaves_no_key_alive, CASE_S, NULL,
			     NULL),
		RR_T_LIMITED(send_with_invalidate_of_a_foreign_key_tears_down,
			     CASE_S, NULL, NULL),
		RR_T_LIMITED(keys_registered_per_call_are_dead_after_the_reply,
			     CASE_S, NULL, NULL),
		RR_T_LIMITED(uninvited_send_with_invalidate_is_counted, CASE_S,
			     NULL, NULL),
		RR_T_LIMITED(timed_out_call_registered_per_call_leaves_no_key,
			     CASE_S, NULL, NULL),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
