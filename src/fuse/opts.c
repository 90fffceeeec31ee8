// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A mount's -o list: the options of the kernel NFS client (nfs(5)) that
 * mean something here, with its defaults (attribute cache, hard or soft,
 * timeo and retrans, rsize and wsize), ours (threads, readahead), and the
 * rest left for libfuse.
 */
#include <errno.h>
#include <stddef.h>
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

/* A whole number in [lo, hi]. */
static int count(const char *v, unsigned lo, unsigned hi, unsigned *out)
{
	double d;

	if (seconds(v, &d) || d < lo || d > hi || d != (unsigned)d)
		return -EINVAL;
	*out = (unsigned)d;
	return 0;
}

/* The numeric options that are not times: 0, 1 (not one), -EINVAL. */
static int counted(const char *opt, size_t klen, const char *v,
		   struct rr_fuse_opts *o)
{
	static const struct {
		const char *key;
		size_t at;
		unsigned lo, hi;
	} n[] = {
		{"threads", offsetof(struct rr_fuse_opts, max_threads), 1,
		 1024},
		{"timeo", offsetof(struct rr_fuse_opts, timeo), 1, 36000},
		{"retrans", offsetof(struct rr_fuse_opts, retrans), 0, 100},
		{"rsize", offsetof(struct rr_fuse_opts, rsize), 4096, 1u << 20},
		{"wsize", offsetof(struct rr_fuse_opts, wsize), 4096, 1u << 20},
		{"readahead", offsetof(struct rr_fuse_opts, readahead_kb), 0,
		 1u << 20},
	};

	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		if (klen == strlen(n[i].key) && !strncmp(opt, n[i].key, klen))
			return count(v, n[i].lo, n[i].hi,
				     (unsigned *)((char *)o + n[i].at));
	return 1;
}

static int lookupcache(const char *v, struct rr_fuse_opts *o)
{
	if (!v)
		return -EINVAL;
	if (!strcmp(v, "all"))
		o->lookupcache = RR_FUSE_LC_ALL;
	else if (!strcmp(v, "pos") || !strcmp(v, "positive"))
		o->lookupcache = RR_FUSE_LC_POS;
	else if (!strcmp(v, "none"))
		o->lookupcache = RR_FUSE_LC_NONE;
	else
		return -EINVAL;
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
	if (KEY("noac") || KEY("hard") || KEY("soft")) {
		if (v) /* flags take no value */
			return -EINVAL;
		if (KEY("noac"))
			o->noac = true;
		else
			o->soft = KEY("soft");
		return 0;
	}
	if (KEY("lookupcache"))
		return lookupcache(v, o);
	rc = counted(opt, klen, v, o);
	if (rc != 1)
		return rc;
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

	*o = (struct rr_fuse_opts){.acregmin = 3,
				   .acregmax = 60,
				   .acdirmin = 30,
				   .acdirmax = 60,
				   .timeo = 600,
				   .retrans = 2,
				   .readahead_kb = RR_FUSE_READAHEAD_AUTO};
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

int rr__fuse_timeout_ms(const struct rr_fuse_opts *o)
{
	/* soft: timeo, then retrans more of it, as nfs(5) over TCP */
	return o->soft ? (int)(o->timeo * 100u * (o->retrans + 1u)) : -1;
}
