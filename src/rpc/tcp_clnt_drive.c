// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Who reads the TCP client's socket: the client's I/O thread, or a caller
 * that waits for its own replies (rr_tcp_clnt_progress, a synchronous
 * call). A caller that reads runs the callbacks of what it read in its
 * own thread, so a reply costs no wake-up of another thread: the same
 * choice the RDMA client makes (rr_clnt_progress), and what a fair
 * comparison between the two transports needs.
 *
 * One reader at a time: the role (c->rx_busy, under c->mu) guards the
 * reassembler and the staging buffer. The socket stays open while a
 * caller reads: only the I/O thread closes it, and not while the role is
 * taken. While callers read, the I/O thread leaves the socket's input
 * alone for DRIVE_SLICE_MS after the last of them, so that it does not
 * wake for bytes someone else reads; after that it reads again, so that
 * async calls complete with nobody driving.
 */
#include "rpc/tcp_clnt.h"

#include "base/clock.h"
#include "rpc/api.h"

#include <errno.h>
#include <poll.h>
#include <time.h>

/* Takes the role for the I/O thread; false when a caller has it. */
bool rr__tc_rx_take_io(struct rr_tcp_clnt *c)
{
	bool got;

	pthread_mutex_lock(&c->mu);
	got = !c->rx_busy;
	c->rx_busy = true;
	pthread_mutex_unlock(&c->mu);
	return got;
}

/* Caller holds c->mu. Threads waiting for the role learn it is free. */
static void rx_release(struct rr_tcp_clnt *c, uint32_t completed)
{
	c->rx_busy = false;
	c->completed += completed;
	if (c->rx_waiters)
		pthread_cond_broadcast(&c->rx_cv);
	/* A lost connection's socket waits for its reader to close it. */
	if (c->state == TC_LOST)
		rr__tc_wake(c);
}

void rr__tc_rx_release_io(struct rr_tcp_clnt *c, uint32_t completed)
{
	pthread_mutex_lock(&c->mu);
	rx_release(c, completed);
	pthread_mutex_unlock(&c->mu);
}

/* Caller holds c->mu. Should the I/O thread watch for input? */
bool rr__tc_io_reads(const struct rr_tcp_clnt *c, uint64_t now)
{
	if (c->rx_busy && c->rx_caller)
		return false;
	return !c->drove_ms || now - c->drove_ms >= DRIVE_SLICE_MS;
}

/*
 * Reads until at least one call completes or deadline; the role is
 * ours. Returns the calls completed here, or -ETIMEDOUT; -EAGAIN once fd
 * (>= 0) is readable.
 */
static int drive(struct rr_tcp_clnt *c, uint64_t deadline, int fd)
{
	struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN},
			      {.fd = fd, .events = POLLIN}};

	for (;;) {
		struct rr_call_list l = {0};
		bool ok = rr__tc_read_replies(c, &l);
		uint64_t now;
		uint32_t n;

		if (!ok) {
			pthread_mutex_lock(&c->mu);
			rr__tc_conn_lost(c, &l);
			pthread_mutex_unlock(&c->mu);
		}
		n = l.n;
		rr__call_list_run(&l);
		if (n)
			return (int)n;
		if (!ok)
			return -ETIMEDOUT; /* the I/O thread takes it on */
		now = rr_mono_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		/* the socket's bytes go to the reassembler: nothing to poll */
		if (poll(p, 2, (int)(deadline - now)) < 0 && errno != EINTR)
			return -ETIMEDOUT;
		if (p[1].revents && !p[0].revents)
			return -EAGAIN;
	}
}

/* The role's condition variable runs on the monotonic clock. */
static void mono_in(struct timespec *ts, uint64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/*
 * Waits (c->mu held) until the role is free or someone else completed a
 * call since seen; true in the second case.
 */
static bool wait_role(struct rr_tcp_clnt *c, uint64_t seen, uint64_t deadline)
{
	while ((c->rx_busy || c->state != TC_UP) && c->completed == seen) {
		struct timespec ts;
		uint64_t now = rr_mono_ms();

		if (now >= deadline || rr__tc_ended(c) || c->stopping)
			break;
		mono_in(&ts, deadline - now);
		c->rx_waiters++;
		pthread_cond_timedwait(&c->rx_cv, &c->mu, &ts);
		c->rx_waiters--;
	}
	return c->completed != seen;
}

/*
 * rr_tcp_clnt_progress; with fd >= 0, rr_rpc_clnt_progress_fd, which does
 * not wait for the role.
 */
int rr__tc_progress(struct rr_tcp_clnt *c, int timeout_ms, int fd)
{
	uint64_t deadline =
		rr_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	uint64_t seen;
	int rc;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->mu);
	seen = c->completed;
	/*
	 * A caller that waits for the role wants to read: the I/O thread
	 * leaves the input alone from its next poll on. Otherwise a reading
	 * streak of the I/O thread (replies arriving while the calls went
	 * out) keeps the role, the caller only ever sees calls completed
	 * elsewhere, and never reads itself.
	 */
	c->drove_ms = rr_mono_ms();
	if (fd >= 0 && (c->rx_busy || c->state != TC_UP) && !rr__tc_ended(c)) {
		pthread_mutex_unlock(&c->mu);
		return rr__rpc_wait_fd(fd, timeout_ms);
	}
	if (fd < 0 && wait_role(c, seen, deadline)) {
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	if (c->rx_busy || c->state != TC_UP) {
		rc = rr__tc_ended(c) ? -ECONNRESET : -ETIMEDOUT;
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	c->rx_busy = c->rx_caller = true;
	c->drove_ms = rr_mono_ms();
	pthread_mutex_unlock(&c->mu);
	rc = drive(c, deadline, fd);
	pthread_mutex_lock(&c->mu);
	c->rx_caller = false;
	c->drove_ms = rr_mono_ms();
	rx_release(c, rc > 0 ? (uint32_t)rc : 0);
	pthread_mutex_unlock(&c->mu);
	return rc > 0 ? 0 : rc;
}

int rr_tcp_clnt_progress(struct rr_tcp_clnt *c, int timeout_ms)
{
	return rr__tc_progress(c, timeout_ms, -1);
}
