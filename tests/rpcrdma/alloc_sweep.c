/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation-failure sweep (DESIGN.md invariant 6, issue 4).
 *
 * A scenario runs in one process: a server and a client (iwarp, or
 * RR_PROVIDER) on 127.0.0.1, a call of every shape (tests/rpcrdma/
 * shapes.h), a forced reconnect, another call of every shape, shutdown of
 * both. It runs once with the injector counting (K allocation attempts at
 * S sites), then once for each N in 1..K with the Nth attempt failing,
 * then once for each site no run has failed yet (its first attempt
 * failing), so that every site of the scenario, and every site the error
 * paths reached, has been made to fail at least once.
 *
 * Each run is a child forked from this process, which never starts a
 * thread, so the fork copies no locks held by others. A run passes when
 * it ends, within RUN_TMO_MS, by exiting 0: whatever failed was reported
 * as an error and unwound, no call returned wrong bytes, both sides'
 * counters balance (teardown_unbalanced, unknown completions), and under
 * ASan LeakSanitizer found no leak at its exit (a leak makes the exit
 * status non-zero, as does a sanitizer report of any kind).
 *
 * The sweep fails when a run fails, or when fewer sites were made to fail
 * than the counting run attempted. It prints the runs, the sites and what
 * the failures led to. A run's stderr is kept and printed when it fails.
 */
#include "shapes.h"

#include <rpcrdma/alloc_inject.h>
#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_TMO_MS  60000 /* one run; a slow ASan run takes a second */
#define CALL_TMO_MS 5000
#define MAX_SITES   RR_ALLOC_INJECT_MAX_SITES
#define FILE_LEN    256

/* ------------------------------------------------- child -> parent */

struct site_rec {
	char file[FILE_LEN];
	int32_t line;
	uint64_t attempts;
	uint64_t failed;
};

enum fatal {
	F_BYTES = 1,	   /* a call succeeded with wrong bytes */
	F_UNBALANCED = 2,  /* a connection torn down undrained */
	F_UNKNOWN_CQE = 4, /* a completion no one issued */
	F_BAD_INV = 8,	   /* Send With Invalidate of a wrong key accepted */
};

struct report {
	int32_t first_rc; /* the first error the scenario saw, 0: none */
	char first_what[64];
	uint32_t fatal; /* enum fatal bits */
	uint64_t attempts, failed;
	uint32_t nsites;
	uint64_t calls_ok, reconnects;
	uint64_t round_attempts; /* during the first round of calls */
};

enum mode { M_COUNT, M_NTH, M_SITE };

struct run_arg {
	enum mode mode;
	uint64_t n;		     /* M_NTH: the attempt; M_SITE: the hit */
	const struct site_rec *site; /* M_SITE */
};

/* ------------------------------------------------------ the scenario */

/*
 * RR_PROVIDER=faults with RR_TEST_FAULT_PLAN=1: both sides' wrappers are
 * active (held Send completions, shuffled batches, the send-buffer guard),
 * so their rings and guard are among the sites swept.
 */
static const struct rr_fault_plan plan = {.seed = 9,
					  .delay_send_cqe_ppm = 300000,
					  .reorder_ppm = 300000,
					  .guard_sends = true};
static const struct rr_device_opts plan_opts = {.faults = &plan};

static const struct rr_device_opts *dev_opts(void)
{
	const char *p = getenv("RR_TEST_FAULT_PLAN");

	return p && *p == '1' ? &plan_opts : NULL;
}

static void note(struct report *r, const char *what, int rc)
{
	if (!rc || r->first_rc)
		return;
	r->first_rc = rc;
	snprintf(r->first_what, sizeof(r->first_what), "%s", what);
}

static void *svc_main(void *arg)
{
	rr_svc_run(arg);
	return NULL;
}

static void calls(struct rr_clnt *c, struct shapes_mem *m, uint32_t seed,
		  struct report *r)
{
	struct shapes_result res;

	shapes_round(c, m, seed, true, &res);
	if (res.rc == -EBADMSG)
		r->fatal |= F_BYTES;
	note(r, res.shape ? res.shape : "", res.rc);
}

