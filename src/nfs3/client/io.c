// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * READ and WRITE, pipelined: a transfer is cut at the mount's rtmax/wtmax
 * and up to depth calls are kept in flight on the one transport, each in
 * a slot that owns its rr_call and XDR buffers.
 *
 * The data never goes through rpcgen. READ results and WRITE arguments
 * end in opaque data<>, the DDP-eligible item (RFC 8267 section 4.1): for
 * WRITE the XDR stops at the length word and the caller's bytes ride as
 * call->arg_bulk (a read chunk, or inline after the length word); for READ
 * the caller's buffer is call->res_bulk, filled by RDMA Write, and when the
 * server answered inline instead (always over TCP) the data follows the
 * length word in call->res and is copied out.
 *
 * Completions can run on the transport's own thread, so done() only
 * queues the slot under a lock; decoding and reissuing happen in the
 * caller's thread. A short transfer without EOF is reissued for the rest.
 *
 * The slots and their result buffers outlive a transfer: the mount keeps
 * up to IO_IDLE_MAX idle sets (struct nfsc_io_ctx) and a transfer takes
 * one, so a FUSE thread or a CLI loop that reads and writes allocates
 * nothing once its first transfers have sized the set (issue 18).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "nfsc.h"

#define IO_ARGS_CAP	  256  /* READ3args / WRITE3args without data */
#define IO_RES_HDR	  512  /* READ3res up to the data, WRITE3res */
#define IO_INLINE	  2048 /* smaller READs travel inline over RDMA too */
#define PROGRESS_SLICE_MS 10
#define REG_MIN		  (1u << 20)
/*
 * Idle slot sets a mount keeps: as many as the threads that transfer at
 * once, up to this. Each holds depth result buffers of at most
 * IO_RES_HDR + rtmax + 4 bytes (TCP: READ data arrives inline), so a
 * mount's idle memory stays under IO_IDLE_MAX * depth * (rtmax + 516).
 */
#define IO_IDLE_MAX 8

struct io_run;

struct io_slot {
	struct rr_call call;
	struct io_run *run;
	uint32_t idx;
	int rc;
	bool busy;   /* in flight: cancelled if the thread aborts */
	bool parked; /* answered JUKEBOX: sent again at again_ms */
	uint64_t again_ms;
	struct nfsc_jukebox jb;
	struct rr_nfs_io io; /* the data, its file offset and length */
	uint64_t roff;	     /* pread/pwrite: offset into the buffer */
	char args[IO_ARGS_CAP];
	char *res;
	size_t res_room; /* res's size, grown to what a call needed */
};

/* Slots for up to cap calls in flight, kept by the mount between runs. */
struct nfsc_io_ctx {
	struct nfsc_io_ctx *next; /* on the mount's idle list */
	uint32_t cap;
	struct io_slot *slots;
	struct io_range *retry;
	uint32_t *freel;
	uint32_t *doneq;
};

struct io_range {
	uint64_t off;
	uint32_t len;
};

struct io_run {
	struct rr_nfs_file *f;
	bool write;
	bool sync; /* WRITEs ask FILE_SYNC (rr_nfs_pwrite_sync) */
	/* a stream (rr_nfs_stream) rather than one pread/pwrite */
	bool (*next_fn)(void *arg, struct rr_nfs_io *io);
	void (*done_fn)(void *arg, struct rr_nfs_io *io);
	void *arg;
	uint8_t *buf;
	uint64_t len, foff; /* caller's length and file offset */
	uint64_t next;	    /* first byte not yet issued */
	uint64_t eof_at;    /* READ: where the file ended */
	uint32_t chunk, depth, inflight;
	uint32_t parked;	 /* slots waiting out a JUKEBOX */
	struct nfsc_io_ctx *ctx; /* the arrays below are its */
	struct io_slot *slots;
	struct io_range *retry; /* short transfers to reissue */
	uint32_t nretry;
	uint32_t *freel; /* idle slots */
	uint32_t nfree;
	int err;
	bool aborted;	    /* the thread's abort check said stop */
	pthread_mutex_t mu; /* guards doneq */
	pthread_cond_t cv;
	uint32_t *doneq;
	uint64_t dq_head, dq_tail;
};

