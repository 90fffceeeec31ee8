/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC over TCP with record marking, end to end: the shared test
 * program (tprog.h) served by rr_tcp_svc in a child process (tserver.h)
 * on 127.0.0.1, with version 3 (NULL only) beside version 1 so that
 * PROG_MISMATCH for version 2 names 1..3, called through rr_tcp_clnt and
 * through a raw socket client (tcp_common.h) that fragments records and
 * misbehaves on purpose. Over TCP the program's WRITE refuses an
 * argument the transport pulled out of the record, and TICK (in the
 * reply cache) tells a call that ran twice.
 *
 * What both transports promise alike (NULL, AUTH_SYS, -EMSGSIZE for
 * res_cap, progress, timeouts, cancellation...) is tested once for both in
 * conformance.c; this suite keeps what is TCP's own or goes further here.
 *
 * Every test runs twice: handlers inline in the loop (threads = 0) and in
 * four workers. SIGSTOP/SIGCONT/SIGKILL of the child make a stalled or
 * dead server; waits are bounded and wait for events, never for time.
 */
#include "clock.h"
#include <rpcrdma/rpc_tcp.h>

#include "tcp_common.h"
#include "tserver.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define MAX_BULK    (1u << 20)
#define BIG_CAP	    ((1u << 20) + 64)
#define SENTINEL    0xa5
#define SLACK	    64
#define CALL_TMO_MS 30000
#define RAW_TMO_MS  10000
#define SVC_MAX_REC ((1u << 20) + (64u << 10))
#define FEW_FDS	    48
#define FD_FLOOD    (2 * FEW_FDS)
#define EXCESS_MIN  (FEW_FDS / 2) /* the server holds fewer than FEW_FDS */

static uint32_t g_threads; /* of the group running */
static uint32_t g_nofile;  /* the server child's RLIMIT_NOFILE; 0: as is */

static void print_stats(const char *who, const struct rr_xprt_stats *s)
{
	fprintf(stderr,
		"  %s: calls %llu bad_xids %llu bad_headers %llu waits %llu"
		" timeouts %llu cancels %llu conn_lost %llu\n",
		who, (unsigned long long)s->calls,
		(unsigned long long)s->bad_xids,
		(unsigned long long)s->bad_headers,
		(unsigned long long)s->credit_waits,
		(unsigned long long)s->timeouts, (unsigned long long)s->cancels,
		(unsigned long long)s->conn_lost);
}

/* ============================================================ client */

struct fx {
	struct rr_t_server sv;
	struct rr_tcp_clnt *c;
	int flood[FD_FLOOD]; /* raw connections a test holds, closed after */
	unsigned nflood;
};

static int setup_with(void **state, bool no_reconnect)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct rr_tcp_clnt_opts o = {.timeout_ms = CALL_TMO_MS,
				     .max_in_flight = 32,
				     .no_reconnect = no_reconnect};
	struct rr_t_server_opts so = {.xprt = RR_T_TCP,
				      .threads = g_threads,
				      .nofile = g_nofile,
				      .vers3 = true};
	int rc;

	if (!f)
		return -1;
	if (rr_t_server_start(&f->sv, &so)) {
		free(f);
		return -1;
	}
	rc = rr_tcp_clnt_create("127.0.0.1", f->sv.port, &o, &f->c);
	if (rc) {
		fprintf(stderr, "rr_tcp_clnt_create: %d\n", rc);
		rr_t_server_stop(&f->sv);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, false);
}

/* The server child runs short of descriptors (FEW_FDS). */
static int setup_few_fds(void **state)
{
	int rc;

	g_nofile = FEW_FDS;
	rc = setup_with(state, false);
	g_nofile = 0;
	return rc;
}

/* A lost connection is final (tcp_reconnect.c tests the other way). */
static int setup_no_reconnect(void **state)
{
	return setup_with(state, true);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct rr_xprt_stats st;
	int rc = 0;

	if (f->c && !rr_tcp_clnt_stats(f->c, &st))
		print_stats("client", &st);
	if (f->c && st.state_violations) { /* base/fsm.h */
		fprintf(stderr,
			"client state machine moved where it may not\n");
		rc = -1;
	}
	if (f->c && rr_tcp_clnt_destroy(f->c))
		rc = -1;
	while (f->nflood)
		close(f->flood[--f->nflood]);
	if (rr_t_server_stop(&f->sv))
		rc = -1;
	free(f);
	return rc;
}

static struct rr_xprt_stats stats_of(struct rr_tcp_clnt *c)
{
	struct rr_xprt_stats st;

	assert_int_equal(rr_tcp_clnt_stats(c, &st), 0);
	return st;
}

