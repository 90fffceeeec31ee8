/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shapes a file-system tester gives the server: times set on a symlink,
 * and a directory tree whose full path is several times PATH_MAX, made,
 * listed, written, read and removed through the server, with the escapes
 * (".." at the root, a symlink out, a handle of a file outside) still
 * refused at that depth. Results are checked against the file system the
 * server works on, reached from here through openat chains (no single
 * path names the bottom of the tree).
 */
#include "srv_fixture.h"
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAME_LEN 200
#define DEEP_BYTES                                                             \
	(3 * PATH_MAX + 512) /* the bottom's path below the export             \
			      */
#define DEPTH_MAX (DEEP_BYTES / (NAME_LEN + 1) + 1)
#define DATA_LEN  (64u << 10)

static struct fh symlink_in(struct fx *f, struct fh *dir, const char *name,
			    const char *target)
{
	SYMLINK3args a = {.where = {.dir = H(dir), .name = (char *)name},
			  .symlink = {.symlink_data = (char *)target}};
	SYMLINK3res r = {0};
	struct fh h;

	NFS(f, SYMLINK, a, r);
	assert_int_equal(r.status, NFS3_OK);
	assert_true(r.SYMLINK3res_u.resok.obj.handle_follows);
	keep(&h, &r.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle);
	FREE(SYMLINK, r);
	return h;
}

static nfsstat3 setattr(struct fx *f, struct fh *h, const sattr3 *s)
{
	SETATTR3args a = {.object = H(h), .new_attributes = *s};
	SETATTR3res r = {0};

	NFS(f, SETATTR, a, r);
	FREE(SETATTR, r);
	return r.status;
}

static sattr3 times_of(uint32_t atime, uint32_t mtime)
{
	sattr3 s = {0};

	s.atime.set_it = SET_TO_CLIENT_TIME;
	s.atime.set_atime_u.atime = (nfstime3){atime, 123};
	s.mtime.set_it = SET_TO_CLIENT_TIME;
	s.mtime.set_mtime_u.mtime = (nfstime3){mtime, 456};
	return s;
}

static void times_on_a_symlink_are_set_and_read_back(void **state)
{
	struct fx *f = *state;
	struct fh l = symlink_in(f, &f->root, "ln", "no/such/target");
	sattr3 s = times_of(1000000000u, 1200000000u);
	char p[PATH_MAX];
	struct stat st, before;
	fattr3 a;

	assert_int_equal(setattr(f, &l, &s), NFS3_OK);
	assert_int_equal(getattr(f, &l, &a), NFS3_OK);
	assert_int_equal(a.type, NF3LNK);
	assert_int_equal(a.atime.seconds, 1000000000u);
	assert_int_equal(a.atime.nseconds, 123);
	assert_int_equal(a.mtime.seconds, 1200000000u);
	assert_int_equal(a.mtime.nseconds, 456);
	path_of(f, "ln", p);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_atim.tv_sec, 1000000000);
	assert_int_equal(st.st_mtim.tv_sec, 1200000000);
	assert_int_equal(st.st_mtim.tv_nsec, 456);

	/* what a client's chmod-less touch -h sends: mode too, left alone */
	s = times_of(1300000000u, 1400000000u);
	s.mode.set_it = TRUE;
	s.mode.set_mode3_u.mode = 0600;
	assert_int_equal(setattr(f, &l, &s), NFS3_OK);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_atim.tv_sec, 1300000000);
	assert_int_equal(st.st_mtim.tv_sec, 1400000000);
	assert_int_equal(st.st_mode & 07777, 0777);

	/* the server's clock: now, not the client's */
	s = (sattr3){0};
	s.mtime.set_it = SET_TO_SERVER_TIME;
	assert_int_equal(setattr(f, &l, &s), NFS3_OK);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(llabs((long long)st.st_mtim.tv_sec - time(NULL)) < 60);
	assert_int_equal(st.st_atim.tv_sec, 1300000000);

	/* a size is refused before anything is changed */
	before = st;
	s = times_of(1500000000u, 1500000000u);
	s.size.set_it = TRUE;
	assert_int_equal(setattr(f, &l, &s), NFS3ERR_INVAL);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, before.st_mtim.tv_sec);
	assert_int_equal(st.st_atim.tv_sec, before.st_atim.tv_sec);
}

/* ----------------------------------------------------- the deep tree */

