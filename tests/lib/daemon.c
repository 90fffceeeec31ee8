// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BANNER_TMO_MS 10000
#define STOP_TMO_MS   10000
#define MAX_ARGS      64

static void ports_of(struct rr_t_daemon *d, char *buf)
{
	char *save = NULL;

	for (char *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *colon = strrchr(l, ':');
		uint16_t port = colon ? (uint16_t)atoi(colon + 1) : 0;

		if (strstr(l, "over rdma"))
			d->rdma = port;
		else if (strstr(l, "nfs3 over tcp"))
			d->tcp = port;
		else if (strstr(l, "mount3 over tcp"))
			d->mount = port;
		else if (strstr(l, "nlm4 over tcp"))
			d->nlm = port;
		else if (strstr(l, "nsm1 over tcp"))
			d->nsm = port;
	}
}

/* Reads its stdout up to the "ready" line, within BANNER_TMO_MS. */
static int read_banner(struct rr_t_daemon *d)
{
	char buf[4096] = "", *r;
	size_t len = 0;
	uint64_t end = rr_t_now_ms() + BANNER_TMO_MS;

	while (!(r = strstr(buf, "ready")) || !strchr(r, '\n')) {
		struct pollfd p = {.fd = d->out, .events = POLLIN};
		int64_t left = (int64_t)(end - rr_t_now_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		n = read(d->out, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return -EIO;
		len += (size_t)n;
		buf[len] = '\0';
	}
	ports_of(d, buf);
	return d->rdma && d->tcp && d->mount ? 0 : -EPROTO;
}

/*
 * A daemon that did not come up: the start of its log (where start-up
 * errors are) on stderr, so that the test's output says why.
 */
static void show_log(const struct rr_t_daemon *d, int rc)
{
	char buf[2048];
	int fd = open(d->log, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	fprintf(stderr, "daemon did not start (%d); %s:\n", rc, d->log);
	if (n > 0) {
		buf[n] = '\0';
		fputs(buf, stderr);
	}
	if (fd >= 0)
		close(fd);
}

static void set_limit(int what, long v)
{
	struct rlimit rl = {.rlim_cur = (rlim_t)v, .rlim_max = (rlim_t)v};

	if (v > 0)
		setrlimit(what, &rl);
}

static void child(const struct rr_t_daemon *d, int out, const char *bin,
		  const char *const *argv, const struct rr_t_limits *lim)
{
	int err = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	dup2(out, 1);
	if (err >= 0)
		dup2(err, 2);
	if (lim) {
		set_limit(RLIMIT_NOFILE, lim->nofile);
		set_limit(RLIMIT_FSIZE, lim->fsize);
	}
	execv(bin, (char *const *)argv);
	_exit(127);
}

int rr_t_daemon_start(struct rr_t_daemon *d, const char *bin, const char *exp,
		      const char *state_dir, const char *const *argv_extra,
		      const struct rr_t_limits *lim)
{
	const char *argv[MAX_ARGS] = {
		"nfsrdmad", "--export",	    exp, "--state-dir",
		state_dir,  "--rdma-port",  "0", "--tcp-port",
		"0",	    "--mount-port", "0", "--address",
		"127.0.0.1"};
	int n = 13, p[2], rc;

	if (!exp) { /* the export comes with argv_extra */
		memmove(argv + 1, argv + 3, sizeof(argv[0]) * 10);
		n = 11;
	}

	while (argv_extra && *argv_extra && n < MAX_ARGS - 1)
		argv[n++] = *argv_extra++;
	memset(d, 0, sizeof(*d));
	snprintf(d->log, sizeof(d->log), "%.200s/nfsrdmad.log", state_dir);
	mkdir(state_dir, 0700);
	if (pipe(p))
		return -errno;
	d->pid = fork();
	if (d->pid == 0)
		child(d, p[1], bin, argv, lim);
	close(p[1]);
	d->out = p[0];
	if (d->pid < 0)
		return -errno;
	rc = read_banner(d);
	if (rc)
		show_log(d, rc);
	return rc;
}

int rr_t_daemon_stop(struct rr_t_daemon *d)
{
	uint64_t end = rr_t_now_ms() + STOP_TMO_MS;
	int status = 0;
	char c;

	kill(d->pid, SIGTERM);
	/* our end of its stdout sees EOF when it exits */
	while (rr_t_now_ms() < end) {
		struct pollfd p = {.fd = d->out, .events = POLLIN};

		if (poll(&p, 1, (int)(end - rr_t_now_ms())) <= 0 ||
		    read(d->out, &c, 1) <= 0)
			break;
	}
	close(d->out);
	if (rr_t_now_ms() >= end)
		kill(d->pid, SIGKILL);
	waitpid(d->pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The state directory's control socket: connected, with a deadline. */
static int control_connect(const struct rr_t_daemon *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 10};
	const char *slash = strrchr(d->log, '/');
	int fd;

	if (!slash)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.*s/control",
		 (int)(slash - d->log), d->log);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

long rr_t_daemon_allocs(const struct rr_t_daemon *d)
{
	static const char key[] = "\"allocations\": {\"attempts\":";
	const size_t cap = 1u << 20;
	char *reply = malloc(cap), *at;
	int fd = control_connect(d);
	size_t got = 0;
	long v = -1;
	ssize_t n;

	if (fd >= 0 && reply && write(fd, "stats json\n", 11) == 11)
		while (got + 1 < cap &&
		       (n = read(fd, reply + got, cap - 1 - got)) > 0)
			got += (size_t)n;
	if (fd >= 0)
		close(fd);
	if (reply) {
		reply[got] = '\0';
		at = strstr(reply, key);
		if (!at || sscanf(at + sizeof(key) - 1, "%ld", &v) != 1)
			v = -1;
	}
	free(reply);
	return v;
}

long rr_t_daemon_status_kb(const struct rr_t_daemon *d, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)d->pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':' &&
		    sscanf(line + n + 1, "%ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

long rr_t_daemon_peak_rss_kb(const struct rr_t_daemon *d)
{
	return rr_t_daemon_status_kb(d, "VmHWM");
}

long rr_t_daemon_log_bytes(const struct rr_t_daemon *d)
{
	struct stat st;

	return stat(d->log, &st) ? -1 : (long)st.st_size;
}

void rr_t_daemon_tell(const struct rr_t_daemon *d)
{
	siginfo_t si = {0};
	long size = rr_t_daemon_log_bytes(d),
	     from = size > 4096 ? size - 4096 : 0;
	char buf[4097];
	int fd = open(d->log, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, from) : -1;

	if (waitid(P_PID, (id_t)d->pid, &si, WEXITED | WNOHANG | WNOWAIT) ||
	    !si.si_pid)
		fprintf(stderr, "nfsrdmad %d still runs\n", (int)d->pid);
	else
		fprintf(stderr, "nfsrdmad %d has %s %d\n", (int)d->pid,
			si.si_code == CLD_EXITED ? "exited with"
						 : "died of signal",
			si.si_status);
	fprintf(stderr, "the end of %s:\n", d->log);
	if (n > 0) {
		buf[n] = '\0';
		fputs(buf, stderr);
	}
	if (fd >= 0)
		close(fd);
}

/* The value of " name=" on a line of xprt's counters from byte from on. */
static long counter_since(const struct rr_t_daemon *d, long from,
			  const char *want, const char *key)
{
	char line[4096];
	long v = -1;
	FILE *fp = fopen(d->log, "r");

	if (!fp)
		return -1;
	fseek(fp, from, SEEK_SET);
	while (v < 0 && fgets(line, sizeof(line), fp)) {
		char *k = strstr(line, key);

		if (strstr(line, want) && k)
			v = atol(k + strlen(key));
	}
	fclose(fp);
	return v;
}

long rr_t_daemon_counter(const struct rr_t_daemon *d, const char *xprt,
			 const char *name)
{
	long from = rr_t_daemon_log_bytes(d), v = -1;
	uint64_t end = rr_t_now_ms() + 10000;
	char key[128], want[128];

	snprintf(want, sizeof(want), "nfsrdmad: %s:", xprt);
	snprintf(key, sizeof(key), " %s=", name);
	if (kill(d->pid, SIGUSR1))
		return -1;
	while (v < 0 && rr_t_now_ms() < end) {
		v = counter_since(d, from, want, key);
		/* the daemon writes the line on its own: look again soon */
		if (v < 0)
			poll(NULL, 0, 10);
	}
	return v;
}
