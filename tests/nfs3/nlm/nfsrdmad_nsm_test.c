/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad's status monitor (NSM version 1): a client host's SM_NOTIFY
 * (it rebooted) releases its locks and drops its waiting locks, as
 * FREE_ALL does, and no other host's; arguments that do not decode,
 * names past the XDR's bound among them, are GARBAGE_ARGS and nothing
 * more; and after nfsrdmad restarts, the statd of each host that held
 * locks is told our new state. Here that statd is this test's (a
 * libtirpc service), found through the rpcbind of a private network
 * namespace (in-rpcbind-ns.sh), as a client host's statd would be.
 *
 * One server for the cases, restarted by the last one.
 *
 * argv[1] is the nfsrdmad binary; run inside in-rpcbind-ns.sh.
 */
#include "daemon.h"
#include "nlm_fixture.h"
#include "nlm4.h"
#include "nsm1.h"

#include <rpc/rpc.h>

#include <arpa/inet.h>
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
static CLIENT *nsm;

/* ------------------------------------------------ the test's own statd */

#define MAX_NOTES 16
struct note {
	char name[256];
	int state;
};
static pthread_mutex_t sd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sd_cv = PTHREAD_COND_INITIALIZER;
static struct note notes[MAX_NOTES];
static int nnotes;
static uint16_t sd_port;

static void sd_dispatch(struct svc_req *rq, SVCXPRT *xp)
{
	sm_stat_chge a;

	if (rq->rq_proc == SM_NULL) {
		svc_sendreply(xp, (xdrproc_t)(void (*)(void))xdr_void, NULL);
		return;
	}
	if (rq->rq_proc != SM_NOTIFY) {
		svcerr_noproc(xp);
		return;
	}
	memset(&a, 0, sizeof(a));
	if (!svc_getargs(xp, (xdrproc_t)rr__xdr_sm_stat_chge, (char *)&a)) {
		svcerr_decode(xp);
		return;
	}
	pthread_mutex_lock(&sd_mu);
	if (nnotes < MAX_NOTES) {
		snprintf(notes[nnotes].name, sizeof(notes[nnotes].name), "%s",
			 a.mon_name);
		notes[nnotes++].state = a.state;
	}
	pthread_cond_broadcast(&sd_cv);
	pthread_mutex_unlock(&sd_mu);
	svc_sendreply(xp, (xdrproc_t)(void (*)(void))xdr_void, NULL);
	svc_freeargs(xp, (xdrproc_t)rr__xdr_sm_stat_chge, (char *)&a);
}

static void *sd_run(void *arg)
{
	(void)arg;
	svc_run();
	return NULL;
}

/* Our statd on an ephemeral port, registered with rpcbind. */
static void sd_start(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	SVCXPRT *xp;
	pthread_t t;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	sd_port = ntohs(a.sin_port);
	xp = svc_vc_create(fd, 0, 0);
	assert_non_null(xp);
	assert_true(svc_register(xp, SM_PROG, SM_VERS, sd_dispatch, 0));
	assert_int_equal(pthread_create(&t, NULL, sd_run, NULL), 0);
	pthread_detach(t);
	rpcb_local(false, SM_PROG, SM_VERS, sd_port);
	assert_true(rpcb_local(true, SM_PROG, SM_VERS, sd_port));
}

/* The n-th SM_NOTIFY received (10 s at most). */
static struct note await_note(int n)
{
	struct timespec until;
	struct note got;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&sd_mu);
	while (nnotes <= n)
		if (pthread_cond_timedwait(&sd_cv, &sd_mu, &until)) {
			pthread_mutex_unlock(&sd_mu);
			fail_msg("no SM_NOTIFY came");
		}
	got = notes[n];
	pthread_mutex_unlock(&sd_mu);
	return got;
}

/* ------------------------------------------------------------ the server */

static const char *const extra[] = {"--exports",  fx.exports,	"--grace",
				    "0",	  "--nlm-port", "0",
				    "--nsm-port", "0",		NULL};

