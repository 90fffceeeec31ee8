// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfsrdma stat: with a URL, a file's attributes (cmds.c); with a mount
 * point of nfsrdma mount, that mount's transport counters (mount_ctl.c);
 * with the path of a running nfsrdmad's control socket, its counters: per
 * procedure calls, errors and latency, per listener the transport's counters,
 * per live connection its own. The daemon renders them (nfsrdmad/report.c);
 * this asks ("stats" or "stats json") and copies the answer to stdout.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "nfsrdma.h"

#define STAT_TIMEOUT_MS 10000

static int connect_control(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* The answer to stdout until the daemon closes; it may take a while. */
static int copy_answer(int fd, bool *refused)
{
	char buf[8192];
	bool first = true;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, STAT_TIMEOUT_MS) == 0)
			return -ETIMEDOUT;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return first ? -ECONNRESET : 0;
		if (first && n >= 6 && !memcmp(buf, "error:", 6))
			*refused = true;
		first = false;
		if (fwrite(buf, 1, (size_t)n, *refused ? stderr : stdout) !=
		    (size_t)n)
			return -EIO;
	}
}

static int server_stat(struct cli *c, const char *path)
{
	const char *req = c->json ? "stats json\n" : "stats\n";
	bool refused = false;
	int fd = connect_control(path), rc;

	if (fd < 0)
		return cli_fail(path, fd);
	rc = send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 ? -errno : 0;
	if (!rc)
		rc = copy_answer(fd, &refused);
	close(fd);
	if (rc)
		return cli_fail(path, rc);
	return refused ? 1 : 0;
}

/* A directory: the FUSE mount there, through its daemon's socket. */
static int mount_stat(struct cli *c, const char *dir)
{
	char *real = realpath(dir, NULL), path[512];
	int rc =
		real ? mount_ctl_path(real, false, path, sizeof(path)) : -errno;

	free(real);
	if (rc == -ENOENT)
		return cli_failf("%s: not an nfsrdma mount of this user's "
				 "(no control socket)",
				 dir);
	if (rc)
		return cli_fail(dir, rc);
	return server_stat(c, path);
}

int cmd_stat_any(struct cli *c)
{
	struct stat st;

	if (strstr(c->argv[0], "://"))
		return cmd_stat(c);
	if (!stat(c->argv[0], &st) && S_ISDIR(st.st_mode))
		return mount_stat(c, c->argv[0]);
	return server_stat(c, c->argv[0]);
}
