// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Our server for "rpcrdma-bench rpc", in a forked child: the test program
 * on rr_svc. READ's data goes back as the DDP-eligible result item (its
 * length word stays in the XDR), WRITE's arrives as the DDP-eligible
 * argument item; ECHO is all XDR.
 *
 * The parent stops it with SIGTERM once its client is done but still
 * connected; the child then reports its memory with the connection up.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc_bench.h"

struct svc_state {
	const struct rpc_opts *o;
	struct rr_svc *svc;
	char *pattern; /* READ data: size bytes */
	char *echo;    /* ECHO's decoded argument: size bytes */
	size_t cap;
};

/* For the SIGTERM handler: rr_svc_stop is async-signal-safe. */
static struct rr_svc *volatile svc_to_stop;

static void on_sigterm(int sig)
{
	(void)sig;
	if (svc_to_stop)
		rr_svc_stop(svc_to_stop);
}

/* ----------------------------------------------------------- procedures */

static uint32_t set_res(struct rr_svc_req *req, size_t len, const void *bulk,
			size_t bulk_len)
{
	int err = rr_svc_set_res(req, len, bulk, bulk_len);

	if (err) {
		fprintf(stderr, "rpc server: rr_svc_set_res: %s (%d)\n",
			strerror(-err), err);
		return RR_SYSTEM_ERR;
	}
	return RR_SUCCESS;
}

/* Replies with the length word n in XDR; the bytes, if any, as bulk. */
static uint32_t set_res_u32(struct rr_svc_req *req, uint32_t n,
			    const void *bulk, size_t bulk_len)
{
	size_t cap, len;
	void *res = rr_svc_res_buf(req, &cap);

	if (rpc_xdr_enc_u32(res, cap, n, &len))
		return RR_SYSTEM_ERR;
	return set_res(req, len, bulk, bulk_len);
}

static uint32_t proc_null(struct rr_svc_req *req, void *arg)
{
	(void)arg;
	return set_res(req, 0, NULL, 0);
}

static uint32_t proc_echo(struct rr_svc_req *req, void *arg)
{
	struct svc_state *st = arg;
	size_t args_len, cap, len;
	const void *args = rr_svc_args(req, &args_len);
	void *res = rr_svc_res_buf(req, &cap);
	uint32_t n;

	if (rpc_xdr_dec_data(args, args_len, st->echo, st->cap, &n))
		return RR_GARBAGE_ARGS;
	if (rpc_xdr_enc_data(res, cap, st->echo, n, &len))
		return RR_SYSTEM_ERR;
	return set_res(req, len, NULL, 0);
}

/* Only the length word is XDR; the bytes go as the DDP-eligible item. */
static uint32_t proc_read(struct rr_svc_req *req, void *arg)
{
	struct svc_state *st = arg;
	size_t args_len;
	const void *args = rr_svc_args(req, &args_len);
	uint32_t n;

	if (rpc_xdr_dec_u32(args, args_len, &n) || n > st->cap)
		return RR_GARBAGE_ARGS;
	return set_res_u32(req, n, st->pattern, n);
}

/* The args hold the data's length word; the bytes are the bulk item. */
static uint32_t proc_write(struct rr_svc_req *req, void *arg)
{
	size_t args_len, bulk_len;
	const void *args = rr_svc_args(req, &args_len);
	const void *bulk = rr_svc_arg_bulk(req, &bulk_len);
	uint32_t n;

	(void)arg;
	if (rpc_xdr_dec_u32(args, args_len, &n) || n != bulk_len ||
	    (n && !bulk) || !rpc_pattern_check(bulk, n))
		return RR_GARBAGE_ARGS;
	return set_res_u32(req, n, NULL, 0);
}

static const rr_svc_fn svc_procs[] = {
	[BENCHPROC_NULL] = proc_null,
	[BENCHPROC_ECHO] = proc_echo,
	[BENCHPROC_READ] = proc_read,
	[BENCHPROC_WRITE] = proc_write,
};

/* -------------------------------------------------------------- the child */

