// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * READs and write-behind WRITEs answered from their completions
 * (nfs3/client/acall.h). The FUSE thread that takes a READ starts the
 * call and goes back to the kernel for the next request; the thread that
 * completes the call answers the kernel. A synchronous pread kept each
 * FUSE thread asleep until the thread driving the transport woke it, so
 * a READ cost the kernel's wake-up of a FUSE thread and then ours: at
 * depth 16, 3.7 thread switches per 4 KiB READ, 49 us of the daemon's
 * CPU each. A write-behind WRITE, already answered (wbehind.c), held its
 * thread the same way until the server had it.
 *
 * A mount has ACALL_MAX calls, each with a READ buffer of rtmax + 1 KiB
 * in one slab registered once (so over RDMA the server writes the bytes
 * straight into it; a WRITE goes from the write log's copy); the kernel
 * is told to keep no more READs than that in the background. A call
 * that finds none free, or a READ larger than rtmax, goes the
 * synchronous way. The slab is touched as READs use it: at most
 * ACALL_MAX * (rtmax + 1 KiB) of memory, 33 MiB at 1 MiB rsize, rounded up
 * to whole 2 MiB pages. It asks for transparent huge pages: touched 4 KiB
 * at a time, as the transport's receive fills it, the first READs of a
 * mount spent more on page faults than on the data (a first 64 MiB `dd`
 * ran at 0.46-0.52 GB/s, later ones at 1.0-1.5; with huge pages the first
 * ran at 0.65-1.5).
 *
 * Nobody else drives the transport while FUSE threads wait for no call:
 * the mount's loop does while calls are out (loop.c). Before the loop
 * starts and after it ends, a thread of ours does (rr_rpc_clnt_progress)
 * while calls are out, and for a second after, so that a steady reader
 * does not have to wake it for every call. That thread also (every
 * NFSC_ABORT_SLICE_MS while the loop drives) sends the calls a JUKEBOX
 * parked once their time has come, and ends the READs whose process is
 * dying (intr.c's rule: an INTERRUPT came and the thread has SIGKILL
 * pending) and every call once the session is ending. A WRITE, answered
 * before it went, ends only then, as a synchronous one does (intr.c).
 *
 * Each call is held by references: its own; its starter's, until the
 * start has returned (the driver touches no call being started); and,
 * while the driver looks at it, the driver's. It goes back to the free
 * list only when all have let go, so a cancel never reaches a call's
 * next use.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "fpriv.h"
#include "nfs3/client/acall.h"

#define ACALL_MAX     32
#define SLAB_PAGE     ((size_t)2 << 20) /* a transparent huge page */
#define DRIVE_PARK_MS 1000 /* idle this long, the driver sleeps untimed */
#define DRIVE_NAP_MS  10   /* the transport is down: progress fails at once */

struct fcall {
	struct nfsc_acall a; /* first: on_done's argument is &a */
	struct fcalls *p;
	char *rbuf; /* its READ buffer, in the slab */
	/* under p->mu */
	bool out;	/* taken, not yet ended */
	bool live;	/* out, and its start returned: the driver may act */
	fuse_req_t req; /* a READ's, NULL once answered; a WRITE has none */
	pid_t tid;
	bool hit;    /* an INTERRUPT came for req */
	bool parked; /* JUKEBOX: goes again at a.again_ms */
	uint32_t refs;
	struct fcall *next; /* on the free list */
	/* a WRITE's, for wbehind.c */
	struct ofile *of;
	unsigned gen;
};

struct fcalls {
	struct rrf *f;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the driver's sleep */
	struct fcall r[ACALL_MAX];
	struct fcall *free;
	uint32_t busy; /* calls not on the free list */
	bool stop, idle;
	bool loop_drives; /* loop.c's thread drives the transport */
	uint64_t last_ms; /* the last call's start */
	char *slab;
	size_t slab_len;
	bool reg;
	pthread_t driver;
};

static void put(struct fcalls *p, struct fcall *r)
{
	pthread_mutex_lock(&p->mu);
	if (!--r->refs) {
		r->next = p->free;
		p->free = r;
		p->busy--;
	}
	pthread_mutex_unlock(&p->mu);
}

/* Ends r's call: a READ's request answered, a WRITE's log told. */
static void end(struct fcall *r, int rc, const char *data, uint32_t got)
{
	struct fcalls *p = r->p;
	fuse_req_t req;

	pthread_mutex_lock(&p->mu);
	req = r->req;
	r->req = NULL;
	r->out = r->live = r->parked = false;
	pthread_mutex_unlock(&p->mu);
	if (rc == -ECANCELED) /* only the driver cancels: dying, or ending */
		rc = -EINTR;
	if (r->a.write)
		rr__fuse_wb_sent(p->f, r->of, r->gen, (off_t)r->a.off, r->a.len,
				 rc ? rc : (ssize_t)got);
	else if (rc)
		rr__fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, data, got);
	put(p, r);
}

