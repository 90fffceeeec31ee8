/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC over TCP against a peer nobody here wrote: libtirpc.
 *
 *  - libtirpc's client (clnttcp_create with our port: there is no rpcbind
 *    on these machines, so no clnt_create lookup) calls our rr_tcp_svc
 *    serving the shared test program (tprog.h, versions 1 and 3) in a
 *    child (tserver.h), with libtirpc's own XDR (xdr_bytes, AUTH_UNIX);
 *  - our rr_tcp_clnt calls a libtirpc server (svctcp_create + svc_register
 *    with protocol 0, i.e. no portmapper, + svc_run) in a forked child.
 *    libtirpc splits large records into fragments of its send size, so
 *    our reassembly meets a real fragmenting peer here.
 *
 * The libtirpc server serves, with the shared program's numbers (prog
 * TPROG vers 1, and vers 3 with NULL only, so PROG_MISMATCH names 1..3):
 *   0 NULL
 *   1 ECHO    opaque<> in, the same opaque<> out
 *   2 READ    u_int n in; opaque<> of n pattern bytes out (our handler
 *             returns it as the DDP-eligible item: inline over TCP it is
 *             exactly xdr_bytes on the wire)
 *   3 WRITE   opaque<> in; u_int length, u_int checksum out
 *   5 WHOAMI  uid, gid, ngids, gids[] of the AUTH_SYS credential
 */
#include "clock.h"
#include <rpcrdma/rpc_tcp.h>

#include "tcp_common.h"
#include "tserver.h"

#include <pthread.h>
#include <rpc/rpc.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define MAX_DATA     (1u << 20)
#define CHILD_TMO_MS 10000
#define CALL_TMO_MS  20000
#define NO_CRED	     0xffffffffu

enum { P_NULL = 0, P_ECHO = 1, P_READ = 2, P_WRITE = 3, P_WHOAMI = 5 };

/* xdrproc_t is variadic; going through void (*)(void) says it is meant. */
#define XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

static uint8_t *pattern; /* MAX_DATA bytes of t_pat */

struct blob {
	char *val;
	u_int len;
	u_int cap; /* decode: the buffer behind val */
};

static bool_t xdr_blob(XDR *x, struct blob *b)
{
	return xdr_bytes(x, &b->val, &b->len,
			 x->x_op == XDR_DECODE ? b->cap : MAX_DATA);
}

struct who {
	u_int uid, gid, ngids, gids[16];
};

static bool_t xdr_who(XDR *x, struct who *w)
{
	if (!xdr_u_int(x, &w->uid) || !xdr_u_int(x, &w->gid) ||
	    !xdr_u_int(x, &w->ngids))
		return FALSE;
	if (w->ngids == NO_CRED)
		return TRUE;
	if (w->ngids > 16)
		return FALSE;
	for (u_int i = 0; i < w->ngids; i++)
		if (!xdr_u_int(x, &w->gids[i]))
			return FALSE;
	return TRUE;
}

struct sum {
	u_int len, fnv;
};

static bool_t xdr_sum(XDR *x, struct sum *s)
{
	return xdr_u_int(x, &s->len) && xdr_u_int(x, &s->fnv);
}

/* ================================================ children and pipes */

struct child {
	pid_t pid;
	int fd;
	uint16_t port;
};

typedef void (*child_fn)(int out_fd, uint32_t arg);

static void child_prepare(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3);
}

static int child_start(struct child *ch, child_fn fn, uint32_t arg)
{
	pid_t parent = getpid();
	int p[2];

	memset(ch, 0, sizeof(*ch));
	if (pipe(p))
		return -errno;
	ch->pid = fork();
	if (ch->pid < 0)
		return -errno;
	if (ch->pid == 0) {
		close(p[0]);
		child_prepare(parent);
		fn(p[1], arg);
		_exit(8);
	}
	close(p[1]);
	ch->fd = p[0];
	if (!rr_t_read_within(ch->fd, &ch->port, sizeof(ch->port),
			      CHILD_TMO_MS)) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, NULL, 0);
		close(ch->fd);
		return -EIO;
	}
	return 0;
}

