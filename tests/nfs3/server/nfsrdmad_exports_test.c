/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad with an exports file, as a process: MNT refused to a client
 * no rule admits, read-only and squashed rules, EXPORT's list with its
 * groups, handles STALE once a reload drops the client, over TCP and
 * RDMA; SIGHUP with a bad file keeps the old table, and the connections
 * stay through every reload (one client calls while tables are swapped
 * under it); SIGHUP without --exports changes nothing; libnfs's nfs-ls
 * and nfs-cat see the same rules. And connection and client-error log
 * lines within their rate limit, and start-up errors that name their
 * cause.
 *
 * argv[1] is the nfsrdmad binary.
 */
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "clock.h"
#include "io.h"
#include "mount3.h"
#include "nfs3_prot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define TMO_MS	10000
#define RES_CAP (64u << 10)

static const char *daemon_path;

struct fx {
	char top[PATH_MAX], state[PATH_MAX], exports[PATH_MAX], log[PATH_MAX];
	char dir[4][PATH_MAX]; /* rw, other client, ro, squash */
	pid_t pid;
	int out;
	uint16_t rdma, tcp, mount;
	uint8_t res[RES_CAP];
	struct rr_cred me;
};

static int read_banner(struct fx *f)
{
	char buf[4096] = "", *line, *r;
	size_t len = 0;
	uint64_t end = rr_t_now_ms() + TMO_MS;

	while (!(r = strstr(buf, "ready")) || !strchr(r, '\n')) {
		struct pollfd p = {.fd = f->out, .events = POLLIN};
		int64_t left = (int64_t)(end - rr_t_now_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		n = read(f->out, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return -EIO;
		len += (size_t)n;
		buf[len] = '\0';
	}
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *colon = strrchr(line, ':');
		unsigned port = colon ? (unsigned)atoi(colon + 1) : 0;

		if (strstr(line, "over rdma"))
			f->rdma = (uint16_t)port;
		else if (strstr(line, "nfs3 over tcp"))
			f->tcp = (uint16_t)port;
		else if (strstr(line, "mount3 over tcp"))
			f->mount = (uint16_t)port;
	}
	return f->rdma && f->tcp && f->mount ? 0 : -EPROTO;
}

/* Runs nfsrdmad with argv (after the name); stdout a pipe, stderr log. */
static pid_t spawn(struct fx *f, const char *const *argv, int *out)
{
	const char *args[32] = {"nfsrdmad"};
	int p[2], n = 1;
	pid_t pid;

	while (*argv && n < 31)
		args[n++] = *argv++;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		int log = open(f->log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		dup2(log, 2);
		close(p[0]);
		execv(daemon_path, (char *const *)args);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

static void start(struct fx *f, bool with_file)
{
	const char *file[] = {"--exports",  f->exports,	   "--state-dir",
			      f->state,	    "--rdma-port", "0",
			      "--tcp-port", "0",	   "--mount-port",
			      "0",	    "--address",   "127.0.0.1",
			      "--threads",  "2",	   NULL};
	const char *one[] = {"--export",   f->dir[0],	  "--state-dir",
			     f->state,	   "--rdma-port", "0",
			     "--tcp-port", "0",		  "--mount-port",
			     "0",	   "--address",	  "127.0.0.1",
			     NULL};

	f->pid = spawn(f, with_file ? file : one, &f->out);
	assert_int_equal(read_banner(f), 0);
}

static int stop(struct fx *f)
{
	int status = 0;
	char c;

	kill(f->pid, SIGTERM);
	while (rr_t_read_within(f->out, &c, 1, TMO_MS))
		;
	close(f->out);
	waitpid(f->pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* How often what occurs in the daemon's log so far. */
static int log_count(const struct fx *f, const char *what)
{
	static char buf[1 << 20];
	int fd = open(f->log, O_RDONLY), n = 0;
	ssize_t len = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[len > 0 ? len : 0] = '\0';
	for (char *p = buf; (p = strstr(p, what)); p++)
		n++;
	return n;
}

/* Waits (TMO_MS at most) for what to occur in the log n times. */
static void log_wait(const struct fx *f, const char *what, int n)
{
	uint64_t end = rr_t_now_ms() + TMO_MS;

	while (log_count(f, what) < n) {
		struct timespec ts = {0, 2000000};

		if (rr_t_now_ms() > end)
			fail_msg("no \"%s\" (x%d) in the log", what, n);
		nanosleep(&ts,
			  NULL); /* polling a file another process writes */
	}
}

static void write_exports(struct fx *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void write_exports(struct fx *f, const char *fmt, ...)
{
	char tmp[PATH_MAX + 8];
	va_list ap;
	FILE *o;

	/* written whole, then renamed: a reload never sees half of it */
	snprintf(tmp, sizeof(tmp), "%s.new", f->exports);
	o = fopen(tmp, "w");
	assert_non_null(o);
	va_start(ap, fmt);
	vfprintf(o, fmt, ap);
	va_end(ap);
	assert_int_equal(fclose(o), 0);
	assert_int_equal(rename(tmp, f->exports), 0);
}

static void hup_and_wait(struct fx *f, const char *what)
{
	int n = log_count(f, what);

	kill(f->pid, SIGHUP);
	log_wait(f, what, n + 1);
}

static bool_t xvoid(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

static int call(struct fx *f, void *clnt, bool tcp, uint32_t prog,
		uint32_t proc, xdrproc_t xa, void *a, xdrproc_t xr, void *r,
		size_t rsize)
{
	char args[1024];
	struct rr_call c = {.prog = prog,
			    .vers = 3,
			    .proc = proc,
			    .cred = &f->me,
			    .args = args,
			    .res = f->res,
			    .res_cap = RES_CAP};
	XDR x;
	int rc;

	xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
	if (!xa(&x, a))
		return -EINVAL;
	c.args_len = xdr_getpos(&x);
	rc = tcp ? rr_tcp_clnt_call(clnt, &c) : rr_clnt_call(clnt, &c);
	if (rc)
		return rc;
	memset(r, 0, rsize);
	xdrmem_create(&x, (char *)f->res, (u_int)c.res_len, XDR_DECODE);
	return xr(&x, r) ? 0 : -EBADMSG;
}

/* MNT of path: its status; the handle into fh/buf when MNT3_OK. */
static mountstat3 mnt(struct fx *f, const char *path, nfs_fh3 *fh, char *buf)
{
	struct rr_tcp_clnt *mc;
	mountres3 mr;
	mountstat3 st;

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->mount, NULL, &mc),
			 0);
	assert_int_equal(call(f, mc, true, MOUNT_PROGRAM, MOUNTPROC3_MNT,
			      (xdrproc_t)rr__xdr_dirpath, &path,
			      (xdrproc_t)rr__xdr_mountres3, &mr, sizeof(mr)),
			 0);
	st = mr.fhs_status;
	if (st == MNT3_OK) {
		fh->data.data_len =
			mr.mountres3_u.mountinfo.fhandle.fhandle3_len;
		memcpy(buf, mr.mountres3_u.mountinfo.fhandle.fhandle3_val,
		       fh->data.data_len);
		fh->data.data_val = buf;
	}
	xdr_free((xdrproc_t)rr__xdr_mountres3, (char *)&mr);
	assert_int_equal(rr_tcp_clnt_destroy(mc), 0);
	return st;
}

static nfsstat3 getattr(struct fx *f, void *c, bool tcp, nfs_fh3 *fh)
{
	GETATTR3args a = {.object = *fh};
	GETATTR3res r;
	nfsstat3 st;

	assert_int_equal(call(f, c, tcp, NFS_PROGRAM, NFSPROC3_GETATTR,
			      (xdrproc_t)rr__xdr_GETATTR3args, &a,
			      (xdrproc_t)rr__xdr_GETATTR3res, &r, sizeof(r)),
			 0);
	st = r.status;
	xdr_free((xdrproc_t)rr__xdr_GETATTR3res, (char *)&r);
	return st;
}

static nfsstat3 create(struct fx *f, void *c, nfs_fh3 *dir, const char *name)
{
	CREATE3args a = {.where = {.dir = *dir, .name = (char *)name},
			 .how = {.mode = UNCHECKED}};
	CREATE3res r;
	nfsstat3 st;

	assert_int_equal(call(f, c, true, NFS_PROGRAM, NFSPROC3_CREATE,
			      (xdrproc_t)rr__xdr_CREATE3args, &a,
			      (xdrproc_t)rr__xdr_CREATE3res, &r, sizeof(r)),
			 0);
	st = r.status;
	xdr_free((xdrproc_t)rr__xdr_CREATE3res, (char *)&r);
	return st;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->top, sizeof(f->top), "%.200s/nfsrdmad-ex.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(f->top))
		return -1;
	snprintf(f->state, sizeof(f->state), "%.200s/state", f->top);
	snprintf(f->exports, sizeof(f->exports), "%.200s/exports", f->top);
	snprintf(f->log, sizeof(f->log), "%.200s/log", f->top);
	for (int i = 0; i < 4; i++) {
		snprintf(f->dir[i], sizeof(f->dir[i]), "%.200s/e%d", f->top, i);
		if (mkdir(f->dir[i], 0755))
			return -1;
	}
	f->me = (struct rr_cred){.uid = getuid(), .gid = getgid()};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (rr_t_rm_tree(f->top))
		return -1;
	free(f);
	return 0;
}

/* The groups EXPORT lists for dir, as "a b c", into out. */
static void export_groups(struct fx *f, const char *dir, char *out, size_t len)
{
	struct rr_tcp_clnt *mc;
	exports ex = NULL;
	char dummy;

	out[0] = '\0';
	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->mount, NULL, &mc),
			 0);
	assert_int_equal(call(f, mc, true, MOUNT_PROGRAM, MOUNTPROC3_EXPORT,
			      (xdrproc_t)xvoid, &dummy,
			      (xdrproc_t)rr__xdr_exports, &ex, sizeof(ex)),
			 0);
	for (exports e = ex; e; e = e->ex_next) {
		if (strcmp(e->ex_dir, dir))
			continue;
		for (groups g = e->ex_groups; g; g = g->gr_next)
			snprintf(out + strlen(out), len - strlen(out), "%s%s",
				 out[0] ? " " : "", g->gr_name);
	}
	xdr_free((xdrproc_t)rr__xdr_exports, (char *)&ex);
	assert_int_equal(rr_tcp_clnt_destroy(mc), 0);
}

static void rules_apply_per_client_and_export(void **state)
{
	struct fx *f = *state;
	char b0[NFS3_FHSIZE], b2[NFS3_FHSIZE], b3[NFS3_FHSIZE], groups[256];
	nfs_fh3 h0, h2, h3, junk;
	struct rr_tcp_clnt *tc;
	struct rr_clnt *rc;
	struct rr_clnt_opts ro = {.timeout_ms = TMO_MS};

	write_exports(f,
		      "# ours, someone else's, read-only, squashed\n"
		      "%s 127.0.0.1(rw,no_root_squash) 10.0.0.0/8(ro)\n"
		      "%s 10.9.9.9(rw)\n"
		      "%s -ro 127.0.0.0/8\n"
		      "%s *(rw,all_squash,anonuid=4242,anongid=4242)\n",
		      f->dir[0], f->dir[1], f->dir[2], f->dir[3]);
	start(f, true);
	assert_int_equal(mnt(f, f->dir[0], &h0, b0), MNT3_OK);
	assert_int_equal(mnt(f, f->dir[1], &junk, b2), MNT3ERR_ACCES);
	assert_int_equal(mnt(f, f->dir[2], &h2, b2), MNT3_OK);
	assert_int_equal(mnt(f, f->dir[3], &h3, b3), MNT3_OK);
	assert_int_equal(log_count(f, "not a client of export"), 1);

	export_groups(f, f->dir[0], groups, sizeof(groups));
	assert_string_equal(groups, "127.0.0.1 10.0.0.0/8");
	export_groups(f, f->dir[1], groups, sizeof(groups));
	assert_string_equal(groups, "10.9.9.9");

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->tcp, NULL, &tc), 0);
	assert_int_equal(create(f, tc, &h0, "made"), NFS3_OK);
	assert_int_equal(create(f, tc, &h2, "made"), NFS3ERR_ROFS);
	/* squashed to 4242, who may not write our 0755 directory */
	assert_int_equal(create(f, tc, &h3, "made"), NFS3ERR_ACCES);
	/* each export's handles are its own */
	assert_true(memcmp(b0, b2, h0.data.data_len));
	/* and a rename across exports is XDEV, as Linux's nfsd says */
	{
		RENAME3args ra = {.from = {.dir = h0, .name = "made"},
				  .to = {.dir = h3, .name = "moved"}};
		RENAME3res rr;

		assert_int_equal(call(f, tc, true, NFS_PROGRAM, NFSPROC3_RENAME,
				      (xdrproc_t)rr__xdr_RENAME3args, &ra,
				      (xdrproc_t)rr__xdr_RENAME3res, &rr,
				      sizeof(rr)),
				 0);
		assert_int_equal(rr.status, NFS3ERR_XDEV);
		xdr_free((xdrproc_t)rr__xdr_RENAME3res, (char *)&rr);
	}

	/* over RDMA too; then a reload drops us from e0 */
	assert_int_equal(rr_clnt_create("127.0.0.1", f->rdma, &ro, &rc), 0);
	assert_int_equal(getattr(f, rc, false, &h0), NFS3_OK);
	write_exports(
		f,
		"%s 10.9.9.9(rw)\n%s 127.0.0.1(ro)\n%s *(rw,no_root_squash)\n",
		f->dir[0], f->dir[2], f->dir[3]);
	hup_and_wait(f, "exports read again");
	assert_int_equal(getattr(f, rc, false, &h0), NFS3ERR_STALE);
	assert_int_equal(getattr(f, tc, true, &h0), NFS3ERR_STALE);
	assert_int_equal(getattr(f, tc, true, &h2), NFS3_OK);
	assert_int_equal(create(f, tc, &h3, "made"), NFS3_OK);
	assert_int_equal(mnt(f, f->dir[0], &junk, b2), MNT3ERR_ACCES);

	/* a bad file keeps the table before it */
	write_exports(f, "%s 127.0.0.1(rw)\n%s *(rw,frobnicate)\n", f->dir[0],
		      f->dir[2]);
	hup_and_wait(f, "still serving");
	assert_int_equal(log_count(f, ":2: unknown option \"frobnicate\""), 1);
	assert_int_equal(getattr(f, tc, true, &h0), NFS3ERR_STALE);
	assert_int_equal(getattr(f, rc, false, &h2), NFS3_OK);

	/* and e0 back: its old handle works again */
	write_exports(f, "%s 127.0.0.1(rw)\n", f->dir[0]);
	hup_and_wait(f, "exports read again");
	assert_int_equal(getattr(f, rc, false, &h0), NFS3_OK);
	assert_int_equal(getattr(f, tc, true, &h2), NFS3ERR_STALE);
	assert_int_equal(rr_clnt_destroy(rc), 0);
	assert_int_equal(rr_tcp_clnt_destroy(tc), 0);
	assert_int_equal(stop(f), 0);
}

/* A client calling all along while tables are swapped under it. */
static void reloads_keep_connections_while_calls_run(void **state)
{
	struct fx *f = *state;
	char b0[NFS3_FHSIZE];
	nfs_fh3 h0;
	struct rr_tcp_clnt *tc;
	struct rr_clnt *rc;
	struct rr_clnt_opts ro = {.timeout_ms = TMO_MS};
	pid_t caller;
	int p[2], status, reloads = 0;

	write_exports(f, "%s 127.0.0.1(rw)\n", f->dir[0]);
	start(f, true);
	assert_int_equal(mnt(f, f->dir[0], &h0, b0), MNT3_OK);
	assert_int_equal(pipe(p), 0);
	caller = fork();
	if (caller == 0) {
		struct pollfd done = {.fd = p[0], .events = POLLIN};
		int bad = 0;

		close(p[1]);
		if (rr_clnt_create("127.0.0.1", f->rdma, &ro, &rc) ||
		    rr_tcp_clnt_create("127.0.0.1", f->tcp, NULL, &tc))
			_exit(3);
		/* until the parent closes the pipe: every call answered OK */
		while (poll(&done, 1, 0) == 0) {
			bad += getattr(f, rc, false, &h0) != NFS3_OK;
			bad += getattr(f, tc, true, &h0) != NFS3_OK;
		}
		_exit(bad ? 4 : 0);
	}
	close(p[0]);
	for (; reloads < 20; reloads++) {
		/* the same rights in other words, and a second export */
		if (reloads % 2)
			write_exports(f, "%s 127.0.0.0/8(rw) *(ro)\n%s *\n",
				      f->dir[0], f->dir[1]);
		else
			write_exports(f, "%s 127.0.0.1(rw)\n", f->dir[0]);
		hup_and_wait(f, "exports read again");
	}
	close(p[1]);
	assert_int_equal(waitpid(caller, &status, 0), caller);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(stop(f), 0);
}

static void sighup_without_exports_file_changes_nothing(void **state)
{
	struct fx *f = *state;
	char b0[NFS3_FHSIZE];
	nfs_fh3 h0;
	struct rr_tcp_clnt *tc;

	start(f, false);
	assert_int_equal(mnt(f, f->dir[0], &h0, b0), MNT3_OK);
	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->tcp, NULL, &tc), 0);
	hup_and_wait(f, "no exports file");
	assert_int_equal(getattr(f, tc, true, &h0), NFS3_OK);
	/* --export's defaults: read-write, uid 0 not squashed */
	assert_int_equal(create(f, tc, &h0, "made"), NFS3_OK);
	assert_int_equal(rr_tcp_clnt_destroy(tc), 0);
	assert_int_equal(stop(f), 0);
}

