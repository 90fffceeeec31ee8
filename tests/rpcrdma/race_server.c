/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Invariants 1 and 4 against a server that races the client (issue 20).
 *
 * The client runs over the "faults" provider with hold_invs: its
 * LOCAL_INVs are parked, the keys they name stay valid, until the test
 * releases them. The server is a process written on the fabric API
 * ("racer") that, from the moment it sends its reply, attacks every key
 * the call gave it (RDMA Write and Read), over and over. While the
 * invalidations are held its attacks succeed, as they may: the call has
 * not returned. The caller must not have its result then; once it has,
 * no attack may succeed and no byte of its memory may change.
 *
 * Also: a Send With Invalidate naming another live call's key (the
 * connection goes, both calls fail, nothing of either stays reachable),
 * and completions of the held LOCAL_INV that the client must not act on:
 * one tagged with the previous connection's generation, one with an old
 * sequence, and a duplicate after the real one.
 */
#include "clock.h"
#include "rpc/msg.h"
#include "rpcrdma/hdr.h"
#include "rpcrdma/xprt.h"

#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define PROG	   0x20000077
#define WAIT_MS	   10000
#define MEM_LEN	   (128 * 1024)
#define SRV_LEN	   (256 * 1024)
#define NRECV	   32
#define GRANT	   2  /* R_CREDITS: the racer's grant */
#define NCOUNTED   24 /* R_CREDITS: calls the client makes */
#define AFTER_MARK 16 /* attack rounds after the caller got its result */

enum mode {
	R_RACE,	       /* reply to the exposing call, then attack */
	R_FOREIGN,     /* two exposing calls: reply to the first With
			* Invalidate of the second's key, then attack both */
	R_RECONNECT,   /* drop the first connection after its reply */
	R_QUIET,       /* reply, attack only once the caller has its result */
	R_CREDITS,     /* grant GRANT credits, count what arrives beyond */
	R_LONG_WRITE,  /* reply: the write chunk holds more than offered */
	R_WRONG_WRITE, /* reply: the write list names the read chunk's key */
	R_TWICE,       /* reply to the exposing call twice */
	R_SILENT,      /* never reply: attack until the caller gave up */
};

/* What the racer reports at the end (and, on 's', so far). */
struct tally {
	int rounds, succeeded;		 /* all attacks */
	int after_mark, succeeded_after; /* after the caller had its result */
	int dead;			 /* the connection is gone */
	int most_outstanding, overruns;	 /* R_CREDITS */
};

/* ------------------------------------------------------------ the racer */

struct racer {
	int ctl;
	enum mode mode;
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_evch *ch;
	struct rr_cq *cq;
	struct rr_qp *qp;
	struct rr_listener *l;
	struct rr_mr *mr;
	uint8_t *buf; /* NRECV x 4K receives, 4K send, then attack data */
	struct rr_rdma_seg segs[8];
	bool readable[8];
	int nsegs;
	struct tally t;
	bool marked;
	uint8_t round;
	struct rr_wc stash[NRECV]; /* receives seen while waiting for a Send */
	int nstash;
	struct rr_cm_event early; /* a request that came while dropping */
	bool has_early;
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "racer: %s: %d\n", what, rc);
	_exit(2);
}

static void racer_setup(struct racer *a)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_storage ss;
	uint16_t port;
	int rc;

	a->buf = aligned_alloc(4096, SRV_LEN);
	memset(a->buf, 0xee, SRV_LEN);
	if ((rc = rr_device_open("iwarp", NULL, &a->dev)) ||
	    (rc = rr_pd_alloc(a->dev, &a->pd)) ||
	    (rc = rr_evch_create(a->dev, &a->ch)) ||
	    (rc = rr_cq_create(a->dev, 256, &a->cq)) ||
	    (rc = rr_mr_reg(a->pd, a->buf, SRV_LEN, RR_ACCESS_LOCAL_WRITE,
			    &a->mr)) ||
	    (rc = rr_listener_create(a->dev, a->ch, (struct sockaddr *)&sin,
				     sizeof(sin), 4, &a->l)) ||
	    (rc = rr_listener_addr(a->l, &ss)))
		die("setup", rc);
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (write(a->ctl, &port, sizeof(port)) != sizeof(port))
		die("ctl", errno);
}

static void post_recv(struct racer *a, uint32_t i)
{
	struct rr_sge sge = {(uintptr_t)a->buf + i * 4096, 4096,
			     rr_mr_lkey(a->mr)};
	struct rr_recv_wr rw = {
		.wr_id = 100 + i, .sg_list = &sge, .num_sge = 1};
	int rc = rr_qp_post_recv(a->qp, &rw, NULL);

	if (rc)
		die("recv", rc);
}