/* ------------------------------------------------------------ encoding */

static void put_be32(char *p, uint32_t v)
{
	p[0] = (char)(v >> 24);
	p[1] = (char)(v >> 16);
	p[2] = (char)(v >> 8);
	p[3] = (char)v;
}

int rr__nfsc_read_args(char *buf, size_t cap, const struct nfsc_fh *fh,
		       uint64_t off, uint32_t len, size_t *out_len)
{
	READ3args a = {.offset = off, .count = (count3)len};

	nfsc_fh_arg(&a.file, fh);
	return rr__nfsc_encode((xdrproc_t)rr__xdr_READ3args, &a, buf, cap,
			       out_len);
}

static int encode_read(struct io_run *run, struct io_slot *s)
{
	return rr__nfsc_read_args(s->args, sizeof(s->args), &run->f->fh,
				  s->io.off, (uint32_t)s->io.len,
				  &s->call.args_len);
}

/* WRITE3args with an empty data<>, then its length word set to count. */
int rr__nfsc_write_args(char *buf, size_t cap, const struct nfsc_fh *fh,
			uint64_t off, uint32_t len, bool sync, size_t *out_len)
{
	WRITE3args a = {.offset = off,
			.count = (count3)len,
			.stable = sync ? FILE_SYNC : UNSTABLE};
	int rc;

	nfsc_fh_arg(&a.file, fh);
	rc = rr__nfsc_encode((xdrproc_t)rr__xdr_WRITE3args, &a, buf, cap,
			     out_len);
	if (!rc)
		put_be32(buf + *out_len - 4, len);
	return rc;
}

static int encode_write(struct io_run *run, struct io_slot *s)
{
	return rr__nfsc_write_args(s->args, sizeof(s->args), &run->f->fh,
				   s->io.off, (uint32_t)s->io.len, run->sync,
				   &s->call.args_len);
}

/* ------------------------------------------------------------ decoding */

int rr__nfsc_read_res(const struct rr_call *call, uint32_t cap, uint32_t *got,
		      bool *eof, size_t *at)
{
	nfsstat3 st;
	post_op_attr pa;
	u_int count, dlen;
	bool_t e;
	XDR x;
	int rc = -EPROTO;

	xdrmem_create(&x, call->res, (u_int)call->res_len, XDR_DECODE);
	if (!rr__xdr_nfsstat3(&x, &st) || !rr__xdr_post_op_attr(&x, &pa))
		goto out;
	rc = rr_nfs_errno(st);
	if (rc)
		goto out;
	rc = -EPROTO;
	if (!xdr_u_int(&x, &count) || !xdr_bool(&x, &e) ||
	    !xdr_u_int(&x, &dlen) || dlen != count || dlen > cap)
		goto out;
	*at = call->res_bulk_len ? SIZE_MAX : xdr_getpos(&x);
	if (call->res_bulk_len ? call->res_bulk_len != dlen
			       : *at + (size_t)dlen > call->res_len)
		goto out;
	*got = dlen;
	*eof = e;
	rc = 0;
out:
	xdr_destroy(&x);
	return rc;
}

static int decode_read(struct io_slot *s, uint32_t *got, bool *eof)
{
	size_t at;
	int rc =
		rr__nfsc_read_res(&s->call, (uint32_t)s->io.len, got, eof, &at);

	if (!rc && at != SIZE_MAX)
		memcpy(s->io.buf, s->res + at, *got);
	return rc;
}

int rr__nfsc_write_res(struct rr_nfs_file *f, const struct rr_call *call,
		       uint64_t off, uint32_t cap, uint32_t *got)
{
	WRITE3res r = {0};
	XDR x;
	bool_t ok;
	int rc;

	xdrmem_create(&x, call->res, (u_int)call->res_len, XDR_DECODE);
	ok = rr__xdr_WRITE3res(&x, &r);
	xdr_destroy(&x);
	if (!ok) {
		xdr_free((xdrproc_t)rr__xdr_WRITE3res, &r);
		return -EPROTO;
	}
	rc = rr_nfs_errno(r.status);
	if (!rc && r.WRITE3res_u.resok.count > cap)
		rc = -EPROTO;
	if (!rc) {
		*got = r.WRITE3res_u.resok.count;
		rr__nfsc_note_write(f, off, *got, &r.WRITE3res_u.resok);
	}
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, &r);
	return rc;
}

