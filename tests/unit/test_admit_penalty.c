// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rpc/admit.h's penalty records: the back-off doubles on repeats up to
 * its cap, starts again after the host stayed clear for the cap, one
 * offence while a penalty runs adds nothing, hosts are told apart by
 * address alone, and a full table reuses the entry ending first.
 */
#include "rpc/admit.h"

#include <arpa/inet.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define BASE 1000
#define MAX  60000

static struct sockaddr_storage host(uint8_t last, uint16_t port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	in->sin_family = AF_INET;
	in->sin_port = htons(port);
	in->sin_addr.s_addr = htonl(0x7f000000u | last);
	return ss;
}

static uint64_t penalise(struct rr__admit_penalty *t, uint32_t n, uint8_t last,
			 uint64_t now)
{
	struct sockaddr_storage h = host(last, 1000 + last);

	return rr__admit_penalise(t, n, &h, now, BASE, MAX) - now;
}

static void back_off_doubles_to_its_cap(void **state)
{
	struct rr__admit_penalty t[4] = {0};
	uint64_t now = 5000, want = BASE;

	(void)state;
	for (int i = 0; i < 10; i++) {
		uint64_t len = penalise(t, 4, 2, now);

		assert_int_equal(len, want);
		now += len + 1; /* a repeat right after it ended */
		want = want * 2 < MAX ? want * 2 : MAX;
	}
	assert_int_equal(penalise(t, 4, 2, now), MAX);
}

static void clear_for_the_cap_starts_again(void **state)
{
	struct rr__admit_penalty t[4] = {0};
	uint64_t now = 5000;

	(void)state;
	assert_int_equal(penalise(t, 4, 2, now), BASE);	     /* to 6000 */
	assert_int_equal(penalise(t, 4, 2, 6001), 2 * BASE); /* to 8001 */
	assert_int_equal(penalise(t, 4, 2, 8002), 4 * BASE); /* to 12002 */
	/* clear for MAX after it ended: from BASE again, not before */
	assert_int_equal(penalise(t, 4, 2, 12002 + MAX - 1), 8 * BASE);
	now = 12002 + MAX - 1 + 8 * BASE + MAX;
	assert_int_equal(penalise(t, 4, 2, now), BASE);
}

static void one_offence_while_penalised_adds_nothing(void **state)
{
	struct rr__admit_penalty t[4] = {0};
	struct sockaddr_storage other_port = host(2, 4242);

	(void)state;
	assert_int_equal(penalise(t, 4, 2, 5000), BASE);
	assert_int_equal(penalise(t, 4, 2, 5001), BASE - 1);
	/* the same host from another port: the same record */
	assert_int_equal(rr__admit_penalty_until(t, 4, &other_port, 5002),
			 5000 + BASE);
	assert_int_equal(
		rr__admit_penalty_until(t, 4, &other_port, 5000 + BASE), 0);
}

static void hosts_apart_and_a_full_table_reuses_the_first_to_end(void **state)
{
	struct rr__admit_penalty t[2] = {0};
	struct sockaddr_storage h2 = host(2, 1), h3 = host(3, 1),
				h4 = host(4, 1);

	(void)state;
	penalise(t, 2, 2, 5000);
	penalise(t, 2, 3, 5500);
	assert_int_equal(rr__admit_penalty_until(t, 2, &h2, 5600), 6000);
	assert_int_equal(rr__admit_penalty_until(t, 2, &h3, 5600), 6500);
	assert_int_equal(rr__admit_penalty_until(t, 2, &h4, 5600), 0);
	penalise(t, 2, 4, 5700); /* takes 127.0.0.2's, which ends first */
	assert_int_equal(rr__admit_penalty_until(t, 2, &h2, 5800), 0);
	assert_int_equal(rr__admit_penalty_until(t, 2, &h3, 5800), 6500);
	assert_int_equal(rr__admit_penalty_until(t, 2, &h4, 5800), 6700);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(back_off_doubles_to_its_cap),
		cmocka_unit_test(clear_for_the_cap_starts_again),
		cmocka_unit_test(one_offence_while_penalised_adds_nothing),
		cmocka_unit_test(
			hosts_apart_and_a_full_table_reuses_the_first_to_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
