/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NFSv3 + MOUNT v3 server end to end: each test serves a fresh
 * temporary export from a forked child over RPC-over-RDMA (iwarp on
 * 127.0.0.1, an ephemeral port piped back), and calls it with rr_clnt_*
 * using rpcgen's XDR. Results are checked against the file system the
 * server works on: stat(2) against fattr3, file bytes after WRITE, the
 * directory's real entries against READDIR.
 */
#include "srv_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define NDIRENT 2000

/* ============================================================= tests */

static void mount_protocol_answers_mnt_export_dump_umnt(void **state)
{
	struct fx *f = *state;
	char *bad = "/no/such/export", *path = f->exp;
	mountres3 mr = {0};
	exports ex = NULL;
	mountlist ml = NULL;
	fattr3 a;
	char dummy = 0;

	assert_int_equal(call_as(f, NULL, MOUNT_PROGRAM, MOUNTPROC3_NULL,
				 (xdrproc_t)xvoid, &dummy, (xdrproc_t)xvoid,
				 &dummy),
			 0);
	assert_int_equal(call_as(f, NULL, NFS_PROGRAM, NFSPROC3_NULL,
				 (xdrproc_t)xvoid, &dummy, (xdrproc_t)xvoid,
				 &dummy),
			 0);
	assert_int_equal(call_as(f, &f->me, MOUNT_PROGRAM, MOUNTPROC3_MNT,
				 (xdrproc_t)rr__xdr_dirpath, &bad,
				 (xdrproc_t)rr__xdr_mountres3, &mr),
			 0);
	assert_int_equal(mr.fhs_status, MNT3ERR_NOENT);
	xdr_free((xdrproc_t)rr__xdr_mountres3, (char *)&mr);
	/* the root handle names the export */
	assert_int_equal(getattr(f, &f->root, &a), NFS3_OK);
	check_attr(&a, f->exp);
	/* flavors offered: AUTH_SYS and AUTH_NONE */
	assert_int_equal(call_as(f, &f->me, MOUNT_PROGRAM, MOUNTPROC3_MNT,
				 (xdrproc_t)rr__xdr_dirpath, &path,
				 (xdrproc_t)rr__xdr_mountres3, &mr),
			 0);
	assert_int_equal(mr.fhs_status, MNT3_OK);
	assert_int_equal(mr.mountres3_u.mountinfo.auth_flavors.auth_flavors_len,
			 2);
	assert_int_equal(
		mr.mountres3_u.mountinfo.auth_flavors.auth_flavors_val[0], 1);
	xdr_free((xdrproc_t)rr__xdr_mountres3, (char *)&mr);
	assert_int_equal(call_as(f, &f->me, MOUNT_PROGRAM, MOUNTPROC3_EXPORT,
				 (xdrproc_t)xvoid, &dummy,
				 (xdrproc_t)rr__xdr_exports, &ex),
			 0);
	assert_non_null(ex);
	assert_string_equal(ex->ex_dir, f->exp);
	assert_null(ex->ex_next);
	xdr_free((xdrproc_t)rr__xdr_exports, (char *)&ex);
	assert_int_equal(call_as(f, &f->me, MOUNT_PROGRAM, MOUNTPROC3_DUMP,
				 (xdrproc_t)xvoid, &dummy,
				 (xdrproc_t)rr__xdr_mountlist, &ml),
			 0);
	assert_non_null(ml);
	assert_string_equal(ml->ml_directory, f->exp);
	xdr_free((xdrproc_t)rr__xdr_mountlist, (char *)&ml);
	assert_int_equal(call_as(f, &f->me, MOUNT_PROGRAM, MOUNTPROC3_UMNTALL,
				 (xdrproc_t)xvoid, &dummy, (xdrproc_t)xvoid,
				 &dummy),
			 0);
	assert_int_equal(call_as(f, &f->me, MOUNT_PROGRAM, MOUNTPROC3_UMNT,
				 (xdrproc_t)rr__xdr_dirpath, &path,
				 (xdrproc_t)xvoid, &dummy),
			 0);
	assert_int_equal(call_as(f, &f->me, MOUNT_PROGRAM, MOUNTPROC3_DUMP,
				 (xdrproc_t)xvoid, &dummy,
				 (xdrproc_t)rr__xdr_mountlist, &ml),
			 0);
	assert_null(ml);
}

static void getattr_lookup_access_match_stat(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX];
	struct fh h;
	fattr3 a, b;
	ACCESS3args aa;
	ACCESS3res ar = {0};

	put_file(f, "hello", "hello, world\n", 0640);
	path_of(f, "hello", p);
	assert_int_equal(lookup(f, &f->root, "hello", &h, &a), NFS3_OK);
	check_attr(&a, p);
	assert_int_equal(getattr(f, &h, &b), NFS3_OK);
	check_attr(&b, p);
	assert_int_equal(lookup(f, &f->root, "missing", NULL, NULL),
			 NFS3ERR_NOENT);
	assert_int_equal(lookup(f, &h, "x", NULL, NULL), NFS3ERR_NOTDIR);
	aa = (ACCESS3args){.object = H(&h),
			   .access = ACCESS3_READ | ACCESS3_MODIFY |
				     ACCESS3_EXECUTE};
	NFS(f, ACCESS, aa, ar);
	assert_int_equal(ar.status, NFS3_OK);
	/* owner rw-: read and modify, never execute */
	assert_int_equal(ar.ACCESS3res_u.resok.access,
			 ACCESS3_READ | ACCESS3_MODIFY);
	FREE(ACCESS, ar);
}

