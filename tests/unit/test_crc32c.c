// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* CRC32c: known answers, piecewise feeding, and hardware/table agreement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/crc32c.h"

/* Fixed seed: a failure must reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static void fill_random(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng();
}

static uint32_t sw_oneshot(const void *buf, size_t len)
{
	return rr_crc32c_final(rr__crc32c_update_sw(RR_CRC32C_INIT, buf, len));
}

static void test_check_value(void **state)
{
	(void)state;
	assert_int_equal(rr_crc32c("123456789", 9), 0xe3069283u);
	assert_int_equal(sw_oneshot("123456789", 9), 0xe3069283u);
	assert_int_equal(rr_crc32c("", 0), 0);
}

/* The iSCSI vectors (RFC 3720 appendix B.4) exercise the 8-byte paths. */
static void test_iscsi_vectors(void **state)
{
	uint8_t buf[32];

	(void)state;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(rr_crc32c(buf, 32), 0x8a9136aau);
	assert_int_equal(sw_oneshot(buf, 32), 0x8a9136aau);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(rr_crc32c(buf, 32), 0x62a8ab43u);
	assert_int_equal(sw_oneshot(buf, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(rr_crc32c(buf, 32), 0x46dd794eu);
	assert_int_equal(sw_oneshot(buf, 32), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	assert_int_equal(rr_crc32c(buf, 32), 0x113fdb5cu);
	assert_int_equal(sw_oneshot(buf, 32), 0x113fdb5cu);
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static uint32_t feed_in_pieces(crc_fn fn, const uint8_t *p, size_t len)
{
	uint32_t crc = RR_CRC32C_INIT;

	while (len) {
		size_t n = rng() % (len < 40 ? len + 1 : 40);

		crc = fn(crc, p, n);
		p += n;
		len -= n;
	}
	return rr_crc32c_final(crc);
}

static void test_incremental(void **state)
{
	enum { LEN = 4096 };
	uint8_t *buf = malloc(LEN);

	(void)state;
	assert_non_null(buf);
	fill_random(buf, LEN);
	for (int round = 0; round < 200; round++) {
		size_t len = rng() % LEN;
		uint32_t whole = rr_crc32c(buf, len);

		assert_int_equal(feed_in_pieces(rr__crc32c_update, buf, len),
				 whole);
		assert_int_equal(feed_in_pieces(rr__crc32c_update_sw, buf, len),
				 whole);
	}
	free(buf);
}

static void test_hw_matches_table(void **state)
{
	enum { MAX = 9000 };
	uint8_t *buf = malloc(MAX + 16);

	(void)state;
	assert_non_null(buf);
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("sse4.2")) {
		free(buf);
		skip();
	}
#endif
	fill_random(buf, MAX + 16);
	for (size_t len = 0; len <= 300; len++)
		for (size_t off = 0; off < 16; off++)
			assert_int_equal(rr_crc32c(buf + off, len),
					 sw_oneshot(buf + off, len));
	for (int round = 0; round < 100; round++) {
		size_t len = rng() % MAX, off = rng() % 16;
		uint32_t seed = rng();

		assert_int_equal(rr__crc32c_update(seed, buf + off, len),
				 rr__crc32c_update_sw(seed, buf + off, len));
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_value),
		cmocka_unit_test(test_iscsi_vectors),
		cmocka_unit_test(test_incremental),
		cmocka_unit_test(test_hw_matches_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