/* Nothing unaccounted for: every reply matched, none was malformed. */
static void check_clean(struct rr_tcp_clnt *c)
{
	struct rr_xprt_stats st = stats_of(c);

	assert_int_equal(st.bad_xids, 0);
	assert_int_equal(st.bad_headers, 0);
	assert_int_equal(st.conn_lost, 0);
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
	uint8_t res[16];
	struct rr_call call = mkcall(RR_T_NULL, res, sizeof(res));

	assert_int_equal(rr_tcp_clnt_call(c, &call), 0);
	assert_int_equal(call.reply_stat, RR_MSG_ACCEPTED);
	assert_int_equal(call.accept_stat, RR_SUCCESS);
	assert_int_equal(call.res_len, 0);
}

static uint8_t *buf_new(size_t cap)
{
	uint8_t *b = malloc(cap + SLACK);

	assert_non_null(b);
	memset(b, SENTINEL, cap + SLACK);
	return b;
}

static void assert_sentinel(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != SENTINEL)
			fail_msg("byte %zu past the result was overwritten", i);
}

static void assert_pattern(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != rr_t_pat(i))
			fail_msg("byte %zu of %zu is %#x, want %#x", i, len,
				 p[i], rr_t_pat(i));
}

static const uint32_t sizes[] = {0,    1,     3,      4,      1000,
				 4096, 65535, 100000, 500001, MAX_BULK};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void big_ok(struct rr_tcp_clnt *c, uint32_t n)
{
	uint8_t *res = buf_new(BIG_CAP), args[4];
	struct rr_call call = mkcall(RR_T_BIG, res, BIG_CAP);

	rr_t_put32(args, n);
	call.args = args;
	call.args_len = 4;
	assert_int_equal(rr_tcp_clnt_call(c, &call), 0);
	assert_int_equal(call.res_len, 4 + n + rr_t_xdr_pad(n));
	assert_int_equal(rr_t_get32(res), n);
	assert_pattern(res + 4, n);
	assert_sentinel(res + call.res_len, SLACK);
	free(res);
}

/* -------------------------------------------------------- 1: basics */

static void echo_returns_the_argument_bytes_at_every_size(void **state)
{
	struct fx *f = *state;

	for (size_t k = 0; k < NSIZES; k++) {
		size_t n = sizes[k] & ~3u;
		uint8_t *args = malloc(n + 1), *res = buf_new(n);
		struct rr_call call = mkcall(RR_T_ECHO, res, n);

		assert_non_null(args);
		rr_t_fill_seeded(args, n, (uint32_t)k);
		call.args = n ? args : NULL;
		call.args_len = n;
		if (rr_tcp_clnt_call(f->c, &call))
			fail_msg("ECHO %zu failed", n);
		assert_int_equal(call.res_len, n);
		assert_memory_equal(res, args, n);
		assert_sentinel(res + n, SLACK);
		free(args);
		free(res);
	}
	check_clean(f->c);
}

static void read_returns_the_bulk_item_inline_in_res(void **state)
{
	struct fx *f = *state;
	uint8_t *res = buf_new(BIG_CAP), *rbulk = buf_new(16);

	for (size_t k = 0; k < NSIZES; k++) {
		uint32_t size = sizes[k];
		uint8_t args[4];
		struct rr_call call = mkcall(RR_T_READ, res, BIG_CAP);

		memset(res, SENTINEL, BIG_CAP + SLACK);
		rr_t_put32(args, size);
		call.args = args;
		call.args_len = 4;
		call.res_bulk = rbulk; /* offered, but TCP answers inline */
		call.res_bulk_cap = 16;
		if (rr_tcp_clnt_call(f->c, &call))
			fail_msg("READ %u: accept %u", size, call.accept_stat);
		assert_int_equal(call.res_bulk_len, 0);
		assert_int_equal(call.res_len, 4 + size + rr_t_xdr_pad(size));
		assert_int_equal(rr_t_get32(res), size);
		assert_pattern(res + 4, size);
		for (size_t i = 0; i < rr_t_xdr_pad(size); i++)
			assert_int_equal(res[4 + size + i], 0);
		assert_sentinel(res + call.res_len, SLACK);
	}
	assert_sentinel(rbulk, 16 + SLACK);
	free(res);
	free(rbulk);
	check_clean(f->c);
}

static void write_delivers_the_bulk_item_inline_with_padding(void **state)
{
	struct fx *f = *state;
	uint8_t *data = malloc(MAX_BULK);

	assert_non_null(data);
	for (size_t k = 0; k < NSIZES; k++) {
		uint32_t size = sizes[k];
		uint8_t args[4], res[16];
		struct rr_call call = mkcall(RR_T_WRITE, res, sizeof(res));

		rr_t_fill_seeded(data, size, (uint32_t)k + 100);
		rr_t_put32(args, size);
		call.args = args;
		call.args_len = 4;
		call.arg_bulk = data;
		call.arg_bulk_len = size;
		if (rr_tcp_clnt_call(f->c, &call))
			fail_msg("WRITE %u: accept %u", size, call.accept_stat);
		assert_int_equal(call.res_len, 8);
		assert_int_equal(rr_t_get32(res), size);
		if (rr_t_get32(res + 4) != rr_t_fnv1a(data, size))
			fail_msg("WRITE %u: server saw another checksum", size);
	}
	free(data);
	check_clean(f->c);
}