static void write_read_commit_round_trip(void **state)
{
	struct fx *f = *state;
	uint32_t big = 300000, n = 0;
	uint8_t *data = malloc(big), *back = malloc(big);
	CREATE3args ca = {.where = {.dir = H(&f->root), .name = "data"},
			  .how = {.mode = GUARDED}};
	CREATE3res cr = {0};
	COMMIT3args cma;
	COMMIT3res cmr = {0};
	WRITE3res wr;
	writeverf3 v;
	char p[PATH_MAX];
	struct fh h;
	bool_t eof = 0;
	struct stat st;
	int fd;

	for (uint32_t i = 0; i < big; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 9));
	ca.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
	ca.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0600;
	NFS(f, CREATE, ca, cr);
	assert_int_equal(cr.status, NFS3_OK);
	assert_true(cr.CREATE3res_u.resok.obj.handle_follows);
	keep(&h, &cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	FREE(CREATE, cr);
	/* GUARDED refuses an existing name */
	NFS(f, CREATE, ca, cr);
	assert_int_equal(cr.status, NFS3ERR_EXIST);
	FREE(CREATE, cr);

	assert_int_equal(write_at(f, &h, 0, data, 100, FILE_SYNC, &wr),
			 NFS3_OK);
	assert_int_equal(wr.WRITE3res_u.resok.count, 100);
	assert_int_equal(wr.WRITE3res_u.resok.committed, FILE_SYNC);
	memcpy(v, wr.WRITE3res_u.resok.verf, sizeof(v));
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	assert_int_equal(
		write_at(f, &h, 100, data + 100, big - 100, UNSTABLE, &wr),
		NFS3_OK);
	assert_int_equal(wr.WRITE3res_u.resok.committed, UNSTABLE);
	assert_true(wr.WRITE3res_u.resok.file_wcc.after.attributes_follow);
	assert_int_equal(wr.WRITE3res_u.resok.file_wcc.after.post_op_attr_u
				 .attributes.size,
			 big);
	assert_memory_equal(v, wr.WRITE3res_u.resok.verf, sizeof(v));
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	/* rewriting the middle, DATA_SYNC */
	assert_int_equal(
		write_at(f, &h, 5000, data + 5000, 3000, DATA_SYNC, &wr),
		NFS3_OK);
	assert_int_equal(wr.WRITE3res_u.resok.committed, DATA_SYNC);
	assert_int_equal(wr.WRITE3res_u.resok.count, 3000);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	cma = (COMMIT3args){.file = H(&h)};
	NFS(f, COMMIT, cma, cmr);
	assert_int_equal(cmr.status, NFS3_OK);
	assert_memory_equal(v, cmr.COMMIT3res_u.resok.verf, sizeof(v));
	FREE(COMMIT, cmr);

	/* the file holds exactly what was written */
	path_of(f, "data", p);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, back, big, 0), (ssize_t)big);
	close(fd);
	assert_memory_equal(back, data, big);

	assert_int_equal(read_at(f, &h, 0, big, &n, &eof), NFS3_OK);
	assert_int_equal(n, big);
	assert_true(eof);
	assert_memory_equal(f->bulk, data, big);
	assert_int_equal(read_at(f, &h, 1000, 10, &n, &eof), NFS3_OK);
	assert_int_equal(n, 10);
	assert_false(eof);
	assert_memory_equal(f->bulk, data + 1000, 10);
	assert_int_equal(read_at(f, &f->root, 0, 10, &n, &eof), NFS3ERR_ISDIR);

	/* offsets past 4 GiB: 64 bits all the way to the file */
	assert_int_equal(write_at(f, &h, 5ull << 30, "tail", 4, FILE_SYNC, &wr),
			 NFS3_OK);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	assert_int_equal(read_at(f, &h, (5ull << 30) + 1, 100, &n, &eof),
			 NFS3_OK);
	assert_int_equal(n, 3);
	assert_true(eof);
	assert_memory_equal(f->bulk, "ail", 3);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, (5ll << 30) + 4);
	free(data);
	free(back);
}

static struct fh make_dir(struct fx *f, struct fh *dir, const char *name)
{
	MKDIR3args a = {.where = {.dir = H(dir), .name = (char *)name}};
	MKDIR3res r = {0};
	struct fh h;

