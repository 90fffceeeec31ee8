/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The ONC RPC over TCP client across lost connections (rpc_tcp.h:
 * reconnect, soft, no_reconnect, rr_tcp_clnt_disconnect): a test program
 * served by rr_tcp_svc in a child process on 127.0.0.1 that is frozen
 * (SIGSTOP), killed and started again on the same port; and a fake server
 * in a thread that cuts a reply, or a call, in the middle of its record.
 * The reply cache after a disconnect and soft's fast failure are tested
 * once for both transports in conformance.c.
 *
 * The server is the shared test program (tprog.h: NULL, ECHO, TICK and
 * TICKS in the reply cache, BUMP and BUMPS outside it) in a child
 * process (tserver.h), a fresh process image: a forked copy of a process
 * with client threads must not start threads of its own. Every test runs
 * with handlers inline in the server loop and in four workers. Waits are
 * bounded and wait for events (callbacks, replies, the child's state); where
 * the event is a counter of the client's, it is polled every few milliseconds
 * up to a bound.
 */
#include "clock.h"
#include <rpcrdma/rpc_tcp.h>

#include "tcp_common.h"
#include "tserver.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define CALL_TMO_MS 30000
#define FAKE_TMO_MS 20000
#define ECHO_LEN    2000
#define NASYNC	    64

static uint32_t g_threads; /* server workers of the group running */

/* ============================================================ client */

struct fx {
	struct rr_t_server sv;
	struct rr_tcp_clnt *c;
};

static int setup(void **state)
{
	struct rr_t_server_opts so = {.xprt = RR_T_TCP, .threads = g_threads};
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || rr_t_server_start(&f->sv, &so)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct rr_xprt_stats st;
	int rc = 0;

	/* base/fsm.h: every reconnect moved only where the table allows */
	if (f->c && (rr_tcp_clnt_stats(f->c, &st) || st.state_violations)) {
		fprintf(stderr,
			"client state machine moved where it may not\n");
		rc = -1;
	}
	if (f->c && rr_tcp_clnt_destroy(f->c))
		rc = -1;
	if (rr_t_server_stop(&f->sv))
		rc = -1;
	free(f);
	return rc;
}

/* A new server where the killed one was. */
static void server_restart(struct fx *f)
{
	uint16_t port = f->sv.port;

	assert_int_equal(rr_t_server_restart(&f->sv), 0);
	assert_int_equal(f->sv.port, port);
}

/* Reconnects quickly and sends no keepalive probes unless a test says. */
static struct rr_tcp_clnt_opts base_opts(void)
{
	return (struct rr_tcp_clnt_opts){.timeout_ms = CALL_TMO_MS,
					 .connect_timeout_ms = 2000,
					 .max_in_flight = 32,
					 .reconnect_max_ms = 400,
					 .keepalive_ms = -1};
}

static struct rr_tcp_clnt *clnt_new(struct fx *f,
				    const struct rr_tcp_clnt_opts *o)
{
	int rc = rr_tcp_clnt_create("127.0.0.1", f->sv.port, o, &f->c);

	if (rc)
		fail_msg("rr_tcp_clnt_create: %d", rc);
	return f->c;
}

static struct rr_xprt_stats stats_of(struct rr_tcp_clnt *c)
{
	struct rr_xprt_stats st;

	assert_int_equal(rr_tcp_clnt_stats(c, &st), 0);
	return st;
}

static void print_stats(const struct rr_xprt_stats *s)
{
	fprintf(stderr,
		"  client: calls %llu timeouts %llu conn_lost %llu connects "
		"%llu retransmits %llu bad_xids %llu bad_headers %llu\n",
		(unsigned long long)s->calls, (unsigned long long)s->timeouts,
		(unsigned long long)s->conn_lost,
		(unsigned long long)s->connects,
		(unsigned long long)s->retransmits,
		(unsigned long long)s->bad_xids,
		(unsigned long long)s->bad_headers);
}

/* Every reply matched a call, none was malformed. */
static void check_clean(struct rr_tcp_clnt *c)
{
	struct rr_xprt_stats st = stats_of(c);

	print_stats(&st);
	assert_int_equal(st.bad_xids, 0);
	assert_int_equal(st.bad_headers, 0);
}

static struct rr_call mkcall(uint32_t proc, void *res, size_t res_cap)
{
	return (struct rr_call){.prog = RR_T_PROG,
				.vers = RR_T_VERS,
				.proc = proc,
				.res = res,
				.res_cap = res_cap};
}

static void null_ok(struct rr_tcp_clnt *c)
{
	struct rr_call call = mkcall(RR_T_NULL, NULL, 0);

	assert_int_equal(rr_tcp_clnt_call(c, &call), 0);
	assert_int_equal(call.accept_stat, RR_SUCCESS);
}

static uint32_t call_u32(struct rr_tcp_clnt *c, uint32_t proc)
{
	uint8_t res[8];
	struct rr_call call = mkcall(proc, res, sizeof(res));

	assert_int_equal(rr_tcp_clnt_call(c, &call), 0);
	assert_int_equal(call.res_len, 4);
	return rr_t_get32(res);
}

/* ------------------------------------------------------ async calls */

struct async_log {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t ndone;
	uint32_t count[NASYNC];
	int rc[NASYNC];
};

struct async_slot {
	struct async_log *log;
	uint32_t idx;
	struct rr_call call;
	uint8_t args[ECHO_LEN];
	uint8_t res[ECHO_LEN];
};

static void async_done(struct rr_call *call, int rc, void *arg)
{
	struct async_slot *s = arg;
	struct async_log *l = s->log;

	(void)call;
	pthread_mutex_lock(&l->mu);
	l->ndone++;
	l->count[s->idx]++;
	l->rc[s->idx] = rc;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

/* n slots: ECHO of seeded bytes, or proc when it is not ECHO. */
static struct async_slot *async_new(struct async_log *l, uint32_t n)
{
	struct async_slot *s = calloc(n, sizeof(*s));

	assert_non_null(s);
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	for (uint32_t i = 0; i < n; i++) {
		s[i].log = l;
		s[i].idx = i;
		rr_t_fill_seeded(s[i].args, ECHO_LEN, i + 300);
		s[i].call = mkcall(RR_T_ECHO, s[i].res, ECHO_LEN);
		s[i].call.args = s[i].args;
		s[i].call.args_len = ECHO_LEN;
	}
	return s;
}

static void async_free(struct async_log *l, struct async_slot *s)
{
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(s);
}

static void async_issue(struct rr_tcp_clnt *c, struct async_slot *s)
{
	int rc = rr_tcp_clnt_call_async(c, &s->call, async_done, s);

	if (rc)
		fail_msg("rr_tcp_clnt_call_async %u: %d", s->idx, rc);
}

/* Waits until want callbacks ran in all, up to tmo_ms. */
static void async_wait(struct async_log *l, uint32_t want, int tmo_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += tmo_ms / 1000;
	ts.tv_nsec += (long)(tmo_ms % 1000) * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_mutex_lock(&l->mu);
	while (l->ndone < want)
		if (pthread_cond_timedwait(&l->cv, &l->mu, &ts))
			break;
	pthread_mutex_unlock(&l->mu);
	if (l->ndone < want)
		fail_msg("%u of %u calls completed in %d ms", l->ndone, want,
			 tmo_ms);
}

static void echo_ok(const struct async_slot *s)
{
	if (s->log->count[s->idx] != 1 || s->log->rc[s->idx])
		fail_msg("call %u: %u callbacks, rc %d", s->idx,
			 s->log->count[s->idx], s->log->rc[s->idx]);
	assert_int_equal(s->call.res_len, ECHO_LEN);
	assert_memory_equal(s->res, s->args, ECHO_LEN);
}

/* Each call completed once, without error, with a 4-byte result. */
static uint32_t u32_ok(const struct async_slot *s)
{
	if (s->log->count[s->idx] != 1 || s->log->rc[s->idx])
		fail_msg("call %u: %u callbacks, rc %d", s->idx,
			 s->log->count[s->idx], s->log->rc[s->idx]);
	assert_int_equal(s->call.res_len, 4);
	return rr_t_get32(s->res);
}

/* Results 1..n, each once: n runs, none twice. */
static void assert_permutation(const uint32_t *v, uint32_t n)
{
	bool *seen = calloc(n + 1, sizeof(*seen));

	assert_non_null(seen);
	for (uint32_t i = 0; i < n; i++) {
		if (v[i] < 1 || v[i] > n || seen[v[i]])
			fail_msg("result %u is %u: not one of 1..%u once", i,
				 v[i], n);
		seen[v[i]] = true;
	}
	free(seen);
}

/* ------------------------------------------------- 1: the same calls */

/*
 * The server dies with calls in flight and a new one comes up on the same
 * port: the calls that were sent go again (their xids kept), those that
 * were waiting for a slot go for the first time, each completes once with
 * its own bytes. BUMP is not in the reply cache: the new server's count
 * shows each call reached it exactly once.
 */
static void calls_in_flight_complete_once_on_a_restarted_server(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt_opts o = base_opts();
	struct rr_tcp_clnt *c = clnt_new(f, &o);
	struct async_log log;
	struct async_slot *s = async_new(&log, NASYNC);
	uint32_t v[NASYNC / 2];
	struct rr_xprt_stats st;

	null_ok(c);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	/* even: ECHO; odd: BUMP. 32 go out, 32 wait for a slot. */
	for (uint32_t i = 1; i < NASYNC; i += 2)
		s[i].call = mkcall(RR_T_BUMP, s[i].res, 4);
	for (uint32_t i = 0; i < NASYNC; i++)
		async_issue(c, &s[i]);
	assert_int_equal(rr_t_server_kill(&f->sv), 0);
	server_restart(f);
	async_wait(&log, NASYNC, CALL_TMO_MS);
	for (uint32_t i = 0; i < NASYNC; i++) {
		if (i % 2 == 0)
			echo_ok(&s[i]);
		else
			v[i / 2] = u32_ok(&s[i]);
	}
	assert_permutation(v, NASYNC / 2);
	assert_int_equal(call_u32(c, RR_T_BUMPS), NASYNC / 2);
	st = stats_of(c);
	check_clean(c);
	/*
	 * At least the 32 that had gone out went again. More, when the
	 * first retry reached the dying server before its listener closed:
	 * that connection died too, with what it carried.
	 */
	assert_true(st.conn_lost >= 1);
	assert_true(st.retransmits >= 32);
	assert_true(st.connects >= 2);
	async_free(&log, s);
}

/*
 * Many calls that must not run twice are cut off by a disconnect before
 * the (frozen) server read any: both copies of each reach it, one on the
 * dead connection, one on the new. Each runs once all the same.
 */
static void many_calls_cut_off_by_a_disconnect_each_run_once(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt_opts o = base_opts();
	struct rr_tcp_clnt *c;
	struct async_log log;
	struct async_slot *s = async_new(&log, 48);
	struct rr_xprt_stats st;
	uint32_t v[48];

	o.max_in_flight = 64;
	c = clnt_new(f, &o);
	null_ok(c);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	for (uint32_t i = 0; i < 48; i++) {
		s[i].call = mkcall(RR_T_TICK, s[i].res, 4);
		async_issue(c, &s[i]);
	}
	assert_int_equal(rr_tcp_clnt_disconnect(c), 0);
	assert_int_equal(rr_t_server_thaw(&f->sv), 0);
	async_wait(&log, 48, CALL_TMO_MS);
	for (uint32_t i = 0; i < 48; i++)
		v[i] = u32_ok(&s[i]);
	assert_permutation(v, 48);
	assert_int_equal(call_u32(c, RR_T_TICKS), 48);
	st = stats_of(c);
	check_clean(c);
	assert_int_equal(st.conn_lost, 1);
	assert_int_equal(st.retransmits, 48);
	async_free(&log, s);
}

/* ------------------------------------------- 2: soft, no_reconnect */

/*
 * soft: calls waiting for a slot were never sent; they do not fail with
 * the connection but go out on the next one. (A disconnect, not a killed
 * server: a client can reconnect to a server whose process is still being
 * torn down, and that connection dies too, with what it carried.)
 */
static void
soft_client_sends_calls_not_yet_sent_on_the_next_connection(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt_opts o = base_opts();
	struct rr_tcp_clnt *c;
	struct async_log log;
	struct async_slot *s = async_new(&log, 8);

	o.soft = true;
	o.max_in_flight = 4;
	c = clnt_new(f, &o);
	null_ok(c);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	for (uint32_t i = 0; i < 8; i++)
		async_issue(c, &s[i]);
	assert_int_equal(rr_tcp_clnt_disconnect(c), 0);
	/* the sent four fail (their callbacks run on the client's thread);
	 * the other four wait for the frozen server on the next connection */
	async_wait(&log, 4, CALL_TMO_MS);
	pthread_mutex_lock(&log.mu);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(log.count[i], 1);
		assert_int_equal(log.rc[i], -ECONNRESET);
	}
	for (uint32_t i = 4; i < 8; i++)
		assert_int_equal(log.count[i], 0);
	pthread_mutex_unlock(&log.mu);
	assert_int_equal(rr_t_server_thaw(&f->sv), 0);
	async_wait(&log, 8, CALL_TMO_MS);
	for (uint32_t i = 4; i < 8; i++)
		echo_ok(&s[i]);
	assert_int_equal(stats_of(c).retransmits, 0);
	assert_int_equal(stats_of(c).conn_lost, 1);
	check_clean(c);
	async_free(&log, s);
}

/* no_reconnect: the first loss is final, for every call, at once. */
static void no_reconnect_client_fails_every_call_at_once(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt_opts o = base_opts();
	struct rr_tcp_clnt *c;
	struct async_log log;
	struct async_slot *s = async_new(&log, 8);
	struct rr_call after = mkcall(RR_T_NULL, NULL, 0);
	uint64_t t0;

	o.no_reconnect = true;
	o.max_in_flight = 4;
	c = clnt_new(f, &o);
	null_ok(c);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	for (uint32_t i = 0; i < 8; i++)
		async_issue(c, &s[i]);
	t0 = rr_t_now_ms();
	assert_int_equal(rr_t_server_kill(&f->sv), 0);
	async_wait(&log, 8, 5000);
	if (rr_t_now_ms() - t0 > 2000)
		fail_msg("no_reconnect: the errors took %llu ms",
			 (unsigned long long)(rr_t_now_ms() - t0));
	for (uint32_t i = 0; i < 8; i++) {
		assert_int_equal(log.count[i], 1);
		assert_int_equal(log.rc[i], -ECONNRESET);
	}
	assert_int_equal(rr_tcp_clnt_call(c, &after), -ECONNRESET);
	server_restart(f); /* not even a server back changes that */
	assert_int_equal(rr_tcp_clnt_call(c, &after), -ECONNRESET);
	assert_int_equal(rr_tcp_clnt_progress(c, 10), -ECONNRESET);
	assert_int_equal(stats_of(c).connects, 1);
	assert_int_equal(stats_of(c).conn_lost, 1);
	check_clean(c);
	async_free(&log, s);
}

/* ------------------------------------------------------- 3: backoff */

/*
 * Against a server that is down, attempts back off: at once, then after
 * 100, 200, 400 ms, then every reconnect_max_ms (800 here): six in the
 * 3 s a call waits (0, 0.1, 0.3, 0.7, 1.5, 2.3 s). Without backoff it
 * would be thousands; with a fixed 100 ms, thirty. When the server is
 * back, the next attempt finds it.
 */
static void
reconnect_attempts_back_off_against_a_server_that_is_down(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt_opts o = base_opts();
	struct rr_tcp_clnt *c;
	uint8_t args[16], res[16];
	struct rr_call call = mkcall(RR_T_ECHO, res, sizeof(res));
	uint64_t before, tries, t0;
	int rc;

	memset(args, 7, sizeof(args));
	o.reconnect_max_ms = 800;
	c = clnt_new(f, &o);
	null_ok(c);
	assert_int_equal(rr_t_server_kill(&f->sv), 0);
	before = stats_of(c).connects;
	call.args = args;
	call.args_len = sizeof(args);
	call.timeout_ms = 3000;
	t0 = rr_t_now_ms();
	rc = rr_tcp_clnt_call(c, &call);
	assert_int_equal(rc, -ETIMEDOUT);
	tries = stats_of(c).connects - before;
	fprintf(stderr, "  %llu attempts in %llu ms\n",
		(unsigned long long)tries,
		(unsigned long long)(rr_t_now_ms() - t0));
	if (tries < 4 || tries > 7)
		fail_msg("%llu connect attempts in 3 s, want 6 (4..7)",
			 (unsigned long long)tries);
	server_restart(f);
	call.timeout_ms = 0;
	assert_int_equal(rr_tcp_clnt_call(c, &call), 0);
	assert_memory_equal(res, args, sizeof(args));
	check_clean(c);
}

/* ------------------------------------------------ 4: cut-off records */

/*
 * A fake server in a thread: it reads what the client sends with the raw
 * helpers of tcp_common.h and answers by hand, so that a record can be
 * cut off mid-way, which no real server does on purpose.
 */
struct fake {
	int lfd;
	uint16_t port;
	pthread_t thr;
	bool cut_call; /* else: cut the reply */
	size_t call_len;
	uint32_t sum;	/* of the arguments the client sends */
	char err[200];	/* the first thing that went wrong */
	uint32_t conns; /* connections accepted */
};

static int listen_on(uint16_t port, int rcvbuf)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (rcvbuf) /* before listen: accepted sockets inherit it */
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 8)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int accept_within(struct fake *fk)
{
	struct pollfd p = {.fd = fk->lfd, .events = POLLIN};
	int fd;

	if (poll(&p, 1, FAKE_TMO_MS) <= 0)
		return -1;
	fd = accept4(fk->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		fk->conns++;
	return fd;
}

static void fake_fail(struct fake *fk, const char *what)
{
	if (!fk->err[0])
		snprintf(fk->err, sizeof(fk->err), "fake server: %s", what);
}

/* An accepted reply to xid, AUTH_NONE verifier, then res. */
static size_t reply_msg(uint8_t *buf, uint32_t xid, const void *res, size_t len)
{
	uint32_t w[6] = {xid, 1, 0, 0, 0, 0};

	for (int i = 0; i < 6; i++)
		rr_t_put32(buf + 4 * i, w[i]);
	memcpy(buf + 24, res, len);
	return 24 + len;
}

/* Waits (bounded) until the client closes c, then closes it. */
static void drain_close(int fd)
{
	uint8_t b[256];

	while (rr_t_read_within(fd, b, 1, FAKE_TMO_MS))
		;
	close(fd);
}

/*
 * Echo's reply cut in the middle on the first connection; on the second,
 * the same call must come again, byte for byte, and gets it whole.
 */
static void fake_cut_reply(struct fake *fk)
{
	uint8_t *c1, *c2, msg[4 + 24 + ECHO_LEN + 64];
	ssize_t n1, n2;
	size_t rlen;
	int a, b;

	if ((a = accept_within(fk)) < 0)
		return fake_fail(fk, "no first connection");
	n1 = raw_read_record(a, &c1, 1 << 16, FAKE_TMO_MS);
	if (n1 < 40) {
		free(c1);
		close(a);
		return fake_fail(fk, "no call on the first connection");
	}
	rlen = reply_msg(msg + 4, rr_t_get32(c1), c1 + 40, (size_t)n1 - 40);
	rr_t_put32(msg, (uint32_t)rlen | 0x80000000u);
	rr_t_write_all(a, msg, 4 + rlen / 2);
	close(a);
	if ((b = accept_within(fk)) < 0) {
		free(c1);
		return fake_fail(fk, "no second connection");
	}
	n2 = raw_read_record(b, &c2, 1 << 16, FAKE_TMO_MS);
	if (n2 != n1 || memcmp(c1, c2, (size_t)n1))
		fake_fail(fk, "the call sent again differs");
	else
		rr_t_write_all(b, msg, 4 + rlen);
	free(c1);
	free(c2);
	drain_close(b);
}

/*
 * A call too big for the first connection to take (its receive buffer is
 * tiny and the fake reads 8 KiB of it): that connection is reset mid-call.
 * The second must carry the whole record, same xid, same bytes.
 */
static void fake_cut_call(struct fake *fk)
{
	uint8_t head[8192], *rec, sum[4], msg[64];
	ssize_t n;
	size_t rlen;
	int a, b, big;

	if ((a = accept_within(fk)) < 0)
		return fake_fail(fk, "no first connection");
	/* The next listener takes normal buffers: the old one goes. */
	close(fk->lfd);
	big = listen_on(fk->port, 0);
	fk->lfd = big;
	if (big < 0) {
		close(a);
		return fake_fail(fk, "cannot listen again");
	}
	if (!rr_t_read_within(a, head, sizeof(head), FAKE_TMO_MS)) {
		close(a);
		return fake_fail(fk, "no call on the first connection");
	}
	close(a); /* unread bytes: a reset */
	if ((b = accept_within(fk)) < 0)
		return fake_fail(fk, "no second connection");
	n = raw_read_record(b, &rec, fk->call_len + 64, FAKE_TMO_MS);
	if (n != (ssize_t)fk->call_len || memcmp(rec, head + 4, 4)) {
		fake_fail(fk, "the call sent again is not the same record");
	} else {
		rr_t_put32(sum, rr_t_fnv1a(rec + 40, (size_t)n - 40));
		if (rr_t_get32(sum) != fk->sum)
			fake_fail(fk, "the call sent again has other bytes");
		rlen = reply_msg(msg + 4, rr_t_get32(rec), sum, 4);
		rr_t_put32(msg, (uint32_t)rlen | 0x80000000u);
		rr_t_write_all(b, msg, 4 + rlen);
	}
	free(rec);
	drain_close(b);
}

static void *fake_main(void *arg)
{
	struct fake *fk = arg;

	if (fk->cut_call)
		fake_cut_call(fk);
	else
		fake_cut_reply(fk);
	return NULL;
}

static void fake_start(struct fake *fk, bool cut_call)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	fk->cut_call = cut_call;
	fk->lfd = listen_on(0, cut_call ? 4096 : 0);
	assert_true(fk->lfd >= 0);
	assert_int_equal(getsockname(fk->lfd, (struct sockaddr *)&sin, &len),
			 0);
	fk->port = ntohs(sin.sin_port);
	assert_int_equal(pthread_create(&fk->thr, NULL, fake_main, fk), 0);
}

