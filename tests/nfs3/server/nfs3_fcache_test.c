/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The open-file cache end to end (src/nfs3/server/fcache.c): which files
 * the server keeps open (read from /proc/PID/fd of the server child) and
 * until when; that nothing it keeps gives a stale answer after changes
 * made through the server or beside it; and that READ and WRITE, now
 * decided from mode bits, answer as the kernel does for each identity,
 * leaving ACLs and set-id bits to the kernel. Tests that must become
 * other users need root; without it they skip and say so.
 */
#include "srv_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* A case this machine cannot run: says why, then skips. */
#define SKIP(why)                                                              \
	do {                                                                   \
		print_message("skipped: %s\n", why);                           \
		skip();                                                        \
	} while (0)

#define F_UID 1000u
#define F_GID 2000u
#define OTHER 3000u

static nfsstat3 remove_name(struct fx *f, const char *name)
{
	REMOVE3args a = {.object = {.dir = H(&f->root), .name = (char *)name}};
	REMOVE3res r = {0};

	NFS(f, REMOVE, a, r);
	FREE(REMOVE, r);
	return r.status;
}

static void expect_read(struct fx *f, struct fh *h, const char *want)
{
	size_t len = strlen(want);
	uint32_t n = 0;
	bool_t eof = 0;

	assert_int_equal(read_at(f, h, 0, 4096, &n, &eof), NFS3_OK);
	assert_int_equal(n, len);
	assert_memory_equal(f->bulk, want, len);
	assert_true(eof);
}

static uint64_t real_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Waits, by the clock, until rel's ctime is old enough that the cache
 * trusts a proof of it (fcache.c, racy proofs): then only a change of
 * ctime makes it prove the file again, which is what a test exercises.
 */
static void settle(struct fx *f, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	uint64_t ctime;

	path_of(f, rel, p);
	assert_int_equal(lstat(p, &st), 0);
	ctime = (uint64_t)st.st_ctim.tv_sec * 1000000000u +
		(uint64_t)st.st_ctim.tv_nsec;
	while (real_ns() < ctime + 200000000u)
		poll(NULL, 0, 20);
}

/* =================================================== what stays open */

static void a_read_file_stays_open_until_removed_through_us(void **state)
{
	struct fx *f = *state;
	struct fh h;

	put_file(f, "a", "hello", 0644);
	assert_int_equal(lookup(f, &f->root, "a", &h, NULL), NFS3_OK);
	assert_int_equal(file_fds(f, "a"), 0); /* a lookup opens nothing */
	expect_read(f, &h, "hello");
	/* its O_PATH descriptor and one to read with, kept between calls */
	assert_int_equal(file_fds(f, "a"), 2);
	expect_read(f, &h, "hello");
	assert_int_equal(file_fds(f, "a"), 2);
	assert_int_equal(remove_name(f, "a"), NFS3_OK);
	assert_int_equal(file_fds(f, "a"), 0); /* its blocks are free */
	assert_int_equal(getattr(f, &h, NULL), NFS3ERR_STALE);
}

static void idle_files_are_closed(void **state)
{
	struct fx *f = *state;
	uint64_t end;
	struct fh h;

	put_file(f, "a", "hello", 0644);
	assert_int_equal(lookup(f, &f->root, "a", &h, NULL), NFS3_OK);
	expect_read(f, &h, "hello");
	/* QUICK_IDLE_MS later the reaper closes it, with no call to help */
	end = rr_t_now_ms() + CHILD_TMO_MS;
	while (file_fds(f, "a") && rr_t_now_ms() < end)
		poll(NULL, 0, 10);
	assert_int_equal(file_fds(f, "a"), 0);
	expect_read(f, &h, "hello"); /* and opens it again when asked */
}

/* =================================================== no stale answers */

