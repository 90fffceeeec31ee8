/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One server, many clients (issue 4): a server process and NCLIENTS client
 * processes, each calling with checksummed payloads of mixed sizes for a
 * few seconds: small ECHOs (inline both ways), large ECHOs (the call as
 * RDMA_NOMSG with a position-zero read chunk, the reply by reply chunk),
 * WRITEs (data by read chunk, checked by the server's FNV-1a) and READs
 * (data by write chunk, checked byte for byte here).
 *
 * One client, the victim, is SIGKILLed while it is inside a call: it
 * loops on 1 MiB READs and WRITEs and tells us once it has begun, so it is
 * (all but) always inside one when the signal lands. Every other client's
 * calls must all succeed with correct data, and the server's peak resident
 * size (VmHWM of /proc/PID/status, printed with VmRSS) must stay within
 * 512 MiB. The server's counters must balance at shutdown: one lost
 * connection per client, none torn down undrained.
 *
 * Synchronisation is by pipes: clients report "connected", start together
 * when the go pipe closes, and send their results on a pipe of their own.
 * The run is done twice: handlers inline in the server loop, and in a
 * worker pool.
 */
#include "hc_server.h"

#include <rpcrdma/rpc.h>

#include "limit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CASE_S 120 /* each case's time limit (limit.h) */

#define NCLIENTS      32
#define RUN_MS	      3000 /* each client's calls, after the start */
#define MIN_CALLS     8	   /* and at least this many, however slow */
#define CALL_TMO_MS   20000
#define RESULT_TMO_MS 90000
#define BIG_ECHO      (16u << 10)
#define MAX_IO	      (256u << 10)
#define VICTIM_IO     (1u << 20)
#define RSS_LIMIT_KIB (512ul << 10)

struct result {
	uint32_t calls;
	uint32_t bad; /* wrong data or a failed call */
	int first_rc;
	uint32_t first_bad_call;
	uint64_t bytes;
};

struct bufs {
	uint8_t *args, *res, *bulk;
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static int echo(struct rr_clnt *c, struct bufs *b, uint32_t len, uint32_t seed)
{
	struct rr_call call = {.prog = HC_PROG,
			       .vers = HC_VERS,
			       .proc = HC_ECHO,
			       .args = b->args,
			       .args_len = len,
			       .res = b->res,
			       .res_cap = BIG_ECHO,
			       .timeout_ms = CALL_TMO_MS};
	int rc;

	for (uint32_t i = 0; i < len; i++)
		b->args[i] = (uint8_t)(rr_t_pat(i + seed) ^ seed);
	memset(b->res, 0, len);
	rc = rr_clnt_call(c, &call);
	if (rc)
		return rc;
	return call.res_len == len && !memcmp(b->args, b->res, len) ? 0
								    : -EBADMSG;
}

static int do_write(struct rr_clnt *c, struct bufs *b, uint32_t len,
		    uint32_t seed)
{
	uint8_t args[4], res[8];
	struct rr_call call = {.prog = HC_PROG,
			       .vers = HC_VERS,
			       .proc = HC_WRITE,
			       .args = args,
			       .args_len = 4,
			       .arg_bulk = b->bulk,
			       .arg_bulk_len = len,
			       .res = res,
			       .res_cap = sizeof(res),
			       .timeout_ms = CALL_TMO_MS};
	int rc;

	for (uint32_t i = 0; i < len; i++)
		b->bulk[i] = (uint8_t)(rr_t_pat(i * 3 + seed) + seed);
	rr_t_put32(args, len);
	rc = rr_clnt_call(c, &call);
	if (rc)
		return rc;
	return call.res_len == 8 && rr_t_get32(res) == len &&
			       rr_t_get32(res + 4) == rr_t_fnv1a(b->bulk, len)
		       ? 0
		       : -EBADMSG;
}

static int do_read(struct rr_clnt *c, struct bufs *b, uint32_t len)
{
	uint8_t args[4], res[8];
	struct rr_call call = {.prog = HC_PROG,
			       .vers = HC_VERS,
			       .proc = HC_READ,
			       .args = args,
			       .args_len = 4,
			       .res = res,
			       .res_cap = sizeof(res),
			       .res_bulk = b->bulk,
			       .res_bulk_cap = len,
			       .timeout_ms = CALL_TMO_MS};
	int rc;

	rr_t_put32(args, len);
	memset(b->bulk, 0, len);
	rc = rr_clnt_call(c, &call);
	if (rc)
		return rc;
	if (call.res_len != 4 || rr_t_get32(res) != len ||
	    call.res_bulk_len != len)
		return -EBADMSG;
	for (uint32_t i = 0; i < len; i++)
		if (b->bulk[i] != rr_t_pat(i))
			return -EBADMSG;
	return 0;
}

/* One call of kind n % 4, of a random size for that kind. */
static int one_call(struct rr_clnt *c, struct bufs *b, uint32_t n,
		    uint32_t *seed, uint64_t *bytes)
{
	uint32_t r = rnd(seed), len;

	switch (n % 4) {
	case 0:
		len = r % 2048;
		*bytes += len;
		return echo(c, b, len, r);
	case 1:
		len = 8192 + r % (BIG_ECHO - 8192 + 1);
		*bytes += len;
		return echo(c, b, len, r);
	case 2:
		len = 1 + r % MAX_IO;
		*bytes += len;
		return do_write(c, b, len, r);
	default:
		len = 1 + r % MAX_IO;
		*bytes += len;
		return do_read(c, b, len);
	}
}

struct client_fds {
	int ready_w; /* one byte: connected */
	int go_r;    /* EOF: start */
	int out_w;   /* the result; for the victim, one byte: calling */
};

/* Waits for the go pipe to close (bounded). */
static bool wait_go(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char c;

	return poll(&pfd, 1, HC_WAIT_MS) == 1 && read(fd, &c, 1) == 0;
}

static void victim_loop(struct rr_clnt *c, struct bufs *b, int out)
{
	char r = 'r';

	if (do_read(c, b, VICTIM_IO) || !rr_t_write_all(out, &r, 1))
		_exit(20);
	for (uint32_t n = 0;; n++) {
		if (n & 1)
			do_read(c, b, VICTIM_IO);
		else
			do_write(c, b, VICTIM_IO, n);
	}
}

static void client_child(uint16_t port, uint32_t id, bool victim,
			 const struct client_fds *f)
{
	struct rr_clnt_opts o = {.connect_timeout_ms = HC_WAIT_MS};
	struct result res = {0};
	struct bufs b = {malloc(BIG_ECHO), malloc(BIG_ECHO), malloc(VICTIM_IO)};
	uint32_t seed = 0x9e3779b9u * (id + 1);
	struct rr_clnt *c;
	uint64_t end;
	char one = 'c';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (!b.args || !b.res || !b.bulk)
		_exit(10);
	if (rr_clnt_create("127.0.0.1", port, &o, &c))
		_exit(11);
	if (!rr_t_write_all(f->ready_w, &one, 1) || !wait_go(f->go_r))
		_exit(12);
	if (victim)
		victim_loop(c, &b, f->out_w);
	end = rr_t_now_us() + (uint64_t)RUN_MS * 1000;
	for (uint32_t n = 0; n < MIN_CALLS || rr_t_now_us() < end; n++) {
		int rc = one_call(c, &b, n + id, &seed, &res.bytes);

		res.calls++;
		if (rc && !res.bad++) {
			res.first_rc = rc;
			res.first_bad_call = n;
		}
	}
	rr_clnt_destroy(c);
	if (!rr_t_write_all(f->out_w, &res, sizeof(res)))
		_exit(13);
	_exit(0);
}

struct child {
	pid_t pid;
	int out_r;
};

static void spawn_clients(struct child *ch, uint16_t port, int ready_w,
			  int go_r, int go_w, int ready_r)
{
	for (uint32_t i = 0; i < NCLIENTS; i++) {
		int out[2];

		assert_int_equal(pipe(out), 0);
		ch[i].pid = fork();
		assert_true(ch[i].pid >= 0);
		if (ch[i].pid == 0) {
			struct client_fds f = {ready_w, go_r, out[1]};

			close(go_w);
			close(ready_r);
			close(out[0]);
			for (uint32_t j = 0; j < i; j++)
				close(ch[j].out_r);
			client_child(port, i, i == 0, &f);
		}
		close(out[1]);
		ch[i].out_r = out[0];
	}
}

static void print_rss(pid_t pid, const char *when)
{
	printf("server %s: VmRSS %lu KiB, VmHWM %lu KiB\n", when,
	       hc_proc_kib(pid, "VmRSS"), hc_proc_kib(pid, "VmHWM"));
}

static void run(uint32_t threads)
{
	struct rr_svc_opts o = {.max_conns = NCLIENTS + 4, .threads = threads};
	struct child ch[NCLIENTS];
	struct rr_xprt_stats st;
	struct hc_server sv;
	int ready[2], go[2], status;
	uint64_t calls = 0, bytes = 0;
	unsigned long hwm;
	char c;

	assert_int_equal(hc_server_start(&sv, &o), 0);
	print_rss(sv.pid, "at start");
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	spawn_clients(ch, sv.port, ready[1], go[0], go[1], ready[0]);
	close(ready[1]);
	close(go[0]);
	for (int i = 0; i < NCLIENTS; i++)
		assert_true(rr_t_read_within(ready[0], &c, 1, HC_WAIT_MS));
	print_rss(sv.pid, "with all clients connected");
	close(go[1]); /* everyone starts */
	/* The victim is inside its calls: kill it there. */
	assert_true(rr_t_read_within(ch[0].out_r, &c, 1, HC_WAIT_MS));
	assert_int_equal(kill(ch[0].pid, SIGKILL), 0);
	assert_int_equal(waitpid(ch[0].pid, &status, 0), ch[0].pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	for (int i = 1; i < NCLIENTS; i++) {
		struct result r;

		if (!rr_t_read_within(ch[i].out_r, &r, sizeof(r),
				      RESULT_TMO_MS))
			fail_msg("client %d sent no result", i);
		if (r.bad)
			fail_msg("client %d: %u of %u calls failed, first "
				 "(call %u) rc %d",
				 i, r.bad, r.calls, r.first_bad_call,
				 r.first_rc);
		assert_int_equal(waitpid(ch[i].pid, &status, 0), ch[i].pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		calls += r.calls;
		bytes += r.bytes;
		close(ch[i].out_r);
	}
	close(ch[0].out_r);
	close(ready[0]);
	hwm = hc_proc_kib(sv.pid, "VmHWM");
	print_rss(sv.pid, "after the run");
	printf("%d clients (handlers %s): %llu calls, %llu payload bytes, all "
	       "correct; client 0 killed mid-call\n",
	       NCLIENTS - 1, threads ? "in a pool" : "inline",
	       (unsigned long long)calls, (unsigned long long)bytes);
	assert_true(hwm > 0 && hwm <= RSS_LIMIT_KIB);
	assert_int_equal(hc_server_stop(&sv, &st), 0);
	assert_true(st.calls >= calls);
	assert_int_equal(st.conn_lost, NCLIENTS);
	assert_int_equal(st.teardown_unbalanced, 0);
}

static void one_killed_mid_call_others_unharmed(void **state)
{
	(void)state;
	run(0);
}

static void same_with_a_worker_pool(void **state)
{
	(void)state;
	run(2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		RR_T_LIMITED(one_killed_mid_call_others_unharmed, CASE_S, NULL,
			     NULL),
		RR_T_LIMITED(same_with_a_worker_pool, CASE_S, NULL, NULL),
	};

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
