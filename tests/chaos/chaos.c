/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Chaos: several clients against one server, thousands of calls of mixed
 * shapes (inline, read chunks, write chunks, reply chunks) with payloads
 * derived from a seed, while the faults provider, on both sides, drops
 * connections at random work requests, fails registrations and
 * invalidations, duplicates, holds back and reorders completions.
 *
 * Pass: every call completes exactly once, with the right bytes or an
 * error, within its bound; no payload is ever wrong; no send buffer is
 * reused before its Send completed; no completion with an id we never
 * issued; every queue drains to zero at every teardown (client and
 * server); and most calls succeed (the client reconnects and sends again).
 *
 *   RR_CHAOS_SEED     seed (default: from the clock); printed, to replay
 *   RR_CHAOS_CALLS    calls per client (default 1500)
 *   RR_CHAOS_CLIENTS  clients (default 4)
 */
#include "clock.h"
#include "tprog.h"
#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROG	 0x20000099u
#define MAX_DATA (256u << 10)
#define DEPTH	 8
#define CALL_MS	 20000

enum { P_ECHO = 1, P_READ, P_WRITE, P_BIG, P_N };

static uint64_t g_seed;

static uint8_t pat(uint32_t s, uint32_t i)
{
	uint32_t x = s * 2654435761u + i * 40503u;

	return (uint8_t)(x >> 13 ^ x);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* ------------------------------------------------------------ server */

static uint8_t *srv_buf[64];
static pthread_mutex_t srv_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t srv_next;

/* Per-call memory for a bulk result that lives past the handler. */
static uint8_t *bulk_for_call(void)
{
	uint8_t *b;

	pthread_mutex_lock(&srv_mu);
	b = srv_buf[srv_next++ % 64];
	pthread_mutex_unlock(&srv_mu);
	return b;
}

/* args: seed, size; results: size, then the bulk item of that size */
static uint32_t h_read(struct rr_svc_req *r, void *a)
{
	size_t n, cap, bcap;
	const uint8_t *args = rr_svc_args(r, &n);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint8_t *b = rr_svc_bulk_buf(r, &bcap);
	uint32_t s, size;

	(void)a;
	if (n != 8)
		return RR_GARBAGE_ARGS;
	s = get32(args);
	size = get32(args + 4);
	if (size > MAX_DATA || size > bcap)
		return RR_GARBAGE_ARGS;
	if (!b)
		b = bulk_for_call();
	for (uint32_t i = 0; i < size; i++)
		b[i] = pat(s, i);
	put32(res, size);
	return rr_svc_set_res(r, 4, b, size) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

/* args: seed, len, data (bulk or inline); results: 1 if data is right */
static uint32_t h_write(struct rr_svc_req *r, void *a)
{
	size_t n, bn, cap;
	const uint8_t *args = rr_svc_args(r, &n);
	const uint8_t *bulk = rr_svc_arg_bulk(r, &bn);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	const uint8_t *d;
	uint32_t s, len, ok = 1;

	(void)a;
	if (n < 8)
		return RR_GARBAGE_ARGS;
	s = get32(args);
	len = get32(args + 4);
	d = bulk ? bulk : args + 8;
	if ((bulk && bn != len) || (!bulk && n - 8 < len))
		return RR_GARBAGE_ARGS;
	for (uint32_t i = 0; i < len && ok; i++)
		ok = d[i] == pat(s, i);
	put32(res, ok);
	return rr_svc_set_res(r, 4, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

/* args: seed, n; results: opaque<n> of the pattern, all inline XDR */
static uint32_t h_big(struct rr_svc_req *r, void *a)
{
	size_t n, cap;
	const uint8_t *args = rr_svc_args(r, &n);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint32_t s, len;

	(void)a;
	if (n != 8)
		return RR_GARBAGE_ARGS;
	s = get32(args);
	len = get32(args + 4);
	if (4 + (size_t)len + 3 > cap)
		return RR_GARBAGE_ARGS;
	put32(res, len);
	for (uint32_t i = 0; i < len; i++)
		res[4 + i] = pat(s, i);
	memset(res + 4 + len, 0, (4 - (len & 3)) & 3);
	return rr_svc_set_res(r, 4 + len + ((4 - (len & 3)) & 3), NULL, 0)
		       ? RR_SYSTEM_ERR
		       : RR_SUCCESS;
}

static const rr_svc_fn procs[P_N] = {
	[P_ECHO] = rr_t_echo,
	[P_READ] = h_read,
	[P_WRITE] = h_write,
	[P_BIG] = h_big,
};

static struct rr_svc *child_svc;

static void on_term(int sig)
{
	(void)sig;
	if (child_svc)
		rr_svc_stop(child_svc);
}

static struct rr_fault_plan server_plan(void)
{
	return (struct rr_fault_plan){.seed = g_seed ^ 0x5e77e5,
				      .reorder_ppm = 20000,
				      .flush_wr_ppm = 300,
				      .dup_cqe_ppm = 2000,
				      .guard_sends = true};
}

/* Serves until SIGTERM; writes its counters to fd; exit 0 if balanced. */
static void server_child(int fd)
{
	struct rr_fault_plan plan = server_plan();
	struct rr_device_opts dopts = {.inner = "iwarp", .faults = &plan};
	struct rr_svc_opts o = {.provider = "faults",
				.dev_opts = &dopts,
				.threads = 2,
				.max_bulk = MAX_DATA};
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_prog prog = {PROG, 1, P_N, procs, NULL, 0};
	struct sigaction sa = {.sa_handler = on_term};
	struct rr_xprt_stats st;
	struct rr_fault_stats fs;
	uint16_t port;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (int i = 0; i < 64; i++)
		if (!(srv_buf[i] = malloc(MAX_DATA)))
			_exit(2);
	if (rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &o,
			  &child_svc) ||
	    rr_svc_register(child_svc, &prog) || rr_svc_port(child_svc, &port))
		_exit(3);
	sigaction(SIGTERM, &sa, NULL);
	if (write(fd, &port, sizeof(port)) != sizeof(port))
		_exit(4);
	rr_svc_run(child_svc);
	rr_svc_shutdown(child_svc);
	rr_svc_stats(child_svc, &st);
	rr_faults_stats(rr_svc_device(child_svc), &fs);
	if (write(fd, &st, sizeof(st)) != sizeof(st) ||
	    write(fd, &fs, sizeof(fs)) != sizeof(fs))
		_exit(5);
	rr_svc_destroy(child_svc);
	for (int i = 0; i < 64; i++)
		free(srv_buf[i]);
	_exit(0);
}

/* ------------------------------------------------------------ client */

struct slot {
	struct rr_call call; /* first: the callback finds its slot */
	struct worker *w;
	uint32_t kind, seed, size;
	uint64_t started;
	bool busy;
	uint8_t args[8 + 4096];
	uint8_t res[8 + MAX_DATA];
	uint8_t *bulk; /* DEPTH * MAX_DATA, half of them registered */
};

struct worker {
	int idx;
	uint16_t port;
	uint32_t calls;
	pthread_t t;
	struct rr_clnt *c;
	struct slot slots[DEPTH];
	uint8_t *mem;
	uint64_t rng;
	/* Callbacks run in whichever thread drives the client: mu covers the
	 * slots' busy flags and these counters. */
	pthread_mutex_t mu;
	uint32_t issued, done, ok, errs, wrong, late, twice;
	int first_err;
	struct rr_xprt_stats st;
	struct rr_fault_stats fs;
	int setup_rc;
};

static uint32_t rnd(struct worker *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return (uint32_t)(w->rng >> 16);
}

/* Did the call bring the right bytes? */
static bool right(const struct slot *s)
{
	const struct rr_call *c = &s->call;
	const uint8_t *d;

	switch (s->kind) {
	case P_ECHO:
		return c->res_len == s->size &&
		       !memcmp(c->res, s->args, s->size);
	case P_READ:
		if (c->res_len < 4 || get32(s->res) != s->size)
			return false;
		/* In the write chunk, or inline after the length word. */
		d = c->res_bulk_len ? s->bulk : s->res + 4;
		if (c->res_bulk_len ? c->res_bulk_len != s->size
				    : c->res_len < 4 + s->size)
			return false;
		for (uint32_t i = 0; i < s->size; i++)
			if (d[i] != pat(s->seed, i))
				return false;
		return true;
	case P_WRITE:
		return c->res_len == 4 && get32(s->res) == 1;
	case P_BIG:
		if (c->res_len < 4 + s->size || get32(s->res) != s->size)
			return false;
		for (uint32_t i = 0; i < s->size; i++)
			if (s->res[4 + i] != pat(s->seed, i))
				return false;
		return true;
	}
	return false;
}

static void done(struct rr_call *call, int rc, void *arg)
{
	struct slot *s = (struct slot *)call;
	struct worker *w = arg;

	pthread_mutex_lock(&w->mu);
	if (!s->busy) {
		w->twice++;
		pthread_mutex_unlock(&w->mu);
		return;
	}
	s->busy = false;
	w->done++;
	if (rr_t_now_ms() - s->started > CALL_MS + 5000)
		w->late++;
	if (rc == 0 && right(s))
		w->ok++;
	else if (rc == 0 || rc == -EREMOTEIO)
		w->wrong++;
	else {
		w->errs++;
		if (!w->first_err)
			w->first_err = rc;
	}
	pthread_mutex_unlock(&w->mu);
}

static uint32_t size_of(struct worker *w, uint32_t kind)
{
	static const uint32_t small[] = {0, 1, 100, 1000, 3000};

	if (kind == P_ECHO)
		return small[rnd(w) % 5];
	if (kind == P_BIG)
		return 1000 + rnd(w) % 60000; /* past inline: reply chunk */
	return rnd(w) % 3 ? rnd(w) % 8192 : rnd(w) % MAX_DATA;
}

static void issue(struct worker *w, struct slot *s)
{
	struct rr_call *c = &s->call;
	int rc;

	s->kind = 1 + rnd(w) % (P_N - 1);
	s->seed = rnd(w);
	s->size = size_of(w, s->kind);
	*c = (struct rr_call){.prog = PROG,
			      .vers = 1,
			      .proc = s->kind,
			      .args = s->args,
			      .res = s->res,
			      .res_cap = sizeof(s->res),
			      .timeout_ms = CALL_MS};
	put32(s->args, s->seed);
	put32(s->args + 4, s->size);
	c->args_len = 8;
	if (s->kind == P_ECHO) {
		for (uint32_t i = 0; i < s->size; i++)
			s->args[i] = pat(s->seed, i);
		c->args_len = s->size;
	} else if (s->kind == P_READ) {
		c->res_bulk = s->bulk;
		c->res_bulk_cap = s->size;
	} else if (s->kind == P_WRITE) {
		for (uint32_t i = 0; i < s->size; i++)
			s->bulk[i] = pat(s->seed, i);
		c->arg_bulk = s->bulk;
		c->arg_bulk_len = s->size;
	}
	s->started = rr_t_now_ms();
	pthread_mutex_lock(&w->mu);
	s->busy = true;
	w->issued++;
	pthread_mutex_unlock(&w->mu);
	rc = rr_clnt_call_async(w->c, c, done, w);
	if (rc) {
		pthread_mutex_lock(&w->mu);
		s->busy = false;
		w->done++;
		w->errs++;
		pthread_mutex_unlock(&w->mu);
	}
}

static struct rr_fault_plan client_plan(int idx)
{
	return (struct rr_fault_plan){.seed = g_seed + (uint64_t)idx,
				      .delay_send_cqe_ppm = 200000,
				      .reorder_ppm = 50000,
				      .fail_reg_ppm = 300,
				      .fail_inv_ppm = 300,
				      .flush_wr_ppm = 300,
				      .dup_cqe_ppm = 2000,
				      .guard_sends = true};
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct rr_fault_plan plan = client_plan(w->idx);
	struct rr_device_opts dopts = {.inner = "iwarp", .faults = &plan};
	struct rr_clnt_opts o = {.provider = "faults",
				 .dev_opts = &dopts,
				 .credits = 32,
				 .max_bulk = MAX_DATA,
				 .reconnect_max_ms = 200};
	uint64_t end;

	w->setup_rc = rr_clnt_create("127.0.0.1", w->port, &o, &w->c);
	if (w->setup_rc)
		return NULL;
	/* Half the bulk memory is registered (zero copy), half bounced. */
	rr_clnt_mem_reg(w->c, w->mem, (size_t)DEPTH / 2 * MAX_DATA);
	for (int i = 0; i < DEPTH; i++) {
		w->slots[i].w = w;
		w->slots[i].bulk = w->mem + (size_t)i * MAX_DATA;
	}
	end = rr_t_now_ms() + (uint64_t)w->calls * 50 + 60000;
	while (rr_t_now_ms() < end) {
		struct slot *idle[DEPTH];
		int n = 0;
		bool all;

		pthread_mutex_lock(&w->mu);
		all = w->done >= w->calls;
		for (int i = 0; i < DEPTH && w->issued + n < w->calls; i++)
			if (!w->slots[i].busy)
				idle[n++] = &w->slots[i];
		pthread_mutex_unlock(&w->mu);
		if (all)
			break;
		for (int i = 0; i < n; i++)
			issue(w, idle[i]);
		rr_clnt_progress(w->c, 1000);
	}
	rr_clnt_shutdown(w->c);
	rr_clnt_stats(w->c, &w->st);
	rr_faults_stats(rr_clnt_device(w->c), &w->fs);
	return NULL;
}

static uint32_t env_u32(const char *name, uint32_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? (uint32_t)strtoul(v, NULL, 0) : dflt;
}

static int check_worker(const struct worker *w)
{
	int bad = 0;

	printf("client %d: %u calls, %u right, %u errors (first %d), %u WRONG, "
	       "%u late, "
	       "%u twice; reconnects %llu, resent %llu, stale cqes %llu, "
	       "unknown cqes %llu, undrained %llu, send bufs reused early "
	       "%llu; injected: flushes %llu, failed regs %llu, failed invs "
	       "%llu, dup cqes %llu\n",
	       w->idx, w->done, w->ok, w->errs, w->first_err, w->wrong, w->late,
	       w->twice, (unsigned long long)w->st.conn_lost,
	       (unsigned long long)w->st.retransmits,
	       (unsigned long long)w->st.stale_cqes,
	       (unsigned long long)w->st.unknown_cqes,
	       (unsigned long long)w->st.teardown_unbalanced,
	       (unsigned long long)w->fs.send_bufs_modified,
	       (unsigned long long)w->fs.wrs_flushed,
	       (unsigned long long)w->fs.regs_failed,
	       (unsigned long long)w->fs.invs_failed,
	       (unsigned long long)w->fs.cqes_duplicated);
	bad |= w->setup_rc != 0;
	bad |= w->done != w->calls || w->wrong || w->late || w->twice;
	bad |= w->st.unknown_cqes || w->st.teardown_unbalanced;
	bad |= w->st.state_violations != 0; /* base/fsm.h */
	bad |= w->fs.send_bufs_modified != 0;
	/* Faults cost some calls their connection; most must still work. */
	bad |= w->ok < w->calls * 9 / 10;
	return bad;
}

int main(void)
{
	uint32_t nclients = env_u32("RR_CHAOS_CLIENTS", 4);
	uint32_t calls = env_u32("RR_CHAOS_CALLS", 1500);
	struct worker *w = calloc(nclients, sizeof(*w));
	struct rr_xprt_stats sst;
	struct rr_fault_stats sfs;
	int p[2], status, bad = 0;
	uint16_t port;
	pid_t pid;

	g_seed = getenv("RR_CHAOS_SEED")
			 ? strtoull(getenv("RR_CHAOS_SEED"), NULL, 0)
			 : (uint64_t)time(NULL) ^ getpid();
	printf("chaos: seed %llu (replay: RR_CHAOS_SEED=%llu), %u clients x "
	       "%u calls\n",
	       (unsigned long long)g_seed, (unsigned long long)g_seed, nclients,
	       calls);
	fflush(stdout);
	signal(SIGPIPE, SIG_IGN);
	if (!w || pipe(p))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		server_child(p[1]);
	}
	close(p[1]);
	if (read(p[0], &port, sizeof(port)) != sizeof(port))
		return 1;
	for (uint32_t i = 0; i < nclients; i++) {
		w[i] = (struct worker){.mu = PTHREAD_MUTEX_INITIALIZER,
				       .idx = (int)i,
				       .port = port,
				       .calls = calls,
				       .rng = g_seed * 0x9e3779b97f4a7c15ull +
					      i + 1};
		w[i].mem = aligned_alloc(4096, (size_t)DEPTH * MAX_DATA);
		if (!w[i].mem ||
		    pthread_create(&w[i].t, NULL, worker_main, &w[i]))
			return 1;
	}
	for (uint32_t i = 0; i < nclients; i++)
		pthread_join(w[i].t, NULL);
	kill(pid, SIGTERM);
	if (read(p[0], &sst, sizeof(sst)) != sizeof(sst) ||
	    read(p[0], &sfs, sizeof(sfs)) != sizeof(sfs)) {
		printf("server: no counters (it died?)\n");
		bad = 1;
	} else {
		printf("server: %llu calls, %llu connections lost, %llu "
		       "replays "
		       "from the DRC, stale cqes %llu, unknown cqes %llu, "
		       "undrained %llu, send bufs reused early %llu; injected: "
		       "flushes %llu, dup cqes %llu\n",
		       (unsigned long long)sst.calls,
		       (unsigned long long)sst.conn_lost,
		       (unsigned long long)sst.drc_replays,
		       (unsigned long long)sst.stale_cqes,
		       (unsigned long long)sst.unknown_cqes,
		       (unsigned long long)sst.teardown_unbalanced,
		       (unsigned long long)sfs.send_bufs_modified,
		       (unsigned long long)sfs.wrs_flushed,
		       (unsigned long long)sfs.cqes_duplicated);
		bad |= sst.unknown_cqes || sst.teardown_unbalanced ||
		       sfs.send_bufs_modified;
	}
	waitpid(pid, &status, 0);
	bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	for (uint32_t i = 0; i < nclients; i++) {
		bad |= check_worker(&w[i]);
		free(w[i].mem);
	}
	free(w);
	printf("chaos: %s (seed %llu)\n", bad ? "FAILED" : "passed",
	       (unsigned long long)g_seed);
	return bad;
}
