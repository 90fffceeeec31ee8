/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * MOUNT version 3 (RFC 1813 section 5). MNT of an export's path (or a
 * directory below it) answers that directory's handle with AUTH_SYS and
 * AUTH_NONE; DUMP lists what MNT recorded, UMNT and UMNTALL forget it,
 * EXPORT lists the exports. A server alone has one export, open to
 * everyone; an exporter's table (exporter.c) has several, and MNT picks
 * the one the path is in and answers MNT3ERR_ACCES to a client none of
 * its rules admits, as Linux's mountd does.
 *
 * The list DUMP answers has one entry per client host and directory, at
 * most MNT_MAX, the oldest dropped first. RFC 1813 (5.2.4) calls it
 * advisory, and a server may forget: bounding it costs at most a DUMP
 * line, while unbounded it let any client grow our memory, and UMNTALL
 * from one client used to empty everyone's.
 */
#include "nfs3/server/nfsd.h"

#include "base/alloc.h"
#include "base/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define MNT_MAX 256

struct nfsd_mnt {
	struct nfsd_mnt *next;
	char host[INET6_ADDRSTRLEN];
	char dir[];
};

static int auth_flavors[] = {RR_AUTH_SYS, RR_AUTH_NONE};

const char *rr__nfsd_below(const struct rr_nfs3_server *s, const char *dir)
{
	const char *roots[] = {s->export_path, s->export_real};

	for (int i = 0; i < 2; i++) {
		size_t n = strlen(roots[i]);

		while (n > 1 && roots[i][n - 1] == '/')
			n--;
		if (strncmp(dir, roots[i], n))
			continue;
		if (dir[n] == '\0')
			return dir + n;
		if (dir[n] == '/' || (n == 1 && roots[i][0] == '/'))
			return dir + n + (dir[n] == '/');
	}
	return NULL;
}

/*
 * Looks path up from the root one directory at a time and tells the
 * handle cache where each is, as a client's LOOKUPs would: the handle MNT
 * answers then resolves without a walk of the tree.
 */
static int mnt_walk(struct nfsd_call *c, char *path, struct nfsd_obj *o)
{
	int rc = rr__nfsd_obj_at(c, "", o);
	size_t i = 0;

	while (!rc && path[i]) {
		struct stat dir = o->st;
		size_t start;
		char save;

		while (path[i] == '/')
			i++;
		start = i;
		while (path[i] && path[i] != '/')
			i++;
		save = path[i];
		path[i] = '\0';
		if (start == i)
			break; /* trailing slashes */
		rc = rr__nfsd_name_ok(path + start)
			     ? -EACCES
			     : rr__nfsd_obj_at(c, path, o);
		if (!rc)
			rr__nfsd_cache_put(c->s, &o->st, (uint64_t)dir.st_dev,
					   (uint64_t)dir.st_ino, path + start);
		path[i] = save;
	}
	o->path = NULL; /* path is ours */
	return rc;
}

/*
 * The same through a backend that has no local path (->root): each
 * directory looked up as the server, from the export's root.
 */
static int mnt_walk_be(struct nfsd_call *c, char *path, struct nfsd_obj *o)
{
	const struct nfsd_be_ops *be = rr__nfsd_be(c);
	char *save = NULL;
	int rc = be->root(c, o);

	for (char *n = strtok_r(path, "/", &save); n && !rc;
	     n = strtok_r(NULL, "/", &save)) {
		struct nfsd_obj dir = *o;

		if (rr__nfsd_name_ok(n) || !S_ISDIR(dir.st.st_mode))
			return -EACCES;
		rc = be->lookup(c, &dir, n, o, NFSD_BE_LOOKUP_ACT);
	}
	return rc;
}

static mountstat3 mnt_resolve(struct nfsd_call *c, const char *dir,
			      struct nfsd_obj *o)
{
	const char *rel = rr__nfsd_below(c->s, dir);
	char path[PATH_MAX];
	size_t n;
	int rc;

	if (!rel)
		return MNT3ERR_NOENT;
	n = strlen(rel);
	while (n && rel[n - 1] == '/')
		n--;
	if (n >= PATH_MAX || strstr(rel, ".."))
		return MNT3ERR_ACCES;
	memcpy(path, rel, n);
	path[n] = '\0';
	rc = rr__nfsd_be(c)->root ? mnt_walk_be(c, path, o)
				  : mnt_walk(c, path, o);
	if (rc == -ENOENT)
		return MNT3ERR_NOENT;
	if (rc)
		return MNT3ERR_ACCES;
	return S_ISDIR(o->st.st_mode) ? MNT3_OK : MNT3ERR_NOTDIR;
}

void rr__nfsd_host_of(const struct nfsd_call *c, char host[INET6_ADDRSTRLEN])
{
	rr__nfsd_addr_str(rr_svc_req_peer(c->req), host);
}

