/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CRC32c (Castagnoli), as MPA (RFC 5044 section 4.4) uses it. A running CRC
 * starts at RR_CRC32C_INIT, is fed with rr__crc32c_update() in any number of
 * pieces, and is finished with rr_crc32c_final(). Uses the SSE4.2 crc32
 * instruction when the CPU has it, a table otherwise.
 */
#ifndef RR_BASE_CRC32C_H
#define RR_BASE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#define RR_CRC32C_INIT 0xffffffffu

uint32_t rr__crc32c_update(uint32_t crc, const void *buf, size_t len);
/* The table path, whatever the CPU has; for tests that compare the two. */
uint32_t rr__crc32c_update_sw(uint32_t crc, const void *buf, size_t len);
static inline uint32_t rr_crc32c_final(uint32_t crc)
{
	return ~crc;
}
/* One-shot: rr_crc32c("123456789", 9) == 0xe3069283. */
static inline uint32_t rr_crc32c(const void *buf, size_t len)
{
	return rr_crc32c_final(rr__crc32c_update(RR_CRC32C_INIT, buf, len));
}

#endif
