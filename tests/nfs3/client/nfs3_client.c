/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NFSv3 client end to end against nfsrdmad: the server runs as a
 * child process exporting a fresh temporary directory on ephemeral ports
 * (read from what it prints at start), and every test runs over RDMA
 * (iwarp on loopback) and over TCP. The export is a local directory, so
 * what the client did is checked against the filesystem itself too.
 *
 * argv[1]: the nfsrdmad binary, argv[2]: the nfsrdma binary. A missing
 * nfsrdmad skips the whole program (exit 77).
 *
 * With RR_TEST_NFS_URL set (nfs://HOST/EXPORT?mountport=...&provider=...)
 * no server is started: the size sweeps alone run against that export,
 * another server's (tests/vm/nfsrdma-knfsd-sizes.sh: the kernel's nfsd).
 * RR_TEST_NFS_DIR, when set, is that export as a local directory (the
 * server on this machine), so what the client did is checked there too.
 */
#include "clock.h"
#include "pattern.h"
#include <rpcrdma/alloc_inject.h>
#include <rpcrdma/nfs3.h>
#include <rpcrdma/rpc.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define START_TMO_MS 15000
#define STOP_TMO_MS  15000
#define CLI_TMO_MS   60000
#define BIG	     (6u * 1024 * 1024 + 12345) /* several MiB, odd */

static const char *nfsrdmad_bin, *nfsrdma_bin;
static char export_dir[] = "/tmp/nfs3-client-XXXXXX";
static pid_t server_pid;
static uint16_t port_rdma, port_tcp, port_mount;
static const char *ext_url; /* RR_TEST_NFS_URL: no server of ours */
static const char *local_root = export_dir; /* NULL: the export is remote */

/* ============================================================ helpers */

static uint32_t fnv1a(const uint8_t *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static char *local_path(const char *rel)
{
	static __thread char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", local_root, rel);
	return buf;
}

/* Whether the export can be looked at as a local directory. */
static bool local_view(void)
{
	return local_root != NULL;
}

static bool tcp_of(void **state)
{
	return *state && !strcmp(*state, "tcp");
}

/* RR_TEST_NFS_URL with rel appended to its path, its query kept. */
static void ext_url_of(const char *rel, char *buf, size_t cap,
		       const char *extra)
{
	const char *q = strchr(ext_url, '?');
	int plen = q ? (int)(q - ext_url) : (int)strlen(ext_url);

	if (!extra)
		extra = "";
	else if (!q && *extra == '&')
		extra++; /* it begins the query */
	snprintf(buf, cap, "%.*s/%s%s%s%s", plen, ext_url, rel, q ? q : "",
		 !q && *extra ? "?" : "", extra);
}

/* The URL of rel inside the export over this test's transport. */
static void url_of(void **state, const char *rel, char *buf, size_t cap,
		   const char *extra)
{
	bool tcp = tcp_of(state);

	if (ext_url) {
		ext_url_of(rel, buf, cap, extra);
		return;
	}
	snprintf(buf, cap, "nfs://127.0.0.1%s/%s?nfsport=%u&mountport=%u%s%s",
		 export_dir, rel, tcp ? port_tcp : port_rdma, port_mount,
		 tcp ? "&proto=tcp" : "", extra ? extra : "");
}

static struct rr_nfs *mount_as(void **state, const char *extra)
{
	struct rr_nfs_opts o = {.timeout_ms = 30000};
	struct rr_nfs *n = NULL;
	char url[1024];
	int rc;

	url_of(state, "", url, sizeof(url), extra);
	rc = rr_nfs_mount(url, &o, &n);
	if (rc)
		fail_msg("mount %s: %d (%s)", url, rc, rr_nfs_error());
	return n;
}

static struct rr_nfs *mount_it(void **state)
{
	return mount_as(state, NULL);
}

/*
 * A directory of its own per test and transport; per run too on another
 * server, whose export outlives us.
 */
static void test_dir(void **state, const char *name, char *out, size_t cap)
{
	const char *t = tcp_of(state) ? "tcp" : "rdma";

	if (ext_url)
		snprintf(out, cap, "%s-%s-%ld", name, t, (long)getpid());
	else
		snprintf(out, cap, "%s-%s", name, t);
}

/* ======================================================== the server */

/* The port after the last ':' of a line ("... on 127.0.0.1:20049"). */
static int port_of(const char *line)
{
	const char *c = strrchr(line, ':');

	return c && isdigit((unsigned char)c[1]) ? atoi(c + 1) : -1;
}

/*
 * nfsrdmad prints one line per endpoint, "nfsrdmad: nfs3+mount3 over rdma
 * on HOST:PORT", "... nfs3 over tcp on ...", "... mount3 over tcp on ...",
 * "... nlm4 over tcp on ..."; we tell them apart by those words.
 */
static void note_endpoint(char *line)
{
	int port = port_of(line);

	for (char *p = line; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (port <= 0 || port > 65535)
		return;
	if (strstr(line, "over rdma"))
		port_rdma = (uint16_t)port;
	else if (strstr(line, "mount3 over tcp"))
		port_mount = (uint16_t)port;
	else if (strstr(line, "nfs3 over tcp"))
		port_tcp = (uint16_t)port;
}

static bool read_endpoints(int fd)
{
	uint64_t end = rr_t_now_ms() + START_TMO_MS;
	char buf[4096];
	size_t len = 0;

	while (!port_rdma || !port_tcp || !port_mount) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)(end - rr_t_now_ms());
		char *nl;
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return false;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return false;
		len += (size_t)n;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			fprintf(stderr, "%s\n", buf);
			note_endpoint(buf);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0;
	}
	return true;
}

static void exec_server(int out_fd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	dup2(out_fd, STDOUT_FILENO);
	dup2(out_fd, STDERR_FILENO);
	execl(nfsrdmad_bin, nfsrdmad_bin, "--export", export_dir, "--rdma-port",
	      "0", "--tcp-port", "0", "--mount-port", "0", (char *)NULL);
	_exit(127);
}

/* The server's output after its endpoints goes to our stderr. */
static void *drain(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(STDERR_FILENO, buf, (size_t)n) < 0)
			break;
	close(fd);
	return NULL;
}

static int server_start(void **state)
{
	pthread_t t;
	int p[2];

	(void)state;
	if (!mkdtemp(export_dir) || pipe(p))
		return -1;
	server_pid = fork();
	if (server_pid < 0)
		return -1;
	if (!server_pid)
		exec_server(p[1]);
	close(p[1]);
	if (!read_endpoints(p[0])) {
		fprintf(stderr,
			"nfsrdmad printed no endpoints (rdma %u tcp %u "
			"mount %u)\n",
			port_rdma, port_tcp, port_mount);
		kill(server_pid, SIGKILL);
		waitpid(server_pid, NULL, 0);
		return -1;
	}
	if (pthread_create(&t, NULL, drain, (void *)(intptr_t)p[0]) ||
	    pthread_detach(t))
		return -1;
	return 0;
}