static int decode_write(struct io_run *run, struct io_slot *s, uint32_t *got)
{
	return rr__nfsc_write_res(run->f, &s->call, s->io.off,
				  (uint32_t)s->io.len, got);
}

/* ------------------------------------------------------------ the pipe */

static void io_done(struct rr_call *call, int rc, void *arg)
{
	struct io_slot *s = arg;
	struct io_run *run = s->run;

	(void)call;
	s->rc = rc;
	pthread_mutex_lock(&run->mu);
	run->doneq[run->dq_tail++ % run->depth] = s->idx;
	pthread_cond_signal(&run->cv);
	pthread_mutex_unlock(&run->mu);
}

static void slot_prepare(struct io_run *run, struct io_slot *s)
{
	bool ddp = rr_rpc_clnt_ddp(run->f->n->x) && s->io.len > IO_INLINE;

	memset(&s->call, 0, sizeof(s->call));
	s->call.prog = NFS_PROGRAM;
	s->call.vers = NFS_V3;
	s->call.proc = run->write ? NFSPROC3_WRITE : NFSPROC3_READ;
	s->call.cred = rr__nfsc_cred(run->f->n);
	s->call.args = s->args;
	s->call.res_cap = IO_RES_HDR;
	if (run->write) {
		s->call.arg_bulk = s->io.buf;
		s->call.arg_bulk_len = s->io.len;
	} else if (ddp) {
		s->call.res_bulk = s->io.buf;
		s->call.res_bulk_cap = s->io.len;
	} else {
		s->call.res_cap = IO_RES_HDR + s->io.len + 4;
	}
}

/* Grows s's result buffer to need, once: later runs reuse it. */
static int slot_room(struct io_slot *s, size_t need)
{
	char *p;

	if (s->res_room >= need)
		return 0;
	p = rr_malloc(need);
	if (!p)
		return -ENOMEM;
	free(s->res);
	s->res = p;
	s->res_room = need;
	return 0;
}

static int slot_issue(struct io_run *run, struct io_slot *s)
{
	struct rr_rpc_clnt *x = run->f->n->x;
	int rc;

	slot_prepare(run, s);
	rc = slot_room(s, s->call.res_cap);
	if (rc)
		return rc;
	s->call.res = s->res;
	rc = run->write ? encode_write(run, s) : encode_read(run, s);
	if (!rc)
		rc = rr_rpc_clnt_call_async(x, &s->call, io_done, s);
	if (rc)
		return rc;
	s->busy = true;
	run->inflight++;
	return 0;
}

/* What a slot's call came to, for the caller; the slot is idle again. */
static void finish(struct io_run *run, struct io_slot *s, int rc, uint32_t got)
{
	if (rc && run->write)
		rr__nfsc_note_write_err(run->f, rc);
	if (run->next_fn) {
		/* a stream's calls stand alone: each result goes back */
		s->io.result = rc ? rc : (ssize_t)got;
		run->done_fn(run->arg, &s->io);
	} else if (rc && !run->err) {
		run->err = rc;
	}
	run->freel[run->nfree++] = s->idx;
}

/* pread/pwrite: a retry first, else the next chunk of the buffer. */
static bool next_range(struct io_run *run, struct io_slot *s)
{
	uint64_t end = run->write ? run->len : run->eof_at;
	struct io_range r;

	if (run->nretry) {
		r = run->retry[--run->nretry];
	} else if (run->next < end) {
		r.off = run->next;
		r.len = (uint32_t)(end - run->next < run->chunk
					   ? end - run->next
					   : run->chunk);
		run->next += r.len;
	} else {
		return false;
	}
	s->roff = r.off;
	s->io = (struct rr_nfs_io){.buf = run->buf + r.off,
				   .len = r.len,
				   .off = run->foff + r.off};
	return true;
}