/* ------------------------------------------------------ 2: RPC errors */

static void call_rejected(struct rr_tcp_clnt *c, uint32_t prog, uint32_t vers,
			  uint32_t proc, uint32_t accept)
{
	uint8_t res[64];
	struct rr_call call = mkcall(proc, res, sizeof(res));
	int rc;

	call.prog = prog;
	call.vers = vers;
	rc = rr_tcp_clnt_call(c, &call);
	if (rc != -EREMOTEIO)
		fail_msg("prog %#x vers %u proc %u: rc %d, want -EREMOTEIO",
			 prog, vers, proc, rc);
	assert_int_equal(call.reply_stat, RR_MSG_ACCEPTED);
	assert_int_equal(call.accept_stat, accept);
	assert_int_equal(call.res_len, 0);
}

static void unknown_program_version_and_procedure_are_answered(void **state)
{
	struct fx *f = *state;
	uint8_t res[64];
	struct rr_call call = mkcall(RR_T_NULL, res, sizeof(res));

	call_rejected(f->c, RR_T_PROG + 1, 1, 0, RR_PROG_UNAVAIL);
	call_rejected(f->c, RR_T_PROG, 1, RR_T_NPROCS, RR_PROC_UNAVAIL);
	call_rejected(f->c, RR_T_PROG, 3, 1, RR_PROC_UNAVAIL);
	call_rejected(f->c, RR_T_PROG, 1, RR_T_READ, RR_GARBAGE_ARGS);
	/* RFC 5531: PROG_MISMATCH names the lowest and highest served. */
	call.vers = 2;
	assert_int_equal(rr_tcp_clnt_call(f->c, &call), -EREMOTEIO);
	assert_int_equal(call.accept_stat, RR_PROG_MISMATCH);
	if (call.mismatch_low != 1 || call.mismatch_high != 3)
		fail_msg("PROG_MISMATCH names %u..%u, want 1..3",
			 call.mismatch_low, call.mismatch_high);
	call = mkcall(RR_T_NULL, res, sizeof(res));
	call.vers = 3;
	assert_int_equal(rr_tcp_clnt_call(f->c, &call), 0);
	null_ok(f->c);
	check_clean(f->c);
}

/* COUNT with xid on a new connection; returns the count it answers. */
static uint32_t raw_count(uint16_t port, uint32_t xid)
{
	int fd = raw_connect(port);
	uint8_t msg[64], *rep;
	struct raw_reply r;
	uint32_t v;
	ssize_t n;

	assert_true(fd >= 0);
	assert_true(raw_send_record(
		fd, msg,
		raw_call_msg(msg, xid, 2, RR_T_PROG, 1, RR_T_TICK, NULL, 0)));
	n = raw_read_record(fd, &rep, 4096, RAW_TMO_MS);
	assert_true(n > 0);
	assert_true(raw_parse_reply(rep, (size_t)n, &r));
	assert_int_equal(r.xid, xid);
	assert_int_equal(r.accept, RR_SUCCESS);
	assert_true((size_t)n >= r.res_off + 4);
	v = rr_t_get32(rep + r.res_off);
	free(rep);
	close(fd);
	return v;
}

/*
 * A client that lost its connection sends a call again, same xid, on a
 * new one: a procedure that must not run twice is answered from the
 * duplicate request cache. Another xid is a new call.
 */
static void a_call_sent_again_on_a_new_connection_runs_once(void **state)
{
	struct fx *f = *state;
	uint32_t first = raw_count(f->sv.port, 900);

	assert_int_equal(raw_count(f->sv.port, 900), first);
	assert_int_equal(raw_count(f->sv.port, 901), first + 1);
	null_ok(f->c);
}

/* Our client always sends version 2: a raw client sends 3. */
/*
 * A call of words w[0..n) and `body` zero bytes after them: a credential
 * or verifier length word says what the body holds (or more).
 */
static size_t call_words(uint8_t *buf, const uint32_t *w, size_t n, size_t body)
{
	for (size_t i = 0; i < n; i++)
		rr_t_put32(buf + 4 * i, w[i]);
	memset(buf + 4 * n, 0, body);
	return 4 * n + body;
}

/* Sends a record on fd and returns the auth_stat of its AUTH_ERROR reply. */
static uint32_t auth_error_of(int fd, uint32_t xid, const uint8_t *msg,
			      size_t len)
{
	struct raw_reply r;
	uint8_t *rep;
	uint32_t why;
	ssize_t n;

	assert_true(raw_send_record(fd, msg, len));
	n = raw_read_record(fd, &rep, 4096, RAW_TMO_MS);
	assert_true(n >= 20);
	assert_true(raw_parse_reply(rep, (size_t)n, &r));
	assert_int_equal(r.xid, xid);
	assert_int_equal(r.stat, RR_MSG_DENIED);
	assert_int_equal(rr_t_get32(rep + 12), RR_AUTH_ERROR);
	why = rr_t_get32(rep + 16);
	free(rep);
	return why;
}

