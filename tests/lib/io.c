/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "io.h"
#include "clock.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

bool rr_t_read_by(int fd, void *p, size_t len, uint64_t deadline_ms)
{
	char *c = p;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)(deadline_ms - rr_t_now_ms());
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return false;
		n = read(fd, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		c += n;
		len -= (size_t)n;
	}
	return true;
}

bool rr_t_read_within(int fd, void *p, size_t len, int tmo_ms)
{
	return rr_t_read_by(fd, p, len, rr_t_now_ms() + (uint64_t)tmo_ms);
}

bool rr_t_write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t n = send(fd, c, len, MSG_NOSIGNAL);

		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		c += n;
		len -= (size_t)n;
	}
	return true;
}

void rr_t_write_or_exit(int fd, const void *p, size_t len)
{
	if (!rr_t_write_all(fd, p, len))
		_exit(9);
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p) ? -1 : 0;
}

int rr_t_rm_tree(const char *dir)
{
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}