static void fake_end(struct fake *fk)
{
	pthread_join(fk->thr, NULL);
	if (fk->lfd >= 0)
		close(fk->lfd);
	if (fk->err[0])
		fail_msg("%s", fk->err);
	assert_int_equal(fk->conns, 2);
}

static struct rr_tcp_clnt *fake_clnt(const struct fake *fk, uint32_t max_rec)
{
	struct rr_tcp_clnt_opts o = base_opts();
	struct rr_tcp_clnt *c;

	o.timeout_ms = FAKE_TMO_MS;
	o.max_record = max_rec;
	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", fk->port, &o, &c), 0);
	return c;
}

/*
 * A reply cut off by the loss must not run into the next connection's
 * bytes: kept, it would take them for the rest of its record.
 */
static void a_reply_cut_off_by_the_loss_is_discarded(void **state)
{
	struct fake fk = {.lfd = -1};
	uint8_t args[ECHO_LEN], res[ECHO_LEN];
	struct rr_call call = mkcall(RR_T_ECHO, res, sizeof(res));
	struct rr_tcp_clnt *c;
	struct rr_xprt_stats st;

	(void)state;
	fake_start(&fk, false);
	c = fake_clnt(&fk, 0);
	rr_t_fill_seeded(args, sizeof(args), 41);
	call.args = args;
	call.args_len = sizeof(args);
	assert_int_equal(rr_tcp_clnt_call(c, &call), 0);
	assert_int_equal(call.res_len, sizeof(args));
	assert_memory_equal(res, args, sizeof(args));
	st = stats_of(c);
	print_stats(&st);
	assert_int_equal(rr_tcp_clnt_destroy(c), 0);
	fake_end(&fk);
	assert_int_equal(st.conn_lost, 1);
	assert_int_equal(st.retransmits, 1);
	assert_int_equal(st.bad_headers, 0);
	assert_int_equal(st.bad_xids, 0);
}