static void on_done(struct nfsc_acall *a, int rc, const char *data,
		    uint32_t got)
{
	struct fcall *r = (struct fcall *)a;

	if (rc == NFSC_ACALL_PARKED) {
		pthread_mutex_lock(&r->p->mu);
		r->parked = true;
		pthread_mutex_unlock(&r->p->mu);
		return;
	}
	end(r, rc, data, got);
}

static void on_interrupt(fuse_req_t req, void *data)
{
	struct fcall *r = data;

	/* may come after the answer, even in r's next use: req tells */
	pthread_mutex_lock(&r->p->mu);
	if (r->req == req)
		r->hit = true;
	pthread_mutex_unlock(&r->p->mu);
}

/* ------------------------------------------------------------ the driver */

/* Whether r is to end now; the caller holds a reference. */
static bool doomed(struct fcalls *p, struct fcall *r, bool ending)
{
	bool hit;

	pthread_mutex_lock(&p->mu);
	hit = r->req && r->hit;
	pthread_mutex_unlock(&p->mu);
	return ending || (hit && rr__fuse_dying(r->tid));
}

/*
 * The calls out that may have to end (ending: all) or whose JUKEBOX
 * time has come, each with a reference taken; how many.
 */
static uint32_t gather(struct fcalls *p, bool ending, uint64_t now,
		       struct fcall **out)
{
	uint32_t n = 0;