/*
 * One line per connection and disconnection, over TCP and RDMA, and no
 * more than the rate limit when a client opens many at once.
 */
static void connections_are_logged_within_a_rate_limit(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt *tc;
	struct rr_clnt *rc;
	struct rr_clnt_opts ro = {.timeout_ms = TMO_MS};
	char dummy;
	int lines;

	start(f, false);
	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->tcp, NULL, &tc), 0);
	assert_int_equal(call(f, tc, true, NFS_PROGRAM, NFSPROC3_NULL,
			      (xdrproc_t)xvoid, &dummy, (xdrproc_t)xvoid,
			      &dummy, 1),
			 0);
	log_wait(f, "nfs3 over tcp: 127.0.0.1:", 1);
	assert_int_equal(rr_tcp_clnt_destroy(tc), 0);
	log_wait(f, "disconnected: ", 1);
	assert_int_equal(rr_clnt_create("127.0.0.1", f->rdma, &ro, &rc), 0);
	assert_int_equal(call(f, rc, false, NFS_PROGRAM, NFSPROC3_NULL,
			      (xdrproc_t)xvoid, &dummy, (xdrproc_t)xvoid,
			      &dummy, 1),
			 0);
	log_wait(f, "nfs3+mount3 over rdma: 127.0.0.1:", 1);
	assert_int_equal(rr_clnt_destroy(rc), 0);
	log_wait(f, "nfs3+mount3 over rdma: 127.0.0.1:", 2);

	/* a burst of 40 connections and their ends: the limit holds */
	for (int i = 0; i < 40; i++) {
		assert_int_equal(
			rr_tcp_clnt_create("127.0.0.1", f->tcp, NULL, &tc), 0);
		assert_int_equal(call(f, tc, true, NFS_PROGRAM, NFSPROC3_NULL,
				      (xdrproc_t)xvoid, &dummy,
				      (xdrproc_t)xvoid, &dummy, 1),
				 0);
		assert_int_equal(rr_tcp_clnt_destroy(tc), 0);
	}
	assert_int_equal(stop(f), 0);
	lines = log_count(f, "nfs3 over tcp: 127.0.0.1:");
	/* 10 a window, the first two before it; the burst fits in one */
	if (lines < 10 || lines > 22)
		fail_msg("%d connection lines for 41 connections", lines);
}