	a.attributes.mode.set_it = TRUE;
	a.attributes.mode.set_mode3_u.mode = 0751;
	NFS(f, MKDIR, a, r);
	assert_int_equal(r.status, NFS3_OK);
	assert_true(r.MKDIR3res_u.resok.dir_wcc.before.attributes_follow);
	keep(&h, &r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
	FREE(MKDIR, r);
	return h;
}

static void namespace_procedures_change_the_tree(void **state)
{
	struct fx *f = *state;
	struct fh d = make_dir(f, &f->root, "d"), h, l;
	SYMLINK3args sa = {.where = {.dir = H(&d), .name = "ln"},
			   .symlink = {.symlink_data = "../target"}};
	SYMLINK3res sr = {0};
	READLINK3args rla;
	READLINK3res rlr = {0};
	MKNOD3args ma = {.where = {.dir = H(&d), .name = "fifo"},
			 .what = {.type = NF3FIFO}};
	MKNOD3res mr = {0};
	LINK3args la;
	LINK3res lr = {0};
	RENAME3args rna;
	RENAME3res rnr = {0};
	REMOVE3args rma;
	REMOVE3res rmr = {0};
	RMDIR3args rda;
	RMDIR3res rdr = {0};
	char p[PATH_MAX], t[PATH_MAX];
	struct stat st;
	fattr3 a;

	path_of(f, "d", p);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0751);

	NFS(f, SYMLINK, sa, sr);
	assert_int_equal(sr.status, NFS3_OK);
	keep(&l, &sr.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle);
	FREE(SYMLINK, sr);
	path_of(f, "d/ln", p);
	assert_int_equal(readlink(p, t, sizeof(t)), 9);
	rla = (READLINK3args){.symlink = H(&l)};
	NFS(f, READLINK, rla, rlr);
	assert_int_equal(rlr.status, NFS3_OK);
	assert_string_equal(rlr.READLINK3res_u.resok.data, "../target");
	FREE(READLINK, rlr);

	ma.what.mknoddata3_u.pipe_attributes.mode.set_it = TRUE;
	ma.what.mknoddata3_u.pipe_attributes.mode.set_mode3_u.mode = 0640;
	NFS(f, MKNOD, ma, mr);
	assert_int_equal(mr.status, NFS3_OK);
	FREE(MKNOD, mr);
	path_of(f, "d/fifo", p);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	ma.what.type = 99;
	ma.where.name = "bad";
	NFS(f, MKNOD, ma, mr);
	assert_int_equal(mr.status, NFS3ERR_BADTYPE);
	FREE(MKNOD, mr);

	put_file(f, "d/file", "abc", 0644);
	assert_int_equal(lookup(f, &d, "file", &h, NULL), NFS3_OK);
	la = (LINK3args){.file = H(&h),
			 .link = {.dir = H(&f->root), .name = "hard"}};
	NFS(f, LINK, la, lr);
	assert_int_equal(lr.status, NFS3_OK);
	assert_int_equal(lr.LINK3res_u.resok.file_attributes.post_op_attr_u
				 .attributes.nlink,
			 2);
	FREE(LINK, lr);
	path_of(f, "hard", p);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_nlink, 2);

	rna = (RENAME3args){.from = {.dir = H(&d), .name = "file"},
			    .to = {.dir = H(&f->root), .name = "moved"}};
	NFS(f, RENAME, rna, rnr);
	assert_int_equal(rnr.status, NFS3_OK);
	FREE(RENAME, rnr);
	path_of(f, "moved", p);
	assert_int_equal(stat(p, &st), 0);
	/* the handle follows the file to its new name */
	assert_int_equal(getattr(f, &h, &a), NFS3_OK);
	check_attr(&a, p);

	rma = (REMOVE3args){.object = {.dir = H(&f->root), .name = "hard"}};
	NFS(f, REMOVE, rma, rmr);
	assert_int_equal(rmr.status, NFS3_OK);
	FREE(REMOVE, rmr);
	path_of(f, "hard", p);
	assert_int_equal(access(p, F_OK), -1);

	rda = (RMDIR3args){.object = {.dir = H(&f->root), .name = "d"}};
	NFS(f, RMDIR, rda, rdr);
	assert_int_equal(rdr.status, NFS3ERR_NOTEMPTY);
	FREE(RMDIR, rdr);
	rma.object = (diropargs3){.dir = H(&d), .name = "ln"};
	NFS(f, REMOVE, rma, rmr);
	assert_int_equal(rmr.status, NFS3_OK);
	FREE(REMOVE, rmr);
	rma.object.name = "fifo";
	NFS(f, REMOVE, rma, rmr);
	assert_int_equal(rmr.status, NFS3_OK);
	FREE(REMOVE, rmr);
	NFS(f, RMDIR, rda, rdr);
	assert_int_equal(rdr.status, NFS3_OK);
	FREE(RMDIR, rdr);
	path_of(f, "d", p);
	assert_int_equal(access(p, F_OK), -1);
}

