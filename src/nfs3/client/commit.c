// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The write verifier (RFC 1813 sections 3.3.7 and 3.3.21): a server hands
 * the same verifier to every WRITE and COMMIT until it restarts, and a
 * restart may lose what was written UNSTABLE and not committed. So every
 * WRITE reply records its range and verifier here, and a COMMIT whose
 * verifier is not the one the writes saw (or writes that saw two) means
 * those ranges must be written again and committed again. Their bytes come
 * from the caller's refill (rr_nfs_set_refill): the library keeps the
 * ranges, not the data.
 *
 * A WRITE that failed is kept too: fsync and close report it instead of
 * sending a COMMIT, so a transfer whose connection is gone fails once,
 * within its timeout, not again after a second one in close.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "nfsc.h"

#define RESEND_ROUNDS 4		 /* restarts survived in one fsync */
#define RESEND_BUF    (4u << 20) /* bytes refilled and written at once */

void rr__nfsc_note_write(struct rr_nfs_file *f, uint64_t off, uint32_t len,
			 const WRITE3resok *ok)
{
	pthread_mutex_lock(&f->mu);
	if (ok->committed != FILE_SYNC &&
	    rr__nfsc_ranges_add(&f->unstable, off, len))
		f->untracked = true;
	if (f->have_verf && memcmp(f->verf, ok->verf, sizeof(f->verf)))
		f->verf_lost = true;
	memcpy(f->verf, ok->verf, sizeof(f->verf));
	f->have_verf = true;
	pthread_mutex_unlock(&f->mu);
}

void rr__nfsc_note_write_err(struct rr_nfs_file *f, int err)
{
	pthread_mutex_lock(&f->mu);
	if (!f->write_err)
		f->write_err = err;
	pthread_mutex_unlock(&f->mu);
}

bool rr__nfsc_pending(struct rr_nfs_file *f)
{
	bool any;

	pthread_mutex_lock(&f->mu);
	any = f->unstable.n || f->untracked || f->verf_lost || f->write_err;
	pthread_mutex_unlock(&f->mu);
	return any;
}

/* What one COMMIT is to cover, taken out of f so later writes stay out. */
struct pending {
	struct nfsc_ranges r;
	bool untracked, lost, have_verf;
	uint8_t verf[NFS3_WRITEVERFSIZE];
};

static int take(struct rr_nfs_file *f, struct pending *p)
{
	int err;

	pthread_mutex_lock(&f->mu);
	err = f->write_err;
	f->write_err = 0;
	p->r = f->unstable;
	f->unstable = f->spare;
	memset(&f->spare, 0, sizeof(f->spare));
	p->untracked = f->untracked;
	p->lost = f->verf_lost;
	p->have_verf = f->have_verf;
	memcpy(p->verf, f->verf, sizeof(p->verf));
	f->untracked = f->verf_lost = false;
	pthread_mutex_unlock(&f->mu);
	return err;
}

/* p's ranges are done with: their array becomes f's spare, or goes. */
static void done(struct rr_nfs_file *f, struct pending *p)
{
	pthread_mutex_lock(&f->mu);
	if (!f->spare.r) {
		f->spare = p->r;
		f->spare.n = 0;
		memset(&p->r, 0, sizeof(p->r));
	}
	pthread_mutex_unlock(&f->mu);
	rr__nfsc_ranges_free(&p->r);
}

/* A COMMIT that did not cover p: it is pending again. */
static void put_back(struct rr_nfs_file *f, struct pending *p)
{
	pthread_mutex_lock(&f->mu);
	if (rr__nfsc_ranges_merge(&f->unstable, &p->r))
		f->untracked = true;
	f->untracked |= p->untracked;
	f->verf_lost |= p->lost;
	pthread_mutex_unlock(&f->mu);
	done(f, p);
}

