/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad's counters through its control socket, as a user reads them
 * with `nfsrdma stat`: known calls over RPC-over-RDMA and TCP (GETATTR,
 * READ, a LOOKUP that fails, a handle that is not one) show exactly, in
 * JSON that parses, each histogram summing to its count; the text names
 * them. Garbage, overlong and stalled requests on the socket are refused
 * or timed out without holding up other readers, and the daemon lives.
 * Each live connection is listed with its own calls, and one that closes
 * leaves the list.
 *
 * argv[1] is the nfsrdmad binary, argv[2] the nfsrdma one.
 */
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "clock.h"
#include "daemon.h"
#include "io.h"
#include "mount3.h"
#include "nfs3_prot.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define TMO_MS	10000
#define RES_CAP (64u << 10)
#define OUT_CAP (256u << 10)

static const char *daemon_path, *cli_path;

struct fx {
	char top[PATH_MAX], exp[PATH_MAX], state[PATH_MAX], sock[PATH_MAX];
	struct rr_t_daemon d;
	uint8_t res[RES_CAP];
	struct rr_cred me;
	char out[OUT_CAP];
};

static void call(struct fx *f, void *clnt, bool tcp, uint32_t prog,
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

	xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
	assert_true(xa(&x, a));
	c.args_len = xdr_getpos(&x);
	assert_int_equal(
		tcp ? rr_tcp_clnt_call(clnt, &c) : rr_clnt_call(clnt, &c), 0);
	memset(r, 0, rsize);
	xdrmem_create(&x, (char *)f->res, (u_int)c.res_len, XDR_DECODE);
	assert_true(xr(&x, r));
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	char file[PATH_MAX + 8];
	FILE *fp;

	if (!f)
		return -1;
	snprintf(f->top, sizeof(f->top), "%.200s/nfsrdmad-stat.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(f->top))
		return -1;
	snprintf(f->exp, sizeof(f->exp), "%.200s/export", f->top);
	snprintf(f->state, sizeof(f->state), "%.200s/state", f->top);
	snprintf(f->sock, sizeof(f->sock), "%.200s/control", f->state);
	snprintf(file, sizeof(file), "%s/f", f->exp);
	if (mkdir(f->exp, 0755) || !(fp = fopen(file, "w")))
		return -1;
	fputs("twelve bytes", fp);
	fclose(fp);
	f->me = (struct rr_cred){.uid = getuid(), .gid = getgid()};
	*state = f;
	return rr_t_daemon_start(&f->d, daemon_path, f->exp, f->state, NULL,
				 NULL);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc = rr_t_daemon_stop(&f->d);

	if (rr_t_rm_tree(f->top) || rc)
		return -1;
	free(f);
	return 0;
}

static void mount_root(struct fx *f, nfs_fh3 *root, char *buf)
{
	struct rr_tcp_clnt *mc;
	mountres3 mr;
	char *path = f->exp;

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->d.mount, NULL, &mc),
			 0);
	call(f, mc, true, MOUNT_PROGRAM, MOUNTPROC3_MNT,
	     (xdrproc_t)rr__xdr_dirpath, &path, (xdrproc_t)rr__xdr_mountres3,
	     &mr, sizeof(mr));
	assert_int_equal(mr.fhs_status, MNT3_OK);
	root->data.data_len = mr.mountres3_u.mountinfo.fhandle.fhandle3_len;
	memcpy(buf, mr.mountres3_u.mountinfo.fhandle.fhandle3_val,
	       root->data.data_len);
	root->data.data_val = buf;
	xdr_free((xdrproc_t)rr__xdr_mountres3, (char *)&mr);
	assert_int_equal(rr_tcp_clnt_destroy(mc), 0);
}