/* A new QP for each connection. */
static void racer_accept(struct racer *a)
{
	struct rr_qp_attr qa = {.sq_depth = 64,
				.rq_depth = NRECV,
				.max_send_sge = 1,
				.max_recv_sge = 1,
				.ird = 8,
				.ord = 8,
				.send_cq = a->cq,
				.recv_cq = a->cq,
				.evch = a->ch};
	/* RFC 8797: 4 KiB inline both ways; we take Send With Invalidate. */
	const uint8_t pd[8] = {0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3};
	struct rr_cm_event ev;
	int rc;

	if ((rc = rr_qp_create(a->pd, &qa, &a->qp)))
		die("qp", rc);
	for (uint32_t i = 0; i < NRECV; i++)
		post_recv(a, i);
	if (a->has_early) {
		ev = a->early;
		a->has_early = false;
	} else if ((rc = rr_evch_get(a->ch, &ev, WAIT_MS))) {
		die("request", rc);
	}
	if (ev.type != RR_CM_CONNECT_REQUEST)
		die("request", (int)ev.type);
	if ((rc = rr_conn_req_accept(ev.req, a->qp, pd, sizeof(pd))))
		die("accept", rc);
	/* Late events of a QP already gone are passed over. */
	do
		if ((rc = rr_evch_get(a->ch, &ev, WAIT_MS)))
			die("established", rc);
	while (ev.qp != a->qp);
	if (ev.type != RR_CM_ESTABLISHED)
		die("established", (int)ev.type);
}

/* The old QP goes: the client sees its connection lost. */
static void racer_drop(struct racer *a)
{
	struct rr_cm_event ev;
	struct rr_wc wc;

	rr_qp_disconnect(a->qp);
	/* The client comes back at once: its request is kept. */
	while (rr_evch_get(a->ch, &ev, 200) == 0) {
		if (ev.type == RR_CM_CONNECT_REQUEST) {
			a->early = ev;
			a->has_early = true;
			break;
		}
	}
	if (rr_qp_destroy(a->qp))
		die("destroy", -1);
	a->qp = NULL;
	/*
	 * Drained once the QP is gone: a receive its engine completed
	 * after an earlier drain would be taken for the next connection's
	 * and posted again on a full receive queue.
	 */
	while (rr_cq_poll(a->cq, &wc, 1) == 1)
		;
	/* and receives kept aside were the old QP's: none is posted again */
	a->nstash = 0;
}

static bool next_wc(struct racer *a, struct rr_wc *wc)
{
	for (;;) {
		if (rr_cq_poll(a->cq, wc, 1) == 1)
			return true;
		if (rr_cq_wait(a->cq, WAIT_MS))
			return false;
	}
}

/* A receive completion: one kept aside by reply() first. */
static bool recv_within(struct racer *a, struct rr_wc *wc, int ms)
{
	if (a->nstash) {
		*wc = a->stash[0];
		memmove(a->stash, a->stash + 1, --a->nstash * sizeof(*wc));
		return true;
	}
	do {
		while (rr_cq_poll(a->cq, wc, 1) != 1)
			if (rr_cq_wait(a->cq, ms))
				return false;
	} while (wc->opcode != RR_WC_RECV);
	return true;
}

/* A call within ms: its header into h, the RPC xid into *xid. */
static bool call_within(struct racer *a, struct rr_rdma_hdr *h, uint32_t *xid,
			int ms)
{
	struct rr_call_hdr ch;
	struct rr_wc wc;
	const uint8_t *m;
	int hl;

	if (!recv_within(a, &wc, ms))
		return false;
	if (wc.status != RR_WC_SUCCESS)
		die("recv status", (int)wc.status);
	m = a->buf + (wc.wr_id - 100) * 4096;
	hl = rr__rdma_hdr_decode(m, wc.byte_len, h);
	if (hl < 0 || rr__call_hdr_decode(m + hl, wc.byte_len - hl, &ch) < 0)
		die("decode", hl);
	*xid = ch.xid;
	post_recv(a, (uint32_t)(wc.wr_id - 100));
	return true;
}

static void next_call(struct racer *a, struct rr_rdma_hdr *h, uint32_t *xid)
{
	if (!call_within(a, h, xid, WAIT_MS))
		die("no call", -ETIMEDOUT);
}

