/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The transports nfsrdmad runs, each loop in its own thread: NFS and MOUNT
 * on RPC-over-RDMA, NFS on TCP, MOUNT on TCP, NLM v4 and NSM v1 on TCP (each
 * its own port). SIGTERM and SIGINT
 * are blocked in every thread and taken by the main thread with sigwait, which
 * then stops each loop (calls in flight finish first, within
 * --stop-timeout) and tears down in the reverse order of setup. SIGHUP, taken
 * the same way, reads the exports file again: the exporter swaps the new table
 * in for the next calls, connections stay, and a file that does not parse (or
 * an export that cannot be opened) leaves the old table serving.
 */
#include "nfsrdmad.h"
#include "report.h"

#include <rpcrdma/rpc_tcp.h>
#include <rpcrdma/rpc_udp.h>

#include "base/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

enum xkind { X_RDMA, X_TCP, X_MOUNT, X_NLM, X_NSM, X_NSM_UDP, X_N };

_Static_assert(X_N <= REPORT_MAX_XPRTS, "the report has a place per listener");

static const char *const xname[X_N] = {
	[X_RDMA] = "nfs3+mount3 over rdma", [X_TCP] = "nfs3 over tcp",
	[X_MOUNT] = "mount3 over tcp",	    [X_NLM] = "nlm4 over tcp",
	[X_NSM] = "nsm1 over tcp",	    [X_NSM_UDP] = "nsm1 over udp",
};

/*
 * A listener. Only its creation (start_rdma, start_tcp) names the
 * transport, for the options that belong to it; from then on the daemon
 * drives it through the one server interface (rr_rpc_svc, oncrpc.h).
 */
struct xprt {
	enum xkind kind;
	struct rr_rpc_svc *svc; /* NULL: not listening */
	uint16_t port;
	pthread_t th;
	bool running;
	int rc;
	struct rr__log_rl conn_rl; /* conn_log's budget */
};

struct daemon {
	const struct nfsrdmad_opts *o;
	struct rr_nfs3_exporter *nfs;
	struct rr_svc_prog nfs_prog, mount_prog, nlm_prog, nsm_prog;
	struct sockaddr_in sin;
	struct xprt x[X_N];
	struct nfsrdmad_counters *ctr;
	struct report_src rep; /* what the control socket answers from */
};

static int mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, 0700) && errno != EEXIST ? -errno : 0;
}

static int addr_of(const struct nfsrdmad_opts *o, int port,
		   struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, o->address, &sin->sin_addr) == 1 ? 0
								   : -EINVAL;
}

/* What a listener that could not start tells: which, where, and why. */
static void listen_error(const struct daemon *d, const struct xprt *x, int port,
			 int rc)
{
	const struct nfsrdmad_opts *o = d->o;
	const char *opt = x->kind == X_RDMA    ? "--rdma-port"
			  : x->kind == X_TCP   ? "--tcp-port"
			  : x->kind == X_MOUNT ? "--mount-port"
			  : x->kind == X_NLM   ? "--nlm-port"
					       : "--nsm-port";
	struct in_addr a;

	if (inet_pton(AF_INET, o->address, &a) != 1) {
		fprintf(stderr, "nfsrdmad: --address %s: not an IPv4 address\n",
			o->address);
		return;
	}
	if (x->kind == X_RDMA && rc == -ENODEV && o->provider &&
	    strcmp(o->provider, "iwarp") && strcmp(o->provider, "verbs") &&
	    strcmp(o->provider, "shm") && strcmp(o->provider, "faults")) {
		fprintf(stderr,
			"nfsrdmad: --provider %s: no such RDMA provider "
			"(iwarp, shm, verbs, faults)\n",
			o->provider);
		return;
	}
	if (x->kind == X_RDMA && (rc == -ENOSYS || rc == -ENODEV ||
				  rc == -ENOENT || rc == -EPROTONOSUPPORT)) {
		fprintf(stderr,
			"nfsrdmad: cannot listen for %s on %s:%d: RDMA "
			"provider %s has no usable device (%s); --provider "
			"iwarp runs over TCP, --rdma-port off turns RDMA off\n",
			xname[x->kind], o->address, port,
			o->provider ? o->provider : "iwarp", strerror(-rc));
		return;
	}
	fprintf(stderr, "nfsrdmad: cannot listen for %s on %s:%d (%s): %s\n",
		xname[x->kind], o->address, port, opt, strerror(-rc));
}

