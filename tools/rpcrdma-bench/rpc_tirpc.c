// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The libtirpc baseline of "rpcrdma-bench rpc": the same program over ONC
 * RPC on TCP, with the same rpcgen XDR routines, server in a forked child
 * on --addr (127.0.0.1 by default) and client here, as on our side.
 *
 * No rpcbind: the server registers with protocol 0 (no portmapper) and
 * tells its port through the pipe, and the client connects to it directly.
 * A libtirpc CLIENT has one call outstanding at a time, so depth N means N
 * threads calling back to back, each with its own CLIENT and connection
 * by default; with --tirpc-conns K < N they share K (libtirpc serialises
 * the calls on each), the way threads of one program sharing a connection
 * would call.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc_bench.h"

#define TICK_US 50000
/*
 * xdrproc_t is variadic and xdr_void takes nothing: going through
 * void (*)(void) is how to say the cast is meant.
 */
#define XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

/* ------------------------------------------------------------ the server */

/* svc_run's dispatch takes no argument: the child's state is static. */
static struct {
	uint32_t size;
	char *pattern; /* READ data */
	char *args;    /* decoded ECHO/WRITE data, up to BENCH_MAXDATA */
} srv;

/* svc_run never returns, and has nothing to clean up. */
static void srv_on_sigterm(int sig)
{
	(void)sig;
	_exit(0);
}

static void srv_echo(SVCXPRT *xprt)
{
	bench_data d = {.bench_data_val = srv.args};

	if (!svc_getargs(xprt, XDRPROC(xdr_bench_data), (caddr_t)&d)) {
		svcerr_decode(xprt);
		return;
	}
	svc_sendreply(xprt, XDRPROC(xdr_bench_data), (caddr_t)&d);
}

static void srv_read(SVCXPRT *xprt)
{
	bench_data d = {.bench_data_val = srv.pattern};
	u_int n;

	if (!svc_getargs(xprt, XDRPROC(xdr_u_int), (caddr_t)&n) ||
	    n > srv.size) {
		svcerr_decode(xprt);
		return;
	}
	d.bench_data_len = n;
	svc_sendreply(xprt, XDRPROC(xdr_bench_data), (caddr_t)&d);
}

/* Checks the data as our server does, so both do the same work. */
static void srv_write(SVCXPRT *xprt)
{
	bench_data d = {.bench_data_val = srv.args};
	u_int n;

	if (!svc_getargs(xprt, XDRPROC(xdr_bench_data), (caddr_t)&d) ||
	    !rpc_pattern_check(d.bench_data_val, d.bench_data_len)) {
		svcerr_decode(xprt);
		return;
	}
	n = d.bench_data_len;
	svc_sendreply(xprt, XDRPROC(xdr_u_int), (caddr_t)&n);
}

static void srv_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	switch (rq->rq_proc) {
	case BENCHPROC_NULL:
		svc_sendreply(xprt, XDRPROC(xdr_void), NULL);
		break;
	case BENCHPROC_ECHO:
		srv_echo(xprt);
		break;
	case BENCHPROC_READ:
		srv_read(xprt);
		break;
	case BENCHPROC_WRITE:
		srv_write(xprt);
		break;
	default:
		svcerr_noproc(xprt);
	}
}

/* Bound and listening already: svc_tli_create listens only on its own. */
static int srv_listen(const struct bench_opts *b, int *fd, uint16_t *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int one = 1;

	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return -errno;
	bench_sockaddr(b, 0, &sin);
	setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(*fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(*fd, SOMAXCONN) ||
	    getsockname(*fd, (struct sockaddr *)&sin, &len))
		return -errno;
	*port = ntohs(sin.sin_port);
	return 0;
}

static int srv_fail(const char *what, int err)
{
	fprintf(stderr, "tirpc server: %s: %s\n", what, strerror(-err));
	return err;
}

