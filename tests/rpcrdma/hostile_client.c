/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Our server against a hostile client (issue 4, "Hostile peers"): a client
 * written directly on the fabric API, which connects with RFC 8797 private
 * data and then sends what a broken or malicious peer would: truncated and
 * malformed RPC-over-RDMA headers, versions and procedures we do not
 * speak, huge and "negative" counts and lengths, chunks outside what it
 * registered or placed where they make no sense, write chunks too small
 * for the result, Sends larger than the inline size agreed, more calls
 * than its credits, bad RPC versions and credentials, garbage arguments,
 * and connections that vanish before or during a call.
 *
 * Each scenario checks the answer the protocol requires (RDMA_ERROR with
 * ERR_VERS and our range or ERR_CHUNK, the RPC error, or the connection
 * dropped) and the server counter that records it. Meanwhile a
 * well-behaved rr_clnt client on its own connection keeps calling with
 * checked results, during the scenario and after it; its median latency
 * is printed, and every one of its calls must succeed within its 5 s
 * timeout (the only timing bound asserted). The whole suite runs twice:
 * handlers inline in the server loop, and in a worker pool.
 */
#include "hc_server.h"

#include "rpc/msg.h"
#include "rpcrdma/hdr.h"

#include <rpcrdma/rpc.h>

#include <stdatomic.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define CREDITS	     16 /* the server grants each client this many */
#define BULK_BUFS    8	/* the server's shared bulk buffers */
#define NRECV	     256
#define SLOT	     4096
#define EXPO_LEN     (64u << 10)
#define REPLY_MS     5000
#define GOOD_TMO_MS  5000
#define GOOD_AFTER   10 /* good calls that must succeed after a scenario */
#define GOOD_MAX_LAT (1u << 16)
#define FLOOD	     200
#define RPC_HDR_NONE 40 /* call header with AUTH_NONE credential/verifier */

static uint32_t svc_threads;  /* 0: handlers inline; else a worker pool */
static int svc_first_call_ms; /* 0: the server's default */

/* =================================================== the good client */

struct good {
	struct rr_clnt *c;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	bool running; /* the thread is up: teardown must stop it */
	uint64_t ok, failed;
	uint32_t nlat;
	uint32_t *lat_us;
	int first_error;
};

static bool good_echo(struct good *g, uint32_t n)
{
	uint8_t args[2048], res[2048];
	struct rr_call call = {.prog = HC_PROG,
			       .vers = HC_VERS,
			       .proc = HC_ECHO,
			       .args = args,
			       .args_len = 256 + (n % 7) * 256,
			       .res = res,
			       .res_cap = sizeof(res),
			       .timeout_ms = GOOD_TMO_MS};
	int rc;

	for (size_t i = 0; i < call.args_len; i++)
		args[i] = (uint8_t)(rr_t_pat(i + n) ^ n);
	rc = rr_clnt_call(g->c, &call);
	if (rc) {
		g->first_error = g->first_error ? g->first_error : rc;
		return false;
	}
	return call.res_len == call.args_len &&
	       !memcmp(args, res, call.args_len);
}

/* A READ whose result comes back by write chunk. */
static bool good_read(struct good *g, uint8_t *bulk, uint32_t size)
{
	uint8_t args[4], res[16];
	struct rr_call call = {.prog = HC_PROG,
			       .vers = HC_VERS,
			       .proc = HC_READ,
			       .args = args,
			       .args_len = 4,
			       .res = res,
			       .res_cap = sizeof(res),
			       .res_bulk = bulk,
			       .res_bulk_cap = size,
			       .timeout_ms = GOOD_TMO_MS};
	int rc;

	rr_t_put32(args, size);
	rc = rr_clnt_call(g->c, &call);
	if (rc) {
		g->first_error = g->first_error ? g->first_error : rc;
		return false;
	}
	if (call.res_len != 4 || rr_t_get32(res) != size ||
	    call.res_bulk_len != size)
		return false;
	for (uint32_t i = 0; i < size; i++)
		if (bulk[i] != rr_t_pat(i))
			return false;
	return true;
}

static void *good_main(void *arg)
{
	struct good *g = arg;
	uint8_t *bulk = malloc(65536);
	bool stop = false;

	for (uint32_t n = 0; bulk && !stop; n++) {
		uint64_t t0 = rr_t_now_us();
		bool ok = n % 4 == 3 ? good_read(g, bulk, 65536)
				     : good_echo(g, n);
		uint64_t dt = rr_t_now_us() - t0;

		pthread_mutex_lock(&g->mu);
		if (ok)
			g->ok++;
		else
			g->failed++;
		if (g->nlat < GOOD_MAX_LAT)
			g->lat_us[g->nlat++] = (uint32_t)dt;
		pthread_cond_broadcast(&g->cv);
		stop = g->stop;
		pthread_mutex_unlock(&g->mu);
	}
	free(bulk);
	return NULL;
}

static void good_start(struct good *g, uint16_t port)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->lat_us = calloc(GOOD_MAX_LAT, sizeof(*g->lat_us));
	assert_non_null(g->lat_us);
	assert_int_equal(rr_clnt_create("127.0.0.1", port, NULL, &g->c), 0);
	assert_int_equal(pthread_create(&g->th, NULL, good_main, g), 0);
	g->running = true;
}

/* Stops the thread and the client (also after a failed scenario). */
static void good_stop(struct good *g)
{
	if (!g->running)
		return;
	pthread_mutex_lock(&g->mu);
	g->stop = true;
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->th, NULL);
	g->running = false;
	rr_clnt_destroy(g->c);
}

/* Waits until n more good calls have completed (bounded). */
static bool good_wait(struct good *g, uint64_t n)
{
	struct timespec until;
	uint64_t target;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(n * GOOD_TMO_MS / 1000 + 5);
	pthread_mutex_lock(&g->mu);
	target = g->ok + g->failed + n;
	while (g->ok + g->failed < target && rc == 0)
		rc = pthread_cond_timedwait(&g->cv, &g->mu, &until);
	pthread_mutex_unlock(&g->mu);
	return rc == 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Stops the good client; every call it made must have succeeded. */
static void good_finish(struct good *g, const char *scenario)
{
	assert_true(good_wait(g, GOOD_AFTER));
	good_stop(g);
	qsort(g->lat_us, g->nlat, sizeof(*g->lat_us), cmp_u32);
	printf("[ %s / %s ] good client: %llu calls ok, %llu failed, "
	       "p50 %u us, max %u us\n",
	       scenario, svc_threads ? "pool" : "inline",
	       (unsigned long long)g->ok, (unsigned long long)g->failed,
	       g->nlat ? g->lat_us[g->nlat / 2] : 0,
	       g->nlat ? g->lat_us[g->nlat - 1] : 0);
	if (g->failed)
		fail_msg("good client: %llu calls failed (first rc %d)",
			 (unsigned long long)g->failed, g->first_error);
	assert_true(g->ok >= GOOD_AFTER);
}

/* ================================================= the hostile client */

struct hc {
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_evch *ch;
	struct rr_cq *cq;
	struct rr_qp *qp;
	struct rr_mr *mr;   /* receive and send slots */
	struct rr_mr *expo; /* what chunks may point into */
	uint8_t *buf;	    /* NRECV receive slots, then NRECV send slots */
	uint8_t *mem;	    /* EXPO_LEN, remotely readable and writable */
	uint32_t next_send;
	uint32_t sends_out;
	bool dead;
	/* receives completed and not yet consumed, in arrival order */
	uint32_t rq[NRECV], rlen[NRECV], rhead, rtail;
	uint32_t xid;
};

static uint8_t *send_slot(struct hc *h, uint32_t i)
{
	return h->buf + (size_t)(NRECV + i % NRECV) * SLOT;
}

static void post_recv(struct hc *h, uint32_t i)
{
	struct rr_sge sge = {(uintptr_t)(h->buf + (size_t)i * SLOT), SLOT,
			     rr_mr_lkey(h->mr)};
	struct rr_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1};

	/* Refused only once the QP is in error: the server dropped us. */
	if (rr_qp_post_recv(h->qp, &wr, NULL))
		h->dead = true;
}

static void hc_open(struct hc *h)
{
	struct rr_qp_attr qa = {.sq_depth = NRECV,
				.rq_depth = NRECV,
				.max_send_sge = 1,
				.max_recv_sge = 1,
				.ird = 8,
				.ord = 8};
	const unsigned rw = RR_ACCESS_LOCAL_WRITE | RR_ACCESS_REMOTE_READ |
			    RR_ACCESS_REMOTE_WRITE;

	memset(h, 0, sizeof(*h));
	h->xid = 0x1000;
	h->buf = aligned_alloc(4096, 2 * NRECV * SLOT);
	h->mem = aligned_alloc(4096, EXPO_LEN);
	assert_non_null(h->buf);
	assert_non_null(h->mem);
	memset(h->mem, 0x5a, EXPO_LEN);
	assert_int_equal(rr_device_open("iwarp", NULL, &h->dev), 0);
	assert_int_equal(rr_pd_alloc(h->dev, &h->pd), 0);
	assert_int_equal(rr_evch_create(h->dev, &h->ch), 0);
	assert_int_equal(rr_cq_create(h->dev, 2 * NRECV, &h->cq), 0);
	assert_int_equal(rr_mr_reg(h->pd, h->buf, 2 * NRECV * SLOT,
				   RR_ACCESS_LOCAL_WRITE, &h->mr),
			 0);
	assert_int_equal(rr_mr_reg(h->pd, h->mem, EXPO_LEN, rw, &h->expo), 0);
	qa.send_cq = qa.recv_cq = h->cq;
	qa.evch = h->ch;
	assert_int_equal(rr_qp_create(h->pd, &qa, &h->qp), 0);
	for (uint32_t i = 0; i < NRECV; i++)
		post_recv(h, i);
	assert_false(h->dead);
}