/* An RDMA_MSG reply, accepted SUCCESS with empty results. */
static void reply(struct racer *a, const struct rr_rdma_hdr *call, uint32_t xid,
		  uint32_t inv)
{
	struct rr_rdma_hdr h = {.xid = call->xid,
				.vers = 1,
				.credits = a->mode == R_CREDITS ? GRANT : 8,
				.proc = RR_RDMA_MSG};
	struct rr_reply_hdr rh = {.xid = xid, .stat = RR_MSG_ACCEPTED};
	uint8_t *sb = a->buf + NRECV * 4096;
	struct rr_sge sge = {(uintptr_t)sb, 0, rr_mr_lkey(a->mr)};
	struct rr_send_wr wr = {.wr_id = 2,
				.sg_list = &sge,
				.num_sge = 1,
				.flags = RR_SEND_SIGNALED,
				.opcode =
					inv ? RR_WR_SEND_WITH_INV : RR_WR_SEND,
				.invalidate_rkey = inv};
	int n;
	struct rr_wc wc;

	/* A write list the client did not offer: it must refuse the reply. */
	if ((a->mode == R_LONG_WRITE || a->mode == R_WRONG_WRITE) &&
	    call->nwrite) {
		h.nwrite = 1;
		h.writes[0].nsegs = 1;
		h.writes[0].segs[0] = call->writes[0].segs[0];
		if (a->mode == R_LONG_WRITE)
			h.writes[0].segs[0].length += 4096;
		else if (call->nread)
			h.writes[0].segs[0].handle = call->reads[0].seg.handle;
	}
	n = rr__rdma_hdr_encode(&h, sb, 1024);

	sge.length = (uint32_t)(n + rr__reply_hdr_encode(&rh, sb + n, 1024));
	if (rr_qp_post_send(a->qp, &wr, NULL))
		die("reply", -1);
	/* A receive may complete first: kept for the next call_within. */
	for (;;) {
		if (!next_wc(a, &wc))
			die("reply completion", -ETIMEDOUT);
		if (wc.wr_id == 2)
			break;
		if (wc.opcode == RR_WC_RECV && a->nstash < NRECV)
			a->stash[a->nstash++] = wc;
	}
	if (wc.status != RR_WC_SUCCESS)
		die("reply completion", (int)wc.status);
}

static void keep_segs(struct racer *a, const struct rr_rdma_hdr *h)
{
	for (uint32_t i = 0; i < h->nwrite && a->nsegs < 8; i++) {
		a->readable[a->nsegs] = false;
		a->segs[a->nsegs++] = h->writes[i].segs[0];
	}
	if (h->has_reply && a->nsegs < 8) {
		a->readable[a->nsegs] = false;
		a->segs[a->nsegs++] = h->reply.segs[0];
	}
	for (uint32_t i = 0; i < h->nread && a->nsegs < 8; i++) {
		a->readable[a->nsegs] = true;
		a->segs[a->nsegs++] = h->reads[i].seg;
	}
}

static const struct rr_rdma_seg *fence_seg(const struct racer *a)
{
	for (int i = 0; i < a->nsegs; i++)
		if (a->readable[i])
			return &a->segs[i];
	return NULL;
}

/*
 * One attack through a segment: a Write of 64 bytes of this round's
 * pattern followed by a Read (which tells whether the Write was taken),
 * or a Read of 64 bytes of a read chunk. SUCCESS: client memory reached.
 */
static uint32_t attack_seg(struct racer *a, const struct rr_rdma_seg *seg,
			   bool readable)
{
	uint8_t *data = a->buf + NRECV * 4096 + 4096;
	struct rr_sge sge = {(uintptr_t)data, 64, rr_mr_lkey(a->mr)};
	struct rr_send_wr rd = {.wr_id = 11,
				.opcode = RR_WR_RDMA_READ,
				.sg_list = &sge,
				.num_sge = 1,
				.flags = RR_SEND_SIGNALED,
				.rdma = {seg->offset, seg->handle}};
	struct rr_sge wsge = {(uintptr_t)data + 64, 64, rr_mr_lkey(a->mr)};
	struct rr_send_wr wr = {.wr_id = 10,
				.opcode = RR_WR_RDMA_WRITE,
				.sg_list = &wsge,
				.num_sge = 1,
				.flags = RR_SEND_SIGNALED,
				.rdma = {seg->offset, seg->handle},
				.next = &rd};
	uint32_t st = RR_WC_SUCCESS;
	int n = readable ? 1 : 2;
	struct rr_wc wc;

	/*
	 * A Write is fenced by a Read of nothing through a readable key of
	 * the call (the Write's window is write-only): the peer answers the
	 * Read only after it took the Write, and a refused Write costs the
	 * connection, so the Read fails too.
	 */
	if (!readable) {
		const struct rr_rdma_seg *f = fence_seg(a);

		sge.length = 0;
		rd.rdma.remote_addr = f ? f->offset : 0;
		rd.rdma.rkey = f ? f->handle : 0;
		if (!f) {
			wr.next = NULL;
			n = 1;
		}
	}
	memset(data + 64, 0xa0 ^ a->round, 64);
	int prc = rr_qp_post_send(a->qp, readable ? &rd : &wr, NULL);

	if (prc) {
		if (getenv("RACE_DEBUG"))
			fprintf(stderr, "racer: post: %d\n", prc);
		return RR_WC_WR_FLUSH_ERR;
	}
	while (n--) {
		if (!next_wc(a, &wc))
			return RR_WC_GENERAL_ERR;
		if (getenv("RACE_DEBUG"))
			fprintf(stderr, "racer: wc %lu op %d st %d\n",
				(unsigned long)wc.wr_id, wc.opcode, wc.status);
		if (wc.status != RR_WC_SUCCESS && st == RR_WC_SUCCESS)
			st = wc.status;
	}
	return st;
}

