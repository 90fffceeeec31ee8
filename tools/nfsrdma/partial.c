// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What keeps a partial file from ever carrying its final name: get and
 * put write under a temporary name in the same directory (so the rename
 * that ends a good transfer stays within one file system) and remove it
 * when the transfer fails or is interrupted. A first SIGINT or SIGTERM
 * only raises a flag that the transfer loops look at between pieces; the
 * command then cleans up and dies of the same signal, as a shell expects.
 * A second one acts at once (the handler restores the default).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nfsrdma.h"

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
	caught = sig;
	signal(sig, SIG_DFL);
}

void xfer_catch_signals(void)
{
	/* no SA_RESTART: a read of stdin returns EINTR and the loop sees it */
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool xfer_interrupted(void)
{
	return caught != 0;
}

void xfer_die_if_interrupted(void)
{
	if (!caught)
		return;
	signal(caught, SIG_DFL);
	raise(caught);
}

/* "dir/" of path ("" when it has none) and its last component. */
static void split(const char *path, size_t *dir_len, const char **base)
{
	const char *slash = strrchr(path, '/');

	*dir_len = slash ? (size_t)(slash - path) + 1 : 0;
	*base = slash ? slash + 1 : path;
}

char *temp_name(const char *final)
{
	size_t dl;
	const char *base;
	char *p;
	unsigned r;

	split(final, &dl, &base);
	p = malloc(dl + strlen(base) + 32);
	if (!p)
		return NULL;
	r = (unsigned)getpid() ^ (unsigned)now_ns();
	sprintf(p, "%.*s.%s.nfsrdma-%08x", (int)dl, final, base, r);
	return p;
}

int local_temp_open(const char *final, char **tmp)
{
	mode_t mask = umask(0);
	int fd = -1;

	umask(mask);
	for (int i = 0; i < 16 && fd < 0; i++) {
		free(*tmp);
		*tmp = temp_name(final);
		if (!*tmp)
			return -ENOMEM;
		fd = open(*tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			  0644 & ~mask);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	return fd < 0 ? -EEXIST : fd;
}