/* SIGTERM; 0 when the child exited 0 within the bound. */
static int child_stop(struct child *ch)
{
	uint64_t end = rr_t_now_ms() + CHILD_TMO_MS;
	int status = 0;
	char b[64];

	kill(ch->pid, SIGTERM);
	/* EOF on the pipe: the child has exited. */
	for (;;) {
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};
		int64_t left = (int64_t)(end - rr_t_now_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			fprintf(stderr, "child did not exit: killed\n");
			kill(ch->pid, SIGKILL);
			break;
		}
		n = read(ch->fd, b, sizeof(b));
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	waitpid(ch->pid, &status, 0);
	close(ch->fd);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ===================================== our server, libtirpc's client */

/* The shared test program (tprog.h) in a child (tserver.h), with
 * version 3 beside version 1 as the libtirpc server has. */
static int our_server_start(struct rr_t_server *sv, uint32_t threads)
{
	struct rr_t_server_opts o = {
		.xprt = RR_T_TCP, .threads = threads, .vers3 = true};

	return rr_t_server_start(sv, &o);
}

static CLIENT *tirpc_client(uint16_t port, u_long vers, int *fd)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CLIENT *cl;

	/* Our socket, connected: clnt_destroy then leaves it to us. */
	*fd = raw_connect(port);
	assert_true(*fd >= 0);
	/* A non-zero port keeps libtirpc away from the portmapper. */
	cl = clnttcp_create(&sin, RR_T_PROG, vers, fd, 0, 0);
	if (!cl)
		fail_msg("%s", clnt_spcreateerror("clnttcp_create"));
	return cl;
}

static void tirpc_close(CLIENT *cl, int fd)
{
	auth_destroy(cl->cl_auth);
	cl->cl_auth = NULL;
	clnt_destroy(cl);
	close(fd); /* ours: clnt_destroy leaves it open */
}

static const struct timeval tv = {CALL_TMO_MS / 1000, 0};

static void tirpc_echo(CLIENT *cl, size_t n, uint8_t *in, uint8_t *out)
{
	struct blob a = {(char *)in, (u_int)n, 0};
	struct blob r = {(char *)out, 0, (u_int)n};
	enum clnt_stat st;

	rr_t_fill_seeded(in, n, (uint32_t)n);
	st = clnt_call(cl, P_ECHO, XDRPROC(xdr_blob), (caddr_t)&a,
		       XDRPROC(xdr_blob), (caddr_t)&r, tv);
	if (st != RPC_SUCCESS)
		fail_msg("ECHO %zu: %s", n, clnt_sperror(cl, "clnt_call"));
	assert_int_equal(r.len, n);
	assert_memory_equal(out, in, n);
}

static void tirpc_read(CLIENT *cl, u_int n, uint8_t *out)
{
	struct blob r = {(char *)out, 0, MAX_DATA};
	enum clnt_stat st;

	st = clnt_call(cl, P_READ, XDRPROC(xdr_u_int), (caddr_t)&n,
		       XDRPROC(xdr_blob), (caddr_t)&r, tv);
	if (st != RPC_SUCCESS)
		fail_msg("READ %u: %s", n, clnt_sperror(cl, "clnt_call"));
	assert_int_equal(r.len, n);
	for (u_int i = 0; i < n; i++)
		if (out[i] != rr_t_pat(i))
			fail_msg("READ %u: byte %u differs", n, i);
}

static void tirpc_write(CLIENT *cl, size_t n, uint8_t *in)
{
	struct blob a = {(char *)in, (u_int)n, 0};
	struct sum s = {0};
	enum clnt_stat st;

	rr_t_fill_seeded(in, n, (uint32_t)n + 5);
	st = clnt_call(cl, P_WRITE, XDRPROC(xdr_blob), (caddr_t)&a,
		       XDRPROC(xdr_sum), (caddr_t)&s, tv);
	if (st != RPC_SUCCESS)
		fail_msg("WRITE %zu: %s", n, clnt_sperror(cl, "clnt_call"));
	assert_int_equal(s.len, n);
	assert_int_equal(s.fnv, rr_t_fnv1a(in, n));
}

