/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * An NFSv3 and MOUNT v3 server (RFC 1813) backed by a local directory,
 * exposed as two program tables that any of our server transports can
 * register (rr_svc_register for RPC-over-RDMA, the TCP server's equivalent
 * for record marking). Handlers may run concurrently on several threads.
 *
 * File handles are (device, inode, birth time) sealed with a keyed hash:
 * they stay valid across restarts when the key persists (state_dir), and a
 * handle the server did not make is answered NFS3ERR_BADHANDLE. Nothing
 * outside export_path is reachable: lookups never follow symlinks and
 * never climb above the export's root.
 */
#ifndef RPCRDMA_NFS3_SERVER_H
#define RPCRDMA_NFS3_SERVER_H

#include <rpcrdma/rpc.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports what this header declares (-fvisibility=hidden). */
#pragma GCC visibility push(default)

struct rr_nfs3_server;

struct rr_nfs3_server_opts {
	const char *export_path;     /* the directory served */
	bool read_only;		     /* modifying calls get NFS3ERR_ROFS */
	bool root_squash;	     /* uid 0 acts as anon_uid/anon_gid */
	uint32_t anon_uid, anon_gid; /* also for AUTH_NONE; 0: 65534 */
	/*
	 * Where the file-handle key lives (fh.key, created when missing);
	 * NULL: a fresh key per server, so handles die with the process.
	 */
	const char *state_dir;
	/*
	 * Handles the caches do not know (after a restart, a move behind
	 * the server's back, or of removed files) are found by walking the
	 * export. Directories all walks may read per second (0: 20000; one
	 * that takes long, or holds many entries, counts as several), one
	 * client address's share of that (0: a quarter), walks at once (0:
	 * 1: the other handler threads stay free) and directories one walk
	 * reads before it gives up (0: 4 Mi). A walk the budget refuses is
	 * answered NFS3ERR_JUKEBOX, so the client asks again later.
	 * walk_dir_us: a directory that takes longer than this to read
	 * counts as one directory per walk_dir_us it took (0: 10, what one
	 * costs on a local disk; more where every read is slow, as on a
	 * distributed file system, or where the size alone should count).
	 */
	uint32_t walk_dirs_per_s, walk_dirs_per_peer_s, walks_at_once;
	uint32_t walk_dirs_max, walk_dir_us;
	/*
	 * Memory the handle-to-path cache may hold, entries not used lately
	 * going first (0: 64 MiB, some 800 000 objects).
	 */
	uint64_t handle_cache_bytes;
};

int rr_nfs3_server_create(const struct rr_nfs3_server_opts *o,
			  struct rr_nfs3_server **out);
/* Fills the NFS (100003 v3) and MOUNT (100005 v3) program tables. */
void rr_nfs3_server_progs(struct rr_nfs3_server *s, struct rr_svc_prog *nfs,
			  struct rr_svc_prog *mount);
/* Only once no transport can call into s any more. */
void rr_nfs3_server_destroy(struct rr_nfs3_server *s);

/* Counters of calls answered with an error, and of bad peer input. */
struct rr_nfs3_server_stats {
	uint64_t calls;
	uint64_t garbage_args;
	uint64_t bad_handles;
	uint64_t stale_handles;
	uint64_t handle_searches; /* walks of the tree for a handle */
	uint64_t walk_dirs;	  /* directories they read */
	uint64_t walks_refused;	  /* answered JUKEBOX: over budget, cut */
	uint64_t handle_cache_entries, handle_cache_bytes;
	uint64_t handle_cache_evicted;
	/*
	 * Open files the backend keeps between calls (CephFS: at most 1024,
	 * each closed after 2 s unused); 0 for the local backend.
	 */
	uint64_t kept_opens;
	/*
	 * UNSTABLE WRITEs that synced the backend before answering, since
	 * what WRITEs gave it and it had not stored reached its bound
	 * (CephFS: client_oc_max_dirty); 0 for the local backend, whose
	 * bound is the kernel's page cache.
	 */
	uint64_t write_syncs;
};
void rr_nfs3_server_stats(struct rr_nfs3_server *s,
			  struct rr_nfs3_server_stats *out);

/*
 * Several exports with rules per client: an exports table, in exports(5)
 * syntax (the parser's comment, src/nfs3/server/exports.c, says what is
 * implemented), served by an exporter. Each export has a server of its
 * own (and its own file-handle key, derived from the state_dir's key and
 * the export's path, so a handle tells which export it is of); the rule
 * for the caller's address is looked up on every call: MNT answers
 * MNT3ERR_ACCES to a client no rule admits, and every handle of the
 * export is NFS3ERR_STALE to it (as Linux's nfsd answers).
 */
struct rr_nfs3_exports;
/* 0, or a negative errno with "FILE:LINE: what" (or "FILE: why") in err. */
int rr_nfs3_exports_load(const char *file, struct rr_nfs3_exports **out,
			 char *err, size_t errlen);
/* One export of dir to every client (rw unless read_only). */
int rr_nfs3_exports_one(const char *dir, bool read_only, bool root_squash,
			struct rr_nfs3_exports **out);
void rr_nfs3_exports_free(struct rr_nfs3_exports *t);

struct rr_nfs3_exporter;
/*
 * o: what every export's server shares (state_dir, walks, cache); its
 * export_path, read_only, root_squash and anon ids are not used. Takes
 * t, also on failure. Errors name the export in err.
 */
int rr_nfs3_exporter_create(const struct rr_nfs3_server_opts *o,
			    struct rr_nfs3_exports *t,
			    struct rr_nfs3_exporter **out, char *err,
			    size_t errlen);
/*
 * Serves t from the next call on (calls running finish with the old
 * rules; connections stay). Takes t; on failure (an export that cannot be
 * opened: err names it) the old table stays. Not concurrently with
 * itself.
 */
