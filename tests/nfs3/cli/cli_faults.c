// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfsrdma when things go wrong, end to end with real processes: nfsrdmad
 * is killed (SIGKILL) in the middle of a put, and either restarted on the
 * same ports, where the put must finish with the right bytes, or left
 * dead, where the put must fail once, within its call timeout; a get or
 * put is interrupted (SIGINT, as Ctrl-C sends), and no partial file may
 * stay under the final name, nor a temporary; "-" is stdin or stdout; a
 * port of another protocol and a bad URL fail at once, in one line. And
 * the progress line, read from a pseudo-terminal of a given width.
 *
 * Losing uncommitted writes is what a restart may do (RFC 1813 section
 * 3.3.7), but a killed process loses nothing from the page cache; so the
 * test does the losing: it cuts the file on the server before the restart.
 * Only a client that writes again what it had not committed puts it back.
 *
 * usage: cli_faults NFSRDMAD NFSRDMA
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "io.h"

#define FILE_SIZE  (128u << 20) /* long enough to be cut in the middle */
#define KILL_AT	   (16u << 20)	/* the server file's size at the kill */
#define CUT_TO	   (4u << 20)	/* what the "restart" leaves of it */
#define TIMEOUT_MS 4000		/* nfsrdma --timeout when it stays dead */
#define WAIT_MS	   60000

static const char *nfsrdmad_bin, *nfsrdma_bin;

struct env {
	char base[64];
	char exp[96], state[96], src[96], err[96], local[96];
	struct rr_t_daemon d;
	char url[256];
};

/* ------------------------------------------------------------ helpers */

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static void make_source(const char *path, size_t len)
{
	size_t piece = 1u << 20;
	uint8_t *buf = malloc(piece);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_non_null(buf);
	assert_true(fd >= 0);
	for (size_t off = 0; off < len; off += piece) {
		fill(buf, piece, (uint32_t)(off / piece) + 1);
		assert_true(rr_t_write_all(fd, buf, piece));
	}
	close(fd);
	free(buf);
}

static bool same_bytes(const char *a, const char *b)
{
	size_t piece = 1u << 20;
	uint8_t *pa = malloc(piece), *pb = malloc(piece);
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
	bool same = pa && pb && fa >= 0 && fb >= 0;
	ssize_t na = 1;

	while (same && na > 0) {
		na = read(fa, pa, piece);
		same = na >= 0 && read(fb, pb, piece) == na &&
		       !memcmp(pa, pb, (size_t)(na > 0 ? na : 0));
	}
	close(fa);
	close(fb);
	free(pa);
	free(pb);
	return same;
}

/* The one regular file in dir whatever its name (put's temporary too). */
static bool only_file(const char *dir, char *path, size_t cap, off_t *size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || strlen(e->d_name) > 2) {
			snprintf(path, cap, "%s/%s", dir, e->d_name);
			if (!stat(path, &st) && S_ISREG(st.st_mode)) {
				*size = st.st_size;
				found = true;
				break;
			}
		}
	closedir(d);
	return found;
}

/* Waits (inotify, no polling) for a file in dir of at least len bytes. */
static bool wait_grown(const char *dir, off_t len, char *path, size_t cap)
{
	uint64_t end = rr_t_now_ms() + WAIT_MS;
	int fd = inotify_init1(IN_CLOEXEC);
	char ev[4096];
	off_t size = 0;
	bool ok = false;

	assert_true(fd >= 0);
	assert_true(inotify_add_watch(fd, dir, IN_MODIFY | IN_CREATE) >= 0);
	while (!(ok = only_file(dir, path, cap, &size) && size >= len)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)(end - rr_t_now_ms());

		if (left <= 0 || poll(&p, 1, (int)left) <= 0 ||
		    read(fd, ev, sizeof(ev)) <= 0)
			break;
	}
	close(fd);
	return ok;
}

/*
 * nfsrdma with args (NULL-terminated), stderr into e->err, stdin from in
 * and stdout to out when they are not -1.
 */
