// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The mount's loop: one thread reads /dev/fuse and drives the transport
 * (rr_rpc_clnt_progress_fd), so that a READ taken from the kernel and its
 * reply from the server cost no wake-up of a second thread. Under
 * libfuse's multi-threaded loop a FUSE thread took each READ and the
 * driver thread (acall.c) its reply: 1.06 thread switches per 4 KiB
 * O_DIRECT READ at depth 16, where each costs tens of microseconds on a
 * paravirtualised host.
 *
 * The loop runs only what cannot keep it waiting: a READ that an
 * asynchronous call carries (acall.c), on a file with no write-behind
 * WRITE out (a READ first waits those out). Everything else goes, in its
 * buffer, to a worker, which runs it as libfuse's loop would; workers
 * start as they are needed, up to max_threads. Buffers are libfuse's own
 * (sized by it on first use) and kept for the mount's life: a 1 MiB
 * WRITE allocates nothing once its buffer has been used.
 *
 * A worker's synchronous call drives the transport itself while it waits
 * (rpc.h), so nothing waits for this thread; while it does, this thread
 * watches /dev/fuse alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "fpriv.h"
#include "nfs3/client/nfsc.h"

#define LOOP_SLACK   4	  /* buffers queued beyond the workers */
#define DRIVE_MS     100  /* one progress call's wait while calls are out */
#define IDLE_POLL_MS 1000 /* none out: how soon an exit is seen */
#define REQ_RUN	     16	  /* requests in a row before the replies' turn */

struct lbuf {
	struct fuse_buf b;
	struct lbuf *next;
};

struct loop {
	struct rrf *f;
	struct fuse_session *se;
	int fd;
	pthread_mutex_t mu;
	pthread_cond_t work; /* a worker's sleep */
	struct lbuf *bufs, *free;
	struct lbuf *head, **tail; /* for the workers */
	uint32_t nbufs, max_workers, workers;
	uint32_t idle, woken; /* asleep; of those, signalled for a buffer */
	pthread_t *tids;
	bool stop;
};

