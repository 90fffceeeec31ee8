/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * File contents for tests that move data and compare it: the same seed
 * gives the same bytes, another seed others, with no run of any byte.
 */
#ifndef RR_TEST_LIB_PATTERN_H
#define RR_TEST_LIB_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* len bytes of seed's pattern (xorshift32) at p. */
void rr_t_fill(uint8_t *p, size_t len, uint32_t seed);

#endif
