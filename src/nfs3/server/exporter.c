/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * An exports table served: one server (struct rr_nfs3_server) per export
 * directory, its members, behind one NFS and one MOUNT program.
 *
 * Every member seals its handles with a key of its own (the state key
 * hashed with the export's path), so an NFS call finds its member by the
 * first handle of its arguments: the member whose key the handle's MAC
 * verifies under. Then the table says what the caller's address may do
 * there (the most specific rule, exports.c), and the call runs as that
 * rule says: denied (every handle STALE) when no rule admits it.
 *
 * Reload swaps the table under a write lock; each call reads the table
 * under the read lock only while it picks its member and rule, and runs
 * with a copy of the rule. Members are never removed while the exporter
 * lives (a call may be running in one): an export dropped from the table
 * keeps its member, whose handles are STALE to everyone, and comes back
 * to it when the export is added again. So members are bounded by the
 * distinct paths exported since start (NFSD_MEMBERS_MAX).
 *
 * What a member costs is what one server costs: its open-file cache (a
 * sixteenth of RLIMIT_NOFILE at most, and a reaper thread), its
 * handle-to-path cache (up to handle_cache_bytes) and its walk budget are
 * its own, not shares of one; fine for the handful of exports a server
 * has, to be pooled before tables of hundreds are.
 *
 * A call's first handle picks the member; a second handle of another
 * export (RENAME, LINK across exports) does not verify there, and is
 * answered NFS3ERR_XDEV, as Linux's nfsd answers.
 */
#include "nfs3/server/nfsd.h"

#include "base/alloc.h"
#include "base/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFSD_MEMBERS_MAX (4 * NFSD_EXPORTS_MAX)
#define NPROCS		 (NFSPROC3_COMMIT + 1)

struct rr_nfs3_exporter {
	struct rr_nfs3_server_opts o;
	char *state_dir;
	pthread_rwlock_t lock;
	struct rr_nfs3_exports *cur; /* under lock */
	struct rr_nfs3_server *m[NFSD_MEMBERS_MAX];
	uint32_t nm;	      /* written under the write lock */
	struct nfsd_nlm *nlm; /* NULL: NLM not served */
	struct nfsd_nsm *nsm; /* NULL: NSM not served */
};

static void errf(char *err, size_t len, const char *what, const char *path,
		 int rc)
{
	if (err && len)
		snprintf(err, len, "%s %s: %s", what, path, strerror(-rc));
}

/* The member's own key: the state key hashed with its path. */
static int derive_key(struct rr_nfs3_server *s, const char *path)
{
	size_t n = strlen(path);
	uint8_t *buf = rr_malloc(n + 1), key[NFSD_KEY_LEN];

	if (!buf)
		return -ENOMEM;
	memcpy(buf + 1, path, n);
	for (int half = 0; half < 2; half++) {
		buf[0] = (uint8_t)half;
		rr__nfsd_siphash(s->key, buf, n + 1, key + 8 * half);
	}
	memcpy(s->key, key, sizeof(key));
	free(buf);
	return 0;
}

/* err: what went wrong, when the backend says more than an errno */
static int member_new(struct rr_nfs3_exporter *x, const struct nfsd_export *e,
		      struct rr_nfs3_server **out, char *err, size_t errlen)
{
	struct rr_nfs3_server_opts mo = x->o;
	int rc;

	mo.export_path = e->path;
	mo.state_dir = x->state_dir;
	mo.read_only = true; /* unused: each call's rule says */
	mo.root_squash = true;
	*out = NULL;
	rc = rr__nfsd_server_create_be(&mo, &e->be, out, err, errlen);
	if (!rc)
		rc = derive_key(*out, e->path);
	if (rc && *out) {
		rr_nfs3_server_destroy(*out);
		*out = NULL;
	}
	return rc;
}

/* The member serving path already, or -1. */
static int member_of_path(const struct rr_nfs3_exporter *x, uint32_t nm,
			  const char *path)
{
	for (uint32_t i = 0; i < nm; i++)
		if (!strcmp(x->m[i]->export_path, path))
			return (int)i;
	return -1;
}

/*
 * Gives each export of t its member, making the missing ones into
 * x->m[x->nm...] without publishing them: *added of them. Only the
 * reloading thread writes x->m, so reading it here needs no lock.
 */
static int bind_members(struct rr_nfs3_exporter *x, struct rr_nfs3_exports *t,
			uint32_t *added, char *err, size_t errlen)
{
	uint32_t nm = x->nm;
	int rc = 0;

	*added = 0;
	for (uint32_t i = 0; i < t->n && !rc; i++) {
		int k = member_of_path(x, nm + *added, t->ex[i].path);

		if (k >= 0) {
			t->ex[i].member = (uint32_t)k;
			continue;
		}
		if (nm + *added >= NFSD_MEMBERS_MAX) {
			rc = -ENOSPC;
			errf(err, errlen, "export", t->ex[i].path, rc);
			break;
		}
		if (err && errlen)
			err[0] = '\0';
		rc = member_new(x, &t->ex[i], &x->m[nm + *added], err, errlen);
		if (rc) {
			if (!err || !errlen || !err[0])
				errf(err, errlen, "export", t->ex[i].path, rc);
			break;
		}
		t->ex[i].member = nm + (*added)++;
	}
	if (rc)
		for (; *added; (*added)--)
			rr_nfs3_server_destroy(x->m[nm + *added - 1]);
	return rc;
}

int rr_nfs3_exporter_create(const struct rr_nfs3_server_opts *o,
			    struct rr_nfs3_exports *t,
			    struct rr_nfs3_exporter **out, char *err,
			    size_t errlen)
{
	struct rr_nfs3_exporter *x;
	int rc;

	if (!o || !t || !t->n || !out) {
		rr_nfs3_exports_free(t);
		return -EINVAL;
	}
	x = rr_calloc(1, sizeof(*x));
	if (!x) {
		rr_nfs3_exports_free(t);
		return -ENOMEM;
	}
	x->o = *o;
	x->state_dir = o->state_dir ? rr_strdup(o->state_dir) : NULL;
	pthread_rwlock_init(&x->lock, NULL);
	rc = o->state_dir && !x->state_dir ? -ENOMEM : 0;
	if (!rc)
		rc = rr_nfs3_exporter_reload(x, t, err, errlen);
	else
		rr_nfs3_exports_free(t);
	if (rc) {
		rr_nfs3_exporter_destroy(x);
		return rc;
	}
	*out = x;
	return 0;
}

int rr_nfs3_exporter_reload(struct rr_nfs3_exporter *x,
			    struct rr_nfs3_exports *t, char *err, size_t errlen)
{
	struct rr_nfs3_exports *old;
	uint32_t added;
	int rc = bind_members(x, t, &added, err, errlen);

	if (rc) {
		rr_nfs3_exports_free(t);
		return rc;
	}
	pthread_rwlock_wrlock(&x->lock);
	x->nm += added;
	old = x->cur;
	x->cur = t;
	pthread_rwlock_unlock(&x->lock);
	rr_nfs3_exports_free(old);
	return 0;
}

void rr_nfs3_exporter_destroy(struct rr_nfs3_exporter *x)
{
	if (!x)
		return;
	rr__nfsd_nsm_destroy(x->nsm); /* before NLM: it calls into it */
	rr__nfsd_nlm_destroy(x->nlm);
	for (uint32_t i = 0; i < x->nm; i++)
		rr_nfs3_server_destroy(x->m[i]);
	rr_nfs3_exports_free(x->cur);
	pthread_rwlock_destroy(&x->lock);
	free(x->state_dir);
	free(x);
}

struct rr_nfs3_server *rr__nfsd_ex_member(struct rr_nfs3_exporter *x,
					  uint32_t i)
{
	struct rr_nfs3_server *s = NULL;

	pthread_rwlock_rdlock(&x->lock);
	if (i < x->nm)
		s = x->m[i];
	pthread_rwlock_unlock(&x->lock);
	return s;
}

/* The rule for peer in member m's export. Caller holds the lock. */
static bool rule_for(const struct rr_nfs3_exporter *x, uint32_t m,
		     const struct sockaddr *peer, struct nfsd_policy *pol)
{
	for (uint32_t i = 0; i < x->cur->n; i++) {
		const struct nfsd_export *e = &x->cur->ex[i];
		const struct nfsd_rule *r;

		if (e->member != m)
			continue;
		r = rr__nfsd_export_match(e, peer);
		if (r)
			*pol = r->pol;
		return r != NULL;
	}
	return false;
}

/* The first handle of an NFS call's arguments (every one starts so). */
static bool first_fh(struct rr_svc_req *req, const uint8_t **fh, size_t *n)
{
	size_t len;
	const uint8_t *a = rr_svc_args_xdr(req, &len);
	uint32_t be;

	if (!a || len < 4)
		return false;
	memcpy(&be, a, 4);
	*n = ntohl(be);
	*fh = a + 4;
	return *n <= NFS3_FHSIZE && *n <= len - 4;
}

/* The member whose key made the handle, or -1. Caller holds the lock. */
static int member_of_fh(const struct rr_nfs3_exporter *x, const uint8_t *fh,
			size_t n)
{
	for (uint32_t i = 0; i < x->nm; i++)
		if (rr__nfsd_fh_sealed(x->m[i]->key, fh, n))
			return (int)i;
	return -1;
}

bool rr__nfsd_ex_owns_fh(struct rr_nfs3_exporter *x, const void *fh, size_t len)
{
	int m;

	pthread_rwlock_rdlock(&x->lock);
	m = member_of_fh(x, fh, len);
	pthread_rwlock_unlock(&x->lock);
	return m >= 0;
}

/*
 * A handle no member made goes to the first, whose resolving answers
 * BADHANDLE; NULL (no handle) too. Policies where no rule applies are the
 * most restrictive, for what runs before a handle is looked at.
 */
static uint32_t ex_nfs_handler(struct rr_svc_req *req, void *arg)
{
	struct rr_nfs3_exporter *x = arg;
	struct nfsd_call c = {.req = req, .ex = x};
	struct nfsd_policy pol = {.ro = true,
				  .squash = NFSD_SQUASH_ALL,
				  .anon_uid = NFSD_ANON,
				  .anon_gid = NFSD_ANON};
	const struct sockaddr *peer = rr_svc_req_peer(req);
	const uint8_t *fh;
	size_t n;
	int m = -1;

	pthread_rwlock_rdlock(&x->lock);
	if (first_fh(req, &fh, &n))
		m = member_of_fh(x, fh, n);
	c.s = x->m[m < 0 ? 0 : m];
	if (m >= 0 && !rule_for(x, (uint32_t)m, peer, &pol))
		c.denied = true;
	pthread_rwlock_unlock(&x->lock);
	if (c.denied) {
		char who[INET6_ADDRSTRLEN];

		rr__nfsd_host_of(&c, who);
		rr_warn_rl("nfs3: %s: not a client of export %s: STALE", who,
			   c.s->export_path);
	}
	return rr__nfsd_nfs_call(&c, &pol);
}

bool rr__nfsd_ex_pick(struct nfsd_call *c, const void *fh, size_t len,
		      struct nfsd_policy *pol)
{
	struct rr_nfs3_exporter *x = c->ex;
	int m;

	pthread_rwlock_rdlock(&x->lock);
	m = member_of_fh(x, fh, len);
	if (m >= 0) {
		c->s = x->m[m];
		c->denied =
			!rule_for(x, (uint32_t)m, rr_svc_req_peer(c->req), pol);
	}
	pthread_rwlock_unlock(&x->lock);
	return m >= 0;
}

int rr_nfs3_exporter_nlm(struct rr_nfs3_exporter *x,
			 const struct rr_nlm_opts *o, struct rr_svc_prog *nlm)
{
	int rc;

	if (x->nlm)
		return -EBUSY;
	rc = rr__nfsd_nlm_create(x, o, &x->nlm);
	if (!rc)
		rr__nfsd_nlm_prog(x->nlm, nlm);
	return rc;
}

void rr_nfs3_exporter_nlm_stats(struct rr_nfs3_exporter *x,
				struct rr_nlm_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (x->nlm)
		rr__nfsd_nlm_stats(x->nlm, out);
}

int rr_nfs3_exporter_nsm(struct rr_nfs3_exporter *x,
			 const struct rr_nsm_opts *o, struct rr_svc_prog *nsm)
{
	int rc;

	if (!x->nlm)
		return -EINVAL;
	if (x->nsm)
		return -EBUSY;
	rc = rr__nfsd_nsm_create(x->nlm, x->state_dir, o, &x->nsm);
	if (rc)
		return rc;
	rr__nfsd_nsm_prog(x->nsm, nsm);
	rr__nfsd_nlm_set_nsm(x->nlm, x->nsm);
	return 0;
}

int rr_nfs3_exporter_nsm_notify(struct rr_nfs3_exporter *x)
{
	return x->nsm ? rr__nfsd_nsm_notify(x->nsm) : -EINVAL;
}

void rr_nfs3_exporter_nsm_stats(struct rr_nfs3_exporter *x,
				struct rr_nsm_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (x->nsm)
		rr__nfsd_nsm_stats(x->nsm, out);
}

static const rr_svc_fn ex_nfs_table[NPROCS] = {
	[0 ... NPROCS - 1] = ex_nfs_handler,
};

static const rr_svc_fn ex_mount_table[MOUNTPROC3_EXPORT + 1] = {
	[0 ... MOUNTPROC3_EXPORT] = rr__nfsd_ex_mount_handler,
};

void rr_nfs3_exporter_progs(struct rr_nfs3_exporter *x, struct rr_svc_prog *nfs,
			    struct rr_svc_prog *mount)
{
	rr_nfs3_server_progs(x->m[0], nfs, mount);
	if (nfs) {
		nfs->procs = ex_nfs_table;
		nfs->arg = x;
	}
	if (mount) {
		mount->procs = ex_mount_table;
		mount->arg = x;
	}
}

mountstat3 rr__nfsd_ex_route(struct nfsd_call *c, const char *dir)
{
	struct rr_nfs3_exporter *x = c->ex;
	const struct nfsd_export *best = NULL;
	size_t best_len = 0;
	mountstat3 st = MNT3ERR_NOENT;
	struct nfsd_policy pol;

	pthread_rwlock_rdlock(&x->lock);
	for (uint32_t i = 0; i < x->cur->n; i++) {
		const struct nfsd_export *e = &x->cur->ex[i];
		const char *rel = rr__nfsd_below(x->m[e->member], dir);

		if (rel && (!best || (size_t)(rel - dir) > best_len)) {
			best = e;
			best_len = (size_t)(rel - dir);
		}
	}
	if (best) {
		c->s = x->m[best->member];
		st = rule_for(x, best->member, rr_svc_req_peer(c->req), &pol)
			     ? MNT3_OK
			     : MNT3ERR_ACCES;
	}
	pthread_rwlock_unlock(&x->lock);
	if (st == MNT3ERR_ACCES) {
		char who[INET6_ADDRSTRLEN];

		rr__nfsd_host_of(c, who);
		rr_warn_rl("mount3: %s: not a client of export %s: refused",
			   who, c->s->export_path);
	}
	return st;
}

/* One export's node for EXPORT, from c's arena. Caller holds the lock. */
static struct exportnode *ex_node(struct nfsd_call *c,
				  const struct rr_nfs3_exporter *x,
				  const struct nfsd_export *e)
{
	struct exportnode *n = rr__nfsd_alloc(c, sizeof(*n));
	groups *tail;

	if (!n)
		return NULL;
	memset(n, 0, sizeof(*n));
	n->ex_dir = rr__nfsd_strdup(
		c, e->path[0] == '/' ? e->path : x->m[e->member]->export_real);
	tail = &n->ex_groups;
	for (uint32_t i = 0; i < e->nrules && n->ex_dir; i++) {
		struct groupnode *g;

		/* a host name's addresses are one group, as written */
		if (i && !strcmp(e->rules[i].spec, e->rules[i - 1].spec))
			continue;
		g = rr__nfsd_alloc(c, sizeof(*g));
		if (!g)
			return NULL;
		g->gr_name = rr__nfsd_strdup(c, e->rules[i].spec);
		g->gr_next = NULL;
		if (!g->gr_name)
			return NULL;
		*tail = g;
		tail = &g->gr_next;
	}
	return n->ex_dir ? n : NULL;
}

bool rr__nfsd_ex_list(struct nfsd_call *c, XDR *out)
{
	struct rr_nfs3_exporter *x = c->ex;
	exports head = NULL, *tail = &head;
	bool ok = true;

	pthread_rwlock_rdlock(&x->lock);
	for (uint32_t i = 0; i < x->cur->n && ok; i++) {
		struct exportnode *n = ex_node(c, x, &x->cur->ex[i]);

		ok = n != NULL;
		if (ok) {
			*tail = n;
			tail = &n->ex_next;
		}
	}
	pthread_rwlock_unlock(&x->lock);
	return ok && rr__xdr_exports(out, &head);
}

void rr_nfs3_exporter_describe(struct rr_nfs3_exporter *x, char *buf,
			       size_t len)
{
	size_t n = 0;

	if (!len)
		return;
	buf[0] = '\0';
	pthread_rwlock_rdlock(&x->lock);
	for (uint32_t i = 0; i < x->cur->n && n < len; i++) {
		const struct nfsd_export *e = &x->cur->ex[i];

		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "\n" : "",
				      e->path);
		for (uint32_t j = 0; j < e->nrules && n < len; j++) {
			const struct nfsd_rule *r = &e->rules[j];

			if (j && !strcmp(r->spec, e->rules[j - 1].spec))
				continue;
			n += (size_t)snprintf(
				buf + n, len - n, " %s(%s,%s)", r->spec,
				r->pol.ro ? "ro" : "rw",
				r->pol.squash == NFSD_SQUASH_ALL ? "all_squash"
				: r->pol.squash == NFSD_SQUASH_ROOT
					? "root_squash"
					: "no_root_squash");
		}
	}
	pthread_rwlock_unlock(&x->lock);
}