static void setattr_create_modes_and_fs_info(void **state)
{
	struct fx *f = *state;
	CREATE3args ca = {.where = {.dir = H(&f->root), .name = "x"},
			  .how = {.mode = EXCLUSIVE}};
	CREATE3res cr = {0};
	SETATTR3args sa = {0};
	SETATTR3res sr = {0};
	FSSTAT3args fa;
	FSSTAT3res fr = {0};
	FSINFO3args ia;
	FSINFO3res ir = {0};
	PATHCONF3args pa;
	PATHCONF3res pr = {0};
	struct statvfs vfs;
	char p[PATH_MAX];
	struct stat st;
	struct fh h;
	fattr3 a;

	memcpy(ca.how.createhow3_u.verf, "verifier", 8);
	NFS(f, CREATE, ca, cr);
	assert_int_equal(cr.status, NFS3_OK);
	keep(&h, &cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	FREE(CREATE, cr);
	/* a retransmitted EXCLUSIVE create succeeds; another verifier not */
	NFS(f, CREATE, ca, cr);
	assert_int_equal(cr.status, NFS3_OK);
	FREE(CREATE, cr);
	memcpy(ca.how.createhow3_u.verf, "another!", 8);
	NFS(f, CREATE, ca, cr);
	assert_int_equal(cr.status, NFS3ERR_EXIST);
	FREE(CREATE, cr);
	/* UNCHECKED on an existing file truncates it to the size given */
	put_file(f, "u", "0123456789", 0644);
	ca = (CREATE3args){.where = {.dir = H(&f->root), .name = "u"},
			   .how = {.mode = UNCHECKED}};
	ca.how.createhow3_u.obj_attributes.size.set_it = TRUE;
	ca.how.createhow3_u.obj_attributes.size.set_size3_u.size = 4;
	NFS(f, CREATE, ca, cr);
	assert_int_equal(cr.status, NFS3_OK);
	FREE(CREATE, cr);
	path_of(f, "u", p);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 4);

	sa.object = H(&h);
	sa.new_attributes.mode.set_it = TRUE;
	sa.new_attributes.mode.set_mode3_u.mode = 0604;
	sa.new_attributes.size.set_it = TRUE;
	sa.new_attributes.size.set_size3_u.size = 12345;
	sa.new_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
	sa.new_attributes.mtime.set_mtime_u.mtime.seconds = 1000000000;
	NFS(f, SETATTR, sa, sr);
	assert_int_equal(sr.status, NFS3_OK);
	FREE(SETATTR, sr);
	path_of(f, "x", p);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0604);
	assert_int_equal(st.st_size, 12345);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
	assert_int_equal(getattr(f, &h, &a), NFS3_OK);
	check_attr(&a, p);
	/* a guard with the wrong ctime refuses the change */
	sa.guard.check = TRUE;
	sa.guard.sattrguard3_u.obj_ctime.seconds = 1;
	NFS(f, SETATTR, sa, sr);
	assert_int_equal(sr.status, NFS3ERR_NOT_SYNC);
	FREE(SETATTR, sr);

	fa = (FSSTAT3args){.fsroot = H(&f->root)};
	NFS(f, FSSTAT, fa, fr);
	assert_int_equal(fr.status, NFS3_OK);
	assert_int_equal(statvfs(f->exp, &vfs), 0);
	assert_int_equal(fr.FSSTAT3res_u.resok.tbytes,
			 (uint64_t)vfs.f_blocks * vfs.f_frsize);
	assert_int_equal(fr.FSSTAT3res_u.resok.tfiles, vfs.f_files);
	assert_true(fr.FSSTAT3res_u.resok.fbytes >=
		    fr.FSSTAT3res_u.resok.abytes);
	FREE(FSSTAT, fr);
	ia = (FSINFO3args){.fsroot = H(&f->root)};
	NFS(f, FSINFO, ia, ir);
	assert_int_equal(ir.status, NFS3_OK);
	assert_true(ir.FSINFO3res_u.resok.rtmax >= 65536);
	assert_true(ir.FSINFO3res_u.resok.properties & FSF3_SYMLINK);
	FREE(FSINFO, ir);
	pa = (PATHCONF3args){.object = H(&f->root)};
	NFS(f, PATHCONF, pa, pr);
	assert_int_equal(pr.status, NFS3_OK);
	assert_int_equal(pr.PATHCONF3res_u.resok.name_max, 255);
	FREE(PATHCONF, pr);
}

/* READDIR pages through a directory; returns entries seen, names marked */
/* Changes the directory between READDIR calls: f0..f99 go, g0..g99 come. */
static void churn(struct fx *f)
{
	char p[PATH_MAX];

	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "%s/big/f%d", f->exp, i);
		assert_int_equal(unlink(p), 0);
		snprintf(p, sizeof(p), "big/g%d", i);
		put_file(f, p, "", 0644);
	}
}

static int list_all(struct fx *f, struct fh *d, uint8_t *seen, int *calls,
		    void (*between)(struct fx *f))
{
	READDIR3args a = {.dir = H(d), .count = 4096};
	READDIR3res r = {0};
	bool_t eof = FALSE;
	int n = 0;

	*calls = 0;
	while (!eof) {
		entry3 *e;

		NFS(f, READDIR, a, r);
		assert_int_equal(r.status, NFS3_OK);
		(*calls)++;
		for (e = r.READDIR3res_u.resok.reply.entries; e;
		     e = e->nextentry) {
			int i;

			a.cookie = e->cookie;
			n++;
			if (!strcmp(e->name, ".") || !strcmp(e->name, "..") ||
			    e->name[0] == 'g')
				continue;
			assert_int_equal(sscanf(e->name, "f%d", &i), 1);
			assert_true(i >= 0 && i < NDIRENT);
			assert_int_equal(seen[i], 0);
			seen[i] = 1;
		}
		memcpy(a.cookieverf, r.READDIR3res_u.resok.cookieverf, 8);
		eof = r.READDIR3res_u.resok.reply.eof;
		FREE(READDIR, r);
		if (between && *calls == 1)
			between(f);
	}
	return n;
}