/* A file handle whose length says more than NFSv3 allows: no decode. */
static bool_t xbad_fh(XDR *x, void *p)
{
	u_int len = NFS3_FHSIZE + 1;

	(void)p;
	return xdr_u_int(x, &len);
}

/* Lines with what: at least one burst, at most one per window begun. */
static void assert_rate_limited(const struct fx *f, const char *what,
				uint64_t elapsed_ms)
{
	int lines = log_count(f, what), most;

	most = 10 * (2 + (int)(elapsed_ms / 5000)); /* base/log.h's limit */
	if (lines < 10 || lines > most)
		fail_msg("%d lines of \"%s\" for 40 errors in %llu ms", lines,
			 what, (unsigned long long)elapsed_ms);
}

/*
 * A client's errors of each class (a handle we did not make, arguments
 * that do not decode) get their protocol answer and a log line naming
 * the client, within the rate limit when one client sends many.
 */
static void client_errors_are_logged_per_class_within_a_rate_limit(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt *tc;
	char buf[NFS3_FHSIZE], dummy;
	nfs_fh3 fh;
	uint64_t t0;

	start(f, false);
	assert_int_equal(mnt(f, f->dir[0], &fh, buf), MNT3_OK);
	buf[fh.data.data_len / 2] ^= 0x5a; /* its seal no longer holds */
	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->tcp, NULL, &tc), 0);
	t0 = rr_t_now_ms();
	for (int i = 0; i < 40; i++)
		assert_int_equal(getattr(f, tc, true, &fh), NFS3ERR_BADHANDLE);
	for (int i = 0; i < 40; i++)
		assert_int_equal(call(f, tc, true, NFS_PROGRAM,
				      NFSPROC3_GETATTR, (xdrproc_t)xbad_fh,
				      &dummy, (xdrproc_t)xvoid, &dummy, 1),
				 -EREMOTEIO);
	assert_int_equal(rr_tcp_clnt_destroy(tc), 0);
	assert_int_equal(stop(f), 0);
	assert_rate_limited(f,
			    "127.0.0.1: a handle this server did not make: "
			    "BADHANDLE",
			    rr_t_now_ms() - t0);
	assert_rate_limited(f, "127.0.0.1: arguments that do not decode",
			    rr_t_now_ms() - t0);
}

