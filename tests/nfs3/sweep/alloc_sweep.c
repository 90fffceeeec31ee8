/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation-failure sweep of the NFSv3 server and client (issue 16;
 * the RPC layer's is tests/rpcrdma/alloc_sweep.c, and this one works the
 * same way). scenario.c says what a run does: server, mount, files made,
 * written, read back, listed, renamed and removed, unmount, all with the
 * injector armed; then, disarmed, a fresh mount that must do it all.
 *
 * Each run is a child forked from this process, which never starts a
 * thread. The first run only counts (K attempts at S sites). Then, by
 * default, one run per site with that site's first attempt failing, one
 * each for its middle and last attempts (a site every call uses fails
 * late in the scenario too), and one for each site that only error paths
 * reached: about 2S runs, half a minute under ASan. With RR_NFS_SWEEP_NTH=1
 * every attempt 1..K fails in a run of its own instead (K is about 660
 * over RDMA: over two minutes under ASan, too long for the default
 * suite on two CPUs shared with others, so it is not the default).
 *
 * A run passes when it reports within RUN_TMO_MS and exits 0: whatever
 * failed came back as an error value and was unwound (a client call's
 * error, a SERVERFAULT or JUKEBOX, an RPC-level error), no read gave other
 * bytes than written, no RDMA connection was torn down undrained, the
 * server served a fresh mount in full after the injector was disarmed,
 * and, under ASan, LeakSanitizer found nothing at exit.
 *
 * The sweep fails when a run fails, or when a site the counting run saw
 * was never made to fail. A site whose run did not reach it (the server's
 * threads take turns differently from run to run) gets four more tries;
 * one that no run but the counting one reached is listed as depending on
 * timing and does not fail the sweep (no run could fail it).
 *
 * RR_NFS_SWEEP_RANDOM=N adds N runs in which each attempt fails with
 * probability RR_NFS_SWEEP_PPM per million (20000), seeds 1..N: several
 * failures in one run reach the error paths of error paths.
 *
 * RR_NFS_SWEEP_PROTO=tcp carries NFS over TCP (MOUNT always is).
 * RR_SWEEP_VERBOSE=1 lists every run; RR_SWEEP_ONLY=N replays the run
 * whose Nth attempt fails, RR_SWEEP_SITE=FILE:LINE the one failing that
 * site's first attempt, in this process with its output.
 */
#include "scenario.h"

#include <rpcrdma/alloc_inject.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_TMO_MS 90000 /* one run; a slow ASan run takes a second */
#define MAX_SITES  RR_ALLOC_INJECT_MAX_SITES
#define FILE_LEN   256
#define SITE_TRIES 5

static char top[PATH_MAX];
static const char *proto = "rdma";
static uint32_t random_ppm = 20000;

struct site_rec {
	char file[FILE_LEN];
	int32_t line;
	uint64_t attempts;
	uint64_t failed;
};

enum mode { M_COUNT, M_NTH, M_SITE, M_RANDOM };

struct run_arg {
	enum mode mode;
	uint64_t n; /* M_NTH: the attempt; M_SITE: the hit; M_RANDOM: seed */
	const struct site_rec *site; /* M_SITE */
};

/* ------------------------------------------------- child -> parent */

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
	else if (a->mode == M_RANDOM)
		rr_alloc_inject_fail_random(a->n, random_ppm);
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
	scenario(top, proto, &r);
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
	char why[160];
};

static void dump_output(int fd)
{
	char buf[4096];
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	fprintf(stderr, "---- the run's output:\n");
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stderr);
	fprintf(stderr, "----\n");
}