static void attack_round(struct racer *a)
{
	a->round++;
	for (int i = 0; i < a->nsegs && !a->t.dead; i++) {
		uint32_t st = attack_seg(a, &a->segs[i], a->readable[i]);
		bool ok = st == RR_WC_SUCCESS;

		a->t.rounds++;
		a->t.succeeded += ok;
		if (a->marked) {
			a->t.after_mark++;
			a->t.succeeded_after += ok;
		}
		/* A refused access costs the connection (a Terminate). */
		if (!ok && getenv("RACE_DEBUG"))
			fprintf(stderr,
				"racer: seg %d (%s, key %#x): status %u\n", i,
				a->readable[i] ? "read" : "write",
				a->segs[i].handle, st);
		if (!ok)
			a->t.dead = 1;
	}
}

/* Commands between rounds: 's' tally now, 'm' the caller has its result. */
static void racer_ctl(struct racer *a, int wait_ms)
{
	struct pollfd p = {.fd = a->ctl, .events = POLLIN};
	char c;

	while (poll(&p, 1, wait_ms) == 1) {
		if (read(a->ctl, &c, 1) != 1)
			_exit(3); /* the test went away */
		if (c == 's' && write(a->ctl, &a->t, sizeof(a->t)) < 0)
			_exit(3);
		if (c == 'm')
			a->marked = true;
		wait_ms = 0;
	}
}

/* Modes that attack only once the caller has its result. */
static bool quiet(const struct racer *a)
{
	return a->mode == R_QUIET || a->mode == R_TWICE;
}

/* Attacks from the reply on, until AFTER_MARK rounds after the mark. */
static void attack_until_done(struct racer *a)
{
	int after = 0;

	while (after < AFTER_MARK && !(a->marked && a->t.dead)) {
		bool waiting = a->t.dead || (quiet(a) && !a->marked);

		racer_ctl(a, waiting ? 50 : 0);
		if (!a->t.dead && (!quiet(a) || a->marked))
			attack_round(a);
		if (a->marked)
			after++;
	}
	if (write(a->ctl, &a->t, sizeof(a->t)) != sizeof(a->t))
		die("ctl", errno);
}

/*
 * A peer that counts: every call that arrives while GRANT are unanswered
 * is an overrun of the grant. Replies go out one at a time, the oldest
 * first, only once no call came for a while: a client that ignores the
 * grant has the time to show it.
 */
static void count_credits(struct racer *a)
{
	struct rr_rdma_hdr q[NRECV];
	uint32_t xq[NRECV], head = 0, n = 0, replied = 0;

	while (replied < NCOUNTED) {
		uint32_t at = (head + n) % NRECV;

		if (n < NRECV &&
		    call_within(a, &q[at], &xq[at], n ? 50 : WAIT_MS)) {
			n++;
			if ((int)n > a->t.most_outstanding)
				a->t.most_outstanding = (int)n;
			a->t.overruns += n > GRANT;
			continue;
		}
		if (!n)
			die("no call", -ETIMEDOUT);
		reply(a, &q[head], xq[head], 0);
		head = (head + 1) % NRECV;
		n--;
		replied++;
	}
	if (write(a->ctl, &a->t, sizeof(a->t)) != sizeof(a->t))
		die("ctl", errno);
}

static void racer(int ctl, enum mode mode)
{
	struct racer a = {.ctl = ctl, .mode = mode};
	struct rr_rdma_hdr h, h2;
	uint32_t xid, xid2;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	racer_setup(&a);
	racer_accept(&a);
	next_call(&a, &h, &xid); /* a NULL call: the credits */
	reply(&a, &h, xid, 0);
	if (mode == R_CREDITS) {
		count_credits(&a);
		_exit(0);
	}
	if (mode == R_RECONNECT) {
		racer_drop(&a);
		racer_accept(&a);
	}
	next_call(&a, &h, &xid);
	keep_segs(&a, &h);
	if (mode == R_FOREIGN) {
		next_call(&a, &h2, &xid2);
		keep_segs(&a, &h2);
		if (!h2.nwrite)
			die("no write chunk in the second call", 0);
		reply(&a, &h, xid, h2.writes[0].segs[0].handle);
	} else if (mode != R_SILENT) {
		reply(&a, &h, xid, 0);
		if (mode == R_TWICE)
			reply(&a, &h, xid, 0);
	}
	attack_until_done(&a);
	_exit(0);
}

/* ----------------------------------------------------------- the client */

struct env {
	pid_t pid;
	int ctl;
	struct rr_clnt *c;
	struct rr_device *dev;
	struct rr_fault_plan plan;
	struct rr_device_opts dopts;
	uint8_t *mem;
	uint8_t snap[MEM_LEN]; /* the memory when the caller got its result */
};

struct pending {
	struct rr_call call;
	uint8_t res[64];
	bool done;
	int rc;
	struct env *e;
};

/* The test in progress, for the teardown when it fails half-way. */
static struct env *g_live;

