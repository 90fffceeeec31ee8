/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Record marking (RFC 5531 section 11): how ONC RPC messages are delimited
 * on a byte stream.
 *
 * A record is one RPC message, sent as one or more fragments. Each fragment
 * starts with a 4-byte big-endian word: the top bit says "last fragment of
 * the record", the other 31 bits the fragment's length. Zero-length
 * fragments are legal (a sender may close a record with an empty last
 * fragment), so a reader cannot assume progress per fragment, only per
 * byte.
 *
 * The reassembler below is fed whatever bytes the socket gave, in pieces
 * of any size, and stops at each complete record. It grows its buffer only
 * as bytes really arrive, so a peer announcing a huge fragment and sending
 * nothing costs us nothing; a record whose announced total passes
 * max_record is refused before any of it is stored. The caller then
 * either closes the connection (a server: RPC has no answer for "too
 * big") or skips the record: its bytes are read and dropped, keeping only
 * its first 8 (xid and message type) so a client can fail just that call.
 */
#ifndef RR_RPC_TCP_RECORD_H
#define RR_RPC_TCP_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define RR_RM_LAST	0x80000000u
#define RR_RM_MAX_FRAG	0x7fffffffu
#define RR_RM_HDR_LEN	4
#define RR_RM_MAX_EMPTY 8 /* empty fragments in a row a record may have */
#define RR_RM_HEAD_LEN	8 /* what a skipped record keeps: xid, type */
#define RR_RM_BIG_AT	(64u << 10)
#define RR_RM_SMALL	4096u /* a record's first buffer */

/* The fragment header word for len bytes (len <= RR_RM_MAX_FRAG). */
void rr__rm_hdr(uint8_t out[RR_RM_HDR_LEN], uint32_t len, bool last);

struct rr__spares;

struct rr__rm_rx {
	uint32_t max_record;
	/*
	 * Optional, of max_record bytes each: a record that grows past
	 * RR_RM_BIG_AT moves into one of these spares, when there is one,
	 * rather than growing by reallocation; rr__rm_rx_give_back returns
	 * it. A peer's claim never allocates one: spares are buffers of
	 * earlier records, given back.
	 */
	struct rr__spares *big;
	/*
	 * Optional, of RR_RM_SMALL bytes each: a record's first buffer,
	 * when the last one's left with its record (rr__rm_rx_detach) and
	 * came back (rr__rm_rx_give_back), so a server handing each call
	 * to a worker does not allocate one a call.
	 */
	struct rr__spares *small;
	uint8_t *buf; /* the record so far */
	size_t len, cap;
	uint8_t hdr[RR_RM_HDR_LEN];
	uint32_t hdr_have;    /* bytes of the next fragment header seen */
	uint32_t frag_left;   /* body bytes of the current fragment to come */
	bool in_body;	      /* hdr is complete and frag_left counts down */
	bool last;	      /* the current fragment ends the record */
	bool complete;	      /* buf[0..len) is a whole record */
	bool skipping;	      /* dropping the current record's bytes */
	uint32_t frags;	      /* fragments in the current record */
	uint32_t empty_frags; /* empty, not last, in a row */
	uint8_t head[RR_RM_HEAD_LEN]; /* a skipped record's first bytes */
	uint32_t head_len;
};

void rr__rm_rx_init(struct rr__rm_rx *r, uint32_t max_record);
void rr__rm_rx_fini(struct rr__rm_rx *r);

/*
 * Consumes bytes of p[0..n) up to the end of the next record and sets
 * *used. Returns 1 when a record is complete (read it with
 * rr__rm_rx_record, then rr__rm_rx_next before feeding more), 2 when a
 * skipped record ended (rr__rm_rx_head, then rr__rm_rx_next), 0 when all
 * n bytes were consumed without either, -EMSGSIZE when the record would
 * pass max_record (*used is then set too: call rr__rm_rx_skip and feed on,
 * or give up on the stream), -EPROTO after more than RR_RM_MAX_EMPTY
 * empty fragments in a row, or -ENOMEM (for those two the stream is lost).
 */
int rr__rm_rx_feed(struct rr__rm_rx *r, const uint8_t *p, size_t n,
		   size_t *used);
/* Drops the record refused with -EMSGSIZE as the rest of it arrives. */
void rr__rm_rx_skip(struct rr__rm_rx *r);
/* The first bytes of a skipped record (fewer if it was shorter). */
const uint8_t *rr__rm_rx_head(const struct rr__rm_rx *r, size_t *len);
/* The complete record; valid until rr__rm_rx_next or _detach. */
const uint8_t *rr__rm_rx_record(const struct rr__rm_rx *r, size_t *len);
/* Starts the next record, keeping the buffer for reuse. */
void rr__rm_rx_next(struct rr__rm_rx *r);
/*
 * Hands the complete record's buffer (of *cap bytes) to the caller, who
 * ends it with rr__rm_rx_give_back, and starts the next record with no
 * buffer: for records that outlive the next read, such as calls queued
 * to a worker thread.
 */
uint8_t *rr__rm_rx_detach(struct rr__rm_rx *r, size_t *len, size_t *cap);
/* A detached buffer: back to r's spares if it is one of their size. */
void rr__rm_rx_give_back(const struct rr__rm_rx *r, uint8_t *buf, size_t cap);

struct rr_call;

/*
 * One call as one record (either direction): the record mark and call
 * header built into hdr (RR_RM_HDR_LEN + hdr_max bytes), then iov[0..3]
 * is that header, the arguments, the DDP-eligible item inline and its XDR
 * padding. 0, or as rr__call_msg_hdr.
 */
int rr__rm_call_iov(const struct rr_call *call, uint32_t xid,
		    const char *machine, uint8_t *hdr, size_t hdr_max,
		    struct iovec iov[4]);

#endif
