/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One run of the NFS allocation sweep: the NFSv3 server in this process,
 * over RPC-over-RDMA (iwarp, or RR_PROVIDER, on 127.0.0.1) and TCP (MOUNT
 * always, NFS too when proto is "tcp"), serving a fresh directory; our
 * client library mounts it and makes a directory, a small file and one
 * larger than the inline threshold (split into READ/WRITE calls moving
 * their data in chunks, pipelined, from a registered buffer), reads both
 * back, lists the directory, renames, removes and unmounts.
 *
 * The armed part may fail anywhere: an error is noted, never fatal. Then
 * the injector is disarmed and a fresh mount of the same server does the
 * same work under other names: any error there is fatal (F_AFTER), since
 * an allocation that failed earlier must not leave the server stuck or
 * its state corrupt. Bytes read that are not the bytes written are fatal
 * wherever seen.
 */
#include "scenario.h"
#include "io.h"

#include <rpcrdma/alloc_inject.h>
#include <rpcrdma/nfs3.h>
#include <rpcrdma/nfs3_server.h>
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CALL_TMO_MS 4000
#define SMALL_LEN   100
#define BIG_LEN	    ((1u << 20) + 12345) /* three calls of MAX_IO */
#define MAX_IO	    (512u << 10)
#define DEPTH	    2

struct server {
	struct rr_nfs3_server *ns;
	struct rr_svc *rdma;
	struct rr_tcp_svc *tcp;
	pthread_t rl, tl;
	bool rl_on, tl_on;
	uint16_t rport, tport;
};

struct ctx {
	struct rr_t_sweep_report *r;
	const char *proto;
	char exp[PATH_MAX];
	uint8_t *big, *back; /* BIG_LEN each: written, read back */
	struct server s;
};

static void note(struct rr_t_sweep_report *r, const char *what, int rc)
{
	rr_t_sweep_note(r, what, rc);
}

static void fatal(struct rr_t_sweep_report *r, uint32_t bit, const char *what,
		  int rc)
{
	char why[96];

	snprintf(why, sizeof(why), "%s: %s", what,
		 rc ? strerror(rc < 0 ? -rc : rc) : "wrong result");
	rr_t_sweep_fatal(r, bit, why);
}

/* ============================================================ server */

static void *rdma_loop(void *arg)
{
	rr_svc_run(arg);
	return NULL;
}

static void *tcp_loop(void *arg)
{
	rr_tcp_svc_run(arg);
	return NULL;
}

static int serve_rdma(struct server *s, const struct rr_svc_prog *nfs)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_opts o = {.provider = getenv("RR_PROVIDER"),
				.max_conns = 4,
				.threads = 1,
				.drc_entries = 64};
	int rc = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &o,
			       &s->rdma);

	if (!rc)
		rc = rr_svc_register(s->rdma, nfs);
	if (!rc)
		rc = rr_svc_port(s->rdma, &s->rport);
	if (!rc)
		rc = -pthread_create(&s->rl, NULL, rdma_loop, s->rdma);
	s->rl_on = !rc;
	return rc;
}

static int serve_tcp(struct server *s, const struct rr_svc_prog *nfs,
		     const struct rr_svc_prog *mnt)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	/*
	 * A small send buffer: every large reply is sent in part and queued,
	 * so the queue's allocations are reached in every run, not by chance.
	 * A queue allowed more than the scenario ever has in flight: input
	 * held back from a full queue (hostile/tcp's case) would come and go
	 * with the threads' timing, and its site with it.
	 */
	struct rr_tcp_svc_opts o = {.threads = 1,
				    .max_conns = 8,
				    .sndbuf = 128 << 10,
				    .max_queued = 8 << 20};
	int rc = rr_tcp_svc_create((struct sockaddr *)&sin, sizeof(sin), &o,
				   &s->tcp);

	if (!rc)
		rc = rr_tcp_svc_register(s->tcp, nfs);
	if (!rc)
		rc = rr_tcp_svc_register(s->tcp, mnt);
	if (!rc)
		rc = rr_tcp_svc_port(s->tcp, &s->tport);
	if (!rc)
		rc = -pthread_create(&s->tl, NULL, tcp_loop, s->tcp);
	s->tl_on = !rc;
	return rc;
}

static int serve(struct ctx *x)
{
	struct rr_nfs3_server_opts no = {.export_path = x->exp};
	struct rr_svc_prog nfs, mnt;
	int rc = rr_nfs3_server_create(&no, &x->s.ns);

	note(x->r, "server create", rc);
	if (rc)
		return rc;
	rr_nfs3_server_progs(x->s.ns, &nfs, &mnt);
	rc = serve_rdma(&x->s, &nfs);
	note(x->r, "RDMA server create", rc);
	if (!rc)
		rc = serve_tcp(&x->s, &nfs, &mnt);
	note(x->r, "TCP server create", rc);
	return rc;
}

