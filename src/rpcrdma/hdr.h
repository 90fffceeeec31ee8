/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RPC-over-RDMA Version 1 transport header (RFC 8166 section 4) and the
 * RFC 8797 connection parameters carried in connect private data.
 *
 * Every field comes from the peer and is untrusted: the decoder checks
 * counts against fixed limits before touching the arrays and never reads
 * past len. Semantic checks that need the message (chunk positions against
 * the RPC message length, lengths against our inline/receive sizes) are
 * the transport's, and are documented there.
 */
#ifndef RR_RPCRDMA_HDR_H
#define RR_RPCRDMA_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RR_RDMA_VERSION 1

enum rr_rdma_proc {
	RR_RDMA_MSG = 0,
	RR_RDMA_NOMSG = 1,
	RR_RDMA_MSGP = 2, /* obsolete: answered with ERR_CHUNK (RFC 8166 4.5) */
	RR_RDMA_DONE = 3, /* obsolete: likewise */
	RR_RDMA_ERROR = 4,
};

enum rr_rdma_errcode {
	RR_ERR_VERS = 1,
	RR_ERR_CHUNK = 2,
};

/* Limits we accept from a peer; more is answered with ERR_CHUNK. */
#define RR_RDMA_MAX_READ_SEGS	 16
#define RR_RDMA_MAX_WRITE_CHUNKS 4
#define RR_RDMA_MAX_CHUNK_SEGS	 16

/* The fixed part: xid, vers, credits, proc (16 bytes). */
#define RR_RDMA_HDR_MIN 16
/* Smallest RDMA_MSG/NOMSG header: fixed part + three empty lists. */
#define RR_RDMA_HDR_EMPTY 28

struct rr_rdma_seg {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

struct rr_rdma_read_seg {
	uint32_t position;
	struct rr_rdma_seg seg;
};

struct rr_rdma_chunk {
	uint32_t nsegs;
	struct rr_rdma_seg segs[RR_RDMA_MAX_CHUNK_SEGS];
};

struct rr_rdma_hdr {
	uint32_t xid;
	uint32_t vers;
	uint32_t credits;
	uint32_t proc; /* enum rr_rdma_proc */
	/* RDMA_MSG / RDMA_NOMSG */
	uint32_t nread;
	struct rr_rdma_read_seg reads[RR_RDMA_MAX_READ_SEGS];
	uint32_t nwrite;
	struct rr_rdma_chunk writes[RR_RDMA_MAX_WRITE_CHUNKS];
	bool has_reply;
	struct rr_rdma_chunk reply;
	/* RDMA_ERROR */
	uint32_t err;	   /* enum rr_rdma_errcode */
	uint32_t vers_low; /* ERR_VERS: the range we support */
	uint32_t vers_high;
};

/*
 * Encodes h into buf. RDMA_MSG/NOMSG: fixed part, read list, write list,
 * reply chunk. RDMA_ERROR: fixed part, err, and for ERR_VERS the range.
 * Returns bytes written, -ENOSPC when cap is too small, -EINVAL for counts
 * above the limits, a proc other than MSG/NOMSG/ERROR, or an err other
 * than ERR_VERS/ERR_CHUNK. vers is written as given (ERR_VERS echoes it).
 */
int rr__rdma_hdr_encode(const struct rr_rdma_hdr *h, uint8_t *buf, size_t cap);

/*
 * Decodes a received header. Returns its length (the RPC message, if any,
 * starts there) or:
 *   -EBADMSG   shorter than its own lists, a list discriminator not 0/1,
 *              or an RDMA_ERROR err other than ERR_VERS/ERR_CHUNK
 *   -E2BIG     more segments or chunks than the limits above
 *   -EPROTONOSUPPORT  vers != 1 (h->xid and h->vers are filled: answer
 *              RDMA_ERROR ERR_VERS, echoing them)
 *   -EOPNOTSUPP proc MSGP/DONE/unknown (h->xid filled: answer ERR_CHUNK)
 * An RDMA_ERROR header decodes to its err/vers range (returns its length).
 * Whenever len >= 16, xid, vers, credits and proc are filled, whatever the
 * result. Arrays are written only up to their counts: entries past them
 * keep what they held (the struct is much larger than any header).
 */
int rr__rdma_hdr_decode(const uint8_t *buf, size_t len, struct rr_rdma_hdr *h);

/*
 * Bytes rr__rdma_hdr_encode will produce for h (without writing); 0 when
 * encode would return -EINVAL.
 */
size_t rr__rdma_hdr_size(const struct rr_rdma_hdr *h);

/* ------------------------------------------------- RFC 8797 parameters */

#define RR_CPARAMS_MAGIC   0xf6ab0e18u
#define RR_CPARAMS_VERSION 1
#define RR_CPARAMS_LEN	   8
#define RR_INLINE_DEFAULT  1024 /* when the peer sends no parameters */
#define RR_INLINE_OURS	   4096

struct rr_cparams {
	bool rem_inv_ok;      /* the sender may be sent Send With Invalidate */
	uint32_t inline_send; /* bytes; a multiple of 1024, 1024..262144 */
	uint32_t inline_recv;
};

/*
 * Writes the 8-byte block. Sizes are rounded down to a 1 KiB unit and
 * clamped to 1024..262144 (what one octet can say).
 */
void rr__cparams_encode(const struct rr_cparams *p,
			uint8_t out[RR_CPARAMS_LEN]);
/*
 * Reads private data from the peer. Returns 0 and fills p when it holds
 * our magic and version 1; -ENOENT when it does not (the caller uses the
 * 1024-byte defaults of RFC 8166 section 3.3.3); -EINVAL when the magic
 * is ours but the block is short or of another version.
 */
int rr__cparams_decode(const uint8_t *pd, size_t len, struct rr_cparams *p);

#endif
