/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * FUSE node ids and NFS file handles (fnode.c). The kernel names every
 * object by a 64-bit node id it got from a LOOKUP-like reply, and counts
 * those replies; FORGET gives the count back. So the table holds exactly
 * the objects the kernel holds: an entry is made on the first reply
 * naming a handle, found again by handle on the next (hard links, and
 * the same file reached twice, share one id), and freed when its count
 * drops to zero. Memory follows the kernel's inode cache, not the tree.
 *
 * Ids are counted up from 2 and never reused (1 is FUSE's root, which
 * is never forgotten), so a FORGET arriving late cannot hit a newer entry.
 */
#ifndef RR_FUSE_FNODE_H
#define RR_FUSE_FNODE_H

#include "nfs3/client/handle.h"

#include <pthread.h>
#include <stdbool.h>

/* What close-to-open compares: the attributes a write moves. */
struct fchange {
	struct timespec mtime, ctime;
	off_t size;
	bool valid;
};

struct fnode;

/*
 * A file unlinked while open, as the kernel NFS client does it ("silly
 * rename"): renamed to a hidden name in its directory, so the server
 * keeps it for the opens that still use its handle, and removed at the
 * last close.
 */
struct fsilly {
	struct nfsc_fh dir;
	char name[32];
};

struct ftable {
	pthread_mutex_t mu; /* guards everything here and in the nodes */
	struct fnode **by_id, **by_fh;
	size_t nbuckets;
	uint64_t next_id;
	size_t count;
	uint64_t nopen;	      /* opens of all nodes, not yet released */
	pthread_cond_t wb_cv; /* a node's write-behind state moved */
	uint64_t wb_clock;    /* counts write-behind WRITEs ended */
};

/* The root (id 1) on fh. 0 or -ENOMEM. */
int rr__ftab_init(struct ftable *t, const struct nfsc_fh *root);
void rr__ftab_fini(struct ftable *t);
/* The handle of id: 0 or -ESTALE (the kernel named no node we hold). */
int rr__ftab_fh(struct ftable *t, uint64_t id, struct nfsc_fh *fh);
/* One more reference to fh's node, made if need be: its id in *id. */
int rr__ftab_ref(struct ftable *t, const struct nfsc_fh *fh, uint64_t *id);
/* FORGET: n references fewer; the node goes at zero. */
void rr__ftab_forget(struct ftable *t, uint64_t id, uint64_t n);
/*
 * Close-to-open: records now as id's change attributes and says whether
 * they equal what was recorded before (the cached pages are still good).
 */
bool rr__ftab_same_change(struct ftable *t, uint64_t id,
			  const struct stat *now);
size_t rr__ftab_count(struct ftable *t);

/* An open of id began, or was released. */
void rr__ftab_opened(struct ftable *t, uint64_t id);
/* The last close of a silly-renamed node gives its fsilly (to free). */
struct fsilly *rr__ftab_closed(struct ftable *t, uint64_t id);
/* Whether any node, or fh's node, is open now. */
bool rr__ftab_any_open(struct ftable *t);
bool rr__ftab_is_open(struct ftable *t, const struct nfsc_fh *fh);
/*
 * Gives s to fh's node, open and not yet renamed: 0; -ENOENT when it was
 * closed meanwhile (the caller removes the name and frees s).
 */
int rr__ftab_set_silly(struct ftable *t, const struct nfsc_fh *fh,
		       struct fsilly *s);

/*
 * Write-behind (fileops.c): a buffered write is answered before its
 * WRITE reaches the server, so the node counts the WRITEs in flight.
 * Anything that asks the server for what those writes change (READ,
 * GETATTR, SETATTR, COMMIT) drains them first: the kernel already
 * believes them done. Two in flight never overlap, so the server sees
 * overlapping writes in the order they were made.
 */
#define FTAB_WB_DEPTH 8
/*
 * A WRITE of [off, off + len) on id may go: waits while a drain is
 * asked for, FTAB_WB_DEPTH are in flight or one overlaps the range.
 * 0, -ESTALE (no such node) or -ENOMEM.
 */
int rr__ftab_wb_begin(struct ftable *t, uint64_t id, uint64_t off,
		      uint64_t len);
/* That WRITE is back (whatever its result). */
void rr__ftab_wb_end(struct ftable *t, uint64_t id, uint64_t off, uint64_t len);
/* Waits until none of id's WRITEs is in flight; new ones wait too. */
void rr__ftab_wb_drain(struct ftable *t, uint64_t id);
/* Whether rr__ftab_wb_drain would wait now. */
bool rr__ftab_wb_out(struct ftable *t, uint64_t id);
/*
 * A lookup-like reply's attributes may be older than what the kernel
 * has been told: stamp before the call, then rr__ftab_wb_since says
 * whether a WRITE of id was in flight or ended after the stamp.
 */
uint64_t rr__ftab_wb_stamp(struct ftable *t);
bool rr__ftab_wb_since(struct ftable *t, uint64_t id, uint64_t stamp);

#endif