static void explain(struct run *out, bool got, int status)
{
	if (!got && WIFEXITED(status) && WEXITSTATUS(status))
		snprintf(out->why, sizeof(out->why),
			 "exited %d before reporting", WEXITSTATUS(status));
	else if (!got && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		snprintf(out->why, sizeof(out->why), "killed by signal %d",
			 WTERMSIG(status));
	else if (!got)
		snprintf(out->why, sizeof(out->why),
			 "no report in %d ms (hung)", RUN_TMO_MS);
	else if (out->r.fatal) /* LSan may have changed the exit status */
		snprintf(out->why, sizeof(out->why),
			 "invariant broken (fatal bits %#x: %s)", out->r.fatal,
			 out->r.fatal_what);
	else if (!out->ok)
		snprintf(out->why, sizeof(out->why),
			 "exit status %#x after its report (a leak or a "
			 "sanitizer report)",
			 status);
}

static void run_once(const struct run_arg *a, struct run *out)
{
	uint64_t deadline = now_ms() + RUN_TMO_MS;
	int p[2], err = memfd_create("nfs-alloc-sweep-run", 0), status = 0;
	bool got;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	if (err < 0 || pipe(p)) {
		perror("nfs alloc sweep: pipe/memfd");
		exit(1);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("nfs alloc sweep: fork");
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
	explain(out, got, status);
	if (!out->ok)
		dump_output(err);
	close(err);
}

/* ------------------------------------------------------- bookkeeping */

struct site_set {
	struct site_rec s[MAX_SITES];
	bool covered[MAX_SITES];     /* made to fail in some run */
	uint32_t reached[MAX_SITES]; /* runs that attempted it */
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
		if (k >= 0 && s->attempts)
			set->reached[k]++;
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
	printf("%-14s %-44s -> %s%s%s\n", label,
	       failed_site(r, site, sizeof(site)),
	       r->r.first_rc ? r->r.first_what : "success",
	       r->r.first_rc ? ": " : "",
	       r->r.first_rc ? strerror(-r->r.first_rc) : "");
	fflush(stdout);
}

static void one(struct site_set *set, struct tally *t, const struct run_arg *a,
		const char *label)
{
	struct run r;

	run_once(a, &r);
	account(t, &r, label);
	print_run(&r, label);
	merge(set, &r);
	free(r.sites);
}

/*
 * Each site not failed yet: its first attempt fails. A site the counting
 * run saw gets SITE_TRIES tries (its run may not get there), a site only
 * error paths reach one.
 */
static void site_runs(struct site_set *set, uint32_t scenario_sites,
		      struct tally *t)
{
	char label[32];

	for (uint32_t i = 0; i < set->n; i++) {
		int tries = i < scenario_sites ? SITE_TRIES : 1;

		for (int k = 0; k < tries && !set->covered[i]; k++) {
			struct run_arg a = {
				.mode = M_SITE, .n = 1, .site = &set->s[i]};

			snprintf(label, sizeof(label), "site %u", i);
			one(set, t, &a, label);
		}
	}
}

/*
 * A site used by every call (the server's per-call memory, the client's
 * result buffer) fails on its first use only, above: its middle and last
 * attempts in the counting run fail too, in a run each, so that calls
 * late in the scenario meet a failure as well.
 */
static void spread_runs(struct site_set *set, uint32_t scenario_sites,
			struct tally *t)
{
	char label[48];

	for (uint32_t i = 0; i < scenario_sites; i++) {
		uint64_t a = set->s[i].attempts, ks[2] = {(a + 1) / 2, a};

		for (int j = 0; j < 2; j++) {
			struct run_arg r = {
				.mode = M_SITE, .n = ks[j], .site = &set->s[i]};

			if (ks[j] < 2 || (j && ks[1] == ks[0]))
				continue;
			snprintf(label, sizeof(label), "site %u #%llu", i,
				 (unsigned long long)ks[j]);
			one(set, t, &r, label);
		}
	}
}

static void nth_runs(struct site_set *set, struct tally *t, uint64_t k)
{
	char label[32];

	for (uint64_t n = 1; n <= k; n++) {
		struct run_arg a = {.mode = M_NTH, .n = n};

		snprintf(label, sizeof(label), "attempt %llu",
			 (unsigned long long)n);
		one(set, t, &a, label);
	}
}

/* Several failures in one run: the error paths' own error paths. */
static void random_runs(struct site_set *set, struct tally *t, uint64_t n)
{
	char label[32];

	for (uint64_t seed = 1; seed <= n; seed++) {
		struct run_arg a = {.mode = M_RANDOM, .n = seed};

		snprintf(label, sizeof(label), "seed %llu",
			 (unsigned long long)seed);
		one(set, t, &a, label);
	}
}

/* RR_SWEEP_ONLY / RR_SWEEP_SITE: one run here, with its output. */
static int replay(const char *only, const char *site)
{
	struct site_rec s = {0};
	struct run_arg a = {.mode = M_NTH, .site = &s};
	struct report r = {0};
	const char *colon = site ? strrchr(site, ':') : NULL;

	if (colon) {
		snprintf(s.file, sizeof(s.file), "%.*s", (int)(colon - site),
			 site);
		s.line = atoi(colon + 1);
		a.mode = M_SITE;
		a.n = 1;
	} else {
		a.n = strtoull(only, NULL, 10);
	}
	arm(&a);
	scenario(top, proto, &r);
	printf("first error %d at %s, fatal bits %#x (%s), %llu calls\n",
	       r.first_rc, r.first_what, r.fatal, r.fatal_what,
	       (unsigned long long)r.calls);
	return r.fatal ? 1 : 0;
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

static int make_top(void)
{
	const char *tmp = getenv("TMPDIR");
	char t[PATH_MAX];

	snprintf(t, sizeof(t), "%s/nfs-alloc-sweep.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(t) || !realpath(t, top)) {
		perror("nfs alloc sweep: mkdtemp");
		return -1;
	}
	return 0;
}

/*
 * A site of the counting run that no later run reached depends on timing
 * (a socket found full, say): said, but not a failure of the sweep, since
 * no run could have failed there. One reached and never failed is.
 */
static bool timing_only(const struct site_set *set, uint32_t i)
{
	return !set->covered[i] && set->reached[i] == 1;
}

static int report(const struct site_set *set, uint32_t scenario_sites,
		  const struct tally *t, uint64_t t0)
{
	uint32_t covered = 0, in_scenario = 0, timing = 0;

	for (uint32_t i = 0; i < set->n; i++) {
		bool tm = i < scenario_sites && timing_only(set, i);

		covered += set->covered[i];
		in_scenario += i < scenario_sites && set->covered[i];
		timing += tm;
		if (!set->covered[i] || getenv("RR_SWEEP_VERBOSE"))
			printf("  %s %s:%d\n",
			       set->covered[i] ? "failed  "
			       : tm	       ? "NOT REACHED AGAIN (timing)"
					       : "NOT FAILED",
			       short_name(set->s[i].file), set->s[i].line);
	}
	printf("sweep (%s): %u runs in %.1f s: %u succeeded, %u ended with "
	       "a clean error, %u failed\n",
	       proto, t->runs, (double)(now_ms() - t0) / 1000, t->succeeded,
	       t->clean_errors, t->failures);
	printf("sites: %u of the scenario's %u made to fail (%u reached only "
	       "by the counting run); %u more reached only on error paths, "
	       "%u of them made to fail\n",
	       in_scenario, scenario_sites, timing, set->n - scenario_sites,
	       covered - in_scenario);
	if (t->failures || in_scenario + timing < scenario_sites) {
		printf("FAILED\n");
		return 1;
	}
	return 0;
}

static int sweep(void)
{
	static struct site_set set;
	struct run_arg a = {.mode = M_COUNT};
	struct tally t = {0};
	struct run r;
	uint32_t scenario_sites;
	uint64_t t0 = now_ms(), k;

	run_once(&a, &r);
	account(&t, &r, "counting run");
	if (!r.ok || r.r.first_rc) {
		fprintf(stderr,
			"the scenario fails without injection: %d at %s\n",
			r.r.first_rc, r.r.first_what);
		free(r.sites);
		return 1;
	}
	k = r.r.attempts;
	merge(&set, &r);
	scenario_sites = set.n;
	printf("scenario over %s: %llu allocation attempts at %u sites, %llu "
	       "NFS calls served\n",
	       proto, (unsigned long long)k, scenario_sites,
	       (unsigned long long)r.r.calls);
	fflush(stdout);
	free(r.sites);
	if (getenv("RR_NFS_SWEEP_NTH") && *getenv("RR_NFS_SWEEP_NTH") == '1') {
		nth_runs(&set, &t, k);
	} else {
		site_runs(&set, scenario_sites, &t);
		spread_runs(&set, scenario_sites, &t);
	}
	if (getenv("RR_NFS_SWEEP_RANDOM"))
		random_runs(&set, &t,
			    strtoull(getenv("RR_NFS_SWEEP_RANDOM"), NULL, 10));
	/* the sites error paths reached, not failed yet */
	site_runs(&set, scenario_sites, &t);
	return report(&set, scenario_sites, &t, t0);
}

int main(void)
{
	const char *only = getenv("RR_SWEEP_ONLY");
	const char *site = getenv("RR_SWEEP_SITE");
	const char *p = getenv("RR_NFS_SWEEP_PROTO");
	int rc;

	if (p && *p)
		proto = p;
	if (getenv("RR_NFS_SWEEP_PPM"))
		random_ppm = (uint32_t)atoi(getenv("RR_NFS_SWEEP_PPM"));
	if (strcmp(proto, "rdma") && strcmp(proto, "tcp")) {
		fprintf(stderr, "RR_NFS_SWEEP_PROTO: rdma or tcp, not %s\n",
			proto);
		return 2;
	}
	if (make_top())
		return 1;
	rc = only || site ? replay(only, site) : sweep();
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
