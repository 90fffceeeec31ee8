// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Our side of "rpcrdma-bench rpc": rr_clnt against rr_svc in a forked
 * child, depth calls kept in flight from this one thread with
 * rr_clnt_call_async and rr_clnt_progress.
 *
 * Each call has a slot: its rr_call, XDR buffers and, for READ and WRITE,
 * a piece of one registered area that carries the DDP-eligible item
 * without a copy. A slot is reissued as soon as its result is checked.
 *
 * Completions may run on the client's own thread as well as in
 * rr_clnt_progress, so done() only queues the slot under a lock; checking,
 * timing and reissuing happen here.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_bench.h"

/* rr_clnt_progress slices; BENCH_WAIT_MS bounds the wait for any reply. */
#define PROGRESS_SLICE_MS 100
#define XDR_MIN_CAP	  64

struct clnt_run;

struct slot {
	struct rr_call call;
	struct clnt_run *run;
	uint32_t idx;
	int rc;
	uint64_t t_issue;
	char *args, *res; /* XDR */
	size_t args_cap, res_cap;
	char *bulk; /* READ/WRITE: size bytes of the registered area */
	char *echo; /* ECHO: the decoded result */
};

struct clnt_run {
	const struct rpc_opts *o;
	struct rpc_result *r;
	struct rr_clnt *c;
	struct slot *slots;
	char *xdr;	/* all slots' XDR buffers */
	char *echo;	/* all slots' ECHO result buffers */
	char *echo_src; /* ECHO's argument data */
	char *bulk;	/* all slots' DDP-eligible items, registered */
	size_t bulk_len;
	bool bulk_reg;
	pthread_mutex_t lock; /* guards the done queue */
	uint32_t *doneq;      /* ring of depth slot indices */
	uint64_t dq_head, dq_tail;
	uint64_t issued, completed;
	uint64_t start_ns, end_ns, last_ns;
	struct bench_progress prog;
	bool quiet; /* another connection's run shows the progress */
};

/*
 * One of --conns connections: its own client, calls, thread and figures,
 * added up when all are done.
 */
struct conn_part {
	struct clnt_run run;
	struct rpc_opts o; /* depth: this connection's share */
	struct rpc_result r;
	pthread_t tid;
	bool started;
	int err;
};

static int fail(const char *call, int err)
{
	fprintf(stderr, "rpc client: %s: %s (%d)\n", call, strerror(-err), err);
	return err;
}

/* Transport counters go with every failure: they say what went wrong. */
static void dump_stats(struct clnt_run *run)
{
	struct rr_xprt_stats st;
	int err = rr_clnt_stats(run->c, &st);

	if (err) {
		fail("rr_clnt_stats", err);
		return;
	}
	fprintf(stderr, "rpc client counters:");
	rpc_print_stats(stderr, &st);
	fprintf(stderr, "\n");
}

/* ------------------------------------------------------------ the buffers */

static size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

static int alloc_xdr(struct clnt_run *run)
{
	uint32_t i, depth = run->o->b.depth, size = run->o->b.size;
	bool echo = run->o->proc == BENCHPROC_ECHO;
	size_t cap = max_sz(XDR_MIN_CAP, echo ? rpc_xdr_opaque_len(size) : 0);
	size_t ecap = echo ? size + 1 : 1;

	run->xdr = malloc(2 * cap * depth);
	run->echo = malloc(ecap * depth);
	run->echo_src = malloc(size + 1);
	if (!run->xdr || !run->echo || !run->echo_src)
		return fail("malloc", -ENOMEM);
	/* Touch every page now so page faults are not measured. */
	memset(run->xdr, 0, 2 * cap * depth);
	memset(run->echo, 0, ecap * depth);
	rpc_pattern_fill(run->echo_src, size);
	for (i = 0; i < depth; i++) {
		struct slot *s = &run->slots[i];

		s->args = run->xdr + 2 * cap * i;
		s->res = s->args + cap;
		s->args_cap = s->res_cap = cap;
		s->echo = run->echo + ecap * i;
	}
	return 0;
}

