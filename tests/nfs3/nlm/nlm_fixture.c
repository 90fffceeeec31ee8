// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The NLM tests' shared fixture (nlm_fixture.h). */
#include "nlm_fixture.h"

#include "mount3.h"

#include <rpc/rpcb_prot.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

CLIENT *client(uint16_t port, u_long prog, u_long vers, const char *from)
{
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in me = {.sin_family = AF_INET};
	struct netbuf nb = {
		.len = sizeof(to), .maxlen = sizeof(to), .buf = &to};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CLIENT *c;

	assert_true(fd >= 0);
	if (from) {
		assert_int_equal(inet_pton(AF_INET, from, &me.sin_addr), 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)),
				 0);
	}
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	c = clnt_vc_create(fd, &nb, prog, vers, 0, 0);
	assert_non_null(c);
	clnt_control(c, CLSET_FD_CLOSE, NULL);
	c->cl_auth = authunix_create_default();
	return c;
}

void forget(CLIENT *c)
{
	auth_destroy(c->cl_auth);
	clnt_destroy(c);
}

/* clnt_call, and what went wrong when it fails (the daemon's fate too). */
static void call_ok(const struct fx *f, CLIENT *c, u_long proc, xdrproc_t xa,
		    void *a, xdrproc_t xr, void *r)
{
	enum clnt_stat st = clnt_call(c, proc, xa, a, xr, r, tmo);
	struct rpc_err e;

	if (st == RPC_SUCCESS)
		return;
	clnt_geterr(c, &e);
	rr_t_daemon_tell(&f->d);
	fail_msg("call %lu: %s (errno %d)", proc, clnt_sperrno(st), e.re_errno);
}

void find_fh(struct fx *f)
{
	CLIENT *m = client(f->d.mount, MOUNT_PROGRAM, MOUNT_V3, NULL);
	CLIENT *n = client(f->d.tcp, NFS_PROGRAM, NFS_V3, NULL);
	mountres3 mr;
	LOOKUP3args la;
	LOOKUP3res lr;
	char *dir = f->exp;

	memset(&mr, 0, sizeof(mr));
	call_ok(f, m, MOUNTPROC3_MNT, (xdrproc_t)rr__xdr_dirpath, &dir,
		(xdrproc_t)rr__xdr_mountres3, &mr);
	assert_int_equal(mr.fhs_status, MNT3_OK);
	la.what.dir.data.data_len =
		mr.mountres3_u.mountinfo.fhandle.fhandle3_len;
	la.what.dir.data.data_val =
		mr.mountres3_u.mountinfo.fhandle.fhandle3_val;
	la.what.name = "f";
	memset(&lr, 0, sizeof(lr));
	call_ok(f, n, NFSPROC3_LOOKUP, (xdrproc_t)rr__xdr_LOOKUP3args, &la,
		(xdrproc_t)rr__xdr_LOOKUP3res, &lr);
	assert_int_equal(lr.status, NFS3_OK);
	f->fh_len = lr.LOOKUP3res_u.resok.object.data.data_len;
	memcpy(f->fh, lr.LOOKUP3res_u.resok.object.data.data_val, f->fh_len);
	xdr_free((xdrproc_t)rr__xdr_LOOKUP3res, (char *)&lr);
	xdr_free((xdrproc_t)rr__xdr_mountres3, (char *)&mr);
	forget(n);
	forget(m);
}

void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

bool rpcb_local(bool set, u_long prog, u_long vers, uint16_t port)
{
	struct sockaddr_un sun = {.sun_family = AF_LOCAL};
	struct netbuf nb = {
		.len = sizeof(sun), .maxlen = sizeof(sun), .buf = &sun};
	int fd = socket(AF_LOCAL, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char uaddr[64], owner[] = "test", netid[] = "tcp", none[] = "";
	rpcb parms = {.r_prog = prog,
		      .r_vers = vers,
		      .r_netid = set ? netid : none,
		      .r_addr = uaddr,
		      .r_owner = owner};
	bool_t ok = FALSE;
	CLIENT *c;

	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", _PATH_RPCBINDSOCK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	c = clnt_vc_create(fd, &nb, RPCBPROG, RPCBVERS4, 0, 0);
	assert_non_null(c);
	clnt_control(c, CLSET_FD_CLOSE, NULL);
	snprintf(uaddr, sizeof(uaddr), "127.0.0.1.%u.%u", port >> 8,
		 port & 0xff);
	if (clnt_call(c, set ? RPCBPROC_SET : RPCBPROC_UNSET,
		      (xdrproc_t)xdr_rpcb, (char *)&parms, (xdrproc_t)xdr_bool,
		      (char *)&ok, tmo) != RPC_SUCCESS)
		ok = FALSE;
	clnt_destroy(c);
	return ok;
}

static char cookie[] = "cookie-1";
const nlm4_netobj fx_cookie = {.nlm4_netobj_len = sizeof(cookie) - 1,
			       .nlm4_netobj_val = cookie};

nlm4_lock fx_lock(const struct fx *f, const struct owner *o, uint64_t off,
		  uint64_t len)
{
	return (nlm4_lock){.caller_name = o->host,
			   .fh = {.nlm4_netobj_len = f->fh_len,
				  .nlm4_netobj_val = (char *)f->fh},
			   .oh = {.nlm4_netobj_len = (u_int)strlen(o->oh),
				  .nlm4_netobj_val = o->oh},
			   .svid = o->svid,
			   .l_offset = off,
			   .l_len = len};
}

nlm4_stats fx_res(struct fx *f, u_long proc, xdrproc_t xa, void *a)
{
	nlm4_res r;
	nlm4_stats st;

	memset(&r, 0, sizeof(r));
	call_ok(f, f->nlm, proc, xa, a, (xdrproc_t)rr__xdr_nlm4_res, &r);
	st = r.stat.stat;
	xdr_free((xdrproc_t)rr__xdr_nlm4_res, (char *)&r);
	return st;
}

nlm4_stats fx_nlm_lock(struct fx *f, const struct owner *o, uint64_t off,
		       uint64_t len, bool block)
{
	nlm4_lockargs a = {.cookie = fx_cookie,
			   .block = block,
			   .exclusive = true,
			   .alock = fx_lock(f, o, off, len),
			   .state = 1};

	return fx_res(f, NLMPROC4_LOCK, (xdrproc_t)rr__xdr_nlm4_lockargs, &a);
}

nlm4_stats fx_nlm_unlock(struct fx *f, const struct owner *o, uint64_t off,
			 uint64_t len)
{
	nlm4_unlockargs a = {.cookie = fx_cookie,
			     .alock = fx_lock(f, o, off, len)};

	return fx_res(f, NLMPROC4_UNLOCK, (xdrproc_t)rr__xdr_nlm4_unlockargs,
		      &a);
}