static const size_t sizes[] = {0, 1, 5, 4000, 65536, 100003, MAX_DATA};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void tirpc_client_calls_our_server(uint32_t threads)
{
	struct rr_t_server ch;
	uint8_t *in = malloc(MAX_DATA), *out = malloc(MAX_DATA);
	CLIENT *cl;
	int fd;

	assert_non_null(in);
	assert_non_null(out);
	assert_int_equal(our_server_start(&ch, threads), 0);
	cl = tirpc_client(ch.port, 1, &fd);
	assert_int_equal(clnt_call(cl, P_NULL, XDRPROC(xdr_void), NULL,
				   XDRPROC(xdr_void), NULL, tv),
			 RPC_SUCCESS);
	for (size_t k = 0; k < NSIZES; k++) {
		tirpc_echo(cl, sizes[k], in, out);
		tirpc_read(cl, (u_int)sizes[k], out);
		tirpc_write(cl, sizes[k], in);
	}
	tirpc_close(cl, fd);
	assert_int_equal(rr_t_server_stop(&ch), 0);
	free(in);
	free(out);
}

static void libtirpc_client_is_served_inline(void **state)
{
	(void)state;
	tirpc_client_calls_our_server(0);
}

static void libtirpc_client_is_served_by_workers(void **state)
{
	(void)state;
	tirpc_client_calls_our_server(4);
}

static void libtirpc_auth_unix_reaches_our_handler(void **state)
{
	gid_t gids[3] = {7, 8, 9};
	struct who w = {0};
	struct rr_t_server ch;
	CLIENT *cl;
	int fd;

	(void)state;
	assert_int_equal(our_server_start(&ch, 0), 0);
	cl = tirpc_client(ch.port, 1, &fd);
	assert_int_equal(clnt_call(cl, P_WHOAMI, XDRPROC(xdr_void), NULL,
				   XDRPROC(xdr_who), (caddr_t)&w, tv),
			 RPC_SUCCESS);
	assert_int_equal(w.uid, NO_CRED);
	auth_destroy(cl->cl_auth);
	cl->cl_auth = authunix_create("interop", 4321, 55, 3, gids);
	assert_non_null(cl->cl_auth);
	assert_int_equal(clnt_call(cl, P_WHOAMI, XDRPROC(xdr_void), NULL,
				   XDRPROC(xdr_who), (caddr_t)&w, tv),
			 RPC_SUCCESS);
	assert_int_equal(w.uid, 4321);
	assert_int_equal(w.gid, 55);
	assert_int_equal(w.ngids, 3);
	assert_int_equal(w.gids[0], 7);
	assert_int_equal(w.gids[2], 9);
	tirpc_close(cl, fd);
	assert_int_equal(rr_t_server_stop(&ch), 0);
}

/* libtirpc decodes our error replies into its own clnt_stat. */
static void libtirpc_understands_our_error_replies(void **state)
{
	struct rpc_err e;
	struct rr_t_server ch;
	CLIENT *cl;
	int fd;

	(void)state;
	assert_int_equal(our_server_start(&ch, 0), 0);
	cl = tirpc_client(ch.port, 1, &fd);
	assert_int_equal(clnt_call(cl, RR_T_NPROCS, XDRPROC(xdr_void), NULL,
				   XDRPROC(xdr_void), NULL, tv),
			 RPC_PROCUNAVAIL);
	tirpc_close(cl, fd);
	cl = tirpc_client(ch.port, 2, &fd);
	assert_int_equal(clnt_call(cl, P_NULL, XDRPROC(xdr_void), NULL,
				   XDRPROC(xdr_void), NULL, tv),
			 RPC_PROGVERSMISMATCH);
	clnt_geterr(cl, &e);
	assert_int_equal(e.re_vers.low, 1);
	assert_int_equal(e.re_vers.high, 3);
	tirpc_close(cl, fd);
	assert_int_equal(rr_t_server_stop(&ch), 0);
}

/* ===================================== libtirpc's server, our client */

static void tirpc_on_term(int sig)
{
	(void)sig;
	_exit(0); /* svc_run never returns and holds nothing to clean */
}

static char *srv_buf; /* decoded ECHO/WRITE data */

static void srv_echo(SVCXPRT *xprt)
{
	struct blob b = {srv_buf, 0, MAX_DATA};

	if (!svc_getargs(xprt, XDRPROC(xdr_blob), (caddr_t)&b)) {
		svcerr_decode(xprt);
		return;
	}
	svc_sendreply(xprt, XDRPROC(xdr_blob), (caddr_t)&b);
}

