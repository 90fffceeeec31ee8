/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Internals of the NFSv3 server: file handles, the identity a call runs
 * as, attributes, and the procedures. Every procedure gets a struct
 * nfsd_call, answers an nfsstat3 and fills its rpcgen result; memory the
 * result points to comes from the call's arena and dies with the call.
 */
#ifndef RR_NFSD_H
#define RR_NFSD_H

#include <rpcrdma/nfs3_server.h>

#include "mount3.h"
#include "nfs3/server/backend/backend.h"
#include "nfs3/server/exports.h"
#include "nfs3_prot.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#define NFSD_KEY_LEN	     16
#define NFSD_FH_LEN	     36 /* see fh.c */
#define NFSD_MAX_IO	     (1u << 20)
#define NFSD_NOWAIT_READ_MAX (64u << 10) /* larger READs go to a worker */
#define NFSD_ANON	     65534u
/* the longest path below the root we build: a bound, not PATH_MAX */
#define NFSD_PATH_CAP (1u << 20)
/* defaults of rr_nfs3_server_opts (nfs3_server.h says what they bound) */
#define NFSD_WALK_DIRS_PER_S	20000
#define NFSD_HANDLE_CACHE_BYTES (64u << 20)

struct nfsd_pathcache;
struct nfsd_walk_budget;
struct nfsd_fcache;
struct nfsd_file;
struct nfsd_locks;

struct rr_nfs3_server {
	struct rr_nfs3_server_opts o;
	/* where the export's objects live (backend/): every procedure acts
	 * through it */
	struct nfsd_be be;
	char *export_path; /* as configured, and its realpath */
	char *export_real;
	int root_fd; /* O_PATH of the export root */
	dev_t root_dev;
	ino_t root_ino;
	uint8_t key[NFSD_KEY_LEN];
	uint8_t write_verf[NFS3_WRITEVERFSIZE]; /* new on each start */
	struct nfsd_policy pol; /* every client's, alone (not an exporter's) */
	bool as_root;		/* can act as the caller (setfsuid) */
	gid_t groups[64];	/* the server's own, restored after each call */
	int ngroups;
	gid_t egid;
	struct nfsd_pathcache *cache;
	struct nfsd_walk_budget *walks; /* walk_budget.c */
	struct nfsd_fcache *files;	/* open files by handle, fcache.c */
	/* byte range locks (backend/lock_table.c), made on the first */
	struct nfsd_locks *_Atomic locks;
	pthread_mutex_t mnt_lock;
	struct nfsd_mnt *mounts; /* MOUNT's DUMP list, newest first */
	uint32_t nmounts;
	/*
	 * 1 + st_dev of the last file system found to lack RWF_NOWAIT and
	 * keep its files in memory (rw.c); 0: none yet.
	 */
	atomic_uint_fast64_t mem_fs_dev;
	atomic_uint_fast64_t calls, garbage_args, bad_handles, stale_handles,
		searches, walk_dirs, walks_refused;
};

/* The identity a call acts as, after squashing, and what it may change. */
struct nfsd_ident {
	uint32_t uid, gid, ngids;
	uint32_t gids[16];
	bool ro; /* modifying procedures get NFS3ERR_ROFS */
};

struct nfsd_arena;

