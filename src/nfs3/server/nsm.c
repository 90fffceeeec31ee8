/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The Network Status Monitor, version 1 (XNFS chapter 11), for our own
 * lock manager only: nfsrdmad is the lock manager and its monitor at
 * once, as Linux's lockd and statd are together, so what lockd would ask
 * statd by SM_MON is a call here (rr__nfsd_nsm_monitor, for every host
 * that takes or waits for a lock).
 *
 * Two directions:
 * - a client host that rebooted says so by SM_NOTIFY (its name, its new
 *   state): every lock and waiter that name holds goes, as by NLM's
 *   FREE_ALL, which is what Linux's statd makes lockd do. Hosts are known
 *   by caller_name, the name their lock manager gave in each LOCK and
 *   their statd gives in SM_NOTIFY (both the client's node name). As
 *   with FREE_ALL, nothing proves that the caller is that host: NSM has
 *   no authentication; exports(5) rules do not reach it either.
 * - we restarted: the hosts recorded in the state directory (nsm-hosts)
 *   before are told, by SM_NOTIFY to their statd, our name and our new
 *   state number, so that they reclaim their locks in the grace period
 *   (sm-notify's job beside Linux's statd). Then they are forgotten; the
 *   hosts that lock from now on are recorded anew.
 *
 * SM_MON, SM_UNMON, SM_UNMON_ALL and SM_SIMU_CRASH are the calls a
 * host's own lock manager makes to its statd; nobody else's lock manager
 * is ours to serve, so SM_MON is STAT_FAIL (counted) and the others
 * answer our state and change nothing. SM_STAT answers our state.
 *
 * Bounds: a peer's name is at most SM_MAXSTRLEN (the XDR's bound); at
 * most NSM_MAX_HOSTS hosts are recorded (more: counted, not recorded),
 * so nsm-hosts stays small and a peer making up names cannot grow it.
 */
#include "nfs3/server/nfsd.h"

#include "base/alloc.h"
#include "base/log.h"
#include "nlm_cb.h"
#include "nsm1.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NSM_MAX_HOSTS 1024
#define NSM_NAME_MAX  255 /* a host name we record: DNS's bound */
#define NSM_NPROCS    (SM_NOTIFY + 1)

struct nsm_host {
	char addr[INET6_ADDRSTRLEN];
	char name[NSM_NAME_MAX + 1];
};

struct nfsd_nsm {
	struct nfsd_nlm *nlm;
	char *state_dir; /* NULL: nothing kept */
	char my_name[NSM_NAME_MAX + 1];
	int32_t state;
	pthread_mutex_t mu;	/* hosts, nhosts, the nsm-hosts file */
	struct nsm_host *hosts; /* recorded this run, NSM_MAX_HOSTS */
	uint32_t nhosts;
	struct nsm_host *before; /* recorded by the run before, to tell */
	uint32_t nbefore;
	pthread_t notify_th;
	bool notify_running;
	atomic_bool stopping; /* notify_main tells no more hosts */
	atomic_uint_fast64_t calls, garbage_args, notifies, released_locks,
		dropped_waiters, refused_mon, hosts_unrecorded, record_failures,
		notified, notify_failures;
};

/* ------------------------------------------------------- state files */

static int path_of(const struct nfsd_nsm *m, const char *name, char *buf,
		   size_t len)
{
	int n = snprintf(buf, len, "%s/%s", m->state_dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * Writes text as the file name, whole or not at all: a temporary file
 * synced, then renamed over it, so a crash leaves the old or the new.
 */
static int write_whole(const struct nfsd_nsm *m, const char *name,
		       const char *text, size_t len)
{
	char path[4096], tmp[4200];
	int fd, rc = path_of(m, name, path, sizeof(path));

	if (rc)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd))
		rc = errno ? -errno : -EIO;
	close(fd);
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* Our state number the run before (0: none), from nsm-state. */
static int32_t read_state(const struct nfsd_nsm *m)
{
	char path[4096];
	long v = 0;
	FILE *f;

	if (path_of(m, "nsm-state", path, sizeof(path)))
		return 0;
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1 || v < 0 || v > INT32_MAX - 4)
		v = 0;
	fclose(f);
	return (int32_t)v;
}

