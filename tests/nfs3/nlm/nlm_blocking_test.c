/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad's blocking locks: a LOCK with block that conflicts is
 * NLM4_BLOCKED and kept; when the holder lets go the lock is taken for
 * the waiter and a GRANTED callback goes to the client host's lock
 * manager, found through that host's rpcbind. Here the client host is
 * this test: its NLM callback service (libtirpc's svc) is what the
 * rpcbind of a private network namespace (in-rpcbind-ns.sh) names for
 * NLM version 4, and its NLM calls are libtirpc's client's.
 *
 * Cases: the grant and its callback; a retransmitted blocked request is
 * one waiter; waiters granted in arrival order; CANCEL; FREE_ALL; the
 * per-host bound; a callback refused, and one with nowhere to go, undo
 * the lock. One server for all; each case leaves nothing held.
 *
 * argv[1] is the nfsrdmad binary; run inside in-rpcbind-ns.sh.
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
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static const char *daemon_path;

static struct fx fx;

/* ------------------------------------------- the client's lock manager */

#define MAX_GRANTS 64
struct grant {
	int svid;
	uint64_t off, len;
	bool excl;
	char oh[32];
	char from[INET_ADDRSTRLEN]; /* the callback's source address */
};
static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_cv = PTHREAD_COND_INITIALIZER;
static struct grant grants[MAX_GRANTS];
static int ngrants;
static nlm4_stats cb_answer = NLM4_GRANTED;

static void caller_of(SVCXPRT *xp, char from[INET_ADDRSTRLEN])
{
	const struct netbuf *nb = svc_getrpccaller(xp);
	const struct sockaddr_in *sin = nb ? (const void *)nb->buf : NULL;

	if (!sin || sin->sin_family != AF_INET ||
	    !inet_ntop(AF_INET, &sin->sin_addr, from, INET_ADDRSTRLEN))
		strcpy(from, "?");
}

static void cb_dispatch(struct svc_req *rq, SVCXPRT *xp)
{
	nlm4_testargs a;
	nlm4_res r;

	if (rq->rq_proc == NLMPROC4_NULL) {
		svc_sendreply(xp, (xdrproc_t)(void (*)(void))xdr_void, NULL);
		return;
	}
	if (rq->rq_proc != NLMPROC4_GRANTED) {
		svcerr_noproc(xp);
		return;
	}
	memset(&a, 0, sizeof(a));
	if (!svc_getargs(xp, (xdrproc_t)rr__xdr_nlm4_testargs, (char *)&a)) {
		svcerr_decode(xp);
		return;
	}
	pthread_mutex_lock(&cb_mu);
	if (ngrants < MAX_GRANTS) {
		struct grant *g = &grants[ngrants++];
		u_int n = a.alock.oh.nlm4_netobj_len;

		*g = (struct grant){.svid = a.alock.svid,
				    .off = a.alock.l_offset,
				    .len = a.alock.l_len,
				    .excl = a.exclusive};
		memcpy(g->oh, a.alock.oh.nlm4_netobj_val,
		       n < sizeof(g->oh) - 1 ? n : sizeof(g->oh) - 1);
		caller_of(xp, g->from);
	}
	r = (nlm4_res){.cookie = a.cookie, .stat.stat = cb_answer};
	pthread_cond_broadcast(&cb_cv);
	pthread_mutex_unlock(&cb_mu);
	svc_sendreply(xp, (xdrproc_t)rr__xdr_nlm4_res, (char *)&r);
	svc_freeargs(xp, (xdrproc_t)rr__xdr_nlm4_testargs, (char *)&a);
}

static void *cb_run(void *arg)
{
	(void)arg;
	svc_run();
	return NULL;
}

/* Our port for NLM 4 in rpcbind, in place of nfsrdmad's own. */
static void cb_register(bool on)
{
	rpcb_local(false, NLM_PROG, NLM4_VERS, fx.cb_port);
	if (on)
		assert_true(rpcb_local(true, NLM_PROG, NLM4_VERS, fx.cb_port));
}

static void cb_start(void)
{
	/* any address: a client host at 127.0.0.2 is called back there */
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	SVCXPRT *xp;
	pthread_t t;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	fx.cb_port = ntohs(a.sin_port);
	xp = svc_vc_create(fd, 0, 0);
	assert_non_null(xp);
	/* protocol 0: no registration by libtirpc; cb_register does it */
	assert_true(svc_register(xp, NLM_PROG, NLM4_VERS, cb_dispatch, 0));
	assert_int_equal(pthread_create(&t, NULL, cb_run, NULL), 0);
	pthread_detach(t);
}

/* The next callback past `seen` (10 s at most). */
static struct grant await_grant(int seen)
{
	struct timespec until;
	struct grant g;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&cb_mu);
	while (ngrants <= seen)
		if (pthread_cond_timedwait(&cb_cv, &cb_mu, &until)) {
			pthread_mutex_unlock(&cb_mu);
			fail_msg("no GRANTED callback");
		}
	g = grants[seen];
	pthread_mutex_unlock(&cb_mu);
	return g;
}