struct nfsd_call {
	struct rr_nfs3_server *s;
	struct rr_nfs3_exporter *ex; /* the table s serves for, or NULL */
	struct rr_svc_req *req;
	struct nfsd_ident id;
	struct nfsd_arena *arena;
	int fds[8]; /* O_PATH descriptors of resolved objects */
	int nfds;
	char *paths[8]; /* paths of resolved objects (malloc'd) */
	int npaths;
	struct nfsd_file *held[8]; /* cached files this call uses */
	int nheld;
	/*
	 * The backend's for this call, given back by its ->call_end
	 * (CephFS: the caller's UserPerm, made once per call, and the inode
	 * references the call holds).
	 */
	void *be_perm;
	void *be_held[8];
	int nbe_held;
	/*
	 * Acting as the caller yet? A call starts as the server (resolving
	 * handles) and becomes the caller when it first asks for an object's
	 * descriptor to act on (rr__nfsd_obj_fd), as every acting procedure
	 * does.
	 */
	bool as_caller;
	/*
	 * Run where it must not block (rr_svc_req_nowait): it acts only
	 * through the open-file cache, never as the caller, and reads only
	 * what the page cache holds. Whatever needs more sets defer: the
	 * answer is then RR_SVC_DEFER and a worker runs the call again.
	 */
	bool nowait;
	bool defer;
	/*
	 * The caller's address is admitted to none of the export's clients
	 * (exporter.c): every handle is NFS3ERR_STALE to it, as Linux's nfsd
	 * answers a client with no export entry.
	 */
	bool denied;
};

/* An object a handle names, and how it was found. */
struct nfsd_obj {
	/*
	 * Its path below the root ("" is the root) when it was found by one:
	 * the call's memory or the open-file cache's; NULL otherwise.
	 */
	const char *path;
	/*
	 * Where a lookup just saw it, for the handle cache (rr__nfsd_make_fh):
	 * its directory's dev and ino and its name there; name NULL: the
	 * cache knows already, or nothing to tell it.
	 */
	uint64_t pdev, pino;
	const char *name;
	struct stat st;
	uint64_t birth; /* creation time in ns, 0 where unknown */
	uint64_t attrs; /* statx attributes (immutable, append) */
	uint64_t attrs_mask;
	bool acl; /* has (or may have) a POSIX access ACL */
	int fd;	  /* O_PATH, the call's or the cache's (rr__nfsd_resolve), or -1
		   */
	/* the cache's entry (rr__nfsd_resolve only; the call holds it), or NULL
	 */
	struct nfsd_file *file;
	/* CephFS: the inode the call holds (acted on or resolved), or NULL;
	 * its snapshot id (CEPH_NOSNAP for the live file system) */
	void *be_ref;
	uint64_t snap;
};

/* server.c: a server of one export, in the backend bc says (NULL: local) */
int rr__nfsd_server_create_be(const struct rr_nfs3_server_opts *o,
			      const struct nfsd_be_conf *bc,
			      struct rr_nfs3_server **out, char *err,
			      size_t errlen);
/*
 * backend/cephfs.c: s served from the CephFS bc names; errors name the
 * option at fault in err. -EOPNOTSUPP where built without libcephfs.
 */
int rr__nfsd_cephfs_open(struct rr_nfs3_server *s,
			 const struct nfsd_be_conf *bc, char *err,
			 size_t errlen);

/* arena.c */
void *rr__nfsd_alloc(struct nfsd_call *c, size_t n);
char *rr__nfsd_strdup(struct nfsd_call *c, const char *s);
void rr__nfsd_arena_free(struct nfsd_call *c);

/* fh.c: handles and resolving them */
void rr__nfsd_siphash(const uint8_t key[16], const void *data, size_t len,
		      uint8_t out[8]);
int rr__nfsd_fh_encode(const uint8_t key[NFSD_KEY_LEN], const struct stat *st,
		       uint64_t birth, uint8_t out[NFSD_FH_LEN]);
/* 0, or NFS3ERR_BADHANDLE; fills dev/ino/birth. */
int rr__nfsd_fh_verify(const uint8_t key[NFSD_KEY_LEN], const void *fh,
		       size_t len, uint64_t *dev, uint64_t *ino,
		       uint64_t *birth);
/*
 * Any backend's handle sealed under key (backend.h's frame): its
 * version, 0 when it is not one.
 */
int rr__nfsd_fh_sealed(const uint8_t key[NFSD_KEY_LEN], const void *fh,
		       size_t len);
/* Seals a handle of version v and the backend's 24 bytes a, b, c. */
void rr__nfsd_fh_seal(const uint8_t key[NFSD_KEY_LEN], uint8_t v, uint64_t a,
		      uint64_t b, uint64_t c, uint8_t out[NFSD_FH_LEN]);