/* The next call's data and place; false when there is none. */
static bool next_io(struct io_run *run, struct io_slot *s)
{
	if (!run->next_fn)
		return next_range(run, s);
	memset(&s->io, 0, sizeof(s->io));
	if (!run->next_fn(run->arg, &s->io))
		return false;
	if (!s->io.buf || !s->io.len || s->io.len > run->chunk ||
	    s->io.off + s->io.len < s->io.off) {
		run->err = -EINVAL;
		return false;
	}
	return true;
}

static void fill_pipe(struct io_run *run)
{
	while (!run->err && !run->aborted && run->nfree) {
		struct io_slot *s = &run->slots[run->freel[run->nfree - 1]];
		int rc;

		if (!next_io(run, s))
			break;
		run->nfree--;
		s->jb = (struct nfsc_jukebox){0};
		rc = slot_issue(run, s);
		if (rc) {
			run->err = rc;
			finish(run, s, rc, 0); /* every io goes back */
		}
	}
}

static bool pop_done(struct io_run *run, uint32_t *idx)
{
	bool any = run->dq_head != run->dq_tail;

	if (any)
		*idx = run->doneq[run->dq_head++ % run->depth];
	return any;
}

/* A timed wait on cv: bounded, for when nobody else may signal. */
static void cv_wait_ms(struct io_run *run, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&run->cv, &run->mu, &ts);
}

/*
 * The thread's abort check (rr_nfs_set_thread_abort), asked every
 * NFSC_ABORT_SLICE_MS: every call in flight is cancelled, and each comes
 * back through io_done like any other. Caller holds mu.
 */
static void check_abort(struct io_run *run, uint64_t *next_ms)
{
	uint64_t now = rr_mono_ms();

	if (run->aborted || now < *next_ms)
		return;
	*next_ms = now + NFSC_ABORT_SLICE_MS;
	pthread_mutex_unlock(&run->mu);
	if (rr__nfsc_abort_now()) {
		run->aborted = true;
		for (uint32_t i = 0; i < run->depth; i++)
			if (run->slots[i].busy)
				rr_rpc_clnt_cancel(run->f->n->x,
						   &run->slots[i].call);
	}
	pthread_mutex_lock(&run->mu);
}

/* Whether a parked slot is due, or the thread aborts. Caller holds mu. */
static bool parked_due(struct io_run *run)
{
	uint64_t now = rr_mono_ms();

	if (!run->parked || run->aborted)
		return run->parked;
	for (uint32_t i = 0; i < run->depth; i++)
		if (run->slots[i].parked && run->slots[i].again_ms <= now)
			return true;
	return false;
}

/*
 * Waits for a completed slot, or NULL for a parked one that is due. This
 * thread drives the transport (rr_clnt_progress, rr_tcp_clnt_progress),
 * which runs our io_done in this very thread; another thread that drives
 * may run it too, hence the short slices and the check of the queue
 * between them.
 */
static struct io_slot *wait_done(struct io_run *run)
{
	struct rr_rpc_clnt *x = run->f->n->x;
	uint64_t next_check = rr_mono_ms() + NFSC_ABORT_SLICE_MS;
	uint32_t idx;
	int rc;

	pthread_mutex_lock(&run->mu);
	while (!pop_done(run, &idx)) {
		if (parked_due(run)) {
			pthread_mutex_unlock(&run->mu);
			return NULL;
		}
		pthread_mutex_unlock(&run->mu);
		/* only parked slots: nothing to drive, so nap on cv */
		rc = run->inflight ? rr_rpc_clnt_progress(x, PROGRESS_SLICE_MS)
				   : -EAGAIN;
		pthread_mutex_lock(&run->mu);
		if (rc && rc != -ETIMEDOUT && run->dq_head == run->dq_tail)
			cv_wait_ms(run, PROGRESS_SLICE_MS);
		check_abort(run, &next_check);
	}
	pthread_mutex_unlock(&run->mu);
	return &run->slots[idx];
}

/* pread/pwrite: account for the bytes, queue what is left of them. */
static int complete_range(struct io_run *run, struct io_slot *s, uint32_t got,
			  bool eof)
{
	if (eof && s->roff + got < run->eof_at)
		run->eof_at = s->roff + got;
	if (got < s->io.len && !eof) {
		if (!got)
			return -EIO; /* no progress and no end: stop */
		run->retry[run->nretry++] = (struct io_range){
			s->roff + got, (uint32_t)s->io.len - got};
	}
	return 0;
}