static nfsstat3 lookup(struct fx *f, void *c, bool tcp, nfs_fh3 *dir,
		       char *name, nfs_fh3 *out, char *buf)
{
	LOOKUP3args a = {.what = {.dir = *dir, .name = name}};
	LOOKUP3res r;
	nfsstat3 st;

	call(f, c, tcp, NFS_PROGRAM, NFSPROC3_LOOKUP,
	     (xdrproc_t)rr__xdr_LOOKUP3args, &a, (xdrproc_t)rr__xdr_LOOKUP3res,
	     &r, sizeof(r));
	st = r.status;
	if (st == NFS3_OK) {
		out->data.data_len = r.LOOKUP3res_u.resok.object.data.data_len;
		memcpy(buf, r.LOOKUP3res_u.resok.object.data.data_val,
		       out->data.data_len);
		out->data.data_val = buf;
	}
	xdr_free((xdrproc_t)rr__xdr_LOOKUP3res, (char *)&r);
	return st;
}

static nfsstat3 getattr(struct fx *f, void *c, bool tcp, nfs_fh3 *fh)
{
	GETATTR3args a = {.object = *fh};
	GETATTR3res r;

	call(f, c, tcp, NFS_PROGRAM, NFSPROC3_GETATTR,
	     (xdrproc_t)rr__xdr_GETATTR3args, &a,
	     (xdrproc_t)rr__xdr_GETATTR3res, &r, sizeof(r));
	xdr_free((xdrproc_t)rr__xdr_GETATTR3res, (char *)&r);
	return r.status;
}

static void read12(struct fx *f, void *c, bool tcp, nfs_fh3 *fh)
{
	READ3args a = {.file = *fh, .count = 100};
	READ3res r;

	call(f, c, tcp, NFS_PROGRAM, NFSPROC3_READ,
	     (xdrproc_t)rr__xdr_READ3args, &a, (xdrproc_t)rr__xdr_READ3res, &r,
	     sizeof(r));
	assert_int_equal(r.status, NFS3_OK);
	assert_int_equal(r.READ3res_u.resok.data.data_len, 12);
	xdr_free((xdrproc_t)rr__xdr_READ3res, (char *)&r);
}

/* 10 GETATTR and 3 READ of f, one LOOKUP of it and one of "nope". */
static void known_calls(struct fx *f, void *c, bool tcp, nfs_fh3 *root)
{
	char fbuf[NFS3_FHSIZE];
	nfs_fh3 file = {0};

	assert_int_equal(lookup(f, c, tcp, root, "f", &file, fbuf), NFS3_OK);
	assert_int_equal(lookup(f, c, tcp, root, "nope", &file, fbuf),
			 NFS3ERR_NOENT);
	for (int i = 0; i < 10; i++)
		assert_int_equal(getattr(f, c, tcp, root), NFS3_OK);
	for (int i = 0; i < 3; i++)
		read12(f, c, tcp, &file);
}

