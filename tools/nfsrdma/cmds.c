// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The namespace commands: ls, stat, cat, mkdir, rm, df, mv. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nfsrdma.h"

#define CAT_BUF (4u << 20)

static void mode_str(mode_t m, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = S_ISDIR(m)    ? 'd'
		 : S_ISLNK(m)  ? 'l'
		 : S_ISCHR(m)  ? 'c'
		 : S_ISBLK(m)  ? 'b'
		 : S_ISFIFO(m) ? 'p'
		 : S_ISSOCK(m) ? 's'
			       : '-';
	for (int i = 0; i < 9; i++)
		out[i + 1] = m & (0400 >> i) ? rwx[i] : '-';
	out[10] = '\0';
}

static void time_str(time_t t, char *buf, size_t cap)
{
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%d %H:%M", &tm);
}

static char *join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *p = malloc(dl + strlen(name) + 2);

	if (p)
		sprintf(p, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/",
			name);
	return p;
}

static void print_long(struct rr_nfs *n, const char *path, const char *name,
		       const struct stat *st)
{
	char mode[11], when[32], target[1024] = "";

	mode_str(st->st_mode, mode);
	time_str(st->st_mtim.tv_sec, when, sizeof(when));
	if (S_ISLNK(st->st_mode) &&
	    rr_nfs_readlink(n, path, target, sizeof(target)) < 0)
		target[0] = '\0';
	printf("%s %3lu %5u %5u %12" PRIu64 " %s %s%s%s\n", mode,
	       (unsigned long)st->st_nlink, (unsigned)st->st_uid,
	       (unsigned)st->st_gid, (uint64_t)st->st_size, when, name,
	       target[0] ? " -> " : "", target);
}

