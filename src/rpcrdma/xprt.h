/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Pieces shared by the client and server transports: work-request ids,
 * registered buffer pools, and the connection parameters exchange.
 *
 * Work-request ids (architecture.md invariant 4) carry the connection
 * generation, the kind of request, the slot it belongs to and that slot's use
 * count:
 *
 *   63      48 47  44 43        28 27                 0
 *   | gen(16) |kind(4)| slot(16) |      seq (28)       |
 *
 * A completion is acted on only when all four match what is outstanding;
 * anything else is counted (unknown or stale) and dropped.
 */
#ifndef RR_RPCRDMA_XPRT_H
#define RR_RPCRDMA_XPRT_H

#include "base/xdr.h"

#include <rpcrdma/fabric.h>
#include <rpcrdma/rpc.h>

#include <stdbool.h>
#include <stdint.h>

enum rr_wr_kind {
	RR_WRK_SEND = 1,
	RR_WRK_RECV = 2,
	RR_WRK_REG = 3,
	RR_WRK_LINV = 4,
	RR_WRK_READ = 5,
	RR_WRK_WRITE = 6,
	RR_WRK_DRAIN = 7,   /* rr_qp_drain's markers: slot 0 send, 1 receive */
	RR_WRK_CB_SEND = 8, /* client: a reply to the server's call */
};

static inline uint64_t rr_wrid(uint16_t gen, unsigned kind, uint32_t slot,
			       uint32_t seq)
{
	return (uint64_t)gen << 48 | (uint64_t)(kind & 0xf) << 44 |
	       (uint64_t)(slot & 0xffff) << 28 | (seq & 0xfffffffu);
}
static inline uint16_t rr_wrid_gen(uint64_t id)
{
	return (uint16_t)(id >> 48);
}
static inline unsigned rr_wrid_kind(uint64_t id)
{
	return (unsigned)(id >> 44) & 0xf;
}
static inline uint32_t rr_wrid_slot(uint64_t id)
{
	return (uint32_t)(id >> 28) & 0xffff;
}
static inline uint32_t rr_wrid_seq(uint64_t id)
{
	return (uint32_t)id & 0xfffffffu;
}

/* A registered array of equal buffers. */
struct rr_bufpool {
	uint8_t *mem;
	struct rr_mr *mr;
	uint32_t count;
	uint32_t size;
};

int rr__bufpool_init(struct rr_bufpool *p, struct rr_pd *pd, uint32_t count,
		     uint32_t size, unsigned access);
void rr__bufpool_fini(struct rr_bufpool *p);
static inline uint8_t *rr_bufpool_at(const struct rr_bufpool *p, uint32_t i)
{
	return p->mem + (size_t)i * p->size;
}

/* Builds our RFC 8797 private data. */
void rr__xprt_cparams(uint8_t out[8], uint32_t inline_size, bool rem_inv_ok);
/* Inline sizes to use given ours and what the peer sent (if anything). */
void rr__xprt_negotiate(const uint8_t *pd, uint32_t pd_len, uint32_t ours,
			uint32_t *send, uint32_t *recv, bool *peer_inv_ok);

#endif