static int wait_exit(pid_t pid, int tmo_ms, int *status)
{
	uint64_t end = rr_t_now_ms() + (uint64_t)tmo_ms;
	struct timespec ts = {0, 5 * 1000 * 1000};

	/* bounded: waitpid has no timeout, so poll it with WNOHANG */
	while (rr_t_now_ms() < end) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0)
			return -1;
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void rm_tree(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
}

static int server_stop(void **state)
{
	int status = 0, rc = 0;

	(void)state;
	kill(server_pid, SIGTERM);
	if (wait_exit(server_pid, STOP_TMO_MS, &status)) {
		fprintf(stderr, "nfsrdmad did not stop on SIGTERM\n");
		kill(server_pid, SIGKILL);
		waitpid(server_pid, &status, 0);
		rc = -1;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "nfsrdmad ended with status %#x\n", status);
		rc = -1;
	}
	rm_tree(export_dir);
	return rc;
}

/* ========================================================== the tests */

static void write_all(struct rr_nfs *n, const char *path, const uint8_t *p,
		      size_t len)
{
	struct rr_nfs_file *f;

	assert_int_equal(
		rr_nfs_open(n, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &f),
		0);
	assert_int_equal(rr_nfs_pwrite(f, p, len, 0), (ssize_t)len);
	assert_int_equal(rr_nfs_fsync(f), 0);
	assert_int_equal(rr_nfs_close(f), 0);
}

static void local_file_matches(const char *path, const uint8_t *p, size_t len)
{
	uint8_t *d = malloc(len + 1);
	int fd = open(path, O_RDONLY);
	size_t got = 0;
	ssize_t r;

	assert_non_null(d);
	assert_true(fd >= 0);
	while ((r = read(fd, d + got, len + 1 - got)) > 0)
		got += (size_t)r;
	close(fd);
	assert_int_equal(got, len);
	assert_int_equal(fnv1a(d, len), fnv1a(p, len));
	free(d);
}

/* What the client wrote, seen on the export's disk (when it is ours). */
static void local_matches(const char *rel, const uint8_t *p, size_t len)
{
	if (local_view())
		local_file_matches(local_path(rel), p, len);
}