static pid_t cli_start_io(struct env *e, const char *const *args, int in,
			  int out)
{
	const char *argv[32] = {"nfsrdma"};
	int n = 1;
	pid_t pid;

	while (*args && n < 31)
		argv[n++] = *args++;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int fd = open(e->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, STDERR_FILENO);
		if (in >= 0)
			dup2(in, STDIN_FILENO);
		if (out >= 0)
			dup2(out, STDOUT_FILENO);
		execv(nfsrdma_bin, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static pid_t cli_start(struct env *e, const char *const *args)
{
	return cli_start_io(e, args, -1, -1);
}

/* Its exit status within tmo_ms (pidfd: woken by the exit itself). */
static int cli_wait(pid_t pid, int tmo_ms)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), status = 0;
	struct pollfd p = {.fd = pfd, .events = POLLIN};

	assert_true(pfd >= 0);
	if (poll(&p, 1, tmo_ms) <= 0)
		kill(pid, SIGKILL);
	close(pfd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void print_err(const struct env *e)
{
	char buf[4096];
	int fd = open(e->err, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (n > 0) {
		buf[n] = '\0';
		fprintf(stderr, "nfsrdma said: %s", buf);
	}
	if (fd >= 0)
		close(fd);
}

static long err_lines(const struct env *e)
{
	FILE *f = fopen(e->err, "r");
	long lines = 0;
	int c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		lines += c == '\n';
	fclose(f);
	return lines;
}

static bool exists(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !access(path, F_OK);
}

static long entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static bool file_says(const char *path, const char *what)
{
	char buf[8192];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, what) != NULL;
}

static void kill_server(struct env *e)
{
	int status;

	assert_int_equal(kill(e->d.pid, SIGKILL), 0);
	assert_int_equal(waitpid(e->d.pid, &status, 0), e->d.pid);
	close(e->d.out);
	e->d.pid = 0;
}

/* The same ports as before, so the client's reconnects find it. */
static void restart_server(struct env *e)
{
	char r[8], t[8], m[8];
	const char *extra[] = {"--rdma-port",  r, "--tcp-port", t,
			       "--mount-port", m, NULL};

	snprintf(r, sizeof(r), "%u", e->d.rdma);
	snprintf(t, sizeof(t), "%u", e->d.tcp);
	snprintf(m, sizeof(m), "%u", e->d.mount);
	assert_int_equal(rr_t_daemon_start(&e->d, nfsrdmad_bin, e->exp,
					   e->state, extra, NULL),
			 0);
}

/* ------------------------------------------------------------ fixture */

static int env_setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	snprintf(e->base, sizeof(e->base), "/tmp/cli-faults-XXXXXX");
	if (!mkdtemp(e->base))
		return -1;
	snprintf(e->exp, sizeof(e->exp), "%s/export", e->base);
	snprintf(e->state, sizeof(e->state), "%s/state", e->base);
	snprintf(e->src, sizeof(e->src), "%s/source", e->base);
	snprintf(e->err, sizeof(e->err), "%s/stderr", e->base);
	snprintf(e->local, sizeof(e->local), "%s/local", e->base);
	mkdir(e->exp, 0755);
	mkdir(e->local, 0755);
	if (rr_t_daemon_start(&e->d, nfsrdmad_bin, e->exp, e->state, NULL,
			      NULL)) {
		fprintf(stderr, "nfsrdmad did not start\n");
		return -1;
	}
	*state = e;
	return 0;
}

static int env_teardown(void **state)
{
	struct env *e = *state;

	if (e->d.pid)
		rr_t_daemon_stop(&e->d);
	rr_t_rm_tree(e->base);
	free(e);
	return 0;
}

static void url_of(struct env *e, bool tcp, const char *name)
{
	if (tcp)
		snprintf(e->url, sizeof(e->url),
			 "nfs://127.0.0.1%s/%s?proto=tcp&nfsport=%u&"
			 "mountport=%u",
			 e->exp, name, e->d.tcp, e->d.mount);
	else
		snprintf(e->url, sizeof(e->url),
			 "nfs://127.0.0.1%s/%s?nfsport=%u&mountport=%u", e->exp,
			 name, e->d.rdma, e->d.mount);
}

/* -------------------------------------------------------------- tests */

static void put_survives_restart(void **state, bool tcp)
{
	struct env *e = *state;
	char path[192], dst[192];
	uint64_t t0;
	pid_t pid;
	int rc;

	make_source(e->src, FILE_SIZE);
	url_of(e, tcp, "file");
	pid = cli_start(e, (const char *[]){"-q", "--timeout", "30000", "put",
					    e->src, e->url, NULL});
	assert_true(wait_grown(e->exp, KILL_AT, path, sizeof(path)));
	kill_server(e);
	/* what a restart may lose of the writes not yet committed */
	assert_int_equal(truncate(path, CUT_TO), 0);
	restart_server(e);
	t0 = rr_t_now_ms();
	rc = cli_wait(pid, WAIT_MS);
	/* how near the deadline it came, for when it does not make it */
	fprintf(stderr, "put over %s: %s %llu ms after the restart\n",
		tcp ? "tcp" : "rdma", rc ? "ended" : "finished",
		(unsigned long long)(rr_t_now_ms() - t0));
	print_err(e);
	assert_int_equal(rc, 0);
	assert_int_equal(err_lines(e), 0); /* -q and success: silence */
	snprintf(dst, sizeof(dst), "%s/file", e->exp);
	assert_true(same_bytes(e->src, dst));
}

static void put_survives_restart_rdma(void **state)
{
	put_survives_restart(state, false);
}

static void put_survives_restart_tcp(void **state)
{
	put_survives_restart(state, true);
}

/*
 * A dead server: the calls in flight time out after TIMEOUT_MS, and
 * close sends no COMMIT into the void for a second timeout.
 */
static void put_fails_once_when_server_dies(void **state, bool tcp)
{
	struct env *e = *state;
	char path[192], tmo[16];
	uint64_t t0;
	pid_t pid;
	int rc;

	make_source(e->src, FILE_SIZE);
	url_of(e, tcp, "file");
	snprintf(tmo, sizeof(tmo), "%d", TIMEOUT_MS);
	pid = cli_start(e, (const char *[]){"-q", "--timeout", tmo, "put",
					    e->src, e->url, NULL});
	assert_true(wait_grown(e->exp, KILL_AT, path, sizeof(path)));
	kill_server(e);
	t0 = rr_t_now_ms();
	rc = cli_wait(pid, WAIT_MS);
	print_err(e);
	fprintf(stderr, "put failed %llu ms after the kill\n",
		(unsigned long long)(rr_t_now_ms() - t0));
	assert_int_equal(rc, 1);
	assert_true(rr_t_now_ms() - t0 < TIMEOUT_MS * 3 / 2);
	/* the error, and where the partial file stayed (no server to ask) */
	assert_int_equal(err_lines(e), 2);
	assert_true(file_says(e->err, "timed out"));
	assert_true(file_says(e->err, "left the partial file"));
	assert_false(exists(e->exp, "file"));
}

static void put_fails_once_rdma(void **state)
{
	put_fails_once_when_server_dies(state, false);
}

static void put_fails_once_tcp(void **state)
{
	put_fails_once_when_server_dies(state, true);
}

/*
 * Ctrl-C (SIGINT from here) in the middle of a get or put: the command
 * dies of it, and neither the final name nor the temporary is left.
 */
static void interrupted(void **state, bool put)
{
	struct env *e = *state;
	char path[192], dst[192];
	const char *dir = put ? e->exp : e->local;
	pid_t pid;

	if (put) {
		make_source(e->src, FILE_SIZE);
		url_of(e, false, "file");
		pid = cli_start(
			e, (const char *[]){"-q", "put", e->src, e->url, NULL});
	} else {
		snprintf(path, sizeof(path), "%s/file", e->exp);
		make_source(path, FILE_SIZE);
		url_of(e, false, "file");
		snprintf(dst, sizeof(dst), "%s/file", e->local);
		pid = cli_start(
			e, (const char *[]){"-q", "get", e->url, dst, NULL});
	}
	assert_true(wait_grown(dir, KILL_AT, path, sizeof(path)));
	assert_false(exists(dir, "file")); /* written under another name */
	assert_int_equal(kill(pid, SIGINT), 0);
	assert_int_equal(cli_wait(pid, WAIT_MS), 128 + SIGINT);
	print_err(e);
	assert_int_equal(entries(dir), 0);
	if (!put) /* the server's file is untouched */
		assert_int_equal(entries(e->exp), 1);
}

static void get_interrupted(void **state)
{
	interrupted(state, false);
}

static void put_interrupted(void **state)
{
	interrupted(state, true);
}

/* A writer of path into a pipe, as a shell's "cat path |" would be. */
static int pipe_from(const char *path, pid_t *writer)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	*writer = fork();
	assert_true(*writer >= 0);
	if (!*writer) {
		char buf[65536];
		int fd = open(path, O_RDONLY);
		ssize_t n;

		close(p[0]);
		while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
			if (!rr_t_write_all(p[1], buf, (size_t)n))
				_exit(1);
		_exit(fd < 0);
	}
	close(p[1]);
	return p[0];
}

