// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CRC32c, reflected polynomial 0x82f63b78. The hardware path is built with a
 * target attribute so that nothing else in this file depends on SSE4.2; the
 * table path must stay runnable on CPUs that lack it.
 */
#include "base/crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define CRC_HAVE_HW 1
#endif

#define CRC32C_POLY 0x82f63b78u

/* ------------------------------------------------------ slicing-by-8 */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_tab_once = PTHREAD_ONCE_INIT;

static void crc_tab_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc_tab[0][n] = c;
	}
	/* Table t advances a byte that is followed by t more bytes. */
	for (int t = 1; t < 8; t++)
		for (int n = 0; n < 256; n++) {
			uint32_t c = crc_tab[t - 1][n];

			crc_tab[t][n] = (c >> 8) ^ crc_tab[0][c & 0xff];
		}
}

static uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint32_t crc_sw_block8(uint32_t crc, const uint8_t *p)
{
	uint32_t lo = crc ^ load_le32(p), hi = load_le32(p + 4);

	return crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
	       crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
	       crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
	       crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
}

uint32_t rr__crc32c_update_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_tab_once, crc_tab_init);
	for (; len >= 8; len -= 8, p += 8)
		crc = crc_sw_block8(crc, p);
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

/* ---------------------------------------------------------- SSE4.2 */

#ifdef CRC_HAVE_HW
__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t c;

	/* Aligned 8-byte loads never straddle a cache line. */
	for (; len && ((uintptr_t)p & 7); len--)
		crc = _mm_crc32_u8(crc, *p++);
	c = crc;
	for (; len >= 32; len -= 32, p += 32) {
		uint64_t w[4];

		memcpy(w, p, sizeof(w));
		c = _mm_crc32_u64(c, w[0]);
		c = _mm_crc32_u64(c, w[1]);
		c = _mm_crc32_u64(c, w[2]);
		c = _mm_crc32_u64(c, w[3]);
	}
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		c = _mm_crc32_u64(c, w);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

static bool crc_hw_usable(void)
{
	/* 0 unknown, 1 no, 2 yes; racing first callers agree on the answer. */
	static int state;
	int s = __atomic_load_n(&state, __ATOMIC_RELAXED);

	if (!s) {
		__builtin_cpu_init();
		s = __builtin_cpu_supports("sse4.2") ? 2 : 1;
		__atomic_store_n(&state, s, __ATOMIC_RELAXED);
	}
	return s == 2;
}
#endif

uint32_t rr__crc32c_update(uint32_t crc, const void *buf, size_t len)
{
#ifdef CRC_HAVE_HW
	if (crc_hw_usable())
		return crc_hw(crc, buf, len);
#endif
	return rr__crc32c_update_sw(crc, buf, len);
}