/*
 * RFC 5531 caps a credential or verifier body at 400 bytes: longer ones,
 * a length word of 0xffffffff among them, are answered AUTH_BADCRED or
 * AUTH_BADVERF (not dropped), and the connection goes on serving.
 */
static void oversized_credential_is_answered_auth_error(void **state)
{
	const uint32_t huge_cred[] = {31, 0, 2, RR_T_PROG, 1, 0, 1, 0xffffffff};
	const uint32_t long_cred[] = {32, 0, 2, RR_T_PROG, 1, 0, 1, 404};
	const uint32_t huge_verf[] = {33, 0, 2, RR_T_PROG, 1, 0, 0, 0, 0, ~0u};
	struct fx *f = *state;
	int fd = raw_connect(f->sv.port);
	static uint8_t msg[1024];
	uint8_t *rep;
	struct raw_reply r;
	ssize_t n;

	assert_true(fd >= 0);
	assert_int_equal(
		auth_error_of(fd, 31, msg, call_words(msg, huge_cred, 8, 0)),
		RR_AUTH_BADCRED);
	assert_int_equal(auth_error_of(fd, 32, msg,
				       call_words(msg, long_cred, 8, 404 + 8)),
			 RR_AUTH_BADCRED);
	assert_int_equal(
		auth_error_of(fd, 33, msg, call_words(msg, huge_verf, 10, 0)),
		RR_AUTH_BADVERF);
	assert_true(raw_send_record(
		fd, msg, raw_call_msg(msg, 34, 2, RR_T_PROG, 1, 0, NULL, 0)));
	n = raw_read_record(fd, &rep, 4096, RAW_TMO_MS);
	assert_true(n > 0);
	assert_true(raw_parse_reply(rep, (size_t)n, &r));
	assert_int_equal(r.xid, 34);
	assert_int_equal(r.accept, RR_SUCCESS);
	free(rep);
	close(fd);
	null_ok(f->c);
}

static void rpc_version_3_is_denied_with_rpc_mismatch(void **state)
{
	struct fx *f = *state;
	int fd = raw_connect(f->sv.port);
	uint8_t msg[64], *rep;
	struct raw_reply r;
	ssize_t n;

	assert_true(fd >= 0);
	assert_true(raw_send_record(
		fd, msg, raw_call_msg(msg, 77, 3, RR_T_PROG, 1, 0, NULL, 0)));
	n = raw_read_record(fd, &rep, 4096, RAW_TMO_MS);
	assert_true(n > 0);
	assert_true(raw_parse_reply(rep, (size_t)n, &r));
	assert_int_equal(r.xid, 77);
	assert_int_equal(r.stat, RR_MSG_DENIED);
	assert_int_equal(r.reject, RR_RPC_MISMATCH);
	assert_int_equal(r.low, 2);
	assert_int_equal(r.high, 2);
	free(rep);
	close(fd);
	null_ok(f->c);
}

/* ------------------------------------------- 3: records and fragments */

/* A 300 KB ECHO in fragments of odd sizes, empty ones among them. */
static void call_split_into_many_fragments_is_reassembled(void **state)
{
	static const uint32_t frags[] = {1, 0, 7, 4096, 0, 13, 65536, 3};
	struct fx *f = *state;
	size_t len = 300000, mlen;
	uint8_t *args = malloc(len), *msg = malloc(len + 64), *rep;
	int fd = raw_connect(f->sv.port);
	struct raw_reply r;
	ssize_t n;

	assert_non_null(args);
	assert_non_null(msg);
	assert_true(fd >= 0);
	rr_t_fill_seeded(args, len, 9);
	for (uint32_t xid = 1; xid <= 2; xid++) {
		mlen = raw_call_msg(msg, xid, 2, RR_T_PROG, 1, RR_T_ECHO, args,
				    len);
		assert_true(xid == 1 ? raw_send_frags(fd, msg, mlen, frags, 8)
				     : raw_send_record(fd, msg, mlen));
		n = raw_read_record(fd, &rep, len + 4096, RAW_TMO_MS);
		assert_true(n > 0);
		assert_true(raw_parse_reply(rep, (size_t)n, &r));
		assert_int_equal(r.xid, xid);
		assert_int_equal(r.accept, RR_SUCCESS);
		assert_int_equal((size_t)n - r.res_off, len);
		assert_memory_equal(rep + r.res_off, args, len);
		free(rep);
	}
	close(fd);
	free(args);
	free(msg);
	null_ok(f->c);
}

/*
 * Garbage on one connection: a REPLY naming no callback of the server's,
 * a record too short to be a call (both dropped, the connection lives),
 * then a record header over max_record (that connection is closed). A
 * good client on its own connection notices nothing, and the server
 * counted all three (the reply among replies to callbacks).
 */
