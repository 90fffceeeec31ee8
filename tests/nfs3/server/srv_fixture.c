/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The server child, the client calls and the fixtures of srv_fixture.h. */
#include "srv_fixture.h"

#include "nfs3/server/nfsd.h" /* OPT_QUICK tunes the open-file cache */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct rr_svc *child_svc;

/*
 * libtirpc's xdr_opaque reads every padding into one static scratch
 * buffer, so handlers decoding on several threads write it at once. The
 * bytes are never read; TSan would report each time. Only races with
 * libtirpc in them go (nfsrdmad's main.c says why no more).
 */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:libtirpc.so.3\n";
}

/* ============================================================ server */

static void on_term(int sig)
{
	(void)sig;
	if (child_svc)
		rr_svc_stop(child_svc);
}

static void child(struct fx *f, int out, pid_t parent)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_opts so = {.provider = getenv("RR_PROVIDER"),
				 .threads = 2};
	struct rr_nfs3_server_opts no = {.export_path = f->exp,
					 .state_dir = f->state,
					 .read_only = f->flags & OPT_RO,
					 .root_squash = f->flags & OPT_SQUASH};
	struct sigaction sa = {.sa_handler = on_term};
	struct rr_svc_prog nfs, mnt;
	struct rr_nfs3_server *ns;
	struct rr_svc *s;
	uint16_t port = 0;
	int rc, before, after;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3);
	before = child_fds(getpid(), NULL);
	rc = rr_nfs3_server_create(&no, &ns);
	if (!rc)
		rc = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), &so,
				   &s);
	if (rc) {
		fprintf(stderr, "server child: setup failed: %d\n", rc);
		_exit(5);
	}
	/* files stay open for as long as a test looks, unless it is quick */
	rr__nfsd_fcache_tune(
		ns->files, f->flags & OPT_QUICK ? QUICK_IDLE_MS : SLOW_IDLE_MS,
		f->flags & OPT_PROVE ? 0 : 1000);
	rr_nfs3_server_progs(ns, &nfs, &mnt);
	if (rr_svc_register(s, &nfs) || rr_svc_register(s, &mnt) ||
	    rr_svc_port(s, &port))
		_exit(6);
	child_svc = s;
	sigaction(SIGTERM, &sa, NULL);
	if (write(out, &port, sizeof(port)) != sizeof(port))
		_exit(7);
	rc = rr_svc_run(s);
	child_svc = NULL;
	rr_svc_destroy(s);
	rr_nfs3_server_destroy(ns);
	/* every descriptor, the open-file cache's too, closed by now */
	after = child_fds(getpid(), NULL);
	if (after != before) {
		fprintf(stderr,
			"server child: %d descriptors at exit, %d "
			"before the server\n",
			after, before);
		_exit(9);
	}
	_exit(rc ? 8 : 0);
}

int server_start(struct fx *f)
{
	pid_t parent = getpid();
	int p[2];

	if (pipe(p))
		return -errno;
	f->pid = fork();
	if (f->pid < 0)
		return -errno;
	if (f->pid == 0) {
		close(p[0]);
		child(f, p[1], parent);
	}
	close(p[1]);
	f->fd = p[0];
	if (!rr_t_read_within(f->fd, &f->port, sizeof(f->port), CHILD_TMO_MS)) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
		close(f->fd);
		f->pid = 0;
		return -EIO;
	}
	return 0;
}