static void readdir_pages_through_2000_entries(void **state)
{
	struct fx *f = *state;
	struct fh d = make_dir(f, &f->root, "big");
	uint8_t seen[NDIRENT] = {0};
	READDIR3args a = {.dir = H(&d), .count = 4096};
	READDIR3res r1 = {0}, r2 = {0}, r3 = {0};
	READDIRPLUS3args pa = {
		.dir = H(&d), .dircount = 4096, .maxcount = 32768};
	READDIRPLUS3res pr = {0};
	char p[PATH_MAX];
	int calls, n;

	for (int i = 0; i < NDIRENT; i++) {
		char name[32];

		snprintf(name, sizeof(name), "big/f%d", i);
		put_file(f, name, "", 0644);
	}
	n = list_all(f, &d, seen, &calls, NULL);
	assert_int_equal(n, NDIRENT + 2);
	assert_true(calls > 5);
	for (int i = 0; i < NDIRENT; i++)
		assert_int_equal(seen[i], 1);
	/*
	 * A listing that goes on while the directory changes sees every entry
	 * that stayed, once: cookies are positions the file system keeps.
	 */
	memset(seen, 0, sizeof(seen));
	list_all(f, &d, seen, &calls, churn);
	for (int i = 100; i < NDIRENT; i++)
		assert_int_equal(seen[i], 1);

	/* a cookie resumes at the same place every time */
	NFS(f, READDIR, a, r1);
	assert_int_equal(r1.status, NFS3_OK);
	a.cookie = r1.READDIR3res_u.resok.reply.entries->nextentry->cookie;
	memcpy(a.cookieverf, r1.READDIR3res_u.resok.cookieverf, 8);
	NFS(f, READDIR, a, r2);
	NFS(f, READDIR, a, r3);
	assert_int_equal(r2.status, NFS3_OK);
	assert_string_equal(r2.READDIR3res_u.resok.reply.entries->name,
			    r3.READDIR3res_u.resok.reply.entries->name);
	assert_string_equal(r2.READDIR3res_u.resok.reply.entries->name,
			    r1.READDIR3res_u.resok.reply.entries->nextentry
				    ->nextentry->name);
	FREE(READDIR, r1);
	FREE(READDIR, r2);
	FREE(READDIR, r3);
	/* a verifier the server never gave is refused */
	memcpy(a.cookieverf, "bogusvrf", 8);
	NFS(f, READDIR, a, r1);
	assert_int_equal(r1.status, NFS3ERR_BAD_COOKIE);
	FREE(READDIR, r1);
	/* too small for one entry */
	a = (READDIR3args){.dir = H(&d), .count = 100};
	NFS(f, READDIR, a, r1);
	assert_int_equal(r1.status, NFS3ERR_TOOSMALL);
	FREE(READDIR, r1);

	/* READDIRPLUS: attributes and handles that work */
	NFS(f, READDIRPLUS, pa, pr);
	assert_int_equal(pr.status, NFS3_OK);
	for (entryplus3 *e = pr.READDIRPLUS3res_u.resok.reply.entries; e;
	     e = e->nextentry) {
		struct fh h;
		fattr3 at;

		assert_true(e->name_attributes.attributes_follow);
		assert_true(e->name_handle.handle_follows);
		snprintf(p, sizeof(p), "%s/big/%s", f->exp, e->name);
		check_attr(&e->name_attributes.post_op_attr_u.attributes, p);
		keep(&h, &e->name_handle.post_op_fh3_u.handle);
		assert_int_equal(getattr(f, &h, &at), NFS3_OK);
		assert_int_equal(at.fileid, e->fileid);
	}
	FREE(READDIRPLUS, pr);
}