static int srv_start(const struct bench_opts *b, uint16_t *port)
{
	struct sigaction sa = {.sa_handler = srv_on_sigterm};
	SVCXPRT *xprt;
	int fd, err;

	err = srv_listen(b, &fd, port);
	if (err)
		return srv_fail("listen", err);
	xprt = svctcp_create(fd, 0, 0);
	if (!xprt)
		return srv_fail("svctcp_create", -EIO);
	/* Protocol 0: no portmapper registration. */
	if (!svc_register(xprt, BENCHPROG, BENCHVERS, srv_dispatch, 0))
		return srv_fail("svc_register", -EIO);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL))
		return srv_fail("sigaction", -errno);
	return 0;
}

static int tirpc_peer(const struct bench_opts *b, int notify_fd)
{
	uint16_t port = 0;
	int err;

	srv.size = b->size;
	srv.pattern = malloc(srv.size + 1);
	/* Untouched beyond what a call uses: virtual memory only. */
	srv.args = malloc(BENCH_MAXDATA);
	if (!srv.pattern || !srv.args)
		return srv_fail("malloc", -ENOMEM);
	rpc_pattern_fill(srv.pattern, srv.size);
	memset(srv.args, 0, srv.size);
	err = srv_start(b, &port);
	if (!err)
		err = bench_peer_notify_port(notify_fd, port);
	if (err)
		return err;
	svc_run();
	return srv_fail("svc_run returned", -EIO);
}

/* ------------------------------------------------------------ the client */

struct tirpc_run;

struct worker {
	struct tirpc_run *run;
	pthread_t tid;
	int fd;
	CLIENT *cl;  /* its own, or NULL */
	CLIENT *use; /* the one it calls through: cl or a shared one */
	char *res;   /* decoded ECHO/READ data, up to BENCH_MAXDATA */
	struct bench_hist hist;
	_Atomic uint64_t ops;
	uint64_t last_ns;
	int err;
};

struct tirpc_run {
	const struct rpc_opts *o;
	char *src; /* ECHO/WRITE argument data, shared read-only */
	struct worker *w;
	uint32_t nthreads;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool go;
	atomic_bool failed; /* one worker failed: all stop */
	uint64_t start_ns, end_ns;
};

static int worker_connect(struct worker *w, uint16_t port)
{
	struct sockaddr_in sin;
	int one = 1;

	w->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (w->fd < 0)
		return -errno;
	/* As the server's side does: a record must not wait for an ACK. */
	bench_sockaddr(&w->run->o->b, port, &sin);
	if (setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    connect(w->fd, (struct sockaddr *)&sin, sizeof(sin)))
		return -errno;
	/* A non-zero port keeps clnttcp_create away from the portmapper. */
	w->cl = clnttcp_create(&sin, BENCHPROG, BENCHVERS, &w->fd, 0, 0);
	if (!w->cl) {
		fprintf(stderr, "%s\n",
			clnt_spcreateerror("tirpc: clnttcp_create"));
		return -ECONNREFUSED;
	}
	return 0;
}

/* Which XDR routines and values a call uses. */
struct call_xdr {
	xdrproc_t xa, xr;
	void *a, *r;
	bench_data ad, rd;
	u_int n, out;
};

static void call_setup(struct worker *w, struct call_xdr *x)
{
	uint32_t size = w->run->o->b.size;

	memset(x, 0, sizeof(*x));
	x->xa = x->xr = XDRPROC(xdr_void);
	x->ad.bench_data_len = size;
	x->ad.bench_data_val = w->run->src;
	x->rd.bench_data_val = w->res;
	x->n = size;
	switch (w->run->o->proc) {
	case BENCHPROC_ECHO:
		x->xa = x->xr = XDRPROC(xdr_bench_data);
		x->a = &x->ad;
		x->r = &x->rd;
		break;
	case BENCHPROC_READ:
		x->xa = XDRPROC(xdr_u_int);
		x->a = &x->n;
		x->xr = XDRPROC(xdr_bench_data);
		x->r = &x->rd;
		rpc_pattern_spoil(w->res, size);
		break;
	case BENCHPROC_WRITE:
		x->xa = XDRPROC(xdr_bench_data);
		x->a = &x->ad;
		x->xr = XDRPROC(xdr_u_int);
		x->r = &x->out;
		break;
	}
}

