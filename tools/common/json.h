/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A streaming JSON writer for the tools' reports: one object on one line,
 * commas and escaping done here so no report writes them by hand. Keys
 * are NULL for the top-level value and for array elements.
 *
 * Not thread-safe; one writer per FILE. Nesting deeper than JW_MAX_DEPTH
 * is a bug in the caller (the reports nest three or four levels).
 */
#ifndef RR_TOOLS_JSON_H
#define RR_TOOLS_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 16

struct jw {
	FILE *f;
	unsigned depth;
	bool more[JW_MAX_DEPTH]; /* this level has a member: comma first */
};

void jw_init(struct jw *j, FILE *f);
void jw_obj(struct jw *j, const char *key);
void jw_obj_end(struct jw *j);
void jw_arr(struct jw *j, const char *key);
void jw_arr_end(struct jw *j);
/* s NULL: null. */
void jw_str(struct jw *j, const char *key, const char *s);
void jw_u64(struct jw *j, const char *key, uint64_t v);
/* v with that many decimals; NaN or infinite (not measured): null. */
void jw_num(struct jw *j, const char *key, double v, int decimals);
void jw_bool(struct jw *j, const char *key, bool v);
void jw_null(struct jw *j, const char *key);
/* Ends the line and flushes: 0, or -EIO when the stream failed. */
int jw_finish(struct jw *j);

#endif