static void nothing_outside_the_export_is_reachable(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX], q[PATH_MAX];
	struct fh up, out, dl, h;
	fattr3 a, ra;
	uint32_t n;
	bool_t eof;
	READDIR3args rda;
	READDIR3res rdr = {0};

	/* ".." of the root is the root */
	assert_int_equal(lookup(f, &f->root, "..", &up, &a), NFS3_OK);
	assert_int_equal(getattr(f, &f->root, &ra), NFS3_OK);
	assert_int_equal(a.fileid, ra.fileid);
	assert_int_equal(up.len, f->root.len);
	assert_memory_equal(up.b, f->root.b, up.len);

	/* a symlink out is a symlink, never followed */
	snprintf(q, sizeof(q), "%s/secret", f->top);
	put_file(f, "../secret", "outside\n", 0644);
	path_of(f, "out", p);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(lookup(f, &f->root, "out", &out, &a), NFS3_OK);
	assert_int_equal(a.type, NF3LNK);
	assert_int_equal(read_at(f, &out, 0, 100, &n, &eof), NFS3ERR_INVAL);
	/* a symlink to a directory outside is no directory */
	path_of(f, "dirlink", p);
	assert_int_equal(symlink(f->top, p), 0);
	assert_int_equal(lookup(f, &f->root, "dirlink", &dl, NULL), NFS3_OK);
	assert_int_equal(lookup(f, &dl, "secret", NULL, NULL), NFS3ERR_NOTDIR);
	rda = (READDIR3args){.dir = H(&dl), .count = 4096};
	NFS(f, READDIR, rda, rdr);
	assert_int_equal(rdr.status, NFS3ERR_NOTDIR);
	FREE(READDIR, rdr);
	/* names with a slash are no names */
	assert_int_equal(lookup(f, &f->root, "../secret", NULL, NULL),
			 NFS3ERR_INVAL);

	/* forged and modified handles */
	put_file(f, "victim", "v", 0644);
	assert_int_equal(lookup(f, &f->root, "victim", &h, NULL), NFS3_OK);
	for (uint32_t i = 0; i < h.len; i++) {
		struct fh bad = h;

		bad.b[i] ^= 0x01;
		assert_int_equal(getattr(f, &bad, NULL), NFS3ERR_BADHANDLE);
	}
	h.len--;
	assert_int_equal(getattr(f, &h, NULL), NFS3ERR_BADHANDLE);
	h.len = 0;
	assert_int_equal(getattr(f, &h, NULL), NFS3ERR_BADHANDLE);

	/* a removed file's handle is stale, even once the name is reused */
	assert_int_equal(lookup(f, &f->root, "victim", &h, NULL), NFS3_OK);
	path_of(f, "victim", p);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(getattr(f, &h, NULL), NFS3ERR_STALE);
	put_file(f, "victim", "new", 0644);
	assert_int_equal(getattr(f, &h, NULL), NFS3ERR_STALE);
}

static void handles_survive_a_restart_and_the_verifier_changes(void **state)
{
	struct fx *f = *state;
	struct fh h, sub, deep;
	char p[PATH_MAX];
	WRITE3res wr;
	writeverf3 v1;
	fattr3 a;

	make_dir(f, &f->root, "a");
	sub = make_dir(f, &f->root, "b");
	(void)sub;
	path_of(f, "b/c", p);
	assert_int_equal(mkdir(p, 0755), 0);
	put_file(f, "b/c/file", "deep", 0644);
	assert_int_equal(lookup(f, &f->root, "b", &h, NULL), NFS3_OK);
	assert_int_equal(lookup(f, &h, "c", &h, NULL), NFS3_OK);
	assert_int_equal(lookup(f, &h, "file", &deep, NULL), NFS3_OK);
	assert_int_equal(write_at(f, &deep, 0, "x", 1, UNSTABLE, &wr), NFS3_OK);
	memcpy(v1, wr.WRITE3res_u.resok.verf, 8);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);

	assert_int_equal(rr_clnt_destroy(f->c), 0);
	f->c = NULL;
	assert_int_equal(server_stop(f), 0);
	assert_int_equal(server_start(f), 0);
	assert_int_equal(connect_client(f), 0);
	/* the new server knows nothing but its key: it finds the file */
	assert_int_equal(getattr(f, &deep, &a), NFS3_OK);
	path_of(f, "b/c/file", p);
	check_attr(&a, p);
	assert_int_equal(write_at(f, &deep, 1, "y", 1, UNSTABLE, &wr), NFS3_OK);
	assert_memory_not_equal(v1, wr.WRITE3res_u.resok.verf, 8);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
}

static void read_only_export_answers_rofs(void **state)
{
	struct fx *f = *state;
	CREATE3args ca = {.where = {.dir = H(&f->root), .name = "n"},
			  .how = {.mode = UNCHECKED}};
	CREATE3res cr = {0};
	SETATTR3args sa = {0};
	SETATTR3res sr = {0};
	REMOVE3args ra = {.object = {.dir = H(&f->root), .name = "r"}};
	REMOVE3res rr = {0};
	WRITE3res wr;
	struct fh h;
	uint32_t n;
	bool_t eof;

	put_file(f, "r", "read me", 0644);
	assert_int_equal(lookup(f, &f->root, "r", &h, NULL), NFS3_OK);
	NFS(f, CREATE, ca, cr);
	assert_int_equal(cr.status, NFS3ERR_ROFS);
	FREE(CREATE, cr);
	assert_int_equal(write_at(f, &h, 0, "x", 1, FILE_SYNC, &wr),
			 NFS3ERR_ROFS);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	sa.object = H(&h);
	sa.new_attributes.mode.set_it = TRUE;
	NFS(f, SETATTR, sa, sr);
	assert_int_equal(sr.status, NFS3ERR_ROFS);
	FREE(SETATTR, sr);
	NFS(f, REMOVE, ra, rr);
	assert_int_equal(rr.status, NFS3ERR_ROFS);
	FREE(REMOVE, rr);
	assert_int_equal(read_at(f, &h, 0, 100, &n, &eof), NFS3_OK);
	assert_int_equal(n, 7);
	assert_memory_equal(f->bulk, "read me", 7);
}