static void *worker(void *arg)
{
	struct loop *l = arg;

	pthread_setname_np(pthread_self(), "rr-fuse-worker");

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct lbuf *b = l->head;

		if (!b) {
			if (l->stop)
				break;
			l->idle++;
			pthread_cond_wait(&l->work, &l->mu);
			l->idle--;
			if (l->woken)
				l->woken--;
			continue;
		}
		l->head = b->next;
		if (!l->head)
			l->tail = &l->head;
		pthread_mutex_unlock(&l->mu);
		fuse_session_process_buf(l->se, &b->b);
		pthread_mutex_lock(&l->mu);
		b->next = l->free;
		l->free = b;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/*
 * Queues b for a worker, starting one if none is idle and room is left.
 * false: there is no worker and none could start; the caller runs it.
 */
static bool hand(struct loop *l, struct lbuf *b)
{
	bool ok = true;

	pthread_mutex_lock(&l->mu);
	if (l->idle > l->woken) { /* one not yet claimed by a signal */
		l->woken++;
		pthread_cond_signal(&l->work);
	} else if (l->workers < l->max_workers &&
		   !pthread_create(&l->tids[l->workers], NULL, worker, l)) {
		l->workers++;
	} else if (!l->workers) {
		ok = false;
	}
	if (ok) {
		b->next = NULL;
		*l->tail = b;
		l->tail = &b->next;
	}
	pthread_mutex_unlock(&l->mu);
	return ok;
}

/*
 * A free buffer. When every one is held by a worker or queued, the
 * transport is driven while they finish (a worker may wait for a READ or
 * WRITE of acall.c).
 */
static struct lbuf *take(struct loop *l)
{
	struct lbuf *b;

	pthread_mutex_lock(&l->mu);
	while (!(b = l->free) && !fuse_session_exited(l->se)) {
		pthread_mutex_unlock(&l->mu);
		rr_rpc_clnt_progress(l->f->n->x, 1);
		pthread_mutex_lock(&l->mu);
	}
	if (b)
		l->free = b->next;
	pthread_mutex_unlock(&l->mu);
	return b;
}

/* Whether b is a READ this thread may run (see the top). */
static bool runs_here(struct loop *l, const struct fuse_buf *b)
{
	const struct fuse_in_header *h = b->mem;
	const struct fuse_read_in *r = (const void *)(h + 1);

	if (b->flags & FUSE_BUF_IS_FD || b->size < sizeof(*h) ||
	    h->opcode != FUSE_READ ||
	    b->size < sizeof(*h) + offsetof(struct fuse_read_in, read_flags))
		return false;
	return rr__fuse_aread_ready(l->f, h->nodeid, r->size);
}

/*
 * Nothing to read from /dev/fuse: drive the calls out until a reply
 * comes or the kernel has a request, or, with none out, wait for one.
 */
static void wait_input(struct loop *l)
{
	struct pollfd p = {.fd = l->fd, .events = POLLIN};
	int rc = -ENOTCONN;

	if (rr__fuse_acalls_busy(l->f))
		rc = rr_rpc_clnt_progress_fd(l->f->n->x, DRIVE_MS, l->fd);
	if (rc == 0 || rc == -EAGAIN || rc == -ETIMEDOUT)
		return;
	/* none out, or the transport is down: /dev/fuse alone */
	(void)poll(&p, 1, rc == -ENOTCONN ? IDLE_POLL_MS : DRIVE_MS);
}

/*
 * A stream of requests that never leaves /dev/fuse empty would keep the
 * replies waiting: after REQ_RUN in a row, whatever has come back is
 * taken without waiting.
 */
static void replies_turn(struct loop *l, uint32_t *in_row)
{
	if (++*in_row < REQ_RUN)
		return;
	*in_row = 0;
	if (rr__fuse_acalls_busy(l->f))
		(void)rr_rpc_clnt_progress_fd(l->f->n->x, 0, l->fd);
}

static int run(struct loop *l)
{
	struct lbuf *b = NULL;
	uint32_t in_row = 0;
	int rc = 0;

	while (!fuse_session_exited(l->se)) {
		int r;

		if (!b && !(b = take(l)))
			break;
		r = fuse_session_receive_buf(l->se, &b->b);
		if (r == -EAGAIN || r == -EINTR) {
			in_row = 0;
			wait_input(l);
			continue;
		}
		if (r <= 0) {
			rc = r;
			/* the workers' calls end only once the session does */
			fuse_session_exit(l->se);
			break;
		}
		if (!runs_here(l, &b->b) && hand(l, b))
			b = NULL;
		else
			fuse_session_process_buf(l->se, &b->b);
		replies_turn(l, &in_row);
	}
	if (b) {
		pthread_mutex_lock(&l->mu);
		b->next = l->free;
		l->free = b;
		pthread_mutex_unlock(&l->mu);
	}
	return rc == -ENODEV ? 0 : rc; /* ENODEV: unmounted */
}

static void loop_fini(struct loop *l)
{
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	for (uint32_t i = 0; i < l->workers; i++)
		pthread_join(l->tids[i], NULL);
	for (uint32_t i = 0; i < l->nbufs; i++)
		free(l->bufs[i].b.mem);
	free(l->bufs);
	free(l->tids);
	pthread_cond_destroy(&l->work);
	pthread_mutex_destroy(&l->mu);
}

int rr__fuse_loop(struct rrf *f, struct fuse_session *se, unsigned max_threads)
{
	struct loop l = {.f = f, .se = se, .fd = fuse_session_fd(se)};
	int fl = fcntl(l.fd, F_GETFL), rc;

	if (fl < 0 || fcntl(l.fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	l.max_workers = max_threads;
	l.nbufs = max_threads + 1 + LOOP_SLACK;
	l.bufs = rr_calloc(l.nbufs, sizeof(*l.bufs));
	l.tids = rr_calloc(max_threads, sizeof(*l.tids));
	if (!l.bufs || !l.tids) {
		free(l.bufs);
		free(l.tids);
		return -ENOMEM;
	}
	for (uint32_t i = l.nbufs; i-- > 0;) {
		l.bufs[i].next = l.free;
		l.free = &l.bufs[i];
	}
	l.tail = &l.head;
	pthread_mutex_init(&l.mu, NULL);
	pthread_cond_init(&l.work, NULL);
	rr__fuse_acalls_loop_drives(f, true);
	rc = run(&l);
	rr__fuse_acalls_loop_drives(f, false);
	loop_fini(&l);
	return rc;
}