/* Registered, so the transport exposes it to the server without a copy. */
static int alloc_bulk(struct clnt_run *run)
{
	uint32_t i, depth = run->o->b.depth, size = run->o->b.size;
	int err;

	if (run->o->proc != BENCHPROC_READ && run->o->proc != BENCHPROC_WRITE)
		return 0;
	run->bulk_len = (size_t)size * depth;
	if (!run->bulk_len)
		return 0;
	if (posix_memalign((void **)&run->bulk, 4096, run->bulk_len))
		return fail("posix_memalign", -ENOMEM);
	for (i = 0; i < depth; i++) {
		run->slots[i].bulk = run->bulk + (size_t)size * i;
		rpc_pattern_fill(run->slots[i].bulk, size);
	}
	err = rr_clnt_mem_reg(run->c, run->bulk, run->bulk_len);
	if (err)
		return fail("rr_clnt_mem_reg", err);
	run->bulk_reg = true;
	return 0;
}

static int run_init(struct clnt_run *run, const struct rpc_opts *o,
		    struct rpc_result *r)
{
	uint32_t i;
	int err;

	memset(run, 0, sizeof(*run));
	run->o = o;
	run->r = r;
	err = -pthread_mutex_init(&run->lock, NULL);
	if (err)
		return fail("pthread_mutex_init", err);
	run->slots = calloc(o->b.depth, sizeof(*run->slots));
	run->doneq = calloc(o->b.depth, sizeof(*run->doneq));
	if (!run->slots || !run->doneq)
		return fail("calloc", -ENOMEM);
	for (i = 0; i < o->b.depth; i++) {
		run->slots[i].run = run;
		run->slots[i].idx = i;
	}
	return 0;
}

/* The client is gone by now, so no call can still use these buffers. */
static void run_fini(struct clnt_run *run)
{
	pthread_mutex_destroy(&run->lock);
	free(run->slots);
	free(run->doneq);
	free(run->xdr);
	free(run->echo);
	free(run->echo_src);
	free(run->bulk);
}

/* ------------------------------------------------------------- one call */

static void call_done(struct rr_call *call, int rc, void *arg)
{
	struct slot *s = arg;
	struct clnt_run *run = s->run;

	(void)call;
	s->rc = rc;
	pthread_mutex_lock(&run->lock);
	run->doneq[run->dq_tail++ % run->o->b.depth] = s->idx;
	pthread_mutex_unlock(&run->lock);
}

static bool pop_done(struct clnt_run *run, uint32_t *idx)
{
	bool any;

	pthread_mutex_lock(&run->lock);
	any = run->dq_head != run->dq_tail;
	if (any)
		*idx = run->doneq[run->dq_head++ % run->o->b.depth];
	pthread_mutex_unlock(&run->lock);
	return any;
}

static bool any_done(struct clnt_run *run)
{
	bool any;

	pthread_mutex_lock(&run->lock);
	any = run->dq_head != run->dq_tail;
	pthread_mutex_unlock(&run->lock);
	return any;
}

/* The XDR a real caller would build for each call, so it is timed too. */
static int encode_args(struct clnt_run *run, struct slot *s)
{
	struct rr_call *call = &s->call;
	uint32_t size = run->o->b.size;

	switch (run->o->proc) {
	case BENCHPROC_ECHO:
		return rpc_xdr_enc_data(s->args, s->args_cap, run->echo_src,
					size, &call->args_len);
	case BENCHPROC_READ:
		call->res_bulk = s->bulk;
		call->res_bulk_cap = size;
		rpc_pattern_spoil(s->bulk, size);
		return rpc_xdr_enc_u32(s->args, s->args_cap, size,
				       &call->args_len);
	case BENCHPROC_WRITE:
		/* The data's length word is XDR; its bytes are the bulk. */
		call->arg_bulk = s->bulk;
		call->arg_bulk_len = size;
		return rpc_xdr_enc_u32(s->args, s->args_cap, size,
				       &call->args_len);
	}
	return 0;
}