static void check_stats(const struct rr_xprt_stats *st, bool client,
			struct report *r)
{
	if (st->teardown_unbalanced)
		r->fatal |= F_UNBALANCED;
	if (client && st->unknown_cqes)
		r->fatal |= F_UNKNOWN_CQE;
	if (client && st->bad_remote_invs)
		r->fatal |= F_BAD_INV;
	if (client) {
		r->calls_ok = st->calls;
		r->reconnects = st->connects ? st->connects - 1 : 0;
	}
}

static void client_part(uint16_t port, struct shapes_mem *m, struct report *r)
{
	struct rr_clnt_opts o = {.provider = getenv("RR_PROVIDER"),
				 .dev_opts = dev_opts(),
				 .credits = 4,
				 .max_bulk = SHAPES_MAX_BULK,
				 .bounce_bufs = 2,
				 .timeout_ms = CALL_TMO_MS,
				 .connect_timeout_ms = CALL_TMO_MS,
				 .reconnect_max_ms = 100};
	struct rr_alloc_inject_stats before, after;
	struct rr_xprt_stats st;
	struct rr_clnt *c;
	int rc = rr_clnt_create("127.0.0.1", port, &o, &c);

	note(r, "client create", rc);
	if (rc)
		return;
	rc = rr_clnt_mem_reg(c, m->reg, sizeof(m->reg));
	note(r, "client memory registration", rc);
	m->reg_ok = rc == 0;
	/* Both sides' steady state: a round of calls allocates nothing. */
	rr_alloc_inject_stats(&before);
	calls(c, m, 1, r);
	rr_alloc_inject_stats(&after);
	r->round_attempts = after.attempts - before.attempts;
	note(r, "forced disconnect", rr_clnt_disconnect(c));
	calls(c, m, 2, r);
	if (m->reg_ok)
		note(r, "client memory unregistration",
		     rr_clnt_mem_unreg(c, m->reg));
	note(r, "client shutdown", rr_clnt_shutdown(c));
	rr_clnt_stats(c, &st);
	check_stats(&st, true, r);
	note(r, "client destroy", rr_clnt_destroy(c));
}

static void scenario(struct report *r)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_opts so = {.provider = getenv("RR_PROVIDER"),
				 .dev_opts = dev_opts(),
				 .credits = 8,
				 .max_bulk = SHAPES_MAX_BULK,
				 .max_conns = 4,
				 .threads = 1,
				 .drc_entries = 64};
	struct shapes_mem *m = calloc(1, sizeof(*m));
	struct rr_xprt_stats st;
	struct rr_svc *s;
	pthread_t loop;
	uint16_t port;
	int rc;

	if (!m)
		exit(2);
	rc = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &so, &s);
	note(r, "server create", rc);
	if (rc) {
		free(m);
		return;
	}
	rc = rr_svc_register(s, &shapes_prog);
	if (!rc)
		rc = rr_svc_port(s, &port);
	note(r, "server register", rc);
	if (!rc && pthread_create(&loop, NULL, svc_main, s) == 0) {
		client_part(port, m, r);
		rr_svc_stop(s);
		pthread_join(loop, NULL);
	}
	note(r, "server shutdown", rr_svc_shutdown(s));
	rr_svc_stats(s, &st);
	check_stats(&st, false, r);
	note(r, "server destroy", rr_svc_destroy(s));
	free(m);
}

static void write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t n = write(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(9);
		c += n;
		len -= (size_t)n;
	}
}

static void arm(const struct run_arg *a)
{
	if (a->mode == M_COUNT)
		rr_alloc_inject_count();
	else if (a->mode == M_NTH)
		rr_alloc_inject_fail_nth(a->n);
	else
		rr_alloc_inject_fail_site(a->site->file, a->site->line, a->n);
}

/* The child: runs the scenario armed, reports, exits (LSan checks then). */
static void child(const struct run_arg *a, int out_fd, int err_fd)
{
	struct report r = {0};
	struct rr_alloc_inject_stats as;
	struct rr_alloc_site_info si;

	dup2(err_fd, STDERR_FILENO);
	dup2(err_fd, STDOUT_FILENO);
	arm(a);
	scenario(&r);
	rr_alloc_inject_off();
	rr_alloc_inject_stats(&as);
	r.attempts = as.attempts;
	r.failed = as.failed;
	r.nsites = as.nsites;
	write_all(out_fd, &r, sizeof(r));
	for (uint32_t i = 0; rr_alloc_inject_site(i, &si) == 0; i++) {
		struct site_rec s = {.line = si.line,
				     .attempts = si.attempts,
				     .failed = si.failed};

		snprintf(s.file, sizeof(s.file), "%s", si.file);
		write_all(out_fd, &s, sizeof(s));
	}
	close(out_fd);
	exit(r.fatal ? 3 : 0);
}

