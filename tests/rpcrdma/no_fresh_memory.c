/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Forward progress without fresh memory (architecture.md invariant 6, issue 4):
 * once the client is up, every allocation in this process is made to fail
 * (include/rpcrdma/alloc_inject.h), and the client must still reconnect
 * to a server that was killed and started again, and complete calls of
 * every shape with the right bytes (tests/rpcrdma/shapes.h), including
 * calls that were in flight, their memory exposed, when the server died.
 * The injector counts every allocation the library attempts meanwhile:
 * none may be attempted, not by calls (the steady state) and not by the
 * reconnects.
 *
 * The server is another process (this binary, exec'd with --serve PORT
 * FD), killed with SIGKILL and started again on the same port; RR_PROVIDER
 * picks the provider of both sides (default iwarp). With RR_PROVIDER=faults
 * and RR_TEST_FAULT_PLAN=1 the client's faults wrapper is active: Send
 * completions held back past their replies, shuffled batches, and the
 * send-buffer guard, whose rings must not need memory either.
 */
#include "clock.h"
#include "fabric/shm/shm.h"
#include "shapes.h"

#include "io.h"

#include <rpcrdma/alloc_inject.h>
#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CASE_S 60 /* each case's time limit (limit.h) */

#define CHILD_TMO_MS 10000 /* server start and stop */
#define CALL_TMO_MS  20000 /* per call: a broken reconnect fails, not hangs */
#define CYCLES	     2	   /* kills and restarts of the server */

/* ============================================================ server */

static struct rr_svc *child_svc;

static void on_term(int sig)
{
	(void)sig;
	if (child_svc)
		rr_svc_stop(child_svc);
}

/* --serve PORT FD: serves the shapes program until SIGTERM. */
static void server_child(uint16_t want_port, int out_fd)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(want_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_opts o = {.provider = getenv("RR_PROVIDER"),
				.max_bulk = SHAPES_MAX_BULK};
	struct sigaction sa = {.sa_handler = on_term};
	struct rr_xprt_stats st;
	struct rr_svc *s;
	uint16_t port = 0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	rc = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &o, &s);
	if (!rc)
		rc = rr_svc_register(s, &shapes_prog);
	if (!rc)
		rc = rr_svc_port(s, &port);
	if (rc) {
		fprintf(stderr, "server: setup failed: %d\n", rc);
		_exit(5);
	}
	child_svc = s;
	sigaction(SIGTERM, &sa, NULL);
	rr_t_write_or_exit(out_fd, &port, sizeof(port));
	rc = rr_svc_run(s);
	rr_svc_shutdown(s);
	rr_svc_stats(s, &st);
	rr_t_write_or_exit(out_fd, &st, sizeof(st));
	child_svc = NULL;
	if (rr_svc_destroy(s))
		_exit(6);
	exit(rc ? 7 : 0);
}

struct server {
	pid_t pid;
	int fd;
	uint16_t port;
};

/*
 * A server in a fresh process image: this process has the client's
 * threads, so its child execs before starting threads of its own.
 */