void rr_nfs3_exporter_io_heap(struct rr_nfs3_exporter *x,
			      struct rr_nfs3_io_heap *out)
{
	const struct nfsd_be_ops *o;

	*out = (struct rr_nfs3_io_heap){0};
	pthread_rwlock_rdlock(&x->lock);
	for (uint32_t i = 0; i < x->nm; i++) {
		o = x->m[i]->be.ops;
		if (o->io_alloc > out->alloc)
			out->alloc = o->io_alloc;
		if (o->io_retain > out->retain)
			out->retain = o->io_retain;
	}
	pthread_rwlock_unlock(&x->lock);
}

void rr_nfs3_exporter_stats(struct rr_nfs3_exporter *x,
			    struct rr_nfs3_server_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_rwlock_rdlock(&x->lock);
	for (uint32_t i = 0; i < x->nm; i++) {
		struct rr_nfs3_server_stats s;

		rr_nfs3_server_stats(x->m[i], &s);
		out->calls += s.calls;
		out->garbage_args += s.garbage_args;
		out->bad_handles += s.bad_handles;
		out->stale_handles += s.stale_handles;
		out->handle_searches += s.handle_searches;
		out->walk_dirs += s.walk_dirs;
		out->walks_refused += s.walks_refused;
		out->handle_cache_entries += s.handle_cache_entries;
		out->handle_cache_bytes += s.handle_cache_bytes;
		out->handle_cache_evicted += s.handle_cache_evicted;
		out->kept_opens += s.kept_opens;
		out->write_syncs += s.write_syncs;
	}
	pthread_rwlock_unlock(&x->lock);
}
