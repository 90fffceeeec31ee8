/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NFSv3 server as the end-to-end suites see it: each test serves a
 * fresh temporary export from a forked child over RPC-over-RDMA (iwarp on
 * 127.0.0.1, an ephemeral port piped back) and calls it with rr_clnt_*
 * using rpcgen's XDR. The child must close every descriptor it opened by
 * the time it exits, and hold no more than at the start of a test apart
 * from those naming files of the export (the open-file cache's).
 */
#ifndef RR_TEST_NFS3_SRV_FIXTURE_H
#define RR_TEST_NFS3_SRV_FIXTURE_H

#include "clock.h"
#include "io.h"

#include <rpcrdma/nfs3_server.h>

#include "mount3.h"
#include "nfs3_prot.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define CALL_TMO_MS   30000
#define CHILD_TMO_MS  10000
#define RES_CAP	      (512u << 10)
#define BULK_CAP      (1u << 20)
#define QUICK_IDLE_MS 20
#define SLOW_IDLE_MS  600000

enum {
	OPT_RO = 1,
	OPT_SQUASH = 2,
	/* files idle for QUICK_IDLE_MS are closed */
	OPT_QUICK = 4,
	/* the paths of kept files are proven again on every use */
	OPT_PROVE = 8,
};

struct fh {
	uint32_t len;
	char b[NFS3_FHSIZE];
};

struct fx {
	char exp[PATH_MAX], state[PATH_MAX], top[PATH_MAX];
	char real[PATH_MAX]; /* exp without symlinks */
	pid_t pid;
	int fd;
	uint16_t port;
	int flags;
	int fds; /* the child's descriptors after setup, but the export's */
	struct rr_clnt *c;
	struct rr_cred me;
	struct fh root;
	uint8_t *res, *bulk;
};

#define call_as(f, cr, prog, proc, xa, a, xr, r)                               \
	call_sz(f, cr, prog, proc, xa, a, xr, r, sizeof(*(r)))
#define NFS(f, P, a, r)                                                        \
	assert_int_equal(call_sz(f, &(f)->me, NFS_PROGRAM, NFSPROC3_##P,       \
				 (xdrproc_t)rr__xdr_##P##3args, &(a),          \
				 (xdrproc_t)rr__xdr_##P##3res, &(r),           \
				 sizeof(r)),                                   \
			 0)
#define FREE(P, r) xdr_free((xdrproc_t)rr__xdr_##P##3res, (char *)&(r))

int server_start(struct fx *f);
int server_stop(struct fx *f);
bool_t xvoid(XDR *x, void *p);
int connect_client(struct fx *f);
int call_sz(struct fx *f, const struct rr_cred *cr, uint32_t prog,
	    uint32_t proc, xdrproc_t xa, void *a, xdrproc_t xr, void *r,
	    size_t rsize);
uint32_t status_of(const uint8_t *p);
nfs_fh3 H(struct fh *h);
void keep(struct fh *h, const nfs_fh3 *src);
void mount_root(struct fx *f);
nfsstat3 lookup(struct fx *f, struct fh *dir, const char *name, struct fh *out,
		fattr3 *attr);
nfsstat3 getattr(struct fx *f, struct fh *h, fattr3 *attr);
void path_of(struct fx *f, const char *rel, char out[PATH_MAX]);
void put_file(struct fx *f, const char *rel, const char *data, mode_t mode);
void check_attr(const fattr3 *a, const char *path);
nfsstat3 write_at(struct fx *f, struct fh *h, uint64_t off, const void *data,
		  uint32_t len, stable_how how, WRITE3res *r);
nfsstat3 write_as(struct fx *f, const struct rr_cred *cr, struct fh *h,
		  uint64_t off, const void *data, uint32_t len, stable_how how,
		  WRITE3res *r);
nfsstat3 read_at(struct fx *f, struct fh *h, uint64_t off, uint32_t count,
		 uint32_t *n, bool_t *eof);
/* attr (may be NULL): READ's post-op attributes */
nfsstat3 read_as(struct fx *f, const struct rr_cred *cr, struct fh *h,
		 uint64_t off, uint32_t count, uint32_t *n, bool_t *eof,
		 post_op_attr *attr);
int rm_tree(const char *p);
int child_fds(pid_t pid, const char *dir);
/* The server child's descriptors naming export/rel (deleted or not). */
int file_fds(struct fx *f, const char *rel);
int setup_flags(void **state, int flags);
int setup(void **state);
int setup_ro(void **state);
int setup_squash(void **state);
int setup_quick(void **state);
int setup_prove(void **state);
int teardown(void **state);

#endif