/* The 24 bytes of a handle rr__nfsd_fh_sealed accepted. */
void rr__nfsd_fh_fields(const void *fh, uint64_t *a, uint64_t *b, uint64_t *c);
/* fstatat without following, plus the birth time handles carry. */
int rr__nfsd_stat(int dirfd, const char *name, struct stat *st,
		  uint64_t *birth);
/* 0 or NFS3ERR_INVAL/NAMETOOLONG/ACCES for a name a client sent. */
nfsstat3 rr__nfsd_name_ok(const char *name);
/* The local backend's resolve (backend/local.c wraps it). */
nfsstat3 rr__nfsd_local_resolve(struct nfsd_call *c, const nfs_fh3 *fh,
				struct nfsd_obj *o);
/* The call closes fd when it ends; -EMFILE (fd closed) when full. */
int rr__nfsd_track(struct nfsd_call *c, int fd);
/*
 * Opens path below the root (any length; O_PATH and such; never through a
 * symlink, never above the root) as the server; want: the object must
 * still be that one.
 */
int rr__nfsd_open(struct rr_nfs3_server *s, const char *path, int flags,
		  const struct stat *want);
bool rr__nfsd_is_root(const struct rr_nfs3_server *s, const struct stat *st);
/*
 * Fills o for path below the root, looked up as the server; o->path is
 * path itself, which must live as long as o.
 */
int rr__nfsd_obj_at(struct nfsd_call *c, const char *path, struct nfsd_obj *o);
/* ".." of dir (resolved): its parent, or the root for the root. */
int rr__nfsd_obj_parent(struct nfsd_call *c, const struct nfsd_obj *dir,
			struct nfsd_obj *o);
/* o is name in dir (a lookup saw it there); its attributes still to fill. */
void rr__nfsd_obj_place(struct nfsd_obj *o, const struct nfsd_obj *dir,
			const char *name);
/*
 * O_PATH fd of o (from rr__nfsd_resolve), opened as the server. It belongs to
 * the call: rr__nfsd_call_close closes it, callers never do.
 */
int rr__nfsd_obj_fd(struct nfsd_call *c, struct nfsd_obj *o);
/* Closes the call's descriptors and gives the server's identity back. */
void rr__nfsd_call_close(struct nfsd_call *c);
/* Acts as the server again (for opens the server makes for itself). */
void rr__nfsd_as_server(struct nfsd_call *c);
/* Opens what fd names with flags, as the caller: the permission check. */
int rr__nfsd_reopen(int fd, int flags);
/* "/proc/self/fd/N": operations that take no fd still reach the object */
void rr__nfsd_fd_path(int fd, char out[32]);
/* The handle cache learns that st's object is name in (pdev, pino). */
void rr__nfsd_cache_put(struct rr_nfs3_server *s, const struct stat *st,
			uint64_t pdev, uint64_t pino, const char *name);
/* max_bytes: what the cache may hold (0: NFSD_HANDLE_CACHE_BYTES). */
int rr__nfsd_cache_create(struct nfsd_pathcache **out, size_t max_bytes);
void rr__nfsd_cache_destroy(struct nfsd_pathcache *pc);
void rr__nfsd_cache_stats(struct nfsd_pathcache *pc, uint64_t *entries,
			  uint64_t *bytes, uint64_t *evicted);

/* walk_budget.c: what walks of the export may cost */
int rr__nfsd_walk_budget_create(const struct rr_nfs3_server_opts *o,
				struct nfsd_walk_budget **out);
void rr__nfsd_walk_budget_destroy(struct nfsd_walk_budget *wb);
/*
 * May a call from peer (NULL: unknown) walk now? 0 (then *slot is its
 * bucket, for rr__nfsd_walk_pay, and rr__nfsd_walk_end must follow) or -EAGAIN.
 */