static void garbage_client_does_not_disturb_a_good_one(void **state)
{
	struct fx *f = *state;
	int fd = raw_connect(f->sv.port);
	uint8_t msg[64], junk[5] = {1, 2, 3, 4, 5}, *rep, h[4];
	struct raw_reply r;
	ssize_t n;

	assert_true(fd >= 0);
	raw_call_msg(msg, 5, 2, RR_T_PROG, 1, RR_T_NULL, NULL, 0);
	rr_t_put32(msg + 4, 1); /* a REPLY */
	assert_true(raw_send_record(fd, msg, 40));
	assert_true(raw_send_record(fd, junk, sizeof(junk)));
	null_ok(f->c);
	/* Still served: the junk was dropped, not fatal. */
	assert_true(raw_send_record(
		fd, msg,
		raw_call_msg(msg, 6, 2, RR_T_PROG, 1, RR_T_NULL, NULL, 0)));
	n = raw_read_record(fd, &rep, 4096, RAW_TMO_MS);
	assert_true(n > 0);
	assert_true(raw_parse_reply(rep, (size_t)n, &r));
	assert_int_equal(r.xid, 6); /* nothing answered the junk */
	free(rep);
	rr_t_put32(h, 0x80000000u | (SVC_MAX_REC + 1));
	assert_true(rr_t_write_all(fd, h, 4));
	/* The server closes this connection: EOF, within a bound. */
	assert_false(rr_t_read_within(fd, h, 1, RAW_TMO_MS));
	close(fd);
	null_ok(f->c);
	check_clean(f->c);
	assert_int_equal(rr_tcp_clnt_destroy(f->c), 0);
	f->c = NULL;
	assert_int_equal(rr_t_server_stop(&f->sv), 0);
	assert_true(f->sv.have_stats);
	assert_int_equal(f->sv.st.bad_headers, 2);
	assert_int_equal(f->sv.st.cb_bad_xids, 1);
	assert_int_equal(f->sv.st.calls, 3);
	assert_true(f->sv.st.conn_lost >= 1); /* ours may end after stop */
}

/*
 * A client that sends calls and never reads their replies must not stall
 * the server for others: replies queue (bounded), the loop carries on.
 */
static void client_that_never_reads_does_not_stall_others(void **state)
{
	struct fx *f = *state;
	int fd = raw_connect(f->sv.port);
	uint8_t msg[64], args[4], *res = buf_new(BIG_CAP);
	struct rr_call call = mkcall(RR_T_BIG, res, BIG_CAP);

	assert_true(fd >= 0);
	rr_t_put32(args, 1000000);
	for (uint32_t i = 0; i < 40; i++)
		assert_true(
			raw_send_record(fd, msg,
					raw_call_msg(msg, i + 1, 2, RR_T_PROG,
						     1, RR_T_BIG, args, 4)));
	for (int i = 0; i < 20; i++)
		null_ok(f->c);
	call.args = args;
	call.args_len = 4;
	assert_int_equal(rr_tcp_clnt_call(f->c, &call), 0);
	assert_pattern(res + 4, 1000000);
	free(res);
	close(fd);
	null_ok(f->c);
	check_clean(f->c);
}

/*
 * A client that sends many calls and resets its connection at once: the
 * server drops their replies (with threads > 0 the calls are still in
 * workers, holding the connection) and goes on serving others.
 */
static void connection_reset_with_calls_in_progress_is_harmless(void **state)
{
	struct fx *f = *state;
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	uint8_t msg[64], args[4];

	rr_t_put32(args, 500000);
	for (int round = 0; round < 5; round++) {
		int fd = raw_connect(f->sv.port);

		assert_true(fd >= 0);
		for (uint32_t i = 0; i < 30; i++)
			assert_true(raw_send_record(
				fd, msg,
				raw_call_msg(msg, i + 1, 2, RR_T_PROG, 1,
					     RR_T_BIG, args, 4)));
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd); /* RST */
		null_ok(f->c);
	}
	big_ok(f->c, 500000);
	check_clean(f->c);
}

/* ------------------------------------------------ 4: results too big */

/*
 * A reply over the client's max_record: that call fails with -EMSGSIZE
 * (its bytes are skipped), the connection and other calls carry on.
 */
static void reply_larger_than_max_record_fails_only_its_call(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt_opts o = {.timeout_ms = CALL_TMO_MS,
				     .max_record = 64 << 10};
	struct rr_tcp_clnt *c;
	uint8_t *res = buf_new(BIG_CAP), args[4];
	struct rr_call call = mkcall(RR_T_BIG, res, BIG_CAP);
	struct rr_xprt_stats st;

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->sv.port, &o, &c),
			 0);
	rr_t_put32(args, 300000);
	call.args = args;
	call.args_len = 4;
	assert_int_equal(rr_tcp_clnt_call(c, &call), -EMSGSIZE);
	assert_sentinel(res, BIG_CAP + SLACK);
	null_ok(c);
	big_ok(c, 60000);
	st = stats_of(c);
	assert_int_equal(st.calls, 3);
	check_clean(c);
	assert_int_equal(rr_tcp_clnt_destroy(c), 0);
	free(res);
}