void rr__nfsd_addr_str(const struct sockaddr *sa, char host[INET6_ADDRSTRLEN])
{
	const void *a = NULL;

	if (sa && sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa && sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (!a || !inet_ntop(sa->sa_family, a, host, INET6_ADDRSTRLEN))
		strcpy(host, "unknown");
}

/* Drops the entries of host and dir (NULL: any). Caller holds mnt_lock. */
static void mnt_drop(struct rr_nfs3_server *s, const char *host,
		     const char *dir)
{
	for (struct nfsd_mnt **pp = &s->mounts; *pp;) {
		struct nfsd_mnt *m = *pp;

		if ((!host || !strcmp(m->host, host)) &&
		    (!dir || !strcmp(m->dir, dir))) {
			*pp = m->next;
			free(m);
			s->nmounts--;
		} else {
			pp = &m->next;
		}
	}
}

/* The list is newest first: the oldest is its last. Caller holds mnt_lock. */
static void mnt_drop_oldest(struct rr_nfs3_server *s)
{
	struct nfsd_mnt **pp = &s->mounts;

	while (*pp && (*pp)->next)
		pp = &(*pp)->next;
	if (*pp) {
		free(*pp);
		*pp = NULL;
		s->nmounts--;
	}
}

static void mnt_record(struct nfsd_call *c, const char *dir)
{
	struct rr_nfs3_server *s = c->s;
	size_t n = strlen(dir) + 1;
	struct nfsd_mnt *m = rr_malloc(sizeof(*m) + n);

	if (!m)
		return; /* advisory: a MNT is not refused for it */
	rr__nfsd_host_of(c, m->host);
	memcpy(m->dir, dir, n);
	pthread_mutex_lock(&s->mnt_lock);
	mnt_drop(s, m->host, dir); /* once per host and directory */
	m->next = s->mounts;
	s->mounts = m;
	if (++s->nmounts > MNT_MAX)
		mnt_drop_oldest(s);
	pthread_mutex_unlock(&s->mnt_lock);
}

/*
 * UMNT (dir) and UMNTALL (dir NULL) forget the caller's entries only, in
 * every export of the exporter's.
 */
static void mnt_forget(struct nfsd_call *c, const char *dir)
{
	char host[INET6_ADDRSTRLEN];
	struct rr_nfs3_server *s = c->s;

	rr__nfsd_host_of(c, host);
	for (uint32_t i = 1; s; i++) {
		pthread_mutex_lock(&s->mnt_lock);
		mnt_drop(s, host, dir);
		pthread_mutex_unlock(&s->mnt_lock);
		s = c->ex ? rr__nfsd_ex_member(c->ex, i) : NULL;
	}
}

void rr__nfsd_mounts_free(struct rr_nfs3_server *s)
{
	pthread_mutex_lock(&s->mnt_lock);
	mnt_drop(s, NULL, NULL);
	pthread_mutex_unlock(&s->mnt_lock);
}

/*
 * A dirpath decoded whole: rpcgen stops a string at its first NUL, so a
 * path "/export\0junk" would mount "/export". The bytes it took say how
 * long the string really was.
 */
static bool_t dirpath_whole(XDR *in, dirpath *dir)
{
	u_int start = xdr_getpos(in);
	size_t n;

	if (!rr__xdr_dirpath(in, dir))
		return FALSE;
	n = strlen(*dir);
	return xdr_getpos(in) - start == 4 + ((n + 3) & ~(size_t)3);
}

static bool_t mnt(struct nfsd_call *c, XDR *in, XDR *out)
{
	dirpath dir = NULL;
	mountres3 r = {0};
	struct nfsd_obj o;
	bool_t ok;

	if (!dirpath_whole(in, &dir)) {
		xdr_free((xdrproc_t)rr__xdr_dirpath, (char *)&dir);
		return FALSE;
	}
	r.fhs_status = c->ex ? rr__nfsd_ex_route(c, dir) : MNT3_OK;
	if (r.fhs_status == MNT3_OK)
		r.fhs_status = mnt_resolve(c, dir, &o);
	if (r.fhs_status == MNT3_OK) {
		nfs_fh3 fh;

		if (rr__nfsd_make_fh(c, &o, &fh)) {
			r.fhs_status = MNT3ERR_SERVERFAULT;
		} else {
			r.mountres3_u.mountinfo.fhandle.fhandle3_len =
				fh.data.data_len;
			r.mountres3_u.mountinfo.fhandle.fhandle3_val =
				fh.data.data_val;
			r.mountres3_u.mountinfo.auth_flavors.auth_flavors_len =
				2;
			r.mountres3_u.mountinfo.auth_flavors.auth_flavors_val =
				auth_flavors;
			mnt_record(c, dir);
		}
	}
	ok = rr__xdr_mountres3(out, &r);
	xdr_free((xdrproc_t)rr__xdr_dirpath, (char *)&dir);
	return ok;
}

/* Appends s's entries at *tail, from c's arena. */
static bool_t dump_one(struct nfsd_call *c, struct rr_nfs3_server *s,
		       mountlist **tailp)
{
	mountlist *tail = *tailp;
	bool_t ok = TRUE;

	pthread_mutex_lock(&s->mnt_lock);
	for (struct nfsd_mnt *m = s->mounts; m && ok; m = m->next) {
		struct mountbody *b = rr__nfsd_alloc(c, sizeof(*b));

		ok = b != NULL;
		if (ok) {
			b->ml_hostname = rr__nfsd_strdup(c, m->host);
			b->ml_directory = rr__nfsd_strdup(c, m->dir);
			ok = b->ml_hostname && b->ml_directory;
			b->ml_next = NULL;
			*tail = b;
			tail = &b->ml_next;
		}
	}
	pthread_mutex_unlock(&s->mnt_lock);
	*tailp = tail;
	return ok;
}

static bool_t dump(struct nfsd_call *c, XDR *out)
{
	mountlist head = NULL, *tail = &head;
	struct rr_nfs3_server *s = c->s;
	bool_t ok = TRUE;

	for (uint32_t i = 1; s && ok; i++) {
		ok = dump_one(c, s, &tail);
		s = c->ex ? rr__nfsd_ex_member(c->ex, i) : NULL;
	}
	return ok && rr__xdr_mountlist(out, &head);
}

static bool_t umnt(struct nfsd_call *c, XDR *in)
{
	dirpath dir = NULL;
	bool_t ok = dirpath_whole(in, &dir);

	if (ok)
		mnt_forget(c, dir);
	xdr_free((xdrproc_t)rr__xdr_dirpath, (char *)&dir);
	return ok;
}

static bool_t export_alone(struct nfsd_call *c, XDR *out)
{
	/* a client can only mount an absolute path */
	struct exportnode e = {.ex_dir = c->s->export_path[0] == '/'
						 ? c->s->export_path
						 : c->s->export_real};
	exports head = &e;

	return rr__xdr_exports(out, &head);
}

static bool_t export(struct nfsd_call *c, XDR *out)
{
	if (c->ex)
		return rr__nfsd_ex_list(c, out);
	return export_alone(c, out);
}

static uint32_t answer(struct nfsd_call *c, uint32_t proc, XDR *in, XDR *out)
{
	switch (proc) {
	case MOUNTPROC3_NULL:
	case MOUNTPROC3_UMNTALL:
		if (proc == MOUNTPROC3_UMNTALL)
			mnt_forget(c, NULL);
		return RR_SUCCESS;
	case MOUNTPROC3_MNT:
		return mnt(c, in, out) ? RR_SUCCESS : RR_GARBAGE_ARGS;
	case MOUNTPROC3_DUMP:
		return dump(c, out) ? RR_SUCCESS : RR_SYSTEM_ERR;
	case MOUNTPROC3_UMNT:
		return umnt(c, in) ? RR_SUCCESS : RR_GARBAGE_ARGS;
	case MOUNTPROC3_EXPORT:
		return export(c, out) ? RR_SUCCESS : RR_SYSTEM_ERR;
	default:
		return RR_PROC_UNAVAIL;
	}
}

static uint32_t mount_call(struct rr_svc_req *req, struct rr_nfs3_server *s,
			   struct rr_nfs3_exporter *ex)
{
	struct nfsd_call c = {.s = s, .ex = ex, .req = req};
	size_t len, cap;
	const void *args = rr_svc_args_xdr(req, &len);
	void *res = rr_svc_res_buf(req, &cap);
	uint32_t rc;
	XDR in, out;

	/*
	 * MOUNT runs as the server (c.id stays zero: root when we are root):
	 * MNT answers for the export, not for one caller's rights in it.
	 */
	xdrmem_create(&in, (char *)args, (u_int)len, XDR_DECODE);
	xdrmem_create(&out, res, (u_int)cap, XDR_ENCODE);
	rc = answer(&c, rr_svc_req_proc(req), &in, &out);
	if (rc == RR_GARBAGE_ARGS) {
		char host[INET6_ADDRSTRLEN];

		atomic_fetch_add(&c.s->garbage_args, 1);
		rr__nfsd_host_of(&c, host);
		rr_warn_rl("mount3: %s: arguments that do not decode "
			   "(procedure %u)",
			   host, rr_svc_req_proc(req));
	}
	if (rc == RR_SUCCESS && rr_svc_set_res(req, xdr_getpos(&out), NULL, 0))
		rc = RR_SYSTEM_ERR;
	rr__nfsd_call_close(&c);
	rr__nfsd_arena_free(&c);
	return rc;
}

/* The exporter's MOUNT: its first member counts what no export does. */
uint32_t rr__nfsd_ex_mount_handler(struct rr_svc_req *req, void *arg)
{
	return mount_call(req, rr__nfsd_ex_member(arg, 0), arg);
}

uint32_t rr__nfsd_mount_handler(struct rr_svc_req *req, void *arg)
{
	return mount_call(req, arg, NULL);
}