static void start_holding(struct env *e, enum mode mode, bool invs, bool regs)
{
	struct rr_clnt_opts o = {.provider = "faults",
				 .dev_opts = &e->dopts,
				 .no_reconnect = mode != R_RECONNECT};
	struct rr_call null = {
		.prog = PROG, .vers = 1, .proc = 0, .timeout_ms = WAIT_MS};
	struct pollfd pf;
	int sv[2];
	uint16_t port;

	memset(e, 0, sizeof(*e));
	e->plan = (struct rr_fault_plan){.seed = 20,
					 .hold_invs = invs,
					 .hold_regs = regs,
					 .reorder_ppm = invs || regs ? 0 : 1};
	e->dopts = (struct rr_device_opts){.faults = &e->plan};
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	e->pid = fork();
	assert_true(e->pid >= 0);
	if (e->pid == 0) {
		close(sv[0]);
		racer(sv[1], mode);
	}
	close(sv[1]);
	e->ctl = sv[0];
	g_live = e;
	/* A racer that never comes up fails the test here, not its bound. */
	pf = (struct pollfd){.fd = e->ctl, .events = POLLIN};
	if (poll(&pf, 1, WAIT_MS) != 1)
		fail_msg("the racer did not say its port within %d ms",
			 WAIT_MS);
	assert_int_equal(read(e->ctl, &port, sizeof(port)), sizeof(port));
	assert_int_equal(rr_clnt_create("127.0.0.1", port, &o, &e->c), 0);
	e->dev = rr_clnt_device(e->c);
	e->mem = aligned_alloc(4096, MEM_LEN);
	for (int i = 0; i < MEM_LEN; i++)
		e->mem[i] = (uint8_t)(i * 13 + 1);
	assert_int_equal(rr_clnt_mem_reg(e->c, e->mem, MEM_LEN), 0);
	assert_int_equal(rr_clnt_call(e->c, &null), 0);
}

static void start(struct env *e, enum mode mode, bool hold)
{
	start_holding(e, mode, hold, false);
}

static void on_done(struct rr_call *call, int rc, void *arg)
{
	struct pending *p = arg;

	/* ORDER: the snapshot is what the caller holds from now on. */
	memcpy(p->e->snap, p->e->mem, MEM_LEN);
	p->rc = rc;
	p->done = true;
	(void)call;
}

/* A call exposing a read chunk (arguments) and a write chunk (results). */
static void exposing_call_within(struct env *e, struct pending *p, size_t at,
				 int timeout_ms)
{
	static const uint8_t args[4] = {0, 0, 0x80, 0};

	memset(p, 0, sizeof(*p));
	p->e = e;
	p->call = (struct rr_call){.prog = PROG,
				   .vers = 1,
				   .proc = 1,
				   .args = args,
				   .args_len = sizeof(args),
				   .arg_bulk = e->mem + at,
				   .arg_bulk_len = 32768,
				   .res = p->res,
				   .res_cap = sizeof(p->res),
				   .res_bulk = e->mem + at + 32768,
				   .res_bulk_cap = 16384,
				   .timeout_ms = timeout_ms};
	assert_int_equal(rr_clnt_call_async(e->c, &p->call, on_done, p), 0);
}

static void exposing_call(struct env *e, struct pending *p, size_t at)
{
	exposing_call_within(e, p, at, 20000);
}

static struct tally tally_now(struct env *e)
{
	struct pollfd pf = {.fd = e->ctl, .events = POLLIN};
	struct tally t;

	assert_int_equal(write(e->ctl, "s", 1), 1);
	if (poll(&pf, 1, WAIT_MS) != 1)
		fail_msg("the racer did not answer for its tally");
	assert_int_equal(read(e->ctl, &t, sizeof(t)), sizeof(t));
	return t;
}

static int held(struct env *e, uint64_t *ids)
{
	return rr_faults_held_invs(e->dev, ids, NULL, 4);
}

/* Drives the client until the racer's attacks succeeded n times. */
static void drive_until_attacked(struct env *e, int n)
{
	uint64_t end = rr_t_now_ms() + WAIT_MS;

	while (tally_now(e).succeeded < n) {
		if (rr_t_now_ms() > end)
			fail_msg("the racer never reached the held keys");
		rr_clnt_progress(e->c, 5);
	}
}

static void drive_until_held(struct env *e, int n)
{
	uint64_t end = rr_t_now_ms() + WAIT_MS;

	while (held(e, NULL) < n) {
		if (rr_t_now_ms() > end) {
			struct rr_xprt_stats st;

			rr_clnt_stats(e->c, &st);
			fail_msg(
				"no LOCAL_INV was held (calls %lu, connects "
				"%lu, connection losses %lu, local invs %lu, "
				"timeouts %lu, sq waits %lu, credit waits %lu)",
				(unsigned long)st.calls,
				(unsigned long)st.connects,
				(unsigned long)st.conn_lost,
				(unsigned long)st.local_invs,
				(unsigned long)st.timeouts,
				(unsigned long)st.sq_waits,
				(unsigned long)st.credit_waits);
		}
		rr_clnt_progress(e->c, 5);
	}
}

static void drive_until_done(struct env *e, struct pending *p)
{
	uint64_t end = rr_t_now_ms() + WAIT_MS;

	while (!p->done) {
		if (rr_t_now_ms() > end)
			fail_msg("the call never returned");
		rr_clnt_progress(e->c, 5);
	}
}