static void call_larger_than_max_record_fails_with_emsgsize(void **state)
{
	struct fx *f = *state;
	size_t len = 2u << 20;
	uint8_t *args = calloc(1, len), res[16];
	struct rr_call call = mkcall(RR_T_ECHO, res, sizeof(res));

	assert_non_null(args);
	call.args = args;
	call.args_len = len;
	assert_int_equal(rr_tcp_clnt_call(f->c, &call), -EMSGSIZE);
	free(args);
	null_ok(f->c);
	check_clean(f->c);
}

/* ---------------------------------------------------- 5: async calls */

#define NASYNC	  200
#define ASYNC_LEN 4000

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
	uint8_t args[ASYNC_LEN];
	uint8_t res[ASYNC_LEN];
};

static void async_log_init(struct async_log *l)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
}

static void async_log_fini(struct async_log *l)
{
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
}

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

/* Waits for want callbacks in all, up to tmo_ms. */
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
	if (l->ndone < want)
		fail_msg("%u of %u async calls completed in %d ms", l->ndone,
			 want, tmo_ms);
	pthread_mutex_unlock(&l->mu);
}

static struct async_slot *async_slots(struct async_log *l, uint32_t n)
{
	struct async_slot *s = calloc(n, sizeof(*s));

	assert_non_null(s);
	for (uint32_t i = 0; i < n; i++) {
		s[i].log = l;
		s[i].idx = i;
		rr_t_fill_seeded(s[i].args, ASYNC_LEN, i + 1000);
		memset(s[i].res, SENTINEL, ASYNC_LEN);
		s[i].call = mkcall(RR_T_ECHO, s[i].res, ASYNC_LEN);
		s[i].call.args = s[i].args;
		s[i].call.args_len = ASYNC_LEN;
	}
	return s;
}

/* More calls than slots (32): the rest wait their turn, all complete. */
static void pipelined_async_calls_each_get_their_own_reply(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s;
	struct rr_xprt_stats st;

	async_log_init(&log);
	s = async_slots(&log, NASYNC);
	for (uint32_t i = 0; i < NASYNC; i++)
		assert_int_equal(rr_tcp_clnt_call_async(f->c, &s[i].call,
							async_done, &s[i]),
				 0);
	async_wait(&log, NASYNC, 60000);
	for (uint32_t i = 0; i < NASYNC; i++) {
		if (log.count[i] != 1 || log.rc[i])
			fail_msg("call %u: %u callbacks, rc %d", i,
				 log.count[i], log.rc[i]);
		assert_int_equal(s[i].call.res_len, ASYNC_LEN);
		assert_memory_equal(s[i].res, s[i].args, ASYNC_LEN);
	}
	st = stats_of(f->c);
	assert_int_equal(st.calls, NASYNC);
	assert_true(st.credit_waits > 0);
	check_clean(f->c);
	async_log_fini(&log);
	free(s);
}

#define NTHREADS   6
#define NPERTHREAD 150

struct mt_thread {
	struct rr_tcp_clnt *c;
	uint32_t id, ok;
	pthread_t t;
	uint8_t *buf;
	char err[160];
};

static void mt_one(struct mt_thread *t, uint32_t i)
{
	uint8_t args[4], res[70000];
	struct rr_call call = mkcall(RR_T_WRITE, res, sizeof(res));
	uint32_t size = 1 + (t->id * 7919 + i * 104729) % 65536;
	int rc;

	if (i % 2) {
		call.proc = RR_T_READ;
		rr_t_put32(args, size);
		call.args = args;
		call.args_len = 4;
		rc = rr_tcp_clnt_call(t->c, &call);
		if (rc || rr_t_get32(res) != size ||
		    call.res_len != 4 + size + rr_t_xdr_pad(size) ||
		    memcmp(res + 4, t->buf, size)) {
			snprintf(t->err, sizeof(t->err), "READ %u: rc %d", size,
				 rc);
			return;
		}
	} else {
		uint8_t *w = t->buf + 70000;

		rr_t_fill_seeded(w, size, t->id * 1000 + i);
		rr_t_put32(args, size);
		call.args = args;
		call.args_len = 4;
		call.arg_bulk = w;
		call.arg_bulk_len = size;
		rc = rr_tcp_clnt_call(t->c, &call);
		if (rc || rr_t_get32(res + 4) != rr_t_fnv1a(w, size)) {
			snprintf(t->err, sizeof(t->err), "WRITE %u: rc %d",
				 size, rc);
			return;
		}
	}
	t->ok++;
}

static void *mt_main(void *arg)
{
	struct mt_thread *t = arg;

	for (uint32_t i = 0; i < NPERTHREAD && !t->err[0]; i++)
		mt_one(t, i);
	return NULL;
}

