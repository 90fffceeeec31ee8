/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The duplicate request cache: what it answers, keeps, forgets. */
#include "rpc/drc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static struct rr_drc_key key(uint32_t xid, const char *args, const char *ip)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rr_call_hdr h = {
		.xid = xid, .prog = 100003, .vers = 3, .proc = 8};
	struct rr_drc_key k;

	inet_pton(AF_INET, ip, &sin.sin_addr);
	rr__drc_key_of(&k, (struct sockaddr *)&sin, &h, args, strlen(args),
		       NULL, 0);
	return k;
}

static void run(struct rr_drc *d, const struct rr_drc_key *k, uint8_t v,
		bool keep)
{
	struct rr_reply_hdr rh = {.xid = k->xid, .accept = v};
	uint8_t res[4] = {v, v, v, v};

	rr__drc_done(d, k, &rh, res, sizeof(res), keep);
}

static void a_repeat_gets_the_first_reply(void **state)
{
	struct rr_drc d;
	struct rr_drc_key k = key(7, "create a", "10.0.0.1");
	struct rr_reply_hdr rh;
	uint8_t res[64];
	size_t len = 0;

	(void)state;
	assert_int_equal(rr__drc_init(&d, 8, 64), 0);
	assert_int_equal(rr__drc_lookup(&d, &k, &rh, res, &len), RR_DRC_NEW);
	run(&d, &k, 9, true);
	assert_int_equal(rr__drc_lookup(&d, &k, &rh, res, &len), RR_DRC_REPLAY);
	assert_int_equal(len, 4);
	assert_int_equal(res[3], 9);
	assert_int_equal(rh.accept, 9);
	assert_int_equal(d.replays, 1);
	rr__drc_fini(&d);
}

static void other_args_address_or_xid_are_new_calls(void **state)
{
	struct rr_drc d;
	struct rr_drc_key k = key(7, "create a", "10.0.0.1");
	struct rr_drc_key args = key(7, "create b", "10.0.0.1");
	struct rr_drc_key addr = key(7, "create a", "10.0.0.2");
	struct rr_drc_key xid = key(8, "create a", "10.0.0.1");
	struct rr_reply_hdr rh;
	uint8_t res[64];
	size_t len;

	(void)state;
	assert_int_equal(rr__drc_init(&d, 8, 64), 0);
	assert_int_equal(rr__drc_lookup(&d, &k, &rh, res, &len), RR_DRC_NEW);
	run(&d, &k, 1, true);
	assert_int_equal(rr__drc_lookup(&d, &args, &rh, res, &len), RR_DRC_NEW);
	assert_int_equal(rr__drc_lookup(&d, &addr, &rh, res, &len), RR_DRC_NEW);
	assert_int_equal(rr__drc_lookup(&d, &xid, &rh, res, &len), RR_DRC_NEW);
	rr__drc_fini(&d);
}

static void replies_not_kept_are_forgotten(void **state)
{
	struct rr_drc d;
	struct rr_drc_key k = key(7, "read", "10.0.0.1");
	struct rr_reply_hdr rh;
	uint8_t res[64];
	size_t len;

	(void)state;
	assert_int_equal(rr__drc_init(&d, 8, 64), 0);
	assert_int_equal(rr__drc_lookup(&d, &k, &rh, res, &len), RR_DRC_NEW);
	run(&d, &k, 1, false); /* e.g. it had a DDP-eligible result */
	assert_int_equal(rr__drc_lookup(&d, &k, &rh, res, &len), RR_DRC_NEW);
	rr__drc_fini(&d);
}

/* A full table reuses the oldest finished entry, never a running one. */
static void the_table_wraps_around_running_calls(void **state)
{
	struct rr_drc d;
	struct rr_drc_key k[5];
	struct rr_reply_hdr rh;
	uint8_t res[64];
	size_t len;

	(void)state;
	assert_int_equal(rr__drc_init(&d, 4, 64), 0);
	for (uint32_t i = 0; i < 4; i++) {
		k[i] = key(100 + i, "op", "10.0.0.1");
		assert_int_equal(rr__drc_lookup(&d, &k[i], &rh, res, &len),
				 RR_DRC_NEW);
		if (i) /* k[0] stays running */
			run(&d, &k[i], (uint8_t)i, true);
	}
	k[4] = key(200, "op", "10.0.0.1");
	assert_int_equal(rr__drc_lookup(&d, &k[4], &rh, res, &len), RR_DRC_NEW);
	/* k[1] made room; k[0] (running) and k[2], k[3] are still there. */
	assert_int_equal(rr__drc_lookup(&d, &k[1], &rh, res, &len), RR_DRC_NEW);
	assert_int_equal(rr__drc_lookup(&d, &k[3], &rh, res, &len),
			 RR_DRC_REPLAY);
	run(&d, &k[0], 5, true);
	assert_int_equal(rr__drc_lookup(&d, &k[0], &rh, res, &len),
			 RR_DRC_REPLAY);
	assert_int_equal(res[0], 5);
	rr__drc_fini(&d);
}

/*
 * Arguments are told apart by their length and first RR_DRC_SUM_ARGS
 * bytes: a TCP WRITE's megabyte is not summed whole for every call.
 */
static void long_args_are_keyed_by_length_and_head(void **state)
{
	char a[RR_DRC_SUM_ARGS * 4 + 1], b[sizeof(a)];
	struct rr_drc_key ka, kb;

	(void)state;
	memset(a, 'w', sizeof(a) - 1);
	a[sizeof(a) - 1] = 0;
	memcpy(b, a, sizeof(a));
	b[RR_DRC_SUM_ARGS * 3] = 'x'; /* past the summed head */
	ka = key(9, a, "10.0.0.1");
	kb = key(9, b, "10.0.0.1");
	assert_memory_equal(&ka, &kb, sizeof(ka));
	b[RR_DRC_SUM_ARGS - 1] = 'x'; /* inside it */
	kb = key(9, b, "10.0.0.1");
	assert_memory_not_equal(&ka, &kb, sizeof(ka));
	memcpy(b, a, sizeof(a));
	b[RR_DRC_SUM_ARGS * 2] = 0; /* shorter, same head */
	kb = key(9, b, "10.0.0.1");
	assert_memory_not_equal(&ka, &kb, sizeof(ka));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_repeat_gets_the_first_reply),
		cmocka_unit_test(other_args_address_or_xid_are_new_calls),
		cmocka_unit_test(replies_not_kept_are_forgotten),
		cmocka_unit_test(the_table_wraps_around_running_calls),
		cmocka_unit_test(long_args_are_keyed_by_length_and_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
