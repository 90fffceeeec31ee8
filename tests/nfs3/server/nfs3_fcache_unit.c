/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The open-file cache alone (fcache.c): entries shared and counted,
 * evicted, swept, and closed only once nobody holds them; when an entry
 * must be proven again. Then the permission decisions READ and WRITE now
 * make from mode bits (ident.c): against the kernel's own answers, for
 * every mode and each kind of identity, where the test may become other
 * users (root); else those tests skip and say so.
 */
#include "nfs3/server/nfsd.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* A case this machine cannot run: says why, then skips. */
#define SKIP(why)                                                              \
	do {                                                                   \
		print_message("skipped: %s\n", why);                           \
		skip();                                                        \
	} while (0)

#define HOUR_MS 3600000u

struct dir {
	char path[PATH_MAX];
};

static int dir_setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));
	const char *tmp = getenv("TMPDIR");

	if (!d)
		return -1;
	snprintf(d->path, sizeof(d->path), "%s/nfs3fc.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(d->path) || chmod(d->path, 0755))
		return -1;
	*state = d;
	return 0;
}

static int dir_teardown(void **state)
{
	struct dir *d = *state;
	char cmd[PATH_MAX + 32];
	int rc;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	rc = system(cmd);
	free(d);
	return rc ? -1 : 0;
}

static void make_file(const struct dir *d, const char *name, char p[PATH_MAX])
{
	int fd;

	snprintf(p, PATH_MAX, "%s/%s", d->path, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "data", 4), 4);
	close(fd);
}

/* An object as resolving fills it: a fresh O_PATH descriptor of name. */
static void obj_of(const struct dir *d, const char *name, struct nfsd_obj *o)
{
	char p[PATH_MAX];

	memset(o, 0, sizeof(*o));
	make_file(d, name, p);
	o->fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	assert_true(o->fd >= 0);
	assert_int_equal(fstat(o->fd, &o->st), 0);
	o->path = name;
}

static struct nfsd_file *get(struct nfsd_fcache *fc, const struct nfsd_obj *o)
{
	return rr__nfsd_fcache_get(fc, (uint64_t)o->st.st_dev,
				   (uint64_t)o->st.st_ino, o->birth);
}

/* Checked right after the close it expects, before anything opens. */
static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static struct nfsd_fcache *cache(uint32_t max)
{
	struct nfsd_fcache *fc;

	assert_int_equal(rr__nfsd_fcache_create(&fc, max), 0);
	rr__nfsd_fcache_tune(fc, HOUR_MS, HOUR_MS); /* the test sweeps */
	return fc;
}

static void now_real(struct timespec *t)
{
	clock_gettime(CLOCK_REALTIME, t);
}

/* ============================================================ table */

static void
entries_are_shared_and_closed_when_the_last_holder_goes(void **state)
{
	struct nfsd_fcache *fc = cache(8);
	struct rr__nfsd_fcache_stats st;
	struct nfsd_file *f, *g;
	struct nfsd_obj o;
	struct timespec t0;
	int pfd, rfd;

	obj_of(*state, "a", &o);
	now_real(&t0);
	f = rr__nfsd_fcache_add(fc, &o, &t0);
	assert_non_null(f);
	pfd = o.fd;
	assert_int_equal(rr__nfsd_file_pfd(f), pfd);
	assert_string_equal(rr__nfsd_file_path(f), "a");
	g = get(fc, &o);
	assert_ptr_equal(g, f);
	rr__nfsd_fcache_put(fc, g);
	rr__nfsd_fcache_stats(fc, &st);
	assert_int_equal(st.open, 1);
	assert_int_equal(st.hits, 1);

	/* one descriptor to read with, made once */
	rfd = rr__nfsd_file_fd(fc, f, O_RDONLY);
	assert_true(rfd >= 0);
	assert_int_equal(rr__nfsd_file_fd(fc, f, O_RDONLY), rfd);

	/* forgotten while held: no longer found, still open for its holder */
	rr__nfsd_fcache_forget(fc, (uint64_t)o.st.st_dev,
			       (uint64_t)o.st.st_ino);
	assert_null(get(fc, &o));
	assert_true(is_open(pfd) && is_open(rfd));
	rr__nfsd_fcache_put(fc, f);
	assert_false(is_open(pfd));
	assert_false(is_open(rfd));
	rr__nfsd_fcache_stats(fc, &st);
	assert_int_equal(st.open, 0);
	assert_int_equal(st.forgotten, 1);
	rr__nfsd_fcache_destroy(fc);
}