static void start(const char *const *args)
{
	struct fx *f = &fx;

	assert_int_equal(rr_t_daemon_start(&f->d, daemon_path, NULL, f->state,
					   args, NULL),
			 0);
	assert_true(f->d.nlm != 0);
	f->nlm = client(f->d.nlm, NLM_PROG, NLM4_VERS, NULL);
}

static void stop(void)
{
	forget(fx.nlm);
	if (nsm)
		forget(nsm);
	nsm = NULL;
	assert_int_equal(rr_t_daemon_stop(&fx.d), 0);
}

static int setup(void **state)
{
	struct fx *f = &fx;
	char line[PATH_MAX + 64];

	snprintf(f->top, sizeof(f->top), "/tmp/rr-nsm-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->exp, sizeof(f->exp), "%s/exp", f->top);
	snprintf(f->state, sizeof(f->state), "%s/state", f->top);
	snprintf(f->exports, sizeof(f->exports), "%s/exports", f->top);
	assert_int_equal(mkdir(f->exp, 0777), 0);
	snprintf(line, sizeof(line), "%s/f", f->exp);
	write_file(line, "locked\n");
	snprintf(line, sizeof(line), "%s 127.0.0.1(rw,no_root_squash)\n",
		 f->exp);
	write_file(f->exports, line);
	start(extra);
	assert_true(f->d.nsm != 0);
	nsm = client(f->d.nsm, SM_PROG, SM_VERS, NULL);
	find_fh(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fx.top);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static long counter(const char *prog, const char *name)
{
	return rr_t_daemon_counter(&fx.d, prog, name);
}

/* ------------------------------------------------- NLM and NSM calls */

static const struct owner A = {"host-a", 101, "owner a"};
static const struct owner B = {"host-b", 201, "owner b"};
static const struct owner C = {"host-c", 301, "owner c"};
static const struct owner D = {"host-d", 401, "owner d"};

/* TEST by o: NLM4_GRANTED, or NLM4_DENIED with the holder's svid. */
static nlm4_stats test(const struct owner *o, uint64_t off, uint64_t len,
		       int *svid)
{
	nlm4_testargs a = {.cookie = fx_cookie,
			   .exclusive = true,
			   .alock = fx_lock(&fx, o, off, len)};
	nlm4_testres r;
	nlm4_stats st;

	memset(&r, 0, sizeof(r));
	assert_int_equal(clnt_call(fx.nlm, NLMPROC4_TEST,
				   (xdrproc_t)rr__xdr_nlm4_testargs, (char *)&a,
				   (xdrproc_t)rr__xdr_nlm4_testres, (char *)&r,
				   tmo),
			 RPC_SUCCESS);
	st = r.stat.stat;
	if (st == NLM4_DENIED && svid)
		*svid = r.stat.nlm4_testrply_u.holder.svid;
	xdr_free((xdrproc_t)rr__xdr_nlm4_testres, (char *)&r);
	return st;
}

static void sm_notify(char *name, int state)
{
	sm_stat_chge a = {.mon_name = name, .state = state};

	assert_int_equal(clnt_call(nsm, SM_NOTIFY,
				   (xdrproc_t)rr__xdr_sm_stat_chge, (char *)&a,
				   (xdrproc_t)(void (*)(void))xdr_void, NULL,
				   tmo),
			 RPC_SUCCESS);
}

static int sm_state(void)
{
	sm_name a = {.mon_name = "host-a"};
	sm_stat_res r = {.res_stat = STAT_FAIL};

	assert_int_equal(clnt_call(nsm, SM_STAT, (xdrproc_t)rr__xdr_sm_name,
				   (char *)&a, (xdrproc_t)rr__xdr_sm_stat_res,
				   (char *)&r, tmo),
			 RPC_SUCCESS);
	assert_int_equal(r.res_stat, STAT_SUCC);
	return r.state;
}

/* -------------------------------------------------------------- cases */

static void the_monitor_answers_every_procedure(void **state)
{
	char priv[SM_PRIV_SIZE] = "p";
	sm_mon mon = {.mon_id = {.mon_name = "host-a",
				 .my_id = {.my_name = "localhost",
					   .my_prog = NLM_PROG,
					   .my_vers = NLM4_VERS,
					   .my_proc = 16}}};
	sm_stat_res r;
	sm_stat st;
	int s = sm_state();

	(void)state;
	memcpy(mon.priv, priv, sizeof(priv));
	assert_true(s % 2 == 1); /* odd while up */
	assert_int_equal(
		clnt_call(nsm, SM_NULL, (xdrproc_t)(void (*)(void))xdr_void,
			  NULL, (xdrproc_t)(void (*)(void))xdr_void, NULL, tmo),
		RPC_SUCCESS);
	/* we monitor for our own lock manager only */
	assert_int_equal(clnt_call(nsm, SM_MON, (xdrproc_t)rr__xdr_sm_mon,
				   (char *)&mon, (xdrproc_t)rr__xdr_sm_stat_res,
				   (char *)&r, tmo),
			 RPC_SUCCESS);
	assert_int_equal(r.res_stat, STAT_FAIL);
	assert_int_equal(r.state, s);
	assert_int_equal(counter("nsm1", "refused_mon"), 1);
	st.state = 0;
	assert_int_equal(clnt_call(nsm, SM_UNMON, (xdrproc_t)rr__xdr_sm_mon_id,
				   (char *)&mon.mon_id,
				   (xdrproc_t)rr__xdr_sm_stat, (char *)&st,
				   tmo),
			 RPC_SUCCESS);
	assert_int_equal(st.state, s);
	st.state = 0;
	assert_int_equal(
		clnt_call(nsm, SM_UNMON_ALL, (xdrproc_t)rr__xdr_sm_my_id,
			  (char *)&mon.mon_id.my_id, (xdrproc_t)rr__xdr_sm_stat,
			  (char *)&st, tmo),
		RPC_SUCCESS);
	assert_int_equal(st.state, s);
	assert_int_equal(clnt_call(nsm, SM_SIMU_CRASH,
				   (xdrproc_t)(void (*)(void))xdr_void, NULL,
				   (xdrproc_t)(void (*)(void))xdr_void, NULL,
				   tmo),
			 RPC_SUCCESS);
	assert_int_equal(sm_state(), s);
}

static void a_reboot_releases_the_hosts_locks_only(void **state)
{
	long released = counter("nsm1", "released_locks");
	int svid = 0;

	(void)state;
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &A, 20, 5, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &C, 100, 10, false), NLM4_GRANTED);
	assert_int_equal(test(&B, 0, 10, &svid), NLM4_DENIED);
	assert_int_equal(svid, A.svid);
	sm_notify("host-a", 3);
	assert_int_equal(test(&B, 0, 10, NULL), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 25, false), NLM4_GRANTED);
	/* host-c did not reboot: its lock stays */
	assert_int_equal(test(&B, 100, 10, &svid), NLM4_DENIED);
	assert_int_equal(svid, C.svid);
	assert_int_equal(counter("nsm1", "released_locks"), released + 2);
	assert_int_equal(fx_nlm_unlock(&fx, &B, 0, 25), NLM4_GRANTED);
	assert_int_equal(fx_nlm_unlock(&fx, &C, 100, 10), NLM4_GRANTED);
}

