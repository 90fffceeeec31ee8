// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A writer that spans a server restart, for mount.sh's restart test:
 * writes the first half of SRC to DEST (on the mount), says "half" on
 * stdout, waits until the file GO exists (the server was restarted), writes
 * the rest, and closes, reporting close's error: the COMMIT behind it
 * sees a new write verifier, and what was written before the restart must
 * be sent again from the adapter's log.
 *
 * usage: restart_writer SRC DEST GO   (exit 0, or 1 saying what failed)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GO_WAIT_MS (60 * 1000)

static int fail(const char *what)
{
	fprintf(stderr, "restart_writer: %s: %s\n", what, strerror(errno));
	return 1;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	char *buf = NULL;

	if (fd >= 0 && !fstat(fd, &st) && (buf = malloc((size_t)st.st_size)))
		*len = read(fd, buf, (size_t)st.st_size) == st.st_size
			       ? (size_t)st.st_size
			       : 0;
	if (fd >= 0)
		close(fd);
	return buf;
}

int main(int argc, char **argv)
{
	size_t len = 0, half;
	char *src;
	int fd, waited = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: restart_writer SRC DEST GO\n");
		return 2;
	}
	src = slurp(argv[1], &len);
	if (!src || !len)
		return fail(argv[1]);
	half = len / 2;
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write_all(fd, src, half))
		return fail("first half");
	printf("half\n");
	fflush(stdout);
	/* a poll of a condition (the file), not a sleep standing for one */
	while (access(argv[3], F_OK) && waited < GO_WAIT_MS) {
		poll(NULL, 0, 20);
		waited += 20;
	}
	if (waited >= GO_WAIT_MS)
		return fail("no go");
	if (write_all(fd, src + half, len - half))
		return fail("second half");
	if (close(fd))
		return fail("close");
	free(src);
	return 0;
}