/* Connects with RFC 8797 parameters: 4 KiB inline each way. */
/* Connects; the CM event that answered (ESTABLISHED, REJECTED, ...). */
static enum rr_cm_event_type hc_try_connect(struct hc *h, uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_cparams cp = {.inline_send = SLOT, .inline_recv = SLOT};
	uint8_t pd[RR_CPARAMS_LEN];
	struct rr_cm_event ev;

	rr__cparams_encode(&cp, pd);
	assert_int_equal(rr_qp_connect(h->qp, (struct sockaddr *)&sin,
				       sizeof(sin), pd, sizeof(pd)),
			 0);
	assert_int_equal(rr_evch_get(h->ch, &ev, HC_WAIT_MS), 0);
	return ev.type;
}

static void hc_connect(struct hc *h, uint16_t port)
{
	assert_int_equal(hc_try_connect(h, port), RR_CM_ESTABLISHED);
}

static void hc_close(struct hc *h)
{
	if (h->qp)
		assert_int_equal(rr_qp_destroy(h->qp), 0);
	rr_mr_dereg(h->expo);
	rr_mr_dereg(h->mr);
	assert_int_equal(rr_cq_destroy(h->cq), 0);
	assert_int_equal(rr_evch_destroy(h->ch), 0);
	assert_int_equal(rr_pd_free(h->pd), 0);
	assert_int_equal(rr_device_close(h->dev), 0);
	free(h->buf);
	free(h->mem);
}

/* One completion (or none within tmo_ms): receives are queued. */
static bool hc_poll(struct hc *h, int tmo_ms)
{
	struct rr_wc wc;

	if (rr_cq_poll(h->cq, &wc, 1) != 1) {
		if (rr_cq_wait(h->cq, tmo_ms))
			return false;
		if (rr_cq_poll(h->cq, &wc, 1) != 1)
			return false;
	}
	if (wc.status != RR_WC_SUCCESS) {
		h->dead = true;
		if (wc.opcode != RR_WC_RECV && h->sends_out)
			h->sends_out--;
		return true;
	}
	if (wc.opcode == RR_WC_RECV) {
		h->rq[h->rtail % NRECV] = (uint32_t)wc.wr_id;
		h->rlen[h->rtail % NRECV] = wc.byte_len;
		h->rtail++;
	} else if (h->sends_out) {
		h->sends_out--;
	}
	return true;
}

/* Posts one Send of len bytes (already in the next send slot). */
static int hc_post(struct hc *h, uint32_t len)
{
	uint32_t i = h->next_send++;
	struct rr_sge sge = {(uintptr_t)send_slot(h, i), len,
			     rr_mr_lkey(h->mr)};
	struct rr_send_wr wr = {.wr_id = 1000 + i % NRECV,
				.opcode = RR_WR_SEND,
				.flags = RR_SEND_SIGNALED,
				.sg_list = &sge,
				.num_sge = 1};
	int rc = rr_qp_post_send(h->qp, &wr, NULL);

	if (!rc)
		h->sends_out++;
	return rc;
}

static int hc_send(struct hc *h, const void *msg, uint32_t len)
{
	memcpy(send_slot(h, h->next_send), msg, len);
	return hc_post(h, len);
}

/*
 * The next message from the server, copied to out (up to SLOT bytes).
 * Returns its length, -ECONNRESET when the connection died first, or
 * -ETIMEDOUT.
 */
static int hc_recv(struct hc *h, uint8_t *out)
{
	uint64_t end = rr_t_now_us() + (uint64_t)REPLY_MS * 1000;
	uint32_t i, len;

	while (h->rhead == h->rtail) {
		if (h->dead)
			return -ECONNRESET;
		if (rr_t_now_us() >= end)
			return -ETIMEDOUT;
		hc_poll(h, 100);
	}
	i = h->rq[h->rhead % NRECV];
	len = h->rlen[h->rhead % NRECV];
	h->rhead++;
	memcpy(out, h->buf + (size_t)i * SLOT, len);
	post_recv(h, i);
	return (int)len;
}

/* Waits until the server has dropped us (a flush or a CM event). */
static bool hc_wait_dead(struct hc *h)
{
	uint64_t end = rr_t_now_us() + (uint64_t)HC_WAIT_MS * 1000;
	struct rr_cm_event ev;

	while (!h->dead && rr_t_now_us() < end) {
		if (rr_evch_get(h->ch, &ev, 0) == 0 &&
		    (ev.type == RR_CM_DISCONNECTED ||
		     ev.type == RR_CM_QP_ERROR))
			h->dead = true;
		else
			hc_poll(h, 50);
	}
	return h->dead;
}

/* ---------------------------------------------------- message builders */

static int put_words(uint8_t *p, const uint32_t *w, int n)
{
	for (int i = 0; i < n; i++)
		rr_t_put32(p + 4 * i, w[i]);
	return 4 * n;
}

/* An RPC call header with AUTH_NONE; returns its length. */
static int rpc_call(uint8_t *p, uint32_t xid, uint32_t rpcvers, uint32_t prog,
		    uint32_t proc)
{
	struct rr_call_hdr c = {.xid = xid,
				.rpcvers = rpcvers,
				.prog = prog,
				.vers = HC_VERS,
				.proc = proc};
	int n = rr__call_hdr_encode(&c, p, RPC_HDR_NONE);

	assert_int_equal(n, RPC_HDR_NONE);
	return n;
}

/* RDMA_MSG header from h, then an RPC call of proc with args. */
static uint32_t build_call(struct hc *h, uint8_t *m, struct rr_rdma_hdr *rh,
			   uint32_t rpcvers, uint32_t proc, const void *args,
			   uint32_t alen)
{
	int n;

	rh->xid = ++h->xid;
	rh->vers = RR_RDMA_VERSION;
	rh->credits = CREDITS;
	n = rr__rdma_hdr_encode(rh, m, SLOT);
	assert_true(n > 0);
	n += rpc_call(m + n, rh->xid, rpcvers, HC_PROG, proc);
	memcpy(m + n, args, alen);
	return (uint32_t)n + alen;
}

/* A plain inline ECHO call; returns its xid. */
static int try_echo(struct hc *h, uint32_t seed, uint32_t *xid)
{
	uint8_t m[256], args[64];
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG};
	uint32_t len;

	for (int i = 0; i < 64; i++)
		args[i] = (uint8_t)(seed + (uint32_t)i);
	len = build_call(h, m, &rh, 2, HC_ECHO, args, sizeof(args));
	*xid = rh.xid;
	return hc_send(h, m, len);
}

static uint32_t send_echo(struct hc *h, uint32_t seed)
{
	uint32_t xid;

	assert_int_equal(try_echo(h, seed, &xid), 0);
	return xid;
}

struct answer {
	int len;
	struct rr_rdma_hdr h;
	int hlen;
	struct rr_reply_hdr rpc;
	const uint8_t *res;
	size_t res_len;
	uint8_t raw[SLOT];
};

/* The next reply, its transport header and, if any, RPC reply decoded. */
static struct answer *next_answer(struct hc *h)
{
	static struct answer a;
	int n;

	memset(&a, 0, sizeof(a));
	a.len = hc_recv(h, a.raw);
	if (a.len < 0)
		return &a;
	a.hlen = rr__rdma_hdr_decode(a.raw, (size_t)a.len, &a.h);
	if (a.hlen < 0 || a.h.proc != RR_RDMA_MSG)
		return &a;
	n = rr__reply_hdr_decode(a.raw + a.hlen, (size_t)(a.len - a.hlen),
				 &a.rpc);
	if (n > 0) {
		a.res = a.raw + a.hlen + n;
		a.res_len = (size_t)(a.len - a.hlen - n);
	}
	return &a;
}

/* An ECHO on this connection still works: the server still serves it. */
static void expect_echo_ok(struct hc *h)
{
	uint32_t xid = send_echo(h, 7);
	struct answer *a = next_answer(h);

	assert_true(a->len > 0);
	assert_int_equal(a->h.xid, xid);
	assert_int_equal(a->h.proc, RR_RDMA_MSG);
	assert_int_equal(a->rpc.stat, RR_MSG_ACCEPTED);
	assert_int_equal(a->rpc.accept, RR_SUCCESS);
	assert_int_equal(a->res_len, 64);
	assert_int_equal(a->res[0], 7);
}

