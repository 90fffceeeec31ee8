// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Raw TCP baseline: the same operation shape over plain loopback sockets, in
 * the same process/thread placement as the fabric run (client in the parent,
 * peer in a forked child), so the ratio compares transports, not setups.
 *
 * Every operation is "send req_bytes, count it done when resp_bytes came
 * back", with depth operations in flight:
 *   write: SIZE bytes out, 8-byte ack back (a completion signal the RDMA
 *          Write does not even need, but TCP has no other one);
 *   read:  8-byte request out, SIZE bytes back;
 *   send:  SIZE bytes out, SIZE bytes echoed back.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#define TCP_ACK_BYTES 8
#define TCP_MIN_BUF   (64 * 1024)

struct tcp_shape {
	uint32_t req;  /* bytes the client sends per operation */
	uint32_t resp; /* bytes that complete it */
};

static struct tcp_shape tcp_shape(const struct bench_opts *o)
{
	switch (o->op) {
	case BENCH_OP_WRITE:
		return (struct tcp_shape){o->size, TCP_ACK_BYTES};
	case BENCH_OP_READ:
		return (struct tcp_shape){TCP_ACK_BYTES, o->size};
	default:
		return (struct tcp_shape){o->size, o->size};
	}
}

static size_t buf_len(uint32_t unit)
{
	return unit > TCP_MIN_BUF ? unit : TCP_MIN_BUF;
}

static void *buf_alloc(size_t len)
{
	void *p = malloc(len);

	/* Touch every page now so page faults are not measured. */
	if (p)
		memset(p, 0xa5, len);
	return p;
}

static int set_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	return 0;
}

/* ------------------------------------------------------------- the peer */

static int peer_listen(const struct bench_opts *o, int *lfd_out, uint16_t *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int one = 1, lfd;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	bench_sockaddr(o, 0, &sin);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len)) {
		int err = -errno;

		close(lfd);
		return err;
	}
	*lfd_out = lfd;
	*port = ntohs(sin.sin_port);
	return 0;
}

static int write_all(int fd, const char *buf, size_t buflen, uint64_t total)
{
	while (total) {
		size_t chunk = total < buflen ? total : buflen;
		ssize_t n = send(fd, buf, chunk, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		total -= (uint64_t)n;
	}
	return 0;
}

/* Answers each complete request; partial requests carry over. */
static int peer_serve(int fd, struct tcp_shape s)
{
	size_t rxlen = buf_len(s.req), txlen = buf_len(s.resp);
	char *rx = buf_alloc(rxlen), *tx = buf_alloc(txlen);
	uint64_t have = 0;
	int err = rx && tx ? 0 : -ENOMEM;

	while (!err) {
		ssize_t n;

		err = bench_wait_fd(fd, POLLIN, BENCH_WAIT_MS);
		if (err)
			break;
		n = recv(fd, rx, rxlen, 0);
		if (n == 0)
			break;
		if (n < 0) {
			err = errno == EINTR ? 0 : -errno;
			continue;
		}
		have += (uint64_t)n;
		err = write_all(fd, tx, txlen, have / s.req * s.resp);
		have %= s.req;
	}
	free(rx);
	free(tx);
	return err;
}

/* Announces the port, then accepts the client's one connection. */
static int peer_accept(const struct bench_opts *o, int notify_fd, int *fd)
{
	uint16_t port = 0; /* gcc cannot tell that -errno is never 0 */
	int lfd = -1, err;

	err = peer_listen(o, &lfd, &port);
	if (err)
		return err;
	err = bench_peer_notify_port(notify_fd, port);
	if (!err)
		err = bench_wait_fd(lfd, POLLIN, BENCH_WAIT_MS);
	if (!err) {
		*fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		err = *fd < 0 ? -errno : set_nodelay(*fd);
		if (err && *fd >= 0)
			close(*fd);
	}
	close(lfd);
	return err;
}

static int tcp_peer(const struct bench_opts *o, int notify_fd)
{
	int fd, err;

	err = peer_accept(o, notify_fd, &fd);
	if (err) {
		fprintf(stderr, "tcp peer: accept: %s\n", strerror(-err));
		return err;
	}
	err = peer_serve(fd, tcp_shape(o));
	if (err)
		fprintf(stderr, "tcp peer: %s\n", strerror(-err));
	close(fd);
	return err;
}

/* ----------------------------------------------------------- the client */

struct tcp_client {
	const struct bench_opts *o;
	struct tcp_shape s;
	int fd;
	char *tx, *rx;
	size_t txlen, rxlen;
	uint64_t *t_post; /* ring of post times, depth entries */
	uint64_t posted, done;
	uint64_t last; /* time of the last completion */
	uint64_t out;  /* bytes queued but not yet written */
	uint64_t in;   /* bytes of the current response received */
	bool stopping;
	struct bench_result *r;
	struct bench_progress prog;
};

static int client_connect(struct tcp_client *c, uint16_t port)
{
	struct sockaddr_in sin;

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	bench_sockaddr(c->o, port, &sin);
	if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)))
		return -errno;
	return set_nodelay(c->fd);
}

static void client_post(struct tcp_client *c, uint64_t now)
{
	while (!c->stopping && c->posted - c->done < c->o->depth) {
		c->t_post[c->posted % c->o->depth] = now;
		c->posted++;
		c->out += c->s.req;
	}
}