/*
 * One line per connection and disconnection, with the client's address
 * and port and what ended it. Clients make these: at most RR_LOG_BURST
 * lines per RR_LOG_WINDOW_MS for each listener, the next line saying how
 * many were left out.
 */
static void conn_log(void *arg, const struct sockaddr *peer, bool up,
		     const char *why)
{
	struct xprt *x = arg;
	char host[INET6_ADDRSTRLEN] = "unknown", more[48] = "";
	unsigned port = 0;
	long left_out = rr__log_rl_admit(&x->conn_rl);

	if (left_out < 0)
		return;
	if (left_out > 0)
		snprintf(more, sizeof(more), " (%ld lines like it left out)",
			 left_out);
	if (peer && peer->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)peer;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		port = ntohs(sin->sin_port);
	} else if (peer && peer->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)peer;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		port = ntohs(sin6->sin6_port);
	}
	fprintf(stderr, "nfsrdmad: %s: %s:%u %s%s%s\n", xname[x->kind], host,
		port, up ? "connected" : "disconnected: ", up ? "" : why, more);
}

static int idle_ms(const struct nfsrdmad_opts *o)
{
	return o->idle_s > 0 ? o->idle_s * 1000 : o->idle_s;
}

/* A listener just created serves p1 (and p2 when not NULL): its port. */
static int serve_progs(struct xprt *x, const struct rr_svc_prog *p1,
		       const struct rr_svc_prog *p2)
{
	int rc = rr_rpc_svc_register(x->svc, p1);

	if (!rc && p2)
		rc = rr_rpc_svc_register(x->svc, p2);
	if (!rc)
		rc = rr_rpc_svc_port(x->svc, &x->port);
	return rc;
}

static int start_rdma(struct daemon *d, struct xprt *x, int port)
{
	/* As root the server acts as each caller (setfsuid, setgroups). */
	struct rr_svc_opts so = {
		.provider = d->o->provider,
		.threads = d->o->threads,
		.bulk_bufs = d->o->bulk_bufs,
		.handlers_change_creds = geteuid() == 0,
		/* half the table: Linux's nconnect is 16 */
		.max_per_peer = d->o->max_per_host ? d->o->max_per_host : 16,
		.idle_ms = idle_ms(d->o),
		.on_conn = conn_log,
		.on_conn_arg = x};
	struct sockaddr_in sin;
	struct rr_svc *s = NULL;
	int rc = addr_of(d->o, port, &sin);

	if (!rc)
		rc = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &so,
				   &s);
	if (rc) {
		listen_error(d, x, port, rc);
		return rc;
	}
	x->svc = rr_svc_rpc(s);
	return serve_progs(x, &d->nfs_prog, &d->mount_prog);
}

/*
 * Connections a TCP port may hold. Each takes a descriptor, and so do the
 * open-file cache (a sixteenth of RLIMIT_NOFILE), the RDMA side and the
 * handle searches: the ports' tables must fill before descriptors run
 * out, so that a newcomer finds an idle connection to replace rather
 * than an accept that fails. MOUNT gets an eighth of what is left, and
 * so do NLM (one connection per client host's lockd) and NSM.
 */
static uint32_t conns_budget(const struct nfsrdmad_opts *o, bool small)
{
	struct rlimit rl;
	uint64_t nofile = 1024, avail, n;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		nofile = rl.rlim_cur;
	avail = nofile > 128 + nofile / 16 ? nofile - 128 - nofile / 16 : 16;
	n = small ? avail / 8 : avail * 3 / 4;
	if (o->max_conns && o->max_conns < n)
		n = o->max_conns;
	if (!o->max_conns && n > (small ? 64 : 256))
		n = small ? 64 : 256;
	return n < 4 ? 4 : (uint32_t)n;
}