static void a_file_unlinked_elsewhere_is_stale(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX], out[PATH_MAX];
	uint32_t n;
	bool_t eof;
	struct fh a, b;

	put_file(f, "a", "hello", 0644);
	assert_int_equal(lookup(f, &f->root, "a", &a, NULL), NFS3_OK);
	expect_read(f, &a, "hello");
	path_of(f, "a", p);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(read_at(f, &a, 0, 10, &n, &eof), NFS3ERR_STALE);
	assert_int_equal(getattr(f, &a, NULL), NFS3ERR_STALE);
	assert_int_equal(file_fds(f, "a"), 0);

	/* still linked, but only outside the export: stale as well */
	put_file(f, "b", "hello", 0644);
	path_of(f, "b", p);
	snprintf(out, sizeof(out), "%s/b-outside", f->top);
	assert_int_equal(link(p, out), 0);
	settle(f, "b");
	assert_int_equal(lookup(f, &f->root, "b", &b, NULL), NFS3_OK);
	expect_read(f, &b, "hello");
	assert_int_equal(unlink(p), 0);
	assert_int_equal(read_at(f, &b, 0, 10, &n, &eof), NFS3ERR_STALE);
	assert_int_equal(file_fds(f, "b"), 0);
}

static void renamed_elsewhere_reads_on_and_moved_out_is_stale(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX], q[PATH_MAX];
	uint32_t n;
	bool_t eof;
	struct fh h;

	put_file(f, "a", "bytes", 0644);
	settle(f, "a");
	assert_int_equal(lookup(f, &f->root, "a", &h, NULL), NFS3_OK);
	expect_read(f, &h, "bytes");
	path_of(f, "a", p);
	path_of(f, "b", q);
	assert_int_equal(rename(p, q), 0);
	expect_read(f, &h, "bytes");
	assert_int_equal(file_fds(f, "b"), 2);
	snprintf(p, sizeof(p), "%s/outside", f->top);
	assert_int_equal(rename(q, p), 0);
	assert_int_equal(read_at(f, &h, 0, 10, &n, &eof), NFS3ERR_STALE);
	assert_int_equal(getattr(f, &h, NULL), NFS3ERR_STALE);
}

/* Its ctime stays: caught by the proof every reval_ms (0 here). */
static void a_directory_moved_out_takes_its_files_along(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX], q[PATH_MAX];
	struct fh d, h;
	uint32_t n;
	bool_t eof;

	path_of(f, "d", p);
	assert_int_equal(mkdir(p, 0755), 0);
	put_file(f, "d/x", "inside", 0644);
	settle(f, "d/x");
	assert_int_equal(lookup(f, &f->root, "d", &d, NULL), NFS3_OK);
	assert_int_equal(lookup(f, &d, "x", &h, NULL), NFS3_OK);
	expect_read(f, &h, "inside");
	assert_int_equal(file_fds(f, "d/x"), 2); /* kept */
	snprintf(q, sizeof(q), "%s/d-outside", f->top);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(read_at(f, &h, 0, 10, &n, &eof), NFS3ERR_STALE);
}

static void check_read_attr(struct fx *f, struct fh *h, const char *rel,
			    const char *want)
{
	post_op_attr pa = {0};
	char p[PATH_MAX];
	uint32_t n = 0;
	bool_t eof = 0;

	assert_int_equal(read_as(f, &f->me, h, 0, 4096, &n, &eof, &pa),
			 NFS3_OK);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(f->bulk, want, n);
	assert_true(eof);
	assert_true(pa.attributes_follow);
	path_of(f, rel, p);
	check_attr(&pa.post_op_attr_u.attributes, p);
}

