/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The storage backend interface (issue 19): what the NFS procedures ask of
 * the file system they export, so that a local directory (local*.c) and
 * CephFS (next) are interchangeable beneath them, and NFSv4.1 can share
 * them later.
 *
 * The procedures speak the protocol (XDR, nfsstat3, permission answers for
 * ACCESS, export policy); a backend speaks storage: it turns handle bytes
 * into objects and back, and acts on objects with the credentials of the
 * call. Nothing above a backend touches the file system itself.
 *
 * Conventions of every op:
 *  - c is the call: c->id holds the credentials (uid, gid, groups) the op
 *    acts as, never a global. Whatever the backend opens for the call
 *    (descriptors, references) lives until the call ends.
 *  - errors are negative errno; -EAGAIN with c->defer set means "not
 *    without blocking": the call runs again in a worker (c->nowait).
 *  - an op may block unless the call is c->nowait, in which case it
 *    defers instead.
 *  - attributes travel as struct stat plus a birth time (nfsd_obj.st and
 *    .birth): every backend we plan (POSIX, libcephfs' ceph_statx) fills
 *    one, and the protocols encode theirs from it.
 *  - names are one component, checked by the caller (rr__nfsd_name_ok).
 *
 * Objects (struct nfsd_obj, nfsd.h) are the caller's storage: st and
 * birth are theirs to read; the rest is the backend's. An object is
 * "acted on" once ->act has succeeded for it in the call; the ops that
 * change or read an object's contents need that first.
 */
#ifndef RR_NFSD_BACKEND_H
#define RR_NFSD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

struct nfsd_call;
struct nfsd_obj;
struct nfsd_be;
struct rr_nfs3_server_stats;

/* The longest handle a backend makes (its part of the protocol's). */
#define NFSD_BE_FH_MAX 64
/* The most pieces of a ->read or ->write (more: -EINVAL). */
#define NFSD_BE_IOV_MAX 16

/* What an open is for; NFSv4.1's OPEN4_SHARE_ACCESS_* map onto these. */
enum nfsd_be_access {
	NFSD_BE_READ = 1,
	NFSD_BE_WRITE = 2,
};

/*
 * An open file: the caller's storage, filled by ->open and given back to
 * ->close. owner is the opener's cookie (NFSv3: 0; NFSv4.1: the open
 * owner's stateid), so share reservations (deny) can be kept per owner by
 * a backend that enforces them; priv is the backend's.
 */
struct nfsd_be_file {
	struct nfsd_obj *obj;
	uint64_t owner;
	uint32_t access; /* enum nfsd_be_access bits */
	uint32_t deny;	 /* the same bits denied to others (0: none) */
	intptr_t priv[2];
};

/* How durable a write must be when ->write returns. */
enum nfsd_be_stable {
	NFSD_BE_UNSTABLE, /* ->commit makes it durable later */
	NFSD_BE_DATA_SYNC,
	NFSD_BE_FILE_SYNC,
};

/*
 * Attributes to change; times as utimensat takes them (UTIME_OMIT: leave,
 * UTIME_NOW: the server's clock). Permission to change them is the
 * caller's to decide where the backend cannot act as the caller.
 */
struct nfsd_be_sattr {
	bool set_mode, set_uid, set_gid, set_size;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;
	struct timespec atime, mtime;
};

/*
 * One directory entry. cookie resumes the listing after it and stays
 * valid while the directory changes; at is the cookie that reads it again
 * (for an entry that did not fit a reply).
 */
struct nfsd_be_dirent {
	const char *name; /* until the next ->readdir */
	uint64_t fileid;
	uint64_t cookie;
	uint64_t at;
};

struct nfsd_be_dir; /* a listing in progress, the backend's */

struct nfsd_be_statfs {
	uint64_t tbytes, fbytes, abytes; /* total, free, free to the caller */
	uint64_t tfiles, ffiles, afiles;
	uint32_t linkmax, namemax; /* 0: unknown */
};

/*
 * A byte range lock. owner is the lock owner's cookie (NLM: the caller's
 * svid and host; NFSv4.1: the lock owner's stateid); len 0 runs to the
 * end of the file. Locks never wait: a conflict is -EAGAIN, and ->lock_test
 * reports the conflicting lock in *l.
 */
struct nfsd_be_lock {
	uint64_t owner;
	uint64_t off, len;
	bool excl; /* exclusive (write) lock; else shared (read) */
};

/* Flags of ->lookup. */
#define NFSD_BE_LOOKUP_ACT 1u /* the child is acted on, as ->act does */

/*
 * The ops table of a backend. Ops that take a directory take a resolved
 * one (S_ISDIR checked by the caller) that has been acted on.
 */
struct nfsd_be_ops {
	const char *name;
	/*
	 * Its locks are shared with others (other servers, other clients
	 * of the same storage), so they may go without a call of ours:
	 * NLM then tries blocked locks again on a timer.
	 */
	bool locks_shared;
	/*
	 * Bytes its library allocates, and frees, inside each READ or WRITE
	 * at most (0: none, the call's own buffers are used), and holds for
	 * I/O in flight at once at most, so that a program can keep such
	 * buffers out of mmap and its heap untrimmed
	 * (rr_nfs3_exporter_io_heap).
	 */
	size_t io_alloc, io_retain;

	/* Handles: the backend owns their bytes and their sealing. */
	/* 0; -EBADMSG: not a handle of this backend; -ESTALE: gone. */
	int (*fh_decode)(struct nfsd_call *c, const void *fh, size_t len,
			 struct nfsd_obj *o);
	/* Encodes o into out (NFSD_BE_FH_MAX bytes); its length in *len. */
	int (*fh_encode)(struct nfsd_call *c, const struct nfsd_obj *o,
			 void *out, size_t *len);

	/* From here on the call acts on o, as the caller. */
	int (*act)(struct nfsd_call *c, struct nfsd_obj *o);
	/* Fresh attributes of o (acted on, or resolved) into *st. */
	int (*getattr)(struct nfsd_call *c, struct nfsd_obj *o,
		       struct stat *st);
	int (*setattr)(struct nfsd_call *c, struct nfsd_obj *o,
		       const struct nfsd_be_sattr *a);
	/* name in dir into o ("..": dir's parent, the root's is itself). */
	int (*lookup)(struct nfsd_call *c, struct nfsd_obj *dir,
		      const char *name, struct nfsd_obj *o, unsigned flags);

	/* Files: open carries the access, deny and owner f holds. */
	int (*open)(struct nfsd_call *c, struct nfsd_obj *o,
		    struct nfsd_be_file *f);
	void (*close)(struct nfsd_call *c, struct nfsd_be_file *f);
	/* Into the caller's buffers (registered memory: no bounce copy). */
	ssize_t (*read)(struct nfsd_call *c, struct nfsd_be_file *f,
			const struct iovec *iov, int iovcnt, uint64_t off);
	/* Bytes written, short only when an error followed them. */
	ssize_t (*write)(struct nfsd_call *c, struct nfsd_be_file *f,
			 const struct iovec *iov, int iovcnt, uint64_t off,
			 enum nfsd_be_stable how);
	/* Makes [off, off + len) of o durable (len 0: to the end). */
	int (*commit)(struct nfsd_call *c, struct nfsd_obj *o, uint64_t off,
		      uint64_t len);

	/* Namespace: each creates or removes name in the directory dir. */
	int (*mknod)(struct nfsd_call *c, struct nfsd_obj *dir,
		     const char *name, mode_t mode, dev_t rdev);
	int (*mkdir)(struct nfsd_call *c, struct nfsd_obj *dir,
		     const char *name, mode_t mode);
	int (*symlink)(struct nfsd_call *c, struct nfsd_obj *dir,
		       const char *name, const char *target);
	int (*link)(struct nfsd_call *c, struct nfsd_obj *o,
		    struct nfsd_obj *dir, const char *name);
	int (*remove)(struct nfsd_call *c, struct nfsd_obj *dir,
		      const char *name, bool isdir);
	int (*rename)(struct nfsd_call *c, struct nfsd_obj *from,
		      const char *fname, struct nfsd_obj *to,
		      const char *tname);
	/* The target, NUL-terminated in buf; its length. */
	ssize_t (*readlink)(struct nfsd_call *c, struct nfsd_obj *o, char *buf,
			    size_t cap);

	/* Listing from cookie (0: the start); entries live in the call. */
	int (*opendir)(struct nfsd_call *c, struct nfsd_obj *dir,
		       uint64_t cookie, struct nfsd_be_dir **out);
	/* 1: *e filled; 0: the end; negative errno. */
	int (*readdir)(struct nfsd_be_dir *d, struct nfsd_be_dirent *e);
	void (*seekdir)(struct nfsd_be_dir *d, uint64_t cookie);
	void (*closedir)(struct nfsd_be_dir *d);

	int (*statfs)(struct nfsd_call *c, struct nfsd_obj *o,
		      struct nfsd_be_statfs *out);

	/* Byte range locks on an open file, never waiting. */
	int (*lock)(struct nfsd_call *c, struct nfsd_be_file *f,
		    const struct nfsd_be_lock *l);
	int (*unlock)(struct nfsd_call *c, struct nfsd_be_file *f,
		      const struct nfsd_be_lock *l);
	/* 0: l could be taken; -EAGAIN: *l is now the conflicting lock. */
	int (*lock_test)(struct nfsd_call *c, struct nfsd_be_file *f,
			 struct nfsd_be_lock *l);
	/*
	 * The ranges owner holds on f's file (0: none): what a protocol
	 * that bounds its peers' locks counts them by, since a lock or an
	 * unlock may split, merge or drop ranges.
	 */
	int (*lock_count)(struct nfsd_call *c, struct nfsd_be_file *f,
			  uint64_t owner);

	/*
	 * Optional (NULL: the local backend's own ways). root: the export's
	 * root into o, for MOUNT, which then walks the path it was asked
	 * with ->lookup. call_end: the call is over; what the backend took
	 * for it (references, credentials) goes. destroy: the instance is
	 * no longer used by any call. stats: its own counters into out
	 * (kept_opens, write_syncs; left 0 when NULL).
	 */
	int (*root)(struct nfsd_call *c, struct nfsd_obj *o);
	void (*call_end)(struct nfsd_call *c);
	void (*stats)(struct nfsd_be *be, struct rr_nfs3_server_stats *out);
	void (*destroy)(struct nfsd_be *be);
};

/*
 * A backend instance, embedded first in the backend's own struct (see
 * local.c's to_local); the server holds one for its export.
 */
struct nfsd_be {
	const struct nfsd_be_ops *ops;
	void *priv; /* the instance's state (NULL for the local backend) */
};

/* local*.c: the local directory the server was created for. */
extern const struct nfsd_be_ops rr__nfsd_be_local_ops;

/*
 * Handles of every backend share the local backend's frame and seal
 * (fh.c): 'R' 'N' version 0, 24 bytes of the backend's, and a SipHash of
 * the 28 bytes before it under the server's key. version 1: the local
 * backend's; version 2: CephFS's. The exporter finds a handle's export by
 * its seal alone, whatever the backend.
 */
#define NFSD_FH_V_LOCAL	 1
#define NFSD_FH_V_CEPHFS 2

#endif