/* "-": put reads a pipe (more than one commit window), get writes stdout. */
static void dash_is_stdin_and_stdout(void **state)
{
	struct env *e = *state;
	char dst[192], out[192];
	pid_t writer, pid;
	int in, fd, status;

	make_source(e->src, 40u << 20);
	url_of(e, false, "file");
	in = pipe_from(e->src, &writer);
	pid = cli_start_io(
		e, (const char *[]){"-q", "--verify", "put", "-", e->url, NULL},
		in, -1);
	close(in);
	assert_int_equal(cli_wait(pid, WAIT_MS), 0);
	assert_int_equal(waitpid(writer, &status, 0), writer);
	snprintf(dst, sizeof(dst), "%s/file", e->exp);
	assert_true(same_bytes(e->src, dst));
	assert_false(exists(e->exp, "-"));

	snprintf(out, sizeof(out), "%s/stdout", e->local);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	pid = cli_start_io(
		e, (const char *[]){"-q", "--verify", "get", e->url, "-", NULL},
		-1, fd);
	close(fd);
	assert_int_equal(cli_wait(pid, WAIT_MS), 0);
	print_err(e);
	assert_true(same_bytes(e->src, out));
	assert_int_equal(entries(e->local), 1); /* no file named "-" */
}

/*
 * What is not a regular file is written into, not replaced by a rename:
 * a symbolic link stays one (so does /dev/null, which is why no
 * temporary may be renamed over such a name).
 */