struct deep {
	int n;			      /* directories below the export */
	struct fh dir[DEPTH_MAX + 1]; /* dir[0]: the root */
	char name[DEPTH_MAX][NAME_LEN + 1];
};

static struct fh mkdir_in(struct fx *f, struct fh *dir, const char *name)
{
	MKDIR3args a = {.where = {.dir = H(dir), .name = (char *)name}};
	MKDIR3res r = {0};
	struct fh h;

	a.attributes.mode.set_it = TRUE;
	a.attributes.mode.set_mode3_u.mode = 0755;
	NFS(f, MKDIR, a, r);
	assert_int_equal(r.status, NFS3_OK);
	assert_true(r.MKDIR3res_u.resok.obj.handle_follows);
	keep(&h, &r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
	FREE(MKDIR, r);
	return h;
}

static void build(struct fx *f, struct deep *d)
{
	size_t len = 0;

	d->dir[0] = f->root;
	for (d->n = 0; len < DEEP_BYTES; d->n++) {
		memset(d->name[d->n], 'a' + d->n % 26, NAME_LEN);
		snprintf(d->name[d->n], 8, "%03d", d->n);
		d->name[d->n][3] = '-';
		d->dir[d->n + 1] = mkdir_in(f, &d->dir[d->n], d->name[d->n]);
		len += NAME_LEN + 1;
	}
}

/* The bottom directory as this process sees it, one name at a time. */
static int open_bottom(struct fx *f, const struct deep *d)
{
	int fd = open(f->exp, O_PATH | O_DIRECTORY | O_CLOEXEC);

	for (int i = 0; fd >= 0 && i < d->n; i++) {
		int next =
			openat(fd, d->name[i],
			       O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		close(fd);
		fd = next;
	}
	assert_true(fd >= 0);
	return fd;
}

static struct fh create_in(struct fx *f, struct fh *dir, const char *name)
{
	CREATE3args a = {.where = {.dir = H(dir), .name = (char *)name},
			 .how = {.mode = GUARDED}};
	CREATE3res r = {0};
	struct fh h;

	a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
	NFS(f, CREATE, a, r);
	assert_int_equal(r.status, NFS3_OK);
	assert_true(r.CREATE3res_u.resok.obj.handle_follows);
	keep(&h, &r.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	FREE(CREATE, r);
	return h;
}

static void write_read_compare(struct fx *f, struct fh *h, int bottom)
{
	uint8_t *data = malloc(DATA_LEN), *local = malloc(DATA_LEN);
	uint32_t n;
	bool_t eof;
	WRITE3res wr;
	int fd;

	assert_non_null(data);
	assert_non_null(local);
	for (uint32_t i = 0; i < DATA_LEN; i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	assert_int_equal(write_at(f, h, 0, data, DATA_LEN, FILE_SYNC, &wr),
			 NFS3_OK);
	assert_int_equal(wr.WRITE3res_u.resok.count, DATA_LEN);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	assert_int_equal(read_at(f, h, 0, DATA_LEN, &n, &eof), NFS3_OK);
	assert_int_equal(n, DATA_LEN);
	assert_memory_equal(f->bulk, data, DATA_LEN);
	/* and the bytes are where the tree says, on the server's side */
	fd = openat(bottom, "file", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, local, DATA_LEN), DATA_LEN);
	close(fd);
	assert_memory_equal(local, data, DATA_LEN);
	free(data);
	free(local);
}

/* READDIR and READDIRPLUS of the bottom: its names, and handles that work */
static void list_bottom(struct fx *f, struct fh *bottom)
{
	READDIR3args a = {.dir = H(bottom), .count = 4096};
	READDIR3res r = {0};
	READDIRPLUS3args pa = {
		.dir = H(bottom), .dircount = 4096, .maxcount = 32768};
	READDIRPLUS3res pr = {0};
	int seen = 0;

	NFS(f, READDIR, a, r);
	assert_int_equal(r.status, NFS3_OK);
	assert_true(r.READDIR3res_u.resok.reply.eof);
	for (entry3 *e = r.READDIR3res_u.resok.reply.entries; e;
	     e = e->nextentry)
		seen |= !strcmp(e->name, "file")  ? 1
			: !strcmp(e->name, "out") ? 2
						  : 0;
	assert_int_equal(seen, 3);
	FREE(READDIR, r);
	NFS(f, READDIRPLUS, pa, pr);
	assert_int_equal(pr.status, NFS3_OK);
	seen = 0;
	for (entryplus3 *e = pr.READDIRPLUS3res_u.resok.reply.entries; e;
	     e = e->nextentry) {
		struct fh h;
		fattr3 at;

		assert_true(e->name_attributes.attributes_follow);
		assert_true(e->name_handle.handle_follows);
		keep(&h, &e->name_handle.post_op_fh3_u.handle);
		assert_int_equal(getattr(f, &h, &at), NFS3_OK);
		assert_int_equal(at.fileid, e->fileid);
		seen++;
	}
	assert_int_equal(seen, 4); /* ".", "..", file, out */
	FREE(READDIRPLUS, pr);
}

/* A valid handle, made with the server's own key, for a file outside. */
static struct fh forged_outside(struct fx *f)
{
	uint8_t key[NFSD_KEY_LEN];
	char p[PATH_MAX];
	struct stat st;
	uint64_t birth;
	struct fh h = {.len = NFSD_FH_LEN};
	int fd;

	snprintf(p, sizeof(p), "%s/fh.key", f->state);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, key, sizeof(key)), (ssize_t)sizeof(key));
	close(fd);
	snprintf(p, sizeof(p), "%s/outside", f->top);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rr__nfsd_stat(AT_FDCWD, p, &st, &birth), 0);
	assert_int_equal(rr__nfsd_fh_encode(key, &st, birth, (uint8_t *)h.b),
			 NFSD_FH_LEN);
	return h;
}

