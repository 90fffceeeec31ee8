/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation-failure injector behind src/base/alloc.h.
 *
 * Armed, every attempt takes one mutex: the counts must be exact (a sweep
 * replays "the Nth attempt" and needs the same N to mean the same call),
 * and only tests arm it. The site table is fixed and static: the injector
 * itself must never allocate.
 */
#include "base/alloc.h"

#include <pthread.h>

enum mode { M_OFF, M_COUNT, M_NTH, M_ALL, M_SITE, M_RANDOM };

struct site {
	const char *file;
	int line;
	uint64_t attempts, failed, first;
};

#define NSLOTS (2 * RR_ALLOC_INJECT_MAX_SITES) /* open addressing */

static struct {
	pthread_mutex_t mu;
	enum mode mode;
	uint64_t nth; /* M_NTH: attempt number; M_SITE: attempt at the site */
	const char *site_file;
	int site_line;
	uint64_t rng;
	uint32_t ppm;
	uint64_t attempts, failed, dropped;
	uint32_t nsites;
	struct site sites[RR_ALLOC_INJECT_MAX_SITES];
	uint32_t slot[NSLOTS]; /* site index + 1, 0: empty */
} inj = {.mu = PTHREAD_MUTEX_INITIALIZER};

atomic_int rr__alloc_armed;

static uint32_t site_hash(const char *file, int line)
{
	uint32_t h = 2166136261u ^ (uint32_t)line;

	for (const char *p = file; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h;
}

static bool same_site(const struct site *s, const char *file, int line)
{
	return s->line == line && (s->file == file || !strcmp(s->file, file));
}

/* Caller holds mu. NULL when the table is full. */
static struct site *site_of(const char *file, int line)
{
	uint32_t i = site_hash(file, line) % NSLOTS;
	struct site *s;

	for (;; i = (i + 1) % NSLOTS) {
		if (!inj.slot[i])
			break;
		s = &inj.sites[inj.slot[i] - 1];
		if (same_site(s, file, line))
			return s;
	}
	if (inj.nsites == RR_ALLOC_INJECT_MAX_SITES)
		return NULL;
	s = &inj.sites[inj.nsites++];
	*s = (struct site){.file = file, .line = line, .first = inj.attempts};
	inj.slot[i] = inj.nsites;
	return s;
}

/* xorshift64*: the injector's own, so a seed replays the same failures. */
static bool roll(void)
{
	uint64_t x = inj.rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	inj.rng = x;
	return (x * 0x2545f4914f6cdd1dull) % 1000000u < inj.ppm;
}

/* Caller holds mu. */
static bool decide(const char *file, const struct site *s)
{
	switch (inj.mode) {
	case M_NTH:
		return inj.attempts == inj.nth;
	case M_ALL:
		return true;
	case M_SITE:
		return s && s->attempts == inj.nth &&
		       s->line == inj.site_line && !strcmp(file, inj.site_file);
	case M_RANDOM:
		return roll();
	default:
		return false;
	}
}

bool rr__alloc_should_fail(const char *file, int line)
{
	struct site *s;
	bool fail;

	pthread_mutex_lock(&inj.mu);
	if (inj.mode == M_OFF) {
		pthread_mutex_unlock(&inj.mu);
		return false;
	}
	inj.attempts++;
	s = site_of(file, line);
	if (s)
		s->attempts++;
	else
		inj.dropped++;
	fail = decide(file, s);
	if (fail) {
		inj.failed++;
		if (s)
			s->failed++;
	}
	pthread_mutex_unlock(&inj.mu);
	return fail;
}

static void arm(enum mode m, uint64_t nth)
{
	pthread_mutex_lock(&inj.mu);
	inj.mode = m;
	inj.nth = nth;
	inj.attempts = inj.failed = inj.dropped = 0;
	inj.nsites = 0;
	memset(inj.slot, 0, sizeof(inj.slot));
	pthread_mutex_unlock(&inj.mu);
	atomic_store_explicit(&rr__alloc_armed, m != M_OFF,
			      memory_order_release);
}

void rr_alloc_inject_count(void)
{
	arm(M_COUNT, 0);
}

void rr_alloc_inject_fail_nth(uint64_t n)
{
	arm(M_NTH, n);
}

void rr_alloc_inject_fail_all(void)
{
	arm(M_ALL, 0);
}

void rr_alloc_inject_fail_site(const char *file, int line, uint64_t k)
{
	pthread_mutex_lock(&inj.mu);
	inj.site_file = file;
	inj.site_line = line;
	pthread_mutex_unlock(&inj.mu);
	arm(M_SITE, k);
}

void rr_alloc_inject_fail_random(uint64_t seed, uint32_t ppm)
{
	pthread_mutex_lock(&inj.mu);
	inj.rng = seed ? seed : 0x9e3779b97f4a7c15ull; /* xorshift: not 0 */
	inj.ppm = ppm;
	pthread_mutex_unlock(&inj.mu);
	arm(M_RANDOM, 0);
}

void rr_alloc_inject_off(void)
{
	atomic_store_explicit(&rr__alloc_armed, 0, memory_order_release);
	pthread_mutex_lock(&inj.mu);
	inj.mode = M_OFF;
	pthread_mutex_unlock(&inj.mu);
}

void rr_alloc_inject_stats(struct rr_alloc_inject_stats *out)
{
	pthread_mutex_lock(&inj.mu);
	*out = (struct rr_alloc_inject_stats){.attempts = inj.attempts,
					      .failed = inj.failed,
					      .nsites = inj.nsites,
					      .sites_dropped = inj.dropped};
	pthread_mutex_unlock(&inj.mu);
}

int rr_alloc_inject_site(uint32_t i, struct rr_alloc_site_info *out)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&inj.mu);
	if (i < inj.nsites) {
		const struct site *s = &inj.sites[i];

		*out = (struct rr_alloc_site_info){.file = s->file,
						   .line = s->line,
						   .attempts = s->attempts,
						   .failed = s->failed,
						   .first = s->first};
		rc = 0;
	}
	pthread_mutex_unlock(&inj.mu);
	return rc;
}