static int start_tcp(struct daemon *d, struct xprt *x, int port,
		     const struct rr_svc_prog *p1, const struct rr_svc_prog *p2)
{
	struct rr_tcp_svc_opts to = {.threads = d->o->threads,
				     .max_per_peer = d->o->max_per_host,
				     .idle_ms = idle_ms(d->o),
				     .on_conn = conn_log,
				     .on_conn_arg = x};
	struct sockaddr_in sin;
	struct rr_tcp_svc *s = NULL;
	int rc = addr_of(d->o, port, &sin);

	to.max_conns =
		conns_budget(d->o, x->kind == X_MOUNT || x->kind == X_NLM ||
					   x->kind == X_NSM);
	if (!rc)
		rc = rr_tcp_svc_create((struct sockaddr *)&sin, sizeof(sin),
				       &to, &s);
	if (rc) {
		listen_error(d, x, port, rc);
		return rc;
	}
	x->svc = rr_tcp_svc_rpc(s);
	return serve_progs(x, p1, p2);
}

static void *loop(void *arg)
{
	struct xprt *x = arg;

	x->rc = rr_rpc_svc_run(x->svc);
	if (x->rc) {
		fprintf(stderr, "nfsrdmad: %s stopped: %s\n", xname[x->kind],
			strerror(-x->rc));
		kill(getpid(), SIGTERM); /* the others go down with it */
	}
	return NULL;
}

/*
 * NSM on UDP too, on the TCP listener's port number when it is free:
 * nfs-utils' sm-notify, which tells us a client rebooted, sends SM_NOTIFY
 * by UDP only.
 */
static int start_udp(struct daemon *d, struct xprt *x, int port,
		     const struct rr_svc_prog *p)
{
	struct sockaddr_in sin;
	int rc = addr_of(d->o, port, &sin);

	if (!rc)
		rc = rr_udp_svc_create((struct sockaddr *)&sin, sizeof(sin),
				       &x->svc);
	if (rc == -EADDRINUSE) { /* rpcbind tells where it went instead */
		sin.sin_port = 0;
		rc = rr_udp_svc_create((struct sockaddr *)&sin, sizeof(sin),
				       &x->svc);
	}
	if (rc) {
		listen_error(d, x, port, rc);
		return rc;
	}
	return serve_progs(x, p, NULL);
}

/* One TCP port for NFS and MOUNT: its listener serves both. */
static bool mount_on_nfs_port(const struct nfsrdmad_opts *o)
{
	return o->mount_port == o->tcp_port && o->tcp_port > 0;
}

static int setup(struct daemon *d)
{
	const struct nfsrdmad_opts *o = d->o;
	bool shared = mount_on_nfs_port(o);
	int rc = 0;

	for (int k = 0; k < X_N; k++)
		d->x[k].kind = (enum xkind)k;
	if (o->rdma_port >= 0)
		rc = start_rdma(d, &d->x[X_RDMA], o->rdma_port);
	if (!rc && o->tcp_port >= 0)
		rc = start_tcp(d, &d->x[X_TCP], o->tcp_port, &d->nfs_prog,
			       shared ? &d->mount_prog : NULL);
	if (!rc && o->mount_port >= 0 && !shared)
		rc = start_tcp(d, &d->x[X_MOUNT], o->mount_port, &d->mount_prog,
			       NULL);
	if (!rc && o->nlm_port >= 0)
		rc = start_tcp(d, &d->x[X_NLM], o->nlm_port, &d->nlm_prog,
			       NULL);
	if (!rc && o->nlm_port >= 0 && o->nsm_port >= 0)
		rc = start_tcp(d, &d->x[X_NSM], o->nsm_port, &d->nsm_prog,
			       NULL);
	if (!rc && d->x[X_NSM].svc)
		rc = start_udp(d, &d->x[X_NSM_UDP], d->x[X_NSM].port,
			       &d->nsm_prog);
	return rc;
}