static void get_writes_through_a_symlink(void **state)
{
	struct env *e = *state;
	char path[192], link[192], target[192];
	struct stat st;

	snprintf(path, sizeof(path), "%s/file", e->exp);
	make_source(path, 1u << 20);
	snprintf(target, sizeof(target), "%s/target", e->local);
	snprintf(link, sizeof(link), "%s/link", e->local);
	assert_int_equal(symlink(target, link), 0);
	url_of(e, false, "file");
	assert_int_equal(
		cli_wait(cli_start(e, (const char *[]){"-q", "get", e->url,
						       link, NULL}),
			 WAIT_MS),
		0);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_true(same_bytes(path, target));
	assert_int_equal(entries(e->local), 2);
}

/* --partial: what was written stays, under the final name (rsync's). */
static void put_partial_keeps_the_name(void **state)
{
	struct env *e = *state;
	char path[192];
	pid_t pid;

	make_source(e->src, FILE_SIZE);
	url_of(e, false, "file");
	pid = cli_start(e, (const char *[]){"-q", "--partial", "put", e->src,
					    e->url, NULL});
	assert_true(wait_grown(e->exp, KILL_AT, path, sizeof(path)));
	assert_true(exists(e->exp, "file"));
	assert_int_equal(kill(pid, SIGINT), 0);
	assert_int_equal(cli_wait(pid, WAIT_MS), 128 + SIGINT);
	assert_int_equal(entries(e->exp), 1);
	assert_true(exists(e->exp, "file"));
}