static void a_second_entry_for_a_key_gives_way_to_the_first(void **state)
{
	struct nfsd_fcache *fc = cache(8);
	struct nfsd_file *f, *g;
	struct nfsd_obj o, o2;
	struct timespec t0;
	char p[PATH_MAX];

	obj_of(*state, "a", &o);
	now_real(&t0);
	f = rr__nfsd_fcache_add(fc, &o, &t0);
	o2 = o;
	snprintf(p, sizeof(p), "%s/a", ((struct dir *)*state)->path);
	o2.fd = open(p, O_PATH | O_CLOEXEC);
	assert_true(o2.fd >= 0);
	g = rr__nfsd_fcache_add(fc, &o2, &t0);
	assert_ptr_equal(g, f);
	assert_false(is_open(o2.fd)); /* ours was not needed */
	assert_true(is_open(o.fd));
	rr__nfsd_fcache_put(fc, g);
	rr__nfsd_fcache_put(fc, f);
	rr__nfsd_fcache_destroy(fc);
	assert_false(is_open(o.fd)); /* closed with the cache */
}

static struct nfsd_file *add_put(struct nfsd_fcache *fc, void *state,
				 const char *name, struct nfsd_obj *o)
{
	struct timespec t0;
	struct nfsd_file *f;

	obj_of(state, name, o);
	now_real(&t0);
	f = rr__nfsd_fcache_add(fc, o, &t0);
	assert_non_null(f);
	return f;
}

static void room_is_made_from_the_least_recently_used_idle_entry(void **state)
{
	struct nfsd_fcache *fc = cache(2);
	struct rr__nfsd_fcache_stats st;
	struct nfsd_obj a, b, c, d;
	struct nfsd_file *fa, *fc_, *fd_;

	rr__nfsd_fcache_put(fc, add_put(fc, *state, "a", &a));
	rr__nfsd_fcache_put(fc, add_put(fc, *state, "b", &b));
	rr__nfsd_fcache_put(fc, get(fc, &a)); /* b is now the coldest */
	fc_ = add_put(fc, *state, "c", &c);
	assert_false(is_open(b.fd));
	assert_null(get(fc, &b));
	fa = get(fc, &a);
	assert_non_null(fa);
	rr__nfsd_fcache_stats(fc, &st);
	assert_int_equal(st.evicted, 1);
	assert_int_equal(st.open, 2);

	/* all held: nothing may go, the table grows past its bound */
	fd_ = add_put(fc, *state, "d", &d);
	assert_true(is_open(a.fd) && is_open(c.fd));
	rr__nfsd_fcache_stats(fc, &st);
	assert_int_equal(st.open, 3);
	rr__nfsd_fcache_put(fc, fa);
	rr__nfsd_fcache_put(fc, fc_);
	rr__nfsd_fcache_put(fc, fd_);
	rr__nfsd_fcache_destroy(fc);
	assert_false(is_open(a.fd));
}

