// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Latency histogram and clock for rpcrdma-bench. */
#include <string.h>
#include <time.h>

#include "bench.h"

#define SUB_BITS BENCH_HIST_SUB_BITS

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void bench_hist_reset(struct bench_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = UINT64_MAX;
}

/*
 * Values below 2^(SUB_BITS+1) index themselves; above, the top SUB_BITS+1
 * bits (the leading 1 and SUB_BITS of mantissa) plus the shift pick the
 * bucket, so the index grows monotonically with the value.
 */
static unsigned hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < (2ull << SUB_BITS))
		return (unsigned)v;
	msb = 63 - (unsigned)__builtin_clzll(v);
	shift = msb - SUB_BITS;
	return (shift << SUB_BITS) + (unsigned)(v >> shift);
}

/* Middle of the bucket: halves the worst-case error of the lower bound. */
static double hist_value(unsigned idx)
{
	unsigned q = idx >> SUB_BITS;
	unsigned shift;
	uint64_t mant;

	if (q <= 1)
		return idx;
	shift = q - 1;
	mant = idx - ((uint64_t)shift << SUB_BITS);
	return (double)(mant << shift) + (double)(1ull << shift) / 2.0;
}

void bench_hist_record(struct bench_hist *h, uint64_t ns)
{
	h->buckets[hist_index(ns)]++;
	h->count++;
	h->sum_ns += (double)ns;
	if (ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

double bench_hist_percentile_us(const struct bench_hist *h, double p)
{
	uint64_t rank, seen = 0;
	double v;
	unsigned i;

	if (!h->count)
		return 0;
	rank = (uint64_t)(p / 100.0 * (double)h->count + 0.5);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank)
			break;
	}
	/* The bucket middle can lie outside what was actually seen. */
	v = hist_value(i);
	if (v > (double)h->max_ns)
		v = (double)h->max_ns;
	if (v < (double)h->min_ns)
		v = (double)h->min_ns;
	return v / 1000.0;
}

double bench_hist_mean_us(const struct bench_hist *h)
{
	return h->count ? h->sum_ns / (double)h->count / 1000.0 : 0;
}

void bench_hist_merge(struct bench_hist *to, const struct bench_hist *from)
{
	unsigned i;

	for (i = 0; i < BENCH_HIST_BUCKETS; i++)
		to->buckets[i] += from->buckets[i];
	to->count += from->count;
	to->sum_ns += from->sum_ns;
	if (from->min_ns < to->min_ns)
		to->min_ns = from->min_ns;
	if (from->max_ns > to->max_ns)
		to->max_ns = from->max_ns;
}