static int write_state(const struct nfsd_nsm *m, int32_t state)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%d\n", state);

	return write_whole(m, "nsm-state", text, (size_t)n);
}

/* A name we can keep in nsm-hosts: no spaces, controls or '#'. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > NSM_NAME_MAX)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s == 0x7f || *s == '#')
			return false;
	return true;
}

/* Caller holds m->mu. nsm-hosts from hosts: "ADDRESS NAME" lines. */
static int write_hosts(struct nfsd_nsm *m)
{
	size_t cap = (size_t)m->nhosts * sizeof(struct nsm_host) + 1, n = 0;
	char *text = rr_malloc(cap);
	int rc;

	if (!text)
		return -ENOMEM;
	text[0] = '\0';
	for (uint32_t i = 0; i < m->nhosts; i++)
		n += (size_t)snprintf(text + n, cap - n, "%s %s\n",
				      m->hosts[i].addr, m->hosts[i].name);
	rc = write_whole(m, "nsm-hosts", text, n);
	free(text);
	return rc;
}

/* The hosts the run before recorded, into m->before (bounded). */
static void read_hosts(struct nfsd_nsm *m)
{
	char path[4096], line[INET6_ADDRSTRLEN + NSM_NAME_MAX + 8];
	FILE *f;

	if (path_of(m, "nsm-hosts", path, sizeof(path)))
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	while (m->nbefore < NSM_MAX_HOSTS && fgets(line, sizeof(line), f)) {
		struct nsm_host *h = &m->before[m->nbefore];
		char *sp = strchr(line, ' '), *nl = strchr(line, '\n');

		if (!sp || !nl || (size_t)(sp - line) >= sizeof(h->addr))
			continue; /* not a line we wrote */
		*sp = *nl = '\0';
		if (!name_ok(sp + 1))
			continue;
		memcpy(h->addr, line, (size_t)(sp - line) + 1);
		snprintf(h->name, sizeof(h->name), "%s", sp + 1);
		m->nbefore++;
	}
	fclose(f);
}

/* ---------------------------------------------------------- recording */

void rr__nfsd_nsm_monitor(struct nfsd_nsm *m, const char *name,
			  const char *addr)
{
	struct nsm_host *h;

	if (!m->state_dir)
		return;
	pthread_mutex_lock(&m->mu);
	for (uint32_t i = 0; i < m->nhosts; i++)
		if (!strcmp(m->hosts[i].name, name) &&
		    !strcmp(m->hosts[i].addr, addr)) {
			pthread_mutex_unlock(&m->mu);
			return;
		}
	if (m->nhosts >= NSM_MAX_HOSTS || !name_ok(name)) {
		pthread_mutex_unlock(&m->mu);
		atomic_fetch_add(&m->hosts_unrecorded, 1);
		rr_warn_rl("nsm: %s (%s): not recorded (%s): it will not be "
			   "told when we restart",
			   addr, name_ok(name) ? name : "an unusable name",
			   name_ok(name) ? "too many hosts" : "its name");
		return;
	}
	h = &m->hosts[m->nhosts++];
	snprintf(h->addr, sizeof(h->addr), "%s", addr);
	snprintf(h->name, sizeof(h->name), "%s", name);
	if (write_hosts(m)) {
		atomic_fetch_add(&m->record_failures, 1);
		rr_warn_rl("nsm: cannot write %s/nsm-hosts", m->state_dir);
	}
	pthread_mutex_unlock(&m->mu);
}

