// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Byte-range locks through the server's lock manager: NLM version 4
 * (XNFS chapter 10 and its version 4 additions) over TCP, on a
 * connection of its own made at a mount's first lock call.
 *
 * NLM knows an owner as (caller_name, svid, oh). caller_name is this
 * host's name; svid the owner's process; oh this mount's random id and
 * the caller's owner number, so that two mounts in one process are two
 * clients whose owners never merge (as two hosts' would not), and a
 * FUSE mount's owners (the kernel's lock owner ids) stay apart.
 *
 * A waiting lock is asked for again without block, with a backoff,
 * rather than asked with block and granted by a GRANTED callback: that
 * needs a callback service registered with this host's rpcbind, which a
 * user-level client does not have. The cost is latency (up to the
 * backoff's cap after the holder lets go) and fairness (no queue).
 */
#include <errno.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "nfsc.h"
#include "nlm4.h"

#define RPCBIND_TIMEOUT_MS 1000
#define WAIT_FIRST_MS	   10
#define WAIT_MAX_MS	   500
#define OH_LEN		   16

struct nfsc_nlm {
	struct rr_rpc_clnt *x;
	uint8_t id[8]; /* this mount's, the first half of every oh */
	char host[LM_MAXSTRLEN + 1];
	atomic_uint_fast64_t cookie;
};

/* Made once per mount; a mount's first lock calls may race for it. */
static pthread_mutex_t nlm_mu = PTHREAD_MUTEX_INITIALIZER;

static int nlm_connect(struct rr_nfs *n, struct nfsc_nlm *m)
{
	struct nfsc_xprt_opts o = {.timeout_ms = n->timeout_ms,
				   .connect_timeout_ms = n->connect_timeout_ms,
				   .max_bulk = 4096};
	uint16_t port = n->nlmport;
	char why[256];
	int rc;

	if (!port)
		port = rr__nfsc_rpcbind_port(n->host, NLM_PROG, NLM4_VERS,
					     RPCBIND_TIMEOUT_MS);
	if (!port)
		return rr__nfsc_fail(-ENOLCK,
				     "no lock manager: %s's rpcbind names no "
				     "NLM version 4 over TCP (nlmport=N "
				     "gives its port)",
				     n->host);
	rc = rr__nfsc_probe_tcp(n->host, port, NLM_PROG, NLM4_VERS,
				nfsc_probe_ms(n), "NLM");
	if (!rc)
		rc = rr__nfsc_xprt_tcp(n->host, port, &o, &m->x);
	if (!rc)
		return 0;
	snprintf(why, sizeof(why), "%s", rr_nfs_error());
	return rr__nfsc_fail(-ENOLCK, "no lock manager at %s port %u: %s",
			     n->host, port, why);
}

static int nlm_get(struct rr_nfs *n, struct nfsc_nlm **out)
{
	struct nfsc_nlm *m;
	int rc = 0;

	pthread_mutex_lock(&nlm_mu);
	m = n->nlm;
	if (!m) {
		m = rr_calloc(1, sizeof(*m));
		rc = m ? 0 : -ENOMEM;
		if (!rc && getrandom(m->id, sizeof(m->id), 0) !=
				   (ssize_t)sizeof(m->id))
			rc = -EIO;
		if (!rc && gethostname(m->host, sizeof(m->host) - 1))
			strcpy(m->host, "localhost");
		if (!rc)
			rc = nlm_connect(n, m);
		if (rc) {
			free(m);
			m = NULL;
		} else {
			n->nlm = m;
		}
	}
	pthread_mutex_unlock(&nlm_mu);
	*out = m;
	return rc;
}

void rr__nfsc_nlm_free(struct rr_nfs *n)
{
	if (!n->nlm)
		return;
	rr_rpc_clnt_destroy(n->nlm->x);
	free(n->nlm);
	n->nlm = NULL;
}

/* What one call sends: the lock's description and the bytes it points at. */
struct nlm_req {
	struct nfsc_nlm *m;
	nlm4_lock lk;
	uint8_t oh[OH_LEN];
	uint64_t cookie;
	nlm4_netobj cookie_obj;
};

static int req_init(struct rr_nfs_file *f, const struct rr_nfs_lock *l,
		    struct nlm_req *r)
{
	uint64_t owner = l->owner ? l->owner : (uint64_t)getpid();
	int rc;

	if (l->len && l->start + l->len < l->start)
		return -EINVAL; /* NLM's ranges end at 2^64 */
	rc = nlm_get(f->n, &r->m);
	if (rc)
		return rc;
	memcpy(r->oh, r->m->id, 8);
	memcpy(r->oh + 8, &owner, 8);
	r->cookie = atomic_fetch_add(&r->m->cookie, 1);
	r->cookie_obj = (nlm4_netobj){.nlm4_netobj_len = sizeof(r->cookie),
				      .nlm4_netobj_val = (char *)&r->cookie};
	r->lk = (nlm4_lock){.caller_name = r->m->host,
			    .fh = {.nlm4_netobj_len = f->fh.len,
				   .nlm4_netobj_val = (char *)f->fh.data},
			    .oh = {.nlm4_netobj_len = OH_LEN,
				   .nlm4_netobj_val = (char *)r->oh},
			    .svid = l->pid ? l->pid : (int32_t)getpid(),
			    .l_offset = l->start,
			    .l_len = l->len};
	return 0;
}

static int nlm_call(struct rr_nfs_file *f, struct nlm_req *r, uint32_t proc,
		    xdrproc_t xa, void *a, xdrproc_t xr, void *res)
{
	return rr__nfsc_xcall(r->m->x, rr__nfsc_cred(f->n), NLM_PROG, NLM4_VERS,
			      proc, xa, a, xr, res, 0);
}

/* 1 for a grace period (ask again later); else 0 or a negative errno. */
static int stat_errno(nlm4_stats st)
{
	switch (st) {
	case NLM4_GRANTED:
		return 0;
	case NLM4_DENIED:
	case NLM4_BLOCKED: /* never asked for: we send no block */
		return -EAGAIN;
	case NLM4_DENIED_GRACE_PERIOD:
		return 1;
	case NLM4_DEADLCK:
		return -EDEADLK;
	case NLM4_ROFS:
		return -EROFS;
	case NLM4_STALE_FH:
		return -ESTALE;
	case NLM4_FBIG:
		return -EFBIG;
	default: /* DENIED_NOLOCKS, FAILED, and what XNFS does not define */
		return -ENOLCK;
	}
}

static int res_call(struct rr_nfs_file *f, struct nlm_req *r, uint32_t proc,
		    xdrproc_t xa, void *a)
{
	nlm4_res res;
	int rc;

	memset(&res, 0, sizeof(res));
	rc = nlm_call(f, r, proc, xa, a, (xdrproc_t)rr__xdr_nlm4_res, &res);
	if (rc)
		return rc;
	rc = stat_errno(res.stat.stat);
	xdr_free((xdrproc_t)rr__xdr_nlm4_res, (char *)&res);
	return rc;
}

static int lock_once(struct rr_nfs_file *f, const struct rr_nfs_lock *l)
{
	struct nlm_req r;
	nlm4_lockargs a;
	int rc = req_init(f, l, &r);

	if (rc)
		return rc;
	a = (nlm4_lockargs){.cookie = r.cookie_obj,
			    .exclusive = l->type == F_WRLCK,
			    .alock = r.lk,
			    .state = 0};
	return res_call(f, &r, NLMPROC4_LOCK, (xdrproc_t)rr__xdr_nlm4_lockargs,
			&a);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Sleeps ms; -EINTR when a signal cut it short, as fcntl's F_SETLKW. */
static int pause_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (long)(ms % 1000) * 1000000};

	return nanosleep(&ts, NULL) ? -EINTR : 0;
}