/* How many times needle occurs in the file at path. */
static int count_in(const char *path, const char *needle)
{
	char buf[8192], *p = buf;
	int fd = open(path, O_RDONLY), n = 0;
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (len < 0)
		return -1;
	buf[len] = '\0';
	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

/*
 * A port that speaks another protocol fails the mount at once, whatever
 * the call timeout (30 s here), in one line that names the port.
 */
static void wrong_port_fails_fast(void **state)
{
	struct env *e = *state;
	char url[3][256], port[3][16];
	uint64_t t0;

	/* TCP at the RDMA port; MOUNT at the RDMA port; RDMA at TCP's */
	snprintf(url[0], sizeof(url[0]),
		 "nfs://127.0.0.1%s?proto=tcp&nfsport=%u&mountport=%u", e->exp,
		 e->d.rdma, e->d.mount);
	snprintf(url[1], sizeof(url[1]),
		 "nfs://127.0.0.1%s?nfsport=%u&mountport=%u", e->exp, e->d.rdma,
		 e->d.rdma);
	snprintf(url[2], sizeof(url[2]),
		 "nfs://127.0.0.1%s?nfsport=%u&mountport=%u", e->exp, e->d.tcp,
		 e->d.mount);
	snprintf(port[0], sizeof(port[0]), "port %u", e->d.rdma);
	snprintf(port[1], sizeof(port[1]), "port %u", e->d.rdma);
	snprintf(port[2], sizeof(port[2]), "port %u", e->d.tcp);
	for (int i = 0; i < 3; i++) {
		t0 = rr_t_now_ms();
		assert_int_equal(
			cli_wait(cli_start(e, (const char *[]){"--timeout",
							       "30000", "ls",
							       url[i], NULL}),
				 WAIT_MS),
			1);
		print_err(e);
		assert_true(rr_t_now_ms() - t0 < 5000);
		assert_int_equal(err_lines(e), 1);
		assert_true(file_says(e->err, port[i]));
	}
}

/* A bad URL: one line, the URL said once, the bad part named. */
static void url_errors_name_the_part(void **state)
{
	static const struct {
		const char *url, *says;
	} bad[] = {
		{"nfs://127.0.0.1:99999/x", "port '99999'"},
		{"nfs://127.0.0.1/x?proto=udp", "proto 'udp'"},
		{"nfs://[::1/x", "lacks its closing ']'"},
		{"nfs:/x", "does not start with nfs://"},
	};
	struct env *e = *state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(
			cli_wait(cli_start(e, (const char *[]){"ls", bad[i].url,
							       NULL}),
				 WAIT_MS),
			1);
		print_err(e);
		assert_int_equal(err_lines(e), 1);
		assert_true(file_says(e->err, bad[i].says));
		assert_int_equal(count_in(e->err, bad[i].url), 1);
	}
}

/* nfsrdma args on a pseudo-terminal cols wide: all it wrote there. */
static size_t run_on_pty(const char *const *args, int cols, char *out,
			 size_t cap, int *status)
{
	struct winsize ws = {.ws_row = 24, .ws_col = (unsigned short)cols};
	const char *argv[32] = {"nfsrdma"};
	uint64_t end = rr_t_now_ms() + WAIT_MS;
	int master, n = 1;
	size_t len = 0;
	pid_t pid;

	while (*args && n < 31)
		argv[n++] = *args++;
	pid = forkpty(&master, NULL, NULL, &ws);
	assert_true(pid >= 0);
	if (!pid) {
		unsetenv("COLUMNS"); /* the terminal's own width decides */
		execv(nfsrdma_bin, (char *const *)argv);
		_exit(127);
	}
	for (;;) { /* EOF (EIO on Linux) once the child has gone */
		struct pollfd p = {.fd = master, .events = POLLIN};
		int64_t left = (int64_t)(end - rr_t_now_ms());
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		r = read(master, out + len, cap - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == cap - 1)
			break;
	}
	out[len] = '\0';
	close(master);
	*status = cli_wait(pid, WAIT_MS);
	return len;
}

/* Removes every erase-to-end-of-line (ESC [ K) from s, in place. */
static void strip_el(char *s)
{
	char *d = s;

	while (*s)
		if (!strncmp(s, "\033[K", 3))
			s += 3;
		else
			*d++ = *s++;
	*d = '\0';
}

struct drawn {
	int bars, etas, verify_lines, too_wide, escapes;
};

