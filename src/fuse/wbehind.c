// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Write-behind, as the kernel client's page cache gives it: a buffered
 * write is answered once its bytes are in the open file's log and its
 * range holds a place among the node's WRITEs in flight (fnode.h), and
 * the thread that answered then starts it from the log and goes back to
 * the kernel (acall.c; the WRITE ends in rr__fuse_wb_sent). So a
 * writer's next write meets the server's answer to this one,
 * FTAB_WB_DEPTH deep.
 *
 * A full log generation is sealed and committed by the writer that
 * filled it, once its own WRITEs are back, while later writes go into
 * the other generation; a writer that finds both full waits for that
 * COMMIT before it logs and is answered, so a file's log stays within
 * its bound (fpriv.h) however fast the writes come. The library's
 * COMMIT covers the ranges whose WRITEs were back when it was sent
 * (commit.c), so the sealed generation is all in it.
 */
#include <errno.h>

#include "fpriv.h"

/* The library's refill: both generations, the older first. */
static ssize_t refill(void *arg, void *buf, size_t len, uint64_t off)
{
	struct ofile *of = arg;
	const struct wlog *l[2];
	ssize_t rc;

	pthread_mutex_lock(&of->mu);
	l[0] = &of->log[!of->cur];
	l[1] = &of->log[of->cur];
	rc = rr__wlog_fill(l, 2, buf, len, off);
	pthread_mutex_unlock(&of->mu);
	return rc;
}

void rr__fuse_wb_init(struct ofile *of)
{
	pthread_mutex_init(&of->mu, NULL);
	pthread_cond_init(&of->cv, NULL);
}

void rr__fuse_wb_fini(struct ofile *of)
{
	rr__wlog_clear(&of->log[0]);
	rr__wlog_clear(&of->log[1]);
	pthread_cond_destroy(&of->cv);
	pthread_mutex_destroy(&of->mu);
}

int rr__fuse_wb_err(struct ofile *of)
{
	int err;

	pthread_mutex_lock(&of->mu);
	err = of->werr;
	of->werr = 0;
	pthread_mutex_unlock(&of->mu);
	return -err;
}

/* Caller holds mu. A failure is kept for the next write to say. */
static void keep_err(struct ofile *of, int err)
{
	if (!of->werr)
		of->werr = err;
}

void rr__fuse_wb_keep_err(struct ofile *of, int err)
{
	pthread_mutex_lock(&of->mu);
	keep_err(of, err);
	pthread_mutex_unlock(&of->mu);
}

int rr__fuse_wb_log(struct ofile *of, const char *buf, size_t size, off_t off,
		    bool *full)
{
	int rc;

	pthread_mutex_lock(&of->mu);
	rc = rr__wlog_add(&of->log[of->cur], (uint64_t)off, buf, size, NULL);
	*full = rc || of->log[of->cur].bytes >= WLOG_MAX;
	pthread_mutex_unlock(&of->mu);
	return rc;
}

/*
 * Commits generation g, sealed: once its WRITEs are back, a COMMIT; its
 * log is emptied when that succeeds, and kept otherwise (the next full
 * log then commits both under io held for writing).
 */
static void commit_sealed(struct ofile *of, unsigned g)
{
	int rc;

	pthread_mutex_lock(&of->mu);
	while (of->inflight[g])
		pthread_cond_wait(&of->cv, &of->mu);
	pthread_mutex_unlock(&of->mu);
	rc = rr_nfs_fsync(of->f);
	pthread_mutex_lock(&of->mu);
	if (!rc)
		rr__wlog_reset(&of->log[g]);
	else
		keep_err(of, -rc);
	of->committing = false;
	pthread_cond_broadcast(&of->cv);
	pthread_mutex_unlock(&of->mu);
}

/*
 * Caller holds mu. A full log[cur] turns before a write goes in: while
 * the other generation's COMMIT runs, the writer waits (it has not been
 * answered, so the kernel sends no more of its writes meanwhile); else
 * log[cur] is sealed, to be committed by this writer (*seal, its
 * number); else the other generation kept a failed COMMIT's bytes, and
 * *full asks for everything to be committed (io held for writing).
 */