/* A call cut off by the loss goes again whole on the next connection. */
static void a_call_cut_off_by_the_loss_goes_again_whole(void **state)
{
	size_t len = 6u << 20;
	struct fake fk = {.lfd = -1, .call_len = 40 + (6u << 20)};
	uint8_t *args = malloc(len), res[16];
	struct rr_call call = mkcall(RR_T_ECHO, res, sizeof(res));
	struct rr_tcp_clnt *c;
	struct rr_xprt_stats st;

	(void)state;
	assert_non_null(args);
	rr_t_fill_seeded(args, len, 42);
	fk.sum = rr_t_fnv1a(args, len);
	fake_start(&fk, true);
	c = fake_clnt(&fk, 8u << 20);
	call.args = args;
	call.args_len = len;
	assert_int_equal(rr_tcp_clnt_call(c, &call), 0);
	assert_int_equal(call.res_len, 4);
	assert_int_equal(rr_t_get32(res), fk.sum);
	st = stats_of(c);
	print_stats(&st);
	assert_int_equal(rr_tcp_clnt_destroy(c), 0);
	fake_end(&fk);
	assert_int_equal(st.conn_lost, 1);
	assert_int_equal(st.retransmits, 1);
	assert_int_equal(st.bad_headers, 0);
	free(args);
}