/* Each redraw (between CR/LF) of a progress line: "put ..." or "verify ...". */
static void look_at_lines(char *out, int cols, struct drawn *d)
{
	char *save = NULL;

	for (char *l = strtok_r(out, "\r\n", &save); l;
	     l = strtok_r(NULL, "\r\n", &save)) {
		strip_el(l);
		if (strncmp(l, "put ", 4) && strncmp(l, "verify ", 7))
			continue; /* a summary ("put: ...") or a message */
		d->too_wide += (int)strlen(l) > cols - 1;
		d->escapes += strchr(l, '\033') != NULL;
		d->bars += strstr(l, "] ") != NULL && strchr(l, '#') != NULL;
		d->etas += strstr(l, "/s ETA ") != NULL;
		d->verify_lines += !strncmp(l, "verify ", 7);
	}
}

/*
 * The bar fits the width less one column (no wrap) in a wide terminal and
 * a narrow one, erases what it leaves, and shows a rate and an ETA, for
 * the transfer and for --verify.
 */
static void progress_fits_the_terminal(void **state)
{
	static const int widths[] = {100, 40};
	struct env *e = *state;
	size_t cap = 1u << 20;
	char *out = malloc(cap);
	int status;

	assert_non_null(out);
	make_source(e->src, 256u << 20);
	url_of(e, false, "file");
	for (size_t i = 0; i < 2; i++) {
		struct drawn d = {0};
		int cols = widths[i];

		run_on_pty((const char *[]){"--verify", "put", e->src, e->url,
					    NULL},
			   cols, out, cap, &status);
		assert_int_equal(status, 0);
		assert_non_null(strstr(out, "verify: ok"));
		assert_non_null(strstr(out, "\033[K")); /* it erases */
		look_at_lines(out, cols, &d);
		fprintf(stderr, "%d columns: %d bars, %d ETAs, %d verify\n",
			cols, d.bars, d.etas, d.verify_lines);
		assert_int_equal(d.too_wide, 0);
		assert_int_equal(d.escapes, 0);
		assert_true(d.verify_lines > 0);
		if (cols >= 80) { /* room for all of it */
			assert_true(d.bars > 0);
			assert_true(d.etas > 0);
		}
	}
	free(out);
}

/* nfsrdma args with its stdout in e->local/stdout, read back into out. */
static int run_out(struct env *e, const char *const *args, char *out,
		   size_t cap)
{
	char path[192];
	int fd, rc;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stdout", e->base);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	rc = cli_wait(cli_start_io(e, args, -1, fd), WAIT_MS);
	n = pread(fd, out, cap - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	return rc;
}

static void make_tree(const struct env *e)
{
	char p[192];

	snprintf(p, sizeof(p), "%s/a", e->exp);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/a/b", e->exp);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/a/b/f", e->exp);
	make_source(p, 1u << 20);
	snprintf(p, sizeof(p), "%s/a/b/l", e->exp);
	assert_int_equal(symlink("f", p), 0);
	snprintf(p, sizeof(p), "%s/top", e->exp);
	make_source(p, 1u << 20);
}

/* ls names, ls -l lines, ls -R the tree in ls(1)'s order. */
static void ls_long_and_recursive(void **state)
{
	struct env *e = *state;
	char out[4096];

	make_tree(e);
	url_of(e, false, "");
	assert_int_equal(run_out(e, (const char *[]){"ls", e->url, NULL}, out,
				 sizeof(out)),
			 0);
	assert_string_equal(out, "a\ntop\n");
	assert_int_equal(run_out(e, (const char *[]){"ls", "-l", e->url, NULL},
				 out, sizeof(out)),
			 0);
	assert_true(!strncmp(out, "drwxr-xr-x", 10));
	assert_non_null(strstr(out, "\n-rw-r--r--"));
	assert_non_null(strstr(out, " 1048576 "));
	assert_true(strstr(out, " top\n") && strstr(out, " a\n"));
	assert_int_equal(run_out(e, (const char *[]){"ls", "-R", e->url, NULL},
				 out, sizeof(out)),
			 0);
	assert_string_equal(out, "/:\na\ntop\n\n/a:\nb\n\n/a/b:\nf\nl\n");
	assert_int_equal(run_out(e, (const char *[]){"ls", "-lR", e->url, NULL},
				 out, sizeof(out)),
			 0);
	assert_non_null(strstr(out, " l -> f\n"));
}