static int run_all(struct daemon *d)
{
	for (int k = 0; k < X_N; k++) {
		struct xprt *x = &d->x[k];

		if (!x->svc)
			continue;
		if (pthread_create(&x->th, NULL, loop, x))
			return -EAGAIN;
		x->running = true;
		printf("nfsrdmad: %s on %s:%u\n", xname[k], d->o->address,
		       x->port);
	}
	if (d->o->export_path)
		printf("nfsrdmad: ready, exporting %s%s\n", d->o->export_path,
		       d->o->read_only ? " read-only" : "");
	else
		printf("nfsrdmad: ready, exporting what %s lists\n",
		       d->o->exports_file);
	fflush(stdout);
	return 0;
}

/*
 * Every counter of one transport, by name, on one line: what a client and
 * we disagreed about (reply_too_large: ERR_CHUNK answers, bad_headers,
 * garbage_args, credit_overruns), what admission refused (conn_refused,
 * conn_evicted, conn_timeouts, accept_errors), and the traffic. Printed
 * at exit and on SIGUSR1, so a running server can be asked.
 */
static void print_xprt_stats(const struct xprt *x)
{
	struct rr_xprt_stats st;
	char line[2048];
	size_t n = 0;
	int rc = rr_rpc_svc_stats(x->svc, &st);

	if (rc)
		return;
#define X(f)                                                                   \
	if (n < sizeof(line))                                                  \
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %s=%llu",  \
				      #f, (unsigned long long)st.f);
	RR_XPRT_STATS_FIELDS(X)
#undef X
	fprintf(stderr, "nfsrdmad: %s:%s\n", xname[x->kind], line);
}

static void print_nfs_stats(struct rr_nfs3_exporter *s)
{
	struct rr_nfs3_server_stats st;

	rr_nfs3_exporter_stats(s, &st);
	fprintf(stderr,
		"nfsrdmad: %llu nfs calls, %llu garbage, %llu bad handles, "
		"%llu stale, %llu handle searches\n",
		(unsigned long long)st.calls,
		(unsigned long long)st.garbage_args,
		(unsigned long long)st.bad_handles,
		(unsigned long long)st.stale_handles,
		(unsigned long long)st.handle_searches);
	fprintf(stderr,
		"nfsrdmad: nfs3 handles: walks=%llu walk_dirs=%llu "
		"walks_refused=%llu stale=%llu cache_entries=%llu "
		"cache_bytes=%llu cache_evicted=%llu kept_opens=%llu "
		"write_syncs=%llu\n",
		(unsigned long long)st.handle_searches,
		(unsigned long long)st.walk_dirs,
		(unsigned long long)st.walks_refused,
		(unsigned long long)st.stale_handles,
		(unsigned long long)st.handle_cache_entries,
		(unsigned long long)st.handle_cache_bytes,
		(unsigned long long)st.handle_cache_evicted,
		(unsigned long long)st.kept_opens,
		(unsigned long long)st.write_syncs);
}

static void print_nlm_stats(struct rr_nfs3_exporter *s)
{
	struct rr_nlm_stats st;

	rr_nfs3_exporter_nlm_stats(s, &st);
	fprintf(stderr,
		"nfsrdmad: nlm4: calls=%llu locks=%llu garbage_args=%llu "
		"bad_handles=%llu denied_access=%llu refused_cap=%llu "
		"refused_grace=%llu waiting=%llu blocked=%llu "
		"refused_waiting=%llu callbacks=%llu callback_failures=%llu\n",
		(unsigned long long)st.calls, (unsigned long long)st.locks,
		(unsigned long long)st.garbage_args,
		(unsigned long long)st.bad_handles,
		(unsigned long long)st.denied_access,
		(unsigned long long)st.refused_cap,
		(unsigned long long)st.refused_grace,
		(unsigned long long)st.waiting, (unsigned long long)st.blocked,
		(unsigned long long)st.refused_waiting,
		(unsigned long long)st.callbacks,
		(unsigned long long)st.callback_failures);
}

