/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The hostile suites' good client: see good_client.h. */
#include "good_client.h"

#include <rpcrdma/nfs3.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define MAX_LAT (1u << 16)

uint8_t good_pat(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 9));
}

void good_make_file(const char *path)
{
	static uint8_t buf[GOOD_FILE_LEN];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	for (size_t i = 0; i < GOOD_FILE_LEN; i++)
		buf[i] = good_pat(i);
	assert_int_equal(write(fd, buf, GOOD_FILE_LEN), GOOD_FILE_LEN);
	close(fd);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double good_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double good_p99(double *lat, unsigned n)
{
	qsort(lat, n, sizeof(lat[0]), cmp_double);
	return n ? lat[n * 99 / 100] : 0;
}

static void one_round(struct rr_nfs_file *in, struct rr_nfs_file *out,
		      struct rr_nfs *n, size_t len, unsigned i)
{
	static uint8_t buf[GOOD_IO_MAX], back[GOOD_IO_MAX];
	uint64_t off = (uint64_t)(i * 7919u % (GOOD_FILE_LEN / len)) * len;
	struct stat st;

	assert_int_equal(rr_nfs_stat(n, "data", &st), 0);
	assert_int_equal(st.st_size, GOOD_FILE_LEN);
	assert_int_equal(rr_nfs_pread(in, buf, len, off), len);
	for (size_t k = 0; k < len; k++)
		if (buf[k] != good_pat(off + k))
			fail_msg("READ at %llu: byte %zu differs",
				 (unsigned long long)off, k);
	memset(buf, (int)(i & 0xff), len);
	assert_int_equal(rr_nfs_pwrite(out, buf, len, off), len);
	assert_int_equal(rr_nfs_pread(out, back, len, off), len);
	if (memcmp(buf, back, len))
		fail_msg("round %u: READ at %llu after WRITE: got %#x..., "
			 "wrote %#x",
			 i, (unsigned long long)off, back[0], buf[0]);
}

struct good_run good_client(const char *url, size_t io_len, uint64_t min_ms)
{
	struct rr_nfs_opts o = {.timeout_ms = 20000};
	static double lat[MAX_LAT];
	uint64_t t0 = rr_t_now_ms();
	struct rr_nfs_file *in, *out;
	struct rr_nfs *n = NULL;
	struct good_run run = {0};
	unsigned i = 0;
	int rc;

	assert_true(io_len > 0 && io_len <= GOOD_IO_MAX);
	rc = rr_nfs_mount(url, &o, &n);
	if (rc)
		fail_msg("good client: mount: %d (%s)", rc, rr_nfs_error());
	assert_int_equal(rr_nfs_open(n, "data", O_RDONLY, 0, &in), 0);
	assert_int_equal(rr_nfs_open(n, "mine", O_RDWR | O_CREAT, 0644, &out),
			 0);
	for (; i < MAX_LAT; i++) {
		uint64_t el = rr_t_now_ms() - t0;
		double s;

		if ((i >= GOOD_ROUNDS && el >= min_ms) || el >= GOOD_MAX_MS)
			break;
		s = good_now_us();
		one_round(in, out, n, io_len, i);
		lat[i] = (good_now_us() - s) / 1e3;
	}
	assert_int_equal(rr_nfs_close(in), 0);
	assert_int_equal(rr_nfs_close(out), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
	run.rounds = i;
	run.p99_ms = good_p99(lat, i);
	return run;
}

void good_judge(const char *suite, const char *attack, struct good_run run,
		double base_p99, const struct rr_t_daemon *d, long log0)
{
	long rss = rr_t_daemon_peak_rss_kb(d);
	long log = rr_t_daemon_log_bytes(d) - log0;
	double bound =
		5 * base_p99 > GOOD_STARVED_MS ? 5 * base_p99 : GOOD_STARVED_MS;

	printf("%s: %-30s good p99 %.2f ms over %u rounds (alone %.2f ms), "
	       "daemon peak RSS %ld MiB, log +%ld B\n",
	       suite, attack, run.p99_ms, run.rounds, base_p99, rss >> 10, log);
	fflush(stdout);
	assert_true(rss > 0);
	if (run.rounds < GOOD_ROUNDS)
		fail_msg("%s: good client starved: %u rounds in %d ms", attack,
			 run.rounds, GOOD_MAX_MS);
	if (run.p99_ms > bound)
		fail_msg("%s: good client p99 %.1f ms > %.1f ms", attack,
			 run.p99_ms, bound);
	if (rss > GOOD_RSS_BOUND_KB)
		fail_msg("%s: daemon peak RSS %ld KiB > %ld KiB", attack, rss,
			 GOOD_RSS_BOUND_KB);
	if (log > GOOD_LOG_BOUND)
		fail_msg("%s: the daemon logged %ld bytes", attack, log);
}
