/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad as a process: started on ephemeral ports (read back from what
 * it prints), MOUNT over TCP, NFS over RPC-over-RDMA and over TCP (where
 * READ and WRITE data travel inline), a clean exit on SIGTERM, and file
 * handles still good after a restart with the same state directory.
 *
 * argv[1] is the nfsrdmad binary.
 */
#include "clock.h"
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "io.h"
#include "mount3.h"
#include "nfs3_prot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define TMO_MS	10000
#define RES_CAP (64u << 10)

static const char *daemon_path;

struct daemon {
	pid_t pid;
	int out;
	uint16_t rdma, tcp, mount;
};

struct fx {
	char top[PATH_MAX], exp[PATH_MAX], state[PATH_MAX];
	struct daemon d;
	uint8_t res[RES_CAP];
	struct rr_cred me;
};

/* Reads the daemon's stdout up to its "ready" line, within TMO_MS. */
static int read_banner(struct daemon *d)
{
	char buf[4096] = "", *line, *r;
	size_t len = 0;
	uint64_t end = rr_t_now_ms() + TMO_MS;

	while (!(r = strstr(buf, "ready")) || !strchr(r, '\n')) {
		struct pollfd p = {.fd = d->out, .events = POLLIN};
		int64_t left = (int64_t)(end - rr_t_now_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		n = read(d->out, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return -EIO;
		len += (size_t)n;
		buf[len] = '\0';
	}
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *colon = strrchr(line, ':');
		unsigned port = colon ? (unsigned)atoi(colon + 1) : 0;

		if (strstr(line, "over rdma"))
			d->rdma = (uint16_t)port;
		else if (strstr(line, "nfs3 over tcp"))
			d->tcp = (uint16_t)port;
		else if (strstr(line, "mount3 over tcp"))
			d->mount = (uint16_t)port;
	}
	return d->rdma && d->tcp && d->mount ? 0 : -EPROTO;
}

static int daemon_start(struct fx *f)
{
	int p[2];

	memset(&f->d, 0, sizeof(f->d));
	if (pipe(p))
		return -errno;
	f->d.pid = fork();
	if (f->d.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		close(p[0]);
		execl(daemon_path, "nfsrdmad", "--export", f->exp,
		      "--state-dir", f->state, "--rdma-port", "0", "--tcp-port",
		      "0", "--mount-port", "0", "--address", "127.0.0.1",
		      "--threads", "2", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f->d.out = p[0];
	return f->d.pid < 0 ? -errno : read_banner(&f->d);
}

/* SIGTERM; the exit status, or -1 if it did not exit within TMO_MS. */
static int daemon_stop(struct fx *f)
{
	uint64_t end = rr_t_now_ms() + TMO_MS;
	int status = 0;
	char c;

	kill(f->d.pid, SIGTERM);
	/* our end of its stdout sees EOF when it exits */
	while (rr_t_now_ms() < end) {
		struct pollfd p = {.fd = f->d.out, .events = POLLIN};

		if (poll(&p, 1, (int)(end - rr_t_now_ms())) <= 0 ||
		    read(f->d.out, &c, 1) <= 0)
			break;
	}
	close(f->d.out);
	if (rr_t_now_ms() >= end)
		kill(f->d.pid, SIGKILL);
	waitpid(f->d.pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool_t xvoid(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

/* One call on either transport, rpcgen-encoded; raw args when xa NULL. */
static void call(struct fx *f, void *clnt, bool tcp, uint32_t prog,
		 uint32_t proc, xdrproc_t xa, void *a, xdrproc_t xr, void *r,
		 size_t rsize)
{
	char args[1024];
	struct rr_call c = {.prog = prog,
			    .vers = 3,
			    .proc = proc,
			    .cred = &f->me,
			    .args = args,
			    .res = f->res,
			    .res_cap = RES_CAP};
	XDR x;

	xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
	assert_true(xa(&x, a));
	c.args_len = xdr_getpos(&x);
	assert_int_equal(
		tcp ? rr_tcp_clnt_call(clnt, &c) : rr_clnt_call(clnt, &c), 0);
	memset(r, 0, rsize);
	xdrmem_create(&x, (char *)f->res, (u_int)c.res_len, XDR_DECODE);
	assert_true(xr(&x, r));
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->top, sizeof(f->top), "%.200s/nfsrdmad.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(f->top))
		return -1;
	snprintf(f->exp, sizeof(f->exp), "%.200s/export", f->top);
	snprintf(f->state, sizeof(f->state), "%.200s/state", f->top);
	if (mkdir(f->exp, 0755))
		return -1;
	f->me = (struct rr_cred){.uid = getuid(), .gid = getgid()};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (rr_t_rm_tree(f->top))
		return -1;
	free(f);
	return 0;
}

static void mount_root(struct fx *f, nfs_fh3 *root, char *buf)
{
	struct rr_tcp_clnt *mc;
	mountres3 mr;
	char *path = f->exp;

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->d.mount, NULL, &mc),
			 0);
	call(f, mc, true, MOUNT_PROGRAM, MOUNTPROC3_MNT,
	     (xdrproc_t)rr__xdr_dirpath, &path, (xdrproc_t)rr__xdr_mountres3,
	     &mr, sizeof(mr));
	assert_int_equal(mr.fhs_status, MNT3_OK);
	root->data.data_len = mr.mountres3_u.mountinfo.fhandle.fhandle3_len;
	memcpy(buf, mr.mountres3_u.mountinfo.fhandle.fhandle3_val,
	       root->data.data_len);
	root->data.data_val = buf;
	xdr_free((xdrproc_t)rr__xdr_mountres3, (char *)&mr);
	assert_int_equal(rr_tcp_clnt_destroy(mc), 0);
}

/* WRITE over TCP: the data inline after its length word, padded. */
static void tcp_write(struct fx *f, struct rr_tcp_clnt *c, nfs_fh3 *fh,
		      const char *data)
{
	WRITE3args a = {.file = *fh,
			.count = (count3)strlen(data),
			.stable = FILE_SYNC,
			.data = {.data_len = (u_int)strlen(data),
				 .data_val = (char *)data}};
	WRITE3res r;

	call(f, c, true, NFS_PROGRAM, NFSPROC3_WRITE,
	     (xdrproc_t)rr__xdr_WRITE3args, &a, (xdrproc_t)rr__xdr_WRITE3res,
	     &r, sizeof(r));
	assert_int_equal(r.status, NFS3_OK);
	assert_int_equal(r.WRITE3res_u.resok.count, strlen(data));
	xdr_free((xdrproc_t)rr__xdr_WRITE3res, (char *)&r);
}

static void serves_mount_tcp_and_rdma_then_stops_cleanly(void **state)
{
	struct fx *f = *state;
	char rootbuf[NFS3_FHSIZE], fbuf[NFS3_FHSIZE];
	nfs_fh3 root, file;
	struct rr_tcp_clnt *tc;
	struct rr_clnt *rc;
	struct rr_clnt_opts ro = {.timeout_ms = TMO_MS};
	CREATE3args ca;
	CREATE3res cr;
	READ3args ra;
	READ3res rr;
	GETATTR3args ga;
	GETATTR3res gr;
	char dummy;

	assert_int_equal(daemon_start(f), 0);
	mount_root(f, &root, rootbuf);

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->d.tcp, NULL, &tc),
			 0);
	call(f, tc, true, NFS_PROGRAM, NFSPROC3_NULL, (xdrproc_t)xvoid, &dummy,
	     (xdrproc_t)xvoid, &dummy, 1);
	ca = (CREATE3args){.where = {.dir = root, .name = "f"},
			   .how = {.mode = UNCHECKED}};
	call(f, tc, true, NFS_PROGRAM, NFSPROC3_CREATE,
	     (xdrproc_t)rr__xdr_CREATE3args, &ca, (xdrproc_t)rr__xdr_CREATE3res,
	     &cr, sizeof(cr));
	assert_int_equal(cr.status, NFS3_OK);
	file = cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
	memcpy(fbuf, file.data.data_val, file.data.data_len);
	file.data.data_val = fbuf;
	xdr_free((xdrproc_t)rr__xdr_CREATE3res, (char *)&cr);
	tcp_write(f, tc, &file, "hello over tcp");
	/* READ over TCP: the data comes inline, as rpcgen expects */
	ra = (READ3args){.file = file, .count = 100};
	call(f, tc, true, NFS_PROGRAM, NFSPROC3_READ,
	     (xdrproc_t)rr__xdr_READ3args, &ra, (xdrproc_t)rr__xdr_READ3res,
	     &rr, sizeof(rr));
	assert_int_equal(rr.status, NFS3_OK);
	assert_true(rr.READ3res_u.resok.eof);
	assert_int_equal(rr.READ3res_u.resok.data.data_len, 14);
	assert_memory_equal(rr.READ3res_u.resok.data.data_val, "hello over tcp",
			    14);
	xdr_free((xdrproc_t)rr__xdr_READ3res, (char *)&rr);
	assert_int_equal(rr_tcp_clnt_destroy(tc), 0);

	/* the same file over RDMA */
	assert_int_equal(rr_clnt_create("127.0.0.1", f->d.rdma, &ro, &rc), 0);
	ga = (GETATTR3args){.object = file};
	call(f, rc, false, NFS_PROGRAM, NFSPROC3_GETATTR,
	     (xdrproc_t)rr__xdr_GETATTR3args, &ga,
	     (xdrproc_t)rr__xdr_GETATTR3res, &gr, sizeof(gr));
	assert_int_equal(gr.status, NFS3_OK);
	assert_int_equal(gr.GETATTR3res_u.resok.obj_attributes.size, 14);
	xdr_free((xdrproc_t)rr__xdr_GETATTR3res, (char *)&gr);
	assert_int_equal(rr_clnt_destroy(rc), 0);
	assert_int_equal(daemon_stop(f), 0);

	/* restarted with the same state: the old handle still works */
	assert_int_equal(daemon_start(f), 0);
	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->d.tcp, NULL, &tc),
			 0);
	call(f, tc, true, NFS_PROGRAM, NFSPROC3_GETATTR,
	     (xdrproc_t)rr__xdr_GETATTR3args, &ga,
	     (xdrproc_t)rr__xdr_GETATTR3res, &gr, sizeof(gr));
	assert_int_equal(gr.status, NFS3_OK);
	xdr_free((xdrproc_t)rr__xdr_GETATTR3res, (char *)&gr);
	assert_int_equal(rr_tcp_clnt_destroy(tc), 0);
	assert_int_equal(daemon_stop(f), 0);
}

static void refuses_a_missing_export(void **state)
{
	struct fx *f = *state;
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		execl(daemon_path, "nfsrdmad", "--export", "/nonexistent/x",
		      "--state-dir", f->state, "--rdma-port", "0",
		      (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			serves_mount_tcp_and_rdma_then_stops_cleanly, setup,
			teardown),
		cmocka_unit_test_setup_teardown(refuses_a_missing_export, setup,
						teardown),
	};

	if (argc != 2 || access(argv[1], X_OK)) {
		fprintf(stderr, "usage: nfsrdmad_test PATH-TO-NFSRDMAD\n");
		return 77;
	}
	daemon_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