static void print_nsm_stats(struct rr_nfs3_exporter *s)
{
	struct rr_nsm_stats st;

	rr_nfs3_exporter_nsm_stats(s, &st);
	fprintf(stderr,
		"nfsrdmad: nsm1: state=%llu calls=%llu garbage_args=%llu "
		"notifies=%llu released_locks=%llu dropped_waiters=%llu "
		"refused_mon=%llu hosts=%llu hosts_unrecorded=%llu "
		"record_failures=%llu notified=%llu notify_failures=%llu\n",
		(unsigned long long)st.state, (unsigned long long)st.calls,
		(unsigned long long)st.garbage_args,
		(unsigned long long)st.notifies,
		(unsigned long long)st.released_locks,
		(unsigned long long)st.dropped_waiters,
		(unsigned long long)st.refused_mon,
		(unsigned long long)st.hosts,
		(unsigned long long)st.hosts_unrecorded,
		(unsigned long long)st.record_failures,
		(unsigned long long)st.notified,
		(unsigned long long)st.notify_failures);
}

static void print_all_stats(const struct daemon *d)
{
	for (int k = 0; k < X_N; k++)
		if (d->x[k].svc)
			print_xprt_stats(&d->x[k]);
	print_nfs_stats(d->nfs);
	if (d->x[X_NLM].svc) {
		print_nlm_stats(d->nfs);
		print_nsm_stats(d->nfs);
	}
}

static void stop_all(struct daemon *d)
{
	tool_control_close(d->rep.ctl);
	d->rep.ctl = NULL;
	for (int k = 0; k < X_N; k++) {
		struct xprt *x = &d->x[k];

		if (x->running)
			rr_rpc_svc_stop(x->svc);
	}
	for (int k = 0; k < X_N; k++) {
		struct xprt *x = &d->x[k];

		if (x->running)
			pthread_join(x->th, NULL);
		/* closes connections before the counters are read (RDMA) */
		if (x->svc)
			rr_rpc_svc_shutdown(x->svc);
	}
	print_all_stats(d);
	for (int k = 0; k < X_N; k++)
		rr_rpc_svc_destroy(d->x[k].svc); /* NULL: nothing */
}

/* The table the options name: --export's one export, or the file's. */
static int load_table(const struct nfsrdmad_opts *o, struct rr_nfs3_exports **t,
		      char *err, size_t len)
{
	int rc;

	if (o->exports_file)
		return rr_nfs3_exports_load(o->exports_file, t, err, len);
	rc = rr_nfs3_exports_one(o->export_path, o->read_only, o->root_squash,
				 t);
	if (rc)
		snprintf(err, len, "export %s: %s", o->export_path,
			 strerror(-rc));
	return rc;
}

static void print_exports(const struct daemon *d)
{
	char buf[8192];
	char *line, *save = NULL;

	rr_nfs3_exporter_describe(d->nfs, buf, sizeof(buf));
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		fprintf(stderr, "nfsrdmad: export %s\n", line);
}

#define MMAP_MIN   (256 << 10)
#define ARENA_HEAP (64 << 20) /* a thread arena's heap, 64-bit glibc */

/*
 * Replies queued for slow clients are large and short-lived: with a fixed
 * mmap threshold they are mapped and unmapped, so memory a burst took goes
 * back to the system instead of staying in the heap (glibc's sliding
 * threshold would move them into it). A backend whose library allocates
 * a buffer inside every READ and WRITE (libcephfs) sets the threshold
 * above that buffer: mapped afresh, its every page faults on every call,
 * which halved 1 MiB writes to CephFS. And what that library holds for
 * I/O in flight comes and goes in bursts (a sync frees it all at once):
 * the heap keeps that much rather than trim it, and pads each growth by a
 * whole arena heap, which glibc would otherwise unmap once it empties.
 * Each malloc arena keeps its own, so there is one arena per CPU, not
 * glibc's eight: no more threads than that allocate at once, and the
 * daemon's resident size after writes over both transports was 556 MB
 * instead of 870 MB.
 */