static int by_name(const void *a, const void *b)
{
	const struct rr_nfs_dirent *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

#define LS_DEPTH_MAX 128 /* ls -R: deeper is a loop or an attack */

static int list_tree(struct cli *c, struct rr_nfs *n, const char *path,
		     int depth);

/* One entry: its name, or with -l its line. */
static void print_entry(struct cli *c, struct rr_nfs *n, const char *path,
			const struct rr_nfs_dirent *e, struct stat *st)
{
	if (!c->long_list) {
		printf("%s\n", e->name);
		return;
	}
	if (!e->has_attr && rr_nfs_lstat(n, path, st))
		memset(st, 0, sizeof(*st));
	print_long(n, path, e->name, st);
}

/* ls -R: each subdirectory after the listing, as ls(1) orders them. */
static int recurse(struct cli *c, struct rr_nfs *n, const char *path,
		   const struct rr_nfs_dirent **v, size_t cnt, int depth)
{
	int rc = 0;

	for (size_t i = 0; i < cnt; i++) {
		struct stat st = v[i]->st;
		char *p;

		if (!strcmp(v[i]->name, ".") || !strcmp(v[i]->name, ".."))
			continue;
		p = join(path, v[i]->name);
		if (!p)
			return -ENOMEM;
		if (!v[i]->has_attr && rr_nfs_lstat(n, p, &st))
			st.st_mode = 0;
		if (S_ISDIR(st.st_mode)) {
			printf("\n");
			rc |= list_tree(c, n, p, depth + 1);
		}
		free(p);
	}
	return rc;
}

static int list_dir(struct cli *c, struct rr_nfs *n, const char *path,
		    const char *url, int depth)
{
	const struct rr_nfs_dirent *e, **v = NULL;
	struct rr_nfs_dir *d;
	size_t cnt = 0;
	int rc = rr_nfs_opendir(n, path, &d);

	if (rc)
		return cli_fail(url, rc);
	while ((e = rr_nfs_readdir(d))) {
		const struct rr_nfs_dirent **nv =
			realloc(v, (cnt + 1) * sizeof(*v));

		if (!nv) {
			free(v);
			rr_nfs_closedir(d);
			return cli_fail(url, -ENOMEM);
		}
		v = nv;
		v[cnt++] = e;
	}
	qsort(v, cnt, sizeof(*v), by_name);
	for (size_t i = 0; i < cnt; i++) {
		struct stat st = v[i]->st;
		char *p = join(path, v[i]->name);

		if (!strcmp(v[i]->name, ".") || !strcmp(v[i]->name, ".."))
			continue; /* as ls(1) without -a */
		print_entry(c, n, p ? p : path, v[i], &st);
		free(p);
	}
	if (c->recursive)
		rc = recurse(c, n, path, v, cnt, depth) ? 1 : 0;
	free(v);
	rr_nfs_closedir(d);
	return rc;
}

/* ls -R: "path:" over each directory's listing. */
static int list_tree(struct cli *c, struct rr_nfs *n, const char *path,
		     int depth)
{
	if (depth > LS_DEPTH_MAX)
		return cli_failf("%s: more than %d directories deep", path,
				 LS_DEPTH_MAX);
	printf("%s:\n", path);
	return list_dir(c, n, path, path, depth);
}

int cmd_ls(struct cli *c)
{
	const char *url = c->argv[0];
	struct rr_nfs *n;
	struct stat st;
	const char *path;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	path = rr_nfs_url_path(n);
	rc = rr_nfs_lstat(n, path, &st);
	if (rc)
		rc = cli_fail(url, rc);
	else if (S_ISDIR(st.st_mode) && c->recursive)
		rc = list_tree(c, n, path, 0);
	else if (S_ISDIR(st.st_mode))
		rc = list_dir(c, n, path, url, 0);
	else if (c->long_list)
		print_long(n, path, path, &st);
	else
		printf("%s\n", path);
	cli_umount(c, n);
	return rc;
}

static const char *type_name(mode_t m)
{
	return S_ISREG(m)    ? "regular file"
	       : S_ISDIR(m)  ? "directory"
	       : S_ISLNK(m)  ? "symbolic link"
	       : S_ISCHR(m)  ? "character device"
	       : S_ISBLK(m)  ? "block device"
	       : S_ISFIFO(m) ? "fifo"
			     : "socket";
}

static void print_stat(const char *path, const struct stat *st)
{
	char mode[11], a[32], m[32], ch[32];

	mode_str(st->st_mode, mode);
	time_str(st->st_atim.tv_sec, a, sizeof(a));
	time_str(st->st_mtim.tv_sec, m, sizeof(m));
	time_str(st->st_ctim.tv_sec, ch, sizeof(ch));
	printf("  File: %s\n  Type: %s\n  Size: %" PRIu64 "\tBlocks: %" PRIu64
	       "\n  Mode: (%04o/%s)  Uid: %u  Gid: %u\n"
	       " Inode: %" PRIu64 "\tLinks: %lu\nAccess: %s\nModify: %s\n"
	       "Change: %s\n",
	       path, type_name(st->st_mode), (uint64_t)st->st_size,
	       (uint64_t)st->st_blocks, st->st_mode & 07777, mode,
	       (unsigned)st->st_uid, (unsigned)st->st_gid, (uint64_t)st->st_ino,
	       (unsigned long)st->st_nlink, a, m, ch);
}

int cmd_stat(struct cli *c)
{
	const char *url = c->argv[0];
	struct rr_nfs *n;
	struct stat st;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	rc = rr_nfs_lstat(n, rr_nfs_url_path(n), &st);
	if (rc)
		rc = cli_fail(url, rc);
	else
		print_stat(rr_nfs_url_path(n), &st);
	cli_umount(c, n);
	return rc;
}

static int cat_file(struct rr_nfs_file *f, const char *url)
{
	char *buf = malloc(CAT_BUF);
	uint64_t off = 0;
	ssize_t got;

	if (!buf)
		return cli_fail(url, -ENOMEM);
	while ((got = rr_nfs_pread(f, buf, CAT_BUF, off)) > 0) {
		if (fwrite(buf, 1, (size_t)got, stdout) != (size_t)got) {
			free(buf);
			return cli_fail("stdout", -errno);
		}
		off += (uint64_t)got;
	}
	free(buf);
	if (got < 0)
		return cli_fail(url, (int)got);
	if (fflush(stdout))
		return cli_fail("stdout", -errno);
	return 0;
}

int cmd_cat(struct cli *c)
{
	const char *url = c->argv[0];
	struct rr_nfs_file *f;
	struct rr_nfs *n;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	rc = rr_nfs_open(n, rr_nfs_url_path(n), O_RDONLY, 0, &f);
	if (rc) {
		rc = cli_fail(url, rc);
	} else {
		rc = cat_file(f, url);
		rr_nfs_close(f);
	}
	cli_umount(c, n);
	return rc;
}

int cmd_mkdir(struct cli *c)
{
	const char *url = c->argv[0];
	struct rr_nfs *n;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	rc = rr_nfs_mkdir(n, rr_nfs_url_path(n), 0755);
	if (rc)
		rc = cli_fail(url, rc);
	cli_umount(c, n);
	return rc;
}

int cmd_rm(struct cli *c)
{
	const char *url = c->argv[0];
	struct rr_nfs *n;
	struct stat st;
	const char *path;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	path = rr_nfs_url_path(n);
	rc = rr_nfs_lstat(n, path, &st);
	if (!rc)
		rc = S_ISDIR(st.st_mode) ? rr_nfs_rmdir(n, path)
					 : rr_nfs_unlink(n, path);
	if (rc)
		rc = cli_fail(url, rc);
	cli_umount(c, n);
	return rc;
}

/*
 * As df(1) reckons it: used over what a user could have (used + avail,
 * the root reserve left out), rounded up, so a file system with a byte
 * used is not 0% and one with a byte left is not 100%.
 */
static void use_pct(const struct statvfs *sv, char *buf, size_t cap)
{
	uint64_t used = sv->f_blocks - sv->f_bfree;
	uint64_t whole = used + sv->f_bavail;

	if (sv->f_bfree > sv->f_blocks || !whole) {
		snprintf(buf, cap, "-");
		return;
	}
	/* in hundredths of blocks: exact for sizes of any file system */
	snprintf(buf, cap, "%u%%",
		 (unsigned)(((unsigned __int128)used * 100 + whole - 1) /
			    whole));
}

int cmd_df(struct cli *c)
{
	const char *url = c->argv[0];
	char size[32], used[32], avail[32], pct[8];
	struct statvfs sv;
	struct rr_nfs *n;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	rc = rr_nfs_statvfs(n, rr_nfs_url_path(n), &sv);
	if (rc) {
		rc = cli_fail(url, rc);
	} else {
		fmt_bytes(size, sizeof(size),
			  (double)sv.f_blocks * (double)sv.f_frsize);
		fmt_bytes(used, sizeof(used),
			  (double)(sv.f_blocks - sv.f_bfree) *
				  (double)sv.f_frsize);
		fmt_bytes(avail, sizeof(avail),
			  (double)sv.f_bavail * (double)sv.f_frsize);
		use_pct(&sv, pct, sizeof(pct));
		printf("%-12s %12s %12s %12s %5s %12s %12s\n", "Export", "Size",
		       "Used", "Avail", "Use%", "Files", "FFree");
		printf("%-12s %12s %12s %12s %5s %12" PRIu64 " %12" PRIu64 "\n",
		       rr_nfs_export(n), size, used, avail, pct,
		       (uint64_t)sv.f_files, (uint64_t)sv.f_ffree);
	}
	cli_umount(c, n);
	return rc;
}

/* NEWPATH: a URL of the same export, absolute in it, or relative. */
static char *mv_target(struct rr_nfs *n, const char *from, const char *to)
{
	struct rr_nfs_url u;
	const char *ex = rr_nfs_export(n);
	size_t el = strlen(ex);
	char *dir, *slash, *res;

	if (!strncmp(to, "nfs://", 6)) {
		if (rr_nfs_url_parse(to, &u))
			return NULL;
		while (el && ex[el - 1] == '/')
			el--;
		res = NULL;
		if (!strncmp(u.path, ex, el) &&
		    (u.path[el] == '/' || !u.path[el]))
			res = strdup(u.path[el] ? u.path + el : "/");
		rr_nfs_url_free(&u);
		return res;
	}
	if (to[0] == '/')
		return strdup(to);
	dir = strdup(from);
	if (!dir)
		return NULL;
	slash = strrchr(dir, '/');
	if (slash)
		slash[1] = '\0';
	res = join(slash ? dir : "/", to);
	free(dir);
	return res;
}

/* Into an existing directory, as mv(1) does. */
static char *into_dir(struct rr_nfs *n, const char *from, char *to)
{
	struct stat st;
	const char *base = strrchr(from, '/');
	char *p;

	if (rr_nfs_stat(n, to, &st) || !S_ISDIR(st.st_mode))
		return to;
	p = join(to, base ? base + 1 : from);
	free(to);
	return p;
}

int cmd_mv(struct cli *c)
{
	const char *url = c->argv[0];
	struct rr_nfs *n;
	const char *from;
	char *to;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	from = rr_nfs_url_path(n);
	to = mv_target(n, from, c->argv[1]);
	if (to)
		to = into_dir(n, from, to);
	if (!to) {
		cli_failf("mv: %s: not a path in export %s", c->argv[1],
			  rr_nfs_export(n));
		cli_umount(c, n);
		return 1;
	}
	rc = rr_nfs_rename(n, from, to);
	if (rc)
		rc = cli_fail(url, rc);
	free(to);
	cli_umount(c, n);
	return rc;
}
