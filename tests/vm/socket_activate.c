// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Runs a program with listening sockets it is handed, as systemd's socket
 * activation does (LISTEN_FDS, LISTEN_PID, descriptors from 3): a Unix
 * stream socket at PATH and a TCP socket on each ADDRESS:PORT. For the guest
 * tests that need two rpcbinds on one machine, each for one of its
 * addresses (kclient-locks.sh): rpcbind, handed its sockets, binds no
 * wildcard TCP address of its own.
 *
 *   socket_activate PATH PORT ADDRESS[,ADDRESS...] PROGRAM [ARG...]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int die(const char *what)
{
	fprintf(stderr, "socket_activate: %s: %s\n", what, strerror(errno));
	return 1;
}

static int tcp_listener(const char *addr, int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0 || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 64))
		return -1;
	return fd;
}

static int unix_listener(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (fd < 0 || strlen(path) >= sizeof(sun.sun_path))
		return -1;
	strcpy(sun.sun_path, path);
	unlink(path);
	/* anyone may connect, as systemd's SocketMode= default: rpc.statd
	 * registers after dropping root */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    chmod(path, 0666) || listen(fd, 64))
		return -1;
	return fd;
}

/* fd onto the next descriptor from 3 */
static int hand_on(int fd, int *next)
{
	if (fd < 0 || dup2(fd, *next) != *next)
		return -1;
	if (fd != *next)
		close(fd);
	(*next)++;
	return 0;
}

int main(int argc, char **argv)
{
	char pid[16], n[16], *addrs, *a, *save = NULL;
	int next = 3;

	if (argc < 5) {
		fprintf(stderr, "usage: socket_activate PATH PORT "
				"ADDRESS[,ADDRESS...] PROGRAM [ARG...]\n");
		return 2;
	}
	/* above every descriptor they will take, so dup2 overwrites none */
	for (int fd = 3; fd < 64; fd++)
		close(fd);
	if (hand_on(unix_listener(argv[1]), &next))
		return die(argv[1]);
	addrs = argv[3];
	for (a = strtok_r(addrs, ",", &save); a; a = strtok_r(NULL, ",", &save))
		if (hand_on(tcp_listener(a, atoi(argv[2])), &next))
			return die(a);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(n, sizeof(n), "%d", next - 3);
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", n, 1);
	execvp(argv[4], argv + 4);
	return die(argv[4]);
}