/*
 * A JUKEBOX answer parks the slot to be sent again; false, with *rc
 * saying why, when it may not (aborted, or a soft mount's time is up).
 */
static bool park(struct io_run *run, struct io_slot *s, int *rc)
{
	if (run->aborted) {
		*rc = rr__nfsc_fail(-EINTR, "%s interrupted",
				    run->write ? "WRITE" : "READ");
		return false;
	}
	*rc = rr__nfsc_jukebox_next(run->f->n, &s->jb, &s->again_ms);
	if (*rc)
		return false;
	s->parked = true;
	run->parked++;
	return true;
}

static void complete(struct io_run *run, struct io_slot *s)
{
	uint32_t got = 0;
	bool eof = false;
	int rc = rr__nfsc_rpc_errno(s->rc, &s->call);

	s->busy = false;
	if (rc == -ECANCELED && run->aborted)
		rc = rr__nfsc_fail(-EINTR, "%s interrupted",
				   run->write ? "WRITE" : "READ");
	run->inflight--;
	if (!rc && rr__nfsc_jukebox(&s->call) && park(run, s, &rc))
		return;
	if (!rc)
		rc = run->write ? decode_write(run, s, &got)
				: decode_read(s, &got, &eof);
	if (!rc && !run->next_fn)
		rc = complete_range(run, s, got, eof);
	finish(run, s, rc, got);
}

/* Sends the due parked slots again; an aborted run ends them instead. */
static void resend_parked(struct io_run *run)
{
	uint64_t now = rr_mono_ms();

	for (uint32_t i = 0; i < run->depth && run->parked; i++) {
		struct io_slot *s = &run->slots[i];
		int rc;

		if (!s->parked || (!run->aborted && s->again_ms > now))
			continue;
		s->parked = false;
		run->parked--;
		rc = run->aborted ? rr__nfsc_fail(-EINTR, "%s interrupted",
						  run->write ? "WRITE" : "READ")
				  : slot_issue(run, s);
		if (rc)
			finish(run, s, rc, 0);
	}
}

/* ------------------------------------------------------------ slot sets */

static void ctx_free(struct nfsc_io_ctx *c)
{
	for (uint32_t i = 0; c->slots && i < c->cap; i++)
		free(c->slots[i].res);
	free(c->slots);
	free(c->retry);
	free(c->freel);
	free(c->doneq);
	free(c);
}

static struct nfsc_io_ctx *ctx_new(uint32_t cap)
{
	struct nfsc_io_ctx *c = rr_calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cap = cap;
	c->slots = rr_calloc(cap, sizeof(*c->slots));
	c->retry = rr_calloc(cap, sizeof(*c->retry));
	c->freel = rr_calloc(cap, sizeof(*c->freel));
	c->doneq = rr_calloc(cap, sizeof(*c->doneq));
	if (!c->slots || !c->retry || !c->freel || !c->doneq) {
		ctx_free(c);
		return NULL;
	}
	return c;
}

/* An idle set with room for depth calls, else a new one. */
static struct nfsc_io_ctx *ctx_get(struct rr_nfs *n, uint32_t depth)
{
	struct nfsc_io_ctx **pp, *c = NULL;

	pthread_mutex_lock(&n->io_mu);
	for (pp = &n->io_idle; *pp; pp = &(*pp)->next) {
		if ((*pp)->cap >= depth) {
			c = *pp;
			*pp = c->next;
			n->io_nidle--;
			break;
		}
	}
	pthread_mutex_unlock(&n->io_mu);
	return c ? c : ctx_new(depth > n->depth ? depth : n->depth);
}

static void ctx_put(struct rr_nfs *n, struct nfsc_io_ctx *c)
{
	pthread_mutex_lock(&n->io_mu);
	if (n->io_nidle < IO_IDLE_MAX) {
		c->next = n->io_idle;
		n->io_idle = c;
		n->io_nidle++;
		c = NULL;
	}
	pthread_mutex_unlock(&n->io_mu);
	if (c)
		ctx_free(c);
}