int server_stop(struct fx *f)
{
	uint64_t end = rr_t_now_ms() + CHILD_TMO_MS;
	int status = 0;
	pid_t w;

	if (!f->pid)
		return 0;
	kill(f->pid, SIGTERM);
	while ((w = waitpid(f->pid, &status, WNOHANG)) == 0 &&
	       rr_t_now_ms() < end) {
		struct pollfd pfd = {.fd = f->fd, .events = POLLIN};
		char ch;

		/* the pipe closes when the child exits: wait for that */
		if (poll(&pfd, 1, (int)(end - rr_t_now_ms())) > 0 &&
		    read(f->fd, &ch, 1) <= 0)
			break;
	}
	if (w == 0 && waitpid(f->pid, &status, WNOHANG) == 0) {
		uint64_t e2 = rr_t_now_ms() + 2000;

		while ((w = waitpid(f->pid, &status, WNOHANG)) == 0 &&
		       rr_t_now_ms() < e2)
			poll(NULL, 0, 10);
		if (w == 0) {
			kill(f->pid, SIGKILL);
			waitpid(f->pid, &status, 0);
		}
	}
	close(f->fd);
	f->pid = 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ============================================================ client */

/* xdr_void's prototype takes no arguments; this one has xdrproc_t's */
bool_t xvoid(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

int connect_client(struct fx *f)
{
	struct rr_clnt_opts o = {.provider = getenv("RR_PROVIDER"),
				 .timeout_ms = CALL_TMO_MS};

	return rr_clnt_create("127.0.0.1", f->port, &o, &f->c);
}

/* One call: args by rpcgen; results decoded into r with xr. */
int call_sz(struct fx *f, const struct rr_cred *cr, uint32_t prog,
	    uint32_t proc, xdrproc_t xa, void *a, xdrproc_t xr, void *r,
	    size_t rsize)
{
	char args[8192];
	XDR x;
	struct rr_call c = {.prog = prog,
			    .vers = 3,
			    .proc = proc,
			    .cred = cr,
			    .args = args,
			    .res = f->res,
			    .res_cap = RES_CAP};
	int rc;

	xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
	assert_true(xa(&x, a));
	c.args_len = xdr_getpos(&x);
	rc = rr_clnt_call(f->c, &c);
	if (rc)
		return rc;
	assert_int_equal(c.accept_stat, RR_SUCCESS);
	/* rpcgen decodes into buffers it finds: start from nothing */
	memset(r, 0, rsize);
	xdrmem_create(&x, (char *)f->res, (u_int)c.res_len, XDR_DECODE);
	assert_true(xr(&x, r));
	return 0;
}

/* The nfsstat3 a result starts with. */
uint32_t status_of(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

nfs_fh3 H(struct fh *h)
{
	return (nfs_fh3){.data = {.data_len = h->len, .data_val = h->b}};
}

void keep(struct fh *h, const nfs_fh3 *src)
{
	assert_true(src->data.data_len <= NFS3_FHSIZE);
	h->len = src->data.data_len;
	memcpy(h->b, src->data.data_val, h->len);
}

void mount_root(struct fx *f)
{
	char *path = f->exp;
	mountres3 r = {0};

	assert_int_equal(call_as(f, &f->me, MOUNT_PROGRAM, MOUNTPROC3_MNT,
				 (xdrproc_t)rr__xdr_dirpath, &path,
				 (xdrproc_t)rr__xdr_mountres3, &r),
			 0);
	assert_int_equal(r.fhs_status, MNT3_OK);
	f->root.len = r.mountres3_u.mountinfo.fhandle.fhandle3_len;
	memcpy(f->root.b, r.mountres3_u.mountinfo.fhandle.fhandle3_val,
	       f->root.len);
	xdr_free((xdrproc_t)rr__xdr_mountres3, (char *)&r);
}

nfsstat3 lookup(struct fx *f, struct fh *dir, const char *name, struct fh *out,
		fattr3 *attr)
{
	LOOKUP3args a = {.what = {.dir = H(dir), .name = (char *)name}};
	LOOKUP3res r = {0};
	nfsstat3 st;

	NFS(f, LOOKUP, a, r);
	st = r.status;
	if (st == NFS3_OK) {
		if (out)
			keep(out, &r.LOOKUP3res_u.resok.object);
		if (attr) {
			assert_true(r.LOOKUP3res_u.resok.obj_attributes
					    .attributes_follow);
			*attr = r.LOOKUP3res_u.resok.obj_attributes
					.post_op_attr_u.attributes;
		}
	}
	FREE(LOOKUP, r);
	return st;
}

nfsstat3 getattr(struct fx *f, struct fh *h, fattr3 *attr)
{
	GETATTR3args a = {.object = H(h)};
	GETATTR3res r = {0};

	NFS(f, GETATTR, a, r);
	if (r.status == NFS3_OK && attr)
		*attr = r.GETATTR3res_u.resok.obj_attributes;
	FREE(GETATTR, r);
	return r.status;
}

void path_of(struct fx *f, const char *rel, char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "%s/%s", f->exp, rel);
}

void put_file(struct fx *f, const char *rel, const char *data, mode_t mode)
{
	char p[PATH_MAX];
	int fd;

	path_of(f, rel, p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

void check_attr(const fattr3 *a, const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(a->fileid, st.st_ino);
	assert_int_equal(a->mode, st.st_mode & 07777);
	assert_int_equal(a->nlink, st.st_nlink);
	assert_int_equal(a->uid, st.st_uid);
	assert_int_equal(a->gid, st.st_gid);
	assert_int_equal(a->size, (uint64_t)st.st_size);
	assert_int_equal(a->used, (uint64_t)st.st_blocks * 512);
	assert_int_equal(a->mtime.seconds, (uint32_t)st.st_mtim.tv_sec);
	assert_int_equal(a->mtime.nseconds, (uint32_t)st.st_mtim.tv_nsec);
	assert_int_equal(a->ctime.seconds, (uint32_t)st.st_ctim.tv_sec);
	assert_int_equal(a->type, S_ISDIR(st.st_mode)	 ? NF3DIR
				  : S_ISLNK(st.st_mode)	 ? NF3LNK
				  : S_ISFIFO(st.st_mode) ? NF3FIFO
							 : NF3REG);
}

/* WRITE with the data as the DDP-eligible argument. */
nfsstat3 write_at(struct fx *f, struct fh *h, uint64_t off, const void *data,
		  uint32_t len, stable_how how, WRITE3res *r)
{
	return write_as(f, &f->me, h, off, data, len, how, r);
}

nfsstat3 write_as(struct fx *f, const struct rr_cred *cr, struct fh *h,
		  uint64_t off, const void *data, uint32_t len, stable_how how,
		  WRITE3res *r)
{
	char args[256];
	nfs_fh3 fh = H(h);
	u_int n = len;
	XDR x;
	struct rr_call c = {.prog = NFS_PROGRAM,
			    .vers = 3,
			    .proc = NFSPROC3_WRITE,
			    .cred = cr,
			    .args = args,
			    .arg_bulk = data,
			    .arg_bulk_len = len,
			    .res = f->res,
			    .res_cap = RES_CAP};

	xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
	assert_true(rr__xdr_nfs_fh3(&x, &fh) && rr__xdr_offset3(&x, &off) &&
		    rr__xdr_count3(&x, &n) && rr__xdr_stable_how(&x, &how) &&
		    xdr_u_int(&x, &n));
	c.args_len = xdr_getpos(&x);
	assert_int_equal(rr_clnt_call(f->c, &c), 0);
	memset(r, 0, sizeof(*r));
	xdrmem_create(&x, (char *)f->res, (u_int)c.res_len, XDR_DECODE);
	assert_true(rr__xdr_WRITE3res(&x, r));
	return r->status;
}

/* READ: the data comes back as the DDP-eligible result, into f->bulk. */
nfsstat3 read_at(struct fx *f, struct fh *h, uint64_t off, uint32_t count,
		 uint32_t *n, bool_t *eof)
{
	return read_as(f, &f->me, h, off, count, n, eof, NULL);
}

nfsstat3 read_as(struct fx *f, const struct rr_cred *cr, struct fh *h,
		 uint64_t off, uint32_t count, uint32_t *n, bool_t *eof,
		 post_op_attr *attr)
{
	READ3args a = {.file = H(h), .offset = off, .count = count};
	char args[256];
	nfsstat3 st;
	post_op_attr pa = {0};
	u_int len;
	XDR x;
	struct rr_call c = {.prog = NFS_PROGRAM,
			    .vers = 3,
			    .proc = NFSPROC3_READ,
			    .cred = cr,
			    .args = args,
			    .res = f->res,
			    .res_cap = RES_CAP,
			    .res_bulk = f->bulk,
			    .res_bulk_cap = BULK_CAP};

	xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
	assert_true(rr__xdr_READ3args(&x, &a));
	c.args_len = xdr_getpos(&x);
	assert_int_equal(rr_clnt_call(f->c, &c), 0);
	xdrmem_create(&x, (char *)f->res, (u_int)c.res_len, XDR_DECODE);
	assert_true(rr__xdr_nfsstat3(&x, &st) && rr__xdr_post_op_attr(&x, &pa));
	if (st == NFS3_OK) {
		assert_true(rr__xdr_count3(&x, n) && xdr_bool(&x, eof) &&
			    xdr_u_int(&x, &len));
		assert_int_equal(len, *n);
		assert_int_equal(c.res_bulk_len, len);
	}
	if (attr)
		*attr = pa;
	return st;
}

/* ========================================================== fixtures */

int rm_tree(const char *p)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	return system(cmd);
}

/*
 * A path too long for the kernel to print (deep trees, nfs3_shapes_test)
 * is taken to be below dir when it is on dir's file system: the only such
 * paths the suites make are in their exports.
 */
static bool same_fs(const char *link, const char *dir)
{
	struct stat a, b;

	return stat(link, &a) == 0 && stat(dir, &b) == 0 &&
	       a.st_dev == b.st_dev;
}

/* Does descriptor name (of pid) name what is at or below dir? */
static bool fd_below(pid_t pid, const char *name, const char *dir)
{
	char p[64], target[PATH_MAX];
	size_t n = strlen(dir);
	ssize_t len;

	snprintf(p, sizeof(p), "/proc/%d/fd/%s", (int)pid, name);
	len = readlink(p, target, sizeof(target) - 1);
	if (len < 0 && errno == ENAMETOOLONG)
		return same_fs(p, dir);
	if (len < 0)
		return false;
	target[len] = '\0';
	return !strncmp(target, dir, n) &&
	       (target[n] == '\0' || target[n] == '/' || target[n] == ' ');
}

/*
 * Descriptors pid holds, apart from those naming dir or what is below it
 * (dir NULL: all of them). A leak per call shows here.
 */
int child_fds(pid_t pid, const char *dir)
{
	char p[64];
	struct dirent *d;
	DIR *dp;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	dp = opendir(p);
	if (!dp)
		return -1;
	while ((d = readdir(dp)))
		n += d->d_name[0] != '.' &&
		     !(dir && fd_below(pid, d->d_name, dir));
	closedir(dp);
	return n;
}

int file_fds(struct fx *f, const char *rel)
{
	char p[PATH_MAX], dir[64];
	struct dirent *d;
	DIR *dp;
	int n = 0;

	snprintf(p, sizeof(p), "%s/%s", f->real, rel);
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)f->pid);
	dp = opendir(dir);
	if (!dp)
		return -1;
	while ((d = readdir(dp)))
		n += d->d_name[0] != '.' && fd_below(f->pid, d->d_name, p);
	closedir(dp);
	return n;
}

int setup_flags(void **state, int flags)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->top, sizeof(f->top), "%s/nfs3srv.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(f->top))
		return -1;
	snprintf(f->exp, sizeof(f->exp), "%s/export", f->top);
	snprintf(f->state, sizeof(f->state), "%s/state", f->top);
	if (mkdir(f->exp, 0755) || !realpath(f->exp, f->real))
		return -1;
	/* the export's parent: what must stay out of reach */
	chmod(f->top, 0755);
	f->flags = flags;
	f->me = (struct rr_cred){.uid = getuid(), .gid = getgid()};
	f->res = malloc(RES_CAP);
	f->bulk = malloc(BULK_CAP);
	if (!f->res || !f->bulk || server_start(f) || connect_client(f))
		return -1;
	mount_root(f);
	f->fds = child_fds(f->pid, f->real);
	*state = f;
	return 0;
}

int setup(void **state)
{
	return setup_flags(state, 0);
}

int setup_ro(void **state)
{
	return setup_flags(state, OPT_RO);
}

int setup_squash(void **state)
{
	return setup_flags(state, OPT_SQUASH);
}

int setup_quick(void **state)
{
	return setup_flags(state, OPT_QUICK);
}

int setup_prove(void **state)
{
	return setup_flags(state, OPT_PROVE);
}

int teardown(void **state)
{
	struct fx *f = *state;
	/* the open-file cache's are counted when the child exits */
	int rc = 0, fds = child_fds(f->pid, f->real);

	if (fds != f->fds) {
		fprintf(stderr, "server child: %d descriptors, %d at start\n",
			fds, f->fds);
		rc = -1;
	}
	if (f->c && rr_clnt_destroy(f->c))
		rc = -1;
	if (server_stop(f))
		rc = -1;
	rm_tree(f->top);
	free(f->res);
	free(f->bulk);
	free(f);
	return rc;
}
