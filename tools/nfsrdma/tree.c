// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * get -r and put -r: a directory tree, file by file on one mount, each
 * file under its temporary name until complete (xfer.c). As cp -r: a
 * destination that exists as a directory receives the tree under its own
 * name; directories are made as needed; what is neither a regular file
 * nor a directory (a symbolic link, a device) is skipped with a line, and
 * a failed file does not stop the others. Ctrl-C stops at the next file.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nfsrdma.h"

#define TREE_DEPTH_MAX 128

static char *join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *p = malloc(dl + strlen(name) + 2);

	if (p)
		sprintf(p, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/",
			name);
	return p;
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : s ? "" : path;
}

static bool is_dot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* ------------------------------------------------------------- get -r */

static int get_entries(struct cli *c, struct rr_nfs *n, const char *remote,
		       const char *local, int depth);

static int get_entry(struct cli *c, struct rr_nfs *n, const char *rpath,
		     const char *lpath, int depth)
{
	struct stat st;
	int rc = rr_nfs_lstat(n, rpath, &st);

	if (rc)
		return cli_fail(rpath, rc);
	if (S_ISDIR(st.st_mode))
		return get_entries(c, n, rpath, lpath, depth + 1);
	if (S_ISREG(st.st_mode))
		return get_file(c, n, rpath, lpath);
	fprintf(stderr, "nfsrdma: %s: skipped, not a regular file\n", rpath);
	return 0;
}

static int get_entries(struct cli *c, struct rr_nfs *n, const char *remote,
		       const char *local, int depth)
{
	const struct rr_nfs_dirent *e;
	struct rr_nfs_dir *d;
	int rc, bad = 0;

	if (depth > TREE_DEPTH_MAX)
		return cli_failf("%s: more than %d directories deep", remote,
				 TREE_DEPTH_MAX);
	if (mkdir(local, 0755) && errno != EEXIST)
		return cli_fail(local, -errno);
	rc = rr_nfs_opendir(n, remote, &d);
	if (rc)
		return cli_fail(remote, rc);
	while (!xfer_interrupted() && (e = rr_nfs_readdir(d))) {
		char *rp, *lp;

		if (is_dot(e->name))
			continue;
		rp = join(remote, e->name);
		lp = join(local, e->name);
		bad |= rp && lp ? get_entry(c, n, rp, lp, depth)
				: cli_fail(remote, -ENOMEM);
		free(rp);
		free(lp);
	}
	rr_nfs_closedir(d);
	return bad || xfer_interrupted() ? 1 : 0;
}

int get_tree(struct cli *c, struct rr_nfs *n, const char *remote,
	     const char *local)
{
	struct stat st;
	char *dest;
	int rc;

	if (stat(local, &st) || !S_ISDIR(st.st_mode) || !*base_of(remote))
		return get_entries(c, n, remote, local, 0);
	dest = join(local, base_of(remote));
	if (!dest)
		return cli_fail(local, -ENOMEM);
	rc = get_entries(c, n, remote, dest, 0);
	free(dest);
	return rc;
}

/* ------------------------------------------------------------- put -r */

static int put_entries(struct cli *c, struct rr_nfs *n, const char *local,
		       const char *remote, int depth);

static int put_entry(struct cli *c, struct rr_nfs *n, const char *lpath,
		     const char *rpath, int depth)
{
	struct stat st;

	if (lstat(lpath, &st))
		return cli_fail(lpath, -errno);
	if (S_ISDIR(st.st_mode))
		return put_entries(c, n, lpath, rpath, depth + 1);
	if (S_ISREG(st.st_mode))
		return put_file(c, n, lpath, rpath);
	fprintf(stderr, "nfsrdma: %s: skipped, not a regular file\n", lpath);
	return 0;
}

static int put_entries(struct cli *c, struct rr_nfs *n, const char *local,
		       const char *remote, int depth)
{
	struct dirent *e;
	DIR *d;
	int rc, bad = 0;

	if (depth > TREE_DEPTH_MAX)
		return cli_failf("%s: more than %d directories deep", local,
				 TREE_DEPTH_MAX);
	rc = rr_nfs_mkdir(n, remote, 0755);
	if (rc && rc != -EEXIST)
		return cli_fail(remote, rc);
	d = opendir(local);
	if (!d)
		return cli_fail(local, -errno);
	while (!xfer_interrupted() && (e = readdir(d))) {
		char *lp, *rp;

		if (is_dot(e->d_name))
			continue;
		lp = join(local, e->d_name);
		rp = join(remote, e->d_name);
		bad |= lp && rp ? put_entry(c, n, lp, rp, depth)
				: cli_fail(local, -ENOMEM);
		free(lp);
		free(rp);
	}
	closedir(d);
	return bad || xfer_interrupted() ? 1 : 0;
}

int put_tree(struct cli *c, struct rr_nfs *n, const char *local,
	     const char *remote)
{
	struct stat st;
	char *dest;
	int rc;

	if (rr_nfs_stat(n, remote, &st) || !S_ISDIR(st.st_mode) ||
	    !*base_of(local))
		return put_entries(c, n, local, remote, 0);
	dest = join(remote, base_of(local));
	if (!dest)
		return cli_fail(remote, -ENOMEM);
	rc = put_entries(c, n, local, dest, 0);
	free(dest);
	return rc;
}