static int commit(struct rr_nfs_file *f, uint8_t *verf)
{
	COMMIT3args a = {0};
	COMMIT3res r = {0};
	int rc;

	nfsc_fh_arg(&a.file, &f->fh);
	rc = rr__nfsc_call(f->n, NFSPROC3_COMMIT,
			   (xdrproc_t)rr__xdr_COMMIT3args, &a,
			   (xdrproc_t)rr__xdr_COMMIT3res, &r, 0);
	if (rc)
		return rc;
	rc = rr_nfs_errno(r.status);
	if (!rc)
		memcpy(verf, r.COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
	xdr_free((xdrproc_t)rr__xdr_COMMIT3res, &r);
	return rc;
}

/* Said apart from a plain EIO: the data may need sending again. */
static int writes_lost(void)
{
	return rr__nfsc_fail(-EIO,
			     "the server restarted (its write verifier "
			     "changed) and writes not yet committed may be "
			     "lost; nothing can send them again");
}

static int resend_range(struct rr_nfs_file *f, uint8_t *buf, size_t cap,
			const struct nfsc_range *r)
{
	for (uint64_t off = r->off; off < r->end;) {
		size_t len = r->end - off < cap ? (size_t)(r->end - off) : cap;
		ssize_t n = f->refill(f->refill_arg, buf, len, off);

		if (n >= 0 && (size_t)n != len)
			n = rr__nfsc_fail(-EIO,
					  "refill gave %zd of %zu bytes "
					  "at %llu",
					  n, len, (unsigned long long)off);
		if (n < 0)
			return (int)n;
		n = rr_nfs_pwrite(f, buf, len, off);
		if (n < 0)
			return (int)n;
		off += len;
	}
	return 0;
}

/*
 * Writes p's ranges again, under a verifier that starts anew: the first
 * reply after the restart sets it.
 */
static int resend(struct rr_nfs_file *f, const struct pending *p)
{
	uint64_t total = 0;
	uint8_t *buf;
	int rc = 0;

	if (!f->refill || p->untracked)
		return writes_lost();
	pthread_mutex_lock(&f->mu);
	f->have_verf = false;
	pthread_mutex_unlock(&f->mu);
	for (uint32_t i = 0; i < p->r.n; i++)
		total += p->r.r[i].end - p->r.r[i].off;
	buf = rr_malloc(total < RESEND_BUF ? (size_t)total : RESEND_BUF);
	if (!buf)
		return -ENOMEM;
	for (uint32_t i = 0; !rc && i < p->r.n; i++)
		rc = resend_range(
			f, buf, total < RESEND_BUF ? (size_t)total : RESEND_BUF,
			&p->r.r[i]);
	free(buf);
	return rc;
}

/*
 * One round: 0 when what was pending is committed under the verifier
 * its writes saw; 1 when it was written again and needs another COMMIT.
 */
static int commit_round(struct rr_nfs_file *f)
{
	struct pending p;
	uint8_t verf[NFS3_WRITEVERFSIZE];
	int rc = take(f, &p);

	if (rc) {
		put_back(f, &p);
		return rc;
	}
	if (!p.lost) {
		rc = commit(f, verf);
		if (rc) {
			put_back(f, &p);
			return rc;
		}
		if (!p.have_verf || !memcmp(verf, p.verf, sizeof(verf))) {
			done(f, &p);
			return 0;
		}
		p.lost = true;
	}
	rc = resend(f, &p);
	if (rc) {
		put_back(f, &p);
		return rc;
	}
	done(f, &p);
	return 1;
}

/*
 * Nothing written UNSTABLE since the last COMMIT (FILE_SYNC writes, or
 * none): no COMMIT, as the kernel client sends none either.
 */
int rr__nfsc_fsync(struct rr_nfs_file *f)
{
	if (!rr__nfsc_pending(f))
		return 0;
	for (int i = 0; i <= RESEND_ROUNDS; i++) {
		int rc = commit_round(f);

		if (rc <= 0)
			return rc;
	}
	return rr__nfsc_fail(-EIO,
			     "the server restarted %d times while "
			     "writes were sent again",
			     RESEND_ROUNDS);
}

void rr_nfs_set_refill(struct rr_nfs_file *f, rr_nfs_refill_fn fn, void *arg)
{
	f->refill = fn;
	f->refill_arg = arg;
}