static void many_sync_callers_share_one_client(void **state)
{
	struct fx *f = *state;
	struct mt_thread t[NTHREADS];

	memset(t, 0, sizeof(t));
	for (uint32_t i = 0; i < NTHREADS; i++) {
		t[i].c = f->c;
		t[i].id = i;
		t[i].buf = malloc(140000);
		assert_non_null(t[i].buf);
		for (size_t k = 0; k < 70000; k++)
			t[i].buf[k] = rr_t_pat(k);
		assert_int_equal(pthread_create(&t[i].t, NULL, mt_main, &t[i]),
				 0);
	}
	for (uint32_t i = 0; i < NTHREADS; i++)
		pthread_join(t[i].t, NULL);
	for (uint32_t i = 0; i < NTHREADS; i++) {
		if (t[i].err[0])
			fail_msg("thread %u: %s", i, t[i].err);
		assert_int_equal(t[i].ok, NPERTHREAD);
		free(t[i].buf);
	}
	assert_int_equal(stats_of(f->c).calls, NTHREADS * NPERTHREAD);
	check_clean(f->c);
}

/* ------------------------------------------------ 6: stalled and dead */

#define NKILL 48

static void killed_server_fails_every_call_in_flight_once(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s;
	uint8_t res[16];
	struct rr_call after = mkcall(RR_T_NULL, res, sizeof(res));
	struct rr_xprt_stats st;

	async_log_init(&log);
	s = async_slots(&log, NKILL);
	null_ok(f->c);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	for (uint32_t i = 0; i < NKILL; i++) /* 32 sent, 16 pending */
		assert_int_equal(rr_tcp_clnt_call_async(f->c, &s[i].call,
							async_done, &s[i]),
				 0);
	assert_int_equal(rr_t_server_kill(&f->sv), 0);
	async_wait(&log, NKILL, 20000);
	for (uint32_t i = 0; i < NKILL; i++)
		if (log.count[i] != 1 || log.rc[i] != -ECONNRESET)
			fail_msg("call %u: %u callbacks, rc %d", i,
				 log.count[i], log.rc[i]);
	assert_int_equal(rr_tcp_clnt_call(f->c, &after), -ECONNRESET);
	st = stats_of(f->c);
	assert_int_equal(st.conn_lost, 1);
	assert_int_equal(st.bad_xids, 0);
	assert_int_equal(rr_tcp_clnt_destroy(f->c), 0);
	f->c = NULL;
	for (uint32_t i = 0; i < NKILL; i++)
		assert_int_equal(log.count[i], 1);
	async_log_fini(&log);
	free(s);
}

/* Destroy with calls pending: each fails once with -ECANCELED. */
static void destroy_fails_pending_calls_with_ecanceled(void **state)
{
	struct fx *f = *state;
	struct async_log log;
	struct async_slot *s;

	async_log_init(&log);
	s = async_slots(&log, 40);
	assert_int_equal(rr_t_server_freeze(&f->sv), 0);
	for (uint32_t i = 0; i < 40; i++)
		assert_int_equal(rr_tcp_clnt_call_async(f->c, &s[i].call,
							async_done, &s[i]),
				 0);
	assert_int_equal(rr_tcp_clnt_destroy(f->c), 0);
	f->c = NULL;
	for (uint32_t i = 0; i < 40; i++) {
		assert_int_equal(log.count[i], 1);
		assert_int_equal(log.rc[i], -ECANCELED);
	}
	assert_int_equal(rr_t_server_thaw(&f->sv), 0);
	async_log_fini(&log);
	free(s);
}

/* ------------------------------------------------ descriptors run out */

/* utime + stime of a process, in ms. */
static uint64_t cpu_ms_of(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	FILE *fp;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	assert_non_null(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces */
	assert_non_null(p);
	assert_int_equal(sscanf(p + 2,
				"%*c %*d %*d %*d %*d %*d %*u %*u %*u "
				"%*u %*u %llu %llu",
				&ut, &st),
			 2);
	return (ut + st) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK);
}

/* How many of fds the server has closed (EOF or reset) within tmo_ms. */
static unsigned count_closed(const int *fds, unsigned n, unsigned want,
			     int tmo_ms)
{
	uint64_t end = rr_t_now_ms() + (uint64_t)tmo_ms;
	bool *gone = calloc(n, sizeof(*gone));
	struct pollfd *pfd = calloc(n, sizeof(*pfd));
	unsigned closed = 0;

	assert_non_null(gone);
	assert_non_null(pfd);
	while (closed < want && rr_t_now_ms() < end) {
		for (unsigned i = 0; i < n; i++)
			pfd[i] = (struct pollfd){.fd = gone[i] ? -1 : fds[i],
						 .events = POLLIN};
		if (poll(pfd, n, (int)(end - rr_t_now_ms())) <= 0)
			break;
		for (unsigned i = 0; i < n; i++) {
			char c;

			if (gone[i] || !pfd[i].revents)
				continue;
			assert_true(read(fds[i], &c, 1) <= 0);
			gone[i] = true;
			closed++;
		}
	}
	free(gone);
	free(pfd);
	return closed;
}