static int do_lock(struct rr_nfs_file *f, const struct rr_nfs_lock *l,
		   int flags)
{
	bool wait = flags & RR_NFS_LOCK_WAIT;
	int tmo = f->n->timeout_ms;
	uint64_t grace_end = now_ms() + (uint64_t)(tmo > 0 ? tmo : 60000);
	unsigned backoff = WAIT_FIRST_MS;

	if (l->type != F_RDLCK && l->type != F_WRLCK)
		return -EINVAL;
	for (;;) {
		int rc = lock_once(f, l);

		if (rc == 1 && now_ms() >= grace_end)
			return rr__nfsc_fail(-ENOLCK, "lock: the server is "
						      "still in its grace "
						      "period");
		if (rc < 0 && (rc != -EAGAIN || !wait))
			return rc;
		if (!rc)
			return 0;
		if (l->cancelled && l->cancelled(l->arg))
			return -EINTR;
		rc = pause_ms(backoff);
		if (rc)
			return rc;
		backoff = backoff * 2 > WAIT_MAX_MS ? WAIT_MAX_MS : backoff * 2;
	}
}

static int do_unlock(struct rr_nfs_file *f, const struct rr_nfs_lock *l)
{
	struct nlm_req r;
	nlm4_unlockargs a;
	int rc = req_init(f, l, &r);

	if (rc)
		return rc;
	a = (nlm4_unlockargs){.cookie = r.cookie_obj, .alock = r.lk};
	rc = res_call(f, &r, NLMPROC4_UNLOCK,
		      (xdrproc_t)rr__xdr_nlm4_unlockargs, &a);
	/* a server in grace lets unlocks through; one that does not: ENOLCK */
	return rc == 1 ? -ENOLCK : rc;
}