/* ------------------------------------------------------------ parent */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Reads len bytes before the deadline; false on EOF or time out. */
static bool read_by(int fd, void *p, size_t len, uint64_t deadline)
{
	char *c = p;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)(deadline - now_ms());
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return false;
		n = read(fd, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		c += n;
		len -= (size_t)n;
	}
	return true;
}

struct run {
	struct report r;
	struct site_rec *sites; /* r.nsites, caller frees */
	bool ok;
	char why[128];
};

static void dump_stderr(int fd)
{
	char buf[4096];
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	fprintf(stderr, "---- the run's output:\n");
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stderr);
	fprintf(stderr, "----\n");
}

static void run_once(const struct run_arg *a, struct run *out)
{
	uint64_t deadline = now_ms() + RUN_TMO_MS;
	int p[2], err = memfd_create("alloc-sweep-run", 0), status = 0;
	bool got;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	if (err < 0 || pipe(p)) {
		perror("alloc_sweep: pipe/memfd");
		exit(1);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("alloc_sweep: fork");
		exit(1);
	}
	if (pid == 0) {
		close(p[0]);
		child(a, p[1], err);
	}
	close(p[1]);
	got = read_by(p[0], &out->r, sizeof(out->r), deadline);
	if (got && out->r.nsites <= MAX_SITES) {
		out->sites = calloc(out->r.nsites + 1, sizeof(*out->sites));
		got = out->sites &&
		      read_by(p[0], out->sites,
			      out->r.nsites * sizeof(*out->sites), deadline);
	}
	if (!got)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(p[0]);
	out->ok = got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!got && WIFEXITED(status) && WEXITSTATUS(status))
		snprintf(out->why, sizeof(out->why),
			 "exited %d before reporting", WEXITSTATUS(status));
	else if (!got && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		snprintf(out->why, sizeof(out->why), "killed by signal %d",
			 WTERMSIG(status));
	else if (!got)
		snprintf(out->why, sizeof(out->why),
			 "no report in %d ms (hung)", RUN_TMO_MS);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		snprintf(out->why, sizeof(out->why),
			 "invariant broken (fatal bits %#x)", out->r.fatal);
	else if (!out->ok)
		snprintf(out->why, sizeof(out->why),
			 "exit status %#x after its report (a leak or a "
			 "sanitizer report)",
			 status);
	if (!out->ok)
		dump_stderr(err);
	close(err);
}

/* ------------------------------------------------------- bookkeeping */

struct site_set {
	struct site_rec s[MAX_SITES];
	bool covered[MAX_SITES]; /* made to fail in some run */
	uint32_t n;
};

static const char *short_name(const char *file)
{
	const char *p = strstr(file, "/src/");

	return p ? p + 1 : file;
}

static int find(const struct site_set *set, const char *file, int line)
{
	for (uint32_t i = 0; i < set->n; i++)
		if (set->s[i].line == line && !strcmp(set->s[i].file, file))
			return (int)i;
	return -1;
}

/* Adds what a run attempted; marks the site its failure hit. */
static void merge(struct site_set *set, const struct run *r)
{
	for (uint32_t i = 0; i < r->r.nsites; i++) {
		const struct site_rec *s = &r->sites[i];
		int k = find(set, s->file, s->line);

		if (k < 0 && set->n < MAX_SITES) {
			k = (int)set->n++;
			set->s[k] = *s;
		}
		if (k >= 0 && s->failed)
			set->covered[k] = true;
	}
}

struct tally {
	uint32_t runs, failures, clean_errors, succeeded;
};

static void account(struct tally *t, const struct run *r, const char *label)
{
	t->runs++;
	if (!r->ok) {
		t->failures++;
		fprintf(stderr, "FAIL %s: %s (first error %d at %s)\n", label,
			r->why, r->r.first_rc, r->r.first_what);
		return;
	}
	if (r->r.first_rc)
		t->clean_errors++;
	else
		t->succeeded++;
}