static void bytes_and_attributes_follow_changes_made_anywhere(void **state)
{
	struct fx *f = *state;
	SETATTR3args sa = {0};
	SETATTR3res sr = {0};
	WRITE3res wr;
	char p[PATH_MAX], back[16] = {0};
	struct fh h;
	int fd;

	put_file(f, "a", "hello world", 0644);
	path_of(f, "a", p);
	assert_int_equal(lookup(f, &f->root, "a", &h, NULL), NFS3_OK);
	check_read_attr(f, &h, "a", "hello world");
	/* SETATTR(size) through us */
	sa.object = H(&h);
	sa.new_attributes.size.set_it = TRUE;
	sa.new_attributes.size.set_size3_u.size = 0;
	NFS(f, SETATTR, sa, sr);
	assert_int_equal(sr.status, NFS3_OK);
	FREE(SETATTR, sr);
	check_read_attr(f, &h, "a", "");
	/* a write beside us */
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "local!", 6, 0), 6);
	close(fd);
	check_read_attr(f, &h, "a", "local!");
	/* a WRITE through us, seen beside us and through us */
	assert_int_equal(write_at(f, &h, 6, "+nfs", 4, FILE_SYNC, &wr),
			 NFS3_OK);
	assert_true(wr.WRITE3res_u.resok.file_wcc.after.attributes_follow);
	check_attr(
		&wr.WRITE3res_u.resok.file_wcc.after.post_op_attr_u.attributes,
		p);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, back, sizeof(back), 0), 10);
	close(fd);
	assert_string_equal(back, "local!+nfs");
	check_read_attr(f, &h, "a", "local!+nfs");
	/* truncated beside us */
	assert_int_equal(truncate(p, 3), 0);
	check_read_attr(f, &h, "a", "loc");
	/* made unreadable beside us: the mode is read again every call */
	if (geteuid() != 0) {
		uint32_t n;
		bool_t eof;

		assert_int_equal(chmod(p, 0200), 0);
		assert_int_equal(read_at(f, &h, 0, 10, &n, &eof),
				 NFS3ERR_ACCES);
	}
}

/* ======================================================= permissions */

/* What the kernel says when cr opens path with flags: true if it may. */
static bool kernel_may(const char *path, int flags, const struct rr_cred *cr)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		gid_t g[16];
		int fd;

		for (uint32_t i = 0; i < cr->ngids; i++)
			g[i] = cr->gids[i];
		if (setgroups(cr->ngids, g) || setgid(cr->gid) ||
		    setuid(cr->uid))
			_exit(2);
		fd = open(path, flags | O_CLOEXEC);
		_exit(fd >= 0 ? 0 : errno == EACCES ? 1 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
	return WEXITSTATUS(status) == 0;
}

static void owned_file(struct fx *f, const char *rel, mode_t mode)
{
	char p[PATH_MAX];

	put_file(f, rel, "x", 0600);
	path_of(f, rel, p);
	assert_int_equal(chown(p, F_UID, F_GID), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static const mode_t modes[] = {0000, 0400, 0200, 0600, 0040, 0020, 0004,
			       0002, 0644, 0640, 0604, 0460, 0066, 0606};

static const struct rr_cred ids[] = {
	{.uid = F_UID, .gid = 5000},
	{.uid = OTHER, .gid = F_GID},
	{.uid = OTHER, .gid = OTHER, .ngids = 2, .gids = {4000, F_GID}},
	{.uid = OTHER, .gid = OTHER},
	{.uid = 0, .gid = 0},
	{.uid = 0, .gid = 0, .ngids = 2, .gids = {0, F_GID}},
};

/* ids[i] as the server treats it: squashed when the export squashes. */
static struct rr_cred as_served(const struct fx *f, const struct rr_cred *cr)
{
	struct rr_cred c = *cr;
	uint32_t n = 0;

	if (!(f->flags & OPT_SQUASH))
		return c;
	if (c.uid == 0)
		c.uid = 65534;
	if (c.gid == 0)
		c.gid = 65534;
	for (uint32_t i = 0; i < cr->ngids; i++)
		if (cr->gids[i])
			c.gids[n++] = cr->gids[i];
	c.ngids = n;
	return c;
}

static void compare_with_kernel(struct fx *f)
{
	char p[PATH_MAX], name[16];
	WRITE3res wr;
	uint32_t n;
	bool_t eof;

	if (geteuid() != 0)
		SKIP("the kernel's answers need other users: not root");
	owned_file(f, "open", 0666);
	path_of(f, "open", p);
	if (!kernel_may(p, O_RDONLY, &ids[3]))
		SKIP("others may not search the way to the export");
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct fh h;

		snprintf(name, sizeof(name), "m%03o", modes[m]);
		owned_file(f, name, modes[m]);
		path_of(f, name, p);
		assert_int_equal(lookup(f, &f->root, name, &h, NULL), NFS3_OK);
		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			struct rr_cred k = as_served(f, &ids[i]);
			nfsstat3 r =
				read_as(f, &ids[i], &h, 0, 1, &n, &eof, NULL);
			nfsstat3 w = write_as(f, &ids[i], &h, 0, "x", 1,
					      UNSTABLE, &wr);

			xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
			if ((r == NFS3_OK) != kernel_may(p, O_RDONLY, &k))
				fail_msg("READ %s as %u/%u: %d", name,
					 ids[i].uid, ids[i].gid, r);
			if (f->flags & OPT_RO)
				assert_int_equal(w, NFS3ERR_ROFS);
			else if ((w == NFS3_OK) != kernel_may(p, O_WRONLY, &k))
				fail_msg("WRITE %s as %u/%u: %d", name,
					 ids[i].uid, ids[i].gid, w);
		}
		/* decided from the mode bits: read through the kept fd */
		if (modes[m] & 0444)
			assert_true(file_fds(f, name) >= 2);
	}
}

