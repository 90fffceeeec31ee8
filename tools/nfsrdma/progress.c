// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * get/put/verify progress: one line on stderr when it is a terminal (a
 * log file gets the summary only), redrawn at most ten times a second.
 *
 * The rate shown is the current one, a moving average over about two
 * seconds (exponential, so it needs no history), and the ETA comes from
 * it: the average since the start would hide a transfer that stalled.
 * The line fits the terminal's width (TIOCGWINSZ, else $COLUMNS, else
 * 80) less one column, so the cursor never reaches the last column and
 * the terminal never wraps; it starts with a carriage return and ends by
 * erasing the rest of the line (EL, "ESC [ K"), so a shorter line leaves
 * nothing of the longer one before it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "nfsrdma.h"

#define REDRAW_NS  100000000ull
#define RATE_TAU_S 2.0
#define BAR_MIN	   10
#define BAR_MAX	   40
#define LINE_MAX_  512

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

/* Columns of the terminal on stderr. */
static int term_cols(void)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");

	if (!ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col)
		return ws.ws_col;
	if (env && atoi(env) > 0)
		return atoi(env);
	return 80;
}

static void fmt_eta(char *buf, size_t cap, const struct progress *p)
{
	double left;
	unsigned long s;

	if (!p->total || p->rate <= 0) {
		snprintf(buf, cap, "ETA --:--");
		return;
	}
	left = p->total > p->done ? (double)(p->total - p->done) : 0;
	s = (unsigned long)ceil(left / p->rate);
	if (s >= 3600)
		snprintf(buf, cap, "ETA %lu:%02lu:%02lu", s / 3600, s / 60 % 60,
			 s % 60);
	else
		snprintf(buf, cap, "ETA %lu:%02lu", s / 60, s % 60);
}

/* The current rate, folded in from the bytes since the last sample. */
static void sample(struct progress *p, uint64_t now)
{
	double dt = (double)(now - p->sample_ns) / 1e9;
	double inst, w;

	if (dt <= 0)
		return;
	inst = (double)(p->done - p->sample_done) / dt;
	w = 1 - exp(-dt / RATE_TAU_S);
	p->rate = p->sample_ns == p->start_ns ? inst
					      : w * inst + (1 - w) * p->rate;
	p->sample_ns = now;
	p->sample_done = p->done;
}

/*
 * The bar with the room that the text leaves; in a narrow terminal no
 * bar, then no total either, and only then a cut.
 */
static void compose(const struct progress *p, int cols, char *line)
{
	char done[32], total[32], rate[32], eta[32], tail[160],
		bar[BAR_MAX + 1];
	double frac = p->total ? (double)p->done / (double)p->total : 0;
	int room, width, fill;

	fmt_bytes(done, sizeof(done), (double)p->done);
	fmt_bytes(total, sizeof(total), (double)p->total);
	fmt_bytes(rate, sizeof(rate), p->rate);
	fmt_eta(eta, sizeof(eta), p);
	frac = frac > 1 ? 1 : frac;
	if (p->total)
		snprintf(tail, sizeof(tail), " %3.0f%% %s / %s %s/s %s",
			 frac * 100, done, total, rate, eta);
	else
		snprintf(tail, sizeof(tail), " %s %s/s", done, rate);
	room = cols - 1 - (int)strlen(p->label) - (int)strlen(tail) - 3;
	width = room > BAR_MAX ? BAR_MAX : room;
	if (p->total && width >= BAR_MIN) {
		fill = (int)(frac * width);
		for (int i = 0; i < width; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[width] = '\0';
		snprintf(line, LINE_MAX_, "%s [%s]%s", p->label, bar, tail);
		return;
	}
	snprintf(line, LINE_MAX_, "%s%s", p->label, tail);
	if (p->total && (int)strlen(line) > cols - 1)
		snprintf(line, LINE_MAX_, "%s %3.0f%% %s %s/s %s", p->label,
			 frac * 100, done, rate, eta);
	if ((int)strlen(line) > cols - 1) /* too narrow even for that */
		line[cols > 1 ? cols - 1 : 0] = '\0';
}

static void draw(struct progress *p, uint64_t now)
{
	char line[LINE_MAX_];

	sample(p, now);
	compose(p, term_cols(), line);
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	p->last_ns = now;
}

void progress_start(struct progress *p, const char *label, uint64_t total,
		    bool quiet)
{
	memset(p, 0, sizeof(*p));
	p->on = !quiet && isatty(STDERR_FILENO);
	p->label = label;
	p->total = total;
	p->start_ns = p->last_ns = p->sample_ns = now_ns();
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

void progress_clear(struct progress *p)
{
	if (p->on) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

void progress_end(struct progress *p, bool quiet)
{
	uint64_t now = now_ns();
	double secs = (double)(now - p->start_ns) / 1e9;
	char done[32], rate[32];

	progress_clear(p);
	if (quiet)
		return;
	fmt_bytes(done, sizeof(done), (double)p->done);
	fmt_bytes(rate, sizeof(rate), secs > 0 ? (double)p->done / secs : 0);
	fprintf(stderr, "%s: %s in %.3f s, %s/s\n", p->label, done, secs, rate);
}
