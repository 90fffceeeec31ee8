/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The allocation-failure sweep's engine: see sweep.h. */
#include "sweep.h"
#include "clock.h"
#include "io.h"

#include <rpcrdma/alloc_inject.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SITES  RR_ALLOC_INJECT_MAX_SITES
#define FILE_LEN   256
#define SITE_TRIES 5

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

void rr_t_sweep_note(struct rr_t_sweep_report *r, const char *what, int rc)
{
	if (!rc || r->first_rc)
		return;
	r->first_rc = rc;
	snprintf(r->first_what, sizeof(r->first_what), "%s", what);
}

void rr_t_sweep_fatal(struct rr_t_sweep_report *r, uint32_t bit,
		      const char *what)
{
	if (!r->fatal)
		snprintf(r->fatal_what, sizeof(r->fatal_what), "%s", what);
	r->fatal |= bit;
}

/* ------------------------------------------------- child -> parent */

static void arm(const struct rr_t_sweep *sw, const struct run_arg *a)
{
	if (a->mode == M_COUNT)
		rr_alloc_inject_count();
	else if (a->mode == M_NTH)
		rr_alloc_inject_fail_nth(a->n);
	else if (a->mode == M_RANDOM)
		rr_alloc_inject_fail_random(a->n, sw->random_ppm);
	else
		rr_alloc_inject_fail_site(a->site->file, a->site->line, a->n);
}

/* The child: runs the scenario armed, reports, exits (LSan checks then). */
static void child(const struct rr_t_sweep *sw, const struct run_arg *a,
		  int out_fd, int err_fd)
{
	struct rr_t_sweep_report r = {0};
	struct rr_alloc_inject_stats as;
	struct rr_alloc_site_info si;

	dup2(err_fd, STDERR_FILENO);
	dup2(err_fd, STDOUT_FILENO);
	arm(sw, a);
	sw->scenario(sw->arg, &r);
	rr_alloc_inject_off();
	rr_alloc_inject_stats(&as);
	r.attempts = as.attempts;
	r.failed = as.failed;
	r.nsites = as.nsites;
	rr_t_write_or_exit(out_fd, &r, sizeof(r));
	for (uint32_t i = 0; rr_alloc_inject_site(i, &si) == 0; i++) {
		struct site_rec s = {.line = si.line,
				     .attempts = si.attempts,
				     .failed = si.failed};

		snprintf(s.file, sizeof(s.file), "%s", si.file);
		rr_t_write_or_exit(out_fd, &s, sizeof(s));
	}
	close(out_fd);
	exit(r.fatal ? 3 : 0);
}

/* ------------------------------------------------------------ parent */