	pthread_mutex_lock(&p->mu);
	for (uint32_t i = 0; i < ACALL_MAX; i++) {
		struct fcall *r = &p->r[i];

		if (r->live && (ending || (r->req && r->hit) ||
				(r->parked && r->a.again_ms <= now))) {
			r->refs++;
			out[n++] = r;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return n;
}

static void step(struct fcalls *p, struct fcall *r, bool ending, uint64_t now)
{
	bool parked, out;
	int rc;

	pthread_mutex_lock(&p->mu);
	out = r->live;
	parked = out && r->parked;
	pthread_mutex_unlock(&p->mu);
	if (!out) {
		/* ended meanwhile */
	} else if (!parked) {
		if (doomed(p, r, ending))
			rr__nfsc_acall_cancel(&r->a);
	} else if (doomed(p, r, ending)) {
		end(r, -EINTR, NULL, 0);
	} else if (r->a.again_ms <= now) {
		pthread_mutex_lock(&p->mu);
		r->parked = false;
		pthread_mutex_unlock(&p->mu);
		rc = rr__nfsc_acall_resend(&r->a);
		if (rc)
			end(r, rc, NULL, 0);
	}
	put(p, r);
}

static void tend(struct fcalls *p)
{
	struct fcall *got[ACALL_MAX];
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

static void *drive(void *arg)
{
	struct fcalls *p = arg;
	struct rr_rpc_clnt *x = p->f->n->x;

	pthread_setname_np(pthread_self(), "rr-fuse-tend");

	pthread_mutex_lock(&p->mu);
	while (!p->stop || p->busy) {
		uint64_t t0 = rr_mono_ms();
		int rc;

		if (!p->busy && !p->stop && t0 - p->last_ms >= DRIVE_PARK_MS) {
			p->idle = true;
			pthread_cond_wait(&p->cv, &p->mu);
			p->idle = false;
			continue;
		}
		if (p->loop_drives && !p->stop) {
			/* the loop drives: clocks and interrupts are ours */
			rr_cond_wait_ms(&p->cv, &p->mu, NFSC_ABORT_SLICE_MS);
			pthread_mutex_unlock(&p->mu);
			tend(p);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		rc = rr_rpc_clnt_progress(x, NFSC_ABORT_SLICE_MS);
		tend(p);
		pthread_mutex_lock(&p->mu);
		if (rc && rc != -ETIMEDOUT && rr_mono_ms() == t0)
			rr_cond_wait_ms(&p->cv, &p->mu, DRIVE_NAP_MS);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ------------------------------------------------------------ the mount */

/* A free call for size bytes at off, out from now on; NULL: none is. */
static struct fcall *take(struct rrf *f, fuse_req_t req, size_t size,
			  uint32_t max, off_t off)
{
	struct fcalls *p = f->ac;
	struct fcall *r;

	if (!p || !size || size > max || off < 0)
		return NULL;
	pthread_mutex_lock(&p->mu);
	r = p->stop ? NULL : p->free;
	if (r) {
		p->free = r->next;
		p->busy++;
		r->refs = 2; /* the call's, and the starter's */
		r->out = true;
		r->live = false;
		r->req = req;
		r->hit = r->parked = false;
		r->tid = req ? fuse_req_ctx(req)->pid : 0;
		p->last_ms = rr_mono_ms();
		if (p->idle)
			pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

/*
 * The start returned: 0, and the driver may act on the call from now on
 * (unless it has ended already); else it did not go, and goes back to
 * the free list unseen.
 */
static void started(struct fcalls *p, struct fcall *r, int rc)
{
	pthread_mutex_lock(&p->mu);
	if (rc) {
		r->req = NULL;
		r->out = false;
		r->refs--; /* the call's */
	}
	r->live = r->out;
	pthread_mutex_unlock(&p->mu);
	put(p, r); /* the starter's */
}

bool rr__fuse_aread(struct rrf *f, fuse_req_t req, struct ofile *of,
		    size_t size, off_t off)
{
	struct fcall *r = take(f, req, size, rr_nfs_max_read(f->n), off);
	int rc;

	if (!r)
		return false;
	/* before the call: once it is out, req may be answered at any time */
	fuse_req_interrupt_func(req, on_interrupt, r);
	rc = rr__nfsc_aread_start(&r->a, of->f, r->rbuf, (uint64_t)off,
				  (uint32_t)size);
	if (rc)
		fuse_req_interrupt_func(req, NULL, NULL);
	started(f->ac, r, rc);
	return !rc;
}

bool rr__fuse_awrite(struct rrf *f, struct ofile *of, unsigned gen,
		     const void *at, size_t size, off_t off)
{
	struct fcall *r = take(f, NULL, size, rr_nfs_max_write(f->n), off);
	int rc;

	if (!r)
		return false;
	r->of = of;
	r->gen = gen;
	rc = rr__nfsc_awrite_start(&r->a, of->f, at, (uint64_t)off,
				   (uint32_t)size);
	started(f->ac, r, rc);
	return !rc;
}

static void slab_init(struct fcalls *p, uint32_t rtmax)
{
	size_t stride = (size_t)rtmax + NFSC_ACALL_SLACK;

	p->slab_len = (stride * ACALL_MAX + SLAB_PAGE - 1) & ~(SLAB_PAGE - 1);
	p->slab =
		RR_ALLOC_FAILS() ? NULL : aligned_alloc(SLAB_PAGE, p->slab_len);
	if (!p->slab)
		return;
	/* a hint: where THP is off, or none is free, 4 KiB pages serve */
	(void)madvise(p->slab, p->slab_len, MADV_HUGEPAGE);
	/* registered, RDMA Writes land in it; TCP has nothing to register */
	p->reg = !rr_nfs_mem_reg(p->f->n, p->slab, p->slab_len);
	for (uint32_t i = ACALL_MAX; i-- > 0;) {
		struct fcall *r = &p->r[i];

		r->p = p;
		r->rbuf = p->slab + stride * i;
		rr__nfsc_acall_init(&r->a, on_done);
		r->next = p->free;
		p->free = r;
	}
}

static void fcalls_free(struct fcalls *p)
{
	if (p->slab)
		for (uint32_t i = 0; i < ACALL_MAX; i++)
			rr__nfsc_acall_fini(&p->r[i].a);
	if (p->reg)
		rr_nfs_mem_unreg(p->f->n, p->slab);
	free(p->slab);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int rr__fuse_acalls_start(struct rrf *f)
{
	struct fcalls *p = rr_calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->f = f;
	pthread_mutex_init(&p->mu, NULL);
	rr_cond_init_mono(&p->cv);
	slab_init(p, rr_nfs_max_read(f->n));
	if (!p->slab || pthread_create(&p->driver, NULL, drive, p)) {
		fcalls_free(p);
		return -ENOMEM;
	}
	f->ac = p;
	return 0;
}

uint32_t rr__fuse_acalls_max(const struct rrf *f)
{
	return f->ac ? ACALL_MAX : 0;
}

bool rr__fuse_acalls_busy(struct rrf *f)
{
	struct fcalls *p = f->ac;
	bool busy;

	if (!p)
		return false;
	pthread_mutex_lock(&p->mu);
	busy = p->busy != 0;
	pthread_mutex_unlock(&p->mu);
	return busy;
}

/*
 * A READ of size bytes of node ino would go out as an asynchronous call
 * now (a look: a worker's WRITE may take the last call first; the READ
 * is then made synchronously, its thread driving the transport while it
 * waits).
 */
bool rr__fuse_aread_ready(struct rrf *f, uint64_t ino, size_t size)
{
	struct fcalls *p = f->ac;
	bool ok;

	if (!p || !size || size > rr_nfs_max_read(f->n))
		return false;
	pthread_mutex_lock(&p->mu);
	ok = p->free && !p->stop;
	pthread_mutex_unlock(&p->mu);
	return ok && !rr__ftab_wb_out(&f->tab, ino);
}

void rr__fuse_acalls_loop_drives(struct rrf *f, bool on)
{
	struct fcalls *p = f->ac;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->loop_drives = on;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/*
 * After the session's loop: the calls out end (cancelled; a READ
 * answered with EINTR) and the driver, which makes their cancellations
 * progress, leaves once none is out.
 */
void rr__fuse_acalls_stop(struct rrf *f)
{
	struct fcalls *p = f->ac;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->driver, NULL);
	fcalls_free(p);
	f->ac = NULL;
}