static void a_reboot_drops_the_hosts_waiting_lock(void **state)
{
	long dropped = counter("nsm1", "dropped_waiters");

	(void)state;
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &A, 0, 10, true), NLM4_BLOCKED);
	assert_int_equal(counter("nlm4", "waiting"), 1);
	sm_notify("host-a", 5);
	assert_int_equal(counter("nlm4", "waiting"), 0);
	assert_int_equal(counter("nsm1", "dropped_waiters"), dropped + 1);
	/* had A still waited, UNLOCK would have handed it the range */
	assert_int_equal(fx_nlm_unlock(&fx, &B, 0, 10), NLM4_GRANTED);
	assert_int_equal(fx_nlm_lock(&fx, &C, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(fx_nlm_unlock(&fx, &C, 0, 10), NLM4_GRANTED);
}

/* SM_NOTIFY's arguments with a name of any length, as a peer may send. */
static bool_t xdr_long_notify(XDR *x, char **name)
{
	int state = 7;

	return xdr_string(x, name, 1 << 20) && xdr_int(x, &state);
}

static bool_t xdr_junk(XDR *x, char **junk)
{
	return xdr_opaque(x, *junk, 3);
}

/* SM_NOTIFY's arguments, the name with a NUL inside. */
static bool_t xdr_nul_notify(XDR *x, void *unused)
{
	char nul[] = "host-b\0junk", *p = nul;
	u_int len = sizeof(nul) - 1;
	int state = 7;

	(void)unused;
	return xdr_bytes(x, &p, &len, len) && xdr_int(x, &state);
}

static void garbage_and_oversized_names_are_refused(void **state)
{
	long garbage = counter("nsm1", "garbage_args");
	char *big = malloc(4097), *junk = "\x01\x02\x03";

	(void)state;
	assert_non_null(big);
	memset(big, 'h', 4096);
	big[4096] = '\0';
	assert_int_equal(fx_nlm_lock(&fx, &B, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(clnt_call(nsm, SM_NOTIFY, (xdrproc_t)xdr_long_notify,
				   (char *)&big,
				   (xdrproc_t)(void (*)(void))xdr_void, NULL,
				   tmo),
			 RPC_CANTDECODEARGS);
	assert_int_equal(
		clnt_call(nsm, SM_STAT, (xdrproc_t)xdr_junk, (char *)&junk,
			  (xdrproc_t)(void (*)(void))xdr_void, NULL, tmo),
		RPC_CANTDECODEARGS);
	/* "host-b\0junk" is not host-b */
	assert_int_equal(clnt_call(nsm, SM_NOTIFY, (xdrproc_t)xdr_nul_notify,
				   NULL, (xdrproc_t)(void (*)(void))xdr_void,
				   NULL, tmo),
			 RPC_CANTDECODEARGS);
	big[SM_MAXSTRLEN] = '\0'; /* the longest name there may be */
	sm_notify(big, 9);
	assert_int_equal(counter("nsm1", "garbage_args"), garbage + 3);
	/* and B's lock is still B's */
	assert_int_equal(test(&C, 0, 10, NULL), NLM4_DENIED);
	assert_int_equal(fx_nlm_unlock(&fx, &B, 0, 10), NLM4_GRANTED);
	assert_true(sm_state() % 2 == 1);
	free(big);
}

/*
 * What a client host's rpc.statd keeps of a server it monitors, in
 * nfs-utils' format: address, callback program, version and procedure
 * (hex), 16 bytes of private data, the server's name and the client's.
 */
static void statd_record(const char *dir, const char *server,
			 const char *client)
{
	char path[PATH_MAX + 64], line[512];

	snprintf(path, sizeof(path), "%s/sm", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/sm.bak", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(line, sizeof(line), "%08x %08x %08x %08x %032x %s %s\n",
		 0x0100007fu, NLM_PROG, NLM4_VERS, 16u, 0u, server, client);
	snprintf(path, sizeof(path), "%s/sm/%s", dir, server);
	write_file(path, line);
}

/*
 * The client host reboots and nfs-utils' sm-notify, reading what statd
 * recorded, tells us so. It speaks UDP only, and finds our NSM through
 * rpcbind; it exits 0 once every host it had to tell answered.
 */
static void sm_notify_of_nfs_utils_releases_the_hosts_locks(void **state)
{
	static const struct owner E = {"host-e", 501, "owner e"};
	long notifies = counter("nsm1", "notifies");
	char dir[PATH_MAX + 8], cmd[2 * PATH_MAX + 128];
	int rc;

	(void)state;
	if (system("command -v sm-notify >/dev/null 2>&1"))
		skip(); /* nfs-common */
	assert_int_equal(fx_nlm_lock(&fx, &E, 0, 10, false), NLM4_GRANTED);
	assert_int_equal(test(&B, 0, 10, NULL), NLM4_DENIED);
	snprintf(dir, sizeof(dir), "%s/smn", fx.top);
	assert_int_equal(mkdir(dir, 0700), 0);
	statd_record(dir, "127.0.0.1", E.host);
	/* -d: in the foreground, and its log; -m 1: it gives up after 1 min */
	snprintf(cmd, sizeof(cmd),
		 "timeout 90 sm-notify -f -d -m 1 -P %s >%s/log 2>&1", dir,
		 dir);
	rc = system(cmd);
	if (rc) {
		snprintf(cmd, sizeof(cmd), "cat %s/log >&2", dir);
		(void)!system(cmd);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(counter("nsm1", "notifies"), notifies + 1);
	assert_int_equal(test(&B, 0, 10, NULL), NLM4_GRANTED);
}

static const char *path_of(const char *name)
{
	static char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", fx.state, name);
	return path;
}

static void read_text(const char *name, char *buf, size_t len)
{
	FILE *f = fopen(path_of(name), "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void a_restart_is_told_to_the_hosts_that_locked(void **state)
{
	const char *const again[] = {"--exports",  fx.exports,	 "--grace",
				     "0",	   "--nlm-port", "0",
				     "--nsm-port", "off",	 NULL};
	char text[4096], me[256] = "";
	int before = sm_state();
	struct note n;

	(void)state;
	assert_int_equal(fx_nlm_lock(&fx, &D, 0, 10, false), NLM4_GRANTED);
	read_text("nsm-hosts", text, sizeof(text));
	assert_non_null(strstr(text, "127.0.0.1 host-d\n"));
	/* host-a rebooted: it is forgotten */
	assert_null(strstr(text, "host-a"));
	stop();
	read_text("nsm-state", text, sizeof(text));
	assert_int_equal(atoi(text), before + 1); /* even while down */
	/* as a run that crashed at before + 4 leaves it: odd */
	snprintf(text, sizeof(text), "%d\n", before + 4);
	write_file(path_of("nsm-state"), text);
	/*
	 * Our statd in rpcbind now; the server comes back without an NSM
	 * listener of its own, which would take rpcbind's entry from ours.
	 */
	sd_start();
	start(again);
	n = await_note(0);
	gethostname(me, sizeof(me) - 1);
	assert_string_equal(n.name, me);
	assert_int_equal(n.state, before + 6); /* the next odd one */
	read_text("nsm-state", text, sizeof(text));
	assert_int_equal(atoi(text), before + 6);
	/* told once per host recorded: B, C and D locked from here */
	for (int i = 0; i < 200 && counter("nsm1", "notified") < 3; i++)
		;
	assert_int_equal(counter("nsm1", "notified"), 3);
	assert_int_equal(counter("nsm1", "notify_failures"), 0);
	/* and forgotten */
	read_text("nsm-hosts", text, sizeof(text));
	assert_string_equal(text, "");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_monitor_answers_every_procedure),
		cmocka_unit_test(a_reboot_releases_the_hosts_locks_only),
		cmocka_unit_test(a_reboot_drops_the_hosts_waiting_lock),
		cmocka_unit_test(garbage_and_oversized_names_are_refused),
		cmocka_unit_test(
			sm_notify_of_nfs_utils_releases_the_hosts_locks),
		cmocka_unit_test(a_restart_is_told_to_the_hosts_that_locked),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s NFSRDMAD (in in-rpcbind-ns.sh)\n",
			argv[0]);
		return 2;
	}
	daemon_path = argv[1];
	return cmocka_run_group_tests(tests, setup, teardown);
}