static void large_blocks(const struct daemon *d)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct rr_nfs3_io_heap h;

	rr_nfs3_exporter_io_heap(d->nfs, &h);
	mallopt(M_MMAP_THRESHOLD, h.alloc > MMAP_MIN ? (int)h.alloc : MMAP_MIN);
	if (h.alloc)
		mallopt(M_TRIM_THRESHOLD,
			(int)(h.retain > 2 * h.alloc ? h.retain : 2 * h.alloc));
	if (h.retain) {
		mallopt(M_TOP_PAD, ARENA_HEAP);
		mallopt(M_ARENA_MAX, cpus > 0 ? (int)cpus : 1);
	}
}

static void reload(const struct daemon *d)
{
	struct rr_nfs3_exports *t;
	char err[512];

	if (!d->o->exports_file) {
		fprintf(stderr, "nfsrdmad: SIGHUP: no exports file to read "
				"again (--export), nothing changes\n");
		return;
	}
	if (load_table(d->o, &t, err, sizeof(err)) ||
	    rr_nfs3_exporter_reload(d->nfs, t, err, sizeof(err))) {
		fprintf(stderr,
			"nfsrdmad: SIGHUP: %s; still serving the exports "
			"read before\n",
			err);
		return;
	}
	fprintf(stderr, "nfsrdmad: SIGHUP: exports read again from %s\n",
		d->o->exports_file);
	large_blocks(d);
	print_exports(d);
}

static void wait_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGHUP);
}

/*
 * Waits for SIGTERM or SIGINT; meanwhile SIGUSR1 prints the counters and
 * SIGHUP reads the exports again.
 */
static int wait_signal(const struct daemon *d)
{
	sigset_t set;
	int sig = 0;

	wait_set(&set);
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		if (sig == SIGUSR1)
			print_all_stats(d);
		else if (sig == SIGHUP)
			reload(d);
		else
			return sig;
	}
}

/*
 * Stopping waits for the calls in flight, and a backend call may not
 * return for as long as its storage is away (libcephfs holds a READ or a
 * COMMIT until the OSD is back), which would keep a service manager's
 * stop waiting. After --stop-timeout seconds, or at a second SIGTERM or
 * SIGINT, the daemon exits without them, as a crash would: their clients
 * send them again to the next server, and data a client was told is
 * stable is (the write verifier changes, so unstable data is sent again).
 */
static void *stop_watch(void *arg)
{
	uint32_t timeout_s = (uint32_t)(uintptr_t)arg;
	struct timespec ts = {.tv_sec = timeout_s};
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	do
		sig = timeout_s ? sigtimedwait(&set, NULL, &ts)
				: sigwaitinfo(&set, NULL);
	while (sig < 0 && errno == EINTR);
	if (sig > 0)
		fprintf(stderr,
			"nfsrdmad: %s again: exiting without the "
			"calls still running\n",
			strsignal(sig));
	else
		fprintf(stderr,
			"nfsrdmad: calls still running %u s after the stop "
			"(--stop-timeout): exiting without them\n",
			timeout_s);
	_exit(1);
}

/* The signals stay blocked here, so this thread is the one they reach. */
static void stop_watch_start(uint32_t timeout_s)
{
	pthread_attr_t at;
	pthread_t th;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &at, stop_watch, (void *)(uintptr_t)timeout_s))
		fprintf(stderr, "nfsrdmad: cannot start a thread: the stop "
				"waits for every call\n");
	pthread_attr_destroy(&at);
}

