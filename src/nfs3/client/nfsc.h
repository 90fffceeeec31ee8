/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NFSv3 client's insides: one transport interface for RDMA and TCP,
 * the XDR call helper, path resolution, and the per-mount state.
 */
#ifndef RR_NFS3_CLIENT_NFSC_H
#define RR_NFS3_CLIENT_NFSC_H

#include <rpcrdma/nfs3.h>
#include <rpcrdma/oncrpc.h>

#include <pthread.h>
#include <stdarg.h>

#include "handle.h"
#include "mount3.h"
#include "nfs3_prot.h"

/*
 * A transport is the RPC layer's client over RDMA (rr_clnt) or TCP
 * (rr_tcp_clnt), seen through <rpcrdma/oncrpc.h>'s struct rr_rpc_clnt.
 * rr_rpc_clnt_ddp says whether a DDP-eligible item can arrive apart from
 * the XDR (res_bulk), so READ needs room for its data in res only when
 * it is false.
 */
struct nfsc_xprt_opts {
	const char *provider;
	int timeout_ms;
	int connect_timeout_ms;
	uint32_t depth;
	uint32_t max_bulk;
	bool no_reconnect; /* TCP: the first loss fails every call */
	/* servers to fail over to (rr_clnt_opts.failover) */
	const struct rr_failover_server *failover;
	uint32_t nfailover;
};

int rr__nfsc_xprt_rdma(const char *host, uint16_t port,
		       const struct nfsc_xprt_opts *o,
		       struct rr_rpc_clnt **out);
int rr__nfsc_xprt_tcp(const char *host, uint16_t port,
		      const struct nfsc_xprt_opts *o, struct rr_rpc_clnt **out);

/* args' XDR into buf (cap bytes): *len, or -EMSGSIZE. */
int rr__nfsc_encode(xdrproc_t xargs, void *args, char *buf, size_t cap,
		    size_t *len);

/* What the RPC layer said, as an errno: accept/reject status mapped. */
int rr__nfsc_rpc_errno(int rc, const struct rr_call *call);

/* Sets this thread's rr_nfs_error() text; returns err. */
int rr__nfsc_fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* How many times rr__nfsc_fail has run in this thread. */
unsigned rr__nfsc_fail_mark(void);
/*
 * A failing public call says so: when err < 0 and nothing deeper set a
 * message since mark, the text is fmt's then strerror. Returns err.
 */
