/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Socket plumbing shared by the TCP client and server (and the bound
 * port, the UDP server's too): non-blocking sends with an output queue,
 * so that no thread ever blocks on a slow peer.
 *
 * A record goes out with one sendmsg of its pieces (header, XDR, bulk)
 * when nothing is queued before it. Whatever the socket did not take is
 * copied into the queue: the pieces belong to the caller (a handler's
 * bulk buffer, a call's arguments) and may be reused the moment we return,
 * while the stream must still carry the rest of the record, in order.
 * Whoever owns the poll loop flushes the queue when the socket is writable.
 *
 * A large piece need not be copied: a caller that can take another buffer
 * lends it instead (rr__outq_loan), and the queue gives it back through
 * give_back once sent, or dropped with the queue. A server's 1 MiB READ
 * reply that the socket takes only part of would otherwise cost a fresh
 * 1 MiB allocation, its page faults and a copy, per reply.
 *
 * The caller serialises access to one queue (its connection's lock).
 */
#ifndef RR_RPC_TCP_IO_H
#define RR_RPC_TCP_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct rr__outbuf;

/*
 * Entries sent are kept for the next ones (at most OUTQ_SPARES), so that
 * a peer that keeps the socket full does not cost an allocation per
 * record: those whose room is at most spare_max bytes (0: none). An
 * entry's room is OUTQ_SMALL, or spare_max for anything larger up to it,
 * so that any later piece fits a kept one. A client sets spare_max to its
 * largest record, and so keeps at most OUTQ_SPARES of those; a server
 * sets it to OUTQ_SMALL, keeping what holds its replies' headers and
 * lent pieces, its bulk going out lent.
 */
#define OUTQ_SPARES 8
/* The least room an entry gets: a record's header and small pieces. */
#define OUTQ_SMALL 256

struct rr__outq {
	struct rr__outbuf *head, *tail;
	size_t bytes; /* queued, not yet sent */
	/* takes back a lent buffer; NULL: nothing is ever lent */
	void (*give_back)(void *arg, void *buf);
	void *arg;
	struct rr__outbuf *spares;
	unsigned nspares;
	size_t spare_max;
};

/*
 * iov[idx] lies in buf, which the queue may keep until it is sent if
 * swap(arg) says the caller can do without it (it has found itself
 * another buffer); else the piece is copied like the rest.
 */
struct rr__outq_loan {
	int idx;
	void *buf;
	bool (*swap)(void *arg);
	void *arg;
};

/*
 * Sends iov[0..n) after anything queued: what the socket does not take now
 * is queued. Returns 0, or a negative errno when the connection is broken
 * (-EPIPE, -ECONNRESET, ...) or -ENOMEM.
 */
int rr__outq_send(int fd, struct rr__outq *q, const struct iovec *iov, int n);
/* The same, lending the loan's piece rather than copying it if queued. */
int rr__outq_send_lent(int fd, struct rr__outq *q, const struct iovec *iov,
		       int n, const struct rr__outq_loan *loan);
/*
 * Queues iov[0..n) without sending: a loop that answers several calls of
 * one read sends their replies together with one flush. 0 or -ENOMEM.
 */
int rr__outq_put(struct rr__outq *q, const struct iovec *iov, int n);
int rr__outq_put_lent(struct rr__outq *q, const struct iovec *iov, int n,
		      const struct rr__outq_loan *loan);
/* Sends what is queued, as far as the socket takes it; 0 or -errno. */
int rr__outq_flush(int fd, struct rr__outq *q);
/* Drops what is queued and the spares: empty, as a zeroed queue is. */
void rr__outq_free(struct rr__outq *q);

/* O_NONBLOCK and TCP_NODELAY (RPC is request/response: no Nagle delay). */
int rr__tcp_sock_setup(int fd);
/* The port fd is bound to (TCP or UDP): 0 or a negative errno. */
int rr__sock_port(int fd, uint16_t *port);

#endif