/* The caller has its result: no attack may land from now on. */
static void mark_and_judge(struct env *e)
{
	struct tally t;

	assert_int_equal(write(e->ctl, "m", 1), 1);
	/* Keep driving: the racer's rounds go on while the client runs. */
	for (;;) {
		struct pollfd p = {.fd = e->ctl, .events = POLLIN};

		rr_clnt_progress(e->c, 1);
		if (poll(&p, 1, 1) == 1)
			break;
	}
	assert_int_equal(read(e->ctl, &t, sizeof(t)), sizeof(t));
	print_message("racer: %d attacks, %d landed; after the result: %d, "
		      "%d landed\n",
		      t.rounds, t.succeeded, t.after_mark, t.succeeded_after);
	assert_int_equal(t.succeeded_after, 0);
	for (int i = 0; i < MEM_LEN; i++)
		if (e->mem[i] != e->snap[i])
			fail_msg("client memory changed at byte %d after the "
				 "caller had its result",
				 i);
}

/*
 * A test that failed left its client (and its threads) and its racer: they
 * go here, so that the next test forks a process with no threads but one.
 */
static int teardown(void **state)
{
	struct env *e = g_live;

	(void)state;
	g_live = NULL;
	if (!e)
		return 0;
	if (e->c) {
		rr_faults_release(e->dev);
		rr_clnt_destroy(e->c);
	}
	close(e->ctl);
	kill(e->pid, SIGKILL);
	waitpid(e->pid, NULL, 0);
	free(e->mem);
	return 0;
}

static void finish(struct env *e)
{
	struct rr_xprt_stats xs;
	int st;

	rr_faults_release(e->dev);
	assert_int_equal(rr_clnt_shutdown(e->c), 0);
	assert_int_equal(rr_clnt_stats(e->c, &xs), 0);
	assert_int_equal(xs.teardown_unbalanced, 0);
	assert_int_equal(rr_clnt_destroy(e->c), 0);
	close(e->ctl);
	kill(e->pid, SIGKILL);
	assert_int_equal(waitpid(e->pid, &st, 0), e->pid);
	free(e->mem);
	g_live = NULL;
}

static struct rr_xprt_stats cstats(struct env *e)
{
	struct rr_xprt_stats s;

	assert_int_equal(rr_clnt_stats(e->c, &s), 0);
	return s;
}

/*
 * M1 of issue 20: the result must wait for the LOCAL_INV completion,
 * not only its post, however long the device takes.
 */
static void result_waits_for_held_invalidations(void **state)
{
	static struct env e;
	struct pending p;

	(void)state;
	start(&e, R_RACE, true);
	exposing_call(&e, &p, 0);
	drive_until_held(&e, 2);
	drive_until_attacked(&e, 4);
	if (p.done)
		fail_msg("the caller got its result (%d) while its LOCAL_INVs "
			 "were held and the server still wrote into it",
			 p.rc);
	assert_true(rr_faults_release(e.dev) >= 2);
	drive_until_done(&e, &p);
	assert_int_equal(p.rc, 0);
	mark_and_judge(&e);
	assert_int_equal(cstats(&e).local_invs, 2);
	finish(&e);
}

/*
 * The same for a call that times out: it parks until its invalidations
 * complete (architecture.md invariant 1), though the caller has waited enough.
 */
static void timed_out_call_waits_for_held_invalidations(void **state)
{
	static struct env e;
	struct pending p;

	(void)state;
	start(&e, R_SILENT, true);
	exposing_call_within(&e, &p, 0, 1000);
	drive_until_held(&e, 2);
	drive_until_attacked(&e, 4);
	if (p.done)
		fail_msg("a timed-out call returned (%d) while its LOCAL_INVs "
			 "were held",
			 p.rc);
	assert_true(rr_faults_release(e.dev) >= 2);
	drive_until_done(&e, &p);
	assert_int_equal(p.rc, -ETIMEDOUT);
	mark_and_judge(&e);
	assert_int_equal(cstats(&e).timeouts, 1);
	finish(&e);
}

/*
 * A call that times out before its binds ran: the REGs (and the Send
 * behind them) are still queued, no peer has seen a key. The windows
 * count as exposed from the post all the same, since the REGs will run:
 * the call is fenced (its LOCAL_INVs queue behind the binds) and returns
 * only once they completed. A client that trusted a bind only once it
 * completed would return at once and leave the keys to be bound later.
 */