/* Runs nfsrdma with args; its stdout in f->out; its exit status. */
static int run_cli(struct fx *f, const char *a1, const char *a2, const char *a3)
{
	int p[2], status;
	size_t len = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(cli_path, "nfsrdma", a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		ssize_t n;

		assert_true(poll(&pf, 1, TMO_MS) == 1);
		n = read(p[0], f->out + len, sizeof(f->out) - 1 - len);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	f->out[len] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- a strict JSON reader: does the whole text parse as one value? */

static const char *json_value(const char *s, int depth);

static const char *ws(const char *s)
{
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	return s;
}

static const char *json_string(const char *s)
{
	if (*s++ != '"')
		return NULL;
	for (; *s && *s != '"'; s++)
		if (*s == '\\' && !*++s)
			return NULL;
	return *s == '"' ? s + 1 : NULL;
}

static const char *json_seq(const char *s, char close, bool obj, int depth)
{
	s = ws(s + 1);
	if (*s == close)
		return s + 1;
	for (;;) {
		if (obj) {
			s = json_string(ws(s));
			if (!s || *(s = ws(s)) != ':')
				return NULL;
			s++;
		}
		s = json_value(s, depth + 1);
		if (!s)
			return NULL;
		s = ws(s);
		if (*s == close)
			return s + 1;
		if (*s++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *s, int depth)
{
	char *end;

	s = ws(s);
	if (depth > 16)
		return NULL;
	if (*s == '{')
		return json_seq(s, '}', true, depth);
	if (*s == '[')
		return json_seq(s, ']', false, depth);
	if (*s == '"')
		return json_string(s);
	strtod(s, &end);
	return end == s ? NULL : end;
}

static bool json_ok(const char *s)
{
	s = json_value(s, 0);
	return s && !*ws(s);
}

/* ---- values of the report */

/* The line of one procedure's object. */
static const char *proc_obj(const char *out, const char *prog, const char *proc)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "\"program\": \"%s\", \"procedure\": \"%s\"",
		 prog, proc);
	p = strstr(out, key);
	assert_non_null(p);
	return p;
}

static long long num_in(const char *obj, const char *key)
{
	char k[64];
	const char *p, *eol = strchr(obj, '\n');

	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(obj, k);
	assert_true(p && (!eol || p < eol));
	return strtoll(p + strlen(k), NULL, 10);
}

static long long hist_sum(const char *obj)
{
	const char *p = strstr(obj, "\"latency_us_histogram\": [");
	long long sum = 0;
	int n = 0;
	char *end;

	assert_non_null(p);
	p += strlen("\"latency_us_histogram\": [");
	while (*p != ']') {
		sum += strtoll(p, &end, 10);
		assert_true(end != p);
		p = end + (*end == ',' ? 2 : 0);
		n++;
	}
	assert_int_equal(n, 32);
	return sum;
}

static void expect_proc(const char *out, const char *prog, const char *proc,
			long long calls, long long errors)
{
	const char *o = proc_obj(out, prog, proc);

	assert_int_equal(num_in(o, "calls"), calls);
	assert_int_equal(num_in(o, "errors"), errors);
	assert_int_equal(hist_sum(o), calls);
}

static void counts_known_calls_exactly(void **state)
{
	struct fx *f = *state;
	char rootbuf[NFS3_FHSIZE], junk[NFS3_FHSIZE] = {1, 2, 3};
	nfs_fh3 root, bad = {.data = {.data_len = 8, .data_val = junk}};
	struct rr_clnt_opts ro = {.timeout_ms = TMO_MS};
	struct rr_tcp_clnt *tc;
	struct rr_clnt *rc;
	struct stat st;
	const char *o;

	assert_int_equal(stat(f->sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_uid, geteuid());

	mount_root(f, &root, rootbuf);
	assert_int_equal(rr_clnt_create("127.0.0.1", f->d.rdma, &ro, &rc), 0);
	known_calls(f, rc, false, &root);
	assert_int_equal(rr_clnt_destroy(rc), 0);
	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->d.tcp, NULL, &tc),
			 0);
	known_calls(f, tc, true, &root);
	assert_int_not_equal(getattr(f, tc, true, &bad), NFS3_OK);
	assert_int_equal(rr_tcp_clnt_destroy(tc), 0);

	assert_int_equal(run_cli(f, "stat", "--json", f->sock), 0);
	assert_true(json_ok(f->out));
	expect_proc(f->out, "nfs3", "GETATTR", 21, 1);
	expect_proc(f->out, "nfs3", "READ", 6, 0);
	expect_proc(f->out, "nfs3", "LOOKUP", 4, 2);
	expect_proc(f->out, "nfs3", "WRITE", 0, 0);
	expect_proc(f->out, "nfs3", "NULL", 0, 0);
	expect_proc(f->out, "mount3", "MNT", 1, 0);
	o = proc_obj(f->out, "nfs3", "LOOKUP");
	assert_non_null(strstr(o, "\"errors_by_status\": {\"noent\": 2}"));
	assert_int_equal(num_in(o, "rpc_errors"), 0);
	o = strstr(f->out, "\"transport\": \"nfs3 over tcp\"");
	assert_non_null(o);
	assert_int_equal(num_in(o, "calls"), 16);
	o = strstr(f->out, "\"transport\": \"nfs3+mount3 over rdma\"");
	assert_non_null(o);
	assert_int_equal(num_in(o, "calls"), 15);
	assert_non_null(
		strstr(f->out, "\"latency_us_bucket_below\": [1, 2, 4"));

	assert_int_equal(run_cli(f, "stat", f->sock, NULL), 0);
	assert_non_null(strstr(f->out, "p50<us"));
	o = strstr(f->out, "\nnfs3   GETATTR ");
	assert_non_null(o);
	assert_int_equal(strtol(o + strlen("\nnfs3   GETATTR "), NULL, 10), 21);
	assert_null(strstr(f->out, "WRITE")); /* not called: not listed */
}

/* ---- per connection */

/*
 * Where the connection objects of transport xprt start in f->out (each
 * is one line; num_in reads the keys after "transport"); how many.
 */
static int conn_objs(const char *out, const char *xprt, const char **objs,
		     int max)
{
	const char *p = strstr(out, "\"connections\": [");
	const char *end = strstr(out, "\"connections_not_shown\": ");
	char key[64];
	int n = 0;

	assert_non_null(p);
	assert_non_null(end);
	assert_int_equal(num_in(end, "connections_not_shown"), 0);
	snprintf(key, sizeof(key), "\"transport\": \"%s\"", xprt);
	for (; (p = strstr(p, key)) && p < end; p++)
		if (n < max)
			objs[n++] = p;
		else
			n++;
	return n;
}

/* Whether xprt has n connections, and with n == 1 calls answered. */
static bool conns_are(const char *out, const char *xprt, int n, long calls)
{
	const char *o[4];

	if (conn_objs(out, xprt, o, 4) != n)
		return false;
	return n != 1 || (num_in(o[0], "calls") == calls &&
			  num_in(o[0], "replies") == calls);
}

/*
 * Asks until the daemon lists n_rdma and n_tcp connections, with the
 * calls given when one: a reply reaches the client before the server
 * has counted it sent, and a close reaches the server after the client
 * returns. Fails with the last answer past the deadline.
 */
static void wait_conns(struct fx *f, int n_rdma, long rdma_calls, int n_tcp,
		       long tcp_calls)
{
	uint64_t end = rr_t_now_ms() + TMO_MS;

	for (;;) {
		assert_int_equal(run_cli(f, "stat", "--json", f->sock), 0);
		assert_true(json_ok(f->out));
		if (conns_are(f->out, "rdma", n_rdma, rdma_calls) &&
		    conns_are(f->out, "tcp", n_tcp, tcp_calls))
			return;
		if (rr_t_now_ms() > end)
			fail_msg("connections not as expected:\n%s", f->out);
		poll(NULL, 0, 20); /* a pause between tries, not a wait */
	}
}

static void expect_conn(const char *out, const char *xprt, bool credits)
{
	const char *o;

	assert_int_equal(conn_objs(out, xprt, &o, 1), 1);
	assert_non_null(strstr(o, "\"peer\": \"127.0.0.1:"));
	assert_non_null(strstr(o, "\"state\": \"up\""));
	assert_int_equal(num_in(o, "errors"), 0);
	assert_true(num_in(o, "bytes_in") > 0);
	assert_true(num_in(o, "bytes_out") > 0);
	assert_true(num_in(o, "since_unix_ms") > 1700000000000LL);
	if (credits)
		assert_true(num_in(o, "credits_granted") > 0);
	else
		assert_int_equal(num_in(o, "credits_granted"), 0);
}

/* The calls column of the text line of xprt's one connection. */
static long text_calls(const char *out, const char *xprt)
{
	char key[32], state[16];
	long age, calls;
	const char *p;

	snprintf(key, sizeof(key), "\n  %-4s 127.0.0.1:", xprt);
	p = strstr(out, key);
	assert_non_null(p);
	p = strchr(p + strlen(key), ' ');
	assert_int_equal(sscanf(p, "%15s %ld %ld", state, &age, &calls), 3);
	assert_string_equal(state, "up");
	return calls;
}

static void lists_each_connection_until_it_closes(void **state)
{
	struct fx *f = *state;
	char rootbuf[NFS3_FHSIZE];
	nfs_fh3 root;
	/* no keepalive: every call on the wire is one this test made */
	struct rr_clnt_opts ro = {.timeout_ms = TMO_MS, .keepalive_ms = -1};
	struct rr_tcp_clnt_opts to = {.keepalive_ms = -1};
	struct rr_tcp_clnt *tc;
	struct rr_clnt *rc;

	mount_root(f, &root, rootbuf);
	assert_int_equal(rr_clnt_create("127.0.0.1", f->d.rdma, &ro, &rc), 0);
	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->d.tcp, &to, &tc),
			 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(getattr(f, rc, false, &root), NFS3_OK);
	for (int i = 0; i < 5; i++)
		assert_int_equal(getattr(f, tc, true, &root), NFS3_OK);
	wait_conns(f, 1, 3, 1, 5);
	expect_conn(f->out, "rdma", true);
	expect_conn(f->out, "tcp", false);
	assert_int_equal(run_cli(f, "stat", f->sock, NULL), 0);
	assert_int_equal(text_calls(f->out, "rdma"), 3);
	assert_int_equal(text_calls(f->out, "tcp"), 5);

	assert_int_equal(rr_tcp_clnt_destroy(tc), 0);
	wait_conns(f, 1, 3, 0, 0);
	assert_int_equal(getattr(f, rc, false, &root), NFS3_OK);
	wait_conns(f, 1, 4, 0, 0);
	assert_int_equal(rr_clnt_destroy(rc), 0);
	wait_conns(f, 0, 0, 0, 0);
}