static void make_room(struct ofile *of, int *seal, bool *full)
{
	while (of->log[of->cur].bytes >= WLOG_MAX) {
		if (of->committing) {
			pthread_cond_wait(&of->cv, &of->mu);
			continue;
		}
		if (of->log[!of->cur].bytes) {
			*full = true;
			return;
		}
		*seal = (int)of->cur;
		of->cur = !of->cur;
		of->committing = true;
		return;
	}
}

/*
 * Logs the write in the current generation: which one, or -errno. The
 * write that fills it seals it at once if it can, so its COMMIT starts
 * without waiting for a next write.
 */
static int log_behind(struct ofile *of, const char *buf, size_t size, off_t off,
		      const void **at, int *seal, bool *full)
{
	int rc;

	pthread_mutex_lock(&of->mu);
	make_room(of, seal, full);
	rc = rr__wlog_add(&of->log[of->cur], (uint64_t)off, buf, size, at);
	if (!rc) {
		rc = (int)of->cur;
		of->inflight[rc]++;
		if (*seal < 0 && !*full)
			make_room(of, seal, full);
	}
	pthread_mutex_unlock(&of->mu);
	return rc;
}

static void sent(struct ofile *of, unsigned g, ssize_t n, size_t size)
{
	pthread_mutex_lock(&of->mu);
	if (n >= 0 && (size_t)n < size)
		n = -EIO;
	if (n < 0)
		keep_err(of, (int)-n);
	if (!--of->inflight[g])
		pthread_cond_broadcast(&of->cv);
	pthread_mutex_unlock(&of->mu);
}

void rr__fuse_wb_sent(struct rrf *f, struct ofile *of, unsigned g, off_t off,
		      size_t size, ssize_t n)
{
	sent(of, g, n, size);
	rr__ftab_wb_end(&f->tab, of->ino, (uint64_t)off, size);
}

bool rr__fuse_write_behind(struct rrf *f, fuse_req_t req, struct ofile *of,
			   const char *buf, size_t size, off_t off, bool *full)
{
	const void *at;
	int g, seal = -1;

	if (rr__ftab_wb_begin(&f->tab, of->ino, (uint64_t)off, size))
		return false;
	g = log_behind(of, buf, size, off, &at, &seal, full);
	if (seal >= 0 && g < 0)
		commit_sealed(of, (unsigned)seal);
	if (g < 0) {
		rr__ftab_wb_end(&f->tab, of->ino, (uint64_t)off, size);
		return false;
	}
	fuse_reply_write(req, size);
	/* answered: the WRITE goes even if the writer is killed now */
	rr__fuse_intr_disarm(f);
	/* from its completion, the thread free for the next request */
	if (!rr__fuse_awrite(f, of, (unsigned)g, at, size, off))
		rr__fuse_wb_sent(f, of, (unsigned)g, off, size,
				 rr_nfs_pwrite(of->f, at, size, (uint64_t)off));
	if (seal >= 0)
		commit_sealed(of, (unsigned)seal);
	return true;
}

int rr__fuse_commit(struct rrf *f, struct ofile *of, bool if_full)
{
	int rc = 0;

	pthread_rwlock_wrlock(&of->io);
	if (if_full && of->log[0].bytes + of->log[1].bytes < WLOG_MAX)
		goto out; /* another writer committed them meanwhile */
	rr__ftab_wb_drain(&f->tab, of->ino);
	rc = rr_nfs_fsync(of->f);
	if (!rc) {
		pthread_mutex_lock(&of->mu);
		rr__wlog_reset(&of->log[0]);
		rr__wlog_reset(&of->log[1]);
		pthread_mutex_unlock(&of->mu);
	}
out:
	pthread_rwlock_unlock(&of->io);
	return rc;
}

void rr__fuse_wb_set_refill(struct ofile *of)
{
	rr_nfs_set_refill(of->f, refill, of);
}