int rr__nfsc_said(int err, unsigned mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * call, with its failure described by fmt (rr_nfs_error) unless what it
 * called described it already: every public function returns through it.
 */
#define NFSC_SAY(call, ...)                                                    \
	({                                                                     \
		unsigned mark_ = rr__nfsc_fail_mark();                         \
		__typeof__(call) rc_ = (call);                                 \
		if (rc_ < 0)                                                   \
			rr__nfsc_said((int)rc_, mark_, __VA_ARGS__);           \
		rc_;                                                           \
	})

/*
 * The credential n's calls from this thread carry: the one
 * rr_nfs_set_thread_cred gave for n, else the mount's.
 */
const struct rr_cred *rr__nfsc_cred(const struct rr_nfs *n);

/* XDR helpers (libtirpc xdrmem). */
#define NFSC_ARGS_MAX 8192 /* the largest non-WRITE arguments: SYMLINK */
/*
 * Room for any result of fixed shape: by RFC 1813's sizes the largest,
 * CREATE3res, is 280 bytes. Kept small so that, over RDMA, such a reply
 * fits a 4 KiB inline size with room for the RPC header: a larger room
 * would make every GETATTR offer a reply chunk, a registration per call.
 */
#define NFSC_RES_FIXED 512

/*
 * One synchronous call with rpcgen XDR both ways. res is zeroed first and
 * must be xdr_free()d by the caller when 0 comes back. res_cap bounds the
 * reply's XDR; 0 for a result of fixed shape (NFSC_RES_FIXED). Returns 0 or a
 * negative errno (transport or RPC errors; the NFS status is the caller's to
 * read).
 */
int rr__nfsc_xcall(struct rr_rpc_clnt *x, const struct rr_cred *cred,
		   uint32_t prog, uint32_t vers, uint32_t proc, xdrproc_t xargs,
		   void *args, xdrproc_t xres, void *res, size_t res_cap);

_Static_assert(NFSC_FHSIZE == NFS3_FHSIZE, "handle.h's handle size");

struct nfsc_io_ctx;

/* As many as the RDMA client's registration table holds. */
#define NFSC_UREG_MAX 32

struct rr_nfs {
	struct rr_rpc_clnt *x;
	struct rr_cred cred;
	struct nfsc_fh root;
	char *host;
	char *export;
	char *url_path;
	uint16_t mountport;
	uint16_t nlmport;     /* 0: rpcbind's */
	struct nfsc_nlm *nlm; /* the lock manager's client (lock.c), or NULL */
	int timeout_ms;
	int connect_timeout_ms;
	uint32_t depth;
	uint32_t rtmax, wtmax, dtpref;
	pthread_mutex_t io_mu;	     /* guards io_idle, io_nidle */
	struct nfsc_io_ctx *io_idle; /* READ/WRITE slot sets kept (io.c) */
	uint32_t io_nidle;
	/* what rr_nfs_mem_reg registered: pread/pwrite need not again */
	struct nfsc_ureg {
		const char *addr;
		size_t len;
	} uregs[NFSC_UREG_MAX];
	uint32_t nuregs; /* guarded by io_mu */
};

/* The mount's kept slot sets: set up with the mount, freed with it. */
void rr__nfsc_io_init(struct rr_nfs *n);
void rr__nfsc_io_fini(struct rr_nfs *n);

/* Sorted, disjoint, non-adjacent byte ranges [off, end) (ranges.c). */
struct nfsc_range {
	uint64_t off, end;
};
struct nfsc_ranges {
	struct nfsc_range *r;
	uint32_t n, cap;
};
/* Adds [off, off + len), merging; -ENOMEM leaves s as it was. */
int rr__nfsc_ranges_add(struct nfsc_ranges *s, uint64_t off, uint64_t len);
int rr__nfsc_ranges_merge(struct nfsc_ranges *into,
			  const struct nfsc_ranges *s);
void rr__nfsc_ranges_free(struct nfsc_ranges *s);

struct rr_nfs_file {
	struct rr_nfs *n;
	struct nfsc_fh fh;
	int flags;
	rr_nfs_refill_fn refill;
	void *refill_arg;
	pthread_mutex_t mu;	     /* guards the write state below */
	struct nfsc_ranges unstable; /* written UNSTABLE, not committed */
	/*
	 * The array a finished COMMIT gave back (n 0): the next one takes it
	 * in unstable's place, so a writer's COMMITs allocate nothing.
	 */
	struct nfsc_ranges spare;
	bool untracked; /* a range could not be recorded (no memory) */
	bool have_verf;
	bool verf_lost; /* the verifier changed between writes */
	uint8_t verf[NFS3_WRITEVERFSIZE];
	int write_err; /* a WRITE failed: fsync or close says so, once */
};

/*
 * The write-verifier story (commit.c): every WRITE reply, every failed
 * WRITE, and the COMMIT that sends lost data again.
 */
void rr__nfsc_note_write(struct rr_nfs_file *f, uint64_t off, uint32_t len,
			 const WRITE3resok *ok);
void rr__nfsc_note_write_err(struct rr_nfs_file *f, int err);
int rr__nfsc_fsync(struct rr_nfs_file *f);
/* Whether anything waits for a COMMIT (or a failure to be reported). */
bool rr__nfsc_pending(struct rr_nfs_file *f);

/* The longest an unmount waits for the server's UMNT answer. */
#define NFSC_UMNT_MAX_MS 5000

/* A probe waits no longer than a connection may take, nor than a call. */
static inline int nfsc_probe_ms(const struct rr_nfs *n)
{
	if (n->timeout_ms > 0 && n->timeout_ms < n->connect_timeout_ms)
		return n->timeout_ms;
	return n->connect_timeout_ms;
}

static inline void nfsc_fh_arg(nfs_fh3 *a, const struct nfsc_fh *fh)
{
	a->data.data_len = fh->len;
	a->data.data_val = (char *)fh->data;
}

/* Copies a handle from the wire; -EPROTO if it is too long. */
int rr__nfsc_fh_set(struct nfsc_fh *fh, const nfs_fh3 *w);

/* ACCESS for flags' open mode: -EACCES when the server says no. */
int rr__nfsc_access(struct rr_nfs *n, const struct nfsc_fh *fh, int flags);
/* An rr_nfs_file on fh, without checks (file.c). */
int rr__nfsc_file_new(struct rr_nfs *n, const struct nfsc_fh *fh, int flags,
		      struct rr_nfs_file **out);
/* One LOOKUP in dir (path.c). */
int rr__nfsc_lookup1(struct rr_nfs *n, const struct nfsc_fh *dir,
		     const char *name, struct nfsc_fh *fh, fattr3 *attr);

/*
 * READ3args into buf (cap bytes); and a READ3res's count and EOF, with
 * where its bytes are: at res + *at when they came inline, in res_bulk
 * when *at is SIZE_MAX. cap: the most the call asked for (io.c).
 */
int rr__nfsc_read_args(char *buf, size_t cap, const struct nfsc_fh *fh,
		       uint64_t off, uint32_t len, size_t *out_len);
int rr__nfsc_read_res(const struct rr_call *call, uint32_t cap, uint32_t *got,
		      bool *eof, size_t *at);
/*
 * WRITE3args (UNSTABLE, or FILE_SYNC when sync) up to the data's length
 * word; and a WRITE3res's count, the reply noted for the write-verifier
 * story (commit.c).
 */
int rr__nfsc_write_args(char *buf, size_t cap, const struct nfsc_fh *fh,
			uint64_t off, uint32_t len, bool sync, size_t *out_len);
int rr__nfsc_write_res(struct rr_nfs_file *f, const struct rr_call *call,
		       uint64_t off, uint32_t cap, uint32_t *got);

/* SETATTR of the size alone. */
int rr__nfsc_setsize(struct rr_nfs *n, const struct nfsc_fh *fh, uint64_t len);

void rr__nfsc_fattr_to_stat(const fattr3 *a, struct stat *st);

/* Whether this thread's rr_nfs_set_thread_abort check says stop now. */
bool rr__nfsc_abort_now(void);
/* How often a waiting call asks it, in ms. */
#define NFSC_ABORT_SLICE_MS 100

/*
 * NFS3ERR_JUKEBOX: the call is to be sent again later (jukebox.c).
 * rr__nfsc_jukebox says whether a completed call's reply is that;
 * rr__nfsc_jukebox_next says when to send it again, or -ETIMEDOUT once the
 * mount's call timeout has passed; rr__nfsc_jukebox_wait also waits until
 * then, or fails -EINTR when the thread's abort check says stop.
 */
struct nfsc_jukebox {
	uint64_t since_ms;
	uint32_t tries;
};
bool rr__nfsc_jukebox(const struct rr_call *call);
int rr__nfsc_jukebox_next(const struct rr_nfs *n, struct nfsc_jukebox *j,
			  uint64_t *at_ms);
int rr__nfsc_jukebox_wait(const struct rr_nfs *n, struct nfsc_jukebox *j);

/* NFS calls on the mount (NFS_PROGRAM, NFS_V3). */
int rr__nfsc_call(struct rr_nfs *n, uint32_t proc, xdrproc_t xargs, void *args,
		  xdrproc_t xres, void *res, size_t res_cap);
/*
 * rr__nfsc_call whose last argument is a DDP-eligible item of item_len bytes
 * (SYMLINK's path, RFC 8267 section 4): it travels in a read chunk at its
 * position when the call does not fit inline.
 */
int rr__nfsc_call_ddp(struct rr_nfs *n, uint32_t proc, xdrproc_t xargs,
		      void *args, size_t item_len, xdrproc_t xres, void *res,
		      size_t res_cap);

/*
 * Path resolution inside the export. rr__nfsc_lookup_path finds the object
 * (following a final symlink when follow); rr__nfsc_lookup_parent the
 * directory that holds the last component, whose name it returns in
 * *name (malloc'd).
 */
int rr__nfsc_lookup_path(struct rr_nfs *n, const char *path, bool follow,
			 struct nfsc_fh *fh, fattr3 *attr);
int rr__nfsc_lookup_parent(struct rr_nfs *n, const char *path,
			   struct nfsc_fh *dir, char **name);
int rr__nfsc_readlink_fh(struct rr_nfs *n, const struct nfsc_fh *fh,
			 char **target);
int rr__nfsc_getattr(struct rr_nfs *n, const struct nfsc_fh *fh, fattr3 *attr);

/* The lock manager's client, made at the first lock call (lock.c). */
void rr__nfsc_nlm_free(struct rr_nfs *n);

/* MOUNT over TCP: the export list, MNT and UMNT. */
int rr__nfsc_mount_export(struct rr_nfs *n, const char *host, uint16_t port,
			  const char *path, struct nfsc_fh *root,
			  char **export);
void rr__nfsc_mount_umnt(struct rr_nfs *n);
/*
 * One NULL call to prog/vers at host:port over TCP on a connection that is
 * not made again (probe.c): 0 when it answers as ONC RPC, else a negative
 * errno with rr_nfs_error saying what the port did instead. service names
 * it in that text ("MOUNT", "NFS").
 */
int rr__nfsc_probe_tcp(const char *host, uint16_t port, uint32_t prog,
		       uint32_t vers, int timeout_ms, const char *service);
/* rpcbind (PMAP v2 GETPORT over TCP): 0 when none answers. */
uint16_t rr__nfsc_rpcbind_port(const char *host, uint32_t prog, uint32_t vers,
			       int timeout_ms);

#endif