/* df(1)'s Use%: used / (used + avail), rounded up. */
static unsigned df_pct(const struct statvfs *sv)
{
	uint64_t used = sv->f_blocks - sv->f_bfree;
	uint64_t whole = used + sv->f_bavail;

	return whole ? (unsigned)((used * 100 + whole - 1) / whole) : 0;
}

static void df_reckons_as_df(void **state)
{
	struct env *e = *state;
	struct statvfs before, after;
	char out[4096], *line;
	unsigned pct, lo, hi;

	url_of(e, false, "");
	assert_int_equal(statvfs(e->exp, &before), 0);
	assert_int_equal(run_out(e, (const char *[]){"df", e->url, NULL}, out,
				 sizeof(out)),
			 0);
	assert_int_equal(statvfs(e->exp, &after), 0);
	fprintf(stderr, "%s", out);
	line = strchr(out, '\n');
	assert_non_null(line);
	/* Size Used Avail (two words each), then Use% */
	assert_int_equal(
		sscanf(line + 1, "%*s %*s %*s %*s %*s %*s %*s %u%%", &pct), 1);
	/* the disk is shared: the truth moved by at most a point meanwhile */
	lo = df_pct(&before) < df_pct(&after) ? df_pct(&before)
					      : df_pct(&after);
	hi = df_pct(&before) ^ df_pct(&after) ^ lo;
	assert_true(pct + 1 >= lo && pct <= hi + 1);
}

/* bench --op write writes only a file it creates, unless --force. */
static void bench_writes_only_its_own_file(void **state)
{
	struct env *e = *state;
	char old[192], keep[192], out[4096];
	struct stat st;

	snprintf(old, sizeof(old), "%s/old", e->exp);
	snprintf(keep, sizeof(keep), "%s/keep", e->base);
	make_source(old, 1u << 20);
	make_source(keep, 1u << 20);
	url_of(e, false, "old");
	assert_int_equal(
		run_out(e,
			(const char *[]){"bench", "--op", "write", "--seconds",
					 "1", "--no-baseline", e->url, NULL},
			out, sizeof(out)),
		1);
	print_err(e);
	assert_true(file_says(e->err, "--force"));
	assert_true(same_bytes(old, keep)); /* untouched */

	url_of(e, false, "new"); /* created, then written by both runs */
	{
		char port[16];

		snprintf(port, sizeof(port), "%u", e->d.tcp);
		assert_int_equal(run_out(e,
					 (const char *[]){"bench", "--op",
							  "write", "--seconds",
							  "1", "--tcp-nfsport",
							  port, e->url, NULL},
					 out, sizeof(out)),
				 0);
	}
	print_err(e);
	assert_non_null(strstr(out, "tcp "));
	assert_false(file_says(e->err, "baseline skipped"));
	assert_true(exists(e->exp, "new"));

	url_of(e, false, "old");
	assert_int_equal(
		run_out(e,
			(const char *[]){"bench", "--op", "write", "--force",
					 "--seconds", "1", "--no-baseline",
					 e->url, NULL},
			out, sizeof(out)),
		0);
	assert_int_equal(stat(old, &st), 0);
	assert_true(st.st_size > 1 << 20); /* it did write */
}

/*
 * --json says what it measured and in what units, in the shape every
 * benchmark report shares (tests/bench checks that shape with jq); libnfs's
 * nfs-cp is compared only on a file the bench reads whole (the same
 * bytes).
 */
