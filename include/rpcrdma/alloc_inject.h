/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Allocation-failure injection, for tests (architecture.md invariant 6).
 *
 * Every allocation the library makes (src/base/alloc.h: rr_malloc,
 * rr_calloc, rr_realloc, rr_strdup, and the mmap of buffer pools) first
 * asks this control whether to fail; its call site (file and line) names
 * it. Disarmed, that costs one relaxed atomic load. Armed, every attempt
 * is counted, per site too, and the mode decides which ones fail (return
 * NULL with errno ENOMEM, as the allocator would).
 *
 * The control is process-wide and thread-safe. Arming resets the counters
 * and the site table; disarming keeps them readable. The site table holds
 * RR_ALLOC_INJECT_MAX_SITES sites; sites beyond it are counted in
 * attempts/failed but not listed (sites_dropped says how many attempts).
 */
#ifndef RPCRDMA_ALLOC_INJECT_H
#define RPCRDMA_ALLOC_INJECT_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RR_ALLOC_INJECT_MAX_SITES 1024

/* Count every attempt from now; fail none. */
void rr_alloc_inject_count(void);
/* The nth attempt from now (1 = the next one) fails; the others do not. */
void rr_alloc_inject_fail_nth(uint64_t n);
/* Every attempt from now fails. */
void rr_alloc_inject_fail_all(void);
/* The kth attempt (1 = the first) at the site file:line fails. */
void rr_alloc_inject_fail_site(const char *file, int line, uint64_t k);
/* Each attempt fails with probability ppm / 1e6, drawn from seed. */
void rr_alloc_inject_fail_random(uint64_t seed, uint32_t ppm);
/* Stop counting and failing; the counters stay as they are. */
void rr_alloc_inject_off(void);

struct rr_alloc_inject_stats {
	uint64_t attempts;	/* while armed */
	uint64_t failed;	/* of those, made to fail */
	uint32_t nsites;	/* distinct sites attempted */
	uint64_t sites_dropped; /* attempts at sites not listed (table full) */
};

void rr_alloc_inject_stats(struct rr_alloc_inject_stats *out);

struct rr_alloc_site_info {
	const char *file; /* as the compiler spelled __FILE__ */
	int line;
	uint64_t attempts;
	uint64_t failed;
	uint64_t first; /* attempt number (1-based) of its first attempt */
};

/* Site i (0 <= i < nsites) in order of first attempt; 0 or -ENOENT. */
int rr_alloc_inject_site(uint32_t i, struct rr_alloc_site_info *out);

#ifdef __cplusplus
}
#endif
#endif