static void mode_bits_answer_as_the_kernel_does(void **state)
{
	compare_with_kernel(*state);
}

static void squashed_root_answers_as_anonymous_does(void **state)
{
	compare_with_kernel(*state);
}

static void a_read_only_export_reads_as_the_kernel_does(void **state)
{
	compare_with_kernel(*state);
}

static size_t acl_denying(uid_t uid, uint8_t out[4 + 5 * 8])
{
	/* user::rw- user:uid:--- group::r-- mask::r-- other::r--, v2 LE */
	static const uint16_t tag[] = {0x01, 0x02, 0x04, 0x10, 0x20};
	static const uint16_t perm[] = {6, 0, 4, 4, 4};
	uint8_t *p = out;

	memset(out, 0, 4 + 5 * 8);
	p[0] = 2;
	p += 4;
	for (size_t i = 0; i < 5; i++, p += 8) {
		uint32_t id = tag[i] == 0x02 ? (uint32_t)uid : 0xffffffffu;

		p[0] = (uint8_t)tag[i];
		p[2] = (uint8_t)perm[i];
		for (int b = 0; b < 4; b++)
			p[4 + b] = (uint8_t)(id >> (8 * b));
	}
	return (size_t)(p - out);
}

static void an_acl_is_left_to_the_kernel(void **state)
{
	struct fx *f = *state;
	struct rr_cred denied = {.uid = OTHER, .gid = OTHER};
	struct rr_cred other = {.uid = OTHER + 1, .gid = OTHER};
	struct rr_cred owner = {.uid = F_UID, .gid = F_GID};
	uint8_t acl[4 + 5 * 8];
	size_t len = acl_denying(OTHER, acl);
	char p[PATH_MAX];
	WRITE3res wr;
	uint32_t n;
	bool_t eof;
	struct fh h;

	if (geteuid() != 0)
		SKIP("files of other users: not root");
	owned_file(f, "a", 0644);
	path_of(f, "a", p);
	settle(f, "a");
	assert_int_equal(lookup(f, &f->root, "a", &h, NULL), NFS3_OK);
	assert_int_equal(read_as(f, &denied, &h, 0, 1, &n, &eof, NULL),
			 NFS3_OK);
	if (setxattr(p, "system.posix_acl_access", acl, len, 0)) {
		if (errno == EOPNOTSUPP)
			SKIP("no ACLs on this file system");
		fail_msg("setxattr: %s", strerror(errno));
	}
	/* the mode bits still say 0644; the ACL says no to one user */
	assert_int_equal(read_as(f, &denied, &h, 0, 1, &n, &eof, NULL),
			 NFS3ERR_ACCES);
	assert_int_equal(read_as(f, &other, &h, 0, 1, &n, &eof, NULL), NFS3_OK);
	assert_int_equal(write_as(f, &owner, &h, 0, "y", 1, UNSTABLE, &wr),
			 NFS3_OK);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	assert_int_equal(removexattr(p, "system.posix_acl_access"), 0);
	assert_int_equal(read_as(f, &denied, &h, 0, 1, &n, &eof, NULL),
			 NFS3_OK);
}

static void a_write_by_another_user_clears_set_id_bits(void **state)
{
	struct fx *f = *state;
	struct rr_cred writer = {.uid = OTHER, .gid = OTHER};
	char p[PATH_MAX];
	struct stat st;
	WRITE3res wr;
	struct fh h;

	if (geteuid() != 0)
		SKIP("files of other users: not root");
	owned_file(f, "s", 06776);
	path_of(f, "s", p);
	assert_int_equal(lookup(f, &f->root, "s", &h, NULL), NFS3_OK);
	assert_int_equal(write_as(f, &writer, &h, 0, "y", 1, UNSTABLE, &wr),
			 NFS3_OK);
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&wr);
	assert_int_equal(stat(p, &st), 0);
	/* as a local write by that user would have done */
	assert_int_equal(st.st_mode & 07777, 0776);
}

