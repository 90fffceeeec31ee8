/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Server worker pool: handlers that may block (file I/O) run here, off the
 * loop thread, so one slow call never stalls the transport.
 *
 * A call reaches a worker with its reply's resources already reserved
 * (svc_call.c), so the worker runs the handler without any lock, then
 * takes s->mu once to post the reply and give the receive back. The
 * connection cannot be freed meanwhile: cn->running keeps the loop from
 * closing it (svc.c), even when it has died.
 *
 * Each worker owns its result buffers (struct svc_scratch). A hand-off
 * costs a thread wake-up (tens of microseconds on a loaded machine), which
 * is why opts.threads = 0, handlers inline in the loop, stays available,
 * and why calls whose handlers can tell they would not block (a program's
 * nowait_procs) are run in the loop first and reach a worker only when
 * their handler defers.
 *
 * When handlers change their thread's credentials and the device checks
 * them when posting (s->post_in_loop), a worker may not post: it queues the
 * finished call on s->ready, wakes the loop, and waits until the loop has
 * posted the reply (which still reads the worker's scratch). Two more
 * wake-ups per call, paid only there.
 */
#include "rpcrdma/svc.h"
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int rr__svc_scratch_alloc(struct svc_scratch *sc, size_t max_bulk)
{
	sc->res = rr_malloc(SVC_RES_SCRATCH);
	sc->bulk = rr_malloc(max_bulk);
	if (sc->res && sc->bulk)
		return 0;
	rr__svc_scratch_free(sc);
	return -ENOMEM;
}

void rr__svc_scratch_free(struct svc_scratch *sc)
{
	free(sc->res);
	free(sc->bulk);
	sc->res = sc->bulk = NULL;
}

void rr__svc_pool_submit(struct rr_svc *s, struct svc_req *r)
{
	rr__workq_push(&s->pool.q, &r->work);
}

/* The next call to run, or NULL when the pool is stopping. */
static struct svc_req *take(struct svc_pool *p)
{
	struct rr_work *w = rr__workq_pop(&p->q);

	return w ? rr_container_of(w, struct svc_req, work) : NULL;
}

/* post_in_loop: the loop thread posts r's reply; we wait for that. */
static void hand_to_loop(struct rr_svc *s, struct svc_req *r)
{
	static const uint64_t one = 1;
	bool posted = false;

	r->posted = &posted;
	r->worknext = NULL;
	if (s->ready_tail) {
		/* the loop, woken by the first, takes the whole list */
		s->ready_tail->worknext = r;
	} else {
		s->ready_head = r;
		if (write(s->kick_fd, &one, sizeof(one)) < 0) {
			/* only at 2^64-1 pending: then it is readable */
		}
	}
	s->ready_tail = r;
	while (!posted)
		pthread_cond_wait(&s->posted_cv, &s->mu);
}

/* The loop thread (s->mu held): posts what the workers finished. */
void rr__svc_reply_ready(struct rr_svc *s)
{
	struct svc_req *r;
	bool any = false;

	while ((r = s->ready_head)) {
		struct svc_conn *cn = r->conn;

		s->ready_head = r->worknext;
		if (!s->ready_head)
			s->ready_tail = NULL;
		cn->running--;
		rr__svc_reply(cn, r);
		*r->posted = true;
		r->posted = NULL;
		rr__svc_finish(cn, r);
		any = true;
	}
	if (any)
		pthread_cond_broadcast(&s->posted_cv);
}

bool rr__svc_pool_busy(struct rr_svc *s)
{
	bool busy;

	pthread_mutex_lock(&s->pool.mu);
	busy = s->pool.live > 0;
	pthread_mutex_unlock(&s->pool.mu);
	return busy;
}

static void *worker_main(void *arg)
{
	struct rr_svc *s = arg;
	struct svc_pool *p = &s->pool;
	struct svc_scratch *sc;
	struct svc_req *r;
	uint32_t idx;

	pthread_setname_np(pthread_self(), "rr-svc-worker");

	pthread_mutex_lock(&p->mu);
	idx = p->started++;
	p->live++;
	pthread_mutex_unlock(&p->mu);
	sc = &p->scratch[idx];
	while ((r = take(p))) {
		struct svc_conn *cn = r->conn;

		rr__svc_run_handler(s, r, sc);
		pthread_mutex_lock(&s->mu);
		if (s->post_in_loop) {
			hand_to_loop(s, r);
		} else {
			cn->running--;
			rr__svc_reply(cn, r);
			rr__svc_finish(cn, r);
			rr__svc_resume(s);
		}
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_lock(&p->mu);
	p->live--;
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int rr__svc_pool_start(struct rr_svc *s, uint32_t n)
{
	struct svc_pool *p = &s->pool;
	int rc = 0;

	pthread_mutex_init(&p->mu, NULL);
	rr__workq_init(&p->q);
	p->threads = rr_calloc(n, sizeof(*p->threads));
	p->scratch = rr_calloc(n, sizeof(*p->scratch));
	if (!p->threads || !p->scratch)
		return -ENOMEM;
	p->cap = n;
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = rr__svc_scratch_alloc(&p->scratch[i], s->o.max_bulk);
	for (uint32_t i = 0; i < n && !rc; i++) {
		rc = -pthread_create(&p->threads[i], NULL, worker_main, s);
		if (!rc)
			p->n++;
	}
	return rc;
}

/* Stops the workers once they have run every call queued to them. */
void rr__svc_pool_stop(struct rr_svc *s)
{
	struct svc_pool *p = &s->pool;

	if (!p->threads && !p->scratch)
		return;
	rr__workq_stop(&p->q);
	for (uint32_t i = 0; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	for (uint32_t i = 0; p->scratch && i < p->cap; i++)
		rr__svc_scratch_free(&p->scratch[i]);
	free(p->threads);
	free(p->scratch);
	p->threads = NULL;
	p->scratch = NULL;
	p->n = 0;
	rr__workq_fini(&p->q);
	pthread_mutex_destroy(&p->mu);
}