static void call_timed_out_before_its_binds_ran_is_fenced(void **state)
{
	static struct env e;
	struct rr_fault_stats fs;
	struct pending p;

	(void)state;
	start_holding(&e, R_SILENT, false, true);
	exposing_call_within(&e, &p, 0, 300);
	drive_until_held(&e, 2);
	assert_int_equal(rr_faults_stats(e.dev, &fs), 0);
	assert_true(fs.regs_held >= 2);
	if (p.done)
		fail_msg("a timed-out call returned (%d) while its binds were "
			 "still queued",
			 p.rc);
	/* The binds, the Send, then the two LOCAL_INVs, in that order. */
	assert_true(rr_faults_release(e.dev) >= 5);
	drive_until_done(&e, &p);
	assert_int_equal(p.rc, -ETIMEDOUT);
	mark_and_judge(&e);
	assert_int_equal(cstats(&e).timeouts, 1);
	assert_int_equal(cstats(&e).local_invs, 2);
	finish(&e);
}

/*
 * M2 of issue 20: a Send With Invalidate naming a key that is live and
 * ours, but another call's: the connection goes and both calls fail.
 */
static void invalidation_of_another_calls_key_tears_down(void **state)
{
	static struct env e;
	struct pending a, b;
	struct rr_xprt_stats st;

	(void)state;
	start(&e, R_FOREIGN, false);
	exposing_call(&e, &a, 0);
	exposing_call(&e, &b, 65536);
	drive_until_done(&e, &a);
	drive_until_done(&e, &b);
	assert_true(a.rc < 0);
	assert_true(b.rc < 0);
	mark_and_judge(&e);
	st = cstats(&e);
	assert_int_equal(st.bad_remote_invs, 1);
	assert_int_equal(st.remote_invs, 0);
	assert_int_equal(st.conn_lost, 1);
	finish(&e);
}

/* The held LOCAL_INV's id, rewritten by f; injected; not acted on. */
static void inject_like_held(struct env *e, uint64_t (*f)(uint64_t))
{
	struct rr_wc wc = {.opcode = RR_WC_LOCAL_INV, .status = RR_WC_SUCCESS};
	uint64_t ids[4];

	assert_true(held(e, ids) >= 1);
	wc.wr_id = f(ids[0]);
	assert_int_equal(rr_faults_inject(e->dev, &wc), 0);
}

static uint64_t previous_gen(uint64_t id)
{
	uint16_t g = rr_wrid_gen(id);

	assert_true(g > 1); /* the client reconnected */
	return rr_wrid(g - 1, rr_wrid_kind(id), rr_wrid_slot(id),
		       rr_wrid_seq(id));
}

static uint64_t previous_seq(uint64_t id)
{
	return rr_wrid(rr_wrid_gen(id), rr_wrid_kind(id), rr_wrid_slot(id),
		       rr_wrid_seq(id) - 1);
}

/* Until the injected completion was dispatched (counted, or acted on). */
static void drive_until_seen(struct env *e, struct pending *p, uint64_t stale0)
{
	uint64_t end = rr_t_now_ms() + WAIT_MS;

	while (cstats(e).stale_cqes == stale0 && !p->done) {
		if (rr_t_now_ms() > end)
			fail_msg("the injected completion was never seen");
		rr_clnt_progress(e->c, 5);
	}
}

static void held_call_ignores(enum mode mode, uint64_t (*f)(uint64_t))
{
	static struct env e;
	struct pending p;
	uint64_t stale0;

	start(&e, mode, true);
	exposing_call(&e, &p, 0);
	drive_until_held(&e, 2);
	stale0 = cstats(&e).stale_cqes;
	inject_like_held(&e, f);
	drive_until_seen(&e, &p, stale0);
	if (p.done)
		fail_msg("a completion the client must not act on returned "
			 "the call while its LOCAL_INVs were held");
	assert_int_equal(cstats(&e).stale_cqes, stale0 + 1);
	assert_true(rr_faults_release(e.dev) >= 2);
	drive_until_done(&e, &p);
	assert_int_equal(p.rc, 0);
	mark_and_judge(&e);
	finish(&e);
}

/* The racer drops the first connection: the call goes on the second. */
static void completion_of_previous_connection_is_not_acted_on(void **state)
{
	(void)state;
	held_call_ignores(R_RECONNECT, previous_gen);
}

static void completion_of_previous_use_is_not_acted_on(void **state)
{
	(void)state;
	held_call_ignores(R_RACE, previous_seq);
}

/* The real completion, then the same again: counted, nothing else. */
static void duplicate_invalidation_completion_is_counted(void **state)
{
	static struct env e;
	struct rr_wc wc = {.opcode = RR_WC_LOCAL_INV, .status = RR_WC_SUCCESS};
	struct pending p;
	uint64_t ids[4], stale0, end = rr_t_now_ms() + WAIT_MS;
	struct rr_xprt_stats st;

	(void)state;
	start(&e, R_QUIET, true);
	exposing_call(&e, &p, 0);
	drive_until_held(&e, 2);
	assert_true(held(&e, ids) >= 1);
	assert_true(rr_faults_release(e.dev) >= 2);
	drive_until_done(&e, &p);
	assert_int_equal(p.rc, 0);
	stale0 = cstats(&e).stale_cqes;
	/* The chain's one signaled LOCAL_INV carries the call's id. */
	wc.wr_id = ids[0];
	assert_int_equal(rr_faults_inject(e.dev, &wc), 0);
	while (cstats(&e).stale_cqes == stale0 && rr_t_now_ms() < end)
		rr_clnt_progress(e.c, 5);
	st = cstats(&e);
	assert_int_equal(st.stale_cqes, stale0 + 1);
	assert_int_equal(st.unknown_cqes, 0);
	mark_and_judge(&e);
	finish(&e);
}