static void holder_to_lock(const nlm4_holder *h, struct rr_nfs_lock *l)
{
	l->type = h->exclusive ? F_WRLCK : F_RDLCK;
	l->start = h->l_offset;
	l->len = h->l_len;
	l->pid = h->svid;
}

static int do_testlock(struct rr_nfs_file *f, struct rr_nfs_lock *l)
{
	struct nlm_req r;
	nlm4_testargs a;
	nlm4_testres res;
	int rc;

	if (l->type != F_RDLCK && l->type != F_WRLCK)
		return -EINVAL;
	rc = req_init(f, l, &r);
	if (rc)
		return rc;
	a = (nlm4_testargs){.cookie = r.cookie_obj,
			    .exclusive = l->type == F_WRLCK,
			    .alock = r.lk};
	memset(&res, 0, sizeof(res));
	rc = nlm_call(f, &r, NLMPROC4_TEST, (xdrproc_t)rr__xdr_nlm4_testargs,
		      &a, (xdrproc_t)rr__xdr_nlm4_testres, &res);
	if (rc)
		return rc;
	rc = stat_errno(res.stat.stat);
	if (!rc)
		l->type = F_UNLCK;
	else if (rc == -EAGAIN)
		holder_to_lock(&res.stat.nlm4_testrply_u.holder, l);
	xdr_free((xdrproc_t)rr__xdr_nlm4_testres, (char *)&res);
	if (rc == 1)
		return rr__nfsc_fail(-ENOLCK, "testlock: the server is in its "
					      "grace period");
	return rc == -EAGAIN ? 0 : rc;
}

int rr_nfs_lock(struct rr_nfs_file *f, const struct rr_nfs_lock *l, int flags)
{
	return NFSC_SAY(do_lock(f, l, flags), "lock %llu+%llu",
			(unsigned long long)l->start,
			(unsigned long long)l->len);
}

int rr_nfs_unlock(struct rr_nfs_file *f, const struct rr_nfs_lock *l)
{
	return NFSC_SAY(do_unlock(f, l), "unlock %llu+%llu",
			(unsigned long long)l->start,
			(unsigned long long)l->len);
}

int rr_nfs_testlock(struct rr_nfs_file *f, struct rr_nfs_lock *l)
{
	return NFSC_SAY(do_testlock(f, l), "testlock %llu+%llu",
			(unsigned long long)l->start,
			(unsigned long long)l->len);
}