static int open_server(const struct nfsrdmad_opts *o,
		       struct rr_nfs3_exporter **out)
{
	struct rr_nfs3_server_opts no = {
		.state_dir = o->state_dir,
		.walk_dirs_per_s = o->walk_dirs_per_s,
		.walk_dir_us = o->walk_dir_us,
		.handle_cache_bytes = (uint64_t)o->handle_cache_mb << 20};
	struct rr_nfs3_exports *t;
	char err[512];
	int rc = o->state_dir ? mkdir_p(o->state_dir) : 0;

	if (rc) {
		fprintf(stderr, "nfsrdmad: state dir %s: %s\n", o->state_dir,
			strerror(-rc));
		return rc;
	}
	if (!o->state_dir)
		fprintf(stderr, "nfsrdmad: no state dir: file handles will "
				"not survive a restart\n");
	rc = load_table(o, &t, err, sizeof(err));
	if (!rc)
		rc = rr_nfs3_exporter_create(&no, t, out, err, sizeof(err));
	if (rc)
		fprintf(stderr, "nfsrdmad: %s\n", err);
	return rc;
}

/*
 * NLM's program, its grace period starting now, and NSM's, our state
 * number counted up in the state directory (--nlm-port off: neither).
 * With --nsm-port off NSM still keeps the hosts that lock and tells
 * them when we restart; only client reboots go unheard.
 */
static int nlm_open(struct daemon *d)
{
	struct rr_nlm_opts no = {.grace_s = d->o->grace_s,
				 .max_locks_per_host =
					 d->o->nlm_locks_per_host};
	int rc;

	if (d->o->nlm_port < 0)
		return 0;
	rc = rr_nfs3_exporter_nlm(d->nfs, &no, &d->nlm_prog);
	if (rc) {
		fprintf(stderr, "nfsrdmad: nlm: %s\n", strerror(-rc));
		return rc;
	}
	rc = rr_nfs3_exporter_nsm(d->nfs, NULL, &d->nsm_prog);
	if (rc)
		fprintf(stderr, "nfsrdmad: nsm: state in %s: %s\n",
			d->o->state_dir ? d->o->state_dir : "(none)",
			strerror(-rc));
	return rc;
}

/*
 * Counters around every handler, and the control socket that reads
 * them: --control PATH, by default "control" in the state directory.
 * Bound now, before any transport thread runs (it sets the umask).
 */
static int counters_open(struct daemon *d)
{
	const char *path = d->o->control_path;
	char buf[4096];
	int rc = nfsrdmad_counters_create(&d->ctr);

	if (rc)
		return rc;
	nfsrdmad_counters_wrap(d->ctr, &d->nfs_prog);
	nfsrdmad_counters_wrap(d->ctr, &d->mount_prog);
	d->rep.ctr = d->ctr;
	d->rep.nfs = d->nfs;
	d->rep.start_ms = nfsrdmad_report_now_ms();
	d->rep.count_allocs = d->o->count_allocs;
	if (!path && d->o->state_dir) {
		snprintf(buf, sizeof(buf), "%s/control", d->o->state_dir);
		path = buf;
	}
	if (!path || !strcmp(path, "off"))
		return 0;
	rc = tool_control_open(path, &d->rep.ctl);
	if (rc == -EADDRINUSE && !d->o->control_path) {
		/*
		 * Several daemons may share a state directory (one per port
		 * or address): the first keeps the default socket, the others
		 * run without one unless told where theirs goes.
		 */
		fprintf(stderr,
			"nfsrdmad: %s: another nfsrdmad answers there; no "
			"control socket (--control PATH names one)\n",
			path);
		return 0;
	}
	if (rc)
		fprintf(stderr, "nfsrdmad: --control %s: %s\n", path,
			rc == -EADDRINUSE ? "another nfsrdmad answers there"
			: rc == -EEXIST	  ? "exists and is not a socket"
					  : strerror(-rc));
	return rc;
}