static void expect_rdma_error(struct hc *h, uint32_t xid, uint32_t err)
{
	struct answer *a = next_answer(h);

	assert_true(a->len > 0);
	/* Raw words: an ERR_VERS echoes a version we could not decode. */
	assert_true(a->len >= 20);
	assert_int_equal(rr_t_get32(a->raw), xid);
	assert_int_equal(rr_t_get32(a->raw + 12), RR_RDMA_ERROR);
	assert_int_equal(rr_t_get32(a->raw + 16), err);
	if (err == RR_ERR_VERS) {
		assert_int_equal(a->len, 28);
		assert_int_equal(rr_t_get32(a->raw + 20), RR_RDMA_VERSION);
		assert_int_equal(rr_t_get32(a->raw + 24), RR_RDMA_VERSION);
	}
}

/* ======================================================== the fixture */

struct env {
	struct hc_server sv;
	struct good g;
	struct rr_xprt_stats before;
	pid_t helper; /* a stalling client, when the test has one */
	int helper_w, helper_r;
};

static void staller_main(int in, int out, uint16_t port);

static int start_helper(struct env *e)
{
	int p[2], q[2];

	if (pipe(p) || pipe(q))
		return -1;
	e->helper = fork();
	if (e->helper < 0)
		return -1;
	if (e->helper == 0) {
		close(p[1]);
		close(q[0]);
		staller_main(p[0], q[1], e->sv.port);
	}
	close(p[0]);
	close(q[1]);
	e->helper_w = p[1];
	e->helper_r = q[0];
	return 0;
}

static int setup_env(void **state, bool helper)
{
	struct env *e = calloc(1, sizeof(*e));
	/* 8 bulk buffers: the stalled client's calls can pin them all. */
	struct rr_svc_opts o = {.credits = CREDITS,
				.bulk_bufs = BULK_BUFS,
				.max_conns = 8,
				.first_call_ms = svc_first_call_ms,
				.threads = svc_threads};

	if (!e || hc_server_start(&e->sv, &o))
		return -1;
	if (helper && start_helper(e))
		return -1;
	good_start(&e->g, e->sv.port);
	/* The good client is connected and served before anything else. */
	if (!good_wait(&e->g, 2) || hc_server_stats(&e->sv, &e->before))
		return -1;
	*state = e;
	return 0;
}

static int setup(void **state)
{
	return setup_env(state, false);
}

static int setup_short_first_call(void **state)
{
	int rc;

	svc_first_call_ms = 300;
	rc = setup_env(state, false);
	svc_first_call_ms = 0;
	return rc;
}

static int setup_staller(void **state)
{
	return setup_env(state, true);
}

static int teardown(void **state)
{
	struct env *e = *state;
	struct rr_xprt_stats st;
	int rc;

	good_stop(&e->g);
	if (e->helper > 0) {
		kill(e->helper, SIGKILL);
		waitpid(e->helper, NULL, 0);
	}
	if (e->helper_w) {
		close(e->helper_w);
		close(e->helper_r);
	}
	free(e->g.lat_us);
	pthread_mutex_destroy(&e->g.mu);
	pthread_cond_destroy(&e->g.cv);
	rc = hc_server_stop(&e->sv, &st);

	if (!rc && st.teardown_unbalanced) {
		fprintf(stderr, "server: %llu connections undrained\n",
			(unsigned long long)st.teardown_unbalanced);
		rc = -1;
	}
	free(e);
	return rc;
}

static struct rr_xprt_stats stats(struct env *e)
{
	struct rr_xprt_stats st;

	assert_int_equal(hc_server_stats(&e->sv, &st), 0);
	return st;
}

/*
 * Waits for the server to count `want` lost connections more than at
 * the start. The server notices a drop asynchronously, so this re-reads
 * its counters after each further good call (an event), for HC_WAIT_MS
 * at most: a drop by the stall bound comes seconds later, while the
 * good client's calls, not held up, take microseconds.
 */
static void wait_conn_lost(struct env *e, uint64_t want)
{
	for (uint64_t end = rr_t_now_us() + (uint64_t)HC_WAIT_MS * 1000;
	     rr_t_now_us() < end;) {
		if (stats(e).conn_lost - e->before.conn_lost >= want)
			return;
		assert_true(good_wait(&e->g, 1));
	}
	fail_msg("server did not count %llu lost connections",
		 (unsigned long long)want);
}

#define DELTA(st, e, f) ((st).f - (e)->before.f)

/* =========================================================== scenarios */

static void truncated_headers(void **state)
{
	struct env *e = *state;
	struct hc h;
	uint8_t m[32];
	struct rr_xprt_stats st;
	uint32_t xid = 0x7777;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	/* 8 bytes: not even the fixed part. No xid to answer: silence. */
	memset(m, 0xab, 8);
	assert_int_equal(hc_send(&h, m, 8), 0);
	/* The fixed part, RDMA_MSG, then a read list cut short. */
	put_words(m, (uint32_t[]){xid, 1, CREDITS, RR_RDMA_MSG, 1}, 5);
	assert_int_equal(hc_send(&h, m, 20), 0);
	expect_rdma_error(&h, xid, RR_ERR_CHUNK);
	/* The next answer is this call's: the 8 bytes got none. */
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(DELTA(st, e, bad_headers), 2);
	assert_int_equal(DELTA(st, e, rdma_errors_sent), 1);
	assert_int_equal(DELTA(st, e, conn_lost), 0);
	hc_close(&h);
	good_finish(&e->g, "truncated headers");
}

static void bad_transport_version(void **state)
{
	struct env *e = *state;
	const uint32_t vers[] = {0, 2, 7, 0xffffffffu};
	struct rr_xprt_stats st;
	uint8_t m[256];
	struct hc h;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	for (uint32_t i = 0; i < 4; i++) {
		int n = put_words(m,
				  (uint32_t[]){0x100 + i, vers[i], CREDITS,
					       RR_RDMA_MSG, 0, 0, 0},
				  7);

		n += rpc_call(m + n, 0x100 + i, 2, HC_PROG, HC_NULL);
		assert_int_equal(hc_send(&h, m, (uint32_t)n), 0);
		expect_rdma_error(&h, 0x100 + i, RR_ERR_VERS);
	}
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(DELTA(st, e, bad_headers), 4);
	assert_int_equal(DELTA(st, e, rdma_errors_sent), 4);
	hc_close(&h);
	good_finish(&e->g, "bad transport version");
}

static void unknown_transport_procedure(void **state)
{
	struct env *e = *state;
	const uint32_t procs[] = {RR_RDMA_MSGP, RR_RDMA_DONE, 9, 0xffffffffu};
	struct rr_xprt_stats st;
	uint8_t m[256];
	struct hc h;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	for (uint32_t i = 0; i < 4; i++) {
		int n = put_words(
			m,
			(uint32_t[]){0x200 + i, 1, CREDITS, procs[i], 0, 0, 0},
			7);

		assert_int_equal(hc_send(&h, m, (uint32_t)n), 0);
		expect_rdma_error(&h, 0x200 + i, RR_ERR_CHUNK);
	}
	/* An RDMA_ERROR from a client is counted and not answered. */
	put_words(m,
		  (uint32_t[]){0x300, 1, CREDITS, RR_RDMA_ERROR, RR_ERR_CHUNK},
		  5);
	assert_int_equal(hc_send(&h, m, 20), 0);
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(DELTA(st, e, bad_headers), 5);
	assert_int_equal(DELTA(st, e, rdma_errors_sent), 4);
	assert_int_equal(DELTA(st, e, rdma_errors_received), 1);
	hc_close(&h);
	good_finish(&e->g, "unknown transport procedure");
}

/* Sends words w[0..n) as a header (xid first), expects ERR_CHUNK. */
static void expect_chunk_error(struct hc *h, uint8_t *m, const uint32_t *w,
			       int n)
{
	int len = put_words(m, w, n);

	len += rpc_call(m + len, w[0], 2, HC_PROG, HC_NULL);
	assert_int_equal(hc_send(h, m, (uint32_t)len), 0);
	expect_rdma_error(h, w[0], RR_ERR_CHUNK);
}

static void huge_counts_and_lengths(void **state)
{
	struct env *e = *state;
	const uint32_t M = 0xffffffffu, C = CREDITS, P = RR_RDMA_MSG;
	struct rr_xprt_stats st;
	struct hc h;
	uint8_t *m = malloc(SLOT);
	uint32_t rkey, *w = calloc(SLOT / 4, 4);
	uint64_t addr;
	int n = 0;

	assert_non_null(m);
	assert_non_null(w);
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	rkey = rr_mr_rkey(h.expo);
	addr = (uintptr_t)h.mem;
	/* A write chunk claiming 2^32-1 segments. */
	expect_chunk_error(&h, m, (uint32_t[]){0x400, 1, C, P, 0, 1, M, 0, 0},
			   9);
	/* A reply chunk claiming 2^32-1 segments. */
	expect_chunk_error(&h, m, (uint32_t[]){0x401, 1, C, P, 0, 0, 1, M}, 8);
	/* A read segment of 2^32-1 bytes. */
	expect_chunk_error(&h, m,
			   (uint32_t[]){0x402, 1, C, P, 1, 0, rkey, M,
					(uint32_t)(addr >> 32), (uint32_t)addr,
					0, 0, 0},
			   13);
	/* A read segment at position 2^32-1 (not even aligned). */
	expect_chunk_error(&h, m,
			   (uint32_t[]){0x403, 1, C, P, 1, M, rkey, 64,
					(uint32_t)(addr >> 32), (uint32_t)addr,
					0, 0, 0},
			   13);
	/* 150 read segments: a list far past our limit of 16. */
	w[n++] = 0x404;
	w[n++] = 1;
	w[n++] = C;
	w[n++] = P;
	for (int i = 0; i < 150; i++) {
		uint32_t seg[6] = {1, 0, rkey, 64, 0, (uint32_t)addr};

		memcpy(w + n, seg, sizeof(seg));
		n += 6;
	}
	w[n++] = 0;
	w[n++] = 0;
	w[n++] = 0;
	expect_chunk_error(&h, m, w, n);
	/* A write list that never ends: it runs on into the RPC message. */
	expect_chunk_error(&h, m,
			   (uint32_t[]){0x405,
					1,
					C,
					P,
					0,
					1,
					1,
					rkey,
					64,
					0,
					(uint32_t)addr,
					1,
					1,
					rkey,
					64,
					0,
					(uint32_t)addr,
					1,
					1,
					rkey},
			   20);
	st = stats(e);
	assert_int_equal(DELTA(st, e, bad_headers), 6);
	assert_int_equal(DELTA(st, e, rdma_errors_sent), 6);
	expect_echo_ok(&h);
	hc_close(&h);
	free(m);
	free(w);
	good_finish(&e->g, "huge counts and lengths");
}

