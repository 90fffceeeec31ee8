/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NFS3ERR_JUKEBOX (try again later) is the server's to wait out, not the
 * application's error. nfsrdmad says it for a handle it has to look for
 * while its walk budget is spent, which is every handle after a restart:
 * the fuse/restart test once failed with close's EAGAIN that way.
 *
 * Here nfsrdmad runs with a small walk budget (16 directories a second,
 * so 4 a second, and at most 4 in hand, for our one address; every
 * directory costs one, however long it takes to read, so that the debt
 * does not depend on how busy the machine is) and is restarted under two
 * open files on the same ports and state. The first file's handle is
 * then found by a walk of at least WIDE + 3 directories, which leaves
 * the budget some 6 s in debt; the second file's calls, a GETATTR and a
 * pipelined READ sent at once from two threads, are answered JUKEBOX
 * until the debt is paid, and must still succeed, with the server's
 * walks_refused counter showing that it did refuse. argv[1] is the
 * nfsrdmad binary.
 */
#include <rpcrdma/nfs3.h>

#include "daemon.h"
#include "io.h"
#include "pattern.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define FILE_LEN (3u << 20) /* several READs in flight at once */
#define WIDE	 24	    /* empty directories beside the files' */

static const char *daemon_path;

struct fx {
	char top[64], exp[128], state[128];
	struct rr_t_daemon d;
};

/* Writes a file of FILE_LEN bytes from seed at rel below the export. */
static void put(const struct fx *f, const char *rel, uint32_t seed,
		uint8_t *buf)
{
	char path[256], cmd[320];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", f->exp, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	rr_t_fill(buf, FILE_LEN, seed);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, FILE_LEN), (ssize_t)FILE_LEN);
	close(fd);
}

static int start(struct fx *f, const char *const *ports)
{
	const char *extra[16] = {"--walk-dirs-per-sec", "16", "--walk-dir-us",
				 "1000000"};
	int n = 4;

	while (ports && *ports && n < 14)
		extra[n++] = *ports++;
	return rr_t_daemon_start(&f->d, daemon_path, f->exp, f->state, extra,
				 NULL);
}

/* Stops nfsrdmad and starts it again on the same ports and state. */
static void restart(struct fx *f)
{
	char r[8], t[8], m[8];
	const char *ports[] = {"--rdma-port",  r, "--tcp-port", t,
			       "--mount-port", m, NULL};

	snprintf(r, sizeof(r), "%u", f->d.rdma);
	snprintf(t, sizeof(t), "%u", f->d.tcp);
	snprintf(m, sizeof(m), "%u", f->d.mount);
	assert_int_equal(rr_t_daemon_stop(&f->d), 0);
	assert_int_equal(start(f, ports), 0);
}

static struct rr_nfs *mount_it(const struct fx *f, bool tcp)
{
	struct rr_nfs_opts o = {.timeout_ms = 60000};
	struct rr_nfs *n = NULL;
	char url[320];

	snprintf(url, sizeof(url),
		 "nfs://127.0.0.1%s?nfsport=%u&mountport=%u%s", f->exp,
		 tcp ? f->d.tcp : f->d.rdma, f->d.mount,
		 tcp ? "&proto=tcp" : "&provider=iwarp");
	if (rr_nfs_mount(url, &o, &n))
		fail_msg("mount %s: %s", url, rr_nfs_error());
	return n;
}

static struct rr_nfs_file *open_ro(struct rr_nfs *n, const char *path)
{
	struct rr_nfs_file *f = NULL;

	if (rr_nfs_open(n, path, O_RDONLY, 0, &f))
		fail_msg("open %s: %s", path, rr_nfs_error());
	return f;
}

static void read_matches(struct rr_nfs_file *f, uint32_t seed, uint8_t *want,
			 uint8_t *got)
{
	ssize_t n = rr_nfs_pread(f, got, FILE_LEN, 0);

	if (n != (ssize_t)FILE_LEN)
		fail_msg("pread: %zd (%s)", n, rr_nfs_error());
	rr_t_fill(want, FILE_LEN, seed);
	assert_memory_equal(got, want, FILE_LEN);
}

struct getattr {
	struct rr_nfs_file *f;
	struct stat st;
	int rc;
	char err[256];
};

static void *getattr_main(void *arg)
{
	struct getattr *g = arg;

	g->rc = rr_nfs_fstat(g->f, &g->st);
	snprintf(g->err, sizeof(g->err), "%s", g->rc ? rr_nfs_error() : "");
	return NULL;
}

static void jukebox_answers_are_waited_out(void **state)
{
	bool tcp = !strcmp(*state, "tcp");
	uint8_t *want = malloc(FILE_LEN), *got = malloc(FILE_LEN);
	struct fx f = {0};
	struct rr_nfs_file *a, *b;
	struct getattr g = {0};
	struct rr_nfs *n;
	pthread_t t;

	assert_non_null(want);
	assert_non_null(got);
	snprintf(f.top, sizeof(f.top), "/tmp/rr-jukebox-XXXXXX");
	assert_non_null(mkdtemp(f.top));
	snprintf(f.exp, sizeof(f.exp), "%s/exp", f.top);
	snprintf(f.state, sizeof(f.state), "%s/state", f.top);
	/*
	 * Breadth first, a's walk reads the root, every directory in it (the
	 * WIDE empty ones, d1, e1), then d2 (where it finds a), and never
	 * e3's entries: b stays unknown
	 */
	put(&f, "d1/d2/a", 1, want);
	put(&f, "e1/e2/e3/b", 2, want);
	for (int i = 0; i < WIDE; i++) {
		char d[192];

		snprintf(d, sizeof(d), "%s/x%02d", f.exp, i);
		assert_int_equal(mkdir(d, 0755), 0);
	}
	assert_int_equal(start(&f, NULL), 0);
	n = mount_it(&f, tcp);
	a = open_ro(n, "d1/d2/a");
	b = open_ro(n, "e1/e2/e3/b");
	restart(&f);

	read_matches(a, 1, want, got);
	g.f = b;
	assert_int_equal(pthread_create(&t, NULL, getattr_main, &g), 0);
	read_matches(b, 2, want, got);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (g.rc)
		fail_msg("fstat after the restart: %s", g.err);
	assert_int_equal(g.st.st_size, FILE_LEN);
	/* not vacuous: the server did refuse walks meanwhile */
	assert_true(rr_t_daemon_counter(&f.d, "nfs3 handles",
					"walks_refused") >= 1);

	assert_int_equal(rr_nfs_close(a), 0);
	assert_int_equal(rr_nfs_close(b), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
	assert_int_equal(rr_t_daemon_stop(&f.d), 0);
	assert_int_equal(rr_t_rm_tree(f.top), 0);
	free(want);
	free(got);
}

int main(int argc, char **argv)
{
	static char rdma[] = "rdma", tcp[] = "tcp";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(jukebox_answers_are_waited_out, rdma),
		cmocka_unit_test_prestate(jukebox_answers_are_waited_out, tcp),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s NFSRDMAD\n", argv[0]);
		return 2;
	}
	daemon_path = argv[1];
	if (access(daemon_path, X_OK)) {
		printf("SKIP: %s not built yet\n", daemon_path);
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
