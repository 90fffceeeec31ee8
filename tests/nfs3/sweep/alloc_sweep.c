/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation-failure sweep of the NFSv3 server and client (issue 16;
 * the RPC layer's is tests/rpcrdma/alloc_sweep.c; both run on the engine
 * in tests/lib/sweep.c). scenario.c says what a run does: server, mount,
 * files made, written, read back, listed, renamed and removed, unmount,
 * all with the injector armed; then, disarmed, a fresh mount that must do
 * it all.
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
 * one that none of those runs reached is listed as depending on timing
 * and does not fail the sweep (no run could fail it), whatever other runs
 * reached it by chance.
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
#include "io.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_TMO_MS 90000 /* one run; a slow ASan run takes a second */

struct nfs_sweep {
	char top[PATH_MAX];
	const char *proto;
};

static void run_scenario(void *arg, struct rr_t_sweep_report *r)
{
	const struct nfs_sweep *ns = arg;

	scenario(ns->top, ns->proto, r);
}

static int counted(void *arg, const struct rr_t_sweep_report *r,
		   uint32_t nsites)
{
	const struct nfs_sweep *ns = arg;

	printf("scenario over %s: %llu allocation attempts at %u sites, %llu "
	       "NFS calls served\n",
	       ns->proto, (unsigned long long)r->attempts, nsites,
	       (unsigned long long)r->extra[X_CALLS]);
	return 0;
}

static int make_top(char top[PATH_MAX])
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

static bool env_is(const char *name, const char *value)
{
	const char *v = getenv(name);

	return v && !strcmp(v, value);
}

int main(void)
{
	static struct nfs_sweep ns = {.proto = "rdma"};
	const char *p = getenv("RR_NFS_SWEEP_PROTO");
	const char *rnd = getenv("RR_NFS_SWEEP_RANDOM");
	const char *ppm = getenv("RR_NFS_SWEEP_PPM");
	char name[32];
	struct rr_t_sweep sw = {
		.name = name,
		.scenario = run_scenario,
		.arg = &ns,
		.run_tmo_ms = RUN_TMO_MS,
		.every_attempt = env_is("RR_NFS_SWEEP_NTH", "1"),
		.random_runs = rnd ? strtoull(rnd, NULL, 10) : 0,
		.random_ppm = ppm ? (uint32_t)atoi(ppm) : 20000,
		.counted = counted};
	int rc;

	if (p && *p)
		ns.proto = p;
	if (strcmp(ns.proto, "rdma") && strcmp(ns.proto, "tcp")) {
		fprintf(stderr, "RR_NFS_SWEEP_PROTO: rdma or tcp, not %s\n",
			ns.proto);
		return 2;
	}
	snprintf(name, sizeof(name), "nfs over %s", ns.proto);
	if (make_top(ns.top))
		return 1;
	rc = rr_t_sweep_run(&sw);
	rr_t_rm_tree(ns.top);
	return rc;
}