/* A write chunk of length 2^32-1 is room, not data: only the result. */
static void huge_write_chunk_takes_only_the_result(void **state)
{
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG, .nwrite = 1};
	uint8_t m[256], args[4];
	struct answer *a;
	struct hc h;
	uint32_t len;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	rh.writes[0].nsegs = 1;
	rh.writes[0].segs[0] = (struct rr_rdma_seg){
		rr_mr_rkey(h.expo), 0xffffffffu, (uintptr_t)h.mem};
	rr_t_put32(args, 1000);
	len = build_call(&h, m, &rh, 2, HC_READ, args, 4);
	assert_int_equal(hc_send(&h, m, len), 0);
	a = next_answer(&h);
	assert_true(a->hlen > 0);
	assert_int_equal(a->h.xid, rh.xid);
	assert_int_equal(a->rpc.accept, RR_SUCCESS);
	assert_int_equal(a->h.nwrite, 1);
	assert_int_equal(a->h.writes[0].segs[0].length, 1000);
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal(h.mem[i], rr_t_pat(i));
	for (uint32_t i = 1000; i < EXPO_LEN; i++)
		if (h.mem[i] != 0x5a)
			fail_msg("server wrote past the result at %u", i);
	hc_close(&h);
	good_finish(&e->g, "huge write chunk");
}

/* A WRITE whose data is "in" a read chunk at the given place. */
static void send_write_read_chunk(struct hc *h, uint32_t handle,
				  uint64_t offset, uint32_t len)
{
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG, .nread = 1};
	uint8_t m[256], args[4];
	uint32_t n;

	rh.reads[0] = (struct rr_rdma_read_seg){RPC_HDR_NONE + 4,
						{handle, len, offset}};
	rr_t_put32(args, len);
	n = build_call(h, m, &rh, 2, HC_WRITE, args, 4);
	assert_int_equal(hc_send(h, m, n), 0);
}

/*
 * A read chunk of several segments, as a client with small registrations
 * sends (the kernel's FRWR over rxe: 128 KiB each), from places that are
 * neither adjacent nor in order: the server must pull every segment, back
 * to back in the chunk's order, before the handler sees the data.
 */
static void read_chunk_of_many_segments_arrives_whole(void **state)
{
	static const uint32_t at[] = {40000, 100, 20000, 7};
	static const uint32_t len[] = {5000, 9000, 1, 4096};
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG, .nread = 4};
	uint8_t m[256], args[4], *want = malloc(20000);
	uint32_t n = 0;
	struct answer *a;
	struct hc h;

	assert_non_null(want);
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	for (uint32_t i = 0; i < EXPO_LEN; i++) /* so order shows */
		h.mem[i] = (uint8_t)(i * 7 + (i >> 8));
	for (uint32_t i = 0; i < 4; i++) {
		rh.reads[i] = (struct rr_rdma_read_seg){
			RPC_HDR_NONE + 4,
			{rr_mr_rkey(h.expo), len[i], (uintptr_t)h.mem + at[i]}};
		memcpy(want + n, h.mem + at[i], len[i]);
		n += len[i];
	}
	rr_t_put32(args, n);
	assert_int_equal(
		hc_send(&h, m, build_call(&h, m, &rh, 2, HC_WRITE, args, 4)),
		0);
	a = next_answer(&h);
	assert_true(a->hlen > 0);
	assert_int_equal(a->rpc.accept, RR_SUCCESS);
	assert_int_equal(a->res_len, 8);
	assert_int_equal(rr_t_get32(a->res), n);
	assert_int_equal(rr_t_get32(a->res + 4), rr_t_fnv1a(want, n));
	hc_close(&h);
	free(want);
	good_finish(&e->g, "read chunk of many segments");
}

/* A READ of size bytes offering the given write and reply chunks. */
static void send_read_chunks(struct hc *h, uint32_t size,
			     const struct rr_rdma_seg *wseg,
			     const struct rr_rdma_seg *rseg)
{
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG};
	uint8_t m[256], args[4];
	uint32_t n;

	if (wseg) {
		rh.nwrite = 1;
		rh.writes[0].nsegs = 1;
		rh.writes[0].segs[0] = *wseg;
	}
	if (rseg) {
		rh.has_reply = true;
		rh.reply.nsegs = 1;
		rh.reply.segs[0] = *rseg;
	}
	rr_t_put32(args, size);
	n = build_call(h, m, &rh, 2, HC_READ, args, 4);
	assert_int_equal(hc_send(h, m, n), 0);
}

/*
 * Chunks naming memory we did not register, or past its end: the
 * server's RDMA Read or Write fails, and it must drop that connection
 * (the peer broke the protocol; there is no answer for it), count it and
 * go on serving everyone else.
 */
static void chunks_outside_registration(void **state)
{
	struct env *e = *state;
	struct rr_xprt_stats st;
	struct rr_rdma_seg seg;
	struct hc h;

	/* A read chunk running past the end of what we registered. */
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	send_write_read_chunk(&h, rr_mr_rkey(h.expo),
			      (uintptr_t)h.mem + EXPO_LEN - 4096, 16384);
	assert_true(hc_wait_dead(&h));
	hc_close(&h);
	/* A read chunk with a handle we never registered at all. */
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	send_write_read_chunk(&h, 0xdead00u, (uintptr_t)h.mem, 4096);
	assert_true(hc_wait_dead(&h));
	hc_close(&h);
	/* A write chunk running past the end. */
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	seg = (struct rr_rdma_seg){rr_mr_rkey(h.expo), 8192,
				   (uintptr_t)h.mem + EXPO_LEN - 100};
	send_read_chunks(&h, 8192, &seg, NULL);
	assert_true(hc_wait_dead(&h));
	hc_close(&h);
	/* A reply chunk (the result is too big to go inline) we never had. */
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	seg = (struct rr_rdma_seg){0xbad00u, 65536, (uintptr_t)h.mem};
	send_read_chunks(&h, 8000, NULL, &seg);
	assert_true(hc_wait_dead(&h));
	hc_close(&h);
	wait_conn_lost(e, 4);
	st = stats(e);
	assert_int_equal(DELTA(st, e, read_chunks), 2);
	/* (write_chunks: the good client's READs use them too) */
	assert_int_equal(DELTA(st, e, reply_chunks), 1);
	good_finish(&e->g, "chunks outside registration");
}

/* A Send larger than the inline size we agreed: it cannot be received. */
static void send_larger_than_inline(void **state)
{
	struct env *e = *state;
	uint8_t *m = calloc(1, SLOT);
	struct hc h;

	assert_non_null(m);
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	/* A good call first: it may be answered before we are dropped. */
	send_echo(&h, 1);
	/* Two slots' worth, from two adjacent send slots. */
	while (h.next_send % NRECV == NRECV - 1)
		h.next_send++;
	memcpy(send_slot(&h, h.next_send), m, SLOT);
	memcpy(send_slot(&h, h.next_send + 1), m, SLOT);
	assert_int_equal(hc_post(&h, 2 * SLOT), 0);
	assert_true(hc_wait_dead(&h));
	hc_close(&h);
	free(m);
	wait_conn_lost(e, 1);
	good_finish(&e->g, "send larger than inline");
}