static void check_svc(struct ctx *x)
{
	struct rr_xprt_stats st;

	if (x->s.rdma && !rr_svc_stats(x->s.rdma, &st) &&
	    st.teardown_unbalanced)
		fatal(x->r, F_UNBALANCED, "server teardown", 0);
}

static void unserve(struct ctx *x)
{
	struct rr_nfs3_server_stats ns;

	if (x->s.rl_on) {
		rr_svc_stop(x->s.rdma);
		pthread_join(x->s.rl, NULL);
	}
	if (x->s.tl_on) {
		rr_tcp_svc_stop(x->s.tcp);
		pthread_join(x->s.tl, NULL);
	}
	if (x->s.rdma)
		rr_svc_shutdown(x->s.rdma);
	check_svc(x);
	if (x->s.rdma)
		rr_svc_destroy(x->s.rdma);
	if (x->s.tcp)
		rr_tcp_svc_destroy(x->s.tcp);
	if (x->s.ns) {
		rr_nfs3_server_stats(x->s.ns, &ns);
		x->r->extra[X_CALLS] = ns.calls;
	}
	rr_nfs3_server_destroy(x->s.ns);
}

/* ============================================================ client */

/*
 * One pass of the client's work under dir: 0, or the first error (what
 * says where). A later step still runs after an error (what it finds
 * missing it reports too), so that each run reaches as much as it can.
 */
struct pass {
	struct ctx *x;
	struct rr_nfs *n;
	const char *dir;
	int rc;
	char what[64];
};

static void step(struct pass *p, const char *what, int rc)
{
	if (rc >= 0 || p->rc)
		return;
	p->rc = rc;
	snprintf(p->what, sizeof(p->what), "%s %s", what, p->dir);
}

static void path_of(const struct pass *p, const char *name, char out[128])
{
	snprintf(out, 128, "%s/%s", p->dir, name);
}

/* Writes len bytes of src to name, reads them back, compares. */
static void file_rw(struct pass *p, const char *name, const uint8_t *src,
		    size_t len)
{
	struct rr_nfs_file *f = NULL;
	char path[128];
	ssize_t n;
	int rc;

	path_of(p, name, path);
	rc = rr_nfs_open(p->n, path, O_RDWR | O_CREAT | O_TRUNC, 0644, &f);
	step(p, "open", rc);
	if (rc)
		return;
	n = rr_nfs_pwrite(f, src, len, 0);
	step(p, "pwrite", n < 0 ? (int)n : 0);
	if (n == (ssize_t)len) {
		memset(p->x->back, 0, len);
		n = rr_nfs_pread(f, p->x->back, len, 0);
		step(p, "pread", n < 0 ? (int)n : 0);
		/* whatever failed on the way, bytes read must be ours */
		if (n > 0 && memcmp(p->x->back, src, (size_t)n))
			fatal(p->x->r, F_BYTES, "pread", 0);
		if (n >= 0 && n != (ssize_t)len)
			fatal(p->x->r, F_BYTES, "short pread", 0);
	} else if (n >= 0) {
		step(p, "short pwrite", -EIO);
	}
	step(p, "close", rr_nfs_close(f));
}

static bool listed(struct pass *p, const char *a, const char *b)
{
	struct rr_nfs_dir *d = NULL;
	const struct rr_nfs_dirent *e;
	int rc = rr_nfs_opendir(p->n, p->dir, &d), seen = 0;

	step(p, "opendir", rc);
	if (rc)
		return false;
	while ((e = rr_nfs_readdir(d)))
		seen |= (!strcmp(e->name, a)) | (!strcmp(e->name, b)) << 1;
	rr_nfs_closedir(d);
	return seen == 3;
}

/* A symbolic link to big, followed: READLINK and the walk's splice. */
static void through_link(struct pass *p)
{
	char link[128];
	struct stat st;
	int rc;

	path_of(p, "link", link);
	step(p, "symlink", rr_nfs_symlink(p->n, "big", link));
	rc = rr_nfs_stat(p->n, link, &st);
	step(p, "stat through a link", rc);
	if (!rc && !p->rc && st.st_size != BIG_LEN)
		fatal(p->x->r, F_BYTES, "stat through a link", 0);
	step(p, "unlink", rr_nfs_unlink(p->n, link));
}

