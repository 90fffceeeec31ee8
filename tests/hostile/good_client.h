/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The good client of the hostile suites (hostile_tcp.c, hostile_rdma.c):
 * our NFSv3 library, mounted afresh for each measure, in rounds of GETATTR,
 * a READ whose every byte is checked, a WRITE and its READ back. Its p99
 * alone is the baseline; beside an attack it must stay within 5x of that
 * (with a floor of GOOD_STARVED_MS, so that scheduler noise on a shared
 * machine is no failure while a client waiting for seconds is), and the
 * daemon's peak RSS and log must stay under their bounds.
 */
#ifndef RR_TEST_HOSTILE_GOOD_CLIENT_H
#define RR_TEST_HOSTILE_GOOD_CLIENT_H

#include "daemon.h"

#include <stddef.h>
#include <stdint.h>

#define GOOD_FILE_LEN	(1u << 20) /* the file "data" the client reads */
#define GOOD_IO_MAX	(64u << 10)
#define GOOD_ROUNDS	150
#define GOOD_STARVED_MS 250
#define GOOD_MAX_MS	30000 /* a starved client stops here */
/*
 * Under ASan freed memory waits in a quarantine of up to 256 MiB, and
 * TSan adds its shadow: there the bound only tells growth without limit
 * (gigabytes on the old tree) from a daemon that holds its bounds.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GOOD_RSS_BOUND_KB (1024L << 10)
#else
#define GOOD_RSS_BOUND_KB (256L << 10)
#endif
#define GOOD_LOG_BOUND (64L << 10)

/* The byte at offset i of "data". */
uint8_t good_pat(size_t i);
/* Writes GOOD_FILE_LEN bytes of good_pat to path. */
void good_make_file(const char *path);

/* CLOCK_MONOTONIC in microseconds. */
double good_now_us(void);
/* The 99th percentile of lat[0..n) in its unit; sorts lat. */
double good_p99(double *lat, unsigned n);

struct good_run {
	double p99_ms;
	unsigned rounds;
};

/*
 * Mounts url (its export holds "data"), runs rounds of io_len bytes
 * (at most GOOD_IO_MAX): GOOD_ROUNDS, and for min_ms at least, until
 * GOOD_MAX_MS at most.
 */
struct good_run good_client(const char *url, size_t io_len, uint64_t min_ms);

/*
 * The verdicts on a run beside the attack: printed first (the figures are
 * the evidence; the bounds only catch starvation and growth), then
 * checked. log0: the daemon's log size before the attack.
 */
void good_judge(const char *suite, const char *attack, struct good_run run,
		double base_p99, const struct rr_t_daemon *d, long log0);

#endif