/* Chunk lists that decode but make no sense for the call. */
static void chunk_semantics(void **state)
{
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_NOMSG, .nread = 1};
	struct rr_xprt_stats st;
	uint8_t m[256], args[4];
	struct hc h;
	uint32_t n;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	/* RDMA_NOMSG whose read chunk holds no RPC call, only bytes. */
	rh.reads[0] = (struct rr_rdma_read_seg){
		0, {rr_mr_rkey(h.expo), 64, (uintptr_t)h.mem}};
	/* Only the transport header goes: the "call" is the chunk's bytes. */
	build_call(&h, m, &rh, 2, HC_NULL, m, 0);
	assert_int_equal(hc_send(&h, m, (uint32_t)rr__rdma_hdr_size(&rh)), 0);
	expect_rdma_error(&h, rh.xid, RR_ERR_CHUNK);
	/* RDMA_NOMSG without a read chunk: where would the call be? */
	rh.nread = 0;
	n = build_call(&h, m, &rh, 2, HC_NULL, m, 0);
	assert_int_equal(hc_send(&h, m, n), 0);
	expect_rdma_error(&h, rh.xid, RR_ERR_CHUNK);
	/* A read chunk inside the call header: what it makes is no call. */
	rh = (struct rr_rdma_hdr){.proc = RR_RDMA_MSG, .nread = 1};
	rh.reads[0] = (struct rr_rdma_read_seg){
		4, {rr_mr_rkey(h.expo), 64, (uintptr_t)h.mem}};
	rr_t_put32(args, 64);
	n = build_call(&h, m, &rh, 2, HC_WRITE, args, 4);
	assert_int_equal(hc_send(&h, m, n), 0);
	expect_rdma_error(&h, rh.xid, RR_ERR_CHUNK);
	/* Two read chunks that overlap in the stream they would make. */
	rh = (struct rr_rdma_hdr){.proc = RR_RDMA_MSG, .nread = 2};
	rh.reads[0] = (struct rr_rdma_read_seg){
		RPC_HDR_NONE + 4, {rr_mr_rkey(h.expo), 64, (uintptr_t)h.mem}};
	rh.reads[1] = (struct rr_rdma_read_seg){
		RPC_HDR_NONE + 4 + 60,
		{rr_mr_rkey(h.expo), 8, (uintptr_t)h.mem}};
	n = build_call(&h, m, &rh, 2, HC_ECHO, args, 4);
	assert_int_equal(hc_send(&h, m, n), 0);
	expect_rdma_error(&h, rh.xid, RR_ERR_CHUNK);
	/* A read chunk past the end of the message it belongs in. */
	rh = (struct rr_rdma_hdr){.proc = RR_RDMA_MSG, .nread = 1};
	rh.reads[0] = (struct rr_rdma_read_seg){
		RPC_HDR_NONE + 8, {rr_mr_rkey(h.expo), 64, (uintptr_t)h.mem}};
	n = build_call(&h, m, &rh, 2, HC_ECHO, args, 4);
	assert_int_equal(hc_send(&h, m, n), 0);
	expect_rdma_error(&h, rh.xid, RR_ERR_CHUNK);
	/* Two write chunks for one result. */
	rh = (struct rr_rdma_hdr){.proc = RR_RDMA_MSG, .nwrite = 2};
	for (int i = 0; i < 2; i++) {
		rh.writes[i].nsegs = 1;
		rh.writes[i].segs[0] = (struct rr_rdma_seg){
			rr_mr_rkey(h.expo), 4096, (uintptr_t)h.mem};
	}
	rr_t_put32(args, 4096);
	n = build_call(&h, m, &rh, 2, HC_READ, args, 4);
	assert_int_equal(hc_send(&h, m, n), 0);
	expect_rdma_error(&h, rh.xid, RR_ERR_CHUNK);
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(DELTA(st, e, bad_headers), 6);
	assert_int_equal(DELTA(st, e, rdma_errors_sent), 6);
	/* pulled, then found no call: the first and the third */
	assert_int_equal(DELTA(st, e, read_chunks), 2);
	for (uint32_t i = 0; i < EXPO_LEN; i++)
		if (h.mem[i] != 0x5a)
			fail_msg("server wrote into our memory at %u", i);
	hc_close(&h);
	good_finish(&e->g, "chunk semantics");
}

static void write_chunk_too_small(void **state)
{
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG, .nwrite = 1};
	struct rr_xprt_stats st;
	uint8_t m[256], args[4];
	struct hc h;
	uint32_t len;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	rh.writes[0].nsegs = 1;
	rh.writes[0].segs[0] =
		(struct rr_rdma_seg){rr_mr_rkey(h.expo), 100, (uintptr_t)h.mem};
	rr_t_put32(args, 8192);
	len = build_call(&h, m, &rh, 2, HC_READ, args, 4);
	assert_int_equal(hc_send(&h, m, len), 0);
	expect_rdma_error(&h, rh.xid, RR_ERR_CHUNK);
	for (uint32_t i = 0; i < EXPO_LEN; i++)
		if (h.mem[i] != 0x5a)
			fail_msg("server wrote into a too-small chunk at %u",
				 i);
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(DELTA(st, e, rdma_errors_sent), 1);
	hc_close(&h);
	good_finish(&e->g, "write chunk too small");
}

/*
 * FLOOD calls back to back against CREDITS credits. The server may answer
 * them (its receive margin and speed permitting) or drop us; either way it
 * must survive and keep serving the good client.
 */
static void more_calls_than_credits(void **state)
{
	struct env *e = *state;
	uint32_t answered = 0, first = 0, sent = 0, xid;
	struct rr_xprt_stats st;
	struct hc h;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	/* A post refused (-ENOTCONN): the server dropped us already. */
	for (; sent < FLOOD && !try_echo(&h, sent, &xid); sent++)
		first = first ? first : xid;
	for (uint32_t i = 0; i < sent; i++) {
		struct answer *a = next_answer(&h);

		if (a->len < 0)
			break;
		assert_true(a->len >= 16);
		/* Each answer is a result or an error for one of ours. */
		assert_true(a->h.xid >= first && a->h.xid < first + FLOOD);
		answered++;
	}
	if (answered < sent || sent < FLOOD)
		assert_true(hc_wait_dead(&h));
	printf("[ flood / %s ] %u calls over %u credits: %u posted, "
	       "%u answered, %s\n",
	       svc_threads ? "pool" : "inline", FLOOD, CREDITS, sent, answered,
	       h.dead ? "connection dropped" : "connection kept");
	hc_close(&h);
	if (answered < sent || sent < FLOOD)
		wait_conn_lost(e, 1);
	st = stats(e);
	/*
	 * Dropped: the server says so. Every call answered: the server
	 * served (and counted) each one. Either way something is asserted:
	 * a bound of 0 on an unsigned counter would not be.
	 */
	if (answered < sent || sent < FLOOD)
		assert_true(DELTA(st, e, conn_lost) >= 1);
	else
		assert_true(DELTA(st, e, calls) >= answered);
	good_finish(&e->g, "more calls than credits");
}

/* A NULL call with a 12-byte credential body of the given flavor. */
static void expect_auth_error(struct hc *h, uint8_t *m, uint32_t flavor,
			      uint32_t why)
{
	uint32_t xid = ++h->xid;
	struct answer *a;
	int n = put_words(
		m, (uint32_t[]){xid,	     1,		  CREDITS, RR_RDMA_MSG,
				0,	     0,		  0,	   xid,
				0,	     2,		  HC_PROG, HC_VERS,
				HC_NULL,     flavor,	  12,	   0xffffffffu,
				0xffffffffu, 0xffffffffu, 0,	   0},
		20);

	assert_int_equal(hc_send(h, m, (uint32_t)n), 0);
	a = next_answer(h);
	assert_int_equal(a->h.xid, xid);
	assert_int_equal(a->rpc.stat, RR_MSG_DENIED);
	assert_int_equal(a->rpc.reject, RR_AUTH_ERROR);
	assert_int_equal(a->rpc.auth_error, why);
}

static void bad_rpc_versions_and_programs(void **state)
{
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG};
	const uint32_t rvers[] = {0, 1, 3, 0xffffffffu};
	struct rr_xprt_stats st;
	struct answer *a;
	uint8_t m[256];
	struct hc h;
	int n;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	for (uint32_t i = 0; i < 4; i++) {
		uint32_t len = build_call(&h, m, &rh, rvers[i], HC_NULL, m, 0);

		assert_int_equal(hc_send(&h, m, len), 0);
		a = next_answer(&h);
		assert_int_equal(a->h.xid, rh.xid);
		assert_int_equal(a->rpc.xid, rh.xid);
		assert_int_equal(a->rpc.stat, RR_MSG_DENIED);
		assert_int_equal(a->rpc.reject, RR_RPC_MISMATCH);
		assert_int_equal(a->rpc.mismatch_low, 2);
		assert_int_equal(a->rpc.mismatch_high, 2);
	}
	/* Credentials: AUTH_SYS that is not, a flavor nobody knows. */
	expect_auth_error(&h, m, RR_AUTH_SYS, RR_AUTH_BADCRED);
	expect_auth_error(&h, m, 99, RR_AUTH_REJECTEDCRED);
	/* A program we do not serve, and a procedure past the table. */
	n = rr__rdma_hdr_encode(&(struct rr_rdma_hdr){.xid = 0x500,
						      .vers = 1,
						      .credits = CREDITS},
				m, sizeof(m));
	n += rpc_call(m + n, 0x500, 2, 0x31337, 0);
	assert_int_equal(hc_send(&h, m, (uint32_t)n), 0);
	a = next_answer(&h);
	assert_int_equal(a->rpc.stat, RR_MSG_ACCEPTED);
	assert_int_equal(a->rpc.accept, RR_PROG_UNAVAIL);
	n = build_call(&h, m, &rh, 2, 0xffffffffu, m, 0);
	assert_int_equal(hc_send(&h, m, (uint32_t)n), 0);
	a = next_answer(&h);
	assert_int_equal(a->rpc.accept, RR_PROC_UNAVAIL);
	expect_echo_ok(&h);
	st = stats(e);
	assert_true(DELTA(st, e, calls) >= 9);
	assert_int_equal(DELTA(st, e, bad_headers), 0);
	hc_close(&h);
	good_finish(&e->g, "bad RPC versions");
}

