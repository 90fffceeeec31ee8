// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * READs answered from their completions (nfs3/client/aread.h). The FUSE
 * thread that takes a READ starts the call and goes back to the kernel
 * for the next request; the thread that completes the call answers the
 * kernel. A synchronous pread kept each FUSE thread asleep until the
 * thread driving the transport woke it, so a READ cost the kernel's
 * wake-up of a FUSE thread and then ours: at depth 16, 3.7 thread
 * switches per 4 KiB READ, 49 us of the daemon's CPU each.
 *
 * A mount has AREAD_MAX of them, each with a buffer of rtmax + 1 KiB in
 * one slab registered once (so over RDMA the server writes the bytes
 * straight into it); the kernel is told to keep no more READs than that
 * in the background. A READ that finds none free, or is larger than
 * rtmax, goes the synchronous way. The slab is touched as READs use it:
 * at most AREAD_MAX * (rtmax + 1 KiB) of memory, 32 MiB at 1 MiB rsize.
 *
 * Nobody else drives the transport while a FUSE thread waits for no
 * call, so a thread of ours does (rr_rpc_clnt_progress) while READs are
 * out, and for a second after, so that a steady reader does not have to
 * wake it for every READ. Between slices it sends the READs a JUKEBOX
 * parked once their time has come, and ends the READs whose process is
 * dying (intr.c's rule: an INTERRUPT came and the thread has SIGKILL
 * pending) or whose session is ending.
 *
 * Each READ is held by a reference: the call's, and, while the driver
 * looks at it, the driver's; it goes back to the free list only when
 * both have let go, so a cancel never reaches a READ's next use.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "fpriv.h"
#include "nfs3/client/aread.h"

#define AREAD_MAX     32
#define DRIVE_PARK_MS 1000 /* idle this long, the driver sleeps untimed */
#define DRIVE_NAP_MS  10   /* the transport is down: progress fails at once */

struct fread {
	struct nfsc_aread a; /* first: on_done's argument is &a */
	struct freads *p;
	/* under p->mu */
	fuse_req_t req; /* NULL once answered */
	pid_t tid;
	bool hit;    /* an INTERRUPT came for req */
	bool parked; /* JUKEBOX: goes again at a.again_ms */
	uint32_t refs;
	struct fread *next; /* on the free list */
};

struct freads {
	struct rrf *f;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the driver's sleep */
	struct fread r[AREAD_MAX];
	struct fread *free;
	uint32_t out; /* READs not on the free list */
	bool stop, idle;
	uint64_t last_ms; /* the last READ's start */
	char *slab;
	size_t slab_len;
	bool reg;
	pthread_t driver;
};

static void put(struct freads *p, struct fread *r)
{
	pthread_mutex_lock(&p->mu);
	if (!--r->refs) {
		r->next = p->free;
		p->free = r;
		p->out--;
	}
	pthread_mutex_unlock(&p->mu);
}

/* Answers r's request: nothing of r is read after. */
static void answer(struct fread *r, int rc, const char *data, uint32_t got)
{
	struct freads *p = r->p;
	fuse_req_t req;

	pthread_mutex_lock(&p->mu);
	req = r->req;
	r->req = NULL;
	r->parked = false;
	pthread_mutex_unlock(&p->mu);
	if (rc == -ECANCELED) /* only the driver cancels: a dying caller */
		rc = -EINTR;
	if (rc)
		rr__fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, data, got);
	put(p, r);
}

static void on_done(struct nfsc_aread *a, int rc, const char *data,
		    uint32_t got)
{
	struct fread *r = (struct fread *)a;

	if (rc == NFSC_AREAD_PARKED) {
		pthread_mutex_lock(&r->p->mu);
		r->parked = true;
		pthread_mutex_unlock(&r->p->mu);
		return;
	}
	answer(r, rc, data, got);
}

static void on_interrupt(fuse_req_t req, void *data)
{
	struct fread *r = data;

	/* may come after the answer, even in r's next use: req tells */
	pthread_mutex_lock(&r->p->mu);
	if (r->req == req)
		r->hit = true;
	pthread_mutex_unlock(&r->p->mu);
}

/* ------------------------------------------------------------ the driver */

/* Whether r is to end now; the caller holds a reference. */
static bool doomed(struct freads *p, struct fread *r, bool ending)
{
	bool hit;

	pthread_mutex_lock(&p->mu);
	hit = r->hit;
	pthread_mutex_unlock(&p->mu);
	return ending || (hit && rr__fuse_dying(r->tid));
}

/*
 * The READs out that may have to end (ending: all) or whose JUKEBOX
 * time has come, each with a reference taken; how many.
 */
static uint32_t gather(struct freads *p, bool ending, uint64_t now,
		       struct fread **out)
{
	uint32_t n = 0;