static void escapes_are_refused_at_depth(struct fx *f, struct deep *d)
{
	struct fh bottom = d->dir[d->n], up, out, forged;
	fattr3 a, want;
	uint32_t n;
	bool_t eof;

	/* ".." climbs one level, however deep, and stops at the root */
	assert_int_equal(lookup(f, &bottom, "..", &up, &a), NFS3_OK);
	assert_int_equal(getattr(f, &d->dir[d->n - 1], &want), NFS3_OK);
	assert_int_equal(a.fileid, want.fileid);
	assert_int_equal(lookup(f, &f->root, "..", &up, &a), NFS3_OK);
	assert_memory_equal(up.b, f->root.b, f->root.len);
	/* a symlink out, deep down, is a symlink and never followed */
	out = symlink_in(f, &bottom, "out", f->top);
	assert_int_equal(lookup(f, &bottom, "out", &out, &a), NFS3_OK);
	assert_int_equal(a.type, NF3LNK);
	assert_int_equal(lookup(f, &out, "outside", NULL, NULL),
			 NFS3ERR_NOTDIR);
	assert_int_equal(read_at(f, &out, 0, 100, &n, &eof), NFS3ERR_INVAL);
	/* a handle the server would have made, of a file it must not reach */
	forged = forged_outside(f);
	assert_int_equal(getattr(f, &forged, NULL), NFS3ERR_STALE);
}

static void remove_in(struct fx *f, struct fh *dir, const char *name,
		      bool is_dir)
{
	REMOVE3args a = {.object = {.dir = H(dir), .name = (char *)name}};
	REMOVE3res r = {0};
	RMDIR3args da = {.object = a.object};
	RMDIR3res dr = {0};

	if (is_dir) {
		NFS(f, RMDIR, da, dr);
		assert_int_equal(dr.status, NFS3_OK);
		FREE(RMDIR, dr);
		return;
	}
	NFS(f, REMOVE, a, r);
	assert_int_equal(r.status, NFS3_OK);
	FREE(REMOVE, r);
}

static void restart(struct fx *f)
{
	assert_int_equal(rr_clnt_destroy(f->c), 0);
	f->c = NULL;
	assert_int_equal(server_stop(f), 0);
	assert_int_equal(server_start(f), 0);
	assert_int_equal(connect_client(f), 0);
}