static void root_squash_maps_uid_0_to_anonymous(void **state)
{
	struct fx *f = *state;
	struct rr_cred root = {.uid = 0, .gid = 0};
	READ3args a;
	READ3res r = {0};
	struct fh h;
	char p[PATH_MAX];

	/* owner-only file of whoever runs the test */
	put_file(f, "private", "secret", 0600);
	path_of(f, "private", p);
	assert_int_equal(lookup(f, &f->root, "private", &h, NULL), NFS3_OK);
	a = (READ3args){.file = H(&h), .count = 100};
	/* READ's data is not DDP here: no bulk buffer, ACCES is all there is */
	assert_int_equal(call_as(f, &root, NFS_PROGRAM, NFSPROC3_READ,
				 (xdrproc_t)rr__xdr_READ3args, &a,
				 (xdrproc_t)rr__xdr_READ3res, &r),
			 0);
	assert_int_equal(r.status, NFS3ERR_ACCES);
	xdr_free((xdrproc_t)rr__xdr_READ3res, (char *)&r);
	/* what squashed root creates belongs to the anonymous user */
	if (geteuid() == 0) {
		CREATE3args ca = {.where = {.dir = H(&f->root), .name = "anon"},
				  .how = {.mode = UNCHECKED}};
		CREATE3res cr = {0};
		struct stat st;

		assert_int_equal(chmod(f->exp, 0777), 0);
		assert_int_equal(call_as(f, &root, NFS_PROGRAM, NFSPROC3_CREATE,
					 (xdrproc_t)rr__xdr_CREATE3args, &ca,
					 (xdrproc_t)rr__xdr_CREATE3res, &cr),
				 0);
		assert_int_equal(cr.status, NFS3_OK);
		xdr_free((xdrproc_t)rr__xdr_CREATE3res, (char *)&cr);
		path_of(f, "anon", p);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_uid, 65534);
	}
}

static void auth_sys_identity_decides_permissions(void **state)
{
	struct fx *f = *state;
	struct rr_cred other = {.uid = 4242, .gid = 4242};
	SETATTR3args sa = {0};
	SETATTR3res sr = {0};
	ACCESS3args aa;
	ACCESS3res ar = {0};
	struct fh h;

	put_file(f, "mine", "data", 0644);
	assert_int_equal(lookup(f, &f->root, "mine", &h, NULL), NFS3_OK);
	/* someone else may read a 0644 file but not change it */
	aa = (ACCESS3args){.object = H(&h),
			   .access = ACCESS3_READ | ACCESS3_MODIFY};
	assert_int_equal(call_as(f, &other, NFS_PROGRAM, NFSPROC3_ACCESS,
				 (xdrproc_t)rr__xdr_ACCESS3args, &aa,
				 (xdrproc_t)rr__xdr_ACCESS3res, &ar),
			 0);
	assert_int_equal(ar.status, NFS3_OK);
	assert_int_equal(ar.ACCESS3res_u.resok.access, ACCESS3_READ);
	FREE(ACCESS, ar);
	sa.object = H(&h);
	sa.new_attributes.size.set_it = TRUE;
	assert_int_equal(call_as(f, &other, NFS_PROGRAM, NFSPROC3_SETATTR,
				 (xdrproc_t)rr__xdr_SETATTR3args, &sa,
				 (xdrproc_t)rr__xdr_SETATTR3res, &sr),
			 0);
	assert_true(sr.status == NFS3ERR_ACCES || sr.status == NFS3ERR_PERM);
	FREE(SETATTR, sr);
	/* the owner may */
	NFS(f, SETATTR, sa, sr);
	assert_int_equal(sr.status, NFS3_OK);
	FREE(SETATTR, sr);
}

#define NCONC 64

struct conc {
	struct rr_call call;
	struct rr_cred cred;
	char args[512];
	uint8_t res[4096];
	char name[16];
	int rc;
	bool done;
};

static void conc_done(struct rr_call *call, int rc, void *arg)
{
	struct conc *c = arg;

	(void)call;
	c->rc = rc;
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
}

/*
 * Many creates in flight from two identities at once, served by several
 * threads: each file must belong to the identity of its own call, which
 * fails if one call's credentials leak into another's thread.
 */
static void concurrent_calls_keep_their_own_identity(void **state)
{
	struct fx *f = *state;
	struct conc *cs = calloc(NCONC, sizeof(*cs));
	uint64_t end = rr_t_now_ms() + CALL_TMO_MS;
	nfs_fh3 root = H(&f->root);
	int left = NCONC;

	assert_non_null(cs);
	assert_int_equal(chmod(f->exp, 0777), 0);
	for (int i = 0; i < NCONC; i++) {
		struct conc *c = &cs[i];
		CREATE3args a = {.where = {.dir = root, .name = c->name},
				 .how = {.mode = UNCHECKED}};
		XDR x;

		snprintf(c->name, sizeof(c->name), "c%d", i);
		c->cred = (struct rr_cred){.uid = 3000 + (uint32_t)(i & 1),
					   .gid = 3000};
		xdrmem_create(&x, c->args, sizeof(c->args), XDR_ENCODE);
		assert_true(rr__xdr_CREATE3args(&x, &a));
		c->call = (struct rr_call){.prog = NFS_PROGRAM,
					   .vers = 3,
					   .proc = NFSPROC3_CREATE,
					   .cred = &c->cred,
					   .args = c->args,
					   .args_len = xdr_getpos(&x),
					   .res = c->res,
					   .res_cap = sizeof(c->res)};
		assert_int_equal(
			rr_clnt_call_async(f->c, &c->call, conc_done, c), 0);
	}
	while (left && rr_t_now_ms() < end) {
		left = 0;
		for (int i = 0; i < NCONC; i++)
			left += !__atomic_load_n(&cs[i].done, __ATOMIC_ACQUIRE);
		if (left)
			rr_clnt_progress(f->c, 100);
	}
	assert_int_equal(left, 0);
	for (int i = 0; i < NCONC; i++) {
		char p[PATH_MAX];
		struct stat st;

		assert_int_equal(cs[i].rc, 0);
		assert_int_equal(status_of(cs[i].res), NFS3_OK);
		path_of(f, cs[i].name, p);
		assert_int_equal(stat(p, &st), 0);
		if (geteuid() == 0)
			assert_int_equal(st.st_uid, 3000 + (uint32_t)(i & 1));
	}
	free(cs);
}