int rr__nfsd_walk_begin(struct rr_nfs3_server *s, const struct sockaddr *peer,
			size_t *slot);
/* The walk spent dirs more directories of the budget. */
void rr__nfsd_walk_pay(struct rr_nfs3_server *s, size_t slot, uint32_t dirs);
void rr__nfsd_walk_end(struct rr_nfs3_server *s);

/* fcache.c: open files by handle, shared by the handler threads */
struct rr__nfsd_fcache_stats {
	uint64_t hits, misses, forgotten, evicted, swept, open;
};
int rr__nfsd_fcache_create(struct nfsd_fcache **out, uint32_t max);
/* Stops the reaper and closes every file (no call may hold one). */
void rr__nfsd_fcache_destroy(struct nfsd_fcache *fc);
/* How long an idle file stays open, and between proofs of its path. */
void rr__nfsd_fcache_tune(struct nfsd_fcache *fc, uint32_t idle_ms,
			  uint32_t reval_ms);
/* A held entry for the key, or NULL. */
struct nfsd_file *rr__nfsd_fcache_get(struct nfsd_fcache *fc, uint64_t dev,
				      uint64_t ino, uint64_t birth);
/*
 * Enters o, proven by its path and its ACL looked at from t0 on
 * (CLOCK_REALTIME), and returns it held. The entry then owns o->fd (and
 * closes it at once when the key had one already). NULL (no memory):
 * o->fd is still the caller's.
 */
struct nfsd_file *rr__nfsd_fcache_add(struct nfsd_fcache *fc,
				      const struct nfsd_obj *o,
				      const struct timespec *t0);
void rr__nfsd_fcache_put(struct nfsd_fcache *fc, struct nfsd_file *f);
/* Drops every entry of (dev, ino): closed once no call holds it. */
void rr__nfsd_fcache_forget(struct nfsd_fcache *fc, uint64_t dev, uint64_t ino);
/* Closes what has been idle for idle_ms at now_ms (the reaper's work). */
void rr__nfsd_fcache_sweep(struct nfsd_fcache *fc, uint64_t now_ms);
void rr__nfsd_fcache_stats(struct nfsd_fcache *fc,
			   struct rr__nfsd_fcache_stats *out);
/* The entry's O_PATH descriptor and the path that proved it. */
int rr__nfsd_file_pfd(const struct nfsd_file *f);
const char *rr__nfsd_file_path(const struct nfsd_file *f);
/*
 * 1: the entry still stands for st (fresh from its descriptor) as last
 * proven; 0: its path and ACL must be proven again (rr__nfsd_file_proven);
 * -1: its type, mode or owner changed: forget it and resolve again.
 */
int rr__nfsd_file_current(struct nfsd_fcache *fc, struct nfsd_file *f,
			  const struct stat *st, uint64_t now_ms, bool *acl);
void rr__nfsd_file_proven(struct nfsd_fcache *fc, struct nfsd_file *f,
			  const struct stat *st, const struct timespec *t0,
			  bool acl);
/* Does the object fd names carry a POSIX access ACL? (errors: yes) */
bool rr__nfsd_has_acl(int fd);
/*
 * The entry's descriptor opened with flags (O_RDONLY or O_WRONLY), made
 * once as the server and kept with the entry: callers never close it.
 */
int rr__nfsd_file_fd(struct nfsd_fcache *fc, struct nfsd_file *f, int flags);
/* The same when already made, else -EAGAIN (opening might block). */
int rr__nfsd_file_fd_made(struct nfsd_fcache *fc, struct nfsd_file *f,
			  int flags);
/* Marks c to be run again in a worker; the error for its caller to return. */
int rr__nfsd_defer(struct nfsd_call *c);

/* ident.c */
nfsstat3 rr__nfsd_errno(int err);
void rr__nfsd_ident_from_cred(const struct nfsd_policy *p,
			      const struct rr_cred *cr, struct nfsd_ident *id);