static void a_tree_deeper_than_three_path_max_works(void **state)
{
	struct fx *f = *state;
	struct deep *d = calloc(1, sizeof(*d));
	struct fh file, h;
	fattr3 a;
	struct stat st;
	int bottom;

	assert_non_null(d);
	build(f, d);
	assert_true((size_t)d->n * (NAME_LEN + 1) > 3 * PATH_MAX);
	file = create_in(f, &d->dir[d->n], "file");
	bottom = open_bottom(f, d);
	write_read_compare(f, &file, bottom);
	assert_int_equal(lookup(f, &d->dir[d->n], "file", &h, &a), NFS3_OK);
	assert_int_equal(fstatat(bottom, "file", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(a.fileid, st.st_ino);
	assert_int_equal(a.size, DATA_LEN);
	escapes_are_refused_at_depth(f, d);
	list_bottom(f, &d->dir[d->n]);

	/* a new server knows nothing but its key: it still finds them */
	restart(f);
	assert_int_equal(getattr(f, &file, &a), NFS3_OK);
	assert_int_equal(a.fileid, st.st_ino);
	assert_int_equal(getattr(f, &d->dir[d->n / 2], NULL), NFS3_OK);
	write_read_compare(f, &file, bottom);

	remove_in(f, &d->dir[d->n], "file", false);
	remove_in(f, &d->dir[d->n], "out", false);
	assert_int_equal(fstatat(bottom, "file", &st, AT_SYMLINK_NOFOLLOW), -1);
	close(bottom);
	for (int i = d->n - 1; i >= 0; i--)
		remove_in(f, &d->dir[i], d->name[i], true);
	assert_int_equal(lstat(f->exp, &st), 0);
	assert_int_equal(st.st_nlink, 2); /* nothing left below the export */
	free(d);
}

/* A directory renamed high up: everything below it keeps its handle. */
static void a_rename_high_up_keeps_deep_handles(void **state)
{
	struct fx *f = *state;
	struct deep *d = calloc(1, sizeof(*d));
	RENAME3args ra;
	RENAME3res rr = {0};
	struct fh file;
	fattr3 a;

	assert_non_null(d);
	build(f, d);
	file = create_in(f, &d->dir[d->n], "file");
	ra = (RENAME3args){.from = {.dir = H(&d->dir[1]), .name = d->name[1]},
			   .to = {.dir = H(&f->root), .name = "moved"}};
	NFS(f, RENAME, ra, rr);
	assert_int_equal(rr.status, NFS3_OK);
	FREE(RENAME, rr);
	assert_int_equal(getattr(f, &file, &a), NFS3_OK);
	assert_int_equal(getattr(f, &d->dir[d->n], NULL), NFS3_OK);
	assert_int_equal(lookup(f, &d->dir[d->n], "file", NULL, NULL), NFS3_OK);
	free(d);
}

/*
 * Paths of 4094 to 4098 bytes, where one openat2 stops and pieces start:
 * 15 directories of 255-byte names and one of 254 make 4094 bytes; files
 * in the last two end at 4094 .. 4098. Each is written and read by its handle,
 * and found again by a new server (by the walk, then the cache it fills).
 */
static void paths_around_path_max_resolve(void **state)
{
	struct fx *f = *state;
	char name[16][NAME_MAX + 1], fname[NAME_MAX + 1];
	struct fh dir[17], file[8];
	size_t len = 0, want[8];
	uint32_t n;
	bool_t eof;
	WRITE3res wr;
	int nfiles = 0;

	dir[0] = f->root;
	for (int i = 0; i < 16; i++) {
		size_t nl = i < 15 ? NAME_MAX : NAME_MAX - 1;

		memset(name[i], 'a' + i, nl);
		name[i][nl] = '\0';
		dir[i + 1] = mkdir_in(f, &dir[i], name[i]);
		len += (i ? 1 : 0) + nl;
		/* beside the 15th and 16th: the names that end at 4094..4098 */
		for (size_t total = 4094; i >= 14 && total <= 4098; total++) {
			size_t flen = total - len - 1;

			if (total <= len + 1 || flen > NAME_MAX)
				continue;
			memset(fname, 'f', flen);
			fname[flen] = '\0';
			want[nfiles] = total;
			file[nfiles++] = create_in(f, &dir[i + 1], fname);
		}
	}
	assert_int_equal(len, 4094);
	assert_int_equal(nfiles, 5);
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < nfiles; i++) {
			char data[32];
			int dl = snprintf(data, sizeof(data), "%zu", want[i]);

			assert_int_equal(write_at(f, &file[i], 0, data,
						  (uint32_t)dl, FILE_SYNC, &wr),
					 NFS3_OK);
			xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
			assert_int_equal(read_at(f, &file[i], 0, 32, &n, &eof),
					 NFS3_OK);
			assert_int_equal(n, dl);
			assert_memory_equal(f->bulk, data, dl);
		}
		assert_int_equal(getattr(f, &dir[16], NULL), NFS3_OK);
		restart(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			times_on_a_symlink_are_set_and_read_back, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			a_tree_deeper_than_three_path_max_works, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			a_rename_high_up_keeps_deep_handles, setup, teardown),
		cmocka_unit_test_setup_teardown(paths_around_path_max_resolve,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
