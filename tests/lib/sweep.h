/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation-failure sweep's engine (architecture.md, invariant 6),
 * shared by every sweep: tests/rpcrdma (the RPC layer) and tests/nfs3
 * (the NFS server and client). A sweep gives a scenario; the engine runs
 * it in forked children with the injector (include/rpcrdma/alloc_inject.h)
 * armed differently each time and judges each run.
 *
 * The first run only counts: K attempts at S sites. Then either a run per
 * attempt 1..K with that attempt failing (every_attempt), or a run per
 * site with its first attempt failing (SITE_TRIES tries, since a run may
 * not get there) and one each for its middle and last attempts, so a site
 * every call uses fails late too. Optionally random runs with several
 * failures each. Last, a run for each site only error paths reached, not
 * failed yet.
 *
 * A run passes when it reports within run_tmo_ms and exits 0: whatever
 * failed came back as an error value and was unwound, the scenario set no
 * fatal bit, and under ASan LeakSanitizer found nothing at exit. The sweep
 * fails when a run fails or when a site the counting run saw was never
 * made to fail; a site that none of the runs aimed at it reached depends
 * on timing (a socket found full) and is listed, not held against it.
 *
 * The parent never starts a thread, so a fork copies no lock held by
 * another. RR_SWEEP_VERBOSE=1 lists every run; RR_SWEEP_ONLY=N replays
 * the run whose Nth attempt fails, RR_SWEEP_SITE=FILE:LINE the one
 * failing that site's first attempt, in this process with its output.
 */
#ifndef RR_TEST_LIB_SWEEP_H
#define RR_TEST_LIB_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

/* What one run of a scenario says; the engine fills the counts. */
struct rr_t_sweep_report {
	int32_t first_rc; /* the first error the armed part saw, 0: none */
	char first_what[64];
	uint32_t fatal; /* the scenario's bits: any fails the run */
	char fatal_what[96];
	uint64_t extra[4]; /* the scenario's own figures */
	uint64_t attempts, failed;
	uint32_t nsites;
};

struct rr_t_sweep {
	const char *name; /* in the summary lines */
	/* Runs once in a forked child, armed; may disarm part way. */
	void (*scenario)(void *arg, struct rr_t_sweep_report *r);
	void *arg;
	int run_tmo_ms;
	bool every_attempt;   /* else per site: first, middle, last */
	uint64_t random_runs; /* with random_ppm per attempt, seeds 1..n */
	uint32_t random_ppm;
	/*
	 * After the counting run: prints what the scenario did, and may
	 * refuse to sweep (nonzero) when the count shows a broken rule.
	 */
	int (*counted)(void *arg, const struct rr_t_sweep_report *r,
		       uint32_t nsites);
};

/* 0 when every run passed and every site was made to fail, else 1. */
int rr_t_sweep_run(const struct rr_t_sweep *sw);

/* The first error of a run, kept with what it was. */
void rr_t_sweep_note(struct rr_t_sweep_report *r, const char *what, int rc);
/* A broken rule: sets bit, keeps the first description. */
void rr_t_sweep_fatal(struct rr_t_sweep_report *r, uint32_t bit,
		      const char *what);

#endif
