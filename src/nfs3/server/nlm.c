/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The Network Lock Manager, version 4 (XNFS chapter 10 and its version 4
 * additions), served for an exporter: byte range locks on the files of
 * its exports, kept by each export's backend (->lock, ->unlock,
 * ->lock_test), which never waits.
 *
 * A lock owner is (caller_name, svid, oh): the client host's name, the
 * process on it, and an opaque the client makes. The backend knows owners
 * by a 64-bit cookie, their SipHash under a key of this process, so a
 * peer cannot aim at another owner's cookie. NLM state belongs to a host,
 * not to a connection: locks go with UNLOCK and FREE_ALL (statd sends it
 * when a client reboots), never when a connection closes.
 *
 * Each (owner, file) with locks is a holding here: its handle, for
 * FREE_ALL to find the file again, its owner's names, for TEST to report
 * a holder, and how many ranges the backend keeps for it (->lock_count),
 * which bounds what one host, and all, may make us keep. A LOCK that
 * would pass a bound is NLM4_DENIED_NOLOCKS and counted.
 *
 * After start, for the grace period, only reclaims are granted (clients
 * taking back what they held before we restarted), as Linux's lockd
 * does; after it a reclaim is refused the same way.
 *
 * A blocking LOCK that conflicts is NLM4_BLOCKED and kept as a waiter,
 * in arrival order, bounded per host and in all (past a bound: NLM4_DENIED,
 * counted, and the client polls as Linux's does on that answer). When a
 * lock on its file goes (UNLOCK, FREE_ALL, a lock that replaces one, a
 * callback that failed), each waiter of the file is tried again; one
 * that is granted is taken for its owner at once, then told to the
 * client host's lock manager by a GRANTED callback from a thread of its
 * own (nlm_cb.c), so no NLM call waits on a client. A callback that does
 * not reach the client, or that it refuses, undoes the lock (of the
 * waiter's range: a lock the owner held over it before goes too, a case
 * Linux's lockd shares). CANCEL removes a waiter; FREE_ALL its host's.
 * Where locks are shared with other servers (CephFS's, held by the MDS),
 * a conflict may go without a word to us, so those waiters are also
 * tried again every WAITER_POLL_MS, by the callback thread.
 *
 * A client host that reboots loses its locks and waiters as by FREE_ALL
 * when its status monitor says so (SM_NOTIFY, nsm.c); every host that
 * takes or waits for a lock is told to nsm.c, which records it so that
 * our own restart can be announced to it.
 *
 * Not yet: the _MSG/_RES variants, SHARE.
 *
 * WARNING: one mutex over every holding, held across the backend's calls
 * so a holding's count stays its backend's; fine for NLM's few locks.
 */
#include "nfs3/server/nfsd.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "nlm4.h"
#include "nlm_cb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* bounds of rr_nlm_opts' 0 */
#define NLM_MAX_LOCKS	       16384
#define NLM_MAX_LOCKS_PER_HOST 1024
/* a LOCK or UNLOCK adds at most two ranges (a split, and itself) */
#define NLM_GROWTH 2
/* blocked LOCKs kept, in all and of one client host */
#define NLM_MAX_WAITING		 256
#define NLM_MAX_WAITING_PER_HOST 16
/* how often waiters on shared locks are tried again (whole seconds) */
#define WAITER_POLL_MS 1000

struct holding {
	struct holding *next;
	struct rr_nfs3_server *s;
	uint64_t owner;
	uint32_t ranges; /* the backend's count for (owner, file) */
	int32_t svid;
	uint32_t fh_len, oh_len;
	uint8_t fh[NLM4_FHSIZE];
	char *host; /* caller_name, then oh's bytes, in one allocation */
	uint8_t *oh;
};

/*
 * A blocked LOCK: its owner's names and range, the address its lock
 * manager is called back at (the peer that asked) and ours it asked at,
 * which the callback comes from.
 */
struct waiter {
	struct waiter *next;
	struct rr_nfs3_server *s;
	uint64_t owner, off, len;
	bool excl;
	int32_t svid;
	uint32_t fh_len, oh_len;
	uint8_t fh[NLM4_FHSIZE];
	char peer[INET6_ADDRSTRLEN];
	char local[INET6_ADDRSTRLEN]; /* "unknown": as routed */
	char *host; /* caller_name, then oh's bytes, in one allocation */
	uint8_t *oh;
};

struct nfsd_nlm {
	struct rr_nfs3_exporter *x;
	struct rr_nlm_opts o;
	uint8_t key[NFSD_KEY_LEN];
	uint64_t grace_end_ms;
	pthread_mutex_t mu;
	struct holding *head;
	uint32_t ranges;	/* every holding's */
	struct waiter *waiting; /* in arrival order */
	uint32_t nwaiting;
	struct waiter *grants; /* taken, for the callback thread to tell */
	pthread_cond_t cb_cv;  /* grants has one, or cb_stop */
	bool cb_stop, cb_running;
	pthread_t cb_thread;
	uint64_t cb_cookie;
	struct nfsd_nsm *nsm; /* set before serving; NULL: none */
	atomic_uint_fast64_t calls, garbage_args, bad_handles, denied_access,
		refused_cap, refused_grace, blocked, refused_waiting, callbacks,
		callback_failures;
};

/* What one call of NLM works with. */
struct nlm_call {
	struct nfsd_call c;
	struct nfsd_nlm *n;
	struct nfsd_obj o;
	struct nfsd_be_file f;
	bool opened;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool in_grace(const struct nfsd_nlm *n)
{
	return now_ms() < n->grace_end_ms;
}

static uint64_t owner_of(const struct nfsd_nlm *n, const nlm4_lock *l)
{
	size_t hn = strlen(l->caller_name), on = l->oh.nlm4_netobj_len;
	uint8_t buf[LM_MAXSTRLEN + 1 + 4 + MAXNETOBJ_SZ], h[8];
	uint32_t svid = (uint32_t)l->svid;
	uint64_t v;

	memcpy(buf, l->caller_name, hn + 1);
	memcpy(buf + hn + 1, &svid, 4);
	memcpy(buf + hn + 5, l->oh.nlm4_netobj_val, on);
	rr__nfsd_siphash(n->key, buf, hn + 5 + on, h);
	memcpy(&v, h, 8);
	return v;
}

static struct nfsd_be_lock range_of(const nlm4_lock *l, bool excl,
				    uint64_t owner)
{
	return (struct nfsd_be_lock){.owner = owner,
				     .off = l->l_offset,
				     .len = l->l_len,
				     .excl = excl};
}

/* Caller holds n->mu. The holding of owner on s's file fh, or NULL. */
static struct holding *find(struct nfsd_nlm *n, struct rr_nfs3_server *s,
			    uint64_t owner, const nlm4_netobj *fh)
{
	for (struct holding *h = n->head; h; h = h->next)
		if (h->s == s && h->owner == owner &&
		    h->fh_len == fh->nlm4_netobj_len &&
		    !memcmp(h->fh, fh->nlm4_netobj_val, h->fh_len))
			return h;
	return NULL;
}

/* Caller holds n->mu. Ranges the holdings of host keep. */
static uint32_t host_ranges(const struct nfsd_nlm *n, const char *host)
{
	uint32_t sum = 0;

	for (const struct holding *h = n->head; h; h = h->next)
		if (!strcmp(h->host, host))
			sum += h->ranges;
	return sum;
}

/* Sizes are the XDR's bounds (LM_MAXSTRLEN, MAXNETOBJ_SZ), not the peer's. */
static struct holding *holding_new(struct rr_nfs3_server *s, uint64_t owner,
				   const nlm4_lock *l)
{
	size_t hn = strlen(l->caller_name) + 1, on = l->oh.nlm4_netobj_len;
	struct holding *h = rr_calloc(1, sizeof(*h) + hn + on);

	if (!h)
		return NULL;
	h->s = s;
	h->owner = owner;
	h->svid = l->svid;
	h->fh_len = l->fh.nlm4_netobj_len;
	memcpy(h->fh, l->fh.nlm4_netobj_val, h->fh_len);
	h->host = (char *)(h + 1);
	memcpy(h->host, l->caller_name, hn);
	h->oh = (uint8_t *)h->host + hn;
	h->oh_len = (uint32_t)on;
	memcpy(h->oh, l->oh.nlm4_netobj_val, on);
	return h;
}

/* Caller holds n->mu. Takes h's new count from the backend; drops it at 0. */
static void holding_recount(struct nlm_call *nc, struct holding *h)
{
	struct nfsd_nlm *n = nc->n;
	int cnt = rr__nfsd_be(&nc->c)->lock_count(&nc->c, &nc->f, h->owner);

	if (cnt < 0)
		return; /* keep the old count: a bound errs high, not low */
	n->ranges = n->ranges - h->ranges + (uint32_t)cnt;
	h->ranges = (uint32_t)cnt;
	if (cnt)
		return;
	for (struct holding **pp = &n->head; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			free(h);
			return;
		}
}

static void warn_peer(struct nlm_call *nc, const char *what)
{
	char host[INET6_ADDRSTRLEN] = "a blocked lock's host";

	if (nc->c.req) /* none when a waiter is tried again */
		rr__nfsd_host_of(&nc->c, host);
	rr_warn_rl("nlm4: %s: %s", host, what);
}

/*
 * The export fh is of, its rule for the caller, and the file opened in
 * its backend: NLM4_GRANTED, or the status to answer.
 */
static nlm4_stats nlm_open(struct nlm_call *nc, const nlm4_netobj *fh)
{
	nfs_fh3 nfh = {.data = {.data_len = fh->nlm4_netobj_len,
				.data_val = fh->nlm4_netobj_val}};
	struct nfsd_policy pol;
	int rc;

	if (fh->nlm4_netobj_len > NLM4_FHSIZE ||
	    !rr__nfsd_ex_pick(&nc->c, fh->nlm4_netobj_val, fh->nlm4_netobj_len,
			      &pol)) {
		atomic_fetch_add(&nc->n->bad_handles, 1);
		return NLM4_STALE_FH;
	}
	if (nc->c.denied) {
		atomic_fetch_add(&nc->n->denied_access, 1);
		warn_peer(nc, "not a client of the export: no locks");
		return NLM4_DENIED_NOLOCKS;
	}
	rr__nfsd_ident_from_cred(&pol, rr_svc_cred(nc->c.req), &nc->c.id);
	if (rr__nfsd_resolve(&nc->c, &nfh, &nc->o) != NFS3_OK) {
		atomic_fetch_add(&nc->n->bad_handles, 1);
		return NLM4_STALE_FH;
	}
	/*
	 * Reading the file is right enough to lock it, whichever the lock,
	 * as Linux's lockd (NFSD_MAY_LOCK) lets it be; writing it too, for a
	 * file the caller may only write.
	 */
	nc->f = (struct nfsd_be_file){.access = NFSD_BE_READ};
	rc = rr__nfsd_be(&nc->c)->open(&nc->c, &nc->o, &nc->f);
	if (rc == -EACCES) {
		nc->f = (struct nfsd_be_file){.access = NFSD_BE_WRITE};
		rc = rr__nfsd_be(&nc->c)->open(&nc->c, &nc->o, &nc->f);
	}
	nc->opened = rc == 0;
	if (rc == -ESTALE || rc == -ENOENT)
		return NLM4_STALE_FH;
	return rc ? NLM4_DENIED_NOLOCKS : NLM4_GRANTED;
}

static void nlm_close(struct nlm_call *nc)
{
	if (nc->opened)
		rr__nfsd_be(&nc->c)->close(&nc->c, &nc->f);
	nc->opened = false;
	rr__nfsd_call_close(&nc->c);
}

/* Caller holds n->mu. Would a lock of host pass a bound? */
static bool over_cap(struct nfsd_nlm *n, const char *host)
{
	return n->ranges + NLM_GROWTH > n->o.max_locks ||
	       host_ranges(n, host) + NLM_GROWTH > n->o.max_locks_per_host;
}

/*
 * Whether w's conflict may go without this server hearing of it: its
 * backend's locks are shared with others (CephFS's, with every server
 * and client of the file system).
 */
static bool polled(const struct waiter *w)
{
	return w->s->be.ops->locks_shared;
}

static nlm4_stats block(struct nlm_call *nc, const nlm4_lockargs *a,
			uint64_t owner);

static nlm4_stats lock_locked(struct nlm_call *nc, const nlm4_lockargs *a)
{
	struct nfsd_nlm *n = nc->n;
	uint64_t owner = owner_of(n, &a->alock);
	struct nfsd_be_lock l = range_of(&a->alock, a->exclusive, owner);
	struct holding *h = find(n, nc->c.s, owner, &a->alock.fh);
	int rc;

	if (over_cap(n, a->alock.caller_name)) {
		atomic_fetch_add(&n->refused_cap, 1);
		warn_peer(nc, "over its lock bound: NLM4_DENIED_NOLOCKS");
		return NLM4_DENIED_NOLOCKS;
	}
	if (!h) {
		h = holding_new(nc->c.s, owner, &a->alock);
		if (!h)
			return NLM4_DENIED_NOLOCKS;
		h->next = n->head;
		n->head = h;
	}
	rc = rr__nfsd_be(&nc->c)->lock(&nc->c, &nc->f, &l);
	holding_recount(nc, h);
	if (rc == -EAGAIN)
		return a->block ? block(nc, a, owner) : NLM4_DENIED;
	return rc ? NLM4_DENIED_NOLOCKS : NLM4_GRANTED;
}

/* ------------------------------------------------------ blocked LOCKs */

static bool waiter_is(const struct waiter *w, struct rr_nfs3_server *s,
		      uint64_t owner, const nlm4_lock *l, bool excl)
{
	return w->s == s && w->owner == owner && w->off == l->l_offset &&
	       w->len == l->l_len && w->excl == excl &&
	       w->fh_len == l->fh.nlm4_netobj_len &&
	       !memcmp(w->fh, l->fh.nlm4_netobj_val, w->fh_len);
}

/* Sizes are the XDR's bounds (LM_MAXSTRLEN, MAXNETOBJ_SZ), not the peer's. */
static struct waiter *waiter_new(struct nlm_call *nc, const nlm4_lockargs *a,
				 uint64_t owner)
{
	const nlm4_lock *l = &a->alock;
	size_t hn = strlen(l->caller_name) + 1, on = l->oh.nlm4_netobj_len;
	struct waiter *w = rr_calloc(1, sizeof(*w) + hn + on);

	if (!w)
		return NULL;
	w->s = nc->c.s;
	w->owner = owner;
	w->off = l->l_offset;
	w->len = l->l_len;
	w->excl = a->exclusive;
	w->svid = l->svid;
	w->fh_len = l->fh.nlm4_netobj_len;
	memcpy(w->fh, l->fh.nlm4_netobj_val, w->fh_len);
	rr__nfsd_host_of(&nc->c, w->peer);
	rr__nfsd_addr_str(nc->c.req ? rr_svc_req_local(nc->c.req) : NULL,
			  w->local);
	w->host = (char *)(w + 1);
	memcpy(w->host, l->caller_name, hn);
	w->oh = (uint8_t *)w->host + hn;
	w->oh_len = (uint32_t)on;
	memcpy(w->oh, l->oh.nlm4_netobj_val, on);
	return w;
}

/* The waiter's lock as NLM writes it; it points into w. */
static nlm4_lock waiter_lock(struct waiter *w)
{
	return (nlm4_lock){.caller_name = w->host,
			   .fh = {.nlm4_netobj_len = w->fh_len,
				  .nlm4_netobj_val = (char *)w->fh},
			   .oh = {.nlm4_netobj_len = w->oh_len,
				  .nlm4_netobj_val = (char *)w->oh},
			   .svid = w->svid,
			   .l_offset = w->off,
			   .l_len = w->len};
}

/*
 * Caller holds n->mu. Keeps a's LOCK as a waiter: NLM4_BLOCKED, or
 * NLM4_DENIED past a bound. The same request again (a retransmission,
 * or a client asking anew) is the waiter it already is.
 */
static nlm4_stats block(struct nlm_call *nc, const nlm4_lockargs *a,
			uint64_t owner)
{
	struct nfsd_nlm *n = nc->n;
	struct waiter **pp = &n->waiting, *w;
	uint32_t of_host = 0;

	for (; *pp; pp = &(*pp)->next) {
		if (waiter_is(*pp, nc->c.s, owner, &a->alock, a->exclusive))
			return NLM4_BLOCKED;
		of_host += !strcmp((*pp)->host, a->alock.caller_name);
	}
	if (n->nwaiting >= NLM_MAX_WAITING ||
	    of_host >= NLM_MAX_WAITING_PER_HOST) {
		atomic_fetch_add(&n->refused_waiting, 1);
		warn_peer(nc, "over its bound of blocked locks: NLM4_DENIED");
		return NLM4_DENIED;
	}
	w = waiter_new(nc, a, owner);
	if (!w)
		return NLM4_DENIED;
	*pp = w; /* the last: waiters are tried in arrival order */
	n->nwaiting++;
	atomic_fetch_add(&n->blocked, 1);
	if (polled(w))
		pthread_cond_signal(&n->cb_cv); /* its timer starts */
	return NLM4_BLOCKED;
}

/*
 * Caller holds n->mu. Opens w's file as the server, as free_host does
 * (the waiter's caller was admitted when it asked), and runs fn.
 */
static nlm4_stats on_waiter_file(struct nfsd_nlm *n, struct waiter *w,
				 nlm4_stats (*fn)(struct nlm_call *nc,
						  struct waiter *w))
{
	struct nlm_call nc = {.c = {.s = w->s}, .n = n};
	nfs_fh3 fh = {
		.data = {.data_len = w->fh_len, .data_val = (char *)w->fh}};
	nlm4_stats st = NLM4_STALE_FH;

	if (rr__nfsd_resolve(&nc.c, &fh, &nc.o) == NFS3_OK) {
		nc.f = (struct nfsd_be_file){.access = NFSD_BE_READ};
		nc.opened = !rr__nfsd_be(&nc.c)->open(&nc.c, &nc.o, &nc.f);
	}
	if (nc.opened)
		st = fn(&nc, w);
	nlm_close(&nc);
	rr__nfsd_arena_free(&nc.c);
	return st;
}

static nlm4_stats grant_fn(struct nlm_call *nc, struct waiter *w)
{
	nlm4_lockargs a = {.exclusive = w->excl, .alock = waiter_lock(w)};

	return lock_locked(nc, &a); /* block false: no waiter again */
}

static nlm4_stats undo_fn(struct nlm_call *nc, struct waiter *w)
{
	struct nfsd_be_lock l = {
		.owner = w->owner, .off = w->off, .len = w->len};
	nlm4_netobj fh = {.nlm4_netobj_len = w->fh_len,
			  .nlm4_netobj_val = (char *)w->fh};
	struct holding *h;

	rr__nfsd_be(&nc->c)->unlock(&nc->c, &nc->f, &l);
	h = find(nc->n, w->s, w->owner, &fh);
	if (h)
		holding_recount(nc, h);
	return NLM4_GRANTED;
}

/*
 * Caller holds n->mu. Tries again each waiter of s's file fh (every
 * waiter when s is NULL; only the polled ones when polled_only), in
 * order: one granted goes to the callback thread, one that can never be
 * (its file gone, a bound) is dropped.
 */
static void wake(struct nfsd_nlm *n, struct rr_nfs3_server *s,
		 const uint8_t *fh, uint32_t fh_len, bool polled_only)
{
	for (struct waiter **pp = &n->waiting; *pp;) {
		struct waiter *w = *pp, **gp;
		nlm4_stats st;

		if ((s && (w->s != s || w->fh_len != fh_len ||
			   memcmp(w->fh, fh, fh_len))) ||
		    (polled_only && !polled(w))) {
			pp = &w->next;
			continue;
		}
		st = on_waiter_file(n, w, grant_fn);
		if (st == NLM4_DENIED) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		n->nwaiting--;
		w->next = NULL;
		if (st != NLM4_GRANTED) {
			free(w);
			continue;
		}
		for (gp = &n->grants; *gp; gp = &(*gp)->next)
			;
		*gp = w;
		pthread_cond_signal(&n->cb_cv);
	}
}

static void wake_file(struct nfsd_nlm *n, struct rr_nfs3_server *s,
		      const nlm4_netobj *fh)
{
	wake(n, s, (const uint8_t *)fh->nlm4_netobj_val, fh->nlm4_netobj_len,
	     false);
}

/* The callback for w, which holds its lock now: 0 when the client took it. */
static int tell(struct nfsd_nlm *n, struct waiter *w)
{
	uint64_t cookie;
	nlm4_testargs a;

	pthread_mutex_lock(&n->mu);
	cookie = n->cb_cookie++;
	pthread_mutex_unlock(&n->mu);
	a = (nlm4_testargs){.cookie = {.nlm4_netobj_len = sizeof(cookie),
				       .nlm4_netobj_val = (char *)&cookie},
			    .exclusive = w->excl,
			    .alock = waiter_lock(w)};
	return rr__nfsd_nlm_granted(
		w->peer, strcmp(w->local, "unknown") ? w->local : NULL, &a);
}

static bool any_polled(const struct nfsd_nlm *n)
{
	for (const struct waiter *w = n->waiting; w; w = w->next)
		if (polled(w))
			return true;
	return false;
}

/*
 * Caller holds n->mu. Waits for a grant to tell; while some waiter's
 * conflict may go elsewhere, it is a timer too: every WAITER_POLL_MS
 * those waiters are tried again.
 */
static void await_grants(struct nfsd_nlm *n)
{
	while (!n->cb_stop && !n->grants) {
		struct timespec ts;

		if (!any_polled(n)) {
			pthread_cond_wait(&n->cb_cv, &n->mu);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += WAITER_POLL_MS / 1000;
		if (pthread_cond_timedwait(&n->cb_cv, &n->mu, &ts) == ETIMEDOUT)
			wake(n, NULL, NULL, 0, true);
	}
}

static void *cb_main(void *arg)
{
	struct nfsd_nlm *n = arg;

	pthread_setname_np(pthread_self(), "rr-nlm-cb");

	pthread_mutex_lock(&n->mu);
	for (;;) {
		struct waiter *w;
		int rc;

		await_grants(n);
		if (n->cb_stop)
			break;
		w = n->grants;
		n->grants = w->next;
		pthread_mutex_unlock(&n->mu);
		rc = tell(n, w);
		pthread_mutex_lock(&n->mu);
		if (rc) {
			atomic_fetch_add(&n->callback_failures, 1);
			rr_warn_rl("nlm4: %s: GRANTED callback failed (%s): "
				   "the lock is undone",
				   w->peer, strerror(-rc));
			on_waiter_file(n, w, undo_fn);
			wake(n, w->s, w->fh, w->fh_len, false);
		} else {
			atomic_fetch_add(&n->callbacks, 1);
		}
		free(w);
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

static void waiters_free(struct waiter *w)
{
	while (w) {
		struct waiter *next = w->next;

		free(w);
		w = next;
	}
}

/* Caller holds n->mu. Drops host's waiters (FREE_ALL): how many. */
static uint32_t drop_host_waiters(struct nfsd_nlm *n, const char *host)
{
	uint32_t dropped = 0;

	for (struct waiter **pp = &n->waiting; *pp;) {
		struct waiter *w = *pp;

		if (strcmp(w->host, host)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		n->nwaiting--;
		dropped++;
		free(w);
	}
	return dropped;
}

static nlm4_stats do_cancel(struct nlm_call *nc, const nlm4_cancargs *a)
{
	struct nfsd_nlm *n = nc->n;
	uint64_t owner = owner_of(n, &a->alock);
	nlm4_stats st;

	if (in_grace(n)) {
		atomic_fetch_add(&n->refused_grace, 1);
		return NLM4_DENIED_GRACE_PERIOD;
	}
	st = nlm_open(nc, &a->alock.fh);
	if (st != NLM4_GRANTED)
		return st;
	pthread_mutex_lock(&n->mu);
	for (struct waiter **pp = &n->waiting; *pp; pp = &(*pp)->next) {
		struct waiter *w = *pp;

		if (waiter_is(w, nc->c.s, owner, &a->alock, a->exclusive)) {
			*pp = w->next;
			n->nwaiting--;
			free(w);
			break;
		}
	}
	pthread_mutex_unlock(&n->mu);
	return NLM4_GRANTED;
}

static nlm4_stats do_lock(struct nlm_call *nc, const nlm4_lockargs *a)
{
	nlm4_stats st;

	if (in_grace(nc->n) != (bool)a->reclaim) {
		atomic_fetch_add(&nc->n->refused_grace, 1);
		return NLM4_DENIED_GRACE_PERIOD;
	}
	st = nlm_open(nc, &a->alock.fh);
	if (st != NLM4_GRANTED)
		return st;
	pthread_mutex_lock(&nc->n->mu);
	st = lock_locked(nc, a);
	if (st == NLM4_GRANTED && nc->n->waiting)
		wake_file(nc->n, nc->c.s, &a->alock.fh);
	pthread_mutex_unlock(&nc->n->mu);
	if ((st == NLM4_GRANTED || st == NLM4_BLOCKED) && nc->n->nsm) {
		char peer[INET6_ADDRSTRLEN];

		rr__nfsd_host_of(&nc->c, peer);
		rr__nfsd_nsm_monitor(nc->n->nsm, a->alock.caller_name, peer);
	}
	return st;
}

static nlm4_stats do_unlock(struct nlm_call *nc, const nlm4_unlockargs *a)
{
	struct nfsd_nlm *n = nc->n;
	uint64_t owner = owner_of(n, &a->alock);
	struct nfsd_be_lock l = range_of(&a->alock, false, owner);
	nlm4_stats st = nlm_open(nc, &a->alock.fh);
	struct holding *h;
	int rc;

	if (st != NLM4_GRANTED)
		return st;
	pthread_mutex_lock(&n->mu);
	rc = rr__nfsd_be(&nc->c)->unlock(&nc->c, &nc->f, &l);
	h = find(n, nc->c.s, owner, &a->alock.fh);
	if (h)
		holding_recount(nc, h);
	if (!rc && n->waiting)
		wake_file(n, nc->c.s, &a->alock.fh);
	pthread_mutex_unlock(&n->mu);
	return rc ? NLM4_DENIED_NOLOCKS : NLM4_GRANTED;
}

/* The holder TEST reports: its owner's svid and oh when we know them. */
static void holder_of(struct nlm_call *nc, const struct nfsd_be_lock *l,
		      nlm4_holder *out)
{
	struct nfsd_nlm *n = nc->n;

	*out = (nlm4_holder){
		.exclusive = l->excl, .l_offset = l->off, .l_len = l->len};
	pthread_mutex_lock(&n->mu);
	for (struct holding *h = n->head; h; h = h->next) {
		if (h->s != nc->c.s || h->owner != l->owner)
			continue;
		out->svid = h->svid;
		out->oh.nlm4_netobj_val = rr__nfsd_alloc(&nc->c, h->oh_len + 1);
		if (out->oh.nlm4_netobj_val) {
			memcpy(out->oh.nlm4_netobj_val, h->oh, h->oh_len);
			out->oh.nlm4_netobj_len = h->oh_len;
		}
		break;
	}
	pthread_mutex_unlock(&n->mu);
}

static nlm4_stats do_test(struct nlm_call *nc, const nlm4_testargs *a,
			  nlm4_holder *holder)
{
	uint64_t owner = owner_of(nc->n, &a->alock);
	struct nfsd_be_lock l = range_of(&a->alock, a->exclusive, owner);
	nlm4_stats st;
	int rc;

	if (in_grace(nc->n)) {
		atomic_fetch_add(&nc->n->refused_grace, 1);
		return NLM4_DENIED_GRACE_PERIOD;
	}
	st = nlm_open(nc, &a->alock.fh);
	if (st != NLM4_GRANTED)
		return st;
	rc = rr__nfsd_be(&nc->c)->lock_test(&nc->c, &nc->f, &l);
	if (rc == -EAGAIN) {
		holder_of(nc, &l, holder);
		return NLM4_DENIED;
	}
	return rc ? NLM4_DENIED_NOLOCKS : NLM4_GRANTED;
}

/*
 * FREE_ALL: every lock the host's owners hold, in every export. The
 * files are opened as the server (c.id zero), as statd's notice has no
 * caller of its own. A holding whose file will not open stays, counted.
 */
static void free_host(struct nfsd_nlm *n, struct rr_svc_req *req,
		      const char *host, struct nfsd_freed *out)
{
	uint32_t before;

	pthread_mutex_lock(&n->mu);
	before = n->ranges;
	for (struct holding *h = n->head, *next; h; h = next) {
		struct nlm_call nc = {.c = {.s = h->s, .req = req}, .n = n};
		struct nfsd_be_lock all = {.owner = h->owner};
		nfs_fh3 fh = {.data = {.data_len = h->fh_len,
				       .data_val = (char *)h->fh}};

		next = h->next;
		if (strcmp(h->host, host))
			continue;
		if (rr__nfsd_resolve(&nc.c, &fh, &nc.o) == NFS3_OK) {
			nc.f = (struct nfsd_be_file){.access = NFSD_BE_READ};
			nc.opened =
				!rr__nfsd_be(&nc.c)->open(&nc.c, &nc.o, &nc.f);
		}
		if (nc.opened &&
		    !rr__nfsd_be(&nc.c)->unlock(&nc.c, &nc.f, &all))
			holding_recount(&nc, h);
		nlm_close(&nc);
		rr__nfsd_arena_free(&nc.c);
	}
	out->ranges = before - n->ranges;
	out->waiters = drop_host_waiters(n, host);
	wake(n, NULL, NULL, 0, false);
	pthread_mutex_unlock(&n->mu);
}

void rr__nfsd_nlm_free_host(struct nfsd_nlm *n, const char *host,
			    struct nfsd_freed *out)
{
	free_host(n, NULL, host, out);
}

void rr__nfsd_nlm_set_nsm(struct nfsd_nlm *n, struct nfsd_nsm *nsm)
{
	n->nsm = nsm;
}

/*
 * Decodes the arguments and refuses what rpcgen would take but XDR does
 * not mean: a string cut at a NUL ("host\0junk" would be "host"), padding
 * that is not zero; encoding them again must give the same bytes.
 */
bool rr__nfsd_xdr_args(struct nfsd_call *c, xdrproc_t xp, void *args)
{
	size_t len;
	const void *in = rr_svc_args_xdr(c->req, &len);
	char *again;
	u_int used;
	XDR x;

	xdrmem_create(&x, (char *)in, (u_int)len, XDR_DECODE);
	if (!xp(&x, args))
		return false;
	used = xdr_getpos(&x);
	again = rr__nfsd_alloc(c, used ? used : 1);
	if (!again)
		return false;
	xdrmem_create(&x, again, used, XDR_ENCODE);
	return xp(&x, args) && xdr_getpos(&x) == used &&
	       !memcmp(again, in, used);
}

bool rr__nfsd_xdr_res(struct nfsd_call *c, xdrproc_t xp, void *res)
{
	size_t cap;
	void *out = rr_svc_res_buf(c->req, &cap);
	XDR x;

	xdrmem_create(&x, out, (u_int)cap, XDR_ENCODE);
	return xp(&x, res) && !rr_svc_set_res(c->req, xdr_getpos(&x), NULL, 0);
}

/* Every procedure's arguments and result, and what answers them. */
union nlm_args {
	nlm4_testargs test;
	nlm4_lockargs lock;
	nlm4_cancargs cancel;
	nlm4_unlockargs unlock;
	nlm4_notify notify;
};

static nlm4_stats answer(struct nlm_call *nc, uint32_t proc, union nlm_args *a,
			 nlm4_testres *tr)
{
	switch (proc) {
	case NLMPROC4_TEST:
		tr->stat.stat =
			do_test(nc, &a->test, &tr->stat.nlm4_testrply_u.holder);
		return tr->stat.stat;
	case NLMPROC4_LOCK:
		return do_lock(nc, &a->lock);
	case NLMPROC4_CANCEL:
		return do_cancel(nc, &a->cancel);
	case NLMPROC4_UNLOCK:
		return do_unlock(nc, &a->unlock);
	default: {
		struct nfsd_freed fr;

		free_host(nc->n, nc->c.req, a->notify.name, &fr);
		return NLM4_GRANTED;
	}
	}
}

static const xdrproc_t xargs[] = {
	[NLMPROC4_TEST] = (xdrproc_t)rr__xdr_nlm4_testargs,
	[NLMPROC4_LOCK] = (xdrproc_t)rr__xdr_nlm4_lockargs,
	[NLMPROC4_CANCEL] = (xdrproc_t)rr__xdr_nlm4_cancargs,
	[NLMPROC4_UNLOCK] = (xdrproc_t)rr__xdr_nlm4_unlockargs,
	[NLMPROC4_FREE_ALL] = (xdrproc_t)rr__xdr_nlm4_notify,
};

#define NLM_NPROCS (NLMPROC4_FREE_ALL + 1)

/* Every argument but FREE_ALL's starts with the cookie to echo. */
static bool reply(struct nlm_call *nc, uint32_t proc, union nlm_args *a)
{
	nlm4_testres tr = {.cookie = a->test.cookie};
	nlm4_res r = {.cookie = a->test.cookie};
	nlm4_stats st = answer(nc, proc, a, &tr);

	if (proc == NLMPROC4_FREE_ALL)
		return !rr_svc_set_res(nc->c.req, 0, NULL, 0);
	if (proc == NLMPROC4_TEST)
		return rr__nfsd_xdr_res(&nc->c, (xdrproc_t)rr__xdr_nlm4_testres,
					&tr);
	r.stat.stat = st;
	return rr__nfsd_xdr_res(&nc->c, (xdrproc_t)rr__xdr_nlm4_res, &r);
}

static uint32_t nlm_run(struct nlm_call *nc, uint32_t proc)
{
	union nlm_args a;
	uint32_t rc = RR_SYSTEM_ERR;

	if (proc == NLMPROC4_NULL)
		return rr_svc_set_res(nc->c.req, 0, NULL, 0) ? RR_SYSTEM_ERR
							     : RR_SUCCESS;
	if (proc >= NLM_NPROCS || !xargs[proc])
		return RR_PROC_UNAVAIL;
	memset(&a, 0, sizeof(a));
	if (!rr__nfsd_xdr_args(&nc->c, xargs[proc], &a)) {
		atomic_fetch_add(&nc->n->garbage_args, 1);
		warn_peer(nc, "arguments that do not decode");
		rc = RR_GARBAGE_ARGS;
	} else if (reply(nc, proc, &a)) {
		rc = RR_SUCCESS;
	}
	xdr_free(xargs[proc], (char *)&a);
	return rc;
}

static uint32_t nlm_handler(struct rr_svc_req *req, void *arg)
{
	struct nfsd_nlm *n = arg;
	struct nlm_call nc = {.c = {.req = req, .ex = n->x}, .n = n};
	uint32_t rc;

	rc = nlm_run(&nc, rr_svc_req_proc(req));
	nlm_close(&nc);
	rr__nfsd_arena_free(&nc.c);
	atomic_fetch_add(&n->calls, 1);
	return rc;
}

static const rr_svc_fn nlm_table[NLM_NPROCS] = {
	[0 ... NLM_NPROCS - 1] = nlm_handler,
};

int rr__nfsd_nlm_create(struct rr_nfs3_exporter *x, const struct rr_nlm_opts *o,
			struct nfsd_nlm **out)
{
	struct nfsd_nlm *n = rr_calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	if (getrandom(n->key, sizeof(n->key), 0) != sizeof(n->key)) {
		free(n);
		return -EIO;
	}
	n->x = x;
	n->o = *o;
	if (!n->o.max_locks)
		n->o.max_locks = NLM_MAX_LOCKS;
	if (!n->o.max_locks_per_host)
		n->o.max_locks_per_host = NLM_MAX_LOCKS_PER_HOST;
	n->grace_end_ms = now_ms() + (uint64_t)o->grace_s * 1000;
	pthread_mutex_init(&n->mu, NULL);
	rr_cond_init_mono(&n->cb_cv);
	if (pthread_create(&n->cb_thread, NULL, cb_main, n)) {
		pthread_cond_destroy(&n->cb_cv);
		pthread_mutex_destroy(&n->mu);
		free(n);
		return -EAGAIN;
	}
	n->cb_running = true;
	*out = n;
	return 0;
}

void rr__nfsd_nlm_destroy(struct nfsd_nlm *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	n->cb_stop = true;
	pthread_cond_signal(&n->cb_cv);
	pthread_mutex_unlock(&n->mu);
	if (n->cb_running)
		pthread_join(n->cb_thread, NULL);
	waiters_free(n->waiting);
	waiters_free(n->grants);
	pthread_cond_destroy(&n->cb_cv);
	while (n->head) {
		struct holding *h = n->head;

		n->head = h->next;
		free(h);
	}
	pthread_mutex_destroy(&n->mu);
	free(n);
}

void rr__nfsd_nlm_prog(struct nfsd_nlm *n, struct rr_svc_prog *p)
{
	*p = (struct rr_svc_prog){.prog = NLM_PROG,
				  .vers = NLM4_VERS,
				  .nprocs = NLM_NPROCS,
				  .procs = nlm_table,
				  .arg = n};
}

void rr__nfsd_nlm_stats(struct nfsd_nlm *n, struct rr_nlm_stats *out)
{
	pthread_mutex_lock(&n->mu);
	out->locks = n->ranges;
	out->waiting = n->nwaiting;
	pthread_mutex_unlock(&n->mu);
	out->blocked = atomic_load(&n->blocked);
	out->refused_waiting = atomic_load(&n->refused_waiting);
	out->callbacks = atomic_load(&n->callbacks);
	out->callback_failures = atomic_load(&n->callback_failures);
	out->calls = atomic_load(&n->calls);
	out->garbage_args = atomic_load(&n->garbage_args);
	out->bad_handles = atomic_load(&n->bad_handles);
	out->denied_access = atomic_load(&n->denied_access);
	out->refused_cap = atomic_load(&n->refused_cap);
	out->refused_grace = atomic_load(&n->refused_grace);
}