struct run {
	struct rr_t_sweep_report r;
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

static void explain(const struct rr_t_sweep *sw, struct run *out, bool got,
		    int status)
{
	if (!got && WIFEXITED(status) && WEXITSTATUS(status))
		snprintf(out->why, sizeof(out->why),
			 "exited %d before reporting", WEXITSTATUS(status));
	else if (!got && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		snprintf(out->why, sizeof(out->why), "killed by signal %d",
			 WTERMSIG(status));
	else if (!got)
		snprintf(out->why, sizeof(out->why),
			 "no report in %d ms (hung)", sw->run_tmo_ms);
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

static bool read_report(int fd, struct run *out, uint64_t deadline)
{
	if (!rr_t_read_by(fd, &out->r, sizeof(out->r), deadline) ||
	    out->r.nsites > MAX_SITES)
		return false;
	out->sites = calloc(out->r.nsites + 1, sizeof(*out->sites));
	return out->sites &&
	       rr_t_read_by(fd, out->sites, out->r.nsites * sizeof(*out->sites),
			    deadline);
}

static void run_once(const struct rr_t_sweep *sw, const struct run_arg *a,
		     struct run *out)
{
	uint64_t deadline = rr_t_now_ms() + (uint64_t)sw->run_tmo_ms;
	int p[2], err = memfd_create("alloc-sweep-run", 0), status = 0;
	bool got;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	if (err < 0 || pipe(p)) {
		perror("sweep: pipe/memfd");
		exit(1);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("sweep: fork");
		exit(1);
	}
	if (pid == 0) {
		close(p[0]);
		child(sw, a, p[1], err);
	}
	close(p[1]);
	got = read_report(p[0], out, deadline);
	if (!got)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(p[0]);
	out->ok = got && !out->r.fatal && WIFEXITED(status) &&
		  WEXITSTATUS(status) == 0;
	explain(sw, out, got, status);
	if (!out->ok)
		dump_output(err);
	close(err);
}

/* ------------------------------------------------------- bookkeeping */

struct site_set {
	struct site_rec s[MAX_SITES];
	bool covered[MAX_SITES];     /* made to fail in some run */
	uint32_t reached[MAX_SITES]; /* runs that attempted it */
	bool aimed[MAX_SITES]; /* reached by a run failing its first attempt */
	uint32_t n;
};

struct tally {
	uint32_t runs, failures, clean_errors, succeeded;
};

struct sweep_state {
	const struct rr_t_sweep *sw;
	struct site_set set;
	struct tally t;
	uint32_t scenario_sites; /* those of the counting run: set.s[0..n) */
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

/*
 * Adds what a run attempted; marks the site its failure hit, and the site
 * a run aimed at its first attempt (a) if the run got there.
 */
static void merge(struct site_set *set, const struct run *r,
		  const struct run_arg *a)
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
		if (k >= 0 && s->attempts && a && a->mode == M_SITE &&
		    a->n == 1 && a->site == &set->s[k])
			set->aimed[k] = true;
	}
}

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

static void one(struct sweep_state *st, const struct run_arg *a,
		const char *label)
{
	struct run r;

	run_once(st->sw, a, &r);
	account(&st->t, &r, label);
	print_run(&r, label);
	merge(&st->set, &r, a);
	free(r.sites);
}

/* ------------------------------------------------------------- runs */

/*
 * Each site not failed yet: its first attempt fails. A site the counting
 * run saw gets SITE_TRIES tries (its run may not get there), a site only
 * error paths reach one.
 */
static void site_runs(struct sweep_state *st)
{
	char label[32];

	for (uint32_t i = 0; i < st->set.n; i++) {
		int tries = i < st->scenario_sites ? SITE_TRIES : 1;

		for (int k = 0; k < tries && !st->set.covered[i]; k++) {
			struct run_arg a = {
				.mode = M_SITE, .n = 1, .site = &st->set.s[i]};

			snprintf(label, sizeof(label), "site %u", i);
			one(st, &a, label);
		}
	}
}

/* A site's middle and last attempts of the counting run, a run each. */
static void spread_runs(struct sweep_state *st)
{
	char label[48];

	for (uint32_t i = 0; i < st->scenario_sites; i++) {
		uint64_t n = st->set.s[i].attempts, ks[2] = {(n + 1) / 2, n};

		for (int j = 0; j < 2; j++) {
			struct run_arg a = {.mode = M_SITE,
					    .n = ks[j],
					    .site = &st->set.s[i]};

			if (ks[j] < 2 || (j && ks[1] == ks[0]))
				continue;
			snprintf(label, sizeof(label), "site %u #%llu", i,
				 (unsigned long long)ks[j]);
			one(st, &a, label);
		}
	}
}

static void nth_runs(struct sweep_state *st, uint64_t k)
{
	char label[32];

	for (uint64_t n = 1; n <= k; n++) {
		struct run_arg a = {.mode = M_NTH, .n = n};

		snprintf(label, sizeof(label), "attempt %llu",
			 (unsigned long long)n);
		one(st, &a, label);
	}
}

/* Several failures in one run: the error paths' own error paths. */
static void random_runs(struct sweep_state *st)
{
	char label[32];

	for (uint64_t seed = 1; seed <= st->sw->random_runs; seed++) {
		struct run_arg a = {.mode = M_RANDOM, .n = seed};

		snprintf(label, sizeof(label), "seed %llu",
			 (unsigned long long)seed);
		one(st, &a, label);
	}
}

/* ------------------------------------------------------------ verdict */

/*
 * A site of the counting run that none of the runs aimed at it reached
 * depends on timing (a socket found full, say): said, but not a failure
 * of the sweep, since no run could fail there. Other runs may reach it
 * meanwhile (most likely how a loaded check once failed the sweep). A
 * site its own run reached and that did not fail is a failure: the
 * injector missed.
 */
static bool timing_only(const struct site_set *set, uint32_t i)
{
	return !set->covered[i] && !set->aimed[i];
}

static int verdict(const struct sweep_state *st, uint64_t t0)
{
	const struct site_set *set = &st->set;
	const struct tally *t = &st->t;
	uint32_t covered = 0, in_scenario = 0, timing = 0;

	for (uint32_t i = 0; i < set->n; i++) {
		bool tm = i < st->scenario_sites && timing_only(set, i);

		covered += set->covered[i];
		in_scenario += i < st->scenario_sites && set->covered[i];
		timing += tm;
		if (!set->covered[i] || getenv("RR_SWEEP_VERBOSE"))
			printf("  %s %s:%d (in %u runs)\n",
			       set->covered[i] ? "failed  "
			       : tm ? "NOT REACHED BY ITS OWN RUNS (timing)"
				    : "NOT FAILED",
			       short_name(set->s[i].file), set->s[i].line,
			       set->reached[i]);
	}
	printf("sweep (%s): %u runs in %.1f s: %u succeeded, %u ended with "
	       "a clean error, %u failed\n",
	       st->sw->name, t->runs, (double)(rr_t_now_ms() - t0) / 1000,
	       t->succeeded, t->clean_errors, t->failures);
	printf("sites: %u of the scenario's %u made to fail (%u not reached "
	       "by their own runs); %u more reached only on error paths, "
	       "%u of them made to fail\n",
	       in_scenario, st->scenario_sites, timing,
	       set->n - st->scenario_sites, covered - in_scenario);
	if (t->failures || in_scenario + timing < st->scenario_sites) {
		printf("FAILED\n");
		return 1;
	}
	return 0;
}

/* RR_SWEEP_ONLY / RR_SWEEP_SITE: one run here, with its output. */
static int replay(const struct rr_t_sweep *sw, const char *only,
		  const char *site)
{
	struct site_rec s = {0};
	struct run_arg a = {.mode = M_NTH, .site = &s};
	struct rr_t_sweep_report r = {0};
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
	arm(sw, &a);
	sw->scenario(sw->arg, &r);
	rr_alloc_inject_off();
	printf("first error %d at %s, fatal bits %#x (%s)\n", r.first_rc,
	       r.first_what, r.fatal, r.fatal_what);
	return r.fatal ? 1 : 0;
}

static int counting_run(struct sweep_state *st, uint64_t *k)
{
	struct run_arg a = {.mode = M_COUNT};
	struct run r;
	int rc = 0;

	run_once(st->sw, &a, &r);
	account(&st->t, &r, "counting run");
	if (!r.ok || r.r.first_rc) {
		fprintf(stderr,
			"the scenario fails without injection: %d at %s\n",
			r.r.first_rc, r.r.first_what);
		free(r.sites);
		return 1;
	}
	*k = r.r.attempts;
	merge(&st->set, &r, NULL);
	st->scenario_sites = st->set.n;
	if (st->sw->counted)
		rc = st->sw->counted(st->sw->arg, &r.r, st->scenario_sites);
	fflush(stdout);
	free(r.sites);
	return rc;
}

int rr_t_sweep_run(const struct rr_t_sweep *sw)
{
	static struct sweep_state st; /* the site table is large */
	const char *only = getenv("RR_SWEEP_ONLY");
	const char *site = getenv("RR_SWEEP_SITE");
	uint64_t t0 = rr_t_now_ms(), k;

	if (only || site)
		return replay(sw, only, site);
	memset(&st, 0, sizeof(st));
	st.sw = sw;
	if (counting_run(&st, &k))
		return 1;
	if (sw->every_attempt) {
		nth_runs(&st, k);
	} else {
		site_runs(&st);
		spread_runs(&st);
	}
	random_runs(&st);
	site_runs(&st); /* what error paths reached, not failed yet */
	return verdict(&st, t0);
}
