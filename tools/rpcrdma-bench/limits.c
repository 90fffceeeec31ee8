// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The physical limits beside shm's figures (tools/common/copy_limits.h),
 * with the fabric phase's size, depth and placement: the peer on the
 * peer's CPU, every copy's time in the same histograms as ours.
 */
#include <stdlib.h>

#include "bench.h"
#include "copy_limits.h"

struct adapt {
	const struct bench_opts *o;
	struct bench_result *mem, *cma;
};

static void pin_peer(void *arg)
{
	const struct adapt *a = arg;

	bench_pin(a->o, 1);
}

static void sample(void *arg, bool cma, uint64_t ns)
{
	const struct adapt *a = arg;

	bench_hist_record(cma ? &a->cma->hist : &a->mem->hist, ns);
}

static void fill(struct bench_result *r, const struct copy_limit *c)
{
	r->ops = c->ops;
	r->bytes = c->bytes;
	r->elapsed_s = c->secs;
	r->done = true;
}

int bench_limits_run(const struct bench_opts *o, struct bench_result *mem,
		     struct bench_result *cma)
{
	struct adapt a = {o, mem, cma};
	struct copy_limit_opts lo = {.size = o->size,
				     .depth = o->depth,
				     .seconds = o->seconds,
				     .read = o->op == BENCH_OP_WRITE,
				     .in_peer = pin_peer,
				     .sample = sample,
				     .arg = &a};
	struct copy_limit m, c;
	int err = copy_limits_run(&lo, &m, &c);

	if (!err) {
		fill(mem, &m);
		fill(cma, &c);
	}
	return err;
}