void rr__nfsc_io_init(struct rr_nfs *n)
{
	pthread_mutex_init(&n->io_mu, NULL);
}

void rr__nfsc_io_fini(struct rr_nfs *n)
{
	struct nfsc_io_ctx *c;

	while ((c = n->io_idle)) {
		n->io_idle = c->next;
		ctx_free(c);
	}
	n->io_nidle = 0;
	pthread_mutex_destroy(&n->io_mu);
}

/* Slots for depth calls; run_fini undoes it, also half-way. */
static int run_init(struct io_run *run, struct rr_nfs_file *f, bool write,
		    uint32_t depth)
{
	struct rr_nfs *n = f->n;

	run->f = f;
	run->write = write;
	run->chunk = write ? n->wtmax : n->rtmax;
	run->depth = depth;
	pthread_mutex_init(&run->mu, NULL);
	pthread_cond_init(&run->cv, NULL);
	run->ctx = ctx_get(n, depth);
	if (!run->ctx)
		return -ENOMEM;
	run->slots = run->ctx->slots;
	run->retry = run->ctx->retry;
	run->freel = run->ctx->freel;
	run->doneq = run->ctx->doneq;
	for (uint32_t i = 0; i < depth; i++) {
		run->slots[i].run = run;
		run->slots[i].idx = i;
		run->freel[run->nfree++] = depth - 1 - i;
	}
	return 0;
}

static void run_fini(struct io_run *run)
{
	pthread_mutex_destroy(&run->mu);
	pthread_cond_destroy(&run->cv);
	if (run->ctx)
		ctx_put(run->f->n, run->ctx);
}

/* Issues and completes until nothing is left in flight. */
static int run_pipe(struct io_run *run)
{
	run->aborted = false;
	fill_pipe(run);
	while (run->inflight || run->parked) {
		struct io_slot *s = wait_done(run);

		if (s)
			complete(run, s);
		else
			resend_parked(run);
		fill_pipe(run);
	}
	if (run->aborted && !run->err) /* a stream's calls each said so */
		run->err = -EINTR;
	return run->err;
}

/*
 * A large transfer registers the caller's buffer for its duration, so
 * READ data lands in it by RDMA Write and WRITE data is read from it, with
 * no bounce copies; when registration fails the bounce buffers serve.
 */
static bool ureg_covers(struct rr_nfs *n, const void *buf, size_t len)
{
	const char *p = buf;
	bool in = false;

	pthread_mutex_lock(&n->io_mu);
	for (uint32_t i = 0; i < n->nuregs && !in; i++)
		in = p >= n->uregs[i].addr && len <= n->uregs[i].len &&
		     (size_t)(p - n->uregs[i].addr) <= n->uregs[i].len - len;
	pthread_mutex_unlock(&n->io_mu);
	return in;
}

/*
 * A buffer the caller registered (rr_nfs_mem_reg) serves as it is: no
 * registration, and no allocation, per call.
 */
static bool mem_reg(struct rr_nfs *n, void *buf, size_t len)
{
	return rr_rpc_clnt_ddp(n->x) && len >= REG_MIN &&
	       !ureg_covers(n, buf, len) &&
	       !rr_rpc_clnt_mem_reg(n->x, buf, len);
}

static int do_mem_reg(struct rr_nfs *n, void *buf, size_t len)
{
	int rc;

	if (!n || !buf || !len)
		return -EINVAL;
	if (!rr_rpc_clnt_ddp(n->x)) /* the transport copies everything */
		return -EOPNOTSUPP;
	pthread_mutex_lock(&n->io_mu);
	rc = n->nuregs == NFSC_UREG_MAX ? -ENOSPC : 0;
	if (!rc)
		rc = rr_rpc_clnt_mem_reg(n->x, buf, len);
	if (!rc)
		n->uregs[n->nuregs++] = (struct nfsc_ureg){buf, len};
	pthread_mutex_unlock(&n->io_mu);
	return rc;
}

int rr_nfs_mem_reg(struct rr_nfs *n, void *buf, size_t len)
{
	return NFSC_SAY(do_mem_reg(n, buf, len), "register %zu bytes", len);
}

