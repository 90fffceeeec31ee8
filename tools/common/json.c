// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The tools' JSON writer (json.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>

#include "json.h"

void jw_init(struct jw *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->more[0] = false;
}

/*
 * Strings from the command line (URLs, provider names) may hold quotes,
 * backslashes or control characters; anything else passes as it is.
 */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The comma before every member but a level's first, then "key":. */
static void member(struct jw *j, const char *key)
{
	if (j->more[j->depth])
		fputc(',', j->f);
	j->more[j->depth] = true;
	if (key) {
		put_string(j->f, key);
		fputc(':', j->f);
	}
}

static void open_level(struct jw *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JW_MAX_DEPTH)
		j->depth++;
	j->more[j->depth] = false;
}

static void close_level(struct jw *j, char c)
{
	fputc(c, j->f);
	if (j->depth)
		j->depth--;
}

void jw_obj(struct jw *j, const char *key)
{
	open_level(j, key, '{');
}

void jw_obj_end(struct jw *j)
{
	close_level(j, '}');
}

void jw_arr(struct jw *j, const char *key)
{
	open_level(j, key, '[');
}

void jw_arr_end(struct jw *j)
{
	close_level(j, ']');
}

void jw_str(struct jw *j, const char *key, const char *s)
{
	member(j, key);
	if (s)
		put_string(j->f, s);
	else
		fputs("null", j->f);
}

void jw_u64(struct jw *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void jw_num(struct jw *j, const char *key, double v, int decimals)
{
	member(j, key);
	/* JSON has no NaN or Infinity; a figure nobody measured is null. */
	if (isfinite(v))
		fprintf(j->f, "%.*f", decimals, v);
	else
		fputs("null", j->f);
}

void jw_bool(struct jw *j, const char *key, bool v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void jw_null(struct jw *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

int jw_finish(struct jw *j)
{
	fputc('\n', j->f);
	if (fflush(j->f) || ferror(j->f))
		return -EIO;
	return 0;
}