/* Runs libnfs's tool on dir's URL: its exit status; its stdout in out. */
static int libnfs(struct fx *f, const char *tool, const char *dir,
		  const char *file, char *out, size_t len)
{
	char url[PATH_MAX + 128];
	int p[2], status;
	size_t n = 0;
	pid_t pid;

	snprintf(url, sizeof(url),
		 "nfs://127.0.0.1%s%s%s?nfsport=%u&mountport=%u&version=3", dir,
		 file ? "/" : "", file ? file : "", f->tcp, f->mount);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(p[1], 1);
		dup2(null, 2);
		close(p[0]);
		execlp(tool, tool, url, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (n + 1 < len && rr_t_read_within(p[0], out + n, 1, TMO_MS))
		n++;
	out[n] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* An NFS client nobody here wrote sees the same rules. */
static void libnfs_sees_the_rules(void **state)
{
	struct fx *f = *state;
	char out[4096], path[PATH_MAX + 8];
	FILE *o;

	if (access("/usr/bin/nfs-ls", X_OK) ||
	    access("/usr/bin/nfs-cat", X_OK)) {
		printf("# skipped: no nfs-ls, nfs-cat (libnfs-utils)\n");
		skip();
	}
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/file%d", f->dir[i], i);
		o = fopen(path, "w");
		assert_non_null(o);
		fprintf(o, "contents %d\n", i);
		assert_int_equal(fclose(o), 0);
	}
	write_exports(f, "%s 127.0.0.1(ro)\n%s 10.9.9.9(rw)\n", f->dir[0],
		      f->dir[1]);
	start(f, true);
	assert_int_equal(libnfs(f, "nfs-ls", f->dir[0], NULL, out, sizeof(out)),
			 0);
	assert_non_null(strstr(out, "file0"));
	assert_int_equal(
		libnfs(f, "nfs-cat", f->dir[0], "file0", out, sizeof(out)), 0);
	assert_string_equal(out, "contents 0\n");
	assert_int_not_equal(
		libnfs(f, "nfs-ls", f->dir[1], NULL, out, sizeof(out)), 0);
	assert_null(strstr(out, "file1"));
	/* the other way round after a reload */
	write_exports(f, "%s 10.9.9.9(ro)\n%s 127.0.0.1(rw)\n", f->dir[0],
		      f->dir[1]);
	hup_and_wait(f, "exports read again");
	assert_int_not_equal(
		libnfs(f, "nfs-cat", f->dir[0], "file0", out, sizeof(out)), 0);
	assert_int_equal(
		libnfs(f, "nfs-cat", f->dir[1], "file1", out, sizeof(out)), 0);
	assert_string_equal(out, "contents 1\n");
	assert_int_equal(stop(f), 0);
}

/* Runs nfsrdmad to its exit: the status, and its stderr must hold want. */
static void fails_saying(struct fx *f, const char *const *argv, int want_rc,
			 const char *const *want)
{
	int out, status;
	pid_t pid;
	char c;

	unlink(f->log);
	pid = spawn(f, argv, &out);
	while (rr_t_read_within(out, &c, 1, TMO_MS))
		;
	close(out);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), want_rc);
	for (; *want; want++)
		if (log_count(f, *want) < 1)
			fail_msg("no \"%s\" in what it said", *want);
}