	pthread_mutex_lock(&p->mu);
	for (uint32_t i = 0; i < AREAD_MAX; i++) {
		struct fread *r = &p->r[i];

		if (r->req &&
		    (ending || r->hit || (r->parked && r->a.again_ms <= now))) {
			r->refs++;
			out[n++] = r;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return n;
}

static void step(struct freads *p, struct fread *r, bool ending, uint64_t now)
{
	bool parked;
	int rc;

	pthread_mutex_lock(&p->mu);
	parked = r->parked && r->req;
	pthread_mutex_unlock(&p->mu);
	if (!parked) {
		if (doomed(p, r, ending))
			rr__nfsc_aread_cancel(&r->a);
	} else if (doomed(p, r, ending)) {
		answer(r, -EINTR, NULL, 0);
	} else if (r->a.again_ms <= now) {
		pthread_mutex_lock(&p->mu);
		r->parked = false;
		pthread_mutex_unlock(&p->mu);
		rc = rr__nfsc_aread_resend(&r->a);
		if (rc)
			answer(r, rc, NULL, 0);
	}
	put(p, r);
}

static void tend(struct freads *p)
{
	struct fread *got[AREAD_MAX];
	uint64_t now = rr_mono_ms();
	bool ending = fuse_session_exited(p->f->se);
	uint32_t n;

	pthread_mutex_lock(&p->mu);
	ending |= p->stop;
	pthread_mutex_unlock(&p->mu);
	n = gather(p, ending, now, got);
	for (uint32_t i = 0; i < n; i++)
		step(p, got[i], ending, now);
}

/* Caller holds mu. Waits up to ms (forever when ms < 0) for a signal. */
static void nap(struct freads *p, int ms)
{
	struct timespec ts;

	if (ms < 0) {
		pthread_cond_wait(&p->cv, &p->mu);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

static void *drive(void *arg)
{
	struct freads *p = arg;
	struct rr_rpc_clnt *x = p->f->n->x;

	pthread_mutex_lock(&p->mu);
	while (!p->stop || p->out) {
		uint64_t t0 = rr_mono_ms();
		int rc;

		if (!p->out && !p->stop && t0 - p->last_ms >= DRIVE_PARK_MS) {
			p->idle = true;
			nap(p, -1);
			p->idle = false;
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		rc = rr_rpc_clnt_progress(x, NFSC_ABORT_SLICE_MS);
		tend(p);
		pthread_mutex_lock(&p->mu);
		if (rc && rc != -ETIMEDOUT && rr_mono_ms() == t0)
			nap(p, DRIVE_NAP_MS);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ------------------------------------------------------------ the mount */

static struct fread *take(struct freads *p, fuse_req_t req)
{
	struct fread *r;

	pthread_mutex_lock(&p->mu);
	r = p->stop ? NULL : p->free;
	if (r) {
		p->free = r->next;
		p->out++;
		r->refs = 1;
		r->req = req;
		r->hit = r->parked = false;
		r->tid = fuse_req_ctx(req)->pid;
		p->last_ms = rr_mono_ms();
		if (p->idle)
			pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

bool rr__fuse_aread(struct rrf *f, fuse_req_t req, struct ofile *of,
		    size_t size, off_t off)
{
	struct freads *p = f->ar;
	struct fread *r;
	int rc;

	if (!p || !size || size > rr_nfs_max_read(f->n) || off < 0)
		return false;
	r = take(p, req);
	if (!r)
		return false;
	/* before the call: once it is out, req may be answered at any time */
	fuse_req_interrupt_func(req, on_interrupt, r);
	rc = rr__nfsc_aread_start(&r->a, of->f, (uint64_t)off, (uint32_t)size);
	if (!rc)
		return true;
	fuse_req_interrupt_func(req, NULL, NULL);
	pthread_mutex_lock(&p->mu);
	r->req = NULL;
	pthread_mutex_unlock(&p->mu);
	put(p, r);
	return false;
}

static void slab_init(struct freads *p, uint32_t rtmax)
{
	size_t stride = (size_t)rtmax + NFSC_AREAD_SLACK;

	p->slab_len = stride * AREAD_MAX;
	p->slab = rr_malloc(p->slab_len);
	if (!p->slab)
		return;
	/* registered, RDMA Writes land in it; TCP has nothing to register */
	p->reg = !rr_nfs_mem_reg(p->f->n, p->slab, p->slab_len);
	for (uint32_t i = AREAD_MAX; i-- > 0;) {
		struct fread *r = &p->r[i];

		r->p = p;
		r->a.buf = p->slab + stride * i;
		r->a.done = on_done;
		r->next = p->free;
		p->free = r;
	}
}

int rr__fuse_areads_start(struct rrf *f)
{
	struct freads *p = rr_calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->f = f;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	slab_init(p, rr_nfs_max_read(f->n));
	if (!p->slab || pthread_create(&p->driver, NULL, drive, p)) {
		if (p->reg)
			rr_nfs_mem_unreg(f->n, p->slab);
		free(p->slab);
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return -ENOMEM;
	}
	f->ar = p;
	return 0;
}

uint32_t rr__fuse_areads_max(const struct rrf *f)
{
	return f->ar ? AREAD_MAX : 0;
}

/*
 * After the session's loop: the READs out end (cancelled, answered with
 * EINTR) and the driver, which makes their cancellations progress,
 * leaves once none is out.
 */
void rr__fuse_areads_stop(struct rrf *f)
{
	struct freads *p = f->ar;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->driver, NULL);
	if (p->reg)
		rr_nfs_mem_unreg(f->n, p->slab);
	free(p->slab);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	f->ar = NULL;
}