static int grants_seen(void)
{
	int n;

	pthread_mutex_lock(&cb_mu);
	n = ngrants;
	pthread_mutex_unlock(&cb_mu);
	return n;
}

/* ------------------------------------------------------------ the server */

static void await_registration(struct fx *f)
{
	char buf[8192];

	for (int i = 0; i < 500; i++) {
		FILE *l = fopen(f->d.log, "r");
		size_t n = l ? fread(buf, 1, sizeof(buf) - 1, l) : 0;

		if (l)
			fclose(l);
		buf[n] = '\0';
		if (strstr(buf, "NLM on tcp"))
			return;
		usleep(20000); /* polling another process's log */
	}
	fail_msg("nfsrdmad did not register NLM with rpcbind");
}

static int setup(void **state)
{
	struct fx *f = &fx;
	char line[PATH_MAX + 64];
	const char *extra[] = {"--exports",  f->exports, "--grace", "0",
			       "--nlm-port", "0",	 NULL};

	snprintf(f->top, sizeof(f->top), "/tmp/rr-nlmb-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->exp, sizeof(f->exp), "%s/exp", f->top);
	snprintf(f->state, sizeof(f->state), "%s/state", f->top);
	snprintf(f->exports, sizeof(f->exports), "%s/exports", f->top);
	assert_int_equal(mkdir(f->exp, 0777), 0);
	snprintf(line, sizeof(line), "%s/f", f->exp);
	write_file(line, "locked\n");
	snprintf(line, sizeof(line),
		 "%s 127.0.0.1(rw,no_root_squash) "
		 "127.0.0.2(rw,no_root_squash)\n",
		 f->exp);
	write_file(f->exports, line);
	assert_int_equal(rr_t_daemon_start(&f->d, daemon_path, NULL, f->state,
					   extra, NULL),
			 0);
	assert_true(f->d.nlm != 0);
	find_fh(f);
	f->nlm = client(f->d.nlm, NLM_PROG, NLM4_VERS, NULL);
	await_registration(f);
	cb_start();
	cb_register(true);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[PATH_MAX + 16];

	forget(f->nlm);
	assert_int_equal(rr_t_daemon_stop(&f->d), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->top);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* ---------------------------------------------------------- NLM calls */

static const struct owner A = {"host-a", 101, "owner a"};
static const struct owner B = {"host-b", 201, "owner b"};
static const struct owner C = {"host-c", 301, "owner c"};

static nlm4_stats cancel(const struct owner *o, uint64_t off, uint64_t len)
{
	nlm4_cancargs a = {.cookie = fx_cookie,
			   .block = true,
			   .exclusive = true,
			   .alock = fx_lock(&fx, o, off, len)};

	return fx_res(&fx, NLMPROC4_CANCEL, (xdrproc_t)rr__xdr_nlm4_cancargs,
		      &a);
}

static void free_all(char *host)
{
	nlm4_notify n = {.name = host, .state = 2};

	assert_int_equal(clnt_call(fx.nlm, NLMPROC4_FREE_ALL,
				   (xdrproc_t)rr__xdr_nlm4_notify, (char *)&n,
				   (xdrproc_t)(void (*)(void))xdr_void, NULL,
				   tmo),
			 RPC_SUCCESS);
}

static long counter(const char *name)
{
	return rr_t_daemon_counter(&fx.d, "nlm4", name);
}

/* Until counter name is want (10 s at most): the callback thread's. */
static void await_counter(const char *name, long want)
{
	for (int i = 0; i < 200; i++)
		if (counter(name) == want)
			return;
	fail_msg("counter %s never %ld (%ld)", name, want, counter(name));
}

/* Until o may lock [off, off + len) (10 s at most); then it holds it. */
static void await_free(const struct owner *o, uint64_t off, uint64_t len)
{
	for (int i = 0; i < 500; i++) {
		if (fx_nlm_lock(&fx, o, off, len, false) == NLM4_GRANTED)
			return;
		usleep(20000); /* polling another process */
	}
	fail_msg("the range never came free");
}

/* -------------------------------------------------------------- cases */

static void a_blocked_lock_is_granted_and_called_back(void **state)
{
	int seen = grants_seen();
	long calls = counter("callbacks");
	struct grant g;

	(void)state;
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &B, 5, 10, true), NLM4_BLOCKED);
	/* asked again (a retransmission): still one waiter */
	assert_int_equal(fx_nlm_lock(&fx, &B, 5, 10, true), NLM4_BLOCKED);
	assert_int_equal(counter("waiting"), 1);
	/* a non-blocking request is refused as before */
	assert_int_equal(fx_nlm_lock(&fx, &C, 5, 1, false), NLM4_DENIED);
	assert_int_equal(grants_seen(), seen);
	assert_int_equal(fx_nlm_unlock(&fx, &A, 0, 10), NLM4_GRANTED);
	/* taken for B by the time UNLOCK answers */
	assert_int_equal(fx_nlm_lock(&fx, &C, 5, 1, false), NLM4_DENIED);
	g = await_grant(seen);
	assert_int_equal(g.svid, B.svid);
	assert_int_equal(g.off, 5);
	assert_int_equal(g.len, 10);
	assert_true(g.excl);
	assert_string_equal(g.oh, B.oh);
	await_counter("callbacks", calls + 1);
	assert_int_equal(counter("waiting"), 0);
	assert_int_equal(fx_nlm_unlock(&fx, &B, 5, 10), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &C, 5, 1, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_unlock(&fx, &C, 5, 1), NLM4_GRANTED);
}

