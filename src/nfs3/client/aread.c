// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One READ answered from its completion (aread.h). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "aread.h"

#define AREAD_INLINE 2048 /* smaller READs travel inline over RDMA too */

/* Sends [off + got, off + len) into buf + got. */
static int issue(struct nfsc_aread *a);

static void finish(struct nfsc_aread *a, int rc, const char *data)
{
	a->done(a, rc, data, a->got);
}

/*
 * Data that came inline sits after the reply's header: where it is, or,
 * when more is to come, moved to buf + got, after what came before it.
 */
static const char *take_bytes(struct nfsc_aread *a, size_t at, uint32_t n,
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

static void on_reply(struct rr_call *call, int rc, void *arg)
{
	struct nfsc_aread *a = arg;
	const char *data = NULL;
	uint32_t n = 0;
	bool eof = false, more;
	size_t at;

	(void)call;
	rc = rr__nfsc_rpc_errno(rc, &a->call);
	if (!rc && rr__nfsc_jukebox(&a->call)) {
		rc = rr__nfsc_jukebox_next(a->f->n, &a->jb, &a->again_ms);
		finish(a, rc ? rc : NFSC_AREAD_PARKED, NULL);
		return;
	}
	if (!rc)
		rc = rr__nfsc_read_res(&a->call, a->len - a->got, &n, &eof,
				       &at);
	if (rc) {
		finish(a, rc, NULL);
		return;
	}
	more = !eof && a->got + n < a->len;
	data = take_bytes(a, at, n, more);
	a->got += n;
	if (more && n) {
		a->jb = (struct nfsc_jukebox){0};
		rc = issue(a);
		if (rc)
			finish(a, rc, NULL);
		return;
	}
	/* no bytes and no end: stop, as pread does */
	finish(a, more ? -EIO : 0, data);
}

static int issue(struct nfsc_aread *a)
{
	struct rr_rpc_clnt *x = a->f->n->x;
	uint32_t left = a->len - a->got;
	bool ddp = rr_rpc_clnt_ddp(x) && left > AREAD_INLINE;
	int rc;

	memset(&a->call, 0, sizeof(a->call));
	a->call.prog = NFS_PROGRAM;
	a->call.vers = NFS_V3;
	a->call.proc = NFSPROC3_READ;
	a->call.cred = &a->cred;
	a->call.args = a->args;
	if (ddp) {
		a->call.res = a->hdr;
		a->call.res_cap = sizeof(a->hdr);
		a->call.res_bulk = a->buf + a->got;
		a->call.res_bulk_cap = left;
	} else {
		a->call.res = a->buf + a->got;
		a->call.res_cap = left + NFSC_AREAD_SLACK;
	}
	rc = rr__nfsc_read_args(a->args, sizeof(a->args), &a->f->fh,
				a->off + a->got, left, &a->call.args_len);
	return rc ? rc : rr_rpc_clnt_call_async(x, &a->call, on_reply, a);
}

int rr__nfsc_aread_start(struct nfsc_aread *a, struct rr_nfs_file *f,
			 uint64_t off, uint32_t len)
{
	if (!len || len > f->n->rtmax)
		return -EINVAL;
	a->f = f;
	a->cred = *rr__nfsc_cred(f->n);
	a->off = off;
	a->len = len;
	a->got = 0;
	a->again_ms = 0;
	a->jb = (struct nfsc_jukebox){0};
	return issue(a);
}

int rr__nfsc_aread_resend(struct nfsc_aread *a)
{
	return issue(a);
}

int rr__nfsc_aread_cancel(struct nfsc_aread *a)
{
	return rr_rpc_clnt_cancel(a->f->n->x, &a->call);
}