int rr__nfsd_ident_enter(const struct rr_nfs3_server *s,
			 const struct nfsd_ident *id);
void rr__nfsd_ident_leave(const struct rr_nfs3_server *s);
/* ACCESS3_* bits the identity has on st (mode bits; root gets all). */
uint32_t rr__nfsd_access(const struct rr_nfs3_server *s,
			 const struct nfsd_ident *id, const struct stat *st,
			 uint32_t want);
/* 0 or NFS3ERR_ACCES: the mode-bit check when we cannot act as the caller */
nfsstat3 rr__nfsd_may(const struct nfsd_call *c, const struct stat *st,
		      uint32_t want);
/*
 * May READ (write false) or WRITE through a descriptor the server opened
 * be decided from the mode bits, as rr__nfsd_access does, and give the answer
 * acting as the caller would? Not when an ACL, set-id bits (a write must
 * clear them as the caller) or the immutable and append-only flags are in
 * play: those calls take the kernel's path.
 */
bool rr__nfsd_mode_decides(const struct nfsd_obj *o, bool write);

/* obj.c: the procedures' way to the backend's objects */
static inline const struct nfsd_be_ops *rr__nfsd_be(const struct nfsd_call *c)
{
	return c->s->be.ops;
}
nfsstat3 rr__nfsd_resolve(struct nfsd_call *c, const nfs_fh3 *fh,
			  struct nfsd_obj *o);
int rr__nfsd_make_fh(struct nfsd_call *c, const struct nfsd_obj *o,
		     nfs_fh3 *fh);
/* The call acts on o from now on, as the caller (backend ->act). */
int rr__nfsd_act(struct nfsd_call *c, struct nfsd_obj *o);

/* attr.c */
void rr__nfsd_fattr(const struct stat *st, fattr3 *a);
void rr__nfsd_post_attr(const struct stat *st, post_op_attr *p);
/* Fresh attributes of o (NULL: none follow). */
void rr__nfsd_post_attr_obj(struct nfsd_call *c, struct nfsd_obj *o,
			    post_op_attr *p);
void rr__nfsd_pre_attr(const struct stat *st, pre_op_attr *p);
/* wcc_data: pre from st (NULL: none), post fresh from o (NULL: none) */
void rr__nfsd_wcc(struct nfsd_call *c, const struct stat *pre,
		  struct nfsd_obj *o, wcc_data *w);
/* Applies a sattr3 to o (acted on), its attributes in o->st. */
nfsstat3 rr__nfsd_sattr(struct nfsd_call *c, struct nfsd_obj *o,
			const sattr3 *a);