static void waiters_are_granted_in_arrival_order(void **state)
{
	int seen = grants_seen();

	(void)state;
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 0, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &C, 0, 1, true), NLM4_BLOCKED);
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 1, true), NLM4_BLOCKED);
	assert_int_equal(fx_nlm_unlock(&fx, &A, 0, 0), NLM4_GRANTED);
	assert_int_equal(await_grant(seen).svid, C.svid);
	assert_int_equal(counter("waiting"), 1);
	assert_int_equal(fx_nlm_unlock(&fx, &C, 0, 1), NLM4_GRANTED);
	assert_int_equal(await_grant(seen + 1).svid, B.svid);
	assert_int_equal(fx_nlm_unlock(&fx, &B, 0, 1), NLM4_GRANTED);
}

static void cancel_removes_the_waiter(void **state)
{
	int seen = grants_seen();

	(void)state;
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 10, true), NLM4_BLOCKED);
	assert_int_equal(cancel(&B, 0, 10), NLM4_GRANTED);
	assert_int_equal(counter("waiting"), 0);
	assert_int_equal(fx_nlm_unlock(&fx, &A, 0, 10), NLM4_GRANTED);
	/* B was not granted: the range is C's to take */
	assert_int_equal(fx_nlm_lock(&fx, &C, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(grants_seen(), seen);
	assert_int_equal(fx_nlm_unlock(&fx, &C, 0, 10), NLM4_GRANTED);
}

static void free_all_drops_the_hosts_waiters(void **state)
{
	(void)state;
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 10, true), NLM4_BLOCKED);
	free_all("host-b");
	assert_int_equal(counter("waiting"), 0);
	assert_int_equal(fx_nlm_unlock(&fx, &A, 0, 10), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &C, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_unlock(&fx, &C, 0, 10), NLM4_GRANTED);
}