static int slot_issue(struct clnt_run *run, struct slot *s)
{
	struct rr_call *call = &s->call;
	int err;

	s->t_issue = bench_now_ns();
	memset(call, 0, sizeof(*call));
	call->prog = BENCHPROG;
	call->vers = BENCHVERS;
	call->proc = run->o->proc;
	call->args = s->args;
	call->res = s->res;
	call->res_cap = s->res_cap;
	call->timeout_ms = BENCH_WAIT_MS;
	err = encode_args(run, s);
	if (err)
		return fail("encoding the arguments", err);
	err = rr_clnt_call_async(run->c, call, call_done, s);
	if (err) {
		fail("rr_clnt_call_async", err);
		dump_stats(run);
		return err;
	}
	run->issued++;
	return 0;
}

/* Decodes the results and samples the data: NULL when they are right. */
static const char *check_res(struct clnt_run *run, struct slot *s)
{
	const struct rr_call *call = &s->call;
	uint32_t n, size = run->o->b.size;

	if (run->o->proc != BENCHPROC_READ && call->res_bulk_len)
		return "a DDP-eligible result nobody asked for";
	switch (run->o->proc) {
	case BENCHPROC_NULL:
		return call->res_len ? "results for a void procedure" : NULL;
	case BENCHPROC_ECHO:
		if (rpc_xdr_dec_data(s->res, call->res_len, s->echo, size, &n))
			return "undecodable results";
		if (n != size || !rpc_pattern_check(s->echo, n))
			return "data differ from the arguments";
		return NULL;
	case BENCHPROC_READ:
		if (rpc_xdr_dec_u32(s->res, call->res_len, &n) || n != size)
			return "wrong XDR length word";
		if (call->res_bulk_len != size)
			return "wrong DDP-eligible item length";
		if (!rpc_pattern_check(s->bulk, size))
			return "wrong data";
		return NULL;
	case BENCHPROC_WRITE:
		if (rpc_xdr_dec_u32(s->res, call->res_len, &n) || n != size)
			return "wrong length written";
		return NULL;
	}
	return "unknown procedure";
}

static int call_failed(struct clnt_run *run, struct slot *s, const char *why)
{
	const struct rr_call *call = &s->call;

	fprintf(stderr,
		"rpc client: %s call %llu (slot %u): %s: rc %d (%s), "
		"reply_stat %u, accept_stat %u, res_len %zu, "
		"res_bulk_len %zu\n",
		rpc_proc_name(run->o->proc), (unsigned long long)run->completed,
		s->idx, why, s->rc, s->rc ? strerror(-s->rc) : "ok",
		call->reply_stat, call->accept_stat, call->res_len,
		call->res_bulk_len);
	dump_stats(run);
	return s->rc ? s->rc : -EPROTO;
}

static int slot_finish(struct clnt_run *run, struct slot *s)
{
	struct rpc_result *r = run->r;
	const char *why;
	uint64_t now;

	run->completed++;
	if (s->rc)
		return call_failed(run, s, "call failed");
	if (s->call.reply_stat != RR_MSG_ACCEPTED ||
	    s->call.accept_stat != RR_SUCCESS)
		return call_failed(run, s, "call not accepted with SUCCESS");
	why = check_res(run, s);
	if (why)
		return call_failed(run, s, why);
	now = bench_now_ns();
	bench_hist_record(&r->r.hist, now - s->t_issue);
	r->r.ops++;
	r->r.bytes += rpc_payload(run->o);
	run->last_ns = now;
	return 0;
}

/* ------------------------------------------------------------- the loop */