#define T(fn) RR_T_LIMITED(fn, CASE_S, setup, teardown)

static const struct CMUnitTest tests[] = {
	T(calls_in_flight_complete_once_on_a_restarted_server),
	T(many_calls_cut_off_by_a_disconnect_each_run_once),
	T(soft_client_sends_calls_not_yet_sent_on_the_next_connection),
	T(no_reconnect_client_fails_every_call_at_once),
	T(reconnect_attempts_back_off_against_a_server_that_is_down),
};

static const struct CMUnitTest fake_tests[] = {
	RR_T_LIMITED(a_reply_cut_off_by_the_loss_is_discarded, CASE_S, NULL,
		     NULL),
	RR_T_LIMITED(a_call_cut_off_by_the_loss_goes_again_whole, CASE_S, NULL,
		     NULL),
};

/*
 * tcp_reconnect [PATTERN [SKIP]]: cmocka filters on the test names.
 */
int main(int argc, char **argv)
{
	int failed = 0;

	rr_t_server_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	if (argc > 2)
		cmocka_set_skip_filter(argv[2]);
	rr_t_limit_context("cut records");
	failed += cmocka_run_group_tests_name("cut records", fake_tests, NULL,
					      NULL);
	g_threads = 0;
	rr_t_limit_context("threads=0");
	failed += cmocka_run_group_tests_name("threads=0", tests, NULL, NULL);
	g_threads = 4;
	rr_t_limit_context("threads=4");
	failed += cmocka_run_group_tests_name("threads=4", tests, NULL, NULL);
	return failed ? 1 : 0;
}
