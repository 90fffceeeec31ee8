// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A daemon's own allocations, counted on request (alloc_count.h). */
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/alloc_inject.h>

#include "alloc_count.h"

bool tool_count_allocs(void)
{
	const char *v = getenv("RPCRDMA_COUNT_ALLOCS");

	if (!v || strcmp(v, "1"))
		return false;
	rr_alloc_inject_count();
	return true;
}

void tool_allocs_text(FILE *f)
{
	struct rr_alloc_inject_stats st;
	struct rr_alloc_site_info si;

	rr_alloc_inject_stats(&st);
	fprintf(f, "allocations %llu\n", (unsigned long long)st.attempts);
	for (uint32_t i = 0; i < st.nsites; i++)
		if (!rr_alloc_inject_site(i, &si))
			fprintf(f, "allocated at %s:%d %llu\n", si.file,
				si.line, (unsigned long long)si.attempts);
}

void tool_allocs_json(struct jw *j, const char *key)
{
	struct rr_alloc_inject_stats st;
	struct rr_alloc_site_info si;
	char site[512];

	rr_alloc_inject_stats(&st);
	jw_obj(j, key);
	jw_u64(j, "attempts", st.attempts);
	jw_u64(j, "unlisted", st.sites_dropped);
	jw_arr(j, "sites");
	for (uint32_t i = 0; i < st.nsites; i++) {
		if (rr_alloc_inject_site(i, &si))
			continue;
		snprintf(site, sizeof(site), "%s:%d", si.file, si.line);
		jw_obj(j, NULL);
		jw_str(j, "site", site);
		jw_u64(j, "attempts", si.attempts);
		jw_obj_end(j);
	}
	jw_arr_end(j);
	jw_obj_end(j);
}