static int wait_done(struct clnt_run *run)
{
	uint64_t deadline = bench_now_ns() + BENCH_WAIT_MS * 1000000ull;
	int err;

	while (!any_done(run)) {
		err = rr_clnt_progress(run->c, PROGRESS_SLICE_MS);
		if (err && err != -ETIMEDOUT) {
			fail("rr_clnt_progress", err);
			dump_stats(run);
			return err;
		}
		if (bench_now_ns() >= deadline && !any_done(run)) {
			fprintf(stderr,
				"rpc client: no call completed within %d ms "
				"with %llu in flight\n",
				BENCH_WAIT_MS,
				(unsigned long long)(run->issued -
						     run->completed));
			dump_stats(run);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

static int drain(struct clnt_run *run)
{
	uint32_t idx;
	int err;

	while (pop_done(run, &idx)) {
		struct slot *s = &run->slots[idx];

		err = slot_finish(run, s);
		if (err)
			return err;
		if (run->last_ns < run->end_ns) {
			err = slot_issue(run, s);
			if (err)
				return err;
		}
		bench_progress_tick(&run->prog, run->last_ns, run->r->r.ops,
				    run->r->r.bytes);
	}
	return 0;
}

static int run_calls(struct clnt_run *run)
{
	uint32_t i;
	int err = 0;

	run->start_ns = bench_now_ns();
	run->last_ns = run->start_ns;
	run->end_ns = run->start_ns + (uint64_t)(run->o->b.seconds * 1e9);
	if (!run->quiet)
		bench_progress_init(&run->prog, run->o->b.provider,
				    run->o->b.seconds, run->start_ns);
	for (i = 0; i < run->o->b.depth && !err; i++)
		err = slot_issue(run, &run->slots[i]);
	while (!err && run->completed < run->issued) {
		err = wait_done(run);
		if (!err)
			err = drain(run);
	}
	bench_progress_done(&run->prog);
	run->r->r.elapsed_s = (double)(run->last_ns - run->start_ns) / 1e9;
	return err;
}

/* ------------------------------------------------------------ the phase */

static int connect_measured(struct clnt_run *run, uint16_t port)
{
	struct rr_clnt_opts co = {.provider = run->o->b.provider};
	struct rpc_memory *m = &run->r->mem;
	struct rr_xprt_stats st;
	int err;

	/* Defaults otherwise: the memory goal is about them. */
	if (run->o->b.size > (1u << 20))
		co.max_bulk = run->o->b.size;
	err = rpc_rss_bytes(&m->client_rss_before);
	if (err)
		return fail("VmRSS", err);
	err = rr_clnt_create(run->o->b.addr_str, port, &co, &run->c);
	if (err) {
		run->c = NULL;
		return fail("rr_clnt_create", err);
	}
	err = rpc_rss_bytes(&m->client_rss);
	if (err)
		return fail("VmRSS", err);
	err = rr_clnt_stats(run->c, &st);
	if (err)
		return fail("rr_clnt_stats", err);
	m->client_registered = st.registered_bytes;
	m->client_valid = true;
	return 0;
}

static int client_setup(struct clnt_run *run, uint16_t port)
{
	int err;

	err = connect_measured(run, port);
	if (!err)
		err = alloc_xdr(run);
	if (!err)
		err = alloc_bulk(run);
	return err;
}

static int client_calls(struct clnt_run *run)
{
	int err = run_calls(run);

	if (!err) {
		err = rr_clnt_stats(run->c, &run->r->stats);
		if (err)
			fail("rr_clnt_stats", err);
		run->r->have_stats = !err;
	}
	return err;
}

/*
 * Stops the server, which first reports its memory and counters with the
 * connection still up; after a failure its counters say what it saw.
 */
static int stop_server(struct bench_peer *peer, struct rpc_result *r,
		       bool failed)
{
	struct rpc_memory *m = &r->mem;
	struct rpc_svc_report rep;
	int err;

	if (kill(peer->pid, SIGTERM))
		return fail("kill", -errno);
	err = rpc_read_full(peer->fd, &rep, sizeof(rep), BENCH_WAIT_MS);
	if (err) {
		fprintf(stderr, "rpc client: no report from the server: %s\n",
			err == -ECHILD ? "it exited" : strerror(-err));
		return err;
	}
	r->svc_stats = rep.stats;
	r->have_svc_stats = true;
	m->server_registered = rep.stats.registered_bytes;
	m->server_rss = rep.rss;
	m->server_rss_idle = rep.rss_idle;
	m->server_registered_idle = rep.registered_idle;
	m->server_valid = true;
	if (failed) {
		fprintf(stderr, "rpc server counters:");
		rpc_print_stats(stderr, &rep.stats);
		fprintf(stderr, "\n");
	}
	return 0;
}

static void client_close(struct clnt_run *run)
{
	int err;

	if (!run->c)
		return;
	/*
	 * Calls still in flight after a failure keep the area in use; the
	 * destroy fences them and drops every registration itself.
	 */
	if (run->bulk_reg && run->issued == run->completed) {
		err = rr_clnt_mem_unreg(run->c, run->bulk);
		if (err)
			fail("rr_clnt_mem_unreg", err);
	}
	err = rr_clnt_destroy(run->c);
	if (err)
		fail("rr_clnt_destroy", err);
	run->c = NULL;
}

/* Connection k's share of the calls in flight, and its own result. */
static int part_init(struct conn_part *p, const struct rpc_opts *o, uint32_t k)
{
	uint32_t n = rpc_conns(o);

	p->o = *o;
	p->o.b.depth = o->b.depth / n + (k < o->b.depth % n);
	memset(&p->r, 0, sizeof(p->r));
	bench_hist_reset(&p->r.r.hist);
	return run_init(&p->run, &p->o, &p->r);
}

static void *part_main(void *arg)
{
	struct conn_part *p = arg;

	p->err = client_calls(&p->run);
	return NULL;
}

static void stats_add(struct rr_xprt_stats *to, const struct rr_xprt_stats *s)
{
#define ADD(f) to->f += s->f;
	RR_XPRT_STATS_FIELDS(ADD)
#undef ADD
}

/* The connections' figures as one run's: r holds the first's memory. */
static void parts_add(struct conn_part *parts, uint32_t n, struct rpc_result *r)
{
	r->mem = parts[0].r.mem;
	r->have_stats = true;
	memset(&r->stats, 0, sizeof(r->stats));
	for (uint32_t k = 0; k < n; k++) {
		struct rpc_result *pr = &parts[k].r;

		r->r.ops += pr->r.ops;
		r->r.bytes += pr->r.bytes;
		bench_hist_merge(&r->r.hist, &pr->r.hist);
		if (pr->r.elapsed_s > r->r.elapsed_s)
			r->r.elapsed_s = pr->r.elapsed_s;
		r->have_stats &= pr->have_stats;
		stats_add(&r->stats, &pr->stats);
	}
}

/*
 * Connects every part first (the first alone is measured for memory),
 * then runs each part's calls: in this thread with one connection, as
 * before --conns, else in a thread per connection.
 */
static int parts_run(struct conn_part *parts, uint32_t n, uint16_t port,
		     struct rpc_result *r)
{
	int err = 0;

	for (uint32_t k = 0; k < n && !err; k++) {
		parts[k].run.quiet = k > 0;
		err = client_setup(&parts[k].run, port);
	}
	if (!err && n == 1)
		err = client_calls(&parts[0].run);
	for (uint32_t k = 0; k < n && n > 1 && !err; k++) {
		err = -pthread_create(&parts[k].tid, NULL, part_main,
				      &parts[k]);
		if (err)
			fail("pthread_create", err);
		parts[k].started = !err;
	}
	for (uint32_t k = 0; k < n; k++) {
		if (parts[k].started)
			pthread_join(parts[k].tid, NULL);
		if (!err)
			err = parts[k].err;
	}
	if (!err)
		parts_add(parts, n, r);
	return err;
}

int rpc_ours_run(const struct rpc_opts *o, struct rpc_result *r)
{
	uint32_t n = rpc_conns(o), k, ready = 0;
	struct conn_part *parts = calloc(n, sizeof(*parts));
	struct bench_peer peer;
	uint16_t port = 0;
	int err = parts ? 0 : fail("calloc", -ENOMEM), serr, perr;

	for (k = 0; k < n && !err; k++, ready++)
		err = part_init(&parts[k], o, k);
	if (!err && (err = bench_peer_spawn(&peer, rpc_svc_peer, &o->b)))
		fail("fork", err);
	if (err) {
		for (k = 0; k < ready; k++)
			run_fini(&parts[k].run);
		free(parts);
		return err;
	}
	serr = err = bench_peer_port(&peer, &port, "rpc");
	if (!err) {
		r->r.port = port;
		err = parts_run(parts, n, port, r);
		serr = stop_server(&peer, r, err != 0);
	}
	for (k = 0; k < n; k++)
		client_close(&parts[k].run);
	perr = bench_peer_reap(&peer, "rpc");
	for (k = 0; k < n; k++)
		run_fini(&parts[k].run);
	free(parts);
	if (!err)
		err = serr ? serr : perr;
	r->r.done = !err;
	return err;
}