/*
 * MSG_DONTWAIT everywhere: the client must keep reading responses while its
 * own writes stall, or both ends could block writing to each other.
 * Returns 1 if bytes moved, 0 if it would block, or a negative errno.
 */
static int client_write(struct tcp_client *c)
{
	size_t chunk = c->out < c->txlen ? c->out : c->txlen;
	ssize_t n;

	if (!chunk)
		return 0;
	n = send(c->fd, c->tx, chunk, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	c->out -= (uint64_t)n;
	return 1;
}

static void client_complete(struct tcp_client *c, uint64_t now)
{
	while (c->in >= c->s.resp) {
		uint64_t t = c->t_post[c->done % c->o->depth];

		c->in -= c->s.resp;
		c->done++;
		bench_hist_record(&c->r->hist, now - t);
		c->r->ops++;
		c->r->bytes += c->o->size;
		c->last = now;
	}
}

static int client_read(struct tcp_client *c)
{
	ssize_t n = recv(c->fd, c->rx, c->rxlen, MSG_DONTWAIT);

	if (n == 0)
		return -ECONNRESET; /* the peer must not close first */
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	c->in += (uint64_t)n;
	client_complete(c, bench_now_ns());
	return 1;
}

static int client_step(struct tcp_client *c)
{
	int wrote, got;

	wrote = client_write(c);
	if (wrote < 0)
		return wrote;
	got = client_read(c);
	if (got < 0)
		return got;
	if (wrote || got)
		return 0;
	return bench_wait_fd(c->fd, POLLIN | (c->out ? POLLOUT : 0),
			     BENCH_WAIT_MS);
}

static int client_loop(struct tcp_client *c)
{
	uint64_t start = bench_now_ns(), now = start;
	uint64_t end = start + (uint64_t)(c->o->seconds * 1e9);
	int err = 0;

	bench_progress_init(&c->prog, "tcp", c->o->seconds, start);
	c->last = start;
	for (;;) {
		/*
		 * Decide to stop and test for the end with the same clock
		 * reading: a last step that drained every operation while
		 * "now" crossed the end must end the loop here, not leave
		 * client_step() polling for responses that nobody owes us.
		 */
		c->stopping = now >= end;
		if (c->stopping && c->done == c->posted)
			break;
		client_post(c, now);
		err = client_step(c);
		if (err)
			break;
		now = bench_now_ns();
		bench_progress_tick(&c->prog, now, c->r->ops, c->r->bytes);
	}
	bench_progress_done(&c->prog);
	c->r->elapsed_s = (double)(c->last - start) / 1e9;
	return err;
}

/* Half-close and wait for the peer's EOF, so it exits on its own. */
static int client_finish(struct tcp_client *c)
{
	int err;

	if (shutdown(c->fd, SHUT_WR))
		return -errno;
	for (;;) {
		ssize_t n;

		err = bench_wait_fd(c->fd, POLLIN, BENCH_WAIT_MS);
		if (err)
			return err;
		n = recv(c->fd, c->rx, c->rxlen, 0);
		if (n == 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			return -EPROTO; /* a response nobody asked for */
	}
}

static int client_init(struct tcp_client *c, const struct bench_opts *o,
		       struct bench_result *r)
{
	memset(c, 0, sizeof(*c));
	c->o = o;
	c->r = r;
	c->fd = -1;
	c->s = tcp_shape(o);
	c->txlen = buf_len(c->s.req);
	c->rxlen = buf_len(c->s.resp);
	c->tx = buf_alloc(c->txlen);
	c->rx = buf_alloc(c->rxlen);
	c->t_post = calloc(o->depth, sizeof(*c->t_post));
	return c->tx && c->rx && c->t_post ? 0 : -ENOMEM;
}

static void client_fini(struct tcp_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->tx);
	free(c->rx);
	free(c->t_post);
}

static int client_run(struct tcp_client *c, uint16_t port)
{
	int err;

	err = client_connect(c, port);
	if (err) {
		fprintf(stderr, "tcp: connect to %s:%u: %s\n", c->o->addr_str,
			port, strerror(-err));
		return err;
	}
	err = client_loop(c);
	if (err) {
		fprintf(stderr, "tcp: %s with %llu operations in flight\n",
			strerror(-err),
			(unsigned long long)(c->posted - c->done));
		return err;
	}
	err = client_finish(c);
	if (err)
		fprintf(stderr, "tcp: close: %s\n", strerror(-err));
	return err;
}

int bench_tcp_run(const struct bench_opts *o, struct bench_result *r)
{
	struct bench_peer peer;
	struct tcp_client c;
	uint16_t port;
	int err, perr;

	err = client_init(&c, o, r);
	if (!err)
		err = bench_peer_spawn(&peer, tcp_peer, o);
	if (err) {
		fprintf(stderr, "tcp: start: %s\n", strerror(-err));
		client_fini(&c);
		return err;
	}
	err = bench_peer_port(&peer, &port, "tcp");
	if (!err) {
		r->port = port;
		err = client_run(&c, port);
	}
	client_fini(&c);
	perr = bench_peer_reap(&peer, "tcp");
	r->done = !err && !perr;
	return err ? err : perr;
}
