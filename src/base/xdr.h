/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* XDR's primitives (RFC 4506): big-endian words and 4-byte alignment. */
#ifndef RR_BASE_XDR_H
#define RR_BASE_XDR_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of XDR padding after n bytes. */
static inline uint32_t rr_xdr_pad(size_t n)
{
	return (uint32_t)((4 - (n & 3)) & 3);
}

static inline void rr_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline uint32_t rr_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

#endif