static void garbage_arguments_are_refused(void **state)
{
	struct fx *f = *state;
	uint8_t junk[8] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
	struct rr_call c = {.prog = NFS_PROGRAM,
			    .vers = 3,
			    .proc = NFSPROC3_LOOKUP,
			    .args = junk,
			    .args_len = sizeof(junk),
			    .res = f->res,
			    .res_cap = RES_CAP};
	fattr3 a;

	assert_int_equal(rr_clnt_call(f->c, &c), -EREMOTEIO);
	assert_int_equal(c.accept_stat, RR_GARBAGE_ARGS);
	c.proc = NFSPROC3_WRITE;
	assert_int_equal(rr_clnt_call(f->c, &c), -EREMOTEIO);
	assert_int_equal(c.accept_stat, RR_GARBAGE_ARGS);
	c.proc = 22;
	assert_int_equal(rr_clnt_call(f->c, &c), -EREMOTEIO);
	assert_int_equal(c.accept_stat, RR_PROC_UNAVAIL);
	/* and the server still serves */
	assert_int_equal(getattr(f, &f->root, &a), NFS3_OK);
}

/*
 * READLINK's path is DDP-eligible (RFC 8267 section 4): offered a write
 * chunk, the server writes the path there and the XDR results end at its
 * length word; offered none, it comes inline (as every test above).
 */
static void readlink_result_goes_in_an_offered_write_chunk(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX], target[4096], args[512];
	READLINK3args a;
	struct rr_call c = {.prog = NFS_PROGRAM,
			    .vers = 3,
			    .proc = NFSPROC3_READLINK,
			    .cred = &f->me,
			    .args = args,
			    .res = f->res,
			    .res_cap = RES_CAP,
			    .res_bulk = f->bulk,
			    .res_bulk_cap = sizeof(target)};
	post_op_attr pa = {0};
	nfsstat3 st;
	struct fh l;
	u_int len;
	XDR x;

	for (size_t i = 0; i < sizeof(target) - 1; i++)
		target[i] = (char)('a' + i % 23);
	target[sizeof(target) - 1] = '\0';
	path_of(f, "long-link", p);
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(lookup(f, &f->root, "long-link", &l, NULL), NFS3_OK);
	a = (READLINK3args){.symlink = H(&l)};
	xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
	assert_true(rr__xdr_READLINK3args(&x, &a));
	c.args_len = xdr_getpos(&x);
	assert_int_equal(rr_clnt_call(f->c, &c), 0);
	assert_int_equal(c.res_bulk_len, sizeof(target) - 1);
	assert_memory_equal(f->bulk, target, sizeof(target) - 1);
	xdrmem_create(&x, (char *)f->res, (u_int)c.res_len, XDR_DECODE);
	assert_true(rr__xdr_nfsstat3(&x, &st) && rr__xdr_post_op_attr(&x, &pa));
	assert_int_equal(st, NFS3_OK);
	assert_true(xdr_u_int(&x, &len));
	assert_int_equal(len, sizeof(target) - 1);
	assert_int_equal(xdr_getpos(&x), c.res_len);
	xdr_free((xdrproc_t)rr__xdr_post_op_attr, (char *)&pa);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			mount_protocol_answers_mnt_export_dump_umnt, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			getattr_lookup_access_match_stat, setup, teardown),
		cmocka_unit_test_setup_teardown(write_read_commit_round_trip,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			namespace_procedures_change_the_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(
			setattr_create_modes_and_fs_info, setup, teardown),
		cmocka_unit_test_setup_teardown(
			readdir_pages_through_2000_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(
			nothing_outside_the_export_is_reachable, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			handles_survive_a_restart_and_the_verifier_changes,
			setup, teardown),
		cmocka_unit_test_setup_teardown(read_only_export_answers_rofs,
						setup_ro, teardown),
		cmocka_unit_test_setup_teardown(
			root_squash_maps_uid_0_to_anonymous, setup_squash,
			teardown),
		cmocka_unit_test_setup_teardown(
			auth_sys_identity_decides_permissions, setup, teardown),
		cmocka_unit_test_setup_teardown(
			concurrent_calls_keep_their_own_identity, setup,
			teardown),
		cmocka_unit_test_setup_teardown(garbage_arguments_are_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			readlink_result_goes_in_an_offered_write_chunk, setup,
			teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