static void idle_entries_are_swept_and_held_ones_kept(void **state)
{
	struct nfsd_fcache *fc = cache(8);
	struct rr__nfsd_fcache_stats st;
	struct nfsd_obj a, b;
	struct nfsd_file *held;
	uint64_t now;

	rr__nfsd_fcache_tune(fc, 1000, HOUR_MS);
	rr__nfsd_fcache_put(fc, add_put(fc, *state, "a", &a));
	held = add_put(fc, *state, "b", &b);
	now = rr_mono_ms();
	rr__nfsd_fcache_sweep(fc, now + 500);
	assert_true(is_open(a.fd) && is_open(b.fd));
	rr__nfsd_fcache_sweep(fc, now + 5000);
	assert_false(is_open(a.fd));
	assert_true(is_open(b.fd));
	rr__nfsd_fcache_put(fc, held);
	assert_true(is_open(b.fd)); /* idle now, not yet swept */
	rr__nfsd_fcache_sweep(fc, now + 5000);
	assert_false(is_open(b.fd));
	rr__nfsd_fcache_stats(fc, &st);
	assert_int_equal(st.swept, 2);
	assert_int_equal(st.open, 0);
	rr__nfsd_fcache_destroy(fc);
}

/* =========================================================== proofs */

static void
an_entry_is_proven_again_when_its_file_may_have_changed(void **state)
{
	struct nfsd_fcache *fc = cache(8);
	struct timespec t0 = {.tv_sec = 1001};
	struct nfsd_file *f;
	struct nfsd_obj o;
	struct stat st;
	uint64_t now;
	bool acl = true;

	rr__nfsd_fcache_tune(fc, HOUR_MS, 1000);
	obj_of(*state, "a", &o);
	o.st.st_ctim = (struct timespec){.tv_sec = 1000, .tv_nsec = 5};
	f = rr__nfsd_fcache_add(fc, &o, &t0);
	now = rr_mono_ms();
	st = o.st;
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, now, &acl), 1);
	assert_false(acl);
	/* ctime moved: renamed, linked, unlinked, chmod, an ACL... */
	st.st_ctim.tv_nsec = 6;
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, now, &acl), 0);
	/* what the descriptors were opened under changed: a new entry */
	st = o.st;
	st.st_mode ^= 0004;
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, now, &acl), -1);
	st = o.st;
	st.st_uid++;
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, now, &acl), -1);
	st = o.st;
	st.st_gid++;
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, now, &acl), -1);
	/* a directory above may have moved: proven again after reval_ms */
	st = o.st;
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, now + 5000, &acl),
			 0);

	/* racy: proven 10 ms after the ctime it saw, in the same tick */
	t0 = (struct timespec){.tv_sec = 1000, .tv_nsec = 10000005};
	rr__nfsd_file_proven(fc, f, &st, &t0, false);
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, rr_mono_ms(), &acl),
			 0);
	/* whole-second timestamps need two seconds */
	st.st_ctim = (struct timespec){.tv_sec = 2000};
	t0 = (struct timespec){.tv_sec = 2001};
	rr__nfsd_file_proven(fc, f, &st, &t0, false);
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, rr_mono_ms(), &acl),
			 0);
	t0.tv_sec = 2002;
	rr__nfsd_file_proven(fc, f, &st, &t0, true);
	assert_int_equal(rr__nfsd_file_current(fc, f, &st, rr_mono_ms(), &acl),
			 1);
	assert_true(acl); /* as the proof found it */
	rr__nfsd_fcache_put(fc, f);
	rr__nfsd_fcache_destroy(fc);
}

/* A POSIX ACL xattr (version 2): user::rw- user:uid:--- group::r--
 * mask::r-- other::r--, in the kernel's little-endian layout. */
static size_t acl_denying(uid_t uid, uint8_t out[4 + 5 * 8])
{
	static const struct {
		uint16_t tag, perm;
		bool named;
	} e[] = {{0x01, 6, false},
		 {0x02, 0, true},
		 {0x04, 4, false},
		 {0x10, 4, false},
		 {0x20, 4, false}};
	uint8_t *p = out;

	p[0] = 2, p[1] = p[2] = p[3] = 0;
	p += 4;
	for (size_t i = 0; i < 5; i++, p += 8) {
		uint32_t id = e[i].named ? (uint32_t)uid : 0xffffffffu;

		p[0] = (uint8_t)e[i].tag, p[1] = (uint8_t)(e[i].tag >> 8);
		p[2] = (uint8_t)e[i].perm, p[3] = 0;
		for (int b = 0; b < 4; b++)
			p[4 + b] = (uint8_t)(id >> (8 * b));
	}
	return (size_t)(p - out);
}