static void bench_json_describes_itself(void **state)
{
	struct env *e = *state;
	char path[192], port[16], out[8192], want[512];
	bool nfs_cp = !access("/usr/bin/nfs-cp", X_OK);

	snprintf(port, sizeof(port), "%u", e->d.tcp);
	snprintf(path, sizeof(path), "%s/small", e->exp);
	make_source(path, 8u << 20);
	snprintf(path, sizeof(path), "%s/big", e->exp);
	make_source(path, 65u << 20);
	url_of(e, false, "small");
	assert_int_equal(
		run_out(e,
			(const char *[]){"bench", "--json", "--seconds", "1",
					 "--tcp-nfsport", port, e->url, NULL},
			out, sizeof(out)),
		0);
	fprintf(stderr, "%s", out);
	snprintf(want, sizeof(want), "\"target\":\"%s\"", e->url);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "\"transport\":\"rdma\""));
	assert_non_null(strstr(out, "\"provider\":\""));
	assert_non_null(
		strstr(out, "\"units\":{\"MBps\":\"10^6 bytes per second\""));
	assert_non_null(strstr(out, "\"baselines\":[{\"name\":\"tcp\""));
	if (nfs_cp)
		assert_non_null(strstr(out, "{\"name\":\"libnfs\""));
	url_of(e, false, "big");
	assert_int_equal(
		run_out(e,
			(const char *[]){"bench", "--json", "--seconds", "1",
					 "--tcp-nfsport", port, e->url, NULL},
			out, sizeof(out)),
		0);
	assert_null(strstr(out, "libnfs"));
	if (nfs_cp)
		assert_true(file_says(e->err, "no libnfs baseline"));
}

/* put -r then get -r of a tree: the same files back, as cp -r lays them. */
static void recursive_put_and_get(void **state)
{
	struct env *e = *state;
	char src[192], p[256], back[192], a[256], b[256];
	const char *files[] = {"top", "d1/mid", "d1/d2/deep"};

	snprintf(src, sizeof(src), "%s/tree", e->base);
	assert_int_equal(mkdir(src, 0755), 0);
	snprintf(p, sizeof(p), "%s/d1", src);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/d1/d2", src);
	assert_int_equal(mkdir(p, 0755), 0);
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", src, files[i]);
		make_source(p, (i + 1) << 20);
	}
	url_of(e, false, "");
	/* the export exists: the tree lands under its own name */
	assert_int_equal(
		cli_wait(cli_start(e, (const char *[]){"-q", "put", "-r", src,
						       e->url, NULL}),
			 WAIT_MS),
		0);
	url_of(e, false, "tree");
	snprintf(back, sizeof(back), "%s/back", e->local);
	/* back does not exist: it becomes the tree */
	assert_int_equal(
		cli_wait(cli_start(e, (const char *[]){"-q", "get", "-r",
						       e->url, back, NULL}),
			 WAIT_MS),
		0);
	print_err(e);
	for (size_t i = 0; i < 3; i++) {
		snprintf(a, sizeof(a), "%s/%s", src, files[i]);
		snprintf(b, sizeof(b), "%s/tree/%s", e->exp, files[i]);
		assert_true(same_bytes(a, b));
		snprintf(b, sizeof(b), "%s/%s", back, files[i]);
		assert_true(same_bytes(a, b));
	}
	assert_int_equal(entries(back), 2); /* top, d1: no temporaries */
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(put_survives_restart_rdma,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(put_survives_restart_tcp,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(put_fails_once_rdma, env_setup,
						env_teardown),
		cmocka_unit_test_setup_teardown(put_fails_once_tcp, env_setup,
						env_teardown),
		cmocka_unit_test_setup_teardown(get_interrupted, env_setup,
						env_teardown),
		cmocka_unit_test_setup_teardown(put_interrupted, env_setup,
						env_teardown),
		cmocka_unit_test_setup_teardown(dash_is_stdin_and_stdout,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(get_writes_through_a_symlink,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(put_partial_keeps_the_name,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(wrong_port_fails_fast,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(url_errors_name_the_part,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(progress_fits_the_terminal,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(ls_long_and_recursive,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(df_reckons_as_df, env_setup,
						env_teardown),
		cmocka_unit_test_setup_teardown(bench_writes_only_its_own_file,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(bench_json_describes_itself,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(recursive_put_and_get,
						env_setup, env_teardown),
	};

	if (argc != 3) {
		fprintf(stderr, "usage: %s NFSRDMAD NFSRDMA\n", argv[0]);
		return 2;
	}
	nfsrdmad_bin = argv[1];
	nfsrdma_bin = argv[2];
	if (access(nfsrdmad_bin, X_OK) || access(nfsrdma_bin, X_OK)) {
		fprintf(stderr, "SKIP: %s or %s not built\n", nfsrdmad_bin,
			nfsrdma_bin);
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
