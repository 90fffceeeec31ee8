/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad's NLM version 4 as a process, asked by libtirpc's client (a
 * peer none of us wrote: its clnt_call frames, sends and parses): two
 * owners contending for byte ranges, TEST naming the holder, FREE_ALL
 * releasing one host's locks, the grace period, handles that are not the
 * server's, and a client no export rule admits.
 *
 * The handle is found as a client finds it: MNT over TCP for the export's
 * root, LOOKUP over TCP for the file. argv[1] is the nfsrdmad binary.
 */
#include "daemon.h"
#include "nlm_fixture.h"
#include "mount3.h"
#include "nfs3_prot.h"
#include "nlm4.h"

#include <rpc/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static const char *daemon_path;
static int start(void **state, const char *grace, const char *per_host)
{
	struct fx *f = calloc(1, sizeof(*f));
	char line[PATH_MAX + 64];
	const char *extra[] = {"--exports",
			       f->exports,
			       "--grace",
			       grace,
			       "--nlm-port",
			       "0",
			       "--nlm-locks-per-host",
			       per_host,
			       NULL};

	snprintf(f->top, sizeof(f->top), "/tmp/rr-nlm-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->exp, sizeof(f->exp), "%s/exp", f->top);
	snprintf(f->state, sizeof(f->state), "%s/state", f->top);
	snprintf(f->exports, sizeof(f->exports), "%s/exports", f->top);
	assert_int_equal(mkdir(f->exp, 0777), 0);
	chmod(f->exp, 0777);
	snprintf(line, sizeof(line), "%s/f", f->exp);
	write_file(line, "locked\n");
	chmod(line, 0666);
	/* 127.0.0.1 only: a client from 127.0.0.2 is no client of it */
	snprintf(line, sizeof(line), "%s 127.0.0.1(rw,no_root_squash)\n",
		 f->exp);
	write_file(f->exports, line);
	assert_int_equal(rr_t_daemon_start(&f->d, daemon_path, NULL, f->state,
					   extra, NULL),
			 0);
	assert_true(f->d.nlm != 0);
	find_fh(f);
	f->nlm = client(f->d.nlm, NLM_PROG, NLM4_VERS, NULL);
	*state = f;
	return 0;
}

static int start_no_grace(void **state)
{
	return start(state, "0", "1024");
}

/* a host may hold 4 ranges; a LOCK that may add 2 needs room for them */
static int start_small(void **state)
{
	return start(state, "0", "4");
}

static int start_in_grace(void **state)
{
	return start(state, "3600", "1024");
}

static int stop(void **state)
{
	struct fx *f = *state;
	char cmd[PATH_MAX + 16];

	forget(f->nlm);
	assert_int_equal(rr_t_daemon_stop(&f->d), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->top);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static const struct owner A = {"host-a", 101, "owner a"};
static const struct owner A2 = {"host-a", 102, "owner a2"};
static const struct owner B = {"host-b", 201, "owner b"};

static nlm4_lock alock(struct fx *f, const struct owner *o, uint64_t off,
		       uint64_t len)
{
	return (nlm4_lock){
		.caller_name = o->host,
		.fh = {.nlm4_netobj_len = f->fh_len, .nlm4_netobj_val = f->fh},
		.oh = {.nlm4_netobj_len = (u_int)strlen(o->oh),
		       .nlm4_netobj_val = o->oh},
		.svid = o->svid,
		.l_offset = off,
		.l_len = len};
}

static char cookie[] = "cookie-1";

static nlm4_stats call_res(CLIENT *c, u_long proc, xdrproc_t xa, void *a)
{
	nlm4_res r;
	nlm4_stats st;

	memset(&r, 0, sizeof(r));
	assert_int_equal(clnt_call(c, proc, xa, a, (xdrproc_t)rr__xdr_nlm4_res,
				   (char *)&r, tmo),
			 RPC_SUCCESS);
	/* the cookie comes back as sent */
	assert_int_equal(r.cookie.nlm4_netobj_len, strlen(cookie));
	assert_memory_equal(r.cookie.nlm4_netobj_val, cookie, strlen(cookie));
	st = r.stat.stat;
	xdr_free((xdrproc_t)rr__xdr_nlm4_res, (char *)&r);
	return st;
}

static nlm4_stats lock_as(CLIENT *c, nlm4_lock l, bool excl, bool block,
			  bool reclaim)
{
	nlm4_lockargs a = {.cookie = {.nlm4_netobj_len = (u_int)strlen(cookie),
				      .nlm4_netobj_val = cookie},
			   .block = block,
			   .exclusive = excl,
			   .alock = l,
			   .reclaim = reclaim,
			   .state = 1};

	return call_res(c, NLMPROC4_LOCK, (xdrproc_t)rr__xdr_nlm4_lockargs, &a);
}

static nlm4_stats lock(struct fx *f, const struct owner *o, uint64_t off,
		       uint64_t len, bool excl)
{
	return lock_as(f->nlm, alock(f, o, off, len), excl, false, false);
}

static nlm4_stats unlock(struct fx *f, const struct owner *o, uint64_t off,
			 uint64_t len)
{
	nlm4_unlockargs a = {
		.cookie = {.nlm4_netobj_len = (u_int)strlen(cookie),
			   .nlm4_netobj_val = cookie},
		.alock = alock(f, o, off, len)};

	return call_res(f->nlm, NLMPROC4_UNLOCK,
			(xdrproc_t)rr__xdr_nlm4_unlockargs, &a);
}

/* TEST: its status, and the holder into *h when DENIED (h's oh freed). */
static nlm4_stats test(struct fx *f, const struct owner *o, uint64_t off,
		       uint64_t len, bool excl, nlm4_holder *h)
{
	nlm4_testargs a = {.cookie = {.nlm4_netobj_len = (u_int)strlen(cookie),
				      .nlm4_netobj_val = cookie},
			   .exclusive = excl,
			   .alock = alock(f, o, off, len)};
	nlm4_testres r;
	nlm4_stats st;

	memset(&r, 0, sizeof(r));
	assert_int_equal(clnt_call(f->nlm, NLMPROC4_TEST,
				   (xdrproc_t)rr__xdr_nlm4_testargs, (char *)&a,
				   (xdrproc_t)rr__xdr_nlm4_testres, (char *)&r,
				   tmo),
			 RPC_SUCCESS);
	st = r.stat.stat;
	if (st == NLM4_DENIED && h) {
		*h = r.stat.nlm4_testrply_u.holder;
		h->oh.nlm4_netobj_val = NULL;
	}
	xdr_free((xdrproc_t)rr__xdr_nlm4_testres, (char *)&r);
	return st;
}

static void free_all(struct fx *f, char *host)
{
	nlm4_notify n = {.name = host, .state = 2};

	assert_int_equal(clnt_call(f->nlm, NLMPROC4_FREE_ALL,
				   (xdrproc_t)rr__xdr_nlm4_notify, (char *)&n,
				   (xdrproc_t)(void (*)(void))xdr_void, NULL,
				   tmo),
			 RPC_SUCCESS);
}

static void exclusive_and_shared_ranges_conflict_as_posix_says(void **state)
{
	struct fx *f = *state;

	assert_int_equal(lock(f, &A, 0, 100, true), NLM4_GRANTED);
	/* overlapping: another owner, shared or exclusive, is refused */
	assert_int_equal(lock(f, &B, 50, 10, false), NLM4_DENIED);
	assert_int_equal(lock(f, &B, 99, 1, true), NLM4_DENIED);
	/* another process of the same host is another owner */
	assert_int_equal(lock(f, &A2, 0, 1, false), NLM4_DENIED);
	/* adjacent ranges do not conflict */
	assert_int_equal(lock(f, &B, 100, 50, true), NLM4_GRANTED);
	/* unlock frees the range for the other owner */
	assert_int_equal(unlock(f, &A, 0, 100), NLM4_GRANTED);
	assert_int_equal(lock(f, &B, 0, 100, false), NLM4_GRANTED);
	/* shared locks share; an exclusive one waits for both */
	assert_int_equal(lock(f, &A, 10, 10, false), NLM4_GRANTED);
	assert_int_equal(lock(f, &A2, 0, 0, true), NLM4_DENIED);
	/* a blocking request waits (tests/nfs3/nlm/nlm_blocking_test.c) */
	assert_int_equal(
		lock_as(f->nlm, alock(f, &A2, 0, 0), true, true, false),
		NLM4_BLOCKED);
}

static void test_names_the_holder(void **state)
{
	struct fx *f = *state;
	nlm4_holder h;

	assert_int_equal(lock(f, &A, 1000, 24, true), NLM4_GRANTED);
	memset(&h, 0, sizeof(h));
	assert_int_equal(test(f, &B, 1010, 1, false, &h), NLM4_DENIED);
	assert_true(h.exclusive);
	assert_int_equal(h.svid, A.svid);
	assert_int_equal(h.l_offset, 1000);
	assert_int_equal(h.l_len, 24);
	/* the owner itself, and a range beside it, could lock */
	assert_int_equal(test(f, &A, 1010, 1, true, NULL), NLM4_GRANTED);
	assert_int_equal(test(f, &B, 1024, 1, true, NULL), NLM4_GRANTED);
	/* TEST takes nothing */
	assert_int_equal(lock(f, &B, 1024, 1, true), NLM4_GRANTED);
}

static void free_all_releases_one_hosts_locks(void **state)
{
	struct fx *f = *state;

	assert_int_equal(lock(f, &A, 0, 10, true), NLM4_GRANTED);
	assert_int_equal(lock(f, &A2, 10, 10, true), NLM4_GRANTED);
	assert_int_equal(lock(f, &B, 20, 10, true), NLM4_GRANTED);
	free_all(f, "host-a");
	assert_int_equal(test(f, &B, 0, 20, true, NULL), NLM4_GRANTED);
	assert_int_equal(lock(f, &B, 0, 20, true), NLM4_GRANTED);
	/* host-b's lock stayed */
	assert_int_equal(lock(f, &A, 20, 1, false), NLM4_DENIED);
	free_all(f, "host-b");
	assert_int_equal(lock(f, &A, 0, 0, true), NLM4_GRANTED);
}

static void grace_period_grants_only_reclaims(void **state)
{
	struct fx *f = *state;

	assert_int_equal(lock(f, &A, 0, 10, true), NLM4_DENIED_GRACE_PERIOD);
	assert_int_equal(test(f, &A, 0, 10, true, NULL),
			 NLM4_DENIED_GRACE_PERIOD);
	assert_int_equal(
		lock_as(f->nlm, alock(f, &A, 0, 10), true, false, true),
		NLM4_GRANTED);
	/* a reclaim of a lock another owner took back first: conflict */
	assert_int_equal(lock_as(f->nlm, alock(f, &B, 5, 1), true, false, true),
			 NLM4_DENIED);
	/* unlock is always allowed */
	assert_int_equal(unlock(f, &A, 0, 10), NLM4_GRANTED);
}

static void reclaim_after_grace_is_refused(void **state)
{
	struct fx *f = *state;

	assert_int_equal(
		lock_as(f->nlm, alock(f, &A, 0, 10), true, false, true),
		NLM4_DENIED_GRACE_PERIOD);
	assert_int_equal(lock(f, &A, 0, 10, true), NLM4_GRANTED);
}

static void bad_handles_are_stale(void **state)
{
	struct fx *f = *state;
	char junk[NFS3_FHSIZE + 8];
	nlm4_lock l = alock(f, &A, 0, 1);

	memset(junk, 0x5a, sizeof(junk));
	/* not made by the server */
	l.fh.nlm4_netobj_val = junk;
	l.fh.nlm4_netobj_len = (u_int)f->fh_len;
	assert_int_equal(lock_as(f->nlm, l, true, false, false), NLM4_STALE_FH);
	/* longer than any NFSv3 handle */
	l.fh.nlm4_netobj_len = sizeof(junk);
	assert_int_equal(lock_as(f->nlm, l, true, false, false), NLM4_STALE_FH);
	/* empty */
	l.fh.nlm4_netobj_len = 0;
	assert_int_equal(lock_as(f->nlm, l, true, false, false), NLM4_STALE_FH);
	/* one of ours, its file removed */
	{
		char path[PATH_MAX + 4];

		snprintf(path, sizeof(path), "%s/f", f->exp);
		assert_int_equal(unlink(path), 0);
		assert_int_equal(lock(f, &A, 0, 1, true), NLM4_STALE_FH);
	}
}

/* Bytes sent as they are: arguments no XDR routine of ours would make. */
struct raw {
	char *buf;
	u_int len; /* a multiple of 4 */
};

static bool_t xdr_raw(XDR *x, struct raw *r)
{
	return xdr_opaque(x, r->buf, r->len);
}

/* A LOCK whose caller_name holds a NUL: "host-a\0junk". */
static struct raw name_with_nul(struct fx *f, char *buf, u_int cap)
{
	nlm4_lockargs a = {.exclusive = true, .alock = alock(f, &A, 0, 1)};
	char *at;
	XDR x;

	a.alock.caller_name = "host-aXjunk";
	xdrmem_create(&x, buf, cap, XDR_ENCODE);
	assert_true(rr__xdr_nlm4_lockargs(&x, &a));
	at = memmem(buf, xdr_getpos(&x), "host-aX", 7);
	assert_non_null(at);
	at[6] = '\0';
	return (struct raw){.buf = buf, .len = xdr_getpos(&x)};
}

static void arguments_that_do_not_decode_are_garbage(void **state)
{
	struct fx *f = *state;
	u_int one = 1;
	char buf[512];
	struct raw raw = name_with_nul(f, buf, sizeof(buf));
	nlm4_res r;

	memset(&r, 0, sizeof(r));
	/* too short to be a lockargs */
	assert_int_equal(clnt_call(f->nlm, NLMPROC4_LOCK, (xdrproc_t)xdr_u_int,
				   (char *)&one, (xdrproc_t)rr__xdr_nlm4_res,
				   (char *)&r, tmo),
			 RPC_CANTDECODEARGS);
	/* a name rpcgen would cut at its NUL, taking a lock for "host-a" */
	assert_int_equal(clnt_call(f->nlm, NLMPROC4_LOCK, (xdrproc_t)xdr_raw,
				   (char *)&raw, (xdrproc_t)rr__xdr_nlm4_res,
				   (char *)&r, tmo),
			 RPC_CANTDECODEARGS);
	assert_int_equal(rr_t_daemon_counter(&f->d, "nlm4", "garbage_args"), 2);
	assert_int_equal(rr_t_daemon_counter(&f->d, "nlm4", "locks"), 0);
	/* and the server still answers */
	assert_int_equal(lock(f, &A, 0, 1, true), NLM4_GRANTED);
}

static void a_client_no_rule_admits_gets_no_locks(void **state)
{
	struct fx *f = *state;
	CLIENT *other = client(f->d.nlm, NLM_PROG, NLM4_VERS, "127.0.0.2");

	assert_int_equal(lock_as(other, alock(f, &B, 0, 1), true, false, false),
			 NLM4_DENIED_NOLOCKS);
	forget(other);
	/* and it took nothing */
	assert_int_equal(lock(f, &A, 0, 0, true), NLM4_GRANTED);
}

static void locks_outlive_the_connection_that_took_them(void **state)
{
	struct fx *f = *state;

	assert_int_equal(lock(f, &A, 0, 10, true), NLM4_GRANTED);
	forget(f->nlm);
	f->nlm = client(f->d.nlm, NLM_PROG, NLM4_VERS, NULL);
	assert_int_equal(lock(f, &B, 5, 1, false), NLM4_DENIED);
	assert_int_equal(unlock(f, &A, 0, 10), NLM4_GRANTED);
	assert_int_equal(lock(f, &B, 5, 1, false), NLM4_GRANTED);
}

static void a_host_past_its_bound_gets_no_more_locks(void **state)
{
	struct fx *f = *state;

	assert_int_equal(lock(f, &A, 0, 1, true), NLM4_GRANTED);
	assert_int_equal(lock(f, &A2, 10, 1, true), NLM4_GRANTED);
	assert_int_equal(lock(f, &A, 20, 1, true), NLM4_GRANTED);
	/* 3 held + 2 a lock may add > 4, whichever owner of the host */
	assert_int_equal(lock(f, &A2, 30, 1, true), NLM4_DENIED_NOLOCKS);
	assert_int_equal(rr_t_daemon_counter(&f->d, "nlm4", "refused_cap"), 1);
	assert_int_equal(rr_t_daemon_counter(&f->d, "nlm4", "locks"), 3);
	/* another host has its own bound */
	assert_int_equal(lock(f, &B, 500, 1, true), NLM4_GRANTED);
	/* unlocking makes room again */
	assert_int_equal(unlock(f, &A, 0, 1), NLM4_GRANTED);
	assert_int_equal(lock(f, &A2, 30, 1, true), NLM4_GRANTED);
	/* and splitting a range counts: 2 ranges held, a split makes 4 */
	free_all(f, "host-a");
	assert_int_equal(lock(f, &A, 0, 100, true), NLM4_GRANTED);
	assert_int_equal(lock(f, &A, 40, 10, false), NLM4_GRANTED);
	assert_int_equal(rr_t_daemon_counter(&f->d, "nlm4", "locks"), 4);
	assert_int_equal(lock(f, &A, 200, 1, true), NLM4_DENIED_NOLOCKS);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			exclusive_and_shared_ranges_conflict_as_posix_says,
			start_no_grace, stop),
		cmocka_unit_test_setup_teardown(test_names_the_holder,
						start_no_grace, stop),
		cmocka_unit_test_setup_teardown(
			free_all_releases_one_hosts_locks, start_no_grace,
			stop),
		cmocka_unit_test_setup_teardown(
			grace_period_grants_only_reclaims, start_in_grace,
			stop),
		cmocka_unit_test_setup_teardown(reclaim_after_grace_is_refused,
						start_no_grace, stop),
		cmocka_unit_test_setup_teardown(bad_handles_are_stale,
						start_no_grace, stop),
		cmocka_unit_test_setup_teardown(
			arguments_that_do_not_decode_are_garbage,
			start_no_grace, stop),
		cmocka_unit_test_setup_teardown(
			a_client_no_rule_admits_gets_no_locks, start_no_grace,
			stop),
		cmocka_unit_test_setup_teardown(
			locks_outlive_the_connection_that_took_them,
			start_no_grace, stop),
		cmocka_unit_test_setup_teardown(
			a_host_past_its_bound_gets_no_more_locks, start_small,
			stop),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s NFSRDMAD\n", argv[0]);
		return 2;
	}
	daemon_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