/* A host that rebooted is recorded no more: its locks are gone. */
static void forget_host(struct nfsd_nsm *m, const char *name)
{
	uint32_t kept = 0;

	pthread_mutex_lock(&m->mu);
	for (uint32_t i = 0; i < m->nhosts; i++)
		if (strcmp(m->hosts[i].name, name))
			m->hosts[kept++] = m->hosts[i];
	if (kept != m->nhosts) {
		m->nhosts = kept;
		if (write_hosts(m))
			atomic_fetch_add(&m->record_failures, 1);
	}
	pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------- telling of a start */

static void *notify_main(void *arg)
{
	struct nfsd_nsm *m = arg;

	pthread_setname_np(pthread_self(), "rr-nsm-notify");

	for (uint32_t i = 0; i < m->nbefore && !atomic_load(&m->stopping);
	     i++) {
		const struct nsm_host *h = &m->before[i];
		int rc = rr__nfsd_nsm_tell(h->addr, m->my_name, m->state);

		if (!rc) {
			atomic_fetch_add(&m->notified, 1);
			continue;
		}
		atomic_fetch_add(&m->notify_failures, 1);
		rr_warn_rl("nsm: %s (%s): cannot tell it we restarted (%s)",
			   h->addr, h->name, strerror(-rc));
	}
	return NULL;
}

int rr__nfsd_nsm_notify(struct nfsd_nsm *m)
{
	if (m->notify_running || !m->nbefore)
		return 0;
	if (pthread_create(&m->notify_th, NULL, notify_main, m))
		return -EAGAIN;
	m->notify_running = true;
	return 0;
}

/* --------------------------------------------------------- the service */

static void notified_by(struct nfsd_nsm *m, struct nfsd_call *c,
			const sm_stat_chge *a)
{
	struct nfsd_freed fr;
	char peer[INET6_ADDRSTRLEN];

	atomic_fetch_add(&m->notifies, 1);
	rr__nfsd_nlm_free_host(m->nlm, a->mon_name, &fr);
	atomic_fetch_add(&m->released_locks, fr.ranges);
	atomic_fetch_add(&m->dropped_waiters, fr.waiters);
	forget_host(m, a->mon_name);
	if (!fr.ranges && !fr.waiters)
		return;
	rr__nfsd_host_of(c, peer);
	rr_warn_rl("nsm: %s: host %.64s rebooted (state %d): %u locks and %u "
		   "waiters released",
		   peer, name_ok(a->mon_name) ? a->mon_name : "(unusable)",
		   a->state, fr.ranges, fr.waiters);
}

union nsm_args {
	sm_name stat;
	sm_mon mon;
	sm_mon_id unmon;
	sm_my_id unmon_all;
	sm_stat_chge notify;
};

static const xdrproc_t nsm_xargs[NSM_NPROCS] = {
	[SM_STAT] = (xdrproc_t)rr__xdr_sm_name,
	[SM_MON] = (xdrproc_t)rr__xdr_sm_mon,
	[SM_UNMON] = (xdrproc_t)rr__xdr_sm_mon_id,
	[SM_UNMON_ALL] = (xdrproc_t)rr__xdr_sm_my_id,
	[SM_NOTIFY] = (xdrproc_t)rr__xdr_sm_stat_chge,
};

static bool nsm_reply(struct nfsd_nsm *m, struct nfsd_call *c, uint32_t proc,
		      union nsm_args *a)
{
	sm_stat_res sr = {.res_stat = STAT_SUCC, .state = m->state};
	sm_stat st = {.state = m->state};

	switch (proc) {
	case SM_STAT:
		return rr__nfsd_xdr_res(c, (xdrproc_t)rr__xdr_sm_stat_res, &sr);
	case SM_MON:
		atomic_fetch_add(&m->refused_mon, 1);
		sr.res_stat = STAT_FAIL;
		return rr__nfsd_xdr_res(c, (xdrproc_t)rr__xdr_sm_stat_res, &sr);
	case SM_UNMON:
	case SM_UNMON_ALL:
		return rr__nfsd_xdr_res(c, (xdrproc_t)rr__xdr_sm_stat, &st);
	case SM_NOTIFY:
		notified_by(m, c, &a->notify);
		return !rr_svc_set_res(c->req, 0, NULL, 0);
	default: /* SM_NULL, SM_SIMU_CRASH: nothing to do */
		return !rr_svc_set_res(c->req, 0, NULL, 0);
	}
}

static uint32_t nsm_run(struct nfsd_nsm *m, struct nfsd_call *c, uint32_t proc)
{
	union nsm_args a;
	uint32_t rc = RR_SYSTEM_ERR;
	char peer[INET6_ADDRSTRLEN];

	if (proc >= NSM_NPROCS)
		return RR_PROC_UNAVAIL;
	memset(&a, 0, sizeof(a));
	if (nsm_xargs[proc] && !rr__nfsd_xdr_args(c, nsm_xargs[proc], &a)) {
		atomic_fetch_add(&m->garbage_args, 1);
		rr__nfsd_host_of(c, peer);
		rr_warn_rl("nsm: %s: arguments that do not decode", peer);
		rc = RR_GARBAGE_ARGS;
	} else if (nsm_reply(m, c, proc, &a)) {
		rc = RR_SUCCESS;
	}
	if (nsm_xargs[proc])
		xdr_free(nsm_xargs[proc], (char *)&a);
	return rc;
}

static uint32_t nsm_handler(struct rr_svc_req *req, void *arg)
{
	struct nfsd_nsm *m = arg;
	struct nfsd_call c = {.req = req};
	uint32_t rc = nsm_run(m, &c, rr_svc_req_proc(req));

	rr__nfsd_arena_free(&c);
	atomic_fetch_add(&m->calls, 1);
	return rc;
}

static const rr_svc_fn nsm_table[NSM_NPROCS] = {
	[0 ... NSM_NPROCS - 1] = nsm_handler,
};

/* ----------------------------------------------------------- lifetime */

/*
 * Our state this run: odd, past the last one written (an odd one left
 * by a run that did not stop cleanly included), kept before we serve.
 */
static int next_state(struct nfsd_nsm *m)
{
	int32_t s = m->state_dir ? read_state(m) : 0;

	m->state = s + 1 + ((s + 1) % 2 == 0);
	return m->state_dir ? write_state(m, m->state) : 0;
}

static int nsm_open(struct nfsd_nsm *m, const char *state_dir,
		    const struct rr_nsm_opts *o)
{
	int rc;

	if (o && o->my_name)
		snprintf(m->my_name, sizeof(m->my_name), "%s", o->my_name);
	else if (gethostname(m->my_name, sizeof(m->my_name) - 1))
		snprintf(m->my_name, sizeof(m->my_name), "localhost");
	m->hosts = rr_calloc(NSM_MAX_HOSTS, sizeof(*m->hosts));
	m->before = rr_calloc(NSM_MAX_HOSTS, sizeof(*m->before));
	m->state_dir = state_dir ? rr_strdup(state_dir) : NULL;
	if (!m->hosts || !m->before || (state_dir && !m->state_dir))
		return -ENOMEM;
	rc = next_state(m);
	if (rc || !m->state_dir)
		return rc;
	read_hosts(m);
	return write_hosts(m); /* this run's, empty so far */
}

int rr__nfsd_nsm_create(struct nfsd_nlm *nlm, const char *state_dir,
			const struct rr_nsm_opts *o, struct nfsd_nsm **out)
{
	struct nfsd_nsm *m = rr_calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	m->nlm = nlm;
	pthread_mutex_init(&m->mu, NULL);
	rc = nsm_open(m, state_dir, o);
	if (rc) {
		rr__nfsd_nsm_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

void rr__nfsd_nsm_destroy(struct nfsd_nsm *m)
{
	if (!m)
		return;
	atomic_store(&m->stopping, true);
	if (m->notify_running)
		pthread_join(m->notify_th, NULL);
	/* even while down, as statd counts */
	if (m->state_dir && m->state)
		write_state(m, m->state + 1);
	pthread_mutex_destroy(&m->mu);
	free(m->hosts);
	free(m->before);
	free(m->state_dir);
	free(m);
}

void rr__nfsd_nsm_prog(struct nfsd_nsm *m, struct rr_svc_prog *p)
{
	*p = (struct rr_svc_prog){.prog = SM_PROG,
				  .vers = SM_VERS,
				  .nprocs = NSM_NPROCS,
				  .procs = nsm_table,
				  .arg = m};
}

void rr__nfsd_nsm_stats(struct nfsd_nsm *m, struct rr_nsm_stats *out)
{
	pthread_mutex_lock(&m->mu);
	out->hosts = m->nhosts;
	pthread_mutex_unlock(&m->mu);
	out->state = (uint64_t)m->state;
	out->calls = atomic_load(&m->calls);
	out->garbage_args = atomic_load(&m->garbage_args);
	out->notifies = atomic_load(&m->notifies);
	out->released_locks = atomic_load(&m->released_locks);
	out->dropped_waiters = atomic_load(&m->dropped_waiters);
	out->refused_mon = atomic_load(&m->refused_mon);
	out->hosts_unrecorded = atomic_load(&m->hosts_unrecorded);
	out->record_failures = atomic_load(&m->record_failures);
	out->notified = atomic_load(&m->notified);
	out->notify_failures = atomic_load(&m->notify_failures);
}