/* A fresh connection's NULL call; false if the server closed it. */
static bool raw_null_ok(uint16_t port, uint32_t xid)
{
	uint8_t msg[64], *rep = NULL;
	struct raw_reply r;
	int fd = raw_connect(port);
	ssize_t n = -1;

	if (fd < 0)
		return false;
	if (raw_send_record(fd, msg,
			    raw_call_msg(msg, xid, 2, RR_T_PROG, 1, RR_T_NULL,
					 NULL, 0)))
		n = raw_read_record(fd, &rep, 4096, RAW_TMO_MS);
	close(fd);
	if (n < 0) {
		free(rep);
		return false;
	}
	assert_true(raw_parse_reply(rep, (size_t)n, &r));
	assert_int_equal(r.xid, xid);
	assert_int_equal(r.accept, RR_SUCCESS);
	free(rep);
	return true;
}

/*
 * More connections than the server has descriptors: the ones it cannot
 * accept are closed by its reserved descriptor (a close, not a hang),
 * accepting pauses instead of spinning on a listener that stays readable,
 * the connections it holds keep working, and once the flood goes a new
 * client is served again.
 */
static void
running_out_of_descriptors_closes_the_excess_and_recovers(void **state)
{
	struct fx *f = *state;
	int *fds = f->flood;
	uint64_t cpu0, t0, cpu, wall;
	unsigned closed;
	bool served = false;

	null_ok(f->c);
	cpu0 = cpu_ms_of(f->sv.pid);
	t0 = rr_t_now_ms();
	for (unsigned i = 0; i < FD_FLOOD; i++) {
		fds[i] = raw_connect(f->sv.port);
		assert_true(fds[i] >= 0);
		f->nflood++;
	}
	closed = count_closed(fds, FD_FLOOD, EXCESS_MIN, 20000);
	cpu = cpu_ms_of(f->sv.pid) - cpu0;
	wall = rr_t_now_ms() - t0;
	fprintf(stderr, "  %u of %u closed in %llu ms; server cpu %llu ms\n",
		closed, FD_FLOOD, (unsigned long long)wall,
		(unsigned long long)cpu);
	assert_true(closed >= EXCESS_MIN);
	assert_true(closed < FD_FLOOD); /* some were accepted and are held */
	/* A loop retrying accept at once would burn the whole interval. */
	assert_true(cpu * 4 < wall + 40);
	null_ok(f->c);
	while (f->nflood)
		close(fds[--f->nflood]);
	/* The loop frees the flood's descriptors as it sees each hang-up. */
	for (uint32_t xid = 1; !served && xid <= 100; xid++)
		served = raw_null_ok(f->sv.port, xid);
	assert_true(served);
	assert_int_equal(rr_t_server_stop(&f->sv), 0);
	assert_true(f->sv.have_stats);
	assert_true(f->sv.st.accept_errors > 0);
}

#define T(fn) RR_T_LIMITED(fn, CASE_S, setup, teardown)

static const struct CMUnitTest tests[] = {
	T(echo_returns_the_argument_bytes_at_every_size),
	T(read_returns_the_bulk_item_inline_in_res),
	T(write_delivers_the_bulk_item_inline_with_padding),
	T(unknown_program_version_and_procedure_are_answered),
	T(rpc_version_3_is_denied_with_rpc_mismatch),
	T(oversized_credential_is_answered_auth_error),
	T(a_call_sent_again_on_a_new_connection_runs_once),
	T(call_split_into_many_fragments_is_reassembled),
	T(garbage_client_does_not_disturb_a_good_one),
	T(client_that_never_reads_does_not_stall_others),
	T(connection_reset_with_calls_in_progress_is_harmless),
	T(call_larger_than_max_record_fails_with_emsgsize),
	T(reply_larger_than_max_record_fails_only_its_call),
	T(pipelined_async_calls_each_get_their_own_reply),
	T(many_sync_callers_share_one_client),
	RR_T_LIMITED(killed_server_fails_every_call_in_flight_once, CASE_S,
		     setup_no_reconnect, teardown),
	T(destroy_fails_pending_calls_with_ecanceled),
	RR_T_LIMITED(running_out_of_descriptors_closes_the_excess_and_recovers,
		     CASE_S, setup_few_fds, teardown),
};

/* tcp_functional [PATTERN [SKIP]]: cmocka filters on the test names. */
int main(int argc, char **argv)
{
	int failed = 0;

	rr_t_server_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	if (argc > 2)
		cmocka_set_skip_filter(argv[2]);
	g_threads = 0;
	rr_t_limit_context("threads=0");
	failed += cmocka_run_group_tests_name("threads=0", tests, NULL, NULL);
	g_threads = 4;
	rr_t_limit_context("threads=4");
	failed += cmocka_run_group_tests_name("threads=4", tests, NULL, NULL);
	return failed ? 1 : 0;
}
