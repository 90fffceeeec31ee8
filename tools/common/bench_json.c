// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The benchmark reports' common JSON shape (bench_json.h). */
#include <math.h>

#include "bench_json.h"

struct bjson_figures bjson_figures_none(void)
{
	return (struct bjson_figures){
		.ops = NAN,
		.bytes = NAN,
		.elapsed_s = NAN,
		.mbps = NAN,
		.ops_per_s = NAN,
		.p50_us = NAN,
		.p99_us = NAN,
		.mean_us = NAN,
		.min_us = NAN,
		.max_us = NAN,
	};
}

bool bjson_goal_met(const struct bjson_goal *g)
{
	return g->at_most ? g->value <= g->target : g->value >= g->target;
}

/* Ours / the baseline's; NAN (null) when either side has no figure. */
static double ratio(double ours, double base)
{
	return isfinite(ours) && isfinite(base) && base > 0 ? ours / base : NAN;
}

static void figures(struct jw *j, const char *key,
		    const struct bjson_figures *f)
{
	jw_obj(j, key);
	jw_num(j, "ops", f->ops, 0);
	jw_num(j, "bytes", f->bytes, 0);
	jw_num(j, "elapsed_s", f->elapsed_s, 6);
	jw_num(j, "MBps", f->mbps, 3);
	jw_num(j, "ops_per_s", f->ops_per_s, 3);
	jw_num(j, "p50_us", f->p50_us, 3);
	jw_num(j, "p99_us", f->p99_us, 3);
	jw_num(j, "mean_us", f->mean_us, 3);
	jw_num(j, "min_us", f->min_us, 3);
	jw_num(j, "max_us", f->max_us, 3);
	jw_obj_end(j);
}

/* The same keys as the figures they divide, so a script needs one list. */
static void ratios(struct jw *j, const struct bjson_figures *us,
		   const struct bjson_figures *base)
{
	jw_obj(j, "ratio");
	jw_num(j, "MBps", ratio(us->mbps, base->mbps), 4);
	jw_num(j, "ops_per_s", ratio(us->ops_per_s, base->ops_per_s), 4);
	jw_num(j, "p50_us", ratio(us->p50_us, base->p50_us), 4);
	jw_num(j, "p99_us", ratio(us->p99_us, base->p99_us), 4);
	jw_obj_end(j);
}

static void baselines(struct jw *j, const struct bjson_report *r)
{
	jw_arr(j, "baselines");
	for (unsigned i = 0; i < r->nbaselines; i++) {
		const struct bjson_baseline *b = &r->baselines[i];

		jw_obj(j, NULL);
		jw_str(j, "name", b->name);
		jw_str(j, "transport", b->transport);
		jw_str(j, "provider", b->provider);
		jw_str(j, "target", b->target);
		figures(j, "figures", &b->fig);
		ratios(j, &r->fig, &b->fig);
		jw_obj_end(j);
	}
	jw_arr_end(j);
}

static void goals(struct jw *j, const struct bjson_report *r)
{
	jw_arr(j, "goals");
	for (unsigned i = 0; i < r->ngoals; i++) {
		const struct bjson_goal *g = &r->goals[i];

		jw_obj(j, NULL);
		jw_str(j, "metric", g->metric);
		jw_str(j, "baseline", g->baseline);
		jw_str(j, "comparison", g->at_most ? "<=" : ">=");
		jw_num(j, "target", g->target, 4);
		jw_num(j, "value", g->value, 4);
		jw_bool(j, "met", bjson_goal_met(g));
		jw_obj_end(j);
	}
	jw_arr_end(j);
}

/* The suffixes carry the units; this says what they stand for. */
static void units(struct jw *j)
{
	jw_obj(j, "units");
	jw_str(j, "MBps", "10^6 bytes per second");
	jw_str(j, "_per_s", "per second");
	jw_str(j, "_bytes", "bytes");
	jw_str(j, "_s", "seconds");
	jw_str(j, "_us", "microseconds");
	jw_str(j, "ratio", "ours / baseline, figure by figure");
	jw_obj_end(j);
}

static void what(struct jw *j, const struct bjson_report *r)
{
	jw_str(j, "schema", BJSON_SCHEMA);
	jw_str(j, "program", r->program);
	jw_str(j, "subcommand", r->subcommand);
	jw_str(j, "version", r->version);
	jw_str(j, "operation", r->operation);
	jw_u64(j, "size_bytes", r->size_bytes);
	jw_u64(j, "depth", r->depth);
	jw_num(j, "seconds", r->seconds, 3);
	jw_str(j, "latency", r->latency);
	jw_str(j, "target", r->target);
	jw_str(j, "transport", r->transport);
	jw_str(j, "provider", r->provider);
}

int bjson_report_write(FILE *f, const struct bjson_report *r)
{
	struct jw j;

	jw_init(&j, f);
	jw_obj(&j, NULL);
	what(&j, r);
	units(&j);
	figures(&j, "figures", &r->fig);
	baselines(&j, r);
	goals(&j, r);
	jw_obj(&j, "details");
	if (r->details)
		r->details(&j, r->details_arg);
	jw_obj_end(&j);
	jw_obj_end(&j);
	return jw_finish(&j);
}