static void rpcb_add(struct nfsrdmad_ports *p, const struct rr_svc_prog *prog,
		     const struct xprt *x)
{
	if (x->svc)
		p->e[p->n++] = (struct nfsrdmad_rpcb){
			.prog = prog->prog,
			.vers = prog->vers,
			.netid = rr_rpc_svc_netid(x->svc),
			.port = x->port};
}

/*
 * What rpcbind is told, each on its listener's netid: NFS on TCP; MOUNT
 * where a TCP listener serves it, its own or NFS's when the two ports
 * are one (with --mount-port off none does, and a client that asked
 * rpcbind for MOUNT would be sent to a port that refuses it); NFS on
 * RPC-over-RDMA, as Linux's nfsd registers it (MOUNT there is not
 * registered: clients find it on TCP); NLM (nlockmgr) and NSM (status)
 * on TCP, where lockd's clients and statd look for them, and NSM on UDP,
 * where sm-notify does.
 */
static void rpcb_entries(const struct daemon *d, struct nfsrdmad_ports *p)
{
	rpcb_add(p, &d->nfs_prog, &d->x[X_TCP]);
	if (d->x[X_MOUNT].svc)
		rpcb_add(p, &d->mount_prog, &d->x[X_MOUNT]);
	else if (mount_on_nfs_port(d->o))
		rpcb_add(p, &d->mount_prog, &d->x[X_TCP]);
	rpcb_add(p, &d->nfs_prog, &d->x[X_RDMA]);
	rpcb_add(p, &d->nlm_prog, &d->x[X_NLM]);
	rpcb_add(p, &d->nsm_prog, &d->x[X_NSM]);
	rpcb_add(p, &d->nsm_prog, &d->x[X_NSM_UDP]);
}

/* Once the transports run: the control socket answers from them. */
static int control_start(struct daemon *d)
{
	for (int k = 0; k < X_N; k++)
		if (d->x[k].svc)
			d->rep.x[d->rep.nx++] = (struct report_xprt){
				.name = xname[k], .svc = d->x[k].svc};
	if (!d->rep.ctl)
		return 0;
	return tool_control_run(d->rep.ctl, nfsrdmad_report, &d->rep);
}

int nfsrdmad_serve(const struct nfsrdmad_opts *o)
{
	struct daemon d = {.o = o};
	sigset_t set;
	int rc, sig;

	signal(SIGPIPE, SIG_IGN);
	/* A WRITE past RLIMIT_FSIZE is EFBIG for its client, not our end. */
	signal(SIGXFSZ, SIG_IGN);
	wait_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* threads inherit it */
	if (open_server(o, &d.nfs))
		return 1;
	large_blocks(&d);
	rr_nfs3_exporter_progs(d.nfs, &d.nfs_prog, &d.mount_prog);
	rc = nlm_open(&d);
	if (!rc)
		rc = counters_open(&d);
	if (!rc)
		rc = setup(&d); /* says itself what could not start */
	if (!rc && (rc = run_all(&d)))
		fprintf(stderr, "nfsrdmad: cannot start a thread\n");
	if (!rc && (rc = control_start(&d)))
		fprintf(stderr, "nfsrdmad: cannot start a thread\n");
	if (!rc) {
		print_exports(&d);
		struct nfsrdmad_ports p = {.addr = o->address};

		rpcb_entries(&d, &p);
		nfsrdmad_rpcbind_set(&p);
		/* once clients can find our NLM to reclaim at */
		if (d.x[X_NLM].svc && rr_nfs3_exporter_nsm_notify(d.nfs))
			fprintf(stderr, "nfsrdmad: nsm: cannot start a thread "
					"to tell clients we restarted\n");
		sig = wait_signal(&d);
		fprintf(stderr, "nfsrdmad: %s, stopping\n", strsignal(sig));
		stop_watch_start(o->stop_timeout_s);
		nfsrdmad_rpcbind_unset(&p);
	}
	stop_all(&d);
	rr_nfs3_exporter_destroy(d.nfs);
	nfsrdmad_counters_destroy(d.ctr);
	return rc ? 1 : 0;
}