static const char *call_check(struct worker *w, const struct call_xdr *x)
{
	uint32_t size = w->run->o->b.size;

	switch (w->run->o->proc) {
	case BENCHPROC_ECHO:
	case BENCHPROC_READ:
		if (x->rd.bench_data_len != size ||
		    !rpc_pattern_check(x->rd.bench_data_val, size))
			return "wrong data";
		break;
	case BENCHPROC_WRITE:
		if (x->out != size)
			return "wrong length written";
		break;
	}
	return NULL;
}

static int worker_call(struct worker *w)
{
	struct timeval tv = {.tv_sec = BENCH_WAIT_MS / 1000};
	struct call_xdr x;
	enum clnt_stat st;
	const char *why;
	uint64_t t0, t1;

	t0 = bench_now_ns();
	call_setup(w, &x);
	st = clnt_call(w->use, w->run->o->proc, x.xa, x.a, x.xr, x.r, tv);
	if (st != RPC_SUCCESS) {
		fprintf(stderr, "%s\n",
			clnt_sperror(w->use, "tirpc client: clnt_call"));
		return -EIO;
	}
	why = call_check(w, &x);
	if (why) {
		fprintf(stderr, "tirpc client: %s call: %s\n",
			rpc_proc_name(w->run->o->proc), why);
		return -EPROTO;
	}
	t1 = bench_now_ns();
	bench_hist_record(&w->hist, t1 - t0);
	atomic_fetch_add_explicit(&w->ops, 1, memory_order_relaxed);
	w->last_ns = t1;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct tirpc_run *run = w->run;

	pthread_mutex_lock(&run->lock);
	while (!run->go)
		pthread_cond_wait(&run->cond, &run->lock);
	pthread_mutex_unlock(&run->lock);
	w->last_ns = run->start_ns;
	while (!atomic_load_explicit(&run->failed, memory_order_relaxed) &&
	       bench_now_ns() < run->end_ns) {
		w->err = worker_call(w);
		if (w->err)
			atomic_store(&run->failed, true);
	}
	return NULL;
}

/* ----------------------------------------------------------- the phase */

static int run_alloc(struct tirpc_run *run, const struct rpc_opts *o)
{
	uint32_t i, size = o->b.size;
	bool res = o->proc == BENCHPROC_ECHO || o->proc == BENCHPROC_READ;

	memset(run, 0, sizeof(*run));
	run->o = o;
	pthread_mutex_init(&run->lock, NULL);
	pthread_cond_init(&run->cond, NULL);
	run->src = malloc(size + 1);
	run->w = calloc(o->b.depth, sizeof(*run->w));
	if (!run->src || !run->w)
		return -ENOMEM;
	rpc_pattern_fill(run->src, size);
	for (i = 0; i < o->b.depth; i++) {
		struct worker *w = &run->w[i];

		w->run = run;
		w->fd = -1;
		bench_hist_reset(&w->hist);
		/* xdr_bytes may fill up to BENCH_MAXDATA: virtual only. */
		w->res = malloc(res ? BENCH_MAXDATA : 1);
		if (!w->res)
			return -ENOMEM;
		if (res)
			memset(w->res, 0, size);
	}
	return 0;
}

static void run_free(struct tirpc_run *run)
{
	uint32_t i;

	for (i = 0; run->w && i < run->o->b.depth; i++) {
		struct worker *w = &run->w[i];

		if (w->cl)
			clnt_destroy(w->cl);
		if (w->fd >= 0)
			close(w->fd); /* ours: clnt_destroy leaves it open */
		free(w->res);
	}
	free(run->w);
	free(run->src);
	pthread_mutex_destroy(&run->lock);
	pthread_cond_destroy(&run->cond);
}