static void server_exec(struct server *sv, uint16_t port)
{
	char a_port[8], a_fd[8];
	int p[2];

	assert_int_equal(pipe(p), 0);
	sv->pid = fork();
	assert_true(sv->pid >= 0);
	if (sv->pid == 0) {
		close(p[0]);
		snprintf(a_port, sizeof(a_port), "%u", port);
		snprintf(a_fd, sizeof(a_fd), "%d", p[1]);
		execl("/proc/self/exe", "no_fresh_memory", "--serve", a_port,
		      a_fd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	sv->fd = p[0];
	if (!rr_t_read_within(sv->fd, &sv->port, sizeof(sv->port),
			      CHILD_TMO_MS)) {
		kill(sv->pid, SIGKILL);
		waitpid(sv->pid, NULL, 0);
		fail_msg("server child sent no port");
	}
}

static void server_kill(struct server *sv)
{
	int status;

	assert_int_equal(kill(sv->pid, SIGKILL), 0);
	assert_int_equal(waitpid(sv->pid, &status, 0), sv->pid);
	close(sv->fd);
	sv->pid = 0;
}

static void server_freeze(struct server *sv)
{
	int status;

	assert_int_equal(kill(sv->pid, SIGSTOP), 0);
	assert_int_equal(waitpid(sv->pid, &status, WUNTRACED), sv->pid);
	assert_true(WIFSTOPPED(status));
}

/* SIGTERM; its stats must show every connection drained. */
static void server_stop(struct server *sv)
{
	struct rr_xprt_stats st;
	int status;
	bool got;

	kill(sv->pid, SIGTERM);
	got = rr_t_read_within(sv->fd, &st, sizeof(st), CHILD_TMO_MS);
	if (!got)
		kill(sv->pid, SIGKILL);
	waitpid(sv->pid, &status, 0);
	close(sv->fd);
	assert_true(got);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(st.teardown_unbalanced, 0);
}

/* ============================================================ client */

/* Calls in flight when the server dies: one of each shape with a chunk. */
enum { F_INLINE, F_READ_CHUNK, F_WRITE_CHUNK, F_REPLY_CHUNK, F_N };

struct flight {
	pthread_mutex_t mu;
	uint32_t ndone;
	int rc[F_N];
	uint32_t count[F_N];
	struct rr_call call[F_N];
	uint8_t args[F_N][16];
	uint8_t echo[256];
	uint8_t res[F_N][SHAPES_BIG + 64];
};

static void flight_done(struct rr_call *call, int rc, void *arg)
{
	struct flight *f = arg;
	uint32_t i = (uint32_t)(call - f->call);

	pthread_mutex_lock(&f->mu);
	f->rc[i] = rc;
	f->count[i]++;
	f->ndone++;
	pthread_mutex_unlock(&f->mu);
}

static uint32_t flight_ndone(struct flight *f)
{
	uint32_t n;

	pthread_mutex_lock(&f->mu);
	n = f->ndone;
	pthread_mutex_unlock(&f->mu);
	return n;
}

/* Issues the calls; data of the chunks is in the registered memory. */
static void flight_start(struct rr_clnt *c, struct flight *f,
			 struct shapes_mem *m, uint32_t seed)
{
	struct rr_call *k = f->call;

	memset(f->count, 0, sizeof(f->count));
	f->ndone = 0;
	k[F_INLINE] = shapes_call(SP_ECHO, f->res[F_INLINE], 256);
	shapes_fill(f->echo, sizeof(f->echo), seed);
	k[F_INLINE].args = f->echo;
	k[F_INLINE].args_len = sizeof(f->echo);
	k[F_READ_CHUNK] = shapes_call(SP_WRITE, f->res[F_READ_CHUNK], 8);
	shapes_fill(m->reg, SHAPES_BULK, seed + 1);
	shapes_put32(f->args[F_READ_CHUNK], SHAPES_BULK);
	k[F_READ_CHUNK].args = f->args[F_READ_CHUNK];
	k[F_READ_CHUNK].args_len = 4;
	k[F_READ_CHUNK].arg_bulk = m->reg;
	k[F_READ_CHUNK].arg_bulk_len = SHAPES_BULK;
	k[F_WRITE_CHUNK] = shapes_call(SP_READ, f->res[F_WRITE_CHUNK], 8);
	shapes_put32(f->args[F_WRITE_CHUNK], seed + 2);
	shapes_put32(f->args[F_WRITE_CHUNK] + 4, SHAPES_BULK);
	k[F_WRITE_CHUNK].args = f->args[F_WRITE_CHUNK];
	k[F_WRITE_CHUNK].args_len = 8;
	k[F_WRITE_CHUNK].res_bulk = m->reg + SHAPES_BULK;
	k[F_WRITE_CHUNK].res_bulk_cap = SHAPES_BULK;
	memset(m->reg + SHAPES_BULK, 0, SHAPES_BULK);
	k[F_REPLY_CHUNK] =
		shapes_call(SP_BIG, f->res[F_REPLY_CHUNK], SHAPES_BIG + 64);
	shapes_put32(f->args[F_REPLY_CHUNK], seed + 3);
	shapes_put32(f->args[F_REPLY_CHUNK] + 4, SHAPES_BIG);
	k[F_REPLY_CHUNK].args = f->args[F_REPLY_CHUNK];
	k[F_REPLY_CHUNK].args_len = 8;
	for (int i = 0; i < F_N; i++)
		assert_int_equal(rr_clnt_call_async(c, &k[i], flight_done, f),
				 0);
}

static void flight_wait(struct rr_clnt *c, struct flight *f)
{
	uint64_t end = rr_t_now_ms() + CALL_TMO_MS;
	uint32_t n;

	while ((n = flight_ndone(f)) < F_N) {
		int rc;

		if (rr_t_now_ms() >= end)
			fail_msg("%u of %u calls in flight completed in %d ms",
				 n, F_N, CALL_TMO_MS);
		rc = rr_clnt_progress(c, 100);
		if (rc && rc != -ETIMEDOUT)
			fail_msg("rr_clnt_progress: %d", rc);
	}
}

/* Each call completed once, successfully, with the right bytes. */
static void flight_check(struct flight *f, struct shapes_mem *m, uint32_t seed)
{
	struct rr_call *k = f->call;

	for (int i = 0; i < F_N; i++) {
		assert_int_equal(f->count[i], 1);
		if (f->rc[i] || k[i].accept_stat != RR_SUCCESS)
			fail_msg("call %d in flight: rc %d, accept_stat %u", i,
				 f->rc[i], k[i].accept_stat);
	}
	assert_int_equal(k[F_INLINE].res_len, sizeof(f->echo));
	assert_memory_equal(f->res[F_INLINE], f->echo, sizeof(f->echo));
	assert_int_equal(shapes_get32(f->res[F_READ_CHUNK] + 4),
			 shapes_fnv(m->reg, SHAPES_BULK));
	assert_int_equal(k[F_WRITE_CHUNK].res_bulk_len, SHAPES_BULK);
	assert_true(shapes_check(m->reg + SHAPES_BULK, SHAPES_BULK, seed + 2));
	assert_int_equal(k[F_REPLY_CHUNK].res_len, 4 + SHAPES_BIG);
	assert_true(
		shapes_check(f->res[F_REPLY_CHUNK] + 4, SHAPES_BIG, seed + 3));
}

static void round_ok(struct rr_clnt *c, struct shapes_mem *m, uint32_t seed)
{
	struct shapes_result r;

	if (shapes_round(c, m, seed, true, &r))
		fail_msg("%s call: %d", r.shape, r.rc);
}

static void print_alloc(const char *when)
{
	struct rr_alloc_inject_stats a;
	struct rr_alloc_site_info si;

	rr_alloc_inject_stats(&a);
	print_message("allocations %s: %llu attempted, %llu failed, at %u "
		      "sites\n",
		      when, (unsigned long long)a.attempts,
		      (unsigned long long)a.failed, a.nsites);
	for (uint32_t i = 0; rr_alloc_inject_site(i, &si) == 0; i++)
		print_message("  %s:%d: %llu attempted\n", si.file, si.line,
			      (unsigned long long)si.attempts);
}

static void print_client(struct rr_clnt *c)
{
	struct rr_xprt_stats st;

	rr_clnt_stats(c, &st);
	print_message(
		"client: calls %llu conn_lost %llu connects %llu "
		"retransmits %llu regs %llu local_invs %llu remote_invs "
		"%llu stale_cqes %llu teardown_unbalanced %llu\n",
		(unsigned long long)st.calls, (unsigned long long)st.conn_lost,
		(unsigned long long)st.connects,
		(unsigned long long)st.retransmits, (unsigned long long)st.regs,
		(unsigned long long)st.local_invs,
		(unsigned long long)st.remote_invs,
		(unsigned long long)st.stale_cqes,
		(unsigned long long)st.teardown_unbalanced);
}

/*
 * Kill the server with calls of every chunk shape in flight (their
 * windows bound), start it again: the client reconnects on its reserve
 * and the calls complete, then a round of every shape.
 */
static void kill_and_restart(struct rr_clnt *c, struct server *sv,
			     struct shapes_mem *m, struct flight *f,
			     uint32_t seed)
{
	uint16_t port = sv->port;

	server_freeze(sv);
	flight_start(c, f, m, seed);
	server_kill(sv);
	server_exec(sv, port);
	flight_wait(c, f);
	flight_check(f, m, seed);
	round_ok(c, m, seed + 100);
}

static void
a_client_reconnects_and_calls_while_every_allocation_fails(void **state)
{
	struct rr_clnt_opts o = {.provider = getenv("RR_PROVIDER"),
				 .credits = 16,
				 .max_bulk = SHAPES_MAX_BULK,
				 .bounce_bufs = 4,
				 .timeout_ms = CALL_TMO_MS,
				 .reconnect_max_ms = 100};
	const struct rr_fault_plan plan = {.seed = 4,
					   .delay_send_cqe_ppm = 300000,
					   .reorder_ppm = 300000,
					   .guard_sends = true};
	const struct rr_device_opts dopts = {.faults = &plan};
	const char *active = getenv("RR_TEST_FAULT_PLAN");
	struct shapes_mem *m = calloc(1, sizeof(*m));
	struct flight *f = calloc(1, sizeof(*f));
	struct rr_alloc_inject_stats a;
	struct rr_fault_stats fs;
	struct rr_xprt_stats st;
	struct server sv;
	struct rr_clnt *c;

	(void)state;
	assert_non_null(m);
	assert_non_null(f);
	if (active && *active == '1')
		o.dev_opts = &dopts;
	pthread_mutex_init(&f->mu, NULL);
	server_exec(&sv, 0);
	assert_int_equal(rr_clnt_create("127.0.0.1", sv.port, &o, &c), 0);
	assert_int_equal(rr_clnt_mem_reg(c, m->reg, sizeof(m->reg)), 0);
	m->reg_ok = true;
	round_ok(c, m, 1);

	rr_alloc_inject_fail_all();
	round_ok(c, m, 2);
	rr_alloc_inject_stats(&a);
	if (a.attempts)
		print_alloc("by calls of every shape");
	assert_int_equal(a.attempts,
			 0); /* the steady state allocates nothing */
	for (uint32_t i = 0; i < CYCLES; i++)
		kill_and_restart(c, &sv, m, f, 1000 * (i + 1));
	rr_alloc_inject_off();

	print_alloc("while armed (every one fails)");
	print_client(c);
	rr_clnt_stats(c, &st);
	assert_int_equal(st.conn_lost, CYCLES);
	assert_true(st.connects >= 1 + CYCLES);
	assert_true(st.retransmits >= 1);
	assert_int_equal(st.stale_cqes + st.unknown_cqes + st.bad_xids, 0);
	rr_alloc_inject_stats(&a);
	assert_int_equal(a.failed, a.attempts);
	assert_int_equal(a.attempts, 0); /* the reconnects allocate nothing */
	if (o.dev_opts) {
		assert_int_equal(rr_faults_stats(rr_clnt_device(c), &fs), 0);
		print_message("faults: send cqes delayed %llu, batches "
			      "reordered %llu, send buffers modified %llu\n",
			      (unsigned long long)fs.send_cqes_delayed,
			      (unsigned long long)fs.batches_reordered,
			      (unsigned long long)fs.send_bufs_modified);
		assert_int_equal(fs.send_bufs_modified, 0);
	}

	assert_int_equal(rr_clnt_shutdown(c), 0);
	rr_clnt_stats(c, &st);
	assert_int_equal(st.teardown_unbalanced, 0);
	assert_int_equal(rr_clnt_destroy(c), 0);
	server_stop(&sv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	free(m);
}

/*
 * A listener on PORT that never accepts, so a handshake to it never ends.
 * It must be the provider's own kind of listener: shm's is an abstract
 * Unix socket, and a TCP listener on a port number shm picked at random
 * could collide with any TCP socket of a parallel test.
 */
static int mute_listener(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const char *provider = getenv("RR_PROVIDER");
	struct sockaddr_storage bound;
	int one = 1, fd;

	if (provider && !strcmp(provider, "shm")) {
		assert_int_equal(rr__shm_listen_socket((struct sockaddr *)&sin,
						       sizeof(sin), 4, &fd,
						       &bound),
				 0);
		return fd;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

/*
 * The client is shut down while it reconnects (the handshake hangs): its
 * QP, in use but not in ERROR yet, must be drained at once and balance,
 * without memory as before.
 */
static void shutdown_during_a_reconnect_drains_at_once(void **state)
{
	struct rr_clnt_opts o = {.provider = getenv("RR_PROVIDER"),
				 .credits = 4,
				 .max_bulk = SHAPES_MAX_BULK,
				 .timeout_ms = CALL_TMO_MS};
	struct shapes_mem *m = calloc(1, sizeof(*m));
	struct flight *f = calloc(1, sizeof(*f));
	struct rr_alloc_inject_stats a;
	struct rr_xprt_stats st;
	struct server sv;
	struct rr_clnt *c;
	uint64_t t0, end = rr_t_now_ms() + CALL_TMO_MS;
	int mute;

	(void)state;
	assert_non_null(m);
	assert_non_null(f);
	pthread_mutex_init(&f->mu, NULL);
	server_exec(&sv, 0);
	assert_int_equal(rr_clnt_create("127.0.0.1", sv.port, &o, &c), 0);
	round_ok(c, m, 7);
	rr_alloc_inject_fail_all();
	server_kill(&sv);
	mute = mute_listener(sv.port);
	flight_start(c, f, m, 70); /* calls that want a connection */
	do {
		assert_true(rr_t_now_ms() < end);
		rr_clnt_progress(c, 50);
		rr_clnt_stats(c, &st);
	} while (st.connects < 2 || st.conn_lost < 1);
	t0 = rr_t_now_ms();
	assert_int_equal(rr_clnt_shutdown(c), 0);
	print_message("shutdown while connecting took %llu ms\n",
		      (unsigned long long)(rr_t_now_ms() - t0));
	rr_alloc_inject_off();
	rr_clnt_stats(c, &st);
	assert_int_equal(st.teardown_unbalanced, 0);
	assert_int_equal(flight_ndone(f), F_N);
	for (int i = 0; i < F_N; i++)
		assert_int_equal(f->rc[i], -ECANCELED);
	rr_alloc_inject_stats(&a);
	assert_int_equal(a.attempts, 0);
	assert_int_equal(rr_clnt_destroy(c), 0);
	close(mute);
	pthread_mutex_destroy(&f->mu);
	free(f);
	free(m);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(
			a_client_reconnects_and_calls_while_every_allocation_fails,
			CASE_S, NULL, NULL),
		RR_T_LIMITED(shutdown_during_a_reconnect_drains_at_once, CASE_S,
			     NULL, NULL),
	};

	if (argc == 4 && !strcmp(argv[1], "--serve"))
		server_child((uint16_t)atoi(argv[2]), atoi(argv[3]));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