static int fail(const char *call, int err)
{
	fprintf(stderr, "rpc server: %s: %s (%d)\n", call, strerror(-err), err);
	return err;
}

static int svc_buffers(struct svc_state *st)
{
	/* One byte at least: malloc(0) may return NULL. */
	st->cap = st->o->b.size;
	st->pattern = malloc(st->cap + 1);
	st->echo = malloc(st->cap + 1);
	if (!st->pattern || !st->echo)
		return fail("malloc", -ENOMEM);
	rpc_pattern_fill(st->pattern, st->cap);
	memset(st->echo, 0, st->cap);
	return 0;
}

static int svc_start(struct svc_state *st)
{
	const struct bench_opts *b = &st->o->b;
	struct rr_svc_opts so = {.provider = b->provider,
				 .threads = st->o->svc_threads};
	struct rr_svc_prog prog = {
		.prog = BENCHPROG,
		.vers = BENCHVERS,
		.nprocs = sizeof(svc_procs) / sizeof(svc_procs[0]),
		.procs = svc_procs,
		.arg = st,
	};
	struct sockaddr_in sin;
	int err;

	bench_sockaddr(b, b->port, &sin);
	/* Defaults otherwise: the memory goal is about them. */
	if (b->size > (1u << 20))
		so.max_bulk = b->size;
	err = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &so,
			    &st->svc);
	if (err)
		return fail("rr_svc_create", err);
	err = rr_svc_register(st->svc, &prog);
	if (err)
		return fail("rr_svc_register", err);
	/*
	 * READ answers from the pattern, data the server holds anyway, as
	 * an application with its own cache would: registered, it is written
	 * to the client from there. libtirpc has no such path; it copies.
	 */
	err = rr_svc_mem_reg(st->svc, st->pattern, st->cap + 1);
	return err ? fail("rr_svc_mem_reg", err) : 0;
}

static int svc_on_sigterm(struct rr_svc *svc)
{
	struct sigaction sa = {.sa_handler = on_sigterm};

	svc_to_stop = svc;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL))
		return fail("sigaction", -errno);
	return 0;
}

static int svc_measure(struct svc_state *st, struct rr_xprt_stats *stats,
		       uint64_t *rss)
{
	int err;

	err = rr_svc_stats(st->svc, stats);
	if (err)
		return fail("rr_svc_stats", err);
	err = rpc_rss_bytes(rss);
	return err ? fail("VmRSS", err) : 0;
}

/* Measured while the client is still connected: that is the cost asked. */
static int svc_report(struct svc_state *st, int notify_fd,
		      struct rpc_svc_report *rep)
{
	ssize_t n;
	int err;

	err = svc_measure(st, &rep->stats, &rep->rss);
	if (err)
		return err;
	n = write(notify_fd, rep, sizeof(*rep));
	return n == (ssize_t)sizeof(*rep) ? 0 : fail("report", -EPIPE);
}

static int svc_serve(struct svc_state *st, int notify_fd)
{
	struct rpc_svc_report rep = {0};
	struct rr_xprt_stats stats = {0};
	uint16_t port = 0;
	int err;

	err = svc_start(st);
	if (!err)
		err = svc_on_sigterm(st->svc);
	if (!err && (err = rr_svc_port(st->svc, &port)))
		fail("rr_svc_port", err);
	if (!err)
		err = svc_measure(st, &stats, &rep.rss_idle);
	rep.registered_idle = stats.registered_bytes;
	if (!err)
		err = bench_peer_notify_port(notify_fd, port);
	if (err)
		return err;
	err = rr_svc_run(st->svc);
	if (err)
		return fail("rr_svc_run", err);
	return svc_report(st, notify_fd, &rep);
}

int rpc_svc_peer(const struct bench_opts *b, int notify_fd)
{
	struct svc_state st = {.o = rpc_opts_of(b)};
	int err;

	err = svc_buffers(&st);
	if (!err)
		err = svc_serve(&st, notify_fd);
	if (st.svc) {
		svc_to_stop = NULL;
		rr_svc_destroy(st.svc);
	}
	free(st.pattern);
	free(st.echo);
	return err;
}
