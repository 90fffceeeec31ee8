// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A mount's -o list: the attribute-cache options the kernel NFS client
 * takes (nfs(5)), with its defaults, and the rest left for libfuse.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "nfs_fuse.h"

static int seconds(const char *v, double *out)
{
	char *end;
	double d;

	if (!v || !*v)
		return -EINVAL;
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || d < 0 || d > 86400 * 365)
		return -EINVAL;
	*out = d;
	return 0;
}

/* One option: ours (0), not ours (1), or a bad value of ours (-EINVAL). */
static int ours(const char *opt, struct rr_fuse_opts *o)
{
	const char *eq = strchr(opt, '=');
	size_t klen = eq ? (size_t)(eq - opt) : strlen(opt);
	const char *v = eq ? eq + 1 : NULL;
	double d;
	int rc;

#define KEY(k) (klen == strlen(k) && !strncmp(opt, k, klen))
	if (KEY("noac") && !v) {
		o->noac = true;
		return 0;
	}
	if (KEY("threads")) {
		rc = seconds(v, &d);
		if (rc || d < 1 || d > 1024 || d != (unsigned)d)
			return -EINVAL;
		o->max_threads = (unsigned)d;
		return 0;
	}
	if (!KEY("actimeo") && !KEY("acregmin") && !KEY("acregmax") &&
	    !KEY("acdirmin") && !KEY("acdirmax"))
		return 1;
	rc = seconds(v, &d);
	if (rc)
		return rc;
	if (KEY("actimeo"))
		o->acregmin = o->acregmax = o->acdirmin = o->acdirmax = d;
	else if (KEY("acregmin"))
		o->acregmin = d;
	else if (KEY("acregmax"))
		o->acregmax = d;
	else if (KEY("acdirmin"))
		o->acdirmin = d;
	else
		o->acdirmax = d;
	return 0;
#undef KEY
}

static void append(char *out, const char *opt)
{
	if (*out)
		strcat(out, ",");
	strcat(out, opt);
}

int rr__fuse_opts_parse(const char *opts, struct rr_fuse_opts *o,
			char **fuse_opts, const char **bad)
{
	char *copy = rr_strdup(opts ? opts : "");
	char *out = rr_calloc(1, strlen(opts ? opts : "") + 1);
	char *save = NULL;
	int rc = 0;

	*o = (struct rr_fuse_opts){
		.acregmin = 3, .acregmax = 60, .acdirmin = 30, .acdirmax = 60};
	*bad = NULL;
	if (!copy || !out) {
		free(copy);
		free(out);
		return -ENOMEM;
	}
	for (char *t = strtok_r(copy, ",", &save); t && !rc;
	     t = strtok_r(NULL, ",", &save)) {
		rc = ours(t, o);
		if (rc == 1)
			append(out, t);
		if (rc < 0)
			*bad = opts + (t - copy);
		rc = rc < 0 ? rc : 0;
	}
	if (!rc && (o->acregmin > o->acregmax || o->acdirmin > o->acdirmax)) {
		*bad = "acregmin/acdirmin above its max";
		rc = -EINVAL;
	}
	free(copy);
	if (rc)
		free(out);
	else
		*fuse_opts = out;
	return rc;
}