static void an_access_acl_is_seen(void **state)
{
	uint8_t acl[4 + 5 * 8];
	size_t n = acl_denying(4242, acl);
	struct nfsd_obj o;
	char p[PATH_MAX];

	obj_of(*state, "a", &o);
	assert_false(rr__nfsd_has_acl(o.fd));
	snprintf(p, sizeof(p), "%s/a", ((struct dir *)*state)->path);
	if (setxattr(p, "system.posix_acl_access", acl, n, 0)) {
		close(o.fd);
		if (errno == EOPNOTSUPP)
			SKIP("no ACLs on this file system");
		fail_msg("setxattr: %s", strerror(errno));
	}
	assert_true(rr__nfsd_has_acl(o.fd)); /* through an O_PATH descriptor */
	close(o.fd);
}

/* ====================================================== permissions */

static void only_what_mode_bits_can_answer_is_decided_by_them(void **state)
{
	const uint64_t both = STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND;
	struct nfsd_obj o = {.st = {.st_mode = S_IFREG | 0644},
			     .attrs_mask = both,
			     .file = (struct nfsd_file *)&o};

	(void)state;
	assert_true(rr__nfsd_mode_decides(&o, false));
	assert_true(rr__nfsd_mode_decides(&o, true));
	o.acl = true;
	assert_false(rr__nfsd_mode_decides(&o, false));
	o.acl = false;
	o.file = NULL; /* not from the cache: acts as the caller */
	assert_false(rr__nfsd_mode_decides(&o, false));
	o.file = (struct nfsd_file *)&o;
	o.st.st_mode = S_IFDIR | 0755;
	assert_false(rr__nfsd_mode_decides(&o, false));
	o.st.st_mode = S_IFREG | S_ISUID | 0755;
	assert_true(rr__nfsd_mode_decides(&o, false));
	assert_false(rr__nfsd_mode_decides(&o, true));
	o.st.st_mode = S_IFREG | S_ISGID | 0775;
	assert_false(rr__nfsd_mode_decides(&o, true));
	o.st.st_mode = S_IFREG | 0666;
	o.attrs = STATX_ATTR_IMMUTABLE;
	assert_false(rr__nfsd_mode_decides(&o, true));
	o.attrs = STATX_ATTR_APPEND;
	assert_false(rr__nfsd_mode_decides(&o, true));
	o.attrs = 0;
	o.attrs_mask = STATX_ATTR_IMMUTABLE; /* append-only unknown */
	assert_false(rr__nfsd_mode_decides(&o, true));
	assert_true(rr__nfsd_mode_decides(&o, false));
}

#define NMODES	 512
#define F_UID	 1000u
#define F_GID	 2000u
#define OTHER	 3000u
#define R_OK_BIT 1
#define W_OK_BIT 2

/* The kernel's answers for id over every file: bits per mode. */
static bool kernel_answers(const struct dir *d, const struct nfsd_ident *id,
			   uint8_t out[NMODES])
{
	int p[2];
	pid_t pid;
	int status;
	bool ok;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		gid_t g[16];

		for (uint32_t i = 0; i < id->ngids; i++)
			g[i] = id->gids[i];
		if (setgroups(id->ngids, g) || setgid(id->gid) ||
		    setuid(id->uid))
			_exit(2);
		for (int m = 0; m < NMODES; m++) {
			char path[PATH_MAX];
			int fd;

			snprintf(path, sizeof(path), "%s/m%03o", d->path, m);
			out[m] = 0;
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				out[m] |= R_OK_BIT;
				close(fd);
			}
			fd = open(path, O_WRONLY | O_CLOEXEC);
			if (fd >= 0) {
				out[m] |= W_OK_BIT;
				close(fd);
			}
		}
		_exit(write(p[1], out, NMODES) == NMODES ? 0 : 3);
	}
	close(p[1]);
	ok = read(p[0], out, NMODES) == NMODES;
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void make_mode_files(const struct dir *d)
{
	for (int m = 0; m < NMODES; m++) {
		char p[PATH_MAX], name[16];

		snprintf(name, sizeof(name), "m%03o", m);
		make_file(d, name, p);
		assert_int_equal(chown(p, F_UID, F_GID), 0);
		assert_int_equal(chmod(p, (mode_t)m), 0);
	}
}

