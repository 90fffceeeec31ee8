// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One process taking, waiting for or testing a lock on a file, for
 * tests/fuse/locks.sh, which reads what it prints and drives it through
 * its stdin.
 *
 *   lock_probe hold|wait|test|flock|flockwait PATH [r|w START LEN]
 *
 * hold: fcntl F_SETLK; prints "locked", or "busy ERRNO" and exits 1.
 * wait: prints "waiting SYS_fcntl" (for the script to see it blocked in
 *       that system call), then F_SETLKW; "locked" or "error ERRNO".
 * test: F_GETLK; prints "unlocked" or "r|w PID START LEN" and exits.
 * flock, flockwait: flock LOCK_EX (with LOCK_NB for flock), as hold and
 *       wait.
 * Once locked it reads lines: "close" closes the file (printing
 * "closed"), end of input exits; either way the lock must go.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

static void say(const char *fmt, long a)
{
	printf(fmt, a);
	fflush(stdout);
}

static int run(const char *mode, int fd, struct flock *l)
{
	if (!strcmp(mode, "test")) {
		if (fcntl(fd, F_GETLK, l))
			return say("error %ld\n", errno), 1;
		if (l->l_type == F_UNLCK)
			return say("unlocked\n", 0), 0;
		printf("%c %ld %lld %lld\n", l->l_type == F_WRLCK ? 'w' : 'r',
		       (long)l->l_pid, (long long)l->l_start,
		       (long long)l->l_len);
		return 0;
	}
	if (!strcmp(mode, "wait") || !strcmp(mode, "flockwait"))
		say("waiting %ld\n", SYS_fcntl);
	if (!strcmp(mode, "hold") || !strcmp(mode, "wait")) {
		if (fcntl(fd, mode[0] == 'h' ? F_SETLK : F_SETLKW, l))
			return say("busy %ld\n", errno), 1;
	} else if (flock(fd,
			 LOCK_EX | (!strcmp(mode, "flock") ? LOCK_NB : 0))) {
		return say("busy %ld\n", errno), 1;
	}
	say("locked\n", 0);
	return -1;
}

int main(int argc, char **argv)
{
	struct flock l = {.l_whence = SEEK_SET};
	char line[64];
	int fd, rc;

	if (argc != 3 && argc != 6) {
		fprintf(stderr, "usage: %s MODE PATH [r|w START LEN]\n",
			argv[0]);
		return 2;
	}
	fd = open(argv[2], O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[2]);
		return 2;
	}
	if (argc == 6) {
		l.l_type = argv[3][0] == 'w' ? F_WRLCK : F_RDLCK;
		l.l_start = atoll(argv[4]);
		l.l_len = atoll(argv[5]);
	}
	rc = run(argv[1], fd, &l);
	if (rc >= 0)
		return rc;
	while (fgets(line, sizeof(line), stdin))
		if (!strncmp(line, "close", 5) && fd >= 0) {
			close(fd);
			fd = -1;
			say("closed\n", 0);
		}
	return 0;
}