static int do_mem_unreg(struct rr_nfs *n, void *buf)
{
	int rc;

	if (!n || !buf)
		return -EINVAL;
	if (!rr_rpc_clnt_ddp(n->x))
		return -EOPNOTSUPP;
	rc = rr_rpc_clnt_mem_unreg(n->x, buf);
	pthread_mutex_lock(&n->io_mu);
	for (uint32_t i = 0; !rc && i < n->nuregs; i++) {
		if (n->uregs[i].addr == buf) {
			n->uregs[i] = n->uregs[--n->nuregs];
			break;
		}
	}
	pthread_mutex_unlock(&n->io_mu);
	return rc;
}

int rr_nfs_mem_unreg(struct rr_nfs *n, void *buf)
{
	return NFSC_SAY(do_mem_unreg(n, buf), "unregister");
}

static ssize_t io_run(struct rr_nfs_file *f, bool write, void *buf, size_t len,
		      uint64_t off, bool sync)
{
	struct io_run run = {.sync = sync,
			     .buf = buf,
			     .foff = off,
			     .len = len,
			     .eof_at = len};
	uint32_t chunk = write ? f->n->wtmax : f->n->rtmax;
	uint64_t need = (len + chunk - 1) / chunk;
	bool reg;
	int rc;

	if (!len)
		return 0;
	if (len > SSIZE_MAX || off + len < off)
		return -EINVAL;
	rc = run_init(&run, f, write,
		      need < f->n->depth ? (uint32_t)need : f->n->depth);
	if (rc) {
		run_fini(&run);
		return rc;
	}
	reg = mem_reg(f->n, buf, len);
	rc = run_pipe(&run);
	/* ORDER: every call that exposed buf has completed (and fenced) */
	if (reg)
		rr_rpc_clnt_mem_unreg(f->n->x, buf);
	run_fini(&run);
	if (rc)
		return rc;
	return (ssize_t)(write ? run.len : run.eof_at);
}

static int check_mode(const struct rr_nfs_file *f, bool write)
{
	int acc = f->flags & O_ACCMODE;

	return (write ? acc == O_RDONLY : acc == O_WRONLY) ? -EBADF : 0;
}

ssize_t rr_nfs_pread(struct rr_nfs_file *f, void *buf, size_t len, uint64_t off)
{
	int rc = check_mode(f, false);

	return NFSC_SAY(rc ? rc : io_run(f, false, buf, len, off, false),
			"read %zu bytes at %llu", len, (unsigned long long)off);
}

ssize_t rr_nfs_pwrite(struct rr_nfs_file *f, const void *buf, size_t len,
		      uint64_t off)
{
	int rc = check_mode(f, true);

	return NFSC_SAY(rc ? rc : io_run(f, true, (void *)buf, len, off, false),
			"write %zu bytes at %llu", len,
			(unsigned long long)off);
}

ssize_t rr_nfs_pwrite_sync(struct rr_nfs_file *f, const void *buf, size_t len,
			   uint64_t off)
{
	int rc = check_mode(f, true);

	return NFSC_SAY(rc ? rc : io_run(f, true, (void *)buf, len, off, true),
			"stable write %zu bytes at %llu", len,
			(unsigned long long)off);
}

static int do_stream(struct rr_nfs_file *f, bool write, uint32_t depth,
		     bool (*next)(void *arg, struct rr_nfs_io *io),
		     void (*done)(void *arg, struct rr_nfs_io *io), void *arg)
{
	struct io_run run = {.next_fn = next, .done_fn = done, .arg = arg};
	int rc = check_mode(f, write);

	if (rc)
		return rc;
	if (!next || !done || !depth)
		return -EINVAL;
	rc = run_init(&run, f, write, depth);
	if (!rc)
		rc = run_pipe(&run);
	run_fini(&run);
	return rc;
}

int rr_nfs_stream(struct rr_nfs_file *f, bool write, uint32_t depth,
		  bool (*next)(void *arg, struct rr_nfs_io *io),
		  void (*done)(void *arg, struct rr_nfs_io *io), void *arg)
{
	return NFSC_SAY(do_stream(f, write, depth, next, done, arg),
			"%s stream", write ? "write" : "read");
}