static void garbage_arguments(void **state)
{
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG};
	struct rr_xprt_stats st;
	struct answer *a;
	uint8_t m[256], args[16];
	uint32_t len;
	struct hc h;
	int n;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	/* WRITE announcing 1000 bytes and carrying 12. */
	rr_t_put32(args, 1000);
	memset(args + 4, 0xee, 12);
	len = build_call(&h, m, &rh, 2, HC_WRITE, args, 16);
	assert_int_equal(hc_send(&h, m, len), 0);
	a = next_answer(&h);
	assert_int_equal(a->h.xid, rh.xid);
	assert_int_equal(a->rpc.stat, RR_MSG_ACCEPTED);
	assert_int_equal(a->rpc.accept, RR_GARBAGE_ARGS);
	/* READ with no argument at all. */
	len = build_call(&h, m, &rh, 2, HC_READ, args, 0);
	assert_int_equal(hc_send(&h, m, len), 0);
	a = next_answer(&h);
	assert_int_equal(a->rpc.accept, RR_GARBAGE_ARGS);
	/* Not an RPC call at all (message type REPLY): ERR_CHUNK. */
	n = put_words(m,
		      (uint32_t[]){0x600, 1, CREDITS, RR_RDMA_MSG, 0, 0, 0,
				   0x600, 1, 0, 0, 0, 0},
		      13);
	assert_int_equal(hc_send(&h, m, (uint32_t)n), 0);
	expect_rdma_error(&h, 0x600, RR_ERR_CHUNK);
	/*
	 * A call whose credential claims 2^32-1 bytes is a call all the
	 * same: RFC 5531 answers it AUTH_ERROR, AUTH_BADCRED.
	 */
	n = put_words(m,
		      (uint32_t[]){0x601, 1, CREDITS, RR_RDMA_MSG, 0, 0, 0,
				   0x601, 0, 2, HC_PROG, HC_VERS, HC_NULL,
				   RR_AUTH_SYS, 0xffffffffu, 0, 0},
		      17);
	assert_int_equal(hc_send(&h, m, (uint32_t)n), 0);
	a = next_answer(&h);
	assert_int_equal(a->h.xid, 0x601);
	assert_int_equal(a->rpc.stat, RR_MSG_DENIED);
	assert_int_equal(a->rpc.reject, RR_AUTH_ERROR);
	assert_int_equal(a->rpc.auth_error, RR_AUTH_BADCRED);
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(DELTA(st, e, bad_headers), 1);
	/* The REPLY named no callback of ours (RFC 8167): counted too. */
	assert_int_equal(DELTA(st, e, cb_bad_xids), 1);
	hc_close(&h);
	good_finish(&e->g, "garbage arguments");
}

