/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Failover among servers listed in the URL (nfs://a,b/export): two
 * nfsrdmad serve one export with one handle key, a on 127.0.0.1 and b on
 * 127.0.0.2 with the same ports, so their handles are the same. A mount
 * of "a,b" copies a file in; halfway a is killed (SIGKILL, nothing
 * flushed), and the copy goes on through b with the same open file. Its
 * UNSTABLE writes to a may be lost, and b's write verifier differs, so
 * the COMMIT at close sends them again from the refill; the file must
 * then read back whole, through the mount and on the server's disk.
 * Then a comes back and b is killed while the file is read: the read
 * moves back to a. A URL whose first server is down mounts through the
 * second. Over RDMA (iwarp) and TCP. argv[1] is the nfsrdmad binary.
 */
#include <rpcrdma/nfs3.h>
#include <rpcrdma/oncrpc.h>

#include "daemon.h"
#include "io.h"
#include "pattern.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CHUNK	 (1u << 20)
#define FILE_LEN (32u * CHUNK)

static const char *daemon_path;

struct fx {
	char top[64], exp[128], sa[128], sb[128];
	struct rr_t_daemon a, b;
	char port_r[8], port_t[8], port_m[8];
};

static int sh(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* b (or a again) on addr, with a's ports and a's handle key. */
static int start_at(struct fx *f, struct rr_t_daemon *d, const char *state,
		    const char *addr)
{
	const char *extra[] = {"--address",    addr,	     "--rdma-port",
			       f->port_r,      "--tcp-port", f->port_t,
			       "--mount-port", f->port_m,    NULL};

	return rr_t_daemon_start(d, daemon_path, f->exp, state, extra, NULL);
}

/*
 * a on ports of its choosing, then b on 127.0.0.2 with the same ports:
 * another process may hold one of them there (a wildcard listener, a
 * client's ephemeral port), so a few tries, each with fresh ports.
 */
static void start_both(struct fx *f)
{
	char cmd[512];

	for (int tries = 0; tries < 5; tries++) {
		assert_int_equal(rr_t_daemon_start(&f->a, daemon_path, f->exp,
						   f->sa, NULL, NULL),
				 0);
		snprintf(f->port_r, sizeof(f->port_r), "%u", f->a.rdma);
		snprintf(f->port_t, sizeof(f->port_t), "%u", f->a.tcp);
		snprintf(f->port_m, sizeof(f->port_m), "%u", f->a.mount);
		mkdir(f->sb, 0700);
		snprintf(cmd, sizeof(cmd), "cp '%s/fh.key' '%s/fh.key'", f->sa,
			 f->sb);
		assert_int_equal(sh(cmd), 0);
		if (!start_at(f, &f->b, f->sb, "127.0.0.2"))
			return;
		fprintf(stderr, "b could not take a's ports: again\n");
		rr_t_daemon_stop(&f->b); /* reaps it: it has exited */
		f->b.pid = 0;
		assert_int_equal(rr_t_daemon_stop(&f->a), 0);
	}
	fail_msg("no ports free on both 127.0.0.1 and 127.0.0.2");
}

static void setup(struct fx *f)
{
	snprintf(f->top, sizeof(f->top), "/tmp/rr-failover-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->exp, sizeof(f->exp), "%s/exp", f->top);
	snprintf(f->sa, sizeof(f->sa), "%s/sa", f->top);
	snprintf(f->sb, sizeof(f->sb), "%s/sb", f->top);
	assert_int_equal(mkdir(f->exp, 0755), 0);
	start_both(f);
}

static void teardown(struct fx *f)
{
	if (f->a.pid > 0)
		rr_t_daemon_stop(&f->a);
	if (f->b.pid > 0)
		rr_t_daemon_stop(&f->b);
	assert_int_equal(rr_t_rm_tree(f->top), 0);
}

/* Gone at once, as a crashed server: nothing it held is flushed. */
static void crash(struct rr_t_daemon *d)
{
	assert_int_equal(kill(d->pid, SIGKILL), 0);
	assert_int_equal(waitpid(d->pid, NULL, 0), d->pid);
	close(d->out);
	d->pid = 0;
}

static struct rr_nfs *mount_list(const struct fx *f, const char *servers,
				 bool tcp)
{
	struct rr_nfs_opts o = {.timeout_ms = 60000,
				.connect_timeout_ms = 2000};
	struct rr_nfs *n = NULL;
	char url[512];

	snprintf(url, sizeof(url), "nfs://%s%s?nfsport=%s&mountport=%s%s",
		 servers, f->exp, tcp ? f->port_t : f->port_r, f->port_m,
		 tcp ? "&proto=tcp" : "&provider=iwarp");
	if (rr_nfs_mount(url, &o, &n))
		fail_msg("mount %s: %s", url, rr_nfs_error());
	return n;
}

static ssize_t refill(void *arg, void *buf, size_t len, uint64_t off)
{
	const uint8_t *src = arg;

	if (off > FILE_LEN)
		return 0;
	if (len > FILE_LEN - off)
		len = FILE_LEN - off;
	memcpy(buf, src + off, len);
	return (ssize_t)len;
}

static void local_matches(const struct fx *f, const uint8_t *src, uint8_t *buf)
{
	char path[192];
	int fd;

	snprintf(path, sizeof(path), "%s/copy", f->exp);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, FILE_LEN, 0), (ssize_t)FILE_LEN);
	close(fd);
	assert_memory_equal(buf, src, FILE_LEN);
}

/* Over RDMA: the connection's moves between servers broke no rule. */
static void no_state_violations(struct rr_nfs *n, bool tcp)
{
	struct rr_xprt_stats st;

	if (tcp)
		return; /* TCP's client keeps no such counter */
	assert_int_equal(rr_nfs_xprt_stats(n, &st), 0);
	assert_true(st.conn_lost >= 1); /* it did move */
	assert_int_equal(st.state_violations, 0);
}

/* Writes the file a chunk at a time, crashing *kill halfway. */
static void copy_in(struct rr_nfs *n, const uint8_t *src,
		    struct rr_t_daemon *kill_at_half)
{
	struct rr_nfs_file *w;

	assert_int_equal(
		rr_nfs_open(n, "copy", O_WRONLY | O_CREAT | O_TRUNC, 0644, &w),
		0);
	rr_nfs_set_refill(w, refill, (void *)src);
	for (uint32_t off = 0; off < FILE_LEN; off += CHUNK) {
		if (off == FILE_LEN / 2)
			crash(kill_at_half);
		if (rr_nfs_pwrite(w, src + off, CHUNK, off) != (ssize_t)CHUNK)
			fail_msg("pwrite at %u: %s", off, rr_nfs_error());
	}
	if (rr_nfs_close(w))
		fail_msg("close: %s", rr_nfs_error());
}

/* Reads the file a chunk at a time, crashing *kill halfway. */
static void read_back(struct rr_nfs *n, const uint8_t *src, uint8_t *buf,
		      struct rr_t_daemon *kill_at_half)
{
	struct rr_nfs_file *r;

	assert_int_equal(rr_nfs_open(n, "copy", O_RDONLY, 0, &r), 0);
	for (uint32_t off = 0; off < FILE_LEN; off += CHUNK) {
		if (off == FILE_LEN / 2 && kill_at_half)
			crash(kill_at_half);
		if (rr_nfs_pread(r, buf + off, CHUNK, off) != (ssize_t)CHUNK)
			fail_msg("pread at %u: %s", off, rr_nfs_error());
	}
	assert_int_equal(rr_nfs_close(r), 0);
	assert_memory_equal(buf, src, FILE_LEN);
}

static void a_copy_moves_to_the_other_server(void **state)
{
	bool tcp = !strcmp(*state, "tcp");
	uint8_t *src = malloc(FILE_LEN), *buf = malloc(FILE_LEN);
	struct fx f = {0};
	struct rr_nfs *n;

	assert_non_null(src);
	assert_non_null(buf);
	rr_t_fill(src, FILE_LEN, tcp ? 7 : 8);
	setup(&f);
	n = mount_list(&f, "127.0.0.1,127.0.0.2", tcp);
	copy_in(n, src, &f.a);
	local_matches(&f, src, buf);
	/* a back; b goes while the file is read through it */
	assert_int_equal(start_at(&f, &f.a, f.sa, "127.0.0.1"), 0);
	memset(buf, 0, FILE_LEN);
	read_back(n, src, buf, &f.b);
	no_state_violations(n, tcp);
	assert_int_equal(rr_nfs_umount(n), 0);

	/* the first server listed is down: the mount goes to the next */
	assert_int_equal(start_at(&f, &f.b, f.sb, "127.0.0.2"), 0);
	crash(&f.a);
	n = mount_list(&f, "127.0.0.1,127.0.0.2", tcp);
	memset(buf, 0, FILE_LEN);
	read_back(n, src, buf, NULL);
	assert_int_equal(rr_nfs_umount(n), 0);
	teardown(&f);
	free(src);
	free(buf);
}

int main(int argc, char **argv)
{
	static char rdma[] = "rdma", tcp[] = "tcp";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(a_copy_moves_to_the_other_server,
					  rdma),
		cmocka_unit_test_prestate(a_copy_moves_to_the_other_server,
					  tcp),
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
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