/*
 * The identities a call can have, as AUTH_SYS names them and as they are
 * after squashing: the file's owner (also in its group), someone in its
 * group by the primary gid and by an auxiliary one, anyone else, root,
 * and root squashed (whose auxiliary gids still count).
 */
static const struct {
	const char *what;
	bool squash;
	struct rr_cred cr;
} who[] = {
	{"owner", false, {.uid = F_UID, .gid = 5000}},
	{"owner in group", false, {.uid = F_UID, .gid = F_GID}},
	{"group", false, {.uid = OTHER, .gid = F_GID}},
	{"aux group",
	 false,
	 {.uid = OTHER, .gid = OTHER, .ngids = 2, .gids = {4000, F_GID}}},
	{"other", false, {.uid = OTHER, .gid = OTHER, .ngids = 1, .gids = {9}}},
	{"root", false, {.uid = 0, .gid = 0}},
	{"squashed root", true, {.uid = 0, .gid = 0}},
	{"squashed root, aux group",
	 true,
	 {.uid = 0, .gid = 0, .ngids = 2, .gids = {0, F_GID}}},
};

static void mode_bits_decide_as_the_kernel_does(void **state)
{
	const struct dir *d = *state;
	uint8_t k[NMODES];

	if (geteuid() != 0)
		SKIP("the kernel's answers need other users: not root");
	make_mode_files(d);
	for (size_t w = 0; w < sizeof(who) / sizeof(who[0]); w++) {
		struct rr_nfs3_server s = {0};
		struct nfsd_policy pol = {.squash = who[w].squash
							    ? NFSD_SQUASH_ROOT
							    : NFSD_SQUASH_NONE,
					  .anon_uid = NFSD_ANON,
					  .anon_gid = NFSD_ANON};
		struct nfsd_ident id;

		rr__nfsd_ident_from_cred(&pol, &who[w].cr, &id);
		assert_true(kernel_answers(d, &id, k));
		/* the directory itself must not be in the way */
		if (!(k[0666] & R_OK_BIT))
			SKIP("the test directory is not searchable");
		for (int m = 0; m < NMODES; m++) {
			struct stat st = {.st_mode = S_IFREG | (mode_t)m,
					  .st_uid = F_UID,
					  .st_gid = F_GID};
			uint32_t a = rr__nfsd_access(
				&s, &id, &st, ACCESS3_READ | ACCESS3_MODIFY);
			uint8_t ours = (a & ACCESS3_READ ? R_OK_BIT : 0) |
				       (a & ACCESS3_MODIFY ? W_OK_BIT : 0);

			if (ours != k[m])
				fail_msg("%s, mode %03o: ours %u, kernel %u",
					 who[w].what, m, ours, k[m]);
			/* a read-only export never lets anyone modify */
			id.ro = true;
			a = rr__nfsd_access(&s, &id, &st, ACCESS3_MODIFY);
			assert_int_equal(a, 0);
			id.ro = false;
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			entries_are_shared_and_closed_when_the_last_holder_goes,
			dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(
			a_second_entry_for_a_key_gives_way_to_the_first,
			dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(
			room_is_made_from_the_least_recently_used_idle_entry,
			dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(
			idle_entries_are_swept_and_held_ones_kept, dir_setup,
			dir_teardown),
		cmocka_unit_test_setup_teardown(
			an_entry_is_proven_again_when_its_file_may_have_changed,
			dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(an_access_acl_is_seen,
						dir_setup, dir_teardown),
		cmocka_unit_test(
			only_what_mode_bits_can_answer_is_decided_by_them),
		cmocka_unit_test_setup_teardown(
			mode_bits_decide_as_the_kernel_does, dir_setup,
			dir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