static void connect_and_vanish(void **state)
{
	struct env *e = *state;
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(e->sv.port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct hc h;
	int fd;

	/* Established, then gone without a single call. */
	for (int i = 0; i < 3; i++) {
		hc_open(&h);
		hc_connect(&h, e->sv.port);
		hc_close(&h);
	}
	/* A TCP connection that never starts the MPA handshake. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	close(fd);
	wait_conn_lost(e, 3);
	good_finish(&e->g, "connect and vanish");
}

/*
 * A client that sends calls with large chunks and then stops, as a frozen
 * or malicious host would: the server's RDMA Reads of it (read chunks) or
 * Writes to it (write chunks, once the socket buffers are full) cannot
 * finish, and each holds one of the server's shared bulk buffers, up to
 * its connection's share. That must not hold up anyone else: the good
 * client's calls all succeed within their 5 s timeout (before the shares,
 * they waited for the drop, up to SVC_STALL_MS), and the stalled
 * connection is dropped at that bound, counted, and its host penalised.
 */
/*
 * A process of its own (forked before any thread exists, as TSan
 * requires), told by one byte what to do: 'r' sends BULK_BUFS calls whose
 * 1 MiB read chunks the server must pull (all of its shared bulk buffers,
 * one each), 'w' 16 READs of 1 MiB offering write chunks (more than the socket
 * buffers hold). It connects, says so, and sends when told; once its
 * Sends have completed it stops itself. The test freezes the server
 * meanwhile, so none of the calls can have been served before the stop:
 * the server's Reads of this client (or its Writes, once the socket
 * buffers are full) cannot finish.
 */
static void staller_main(int in, int out, uint16_t port)
{
	const uint32_t big = 1u << 20;
	const unsigned acc = RR_ACCESS_LOCAL_WRITE | RR_ACCESS_REMOTE_READ |
			     RR_ACCESS_REMOTE_WRITE;
	struct rr_rdma_seg seg;
	struct rr_mr *mr;
	uint8_t *mem = calloc(1, big);
	struct hc h;
	char mode, go;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (read(in, &mode, 1) != 1)
		_exit(0); /* not needed after all */
	hc_open(&h);
	hc_connect(&h, port);
	if (!mem || rr_mr_reg(h.pd, mem, big, acc, &mr))
		_exit(2);
	seg = (struct rr_rdma_seg){rr_mr_rkey(mr), big, (uintptr_t)mem};
	if (!rr_t_write_all(out, "c", 1) || read(in, &go, 1) != 1)
		_exit(3);
	for (uint32_t i = 0; i < (mode == 'r' ? BULK_BUFS : CREDITS); i++) {
		if (mode == 'r')
			send_write_read_chunk(&h, seg.handle, seg.offset, big);
		else
			send_read_chunks(&h, big, &seg, NULL);
	}
	while (h.sends_out && !h.dead)
		hc_poll(&h, 100);
	raise(SIGSTOP);
	_exit(0);
}

/* SIGSTOP or SIGCONT to pid, and wait until it took effect. */
static void freeze(pid_t pid, bool stop)
{
	int st;

	assert_int_equal(kill(pid, stop ? SIGSTOP : SIGCONT), 0);
	assert_int_equal(waitpid(pid, &st, stop ? WUNTRACED : WCONTINUED), pid);
	assert_true(stop ? WIFSTOPPED(st) : WIFCONTINUED(st));
}

static void stalled_client(struct env *e, bool reads, const char *name)
{
	char mode = reads ? 'r' : 'w', c;
	int st;

	assert_true(rr_t_write_all(e->helper_w, &mode, 1));
	assert_true(rr_t_read_within(e->helper_r, &c, 1, HC_WAIT_MS));
	freeze(e->sv.pid, true);
	assert_true(rr_t_write_all(e->helper_w, "s", 1));
	assert_int_equal(waitpid(e->helper, &st, WUNTRACED), e->helper);
	assert_true(WIFSTOPPED(st));
	freeze(e->sv.pid, false);
	/* The stalled client holds what it holds; others go on. */
	assert_true(good_wait(&e->g, 2 * GOOD_AFTER));
	wait_conn_lost(e, 1); /* dropped while still frozen */
	assert_int_equal(DELTA(stats(e), e, bulk_stalls), 1);
	assert_int_equal(DELTA(stats(e), e, peers_penalised), 1);
	if (reads)
		assert_true(DELTA(stats(e), e, bulk_share_waits) >= 1);
	kill(e->helper, SIGKILL);
	assert_int_equal(waitpid(e->helper, &st, 0), e->helper);
	e->helper = 0;
	good_finish(&e->g, name);
}

static void stalled_client_with_reads_pending(void **state)
{
	stalled_client(*state, true, "stalled client, Reads pending");
}

static void stalled_client_with_writes_pending(void **state)
{
	stalled_client(*state, false, "stalled client, Writes pending");
}

/*
 * More connections than max_conns (8, the good client holding one): the
 * rest are rejected, the good client is not disturbed, and once they
 * are gone the server has room again. On a slow machine (TSan) the
 * twelve attempts outlast RR_ADMIT_EVICT_IDLE_MS: a connection that has
 * made no call by then may be evicted to make room, and a later attempt
 * takes its place. Each such eviction is counted, as is a drop by the
 * first-call deadline (10 s here); no extra connection may be unaccounted.
 */
static void more_connections_than_allowed(void **state)
{
	struct env *e = *state;
	struct hc *h = calloc(12, sizeof(*h));
	int est = 0, rej = 0, freed;

	assert_non_null(h);
	for (int i = 0; i < 12; i++) {
		enum rr_cm_event_type t;

		hc_open(&h[i]);
		t = hc_try_connect(&h[i], e->sv.port);
		est += t == RR_CM_ESTABLISHED;
		rej += t == RR_CM_REJECTED;
	}
	freed = (int)(DELTA(stats(e), e, conn_evicted) +
		      DELTA(stats(e), e, conn_timeouts));
	print_message("12 attempts: %d established, %d rejected, %d slots "
		      "freed by eviction or deadline\n",
		      est, rej, freed);
	assert_int_equal(est + rej, 12);
	if (est < 7 || est > 7 + freed)
		fail_msg("%d established past the table's 7 with %d freed", est,
			 freed);
	assert_true(good_wait(&e->g, GOOD_AFTER));
	for (int i = 0; i < 12; i++)
		hc_close(&h[i]);
	wait_conn_lost(e, (uint64_t)est);
	hc_open(&h[0]);
	hc_connect(&h[0], e->sv.port);
	expect_echo_ok(&h[0]);
	hc_close(&h[0]);
	free(h);
	good_finish(&e->g, "more connections than allowed");
}

/*
 * Connections that complete the handshake and never send a call hold no
 * slot for long: past the first-call deadline (here 300 ms) they are
 * dropped, and a newcomer is taken. Before, eight of them shut the server
 * to everyone for as long as they were held. On a slow machine (TSan)
 * making the seven may outlast the deadline itself: the eighth is then
 * taken, but only once the deadline has dropped one (a counter that only
 * grows, so reading it after the answer is enough).
 */
static void silent_connections_miss_their_first_call_deadline(void **state)
{
	struct env *e = *state;
	struct hc h[8];
	enum rr_cm_event_type t;
	uint64_t lost;

	for (int i = 0; i < 7; i++) {
		hc_open(&h[i]);
		hc_connect(&h[i], e->sv.port);
	}
	hc_open(&h[7]);
	t = hc_try_connect(&h[7], e->sv.port);
	if (t != RR_CM_REJECTED) {
		assert_int_equal(t, RR_CM_ESTABLISHED);
		if (DELTA(stats(e), e, conn_timeouts) == 0)
			fail_msg(
				"an eighth connection was taken, none dropped");
		print_message("the seven outlasted the deadline: the eighth "
			      "was taken\n");
	}
	hc_close(&h[7]);
	lost = t == RR_CM_REJECTED ? 7 : 8;
	/* dropped by the deadline, not by us (10 s at most) */
	for (uint64_t end = rr_t_now_us() + 10 * 1000 * 1000;
	     DELTA(stats(e), e, conn_lost) < lost && rr_t_now_us() < end;)
		assert_true(good_wait(&e->g, 1));
	assert_int_equal(DELTA(stats(e), e, conn_lost), lost);
	/* the eighth, taken, may have met the deadline before our close */
	if (DELTA(stats(e), e, conn_timeouts) < 7 ||
	    DELTA(stats(e), e, conn_timeouts) > lost)
		fail_msg("%llu dropped by the deadline, of %llu lost",
			 (unsigned long long)DELTA(stats(e), e, conn_timeouts),
			 (unsigned long long)lost);
	hc_open(&h[7]);
	hc_connect(&h[7], e->sv.port);
	expect_echo_ok(&h[7]);
	for (int i = 0; i < 8; i++)
		hc_close(&h[i]);
	good_finish(&e->g, "silent connections");
}

/*
 * With no deadline near, a full table still makes room: a refused
 * newcomer marks the idlest silent connection (a second old or more) for
 * dropping, and a later attempt is taken. Attempts are retried until one
 * is (within 10 s), as a client's reconnect would be.
 */
static void full_table_makes_room_for_the_next_attempt(void **state)
{
	struct env *e = *state;
	uint64_t end = rr_t_now_us() + 10 * 1000 * 1000;
	enum rr_cm_event_type t = RR_CM_REJECTED;
	struct hc h[8];

	for (int i = 0; i < 7; i++) {
		hc_open(&h[i]);
		hc_connect(&h[i], e->sv.port);
	}
	while (t != RR_CM_ESTABLISHED && rr_t_now_us() < end) {
		hc_open(&h[7]);
		t = hc_try_connect(&h[7], e->sv.port);
		if (t != RR_CM_ESTABLISHED) {
			hc_close(&h[7]);
			assert_true(good_wait(&e->g, 1));
		}
	}
	assert_int_equal(t, RR_CM_ESTABLISHED);
	assert_true(DELTA(stats(e), e, conn_evicted) >= 1);
	assert_int_equal(DELTA(stats(e), e, conn_timeouts), 0);
	expect_echo_ok(&h[7]);
	for (int i = 0; i < 8; i++)
		hc_close(&h[i]);
	good_finish(&e->g, "full table makes room");
}

static void close_mid_call(void **state)
{
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG};
	uint8_t m[256];
	uint32_t len;
	struct hc h;
	char c = 'g';

	/* A call whose handler is certainly running when we vanish. */
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	len = build_call(&h, m, &rh, 2, HC_GATE, m, 0);
	assert_int_equal(hc_send(&h, m, len), 0);
	assert_true(rr_t_read_within(e->sv.entered_r, &c, 1, HC_WAIT_MS));
	hc_close(&h);
	assert_true(rr_t_write_all(e->sv.gate_w, &c, 1));
	/* A call whose argument the server is pulling as we vanish. */
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	send_write_read_chunk(&h, rr_mr_rkey(h.expo), (uintptr_t)h.mem,
			      EXPO_LEN);
	hc_close(&h);
	wait_conn_lost(e, 2);
	good_finish(&e->g, "close mid-call");
}

/* ============================================ the kernel client's shapes */

/* RPC reply header, accepted, AUTH_NONE verifier: what precedes results. */
#define RPC_REPLY_NONE 24

/* The next answer is ECHO/XDR's: want[0..len) as its results, inline. */
static void expect_results(struct hc *h, uint32_t xid, const uint8_t *want,
			   uint32_t len)
{
	struct answer *a = next_answer(h);

	assert_true(a->hlen > 0);
	assert_int_equal(a->h.xid, xid);
	assert_int_equal(a->h.proc, RR_RDMA_MSG);
	assert_int_equal(a->rpc.stat, RR_MSG_ACCEPTED);
	assert_int_equal(a->rpc.accept, RR_SUCCESS);
	assert_int_equal(a->res_len, len);
	assert_memory_equal(a->res, want, len);
}

/*
 * The kernel's O_DIRECT READ of 3.4 to 3.8 KiB offers no chunk at all:
 * the reply fits its 4 KiB inline receive with the header it needs (28
 * bytes, no chunk lists). The reply must go inline up to the last byte
 * that fits, and only past that be answered ERR_CHUNK, counted.
 */
static void reply_inline_up_to_the_last_byte(void **state)
{
	struct env *e = *state;
	struct rr_xprt_stats st;
	uint64_t too_big = 0;
	struct hc h;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	for (uint32_t size = 3300; size <= 4100; size++) {
		uint32_t padded = size + (-size & 3);
		struct answer *a;

		send_read_chunks(&h, size, NULL, NULL);
		if (RR_RDMA_HDR_EMPTY + RPC_REPLY_NONE + 4 + padded > SLOT) {
			expect_rdma_error(&h, h.xid, RR_ERR_CHUNK);
			too_big++;
			continue;
		}
		a = next_answer(&h);
		assert_true(a->hlen > 0);
		assert_int_equal(a->h.xid, h.xid);
		assert_int_equal(a->h.proc, RR_RDMA_MSG);
		assert_int_equal(a->rpc.accept, RR_SUCCESS);
		assert_int_equal(a->res_len, 4 + padded);
		assert_int_equal(rr_t_get32(a->res), size);
		for (uint32_t i = 0; i < size; i++)
			if (a->res[4 + i] != rr_t_pat(i))
				fail_msg("READ %u: byte %u wrong", size, i);
	}
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(too_big, 4100 - 4040);
	assert_int_equal(DELTA(st, e, reply_too_large), too_big);
	assert_int_equal(DELTA(st, e, rdma_errors_sent), too_big);
	assert_int_equal(DELTA(st, e, bad_headers), 0);
	assert_int_equal(DELTA(st, e, garbage_args), 0);
	hc_close(&h);
	good_finish(&e->g, "reply inline up to the last byte");
}

/*
 * Read chunks inside the arguments, not at their end (RFC 8166 section
 * 3.5.3): each chunk's data belongs at its position, with the XDR
 * roundup the chunk does not carry and the inline part leaves out too.
 * ECHO answers the arguments as the handler sees them.
 */
static void read_chunks_inside_the_arguments(void **state)
{
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG, .nread = 2};
	uint8_t m[256], args[16], want[64];
	struct rr_xprt_stats st;
	struct hc h;
	uint32_t n;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	for (uint32_t i = 0; i < 64; i++)
		h.mem[i] = (uint8_t)(0xa0 + i);
	for (uint32_t i = 0; i < 16; i++)
		args[i] = (uint8_t)i;
	/* 8 inline, 13 from the chunk (+3), 4 inline, 5 (+3), 4 inline */
	rh.reads[0] = (struct rr_rdma_read_seg){
		RPC_HDR_NONE + 8, {rr_mr_rkey(h.expo), 13, (uintptr_t)h.mem}};
	rh.reads[1] = (struct rr_rdma_read_seg){
		RPC_HDR_NONE + 8 + 16 + 4,
		{rr_mr_rkey(h.expo), 5, (uintptr_t)h.mem + 32}};
	memset(want, 0, sizeof(want));
	memcpy(want, args, 8);
	memcpy(want + 8, h.mem, 13);
	memcpy(want + 24, args + 8, 4);
	memcpy(want + 28, h.mem + 32, 5);
	memcpy(want + 36, args + 12, 4);
	n = build_call(&h, m, &rh, 2, HC_ECHO, args, 16);
	assert_int_equal(hc_send(&h, m, n), 0);
	expect_results(&h, rh.xid, want, 40);
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(DELTA(st, e, read_chunks), 1);
	assert_int_equal(DELTA(st, e, bad_headers), 0);
	assert_int_equal(DELTA(st, e, rdma_errors_sent), 0);
	hc_close(&h);
	good_finish(&e->g, "read chunks inside the arguments");
}