/*
 * Invariant 7 on the client: a reply whose write list claims more than
 * the chunk offered, or names a key that is not the result chunk's, is
 * refused (the call fails, the header is counted) and fenced as always.
 */
static void refused_write_list(enum mode mode)
{
	static struct env e;
	struct pending p;

	start(&e, mode, false);
	exposing_call(&e, &p, 0);
	drive_until_done(&e, &p);
	assert_int_equal(p.rc, -EPROTO);
	assert_int_equal(cstats(&e).bad_headers, 1);
	assert_true(p.call.res_bulk_len <= p.call.res_bulk_cap);
	mark_and_judge(&e);
	finish(&e);
}

static void write_list_longer_than_the_chunk_is_refused(void **state)
{
	(void)state;
	refused_write_list(R_LONG_WRITE);
}

static void write_list_naming_another_key_is_refused(void **state)
{
	(void)state;
	refused_write_list(R_WRONG_WRITE);
}

/*
 * A second reply to a call already answered names no call in flight: it
 * is counted and dropped, the call's result is the first reply's, and
 * the connection goes on.
 */
static void second_reply_to_a_call_is_counted_and_dropped(void **state)
{
	static struct env e;
	struct pending p;
	uint64_t end = rr_t_now_ms() + WAIT_MS;

	(void)state;
	start(&e, R_TWICE, false);
	exposing_call(&e, &p, 0);
	drive_until_done(&e, &p);
	assert_int_equal(p.rc, 0);
	while (cstats(&e).bad_xids == 0 && rr_t_now_ms() < end)
		rr_clnt_progress(e.c, 5);
	assert_int_equal(cstats(&e).bad_xids, 1);
	assert_int_equal(cstats(&e).conn_lost, 0);
	mark_and_judge(&e);
	finish(&e);
}

static void on_null(struct rr_call *call, int rc, void *arg)
{
	int *ndone = arg;

	(void)call;
	(*ndone) += rc == 0 ? 1 : 1000;
}

/*
 * Invariant 3 seen from the peer: a server granting GRANT credits never
 * has more than GRANT calls of ours unanswered, and has exactly GRANT at
 * some point (the client used its grant).
 */
static void peer_never_sees_more_calls_than_it_granted(void **state)
{
	static struct env e;
	static struct rr_call calls[NCOUNTED];
	uint64_t end = rr_t_now_ms() + WAIT_MS;
	struct tally t;
	int ndone = 0;

	(void)state;
	start(&e, R_CREDITS, false);
	for (int i = 0; i < NCOUNTED; i++) {
		calls[i] = (struct rr_call){.prog = PROG, .vers = 1, .proc = 0};
		assert_int_equal(
			rr_clnt_call_async(e.c, &calls[i], on_null, &ndone), 0);
	}
	while (ndone < NCOUNTED && rr_t_now_ms() < end)
		rr_clnt_progress(e.c, 5);
	assert_int_equal(ndone, NCOUNTED);
	assert_int_equal(read(e.ctl, &t, sizeof(t)), sizeof(t));
	print_message("peer: at most %d unanswered of a grant of %d, %d "
		      "overruns\n",
		      t.most_outstanding, GRANT, t.overruns);
	assert_int_equal(t.overruns, 0);
	assert_int_equal(t.most_outstanding, GRANT);
	assert_int_equal(cstats(&e).conn_lost, 0);
	finish(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(result_waits_for_held_invalidations, CASE_S, NULL,
			     teardown),
		RR_T_LIMITED(timed_out_call_waits_for_held_invalidations,
			     CASE_S, NULL, teardown),
		RR_T_LIMITED(call_timed_out_before_its_binds_ran_is_fenced,
			     CASE_S, NULL, teardown),
		RR_T_LIMITED(invalidation_of_another_calls_key_tears_down,
			     CASE_S, NULL, teardown),
		RR_T_LIMITED(completion_of_previous_connection_is_not_acted_on,
			     CASE_S, NULL, teardown),
		RR_T_LIMITED(completion_of_previous_use_is_not_acted_on, CASE_S,
			     NULL, teardown),
		RR_T_LIMITED(duplicate_invalidation_completion_is_counted,
			     CASE_S, NULL, teardown),
		RR_T_LIMITED(peer_never_sees_more_calls_than_it_granted, CASE_S,
			     NULL, teardown),
		RR_T_LIMITED(write_list_longer_than_the_chunk_is_refused,
			     CASE_S, NULL, teardown),
		RR_T_LIMITED(write_list_naming_another_key_is_refused, CASE_S,
			     NULL, teardown),
		RR_T_LIMITED(second_reply_to_a_call_is_counted_and_dropped,
			     CASE_S, NULL, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
