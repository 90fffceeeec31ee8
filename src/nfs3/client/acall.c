// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One READ or WRITE answered from its completion (acall.h). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "acall.h"

#define ACALL_INLINE 2048 /* smaller transfers travel inline over RDMA too */

/* Sends [off + got, off + len): into buf + got, or from it. */
static int issue(struct nfsc_acall *a);

static void finish(struct nfsc_acall *a, int rc, const char *data)
{
	if (rc < 0 && a->write)
		rr__nfsc_note_write_err(a->f, rc);
	a->done(a, rc, data, a->got);
}

/*
 * READ data that came inline sits after the reply's header: where it
 * is, or, when more is to come, moved to buf + got, after what came
 * before it.
 */
static const char *take_bytes(struct nfsc_acall *a, size_t at, uint32_t n,
			      bool more)
{
	char *to = a->buf + a->got;

	if (at == SIZE_MAX)
		return a->buf; /* placed at buf + got by RDMA Write */
	if (!a->got && !more)
		return a->buf + at;
	memmove(to, to + at, n);
	return a->buf;
}

/* What a reply moved: n bytes; *more when the rest is to be sent. */
static int moved(struct nfsc_acall *a, uint32_t *n, const char **data,
		 bool *more)
{
	uint32_t left = a->len - a->got;
	bool eof = false;
	size_t at;
	int rc;

	if (a->write) {
		rc = rr__nfsc_write_res(a->f, &a->call, a->off + a->got, left,
					n);
		*data = NULL;
		*more = !rc && *n < left;
		return rc;
	}
	rc = rr__nfsc_read_res(&a->call, left, n, &eof, &at);
	if (rc)
		return rc;
	*more = !eof && *n < left;
	*data = take_bytes(a, at, *n, *more);
	return 0;
}

/* From the completion: the rest of a short transfer (acall.h: mu). */
static int issue_again(struct nfsc_acall *a)
{
	int rc;

	pthread_mutex_lock(&a->mu);
	while (a->cancelling && !pthread_equal(a->canceller, pthread_self()))
		pthread_cond_wait(&a->cv, &a->mu);
	a->issuing++;
	pthread_mutex_unlock(&a->mu);
	rc = issue(a);
	pthread_mutex_lock(&a->mu);
	a->issuing--;
	pthread_mutex_unlock(&a->mu);
	return rc;
}

static void on_reply(struct rr_call *call, int rc, void *arg)
{
	struct nfsc_acall *a = arg;
	const char *data = NULL;
	uint32_t n = 0;
	bool more = false;

	(void)call;
	rc = rr__nfsc_rpc_errno(rc, &a->call);
	if (!rc && rr__nfsc_jukebox(&a->call)) {
		rc = rr__nfsc_jukebox_next(a->f->n, &a->jb, &a->again_ms);
		finish(a, rc ? rc : NFSC_ACALL_PARKED, NULL);
		return;
	}
	if (!rc)
		rc = moved(a, &n, &data, &more);
	if (rc) {
		finish(a, rc, NULL);
		return;
	}
	a->got += n;
	if (more && n) {
		a->jb = (struct nfsc_jukebox){0};
		rc = issue_again(a);
		if (rc)
			finish(a, rc, NULL);
		return;
	}
	/* nothing moved and no end: stop, as pread and pwrite do */
	finish(a, more ? -EIO : 0, data);
}

static void shape_read(struct nfsc_acall *a, uint32_t left, bool ddp)
{
	if (ddp) {
		a->call.res = a->hdr;
		a->call.res_cap = sizeof(a->hdr);
		a->call.res_bulk = a->buf + a->got;
		a->call.res_bulk_cap = left;
	} else {
		a->call.res = a->buf + a->got;
		a->call.res_cap = left + NFSC_ACALL_SLACK;
	}
}

static int issue(struct nfsc_acall *a)
{
	struct rr_rpc_clnt *x = a->f->n->x;
	uint32_t left = a->len - a->got;
	uint64_t off = a->off + a->got;
	int rc;

	memset(&a->call, 0, sizeof(a->call));
	a->call.prog = NFS_PROGRAM;
	a->call.vers = NFS_V3;
	a->call.proc = a->write ? NFSPROC3_WRITE : NFSPROC3_READ;
	a->call.cred = &a->cred;
	a->call.args = a->args;
	if (a->write) {
		a->call.res = a->hdr;
		a->call.res_cap = sizeof(a->hdr);
		a->call.arg_bulk = a->buf + a->got;
		a->call.arg_bulk_len = left;
		rc = rr__nfsc_write_args(a->args, sizeof(a->args), &a->f->fh,
					 off, left, false, &a->call.args_len);
	} else {
		shape_read(a, left, rr_rpc_clnt_ddp(x) && left > ACALL_INLINE);
		rc = rr__nfsc_read_args(a->args, sizeof(a->args), &a->f->fh,
					off, left, &a->call.args_len);
	}
	return rc ? rc : rr_rpc_clnt_call_async(x, &a->call, on_reply, a);
}

static int start(struct nfsc_acall *a, struct rr_nfs_file *f, char *buf,
		 bool write, uint64_t off, uint32_t len)
{
	if (!len || len > (write ? f->n->wtmax : f->n->rtmax))
		return -EINVAL;
	a->buf = buf;
	a->write = write;
	a->f = f;
	a->cred = *rr__nfsc_cred(f->n);
	a->off = off;
	a->len = len;
	a->got = 0;
	a->again_ms = 0;
	a->jb = (struct nfsc_jukebox){0};
	return issue(a);
}

int rr__nfsc_aread_start(struct nfsc_acall *a, struct rr_nfs_file *f, char *buf,
			 uint64_t off, uint32_t len)
{
	return start(a, f, buf, false, off, len);
}

int rr__nfsc_awrite_start(struct nfsc_acall *a, struct rr_nfs_file *f,
			  const void *data, uint64_t off, uint32_t len)
{
	/* only read from: the call's arg_bulk is const */
	return start(a, f, (char *)data, true, off, len);
}

int rr__nfsc_acall_resend(struct nfsc_acall *a)
{
	return issue(a);
}

int rr__nfsc_acall_cancel(struct nfsc_acall *a)
{
	int rc = -EBUSY;

	pthread_mutex_lock(&a->mu);
	if (a->issuing || a->cancelling) {
		pthread_mutex_unlock(&a->mu);
		return rc;
	}
	a->cancelling = true;
	a->canceller = pthread_self();
	pthread_mutex_unlock(&a->mu);
	rc = rr_rpc_clnt_cancel(a->f->n->x, &a->call);
	pthread_mutex_lock(&a->mu);
	a->cancelling = false;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return rc;
}

void rr__nfsc_acall_init(struct nfsc_acall *a, nfsc_acall_fn done)
{
	a->done = done;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
}

void rr__nfsc_acall_fini(struct nfsc_acall *a)
{
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
}