/* ops.c, dir.c, rw.c, readdir.c: the procedures */
typedef nfsstat3 (*nfsd_op_fn)(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_getattr(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_setattr(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_lookup(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_access_op(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_readlink(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_create(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_mkdir(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_symlink(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_mknod(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_remove(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_rmdir(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_rename(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_link(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_readdir(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_readdirplus(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_fsstat(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_fsinfo(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_pathconf(struct nfsd_call *c, void *args, void *res);
nfsstat3 rr__nfsd_commit(struct nfsd_call *c, void *args, void *res);
/* READ and WRITE: hand-coded XDR around the DDP-eligible data. */
uint32_t rr__nfsd_read(struct nfsd_call *c);
uint32_t rr__nfsd_write(struct nfsd_call *c);

/* proc.c: runs an NFS call for c->s (and c->denied) as policy p says */
uint32_t rr__nfsd_nfs_call(struct nfsd_call *c, const struct nfsd_policy *p);

/* mount.c; arg: the server, or (ex_) the exporter */
uint32_t rr__nfsd_mount_handler(struct rr_svc_req *req, void *arg);
uint32_t rr__nfsd_ex_mount_handler(struct rr_svc_req *req, void *arg);
void rr__nfsd_mounts_free(struct rr_nfs3_server *s);
/* The caller's address, numeric ("unknown" when it has none). */
void rr__nfsd_host_of(const struct nfsd_call *c, char host[INET6_ADDRSTRLEN]);
/* sa's address as text ("unknown" for NULL or a family not IP). */
void rr__nfsd_addr_str(const struct sockaddr *sa, char host[INET6_ADDRSTRLEN]);
/* The path below s's root that dir names, or NULL. */
const char *rr__nfsd_below(const struct rr_nfs3_server *s, const char *dir);

/* exporter.c, for MOUNT */
/*
 * The server of the export dir is in (the longest match) into c->s:
 * MNT3_OK, MNT3ERR_NOENT (none) or MNT3ERR_ACCES (not for this client).
 */
mountstat3 rr__nfsd_ex_route(struct nfsd_call *c, const char *dir);
/* Member i of the exporter (every server it ever made), or NULL. */
struct rr_nfs3_server *rr__nfsd_ex_member(struct rr_nfs3_exporter *x,
					  uint32_t i);
/* Did one of the exporter's members make the handle? */
bool rr__nfsd_ex_owns_fh(struct rr_nfs3_exporter *x, const void *fh,
			 size_t len);
/*
 * The member that made the handle into c->s, and the caller's rule there
 * into *pol (c->denied when none admits it); false: no member made it.
 */
bool rr__nfsd_ex_pick(struct nfsd_call *c, const void *fh, size_t len,
		      struct nfsd_policy *pol);
/* EXPORT's answer: every export with its clients, from c's arena. */
bool rr__nfsd_ex_list(struct nfsd_call *c, XDR *out);

/* nlm.c: NLM version 4 for an exporter's files */
struct nfsd_nlm;
int rr__nfsd_nlm_create(struct rr_nfs3_exporter *x, const struct rr_nlm_opts *o,
			struct nfsd_nlm **out);
void rr__nfsd_nlm_destroy(struct nfsd_nlm *n);
void rr__nfsd_nlm_prog(struct nfsd_nlm *n, struct rr_svc_prog *p);
void rr__nfsd_nlm_stats(struct nfsd_nlm *n, struct rr_nlm_stats *out);
/* What FREE_ALL, or a reboot that NSM heard of, released. */
struct nfsd_freed {
	uint32_t ranges, waiters;
};
/* Every lock and waiter of client host `host` goes, as by FREE_ALL. */
void rr__nfsd_nlm_free_host(struct nfsd_nlm *n, const char *host,
			    struct nfsd_freed *out);
struct nfsd_nsm;
/* Before serving: the monitor told of every host that locks (nsm.c). */
void rr__nfsd_nlm_set_nsm(struct nfsd_nlm *n, struct nfsd_nsm *nsm);
/*
 * Decodes a call's arguments, refusing what XDR does not mean (a string
 * cut at a NUL, padding that is not zero): true when they decode.
 */
bool rr__nfsd_xdr_args(struct nfsd_call *c, xdrproc_t xp, void *args);
/* Encodes the reply into the call's result buffer: true when it fits. */
bool rr__nfsd_xdr_res(struct nfsd_call *c, xdrproc_t xp, void *res);

/* nsm.c: NSM version 1, the status monitor of NLM's client hosts */
struct rr_nsm_opts;
struct rr_nsm_stats;
int rr__nfsd_nsm_create(struct nfsd_nlm *nlm, const char *state_dir,
			const struct rr_nsm_opts *o, struct nfsd_nsm **out);
void rr__nfsd_nsm_destroy(struct nfsd_nsm *m);
void rr__nfsd_nsm_prog(struct nfsd_nsm *m, struct rr_svc_prog *p);
/* Records host (its name, the address it called from) once. */
void rr__nfsd_nsm_monitor(struct nfsd_nsm *m, const char *name,
			  const char *addr);
/* Starts telling the hosts recorded before this start; never waits. */
int rr__nfsd_nsm_notify(struct nfsd_nsm *m);
void rr__nfsd_nsm_stats(struct nfsd_nsm *m, struct rr_nsm_stats *out);

#endif
