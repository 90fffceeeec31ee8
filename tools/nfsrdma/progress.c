// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * get/put progress: a bar with throughput, redrawn at most ten times a
 * second, only when stderr is a terminal (a log file gets the summary).
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "nfsrdma.h"

#define REDRAW_NS 100000000ull
#define BAR_WIDTH 30

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fmt_bytes(char *buf, size_t cap, double b)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

static void draw(struct progress *p, uint64_t now)
{
	double secs = (double)(now - p->start_ns) / 1e9;
	double frac = p->total ? (double)p->done / (double)p->total : 1;
	char done[32], total[32], rate[32], bar[BAR_WIDTH + 1];
	int fill = (int)(frac * BAR_WIDTH);

	for (int i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = '\0';
	fmt_bytes(done, sizeof(done), (double)p->done);
	fmt_bytes(total, sizeof(total), (double)p->total);
	fmt_bytes(rate, sizeof(rate), secs > 0 ? (double)p->done / secs : 0);
	fprintf(stderr, "\r%s [%s] %3.0f%% %s / %s  %s/s ", p->label, bar,
		frac * 100, done, total, rate);
	fflush(stderr);
	p->last_ns = now;
}

void progress_start(struct progress *p, const char *label, uint64_t total,
		    bool quiet)
{
	p->on = !quiet && isatty(STDERR_FILENO);
	p->label = label;
	p->total = total;
	p->done = 0;
	p->start_ns = p->last_ns = now_ns();
}

void progress_add(struct progress *p, uint64_t n)
{
	uint64_t now;

	p->done += n;
	if (!p->on)
		return;
	now = now_ns();
	if (now - p->last_ns >= REDRAW_NS)
		draw(p, now);
}

void progress_end(struct progress *p, bool quiet)
{
	uint64_t now = now_ns();
	double secs = (double)(now - p->start_ns) / 1e9;
	char done[32], rate[32];

	if (p->on) {
		draw(p, now);
		fputc('\n', stderr);
	}
	if (quiet)
		return;
	fmt_bytes(done, sizeof(done), (double)p->done);
	fmt_bytes(rate, sizeof(rate), secs > 0 ? (double)p->done / secs : 0);
	fprintf(stderr, "%s: %s in %.3f s, %s/s\n", p->label, done, secs, rate);
}