static int dial(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	strcpy(sun.sun_path, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return fd;
}

/* What the daemon says to one request, up to its close. */
static size_t ask(const char *path, const void *req, size_t len, char *buf,
		  size_t cap)
{
	int fd = dial(path);
	size_t got = 0;
	ssize_t n;

	assert_true(rr_t_write_all(fd, req, len));
	shutdown(fd, SHUT_WR);
	while (got < cap - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		assert_int_equal(poll(&p, 1, TMO_MS), 1);
		n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0) /* a reset is also a refusal */
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return got;
}

static void refuses_garbage_and_lives_on(void **state)
{
	struct fx *f = *state;
	char buf[4096], big[300];
	const char nul[] = "stats\0json\n";
	int stalled[3];

	ask(f->sock, "GET / HTTP/1.0\r\n", 16, buf, sizeof(buf));
	assert_int_equal(strncmp(buf, "error:", 6), 0);
	ask(f->sock, "\xff\xfe\x01\n", 4, buf, sizeof(buf));
	assert_int_equal(strncmp(buf, "error:", 6), 0);
	memset(big, 's', sizeof(big));
	assert_int_equal(ask(f->sock, big, sizeof(big), buf, sizeof(buf)), 0);
	assert_int_equal(ask(f->sock, nul, sizeof(nul) - 1, buf, sizeof(buf)),
			 0);
	/* clients that say nothing hold only their own connections */
	for (int i = 0; i < 3; i++)
		stalled[i] = dial(f->sock);
	ask(f->sock, "stats json\n", 11, f->out, sizeof(f->out));
	assert_true(json_ok(f->out));
	assert_int_equal(num_in(strstr(f->out, "\"control_refused\""),
				"control_refused"),
			 4);
	for (int i = 0; i < 3; i++)
		close(stalled[i]);
	assert_int_equal(kill(f->d.pid, 0), 0);
	assert_int_equal(run_cli(f, "stat", f->sock, NULL), 0);
	assert_non_null(strstr(f->out, "control: refused=4"));
	/* the CLI says so when what it reaches is no control socket */
	assert_int_not_equal(run_cli(f, "stat", f->exp, NULL), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(counts_known_calls_exactly,
						setup, teardown),
		cmocka_unit_test_setup_teardown(refuses_garbage_and_lives_on,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			lists_each_connection_until_it_closes, setup, teardown),
	};

	if (argc < 3) {
		fprintf(stderr, "usage: %s NFSRDMAD NFSRDMA\n", argv[0]);
		return 2;
	}
	daemon_path = argv[1];
	cli_path = argv[2];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