static void srv_read(SVCXPRT *xprt)
{
	u_int n = 0;
	struct blob b = {(char *)pattern, 0, 0};

	if (!svc_getargs(xprt, XDRPROC(xdr_u_int), (caddr_t)&n) ||
	    n > MAX_DATA) {
		svcerr_decode(xprt);
		return;
	}
	b.len = n;
	svc_sendreply(xprt, XDRPROC(xdr_blob), (caddr_t)&b);
}

static void srv_write(SVCXPRT *xprt)
{
	struct blob b = {srv_buf, 0, MAX_DATA};
	struct sum s;

	if (!svc_getargs(xprt, XDRPROC(xdr_blob), (caddr_t)&b)) {
		svcerr_decode(xprt);
		return;
	}
	s.len = b.len;
	s.fnv = rr_t_fnv1a((uint8_t *)srv_buf, b.len);
	svc_sendreply(xprt, XDRPROC(xdr_sum), (caddr_t)&s);
}

static void srv_whoami(struct svc_req *rq, SVCXPRT *xprt)
{
	struct who w = {NO_CRED, NO_CRED, NO_CRED, {0}};

	if (rq->rq_cred.oa_flavor == AUTH_SYS) {
		struct authunix_parms *p = (void *)rq->rq_clntcred;

		w.uid = p->aup_uid;
		w.gid = p->aup_gid;
		w.ngids = p->aup_len > 16 ? 16 : p->aup_len;
		for (u_int i = 0; i < w.ngids; i++)
			w.gids[i] = p->aup_gids[i];
	}
	svc_sendreply(xprt, XDRPROC(xdr_who), (caddr_t)&w);
}

static void srv_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	switch (rq->rq_proc) {
	case P_NULL:
		svc_sendreply(xprt, XDRPROC(xdr_void), NULL);
		break;
	case P_ECHO:
		srv_echo(xprt);
		break;
	case P_READ:
		srv_read(xprt);
		break;
	case P_WRITE:
		srv_write(xprt);
		break;
	case P_WHOAMI:
		srv_whoami(rq, xprt);
		break;
	default:
		svcerr_noproc(xprt);
	}
}

static void srv_dispatch_v3(struct svc_req *rq, SVCXPRT *xprt)
{
	if (rq->rq_proc == P_NULL)
		svc_sendreply(xprt, XDRPROC(xdr_void), NULL);
	else
		svcerr_noproc(xprt);
}

static void tirpc_server_child(int out_fd, uint32_t unused)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sigaction sa = {.sa_handler = tirpc_on_term};
	socklen_t len = sizeof(sin);
	SVCXPRT *xprt;
	uint16_t port;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)unused;
	srv_buf = malloc(MAX_DATA);
	if (fd < 0 || !srv_buf ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len))
		_exit(5);
	xprt = svctcp_create(fd, 0, 0);
	/* Protocol 0: no portmapper registration. */
	if (!xprt || !svc_register(xprt, TPROG, 1, srv_dispatch, 0) ||
	    !svc_register(xprt, TPROG, 3, srv_dispatch_v3, 0))
		_exit(6);
	sigaction(SIGTERM, &sa, NULL);
	port = ntohs(sin.sin_port);
	if (!rr_t_write_all(out_fd, &port, sizeof(port)))
		_exit(9);
	svc_run();
	_exit(7);
}

struct tfx {
	struct child ch;
	struct rr_tcp_clnt *c;
};