static void a_hosts_waiters_are_bounded(void **state)
{
	char ohs[17][16];
	long refused = counter("refused_waiting");

	(void)state;
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 0, false), NLM4_GRANTED);
	for (int i = 0; i < 17; i++) {
		struct owner o = {"host-b", 400 + i, ohs[i]};

		snprintf(ohs[i], sizeof(ohs[i]), "b%d", i);
		assert_int_equal(fx_nlm_lock(&fx, &o, (uint64_t)i, 1, true),
				 i < 16 ? NLM4_BLOCKED : NLM4_DENIED);
	}
	assert_int_equal(counter("refused_waiting"), refused + 1);
	assert_int_equal(counter("waiting"), 16);
	/* another host has a bound of its own */
	assert_int_equal(fx_nlm_lock(&fx, &C, 0, 1, true), NLM4_BLOCKED);
	free_all("host-b");
	assert_int_equal(cancel(&C, 0, 1), NLM4_GRANTED);
	assert_int_equal(counter("waiting"), 0);
	assert_int_equal(fx_nlm_unlock(&fx, &A, 0, 0), NLM4_GRANTED);
}

static void a_refused_callback_undoes_the_lock(void **state)
{
	int seen = grants_seen();
	long failures = counter("callback_failures");

	(void)state;
	pthread_mutex_lock(&cb_mu);
	cb_answer = NLM4_DENIED; /* the client no longer wants it */
	pthread_mutex_unlock(&cb_mu);
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 10, true), NLM4_BLOCKED);
	assert_int_equal(fx_nlm_unlock(&fx, &A, 0, 10), NLM4_GRANTED);
	assert_int_equal(await_grant(seen).svid, B.svid);
	await_counter("callback_failures", failures + 1);
	await_free(&C, 0, 10);
	assert_int_equal(fx_nlm_unlock(&fx, &C, 0, 10), NLM4_GRANTED);
	pthread_mutex_lock(&cb_mu);
	cb_answer = NLM4_GRANTED;
	pthread_mutex_unlock(&cb_mu);
}

static void a_callback_with_nowhere_to_go_undoes_the_lock(void **state)
{
	long failures = counter("callback_failures");

	(void)state;
	cb_register(false); /* the client host's rpcbind names no NLM */
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 10, true), NLM4_BLOCKED);
	assert_int_equal(fx_nlm_unlock(&fx, &A, 0, 10), NLM4_GRANTED);
	await_counter("callback_failures", failures + 1);
	await_free(&C, 0, 10);
	assert_int_equal(fx_nlm_unlock(&fx, &C, 0, 10), NLM4_GRANTED);
	cb_register(true);
}

/*
 * A client host at 127.0.0.2 locks at our 127.0.0.1, and reaching it from
 * here goes out from 127.0.0.2 (a route says so, as on a machine whose
 * addresses are several hosts): the callback must still come from
 * 127.0.0.1, where the lock was asked for. Linux's lockd answers a
 * GRANTED from elsewhere DENIED, and the lock would be undone.
 */
static void a_callback_comes_from_the_address_locked_at(void **state)
{
	CLIENT *main_nlm = fx.nlm;
	int seen = grants_seen();
	struct grant g;

	(void)state;
	assert_int_equal(system("ip route replace local 127.0.0.2 dev lo "
				"table local src 127.0.0.2"),
			 0);
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 10, false), NLM4_GRANTED);
	fx.nlm = client(fx.d.nlm, NLM_PROG, NLM4_VERS, "127.0.0.2");
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 10, true), NLM4_BLOCKED);
	forget(fx.nlm);
	fx.nlm = main_nlm;
	assert_int_equal(fx_nlm_unlock(&fx, &A, 0, 10), NLM4_GRANTED);
	g = await_grant(seen);
	assert_int_equal(g.svid, B.svid);
	assert_string_equal(g.from, "127.0.0.1");
	assert_int_equal(fx_nlm_unlock(&fx, &B, 0, 10), NLM4_GRANTED);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_blocked_lock_is_granted_and_called_back),
		cmocka_unit_test(waiters_are_granted_in_arrival_order),
		cmocka_unit_test(cancel_removes_the_waiter),
		cmocka_unit_test(free_all_drops_the_hosts_waiters),
		cmocka_unit_test(a_hosts_waiters_are_bounded),
		cmocka_unit_test(a_refused_callback_undoes_the_lock),
		cmocka_unit_test(a_callback_with_nowhere_to_go_undoes_the_lock),
		cmocka_unit_test(a_callback_comes_from_the_address_locked_at),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s NFSRDMAD (in in-rpcbind-ns.sh)\n",
			argv[0]);
		return 2;
	}
	daemon_path = argv[1];
	return cmocka_run_group_tests(tests, setup, teardown);
}