/*
 * The kernel's SYMLINK of a long target: the path (the last argument) in
 * a read chunk at its position, with nothing inline after it. A handler
 * that decodes plain XDR (rr_svc_args_xdr) must find the item in place,
 * padded, whatever its length.
 */
static void read_chunk_item_in_place_for_xdr(void **state)
{
	static const uint32_t lens[] = {1,    2,    3,	  4,	5,    1000,
					3799, 3800, 3801, 3802, 4000, 4036};
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG, .nread = 1};
	uint8_t m[256], args[4], *want = calloc(1, 4100);
	struct rr_xprt_stats st;
	struct hc h;

	assert_non_null(want);
	hc_open(&h);
	hc_connect(&h, e->sv.port);
	for (uint32_t i = 0; i < 4100; i++)
		h.mem[i] = (uint8_t)('a' + i % 26);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		uint32_t len = lens[k], n;

		rh.reads[0] = (struct rr_rdma_read_seg){
			RPC_HDR_NONE + 4,
			{rr_mr_rkey(h.expo), len, (uintptr_t)h.mem}};
		rr_t_put32(args, len);
		memset(want, 0, 4100);
		rr_t_put32(want, len);
		memcpy(want + 4, h.mem, len);
		n = build_call(&h, m, &rh, 2, HC_XDR, args, 4);
		assert_int_equal(hc_send(&h, m, n), 0);
		expect_results(&h, rh.xid, want, 4 + len + (-len & 3));
	}
	st = stats(e);
	assert_int_equal(DELTA(st, e, garbage_args), 0);
	assert_int_equal(DELTA(st, e, bad_headers), 0);
	assert_int_equal(DELTA(st, e, reply_too_large), 0);
	hc_close(&h);
	free(want);
	good_finish(&e->g, "read chunk item in place");
}

/*
 * RDMA_NOMSG whose message (call header, length word) holds a data item
 * in a read chunk of its own: proc XDR must see the item in place,
 * WRITE the same bytes apart.
 */
static void nomsg_with_an_item(struct hc *h, uint32_t proc)
{
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_NOMSG, .nread = 2};
	uint8_t m[256], *msg = h->mem + 8192, *item = h->mem + 12288;
	uint8_t want[4 + 3004] = {0};
	uint32_t len = 3001;

	rh.reads[0] = (struct rr_rdma_read_seg){
		0, {rr_mr_rkey(h->expo), RPC_HDR_NONE + 4, (uintptr_t)msg}};
	rh.reads[1] = (struct rr_rdma_read_seg){
		RPC_HDR_NONE + 4, {rr_mr_rkey(h->expo), len, (uintptr_t)item}};
	build_call(h, m, &rh, 2, HC_NULL, m, 0);
	rpc_call(msg, rh.xid, 2, HC_PROG, proc);
	rr_t_put32(msg + RPC_HDR_NONE, len);
	for (uint32_t i = 0; i < len; i++)
		item[i] = (uint8_t)(i * 31 + 5);
	rr_t_put32(want, len);
	memcpy(want + 4, item, len);
	assert_int_equal(hc_send(h, m, (uint32_t)rr__rdma_hdr_size(&rh)), 0);
	if (proc == HC_XDR) {
		expect_results(h, rh.xid, want, 4 + len + 3);
		return;
	}
	rr_t_put32(want + 4, rr_t_fnv1a(item, len));
	expect_results(h, rh.xid, want, 8);
}

/*
 * A long call (RFC 8166 section 3.5.3): RDMA_NOMSG, the whole RPC call in
 * a position-zero read chunk, nothing inline after the transport header.
 */
static void nomsg_call_in_a_position_zero_chunk(void **state)
{
	struct env *e = *state;
	struct rr_rdma_hdr rh = {.proc = RR_RDMA_NOMSG, .nread = 1};
	uint8_t m[256];
	struct rr_xprt_stats st;
	struct hc h;
	uint32_t alen = 3001;

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	rh.reads[0] = (struct rr_rdma_read_seg){
		0, {rr_mr_rkey(h.expo), RPC_HDR_NONE + alen, (uintptr_t)h.mem}};
	build_call(&h, m, &rh, 2, HC_NULL, m, 0);
	rpc_call(h.mem, rh.xid, 2, HC_PROG, HC_ECHO);
	for (uint32_t i = 0; i < alen; i++)
		h.mem[RPC_HDR_NONE + i] = (uint8_t)(i * 13);
	assert_int_equal(hc_send(&h, m, (uint32_t)rr__rdma_hdr_size(&rh)), 0);
	expect_results(&h, rh.xid, h.mem + RPC_HDR_NONE, alen);
	/* and with a data item in a chunk of its own, inside the message */
	nomsg_with_an_item(&h, HC_XDR);
	nomsg_with_an_item(&h, HC_WRITE);
	expect_echo_ok(&h);
	st = stats(e);
	assert_int_equal(DELTA(st, e, read_chunks), 3);
	assert_int_equal(DELTA(st, e, bad_headers), 0);
	hc_close(&h);
	good_finish(&e->g, "RDMA_NOMSG call");
}

/*
 * Worker pool only: more calls than the grant while they all wait in the
 * server (the workers are held at the gate, the rest queue behind them).
 * The server counts each call beyond the grant, and still answers all.
 */
static void calls_beyond_the_grant_are_counted(void **state)
{
	struct env *e = *state;
	const uint32_t n = CREDITS + 2;
	uint64_t end = rr_t_now_us() + (uint64_t)HC_WAIT_MS * 1000;
	struct rr_xprt_stats st;
	uint8_t m[256];
	struct hc h;
	char c = 'g';

	hc_open(&h);
	hc_connect(&h, e->sv.port);
	for (uint32_t i = 0; i < n; i++) {
		struct rr_rdma_hdr rh = {.proc = RR_RDMA_MSG};
		uint32_t len = build_call(&h, m, &rh, 2, HC_GATE, m, 0);

		assert_int_equal(hc_send(&h, m, len), 0);
	}
	do
		st = stats(e);
	while (DELTA(st, e, credit_overruns) < n - CREDITS &&
	       rr_t_now_us() < end);
	assert_int_equal(DELTA(st, e, credit_overruns), n - CREDITS);
	for (uint32_t i = 0; i < n; i++) {
		assert_true(
			rr_t_read_within(e->sv.entered_r, &c, 1, HC_WAIT_MS));
		assert_true(rr_t_write_all(e->sv.gate_w, &c, 1));
	}
	for (uint32_t i = 0; i < n; i++) {
		struct answer *a = next_answer(&h);

		assert_true(a->len > 0);
		assert_int_equal(a->rpc.stat, RR_MSG_ACCEPTED);
	}
	hc_close(&h);
	wait_conn_lost(e, 1);
	good_finish(&e->g, "calls beyond the grant");
}

#define T(f)  RR_T_LIMITED(f, CASE_S, setup, teardown)
#define TS(f) RR_T_LIMITED(f, CASE_S, setup_staller, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(truncated_headers),
		T(bad_transport_version),
		T(unknown_transport_procedure),
		T(huge_counts_and_lengths),
		T(huge_write_chunk_takes_only_the_result),
		T(read_chunk_of_many_segments_arrives_whole),
		T(chunks_outside_registration),
		T(send_larger_than_inline),
		T(chunk_semantics),
		T(write_chunk_too_small),
		T(more_calls_than_credits),
		T(bad_rpc_versions_and_programs),
		T(garbage_arguments),
		T(connect_and_vanish),
		T(more_connections_than_allowed),
		T(close_mid_call),
		TS(stalled_client_with_reads_pending),
		TS(stalled_client_with_writes_pending),
		T(reply_inline_up_to_the_last_byte),
		T(read_chunks_inside_the_arguments),
		T(read_chunk_item_in_place_for_xdr),
		T(nomsg_call_in_a_position_zero_chunk),
		RR_T_LIMITED(silent_connections_miss_their_first_call_deadline,
			     CASE_S, setup_short_first_call, teardown),
		T(full_table_makes_room_for_the_next_attempt),
	};
	const struct CMUnitTest pool_tests[] = {
		T(calls_beyond_the_grant_are_counted),
	};
	int failed;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	svc_threads = 0;
	rr_t_limit_context("hostile client, handlers inline");
	failed = cmocka_run_group_tests_name("hostile client, handlers inline",
					     tests, NULL, NULL);
	svc_threads = 2;
	rr_t_limit_context("hostile client, worker pool");
	failed += cmocka_run_group_tests_name("hostile client, worker pool",
					      tests, NULL, NULL);
	rr_t_limit_context("hostile client, worker pool "
			   "only");
	failed += cmocka_run_group_tests_name("hostile client, worker pool "
					      "only",
					      pool_tests, NULL, NULL);
	return failed ? 1 : 0;
}