static int tsetup(void **state)
{
	struct tfx *f = calloc(1, sizeof(*f));
	struct rr_tcp_clnt_opts o = {.timeout_ms = CALL_TMO_MS};

	if (!f || child_start(&f->ch, tirpc_server_child, 0)) {
		free(f);
		return -1;
	}
	if (rr_tcp_clnt_create("127.0.0.1", f->ch.port, &o, &f->c)) {
		child_stop(&f->ch);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int tteardown(void **state)
{
	struct tfx *f = *state;
	struct rr_xprt_stats st;
	int rc = 0;

	rr_tcp_clnt_stats(f->c, &st);
	if (st.bad_xids || st.bad_headers || st.conn_lost) {
		fprintf(stderr, "client: bad_xids %llu bad_headers %llu\n",
			(unsigned long long)st.bad_xids,
			(unsigned long long)st.bad_headers);
		rc = -1;
	}
	rr_tcp_clnt_destroy(f->c);
	if (child_stop(&f->ch))
		rc = -1;
	free(f);
	return rc;
}

static struct rr_call mkcall(uint32_t proc, void *res, size_t cap)
{
	return (struct rr_call){.prog = TPROG,
				.vers = 1,
				.proc = proc,
				.res = res,
				.res_cap = cap};
}

static void our_client_calls_a_libtirpc_server(void **state)
{
	struct tfx *f = *state;
	size_t cap = MAX_DATA + 8;
	uint8_t *in = malloc(cap), *res = malloc(cap), arg[4];

	assert_non_null(in);
	assert_non_null(res);
	for (size_t k = 0; k < NSIZES; k++) {
		size_t n = sizes[k];
		struct rr_call call = mkcall(P_ECHO, res, cap);

		/* ECHO: our args are the opaque<> as XDR */
		rr_t_put32(arg, (uint32_t)n);
		memcpy(in, arg, 4);
		rr_t_fill_seeded(in + 4, n, (uint32_t)k);
		memset(in + 4 + n, 0, rr_t_xdr_pad(n));
		call.args = in;
		call.args_len = 4 + n + rr_t_xdr_pad(n);
		assert_int_equal(rr_tcp_clnt_call(f->c, &call), 0);
		assert_int_equal(call.res_len, call.args_len);
		assert_memory_equal(res, in, call.args_len);
		/* READ: libtirpc fragments the big replies */
		call = mkcall(P_READ, res, cap);
		call.args = arg;
		call.args_len = 4;
		assert_int_equal(rr_tcp_clnt_call(f->c, &call), 0);
		assert_int_equal(call.res_len, 4 + n + rr_t_xdr_pad(n));
		assert_int_equal(rr_t_get32(res), n);
		assert_memory_equal(res + 4, pattern, n);
		/* WRITE: the bulk item inline after its length word */
		call = mkcall(P_WRITE, res, cap);
		rr_t_fill_seeded(in, n, (uint32_t)k + 50);
		call.args = arg;
		call.args_len = 4;
		call.arg_bulk = in;
		call.arg_bulk_len = n;
		assert_int_equal(rr_tcp_clnt_call(f->c, &call), 0);
		assert_int_equal(call.res_len, 8);
		assert_int_equal(rr_t_get32(res), n);
		assert_int_equal(rr_t_get32(res + 4), rr_t_fnv1a(in, n));
	}
	free(in);
	free(res);
}

/*
 * What makes the READs above a test of our reassembly: libtirpc sends a
 * 1 MiB reply in many fragments (seen here by a raw reader).
 */
static void libtirpc_splits_big_replies_into_fragments(void **state)
{
	struct tfx *f = *state;
	int fd = raw_connect(f->ch.port);
	uint8_t msg[64], arg[4], *rep;
	uint32_t nfrags = 0;
	ssize_t n;

	assert_true(fd >= 0);
	rr_t_put32(arg, MAX_DATA);
	assert_true(raw_send_record(
		fd, msg, raw_call_msg(msg, 9, 2, TPROG, 1, P_READ, arg, 4)));
	n = raw_read_record_frags(fd, &rep, MAX_DATA + 4096, CALL_TMO_MS,
				  &nfrags);
	fprintf(stderr, "  libtirpc: %zd byte reply in %u fragments\n", n,
		nfrags);
	assert_true(n > (ssize_t)MAX_DATA);
	assert_true(nfrags > 1);
	free(rep);
	close(fd);
}

static void libtirpc_server_sees_our_auth_sys(void **state)
{
	struct tfx *f = *state;
	struct rr_cred cred = {
		.uid = 777, .gid = 66, .ngids = 2, .gids = {10, 11}};
	uint8_t res[128];
	struct rr_call call = mkcall(P_WHOAMI, res, sizeof(res));

	call.cred = &cred;
	assert_int_equal(rr_tcp_clnt_call(f->c, &call), 0);
	assert_int_equal(call.res_len, 20);
	assert_int_equal(rr_t_get32(res), 777);
	assert_int_equal(rr_t_get32(res + 4), 66);
	assert_int_equal(rr_t_get32(res + 8), 2);
	assert_int_equal(rr_t_get32(res + 12), 10);
	assert_int_equal(rr_t_get32(res + 16), 11);
}

static void libtirpc_error_replies_reach_our_caller(void **state)
{
	struct tfx *f = *state;
	uint8_t res[64];
	struct rr_call call = mkcall(4, res, sizeof(res));

	assert_int_equal(rr_tcp_clnt_call(f->c, &call), -EREMOTEIO);
	assert_int_equal(call.reply_stat, RR_MSG_ACCEPTED);
	assert_int_equal(call.accept_stat, RR_PROC_UNAVAIL);
	call = mkcall(P_NULL, res, sizeof(res));
	call.vers = 2;
	assert_int_equal(rr_tcp_clnt_call(f->c, &call), -EREMOTEIO);
	assert_int_equal(call.accept_stat, RR_PROG_MISMATCH);
	assert_int_equal(call.mismatch_low, 1);
	assert_int_equal(call.mismatch_high, 3);
	call = mkcall(P_NULL, res, sizeof(res));
	call.prog = TPROG + 1;
	assert_int_equal(rr_tcp_clnt_call(f->c, &call), -EREMOTEIO);
	assert_int_equal(call.accept_stat, RR_PROG_UNAVAIL);
	call = mkcall(P_NULL, res, sizeof(res));
	assert_int_equal(rr_tcp_clnt_call(f->c, &call), 0);
}

#define NASYNC 64

struct actx {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t done, bad;
};

struct aslot {
	struct actx *x;
	struct rr_call call;
	uint8_t args[4 + 1000], res[4 + 1000];
};

static void adone(struct rr_call *call, int rc, void *arg)
{
	struct aslot *s = arg;

	pthread_mutex_lock(&s->x->mu);
	if (rc || call->res_len != sizeof(s->args) ||
	    memcmp(s->res, s->args, sizeof(s->args)))
		s->x->bad++;
	s->x->done++;
	pthread_cond_broadcast(&s->x->cv);
	pthread_mutex_unlock(&s->x->mu);
}

/* libtirpc reads pipelined records off one connection in turn. */
static void pipelined_calls_to_a_libtirpc_server_all_complete(void **state)
{
	struct tfx *f = *state;
	struct actx x = {.mu = PTHREAD_MUTEX_INITIALIZER,
			 .cv = PTHREAD_COND_INITIALIZER};
	struct aslot *s = calloc(NASYNC, sizeof(*s));
	struct timespec ts;

	assert_non_null(s);
	for (uint32_t i = 0; i < NASYNC; i++) {
		s[i].x = &x;
		rr_t_put32(s[i].args, 1000);
		rr_t_fill_seeded(s[i].args + 4, 1000, i);
		s[i].call = mkcall(P_ECHO, s[i].res, sizeof(s[i].res));
		s[i].call.args = s[i].args;
		s[i].call.args_len = sizeof(s[i].args);
		assert_int_equal(
			rr_tcp_clnt_call_async(f->c, &s[i].call, adone, &s[i]),
			0);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	pthread_mutex_lock(&x.mu);
	while (x.done < NASYNC)
		if (pthread_cond_timedwait(&x.cv, &x.mu, &ts))
			break;
	pthread_mutex_unlock(&x.mu);
	assert_int_equal(x.done, NASYNC);
	assert_int_equal(x.bad, 0);
	free(s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(libtirpc_client_is_served_inline, CASE_S, NULL,
			     NULL),
		RR_T_LIMITED(libtirpc_client_is_served_by_workers, CASE_S, NULL,
			     NULL),
		RR_T_LIMITED(libtirpc_auth_unix_reaches_our_handler, CASE_S,
			     NULL, NULL),
		RR_T_LIMITED(libtirpc_understands_our_error_replies, CASE_S,
			     NULL, NULL),
		RR_T_LIMITED(our_client_calls_a_libtirpc_server, CASE_S, tsetup,
			     tteardown),
		RR_T_LIMITED(libtirpc_splits_big_replies_into_fragments, CASE_S,
			     tsetup, tteardown),
		RR_T_LIMITED(libtirpc_server_sees_our_auth_sys, CASE_S, tsetup,
			     tteardown),
		RR_T_LIMITED(libtirpc_error_replies_reach_our_caller, CASE_S,
			     tsetup, tteardown),
		RR_T_LIMITED(pipelined_calls_to_a_libtirpc_server_all_complete,
			     CASE_S, tsetup, tteardown),
	};

	rr_t_server_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	pattern = malloc(MAX_DATA);
	if (!pattern)
		return 1;
	for (size_t i = 0; i < MAX_DATA; i++)
		pattern[i] = rr_t_pat(i);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