int rr_nfs3_exporter_reload(struct rr_nfs3_exporter *x,
			    struct rr_nfs3_exports *t, char *err,
			    size_t errlen);
/* The exports served now, one per line into buf ("/path client..."). */
void rr_nfs3_exporter_describe(struct rr_nfs3_exporter *x, char *buf,
			       size_t len);
void rr_nfs3_exporter_progs(struct rr_nfs3_exporter *x, struct rr_svc_prog *nfs,
			    struct rr_svc_prog *mount);
/*
 * What export backends' libraries take from the heap for I/O (libcephfs
 * does; 0 and 0 when none does), the largest of each over the exports:
 * alloc, the largest buffer allocated and freed inside a READ or WRITE;
 * retain, what they may hold at once for I/O in flight. A program that
 * gives large blocks their own mappings (glibc's M_MMAP_THRESHOLD) should
 * raise that above alloc, and one that trims its heap (M_TRIM_THRESHOLD)
 * should keep retain: otherwise the buffers land on fresh pages, and
 * every page faults in, call after call. Can grow on reload.
 */
struct rr_nfs3_io_heap {
	size_t alloc, retain;
};
void rr_nfs3_exporter_io_heap(struct rr_nfs3_exporter *x,
			      struct rr_nfs3_io_heap *out);
/* Sums of every export's counters. */
void rr_nfs3_exporter_stats(struct rr_nfs3_exporter *x,
			    struct rr_nfs3_server_stats *out);
/*
 * The Network Lock Manager, version 4 (program 100021), for the
 * exporter's files: byte range locks by (host, svid, oh) owners, a grace
 * period after start when only reclaims are granted, and bounds on the
 * locks kept (0: 16384 in all, 1024 per client host). A blocking lock
 * that conflicts is answered NLM4_BLOCKED and waits (16 per client host,
 * 256 in all), to be granted by a GRANTED call to the client's lock
 * manager (rr_nfs3_exporter_nlm(3)).
 */
struct rr_nlm_opts {
	uint32_t grace_s;
	uint32_t max_locks, max_locks_per_host;
};
/* Fills the NLM program table; once per exporter. */
int rr_nfs3_exporter_nlm(struct rr_nfs3_exporter *x,
			 const struct rr_nlm_opts *o, struct rr_svc_prog *nlm);

struct rr_nlm_stats {
	uint64_t calls;
	uint64_t locks; /* ranges held now */
	uint64_t garbage_args;
	uint64_t bad_handles;	    /* no export's, or stale: NLM4_STALE_FH */
	uint64_t denied_access;	    /* no rule admits the caller */
	uint64_t refused_cap;	    /* over a bound: NLM4_DENIED_NOLOCKS */
	uint64_t refused_grace;	    /* NLM4_DENIED_GRACE_PERIOD */
	uint64_t waiting;	    /* blocked LOCKs kept now */
	uint64_t blocked;	    /* NLM4_BLOCKED answers */
	uint64_t refused_waiting;   /* over the waiters' bound: NLM4_DENIED */
	uint64_t callbacks;	    /* GRANTED callbacks the client took */
	uint64_t callback_failures; /* unreachable or refused: lock undone */
};
/* Zeros when NLM is not served. */
void rr_nfs3_exporter_nlm_stats(struct rr_nfs3_exporter *x,
				struct rr_nlm_stats *out);

/*
 * The Network Status Monitor, version 1 (program 100024, "statd"), for
 * the exporter's lock manager (after rr_nfs3_exporter_nlm): a client
 * host's SM_NOTIFY (it rebooted) releases every lock and waiter its
 * name holds, as NLM's FREE_ALL does. The state directory keeps our
 * state number (odd while up; each start adds to it) in "nsm-state" and
 * the client hosts that lock (their names and addresses, at most 1024)
 * in "nsm-hosts", each written whole under a temporary name and renamed.
 * Without a state directory: state 1, nothing kept, nobody told.
 * my_name: the name SM_NOTIFY gives us (NULL: gethostname()).
 */
struct rr_nsm_opts {
	const char *my_name;
};
/* Fills the NSM program table; once per exporter, after NLM. */
int rr_nfs3_exporter_nsm(struct rr_nfs3_exporter *x,
			 const struct rr_nsm_opts *o, struct rr_svc_prog *nsm);
/*
 * Tells the hosts that held locks before this start, in the background
 * (each host's rpcbind names its statd; 5 s bounds each call), that we
 * restarted, so they reclaim in the grace period; then forgets them.
 * Call once our NLM answers. Never waits on a host.
 */
int rr_nfs3_exporter_nsm_notify(struct rr_nfs3_exporter *x);

struct rr_nsm_stats {
	uint64_t state; /* ours, now */
	uint64_t calls;
	uint64_t garbage_args;
	uint64_t notifies;	   /* SM_NOTIFY received */
	uint64_t released_locks;   /* ranges they released */
	uint64_t dropped_waiters;  /* blocked LOCKs they dropped */
	uint64_t refused_mon;	   /* SM_MON: we monitor for our NLM only */
	uint64_t hosts;		   /* client hosts recorded now */
	uint64_t hosts_unrecorded; /* over the bound, or unusable names */
	uint64_t record_failures;  /* nsm-hosts could not be written */
	uint64_t notified;	   /* hosts told of our restart */
	uint64_t notify_failures;  /* unreachable, or no statd */
};
/* Zeros when NSM is not served. */
void rr_nfs3_exporter_nsm_stats(struct rr_nfs3_exporter *x,
				struct rr_nsm_stats *out);

/* Only once no transport can call into x any more. */
void rr_nfs3_exporter_destroy(struct rr_nfs3_exporter *x);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
