// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Forked peer processes. The peer runs in a child so that client and server
 * have separate address spaces and schedulers, as across a real wire; pipes,
 * not sleeps, carry the start-up handshake and the exit notification.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static void peer_child(bench_peer_fn fn, const struct bench_opts *o,
		       pid_t parent, int fd)
{
	/* An orphaned peer would hold its port and CPU forever. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	bench_pin(o, 1);
	_exit(fn(o, fd) ? 1 : 0);
}

int bench_peer_spawn(struct bench_peer *p, bench_peer_fn fn,
		     const struct bench_opts *o)
{
	pid_t parent = getpid();
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	/* Buffered output would otherwise be printed twice. */
	fflush(NULL);
	p->pid = fork();
	if (p->pid < 0) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (p->pid == 0) {
		close(fds[0]);
		peer_child(fn, o, parent, fds[1]);
	}
	close(fds[1]);
	p->fd = fds[0];
	return 0;
}

int bench_peer_notify_port(int notify_fd, uint16_t port)
{
	ssize_t n = write(notify_fd, &port, sizeof(port));

	return n == (ssize_t)sizeof(port) ? 0 : -EPIPE;
}

int bench_wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int n;

	do {
		n = poll(&pfd, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

int bench_peer_port(struct bench_peer *p, uint16_t *port, const char *what)
{
	ssize_t n;
	int err;

	err = bench_wait_fd(p->fd, POLLIN, BENCH_WAIT_MS);
	if (err) {
		fprintf(stderr, "%s peer did not listen within %d ms\n", what,
			BENCH_WAIT_MS);
		return err;
	}
	n = read(p->fd, port, sizeof(*port));
	if (n == (ssize_t)sizeof(*port))
		return 0;
	/* EOF: the peer died before it could listen (it said why). */
	fprintf(stderr, "%s peer exited before it listened\n", what);
	return n < 0 ? -errno : -ECHILD;
}

/* The notify pipe reaches EOF when the peer exits, however it exits. */
static int wait_exit(int fd, int timeout_ms)
{
	char buf[16];
	ssize_t n;
	int err;

	for (;;) {
		err = bench_wait_fd(fd, POLLIN, timeout_ms);
		if (err)
			return err;
		n = read(fd, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int bench_peer_reap(struct bench_peer *p, const char *what)
{
	int status, err;

	err = wait_exit(p->fd, BENCH_WAIT_MS);
	close(p->fd);
	p->fd = -1;
	if (err) {
		fprintf(stderr,
			"%s peer did not exit within %d ms: killing it\n", what,
			BENCH_WAIT_MS);
		kill(p->pid, SIGKILL);
	}
	while (waitpid(p->pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "%s peer killed by signal %d (%s)\n", what,
			WTERMSIG(status), strsignal(WTERMSIG(status)));
		return -ECHILD;
	}
	if (WEXITSTATUS(status)) {
		fprintf(stderr, "%s peer exited with status %d\n", what,
			WEXITSTATUS(status));
		return -ECHILD;
	}
	return err;
}