static void start_all(struct tirpc_run *run)
{
	pthread_mutex_lock(&run->lock);
	run->start_ns = bench_now_ns();
	run->end_ns = run->start_ns + (uint64_t)(run->o->b.seconds * 1e9);
	run->go = true;
	pthread_cond_broadcast(&run->cond);
	pthread_mutex_unlock(&run->lock);
}

static uint64_t ops_now(struct tirpc_run *run)
{
	uint64_t ops = 0;
	uint32_t i;

	for (i = 0; i < run->nthreads; i++)
		ops += atomic_load_explicit(&run->w[i].ops,
					    memory_order_relaxed);
	return ops;
}

static void watch(struct tirpc_run *run)
{
	struct bench_progress prog;
	uint32_t payload = rpc_payload(run->o);
	uint64_t now, ops;

	bench_progress_init(&prog, "tirpc", run->o->b.seconds, run->start_ns);
	while ((now = bench_now_ns()) < run->end_ns &&
	       !atomic_load(&run->failed)) {
		uint64_t left_us = (run->end_ns - now) / 1000;

		usleep(left_us < TICK_US ? (useconds_t)left_us : TICK_US);
		ops = ops_now(run);
		bench_progress_tick(&prog, bench_now_ns(), ops, ops * payload);
	}
	bench_progress_done(&prog);
}

static int collect(struct tirpc_run *run, struct rpc_result *r)
{
	uint64_t last = run->start_ns;
	uint32_t i;
	int err = 0;

	for (i = 0; i < run->nthreads; i++) {
		struct worker *w = &run->w[i];

		pthread_join(w->tid, NULL);
		bench_hist_merge(&r->r.hist, &w->hist);
		if (w->last_ns > last)
			last = w->last_ns;
		if (w->err && !err)
			err = w->err;
	}
	r->r.ops = r->r.hist.count;
	r->r.bytes = r->r.ops * rpc_payload(run->o);
	r->r.elapsed_s = (double)(last - run->start_ns) / 1e9;
	return err;
}

static int client_run(struct tirpc_run *run, uint16_t port,
		      struct rpc_result *r)
{
	uint32_t i;
	int err = 0, werr;

	for (i = 0; i < rpc_tirpc_conns(run->o) && !err; i++) {
		err = worker_connect(&run->w[i], port);
		if (err)
			fprintf(stderr, "tirpc client %u: connect: %s\n", i,
				strerror(-err));
	}
	for (i = 0; i < run->o->b.depth && !err; i++)
		run->w[i].use = run->w[i % rpc_tirpc_conns(run->o)].cl;
	for (i = 0; i < run->o->b.depth && !err; i++) {
		err = -pthread_create(&run->w[i].tid, NULL, worker_main,
				      &run->w[i]);
		if (err)
			fprintf(stderr, "tirpc: pthread_create: %s\n",
				strerror(-err));
		else
			run->nthreads++;
	}
	/* Started threads wait for go, even when they are to stop at once. */
	if (err)
		atomic_store(&run->failed, true);
	start_all(run);
	if (!err)
		watch(run);
	werr = collect(run, r);
	return err ? err : werr;
}

int rpc_tirpc_run(const struct rpc_opts *o, struct rpc_result *r)
{
	struct bench_peer peer;
	struct tirpc_run run;
	uint16_t port;
	int err, perr;

	err = run_alloc(&run, o);
	if (!err)
		err = bench_peer_spawn(&peer, tirpc_peer, &o->b);
	if (err) {
		fprintf(stderr, "tirpc: start: %s\n", strerror(-err));
		run_free(&run);
		return err;
	}
	err = bench_peer_port(&peer, &port, "tirpc");
	if (!err) {
		r->r.port = port;
		err = client_run(&run, port, r);
	}
	run_free(&run);
	kill(peer.pid, SIGTERM);
	perr = bench_peer_reap(&peer, "tirpc");
	r->r.done = !err && !perr;
	return err ? err : perr;
}