static void big_file_round_trip(void **state)
{
	uint8_t *src = malloc(BIG), *dst = malloc(BIG + 4096);
	char dir[64], path[128];
	struct rr_nfs *n = mount_it(state);
	struct rr_nfs_file *f;
	struct stat st;

	assert_non_null(src);
	assert_non_null(dst);
	test_dir(state, "big", dir, sizeof(dir));
	snprintf(path, sizeof(path), "/%s/file", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	rr_t_fill(src, BIG, tcp_of(state) ? 7 : 3);
	write_all(n, path, src, BIG);
	local_matches(path + 1, src, BIG);

	assert_int_equal(rr_nfs_open(n, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(rr_nfs_fstat(f, &st), 0);
	assert_int_equal(st.st_size, BIG);
	memset(dst, 0xa5, BIG + 4096);
	/* asking for more than there is: short only at end of file */
	assert_int_equal(rr_nfs_pread(f, dst, BIG + 4096, 0), BIG);
	assert_int_equal(fnv1a(dst, BIG), fnv1a(src, BIG));
	/* an odd piece in the middle, across READ boundaries */
	assert_int_equal(rr_nfs_pread(f, dst, 3 << 20, 1000001), 3 << 20);
	assert_memory_equal(dst, src + 1000001, 3 << 20);
	/* small reads travel inline */
	assert_int_equal(rr_nfs_pread(f, dst, 100, 5), 100);
	assert_memory_equal(dst, src + 5, 100);
	assert_int_equal(rr_nfs_pread(f, dst, 10, BIG), 0);
	assert_int_equal(rr_nfs_close(f), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
	free(src);
	free(dst);
}

static bool flag_set(void *arg)
{
	return __atomic_load_n((const bool *)arg, __ATOMIC_ACQUIRE);
}

/*
 * rr_nfs_set_thread_abort: on a server that stopped answering (SIGSTOP),
 * a single call (a path's LOOKUPs) and a pipelined READ of three calls
 * each fail with -EINTR once the check says stop, rather than wait out
 * the mount's 30 s; when the server goes on, the same mount and file
 * read again. Without the check's cancel, the calls would end only with
 * -ETIMEDOUT.
 */
static void an_abort_check_ends_calls_on_a_stopped_server(void **state)
{
	enum { LEN = 3 << 20 };
	uint8_t *src = malloc(LEN), *dst = malloc(LEN);
	struct rr_nfs *n;
	struct rr_nfs_file *f;
	char dir[64], path[128];
	bool stop = true;
	struct stat st;
	ssize_t got;
	int rc, ws;

	if (ext_url) {
		print_message("skipped: stops the server, which is not ours\n");
		skip();
	}
	assert_non_null(src);
	assert_non_null(dst);
	n = mount_it(state);
	test_dir(state, "abort", dir, sizeof(dir));
	snprintf(path, sizeof(path), "/%s/file", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	rr_t_fill(src, LEN, 11);
	write_all(n, path, src, LEN);
	assert_int_equal(rr_nfs_open(n, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(kill(server_pid, SIGSTOP), 0);
	/* stopped, every thread: until then it may still answer a call */
	assert_int_equal(waitpid(server_pid, &ws, WUNTRACED), server_pid);
	assert_true(WIFSTOPPED(ws));
	rr_nfs_set_thread_abort(flag_set, &stop);
	rc = rr_nfs_stat(n, path, &st);
	got = rr_nfs_pread(f, dst, LEN, 0);
	rr_nfs_set_thread_abort(NULL, NULL);
	/* the server goes on before any check: a failure stops no other test */
	assert_int_equal(kill(server_pid, SIGCONT), 0);
	assert_int_equal(rc, -EINTR);
	assert_int_equal(got, -EINTR);
	assert_int_equal(rr_nfs_pread(f, dst, LEN, 0), LEN);
	assert_memory_equal(dst, src, LEN);
	assert_int_equal(rr_nfs_stat(n, path, &st), 0);
	assert_int_equal(rr_nfs_close(f), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
	free(src);
	free(dst);
}

/* Fails naming every site that allocated while the injector counted. */
static void assert_no_allocation(const char *during)
{
	struct rr_alloc_inject_stats st;
	struct rr_alloc_site_info si;

	rr_alloc_inject_off();
	rr_alloc_inject_stats(&st);
	for (uint32_t i = 0; i < st.nsites; i++)
		if (!rr_alloc_inject_site(i, &si))
			fprintf(stderr, "%s allocated at %s:%d (%llu times)\n",
				during, si.file, si.line,
				(unsigned long long)si.attempts);
	assert_int_equal(st.attempts, 0);
}

/* One round of the sizes a FUSE mount and the CLI transfer. */
static void io_round(struct rr_nfs_file *f, uint8_t *buf, const uint8_t *src)
{
	static const size_t sizes[] = {1,	  4096,	   65536 + 3,
				       128 << 10, 1 << 20, (1 << 20) + 4096};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(rr_nfs_pwrite(f, src, sizes[i], 4096),
				 (ssize_t)sizes[i]);
		assert_int_equal(rr_nfs_pread(f, buf, sizes[i], 4096),
				 (ssize_t)sizes[i]);
		assert_memory_equal(buf, src, sizes[i]);
	}
}

/*
 * Issue 18: the data path allocates nothing per request. After two
 * rounds have sized what the mount keeps, rounds of READs and WRITEs of
 * every size up to more than rtmax, each round's COMMIT, and a GETATTR,
 * allocate nothing at all in the library; the allocator counts every
 * attempt meanwhile. The large buffers are registered by the caller, as a
 * FUSE mount's are not (its requests are smaller than what pread
 * registers by itself).
 */
static void steady_io_allocates_nothing(void **state)
{
	size_t cap = (1 << 20) + 4096;
	uint8_t *src = malloc(cap), *buf = malloc(cap);
	char dir[64], path[128];
	struct rr_nfs *n = mount_it(state);
	struct rr_nfs_file *f;
	struct stat st;

	assert_non_null(src);
	assert_non_null(buf);
	/* large transfers use the caller's registration (RDMA only) */
	if (!tcp_of(state)) {
		assert_int_equal(rr_nfs_mem_reg(n, src, cap), 0);
		assert_int_equal(rr_nfs_mem_reg(n, buf, cap), 0);
	}
	rr_t_fill(src, cap, 11);
	test_dir(state, "steady", dir, sizeof(dir));
	snprintf(path, sizeof(path), "/%s/file", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	assert_int_equal(
		rr_nfs_open(n, path, O_RDWR | O_CREAT | O_TRUNC, 0644, &f), 0);
	/* two: a COMMIT's ranges and the next writes' are two arrays */
	for (int i = 0; i < 2; i++) {
		io_round(f, buf, src);
		assert_int_equal(rr_nfs_fsync(f), 0);
	}
	assert_int_equal(rr_nfs_fstat(f, &st), 0);

	rr_alloc_inject_count();
	for (int i = 0; i < 3; i++) {
		io_round(f, buf, src);
		assert_int_equal(rr_nfs_fsync(f), 0);
	}
	assert_int_equal(rr_nfs_fstat(f, &st), 0);
	assert_no_allocation("READ, WRITE, COMMIT and GETATTR");

	assert_int_equal(st.st_size, 4096 + (1 << 20) + 4096);
	assert_int_equal(rr_nfs_close(f), 0);
	if (!tcp_of(state)) {
		assert_int_equal(rr_nfs_mem_unreg(n, src), 0);
		assert_int_equal(rr_nfs_mem_unreg(n, buf), 0);
	}
	assert_int_equal(rr_nfs_umount(n), 0);
	free(src);
	free(buf);
}

static void overwrite_in_the_middle(void **state)
{
	uint8_t src[20000], patch[3000], back[20000];
	char dir[64], path[128];
	struct rr_nfs *n = mount_it(state);
	struct rr_nfs_file *f;

	test_dir(state, "patch", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	rr_t_fill(src, sizeof(src), 11);
	rr_t_fill(patch, sizeof(patch), 12);
	write_all(n, path, src, sizeof(src));
	assert_int_equal(rr_nfs_open(n, path, O_RDWR, 0, &f), 0);
	assert_int_equal(rr_nfs_pwrite(f, patch, sizeof(patch), 5000),
			 sizeof(patch));
	memcpy(src + 5000, patch, sizeof(patch));
	assert_int_equal(rr_nfs_pread(f, back, sizeof(back), 0), sizeof(back));
	assert_memory_equal(back, src, sizeof(src));
	assert_int_equal(rr_nfs_ftruncate(f, 1234), 0);
	assert_int_equal(rr_nfs_close(f), 0);
	local_matches(path, src, 1234);
	assert_int_equal(rr_nfs_truncate(n, path, 0), 0);
	local_matches(path, src, 0);
	assert_int_equal(rr_nfs_umount(n), 0);
}

static bool listed(struct rr_nfs *n, const char *dir, const char *name,
		   struct stat *st)
{
	const struct rr_nfs_dirent *e;
	struct rr_nfs_dir *d;
	bool found = false;

	assert_int_equal(rr_nfs_opendir(n, dir, &d), 0);
	while ((e = rr_nfs_readdir(d))) {
		assert_string_not_equal(e->name, ".");
		assert_string_not_equal(e->name, "..");
		if (!strcmp(e->name, name)) {
			found = true;
			if (st && e->has_attr)
				*st = e->st;
		}
	}
	rr_nfs_closedir(d);
	return found;
}

static void namespace_operations(void **state)
{
	char dir[64], a[128], b[128], l[128], sub[128], target[64];
	struct rr_nfs *n = mount_it(state);
	struct rr_nfs_file *f;
	struct stat st = {0};

	test_dir(state, "ns", dir, sizeof(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(l, sizeof(l), "%s/link", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0750), 0);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0750), -EEXIST);
	if (local_view())
		assert_int_equal(stat(local_path(dir), &st), 0);
	else
		assert_int_equal(rr_nfs_stat(n, dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0750);
	write_all(n, a, (const uint8_t *)"hello", 5);
	assert_true(listed(n, dir, "a", &st));
	assert_int_equal(st.st_size, 5);

	assert_int_equal(rr_nfs_rename(n, a, b), 0);
	assert_false(listed(n, dir, "a", NULL));
	assert_true(listed(n, dir, "b", NULL));
	assert_true(!local_view() || access(local_path(b), F_OK) == 0);

	assert_int_equal(rr_nfs_symlink(n, "b", l), 0);
	assert_int_equal(rr_nfs_readlink(n, l, target, sizeof(target)), 1);
	assert_string_equal(target, "b");
	assert_int_equal(rr_nfs_lstat(n, l, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(rr_nfs_stat(n, l, &st), 0); /* follows */
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 5);
	assert_int_equal(rr_nfs_open(n, l, O_RDONLY, 0, &f), 0);
	assert_int_equal(rr_nfs_pread(f, target, 5, 0), 5);
	assert_memory_equal(target, "hello", 5);
	assert_int_equal(rr_nfs_close(f), 0);

	assert_int_equal(rr_nfs_mkdir(n, sub, 0755), 0);
	assert_int_equal(rr_nfs_rmdir(n, dir), -ENOTEMPTY);
	assert_int_equal(rr_nfs_rmdir(n, sub), 0);
	assert_int_equal(rr_nfs_unlink(n, l), 0);
	assert_int_equal(rr_nfs_unlink(n, b), 0);
	assert_int_equal(rr_nfs_unlink(n, b), -ENOENT);
	assert_int_equal(rr_nfs_rmdir(n, dir), 0);
	assert_true(!local_view() || access(local_path(dir), F_OK) == -1);
	assert_int_equal(rr_nfs_stat(n, dir, &st), -ENOENT);
	assert_int_equal(rr_nfs_umount(n), 0);
}

/*
 * Calls whose results have a fixed shape (RFC 1813: the largest is
 * CREATE3res, 280 bytes) fit the inline size our server negotiates: over
 * RDMA they offer no reply chunk, so they cost no memory registration.
 */
static void fixed_size_results_travel_inline(void **state)
{
	char dir[64], a[128], b[128];
	struct rr_nfs *n = mount_it(state);
	struct rr_xprt_stats s0, s1;
	struct rr_nfs_file *f;
	struct statvfs sv;
	struct stat st;

	test_dir(state, "inl", dir, sizeof(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	assert_int_equal(rr_nfs_xprt_stats(n, &s0), 0);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	assert_int_equal(rr_nfs_open(n, a, O_CREAT | O_WRONLY, 0644, &f), 0);
	assert_int_equal(rr_nfs_close(f), 0);
	assert_int_equal(rr_nfs_stat(n, a, &st), 0);
	assert_int_equal(rr_nfs_rename(n, a, b), 0);
	assert_int_equal(rr_nfs_statvfs(n, dir, &sv), 0);
	assert_int_equal(rr_nfs_unlink(n, b), 0);
	assert_int_equal(rr_nfs_rmdir(n, dir), 0);
	assert_int_equal(rr_nfs_xprt_stats(n, &s1), 0);
	assert_true(s1.calls - s0.calls >= 8);
	if (s1.reply_chunks != s0.reply_chunks || s1.regs != s0.regs)
		fail_msg(
			"%llu calls offered %llu reply chunks, bound %llu keys",
			(unsigned long long)(s1.calls - s0.calls),
			(unsigned long long)(s1.reply_chunks - s0.reply_chunks),
			(unsigned long long)(s1.regs - s0.regs));
	assert_int_equal(rr_nfs_umount(n), 0);
}

/*
 * What says the transport and the server disagreed: ERR_CHUNK answers
 * (a reply the server found too large), malformed headers, lost
 * connections. Over RDMA every one must stay where it was.
 */
static void transport_clean(struct rr_nfs *n, const struct rr_xprt_stats *s0)
{
	struct rr_xprt_stats s1;

	assert_int_equal(rr_nfs_xprt_stats(n, &s1), 0);
	assert_int_equal(s1.rdma_errors_received, s0->rdma_errors_received);
	assert_int_equal(s1.bad_headers, s0->bad_headers);
	assert_int_equal(s1.conn_lost, s0->conn_lost);
	assert_int_equal(s1.connects, s0->connects);
	assert_int_equal(s1.retransmits, s0->retransmits);
}

/* The sizes tried: every 61 bytes to 3x 4 KiB, every byte near 4 KiB. */
static uint32_t next_size(uint32_t s)
{
	return s >= 4096 - 700 && s < 4096 + 300 ? s + 1 : s + 61;
}

/*
 * READ and WRITE of every size from 1 byte to three times the inline size
 * (4 KiB), each byte-compared: the replies and calls whose transport
 * header decides whether they fit inline are those near 4 KiB.
 */
static void every_io_size_near_the_inline_size(void **state)
{
	uint8_t *src = malloc(3 * 4096), *dst = malloc(3 * 4096);
	char dir[64], path[128];
	struct rr_nfs *n = mount_it(state);
	struct rr_xprt_stats s0;
	struct rr_nfs_file *f;
	uint32_t last = 0;

	assert_non_null(src);
	assert_non_null(dst);
	test_dir(state, "iosz", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	assert_int_equal(rr_nfs_open(n, path, O_RDWR | O_CREAT, 0644, &f), 0);
	if (!tcp_of(state))
		assert_int_equal(rr_nfs_xprt_stats(n, &s0), 0);
	for (uint32_t size = 1; size <= 3 * 4096; size = next_size(size)) {
		rr_t_fill(src, size, size);
		assert_int_equal(rr_nfs_pwrite(f, src, size, 0), (ssize_t)size);
		memset(dst, 0, size);
		assert_int_equal(rr_nfs_pread(f, dst, size, 0), (ssize_t)size);
		if (memcmp(src, dst, size))
			fail_msg("size %u: read back differs", size);
		last = size; /* sizes grow: the file is the last one */
	}
	if (!tcp_of(state))
		transport_clean(n, &s0);
	assert_int_equal(rr_nfs_close(f), 0);
	if (local_view())
		local_matches(path, src, last);
	assert_int_equal(rr_nfs_unlink(n, path), 0);
	assert_int_equal(rr_nfs_rmdir(n, dir), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
	free(src);
	free(dst);
}

/*
 * SYMLINK and READLINK with targets of every length to 4095 (every
 * length from 3500, where the call or reply crosses 4 KiB): the path is
 * DDP-eligible both ways (RFC 8267), in a read chunk at its position
 * when the call is long.
 */
static void symlink_targets_of_every_length(void **state)
{
	char dir[64], path[128], *target = malloc(4096), *got = malloc(4097);
	struct rr_nfs *n = mount_it(state);
	struct rr_xprt_stats s0;

	assert_non_null(target);
	assert_non_null(got);
	test_dir(state, "lnk", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/l", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	if (!tcp_of(state))
		assert_int_equal(rr_nfs_xprt_stats(n, &s0), 0);
	for (uint32_t len = 1; len <= 4095;
	     len = len >= 3500 || len + 53 > 4095 ? len + 1 : len + 53) {
		for (uint32_t i = 0; i < len; i++)
			target[i] = (char)('a' + (i * 7 + len) % 26);
		target[len] = '\0';
		if (rr_nfs_symlink(n, target, path))
			fail_msg("symlink of %u bytes: %s", len,
				 rr_nfs_error());
		assert_int_equal(rr_nfs_readlink(n, path, got, 4097),
				 (ssize_t)len);
		if (strcmp(got, target))
			fail_msg("readlink of %u bytes differs", len);
		if (local_view())
			assert_int_equal(readlink(local_path(path), got, 4097),
					 (ssize_t)len);
		assert_int_equal(rr_nfs_unlink(n, path), 0);
	}
	if (!tcp_of(state))
		transport_clean(n, &s0);
	assert_int_equal(rr_nfs_rmdir(n, dir), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
	free(target);
	free(got);
}

static void big_directory_listing(void **state)
{
	char dir[64], path[128];
	struct rr_nfs *n = mount_it(state);
	const struct rr_nfs_dirent *e;
	struct rr_nfs_dir *d;
	size_t count = 0;
	enum { NFILES = 10000 };
	static bool seen[NFILES];

	test_dir(state, "many", dir, sizeof(dir));
	assert_int_equal(mkdir(local_path(dir), 0755), 0);
	for (int i = 0; i < NFILES; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/entry-with-a-long-name-%04d",
			 dir, i);
		fd = open(local_path(path), O_CREAT | O_WRONLY, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	memset(seen, 0, sizeof(seen));
	assert_int_equal(rr_nfs_opendir(n, dir, &d), 0);
	while ((e = rr_nfs_readdir(d))) {
		int i = atoi(e->name + strlen("entry-with-a-long-name-"));

		assert_true(i >= 0 && i < NFILES);
		assert_false(seen[i]);
		seen[i] = true;
		count++;
	}
	rr_nfs_closedir(d);
	assert_int_equal(count, NFILES);
	assert_int_equal(rr_nfs_umount(n), 0);
}

static void statvfs_reports_space(void **state)
{
	struct rr_nfs *n = mount_it(state);
	struct statvfs sv;

	assert_int_equal(rr_nfs_statvfs(n, "/", &sv), 0);
	assert_true(sv.f_blocks > 0);
	assert_true(sv.f_bfree <= sv.f_blocks);
	assert_true(sv.f_bsize > 0);
	assert_int_equal(rr_nfs_umount(n), 0);
}

static void errors_are_errnos(void **state)
{
	struct rr_nfs_opts o = {.timeout_ms = 30000};
	struct rr_nfs *n = mount_it(state), *m = NULL;
	struct rr_nfs_file *f;
	struct stat st;
	char url[1024], dir[64], path[256];

	assert_int_equal(rr_nfs_stat(n, "no/such/file", &st), -ENOENT);
	assert_int_equal(rr_nfs_open(n, "nope", O_RDONLY, 0, &f), -ENOENT);
	test_dir(state, "err", dir, sizeof(dir));
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/x", dir);
	write_all(n, path, (const uint8_t *)"x", 1);
	assert_int_equal(
		rr_nfs_open(n, path, O_WRONLY | O_CREAT | O_EXCL, 0644, &f),
		-EEXIST);
	assert_int_equal(rr_nfs_mkdir(n, "nope/deeper", 0755), -ENOENT);
	assert_int_equal(rr_nfs_open(n, dir, O_WRONLY, 0, &f), -EISDIR);
	/* ".." at the root stays there: never above the export */
	snprintf(path, sizeof(path), "../../%s/../%s", dir, dir);
	assert_int_equal(rr_nfs_stat(n, path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(rr_nfs_umount(n), 0);

	/* an export the server does not have */
	snprintf(url, sizeof(url),
		 "nfs://127.0.0.1/no/such/export"
		 "?nfsport=%u&mountport=%u",
		 port_rdma, port_mount);
	assert_int_equal(rr_nfs_mount(url, &o, &m), -ENOENT);
	assert_non_null(strstr(rr_nfs_error(), "export"));
	assert_int_equal(rr_nfs_mount("nfs:/bad", &o, &m), -EINVAL);
	assert_null(m);
}

/* rr_nfs_error() names the call, its path and the errno's text. */
static void assert_said(const char *what, const char *path, int err)
{
	const char *said = rr_nfs_error();

	if (!strstr(said, what) || !strstr(said, path) ||
	    !strstr(said, strerror(err)))
		fail_msg("want '%s', '%s' and '%s' in '%s'", what, path,
			 strerror(err), said);
}

static void every_failure_leaves_a_message(void **state)
{
	struct rr_nfs *n = mount_it(state);
	struct rr_nfs_file *f;
	struct stat st;
	char dir[64], path[128], buf[8];

	test_dir(state, "said", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/absent", dir);
	assert_int_equal(rr_nfs_open(n, path, O_RDONLY, 0, &f), -ENOENT);
	assert_said("open", path, ENOENT);
	/* a later failure replaces the earlier one's text */
	assert_int_equal(rr_nfs_mkdir(n, path, 0755), -ENOENT);
	assert_said("mkdir", path, ENOENT);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	assert_int_equal(rr_nfs_lstat(n, path, &st), -ENOENT);
	assert_said("lstat", path, ENOENT);
	assert_int_equal(rr_nfs_open(n, dir, O_WRONLY, 0, &f), -EISDIR);
	assert_said("open", dir, EISDIR);
	/* a failure found before any call goes out, on an open file */
	assert_int_equal(rr_nfs_open(n, path, O_WRONLY | O_CREAT, 0644, &f), 0);
	assert_int_equal(rr_nfs_pread(f, buf, sizeof(buf), 0), -EBADF);
	assert_said("read", "8 bytes", EBADF);
	assert_int_equal(rr_nfs_close(f), 0);
	assert_int_equal(rr_nfs_rmdir(n, dir), -ENOTEMPTY);
	assert_said("rmdir", dir, ENOTEMPTY);
	assert_int_equal(rr_nfs_umount(n), 0);
}

static void permission_is_the_callers(void **state)
{
	char dir[64], path[128], extra[64];
	struct rr_nfs *n;
	struct rr_nfs_file *f;
	uint8_t buf[4];

	test_dir(state, "perm", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/secret", dir);
	assert_int_equal(mkdir(local_path(dir), 0755), 0);
	assert_int_equal(
		close(open(local_path(path), O_CREAT | O_WRONLY, 0600)), 0);
	if (chown(local_path(path), 4242, 4242)) {
		/* not root: the file is ours; another uid cannot read it */
	}
	snprintf(extra, sizeof(extra), "&uid=%u&gid=%u", 4343, 4343);
	n = mount_as(state, extra);
	assert_int_equal(rr_nfs_open(n, path, O_RDONLY, 0, &f), -EACCES);
	snprintf(path, sizeof(path), "%s/new", dir);
	assert_int_equal(rr_nfs_open(n, path, O_WRONLY | O_CREAT, 0644, &f),
			 -EACCES); /* dir is 0755, not ours */
	assert_int_equal(rr_nfs_umount(n), 0);
	(void)buf;
}

struct as_user {
	struct rr_nfs *n;
	const char *path;
	int rc;
};

static void *create_as_4343(void *arg)
{
	struct as_user *a = arg;
	const uint32_t groups[] = {4344, 4345};
	struct rr_nfs_cred c = {
		.uid = 4343, .gid = 4343, .ngroups = 2, .groups = groups};
	struct rr_nfs_file *f;

	a->rc = rr_nfs_set_thread_cred(a->n, &c);
	if (!a->rc)
		a->rc = rr_nfs_open(a->n, a->path, O_WRONLY | O_CREAT, 0644,
				    &f);
	if (!a->rc)
		a->rc = rr_nfs_close(f);
	return NULL;
}

/*
 * rr_nfs_set_thread_cred: one thread's calls carry another user, the
 * other threads' (and the same thread's after a reset) the mount's.
 */
static void a_thread_credential_is_that_threads_alone(void **state)
{
	char dir[64], theirs[128], ours[128];
	struct rr_nfs *n = mount_it(state);
	struct as_user a = {.n = n, .path = theirs};
	struct rr_nfs_cred bad = {.uid = 1, .gid = 1, .ngroups = 1};
	struct rr_nfs_file *f;
	struct stat st;
	pthread_t t;

	/* a server not run by root cannot act as another user */
	if (geteuid() != 0) {
		assert_int_equal(rr_nfs_umount(n), 0);
		skip();
	}
	test_dir(state, "tcred", dir, sizeof(dir));
	/* uid 4343 must reach dir: the export's root is the test's own */
	assert_int_equal(chmod(local_path(""), 0755), 0);
	snprintf(theirs, sizeof(theirs), "%s/theirs", dir);
	snprintf(ours, sizeof(ours), "%s/ours", dir);
	assert_int_equal(mkdir(local_path(dir), 0777), 0);
	assert_int_equal(chmod(local_path(dir), 0777), 0);
	assert_int_equal(rr_nfs_set_thread_cred(n, &bad), -EINVAL);
	assert_int_equal(pthread_create(&t, NULL, create_as_4343, &a), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.rc, 0);
	/* this thread, set and reset: the mount's credential again */
	assert_int_equal(
		rr_nfs_set_thread_cred(
			n, &(struct rr_nfs_cred){.uid = 4343, .gid = 4343}),
		0);
	assert_int_equal(rr_nfs_set_thread_cred(n, NULL), 0);
	assert_int_equal(rr_nfs_open(n, ours, O_WRONLY | O_CREAT, 0644, &f), 0);
	assert_int_equal(rr_nfs_close(f), 0);
	assert_int_equal(stat(local_path(ours), &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(stat(local_path(theirs), &st), 0);
	assert_int_equal(st.st_uid, 4343);
	assert_int_equal(st.st_gid, 4343);
	assert_int_equal(rr_nfs_unlink(n, ours), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
}

/* Offsets past 4 GiB: 64-bit all the way (a sparse file on disk). */
static void offsets_beyond_4g(void **state)
{
	const uint64_t off = (5ull << 30) + 12345;
	uint8_t data[70000], back[70000 + 100];
	char dir[64], path[128];
	struct rr_nfs *n = mount_it(state);
	struct rr_nfs_file *f;
	struct stat st;

	test_dir(state, "4g", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/sparse", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	rr_t_fill(data, sizeof(data), 77);
	assert_int_equal(rr_nfs_open(n, path, O_RDWR | O_CREAT, 0644, &f), 0);
	assert_int_equal(rr_nfs_pwrite(f, data, sizeof(data), off),
			 sizeof(data));
	assert_int_equal(rr_nfs_fsync(f), 0);
	assert_int_equal(rr_nfs_fstat(f, &st), 0);
	assert_int_equal((uint64_t)st.st_size, off + sizeof(data));
	assert_int_equal(rr_nfs_pread(f, back, sizeof(back), off),
			 sizeof(data));
	assert_memory_equal(back, data, sizeof(data));
	assert_int_equal(rr_nfs_pread(f, back, 100, 1ull << 32), 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(back[i], 0); /* the hole reads as zeros */
	assert_int_equal(rr_nfs_close(f), 0);
	if (local_view())
		assert_int_equal(stat(local_path(path), &st), 0);
	else
		assert_int_equal(rr_nfs_stat(n, path, &st), 0);
	assert_int_equal((uint64_t)st.st_size, off + sizeof(data));
	assert_int_equal(rr_nfs_unlink(n, path), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
}

/* rr_nfs_stream: independent random READs, each checked on return. */
struct rnd {
	const uint8_t *src;
	uint8_t bufs[8][8192];
	uint32_t free[8], nfree;
	uint64_t rng;
	int issued, checked, bad;
};

static bool rnd_next(void *arg, struct rr_nfs_io *io)
{
	struct rnd *r = arg;
	uint32_t i;

	if (r->issued == 500)
		return false;
	assert_true(r->nfree > 0); /* never more than depth in flight */
	i = r->free[--r->nfree];
	r->rng = r->rng * 6364136223846793005ull + 1442695040888963407ull;
	io->buf = r->bufs[i];
	io->len = 1 + (size_t)(r->rng >> 33) % sizeof(r->bufs[0]);
	io->off = (r->rng >> 7) % (BIG - io->len);
	io->user = (void *)(uintptr_t)i;
	r->issued++;
	return true;
}

static void rnd_done(void *arg, struct rr_nfs_io *io)
{
	struct rnd *r = arg;

	if (io->result != (ssize_t)io->len ||
	    memcmp(io->buf, r->src + io->off, io->len))
		r->bad++;
	r->checked++;
	r->free[r->nfree++] = (uint32_t)(uintptr_t)io->user;
}

/*
 * The same stream into buffers registered with rr_nfs_mem_reg: over RDMA
 * the data lands in them with no bounce copy (the first run, unregistered,
 * bounced); over TCP there is nothing to register.
 */
static void stream_registered(void **state, struct rr_nfs *n,
			      struct rr_nfs_file *f, struct rnd *r)
{
	struct rr_xprt_stats s0, s1;

	if (tcp_of(state)) {
		assert_int_equal(rr_nfs_mem_reg(n, r->bufs, sizeof(r->bufs)),
				 -EOPNOTSUPP);
		return;
	}
	assert_int_equal(rr_nfs_xprt_stats(n, &s0), 0);
	assert_true(s0.bounce_copies > 0);
	assert_int_equal(rr_nfs_mem_reg(n, r->bufs, sizeof(r->bufs)), 0);
	r->issued = r->checked = 0;
	assert_int_equal(rr_nfs_stream(f, false, 8, rnd_next, rnd_done, r), 0);
	assert_int_equal(rr_nfs_mem_unreg(n, r->bufs), 0);
	assert_int_equal(r->checked, 500);
	assert_int_equal(r->bad, 0);
	assert_int_equal(rr_nfs_xprt_stats(n, &s1), 0);
	if (s1.bounce_copies != s0.bounce_copies)
		fail_msg("%llu bounce copies into registered buffers",
			 (unsigned long long)(s1.bounce_copies -
					      s0.bounce_copies));
}

static void stream_random_reads(void **state)
{
	uint8_t *src = malloc(BIG);
	struct rnd *r = calloc(1, sizeof(*r));
	char dir[64], path[128];
	struct rr_nfs *n = mount_it(state);
	struct rr_nfs_file *f;

	assert_non_null(src);
	assert_non_null(r);
	test_dir(state, "stream", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	rr_t_fill(src, BIG, 5);
	write_all(n, path, src, BIG);
	r->src = src;
	r->rng = 42;
	for (uint32_t i = 0; i < 8; i++)
		r->free[r->nfree++] = i;
	assert_int_equal(rr_nfs_open(n, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(rr_nfs_stream(f, false, 8, rnd_next, rnd_done, r), 0);
	assert_int_equal(r->checked, 500);
	assert_int_equal(r->bad, 0);
	stream_registered(state, n, f, r);
	/* a READ-only file takes no WRITE stream */
	assert_int_equal(rr_nfs_stream(f, true, 8, rnd_next, rnd_done, r),
			 -EBADF);
	assert_int_equal(rr_nfs_close(f), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
	free(r);
	free(src);
}

/* Three threads, three files, two mounts: pipelined calls interleave. */
struct writer {
	struct rr_nfs *n;
	char path[128];
	uint8_t *data;
	size_t len;
	int rc;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct rr_nfs_file *f;
	ssize_t r;

	w->rc = rr_nfs_open(w->n, w->path, O_RDWR | O_CREAT | O_TRUNC, 0644,
			    &f);
	if (w->rc)
		return NULL;
	r = rr_nfs_pwrite(f, w->data, w->len, 0);
	w->rc = r == (ssize_t)w->len ? 0 : (int)(r < 0 ? r : -EIO);
	if (!w->rc)
		w->rc = rr_nfs_close(f);
	else
		rr_nfs_close(f);
	return NULL;
}

static void concurrent_writers(void **state)
{
	struct rr_nfs *n = mount_it(state), *other = mount_it(state);
	struct writer w[3];
	pthread_t t[3];
	char dir[64];

	test_dir(state, "conc", dir, sizeof(dir));
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	for (int i = 0; i < 3; i++) {
		/* two share a mount, the third is another client */
		w[i] = (struct writer){.n = i < 2 ? n : other,
				       .len = (3u << 20) + 77 * i};
		snprintf(w[i].path, sizeof(w[i].path), "%s/w%d", dir, i);
		w[i].data = malloc(w[i].len);
		assert_non_null(w[i].data);
		rr_t_fill(w[i].data, w[i].len, 100 + i);
		assert_int_equal(
			pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].rc, 0);
		local_matches(w[i].path, w[i].data, w[i].len);
		free(w[i].data);
	}
	assert_int_equal(rr_nfs_umount(other), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
}

/* ================================================================ CLI */

/* Runs nfsrdma with args; returns its exit status, stderr in err. */
static int run_cli(char *const args[], char *err, size_t cap)
{
	int p[2], status = -1;
	size_t len = 0;
	ssize_t r;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], STDERR_FILENO);
		execv(nfsrdma_bin, args);
		_exit(127);
	}
	close(p[1]);
	while (len < cap - 1 && (r = read(p[0], err + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	err[len] = '\0';
	close(p[0]);
	if (wait_exit(pid, CLI_TMO_MS, &status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("nfsrdma %s did not finish", args[1]);
	}
	fprintf(stderr, "nfsrdma %s: %s", args[1], err);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void write_local(const char *path, const uint8_t *p, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void cli_put_get_verify(void **state)
{
	char url[1024], local[256], back[256], err[4096], dir[64], rel[128];
	uint8_t *data = malloc(BIG);
	struct rr_nfs *n = mount_it(state);

	assert_non_null(data);
	test_dir(state, "cli", dir, sizeof(dir));
	assert_int_equal(rr_nfs_mkdir(n, dir, 0755), 0);
	assert_int_equal(rr_nfs_umount(n), 0);
	snprintf(rel, sizeof(rel), "%s/file.bin", dir);
	snprintf(local, sizeof(local), "%s.src", export_dir);
	snprintf(back, sizeof(back), "%s.back", export_dir);
	rr_t_fill(data, BIG, 99);
	write_local(local, data, BIG);
	url_of(state, rel, url, sizeof(url), NULL);

	assert_int_equal(run_cli((char *[]){"nfsrdma", "put", "--verify", local,
					    url, NULL},
				 err, sizeof(err)),
			 0);
	assert_non_null(strstr(err, "verify: ok"));
	local_matches(rel, data, BIG);
	assert_int_equal(run_cli((char *[]){"nfsrdma", "get", "--verify", url,
					    back, NULL},
				 err, sizeof(err)),
			 0);
	assert_non_null(strstr(err, "verify: ok"));
	local_file_matches(back, data, BIG);
	unlink(local);
	unlink(back);
	free(data);
}

/* Reads: a WRITE run would leave the disk a flush that slows what follows. */
static void cli_bench_runs(void **state)
{
	char url[1024], err[4096], tcp_port[16];
	uint8_t *data = malloc(1 << 20);

	assert_non_null(data);
	rr_t_fill(data, 1 << 20, 8);
	write_local(local_path("bench.bin"), data, 1 << 20);
	free(data);
	url_of(state, "bench.bin", url, sizeof(url), NULL);
	snprintf(tcp_port, sizeof(tcp_port), "%u", port_tcp);
	assert_int_equal(
		run_cli((char *[]){"nfsrdma", "bench", "--op", "randread",
				   "--bs", "4K", "--depth", "4", "--seconds",
				   "1", "--tcp-nfsport", tcp_port, url, NULL},
			err, sizeof(err)),
		0);
	assert_null(strstr(err, "skipped"));
}

static void cli_errors_are_one_line(void **state)
{
	char url[1024], err[4096], bad[1024];

	url_of(state, "does-not-exist", url, sizeof(url), NULL);
	assert_int_equal(run_cli((char *[]){"nfsrdma", "cat", url, NULL}, err,
				 sizeof(err)),
			 1);
	assert_non_null(strstr(err, "No such file"));
	assert_non_null(strchr(err, '\n'));
	assert_null(strchr(strchr(err, '\n') + 1, '\n'));

	assert_int_equal(run_cli((char *[]){"nfsrdma", "ls", "nfs:/x", NULL},
				 err, sizeof(err)),
			 1);
	assert_non_null(strstr(err, "bad URL"));

	snprintf(bad, sizeof(bad),
		 "nfs://127.0.0.1/elsewhere?nfsport=%u&"
		 "mountport=%u",
		 port_rdma, port_mount);
	assert_int_equal(run_cli((char *[]){"nfsrdma", "ls", bad, NULL}, err,
				 sizeof(err)),
			 1);
	assert_non_null(strstr(err, "export not found"));

	/* nothing listens on port 1 */
	snprintf(bad, sizeof(bad), "nfs://127.0.0.1%s?nfsport=1&mountport=1",
		 export_dir);
	assert_int_equal(run_cli((char *[]){"nfsrdma", "ls", bad, NULL}, err,
				 sizeof(err)),
			 1);
	assert_non_null(strstr(err, "cannot reach"));

	/* another user's private file */
	write_local(local_path("private"), (const uint8_t *)"p", 1);
	assert_int_equal(chmod(local_path("private"), 0600), 0);
	if (chown(local_path("private"), 4242, 4242)) {
		/* not root: the file is ours, and uid 4343 is not us */
	}
	url_of(state, "private", url, sizeof(url), "&uid=4343&gid=4343");
	assert_int_equal(run_cli((char *[]){"nfsrdma", "cat", url, NULL}, err,
				 sizeof(err)),
			 1);
	assert_non_null(strstr(err, "Permission denied"));

	/* the local disk full: /dev/full takes nothing */
	url_of(state, "", url, sizeof(url), NULL);
	{
		char f[1024];

		write_local(local_path("tiny"), (const uint8_t *)"0123", 4);
		url_of(state, "tiny", f, sizeof(f), NULL);
		assert_int_equal(run_cli((char *[]){"nfsrdma", "get", f,
						    "/dev/full", NULL},
					 err, sizeof(err)),
				 1);
		assert_non_null(strstr(err, "No space left"));
	}
}

/*
 * The size sweeps alone, against the server RR_TEST_NFS_URL names: over
 * RDMA unless the URL asks for TCP (where there are no chunks to count).
 * RR_TEST_NFS_SUITE=remote adds every case that needs no local view of
 * the export nor a server of ours (tests/ceph: nfsrdmad on CephFS).
 */
static int run_against(const char *url)
{
	static char rdma[] = "rdma", tcp[] = "tcp";
	char *how = strstr(url, "proto=tcp") ? tcp : rdma;
	const char *suite = getenv("RR_TEST_NFS_SUITE");
	const struct CMUnitTest sweeps[] = {
		cmocka_unit_test_prestate(every_io_size_near_the_inline_size,
					  how),
		cmocka_unit_test_prestate(symlink_targets_of_every_length, how),
	};
	const struct CMUnitTest remote[] = {
		cmocka_unit_test_prestate(big_file_round_trip, how),
		cmocka_unit_test_prestate(overwrite_in_the_middle, how),
		cmocka_unit_test_prestate(namespace_operations, how),
		cmocka_unit_test_prestate(every_io_size_near_the_inline_size,
					  how),
		cmocka_unit_test_prestate(symlink_targets_of_every_length, how),
		cmocka_unit_test_prestate(every_failure_leaves_a_message, how),
		cmocka_unit_test_prestate(concurrent_writers, how),
		cmocka_unit_test_prestate(stream_random_reads, how),
		cmocka_unit_test_prestate(offsets_beyond_4g, how),
	};

	ext_url = url;
	local_root = getenv("RR_TEST_NFS_DIR");
	if (local_root && !*local_root)
		local_root = NULL;
	fprintf(stderr, "against %s (%s)\n", url,
		local_root ? local_root : "not looked at locally");
	if (suite && !strcmp(suite, "remote"))
		return cmocka_run_group_tests(remote, NULL, NULL);
	return cmocka_run_group_tests(sweeps, NULL, NULL);
}

int main(int argc, char **argv)
{
	const char *url = getenv("RR_TEST_NFS_URL");

	static char rdma[] = "rdma", tcp[] = "tcp";
#define BOTH(t)                                                                \
	cmocka_unit_test_prestate(t, rdma), cmocka_unit_test_prestate(t, tcp)
	const struct CMUnitTest tests[] = {
		BOTH(big_file_round_trip),
		BOTH(an_abort_check_ends_calls_on_a_stopped_server),
		BOTH(overwrite_in_the_middle),
		BOTH(steady_io_allocates_nothing),
		BOTH(namespace_operations),
		/* chunks are RDMA's */
		cmocka_unit_test_prestate(fixed_size_results_travel_inline,
					  rdma),
		BOTH(every_io_size_near_the_inline_size),
		BOTH(symlink_targets_of_every_length),
		BOTH(big_directory_listing),
		BOTH(statvfs_reports_space),
		BOTH(errors_are_errnos),
		BOTH(every_failure_leaves_a_message),
		BOTH(permission_is_the_callers),
		BOTH(a_thread_credential_is_that_threads_alone),
		BOTH(concurrent_writers),
		BOTH(stream_random_reads),
		BOTH(offsets_beyond_4g),
		BOTH(cli_put_get_verify),
		BOTH(cli_errors_are_one_line),
		BOTH(cli_bench_runs),
	};

	signal(SIGPIPE, SIG_IGN);
	if (url && *url)
		return run_against(url);
	if (argc < 3) {
		fprintf(stderr, "usage: %s NFSRDMAD NFSRDMA\n", argv[0]);
		return 2;
	}
	nfsrdmad_bin = argv[1];
	nfsrdma_bin = argv[2];
	if (access(nfsrdmad_bin, X_OK)) {
		printf("SKIP: %s not built yet\n", nfsrdmad_bin);
		return 77;
	}
	return cmocka_run_group_tests(tests, server_start, server_stop);
}
