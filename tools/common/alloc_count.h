/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A daemon's own allocations in its stats: the library's and the
 * daemon's (rr_malloc and its kind; not libc's, libfuse's or libcephfs'),
 * counted from its start when RPCRDMA_COUNT_ALLOCS=1. A figure that grows
 * with the calls served is a per-call allocation on a path the issues
 * rule them out of (tests/fuse/mount.sh noalloc, tests/ceph). Counting
 * costs a lock per allocation, so it is asked for, never on.
 */
#ifndef RR_TOOLS_ALLOC_COUNT_H
#define RR_TOOLS_ALLOC_COUNT_H

#include <stdbool.h>
#include <stdio.h>

#include "json.h"

/* Starts counting if the environment asks; whether it does. */
bool tool_count_allocs(void);
/* "allocations N", then "allocated at FILE:LINE N" per site. */
void tool_allocs_text(FILE *f);
/* {"attempts": N, "unlisted": N, "sites": [{"site", "attempts"}...]} */
void tool_allocs_json(struct jw *j, const char *key);

#endif