/* ======================================================= concurrency */

#define NCONC 64

struct conc {
	struct rr_call call;
	struct rr_cred cred;
	char args[256];
	uint8_t res[4096];
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

static void start_reads(struct fx *f, struct conc *cs, struct fh *h,
			const struct rr_cred *yes, const struct rr_cred *no)
{
	for (int i = 0; i < NCONC; i++) {
		struct conc *c = &cs[i];
		READ3args a = {.file = H(h), .count = 64};
		XDR x;

		c->cred = i & 1 ? *no : *yes;
		xdrmem_create(&x, c->args, sizeof(c->args), XDR_ENCODE);
		assert_true(rr__xdr_READ3args(&x, &a));
		c->call = (struct rr_call){.prog = NFS_PROGRAM,
					   .vers = 3,
					   .proc = NFSPROC3_READ,
					   .cred = &c->cred,
					   .args = c->args,
					   .args_len = xdr_getpos(&x),
					   .res = c->res,
					   .res_cap = sizeof(c->res)};
		assert_int_equal(
			rr_clnt_call_async(f->c, &c->call, conc_done, c), 0);
	}
}

/*
 * READs of one kept file in flight from two identities at once, served by
 * several threads: each gets its own identity's answer.
 */
static void concurrent_reads_each_get_their_own_answer(void **state)
{
	struct fx *f = *state;
	struct conc *cs = calloc(NCONC, sizeof(*cs));
	struct rr_cred yes = f->me, no = {.uid = 4242, .gid = 4242};
	uint64_t end = rr_t_now_ms() + CALL_TMO_MS;
	char p[PATH_MAX];
	struct fh h;
	int left = NCONC;

	assert_non_null(cs);
	put_file(f, "p", "private", 0600);
	if (geteuid() == 0) {
		path_of(f, "p", p);
		assert_int_equal(chown(p, F_UID, F_GID), 0);
		yes = (struct rr_cred){.uid = F_UID, .gid = F_GID};
	}
	assert_int_equal(lookup(f, &f->root, "p", &h, NULL), NFS3_OK);
	start_reads(f, cs, &h, &yes, &no);
	while (left && rr_t_now_ms() < end) {
		left = 0;
		for (int i = 0; i < NCONC; i++)
			left += !__atomic_load_n(&cs[i].done, __ATOMIC_ACQUIRE);
		if (left)
			rr_clnt_progress(f->c, 100);
	}
	assert_int_equal(left, 0);
	for (int i = 0; i < NCONC; i++) {
		assert_int_equal(cs[i].rc, 0);
		assert_int_equal(status_of(cs[i].res),
				 i & 1 ? NFS3ERR_ACCES : NFS3_OK);
	}
	free(cs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			a_read_file_stays_open_until_removed_through_us, setup,
			teardown),
		cmocka_unit_test_setup_teardown(idle_files_are_closed,
						setup_quick, teardown),
		cmocka_unit_test_setup_teardown(
			a_file_unlinked_elsewhere_is_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(
			renamed_elsewhere_reads_on_and_moved_out_is_stale,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_directory_moved_out_takes_its_files_along,
			setup_prove, teardown),
		cmocka_unit_test_setup_teardown(
			bytes_and_attributes_follow_changes_made_anywhere,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			mode_bits_answer_as_the_kernel_does, setup, teardown),
		cmocka_unit_test_setup_teardown(
			squashed_root_answers_as_anonymous_does, setup_squash,
			teardown),
		cmocka_unit_test_setup_teardown(
			a_read_only_export_reads_as_the_kernel_does, setup_ro,
			teardown),
		cmocka_unit_test_setup_teardown(an_acl_is_left_to_the_kernel,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_write_by_another_user_clears_set_id_bits, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			concurrent_reads_each_get_their_own_answer, setup,
			teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
