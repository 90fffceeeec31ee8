/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Duplicate request cache. A client that lost its connection sends the
 * calls still waiting for a reply again, with the same xid. A procedure
 * that is not idempotent (NFS CREATE, REMOVE, RENAME, WRITE, ...) must then
 * be answered from what it did the first time, not run again.
 *
 * Entries are keyed by the client's address (not its port: a new
 * connection has a new one), xid, program, version, procedure and a
 * checksum of the arguments' length and first RR_DRC_SUM_ARGS bytes (and of
 * the first RR_DRC_SUM_BULK bytes of a DDP-eligible item), so a reused xid
 * with other arguments is a new call; as the kernel's nfsd, a WRITE's
 * megabyte is not read whole for it. Small
 * replies without a DDP-eligible item are kept (the replies of the procedures
 * that need this are small). A duplicate of a call still running waits for it
 * (a bounded while) and gets its reply; lookups from a thread that runs calls
 * one at a time never see one running. The table is allocated once; lookups
 * never allocate. Thread-safe.
 */
#ifndef RR_RPC_DRC_H
#define RR_RPC_DRC_H

#include "rpc/msg.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rr_drc_key {
	uint8_t addr[16]; /* IPv6, or IPv4-mapped */
	uint32_t xid, prog, vers, proc, sum;
};

enum rr_drc_verdict {
	RR_DRC_NEW,    /* run it, then rr__drc_done */
	RR_DRC_REPLAY, /* answer with the reply given back */
	RR_DRC_BUSY,   /* the first one still runs, past the wait: drop it */
};

struct rr_drc_entry;

struct rr_drc {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* an entry stopped running */
	uint32_t n, max_res, hand;
	struct rr_drc_entry *e;
	int32_t *bucket;
	uint8_t *res; /* n * max_res */
	uint64_t replays, drops;
};

#define RR_DRC_WAIT_MS	30000
#define RR_DRC_SUM_BULK 256  /* bytes of a DDP-eligible item checksummed */
#define RR_DRC_SUM_ARGS 1024 /* bytes of the arguments checksummed */

int rr__drc_init(struct rr_drc *d, uint32_t entries, uint32_t max_res);
void rr__drc_fini(struct rr_drc *d);
/* The key of a call: peer address (or NULL), header, arguments. */
void rr__drc_key_of(struct rr_drc_key *k, const struct sockaddr *peer,
		    const struct rr_call_hdr *h, const void *args, size_t len,
		    const void *bulk, size_t bulk_len);
/* REPLAY fills rh and res (cap bytes at least max_res) and *res_len. */
enum rr_drc_verdict rr__drc_lookup(struct rr_drc *d, const struct rr_drc_key *k,
				   struct rr_reply_hdr *rh, uint8_t *res,
				   size_t *res_len);
/* The call ran: keep its reply when it can be kept, else forget it. */
void rr__drc_done(struct rr_drc *d, const struct rr_drc_key *k,
		  const struct rr_reply_hdr *rh, const uint8_t *res,
		  size_t res_len, bool keep);

/* The cache's counters into a transport's (drc_replays, drc_drops). */
void rr__drc_stats(struct rr_drc *d, struct rr_xprt_stats *out);

#endif