static const char *failed_site(const struct run *r, char *buf, size_t cap)
{
	for (uint32_t i = 0; i < r->r.nsites; i++)
		if (r->sites[i].failed) {
			snprintf(buf, cap, "%s:%d",
				 short_name(r->sites[i].file),
				 r->sites[i].line);
			return buf;
		}
	return "(none reached)";
}

static void print_run(const struct run *r, const char *label)
{
	char site[FILE_LEN + 16];

	if (!getenv("RR_SWEEP_VERBOSE"))
		return;
	printf("%-14s %-40s -> %s%s%s\n", label,
	       failed_site(r, site, sizeof(site)),
	       r->r.first_rc ? r->r.first_what : "success",
	       r->r.first_rc ? ": " : "",
	       r->r.first_rc ? strerror(-r->r.first_rc) : "");
}

/* RR_SWEEP_ONLY=N replays the run whose Nth attempt fails, with output. */
static int replay(uint64_t n)
{
	struct run_arg a = {.mode = M_NTH, .n = n};
	struct report r = {0};

	arm(&a);
	scenario(&r);
	rr_alloc_inject_off();
	printf("attempt %llu: first error %d at %s, fatal bits %#x\n",
	       (unsigned long long)n, r.first_rc, r.first_what, r.fatal);
	return r.fatal ? 1 : 0;
}

int main(void)
{
	static struct site_set set;
	struct run_arg a = {.mode = M_COUNT};
	struct tally t = {0};
	struct run r;
	uint32_t scenario_sites, covered = 0, in_scenario = 0;
	uint64_t k;
	uint64_t t0 = now_ms();
	char label[32];
	const char *only = getenv("RR_SWEEP_ONLY");

	if (only)
		return replay(strtoull(only, NULL, 10));
	run_once(&a, &r);
	account(&t, &r, "counting run");
	if (!r.ok || r.r.first_rc) {
		fprintf(stderr,
			"the scenario fails without injection: %d at "
			"%s\n",
			r.r.first_rc, r.r.first_what);
		return 1;
	}
	k = r.r.attempts;
	merge(&set, &r);
	scenario_sites = set.n;
	printf("scenario: %llu allocation attempts at %u sites, %llu calls, "
	       "%llu reconnects; %llu attempts by a round of calls of every "
	       "shape\n",
	       (unsigned long long)k, scenario_sites,
	       (unsigned long long)r.r.calls_ok,
	       (unsigned long long)r.r.reconnects,
	       (unsigned long long)r.r.round_attempts);
	free(r.sites);
	if (r.r.round_attempts) {
		fprintf(stderr, "calls allocate: the steady state must not\n");
		return 1;
	}

	for (uint64_t n = 1; n <= k; n++) {
		a = (struct run_arg){.mode = M_NTH, .n = n};
		run_once(&a, &r);
		snprintf(label, sizeof(label), "attempt %llu",
			 (unsigned long long)n);
		account(&t, &r, label);
		print_run(&r, label);
		merge(&set, &r);
		free(r.sites);
	}
	/* Sites no run failed yet: their first attempt fails. */
	for (uint32_t i = 0; i < set.n; i++) {
		if (set.covered[i])
			continue;
		a = (struct run_arg){.mode = M_SITE, .n = 1, .site = &set.s[i]};
		run_once(&a, &r);
		snprintf(label, sizeof(label), "site %u", i);
		account(&t, &r, label);
		print_run(&r, label);
		merge(&set, &r);
		free(r.sites);
	}

	for (uint32_t i = 0; i < set.n; i++) {
		covered += set.covered[i];
		in_scenario += i < scenario_sites && set.covered[i];
		if (!set.covered[i] || getenv("RR_SWEEP_VERBOSE"))
			printf("  %s %s:%d\n",
			       set.covered[i] ? "failed  " : "NOT FAILED",
			       short_name(set.s[i].file), set.s[i].line);
	}
	printf("sweep: %u runs in %.1f s: %u succeeded, %u ended with a clean "
	       "error, %u failed\n",
	       t.runs, (double)(now_ms() - t0) / 1000, t.succeeded,
	       t.clean_errors, t.failures);
	printf("sites: %u of the scenario's %u made to fail; %u more reached "
	       "only on error paths, %u of them made to fail\n",
	       in_scenario, scenario_sites, set.n - scenario_sites,
	       covered - in_scenario);
	if (t.failures || in_scenario < scenario_sites) {
		printf("FAILED\n");
		return 1;
	}
	return 0;
}