static void work(struct pass *p)
{
	static const uint8_t small[SMALL_LEN] = "a small file, inline";
	char from[128], to[128];
	struct stat st;

	step(p, "mkdir", rr_nfs_mkdir(p->n, p->dir, 0755));
	file_rw(p, "small", small, sizeof(small));
	file_rw(p, "big", p->x->big, BIG_LEN);
	if (!listed(p, "small", "big"))
		step(p, "readdir (entries missing)", -ENOENT);
	path_of(p, "small", from);
	path_of(p, "renamed", to);
	step(p, "rename", rr_nfs_rename(p->n, from, to));
	step(p, "stat", rr_nfs_stat(p->n, to, &st));
	if (!p->rc && st.st_size != SMALL_LEN)
		fatal(p->x->r, F_BYTES, "stat after rename", 0);
	step(p, "unlink", rr_nfs_unlink(p->n, to));
	through_link(p);
	path_of(p, "big", from);
	step(p, "unlink", rr_nfs_unlink(p->n, from));
	step(p, "rmdir", rr_nfs_rmdir(p->n, p->dir));
}

static int mount(struct ctx *x, struct rr_nfs **n)
{
	struct rr_nfs_opts o = {.timeout_ms = CALL_TMO_MS,
				.connect_timeout_ms = CALL_TMO_MS,
				.depth = DEPTH,
				.max_io = MAX_IO};
	bool tcp = !strcmp(x->proto, "tcp");
	const char *prov = getenv("RR_PROVIDER");
	char url[PATH_MAX + 128];

	/* the provider named, as the server's: the URL's argument is swept */
	snprintf(url, sizeof(url),
		 "nfs://127.0.0.1%s?nfsport=%u&mountport=%u&proto=%s"
		 "&provider=%s",
		 x->exp, tcp ? x->s.tport : x->s.rport, x->s.tport, x->proto,
		 prov && *prov ? prov : "iwarp");
	return rr_nfs_mount(url, &o, n);
}

static void client_stats(struct ctx *x, struct rr_nfs *n)
{
	struct rr_xprt_stats st;

	if (rr_nfs_xprt_stats(n, &st))
		return; /* over TCP */
	if (st.unknown_cqes)
		fatal(x->r, F_UNKNOWN_CQE, "client completions", 0);
}

/*
 * Still armed, the same mount asks for the root's attributes: that must
 * work unless an allocation failed under this very call. A failure
 * earlier in the pass must not have left the mount (or the server)
 * unable to serve a call.
 */
static void probe(struct ctx *x, struct rr_nfs *n)
{
	struct rr_alloc_inject_stats before, after;
	struct stat st;
	int rc;

	rr_alloc_inject_stats(&before);
	rc = rr_nfs_stat(n, "/", &st);
	rr_alloc_inject_stats(&after);
	if (rc && after.failed == before.failed)
		fatal(x->r, F_AFTER, "the same mount after a failure", rc);
	note(x->r, "stat / of the mount", rc);
}

/* The armed part: any error is the injector's doing, and fine. */
static void armed(struct ctx *x)
{
	struct pass p = {.x = x, .dir = "d"};
	int rc = mount(x, &p.n);

	note(x->r, "mount", rc);
	if (rc)
		return;
	work(&p);
	note(x->r, p.what, p.rc);
	probe(x, p.n);
	client_stats(x, p.n);
	note(x->r, "umount", rr_nfs_umount(p.n));
}

/* Disarmed: the server must serve a new mount in full. */
static void after(struct ctx *x)
{
	struct pass p = {.x = x, .dir = "after"};
	int rc = mount(x, &p.n);

	if (rc) {
		fatal(x->r, F_AFTER, "mount after", rc);
		return;
	}
	work(&p);
	if (p.rc)
		fatal(x->r, F_AFTER, p.what, p.rc);
	client_stats(x, p.n);
	rc = rr_nfs_umount(p.n);
	if (rc)
		fatal(x->r, F_AFTER, "umount after", rc);
}

/* ========================================================== the run */

static bool setup(struct ctx *x, const char *top)
{
	snprintf(x->exp, sizeof(x->exp), "%s/run.XXXXXX", top);
	x->big = malloc(BIG_LEN);
	x->back = malloc(BIG_LEN);
	if (!x->big || !x->back || !mkdtemp(x->exp))
		return false;
	for (size_t i = 0; i < BIG_LEN; i++)
		x->big[i] = (uint8_t)((i * 2654435761u) >> 13 ^ (i >> 12));
	return true;
}

void scenario(const char *top, const char *proto, struct rr_t_sweep_report *r)
{
	struct ctx x = {.r = r, .proto = proto};

	/* the test's own memory and directory: libc's, never failed */
	if (!setup(&x, top)) {
		fatal(r, F_SETUP, "set-up", errno);
	} else if (!serve(&x)) {
		armed(&x);
		rr_alloc_inject_off();
		after(&x);
	}
	rr_alloc_inject_off();
	unserve(&x);
	rr_t_rm_tree(x.exp);
	free(x.big);
	free(x.back);
}
