/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control socket's thread: one poll loop over the listener, a pipe
 * that stops it, and at most MAX_CLIENTS connections, each non-blocking
 * with a deadline. A request is one line of at most REQ_MAX bytes; the
 * answer is rendered whole into memory (a few tens of KiB) and sent as
 * the client takes it. Past MAX_CLIENTS the listener is not polled, so
 * newcomers wait in its backlog rather than push anyone out.
 */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 8
#define REQ_MAX	    64
#define DEADLINE_MS 5000

struct client {
	int fd;
	uint64_t deadline;
	char req[REQ_MAX];
	size_t req_len;
	char *out; /* the answer, once the request is complete */
	size_t out_len, sent;
};

struct tool_control {
	int lfd, wake[2];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t th;
	bool running, bound;
	tool_render_fn render;
	void *arg;
	struct client cl[MAX_CLIENTS];
	_Atomic unsigned long refused;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A socket at path that nobody answers on is left from a crash. */
static int clear_stale(const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, rc;

	if (lstat(sun->sun_path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (!rc)
		return -EADDRINUSE;
	return unlink(sun->sun_path) && errno != ENOENT ? -errno : 0;
}

static int bind_listen(struct tool_control *c)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	mode_t old;
	int rc;

	memcpy(sun.sun_path, c->path, sizeof(c->path));
	rc = clear_stale(&sun);
	if (rc)
		return rc;
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->lfd < 0)
		return -errno;
	/* the socket is born 0600: no moment where others could connect */
	old = umask(0177);
	rc = bind(c->lfd, (struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
	umask(old);
	c->bound = !rc;
	if (!rc && listen(c->lfd, 16))
		rc = -errno;
	return rc;
}

int tool_control_open(const char *path, struct tool_control **out)
{
	struct tool_control *c;
	int rc;

	if (strlen(path) >= sizeof(c->path))
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->lfd = c->wake[0] = c->wake[1] = -1;
	strcpy(c->path, path);
	for (int i = 0; i < MAX_CLIENTS; i++)
		c->cl[i].fd = -1;
	rc = bind_listen(c);
	if (!rc && pipe2(c->wake, O_CLOEXEC | O_NONBLOCK))
		rc = -errno;
	if (rc) {
		tool_control_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

static void drop(struct client *k)
{
	close(k->fd);
	free(k->out);
	memset(k, 0, sizeof(*k));
	k->fd = -1;
}

static void answer(struct tool_control *c, struct client *k, const char *req)
{
	FILE *f = open_memstream(&k->out, &k->out_len);

	if (!f) {
		drop(k);
		return;
	}
	if (!strcmp(req, "stats") || !strcmp(req, "stats json"))
		c->render(c->arg, f, req[5] != '\0');
	else {
		atomic_fetch_add(&c->refused, 1);
		fputs("error: unknown request (want \"stats\" or "
		      "\"stats json\")\n",
		      f);
	}
	if (fclose(f)) {
		k->out = NULL;
		drop(k);
	}
}

/* Reads what came; a complete line (or the peer's end) gets its answer. */
static void take_request(struct tool_control *c, struct client *k)
{
	ssize_t n = recv(k->fd, k->req + k->req_len,
			 sizeof(k->req) - 1 - k->req_len, MSG_DONTWAIT);
	char *eol;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0 || (n == 0 && !k->req_len)) {
		drop(k);
		return;
	}
	if (memchr(k->req + k->req_len, '\0', (size_t)n)) {
		atomic_fetch_add(&c->refused, 1); /* not a line of text */
		drop(k);
		return;
	}
	k->req_len += (size_t)n;
	k->req[k->req_len] = '\0';
	eol = strpbrk(k->req, "\r\n");
	if (!eol && n && k->req_len < sizeof(k->req) - 1)
		return; /* more to come */
	if (eol)
		*eol = '\0';
	else if (n) { /* REQ_MAX bytes and no end of line */
		atomic_fetch_add(&c->refused, 1);
		drop(k);
		return;
	}
	answer(c, k, k->req);
}

static void send_answer(struct client *k)
{
	ssize_t n = send(k->fd, k->out + k->sent, k->out_len - k->sent,
			 MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0)
		k->sent = k->out_len; /* gone: nothing more to tell it */
	else
		k->sent += (size_t)n;
	if (k->sent == k->out_len)
		drop(k);
}

static void accept_one(struct tool_control *c)
{
	int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (c->cl[i].fd < 0) {
			c->cl[i].fd = fd;
			c->cl[i].deadline = now_ms() + DEADLINE_MS;
			return;
		}
	close(fd); /* not reached: the listener is polled only with room */
}

/* The poll set: wake pipe, listener when there is room, each client. */
static nfds_t poll_set(struct tool_control *c, struct pollfd *p, int *idx)
{
	nfds_t n = 1;
	bool room = false;

	p[0] = (struct pollfd){.fd = c->wake[0], .events = POLLIN};
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *k = &c->cl[i];

		room |= k->fd < 0;
		if (k->fd < 0)
			continue;
		idx[n] = i;
		p[n++] = (struct pollfd){.fd = k->fd,
					 .events = k->out ? POLLOUT : POLLIN};
	}
	if (room) {
		idx[n] = -1;
		p[n++] = (struct pollfd){.fd = c->lfd, .events = POLLIN};
	}
	return n;
}

static void expire(struct tool_control *c)
{
	uint64_t now = now_ms();

	for (int i = 0; i < MAX_CLIENTS; i++)
		if (c->cl[i].fd >= 0 && now >= c->cl[i].deadline) {
			if (!c->cl[i].out)
				atomic_fetch_add(&c->refused, 1);
			drop(&c->cl[i]);
		}
}

static void *serve(void *arg)
{
	struct tool_control *c = arg;
	struct pollfd p[MAX_CLIENTS + 2];
	int idx[MAX_CLIENTS + 2];

	for (;;) {
		nfds_t n = poll_set(c, p, idx);

		if (poll(p, n, 500) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		for (nfds_t i = 1; i < n; i++) {
			if (!p[i].revents)
				continue;
			if (idx[i] < 0)
				accept_one(c);
			else if (c->cl[idx[i]].out)
				send_answer(&c->cl[idx[i]]);
			else
				take_request(c, &c->cl[idx[i]]);
		}
		expire(c);
	}
	return NULL;
}

int tool_control_run(struct tool_control *c, tool_render_fn fn, void *arg)
{
	c->render = fn;
	c->arg = arg;
	if (pthread_create(&c->th, NULL, serve, c))
		return -EAGAIN;
	c->running = true;
	return 0;
}

unsigned long tool_control_refused(const struct tool_control *c)
{
	return atomic_load(&((struct tool_control *)c)->refused);
}

void tool_control_close(struct tool_control *c)
{
	if (!c)
		return;
	if (c->running) {
		(void)!write(c->wake[1], "x", 1);
		pthread_join(c->th, NULL);
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (c->cl[i].fd >= 0)
			drop(&c->cl[i]);
	/* unlinked first: a new listener may bind the path as soon as it
	 * is gone, and must never lose it to our unlink (mount_ctl.c) */
	if (c->bound)
		unlink(c->path);
	if (c->lfd >= 0)
		close(c->lfd);
	if (c->wake[0] >= 0)
		close(c->wake[0]);
	if (c->wake[1] >= 0)
		close(c->wake[1]);
	free(c);
}