static bool has_rdma_device(void)
{
	struct stat st;

	return !stat("/sys/class/infiniband", &st) &&
	       rmdir("/sys/class/infiniband") != 0 && errno == ENOTEMPTY;
}

static void startup_errors_name_their_cause(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int busy = socket(AF_INET, SOCK_STREAM, 0);
	char port[16];

	/* a port someone else listens on */
	assert_true(busy >= 0);
	assert_int_equal(bind(busy, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(busy, 1), 0);
	assert_int_equal(getsockname(busy, (struct sockaddr *)&sin, &len), 0);
	snprintf(port, sizeof(port), "%u", ntohs(sin.sin_port));
	{
		const char *argv[] = {
			"--export",   f->dir[0],   "--state-dir",  f->state,
			"--address",  "127.0.0.1", "--rdma-port",  "0",
			"--tcp-port", port,	   "--mount-port", "0",
			NULL};
		char where[64];

		snprintf(where, sizeof(where), "127.0.0.1:%s", port);
		fails_saying(f, argv, 1,
			     (const char *[]){"nfs3 over tcp", where,
					      "--tcp-port",
					      "Address already in use", NULL});
	}
	close(busy);
	fails_saying(f,
		     (const char *[]){"--export", f->dir[0], "--rdma-port",
				      "99999", NULL},
		     2, (const char *[]){"--rdma-port", "\"99999\"", NULL});
	fails_saying(f, (const char *[]){"--export", f->dir[0], "--frob", NULL},
		     2, (const char *[]){"unknown option --frob", NULL});
	write_exports(f, "%s *(rw)\n\n%s *(rw,wat)\n", f->dir[0], f->dir[1]);
	fails_saying(f,
		     (const char *[]){"--exports", f->exports, "--state-dir",
				      f->state, NULL},
		     1, (const char *[]){":3: unknown option \"wat\"", NULL});
	write_exports(f, "%s/missing *(rw)\n", f->dir[0]);
	fails_saying(f,
		     (const char *[]){"--exports", f->exports, "--state-dir",
				      f->state, NULL},
		     1, (const char *[]){"/missing: No such file", NULL});
	if (has_rdma_device()) {
		printf("# skipped --provider verbs: this host has an RDMA "
		       "device\n");
		return;
	}
	fails_saying(f,
		     (const char *[]){"--export", f->dir[0], "--state-dir",
				      f->state, "--provider", "verbs",
				      "--address", "127.0.0.1", "--rdma-port",
				      "0", "--tcp-port", "0", "--mount-port",
				      "0", NULL},
		     1,
		     (const char *[]){"provider verbs has no usable device",
				      "127.0.0.1:0", NULL});
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			rules_apply_per_client_and_export, setup, teardown),
		cmocka_unit_test_setup_teardown(
			reloads_keep_connections_while_calls_run, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			sighup_without_exports_file_changes_nothing, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			connections_are_logged_within_a_rate_limit, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			client_errors_are_logged_per_class_within_a_rate_limit,
			setup, teardown),
		cmocka_unit_test_setup_teardown(libnfs_sees_the_rules, setup,
						teardown),
		cmocka_unit_test_setup_teardown(startup_errors_name_their_cause,
						setup, teardown),
	};

	if (argc != 2 || access(argv[1], X_OK)) {
		fprintf(stderr,
			"usage: nfsrdmad_exports_test PATH-TO-NFSRDMAD\n");
		return 77;
	}
	daemon_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
