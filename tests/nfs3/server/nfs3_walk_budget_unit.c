/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The walk budget (walk_budget.c) alone: what it lets walk and what it
 * refuses, by client address, by the server's rate and by walks at once.
 * The rates are low (100 directories a second): what refills while a
 * test runs is a small fraction of the debts it makes.
 */
#include "nfs3/server/nfsd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

struct bfx {
	struct rr_nfs3_server s;
	struct sockaddr_in a, b;
};

static int setup(void **state)
{
	static struct bfx f;
	struct rr_nfs3_server_opts o = {.walk_dirs_per_s = 100,
					.walk_dirs_per_peer_s = 50,
					.walks_at_once = 1};

	memset(&f, 0, sizeof(f));
	memset(f.s.key, 0x5a, sizeof(f.s.key));
	f.a = (struct sockaddr_in){.sin_family = AF_INET};
	f.b = f.a;
	inet_pton(AF_INET, "192.0.2.1", &f.a.sin_addr);
	inet_pton(AF_INET, "192.0.2.2", &f.b.sin_addr);
	*state = &f;
	return rr__nfsd_walk_budget_create(&o, &f.s.walks) ? -1 : 0;
}

static int teardown(void **state)
{
	struct bfx *f = *state;

	rr__nfsd_walk_budget_destroy(f->s.walks);
	return 0;
}

static int begin(struct bfx *f, const struct sockaddr_in *who, size_t *slot)
{
	return rr__nfsd_walk_begin(&f->s, (const struct sockaddr *)who, slot);
}

/* One walk at a time: the second is refused until the first ends. */
static void walks_at_once_are_bounded(void **state)
{
	struct bfx *f = *state;
	size_t sa, sb;

	assert_int_equal(begin(f, &f->a, &sa), 0);
	assert_int_equal(begin(f, &f->b, &sb), -EAGAIN);
	rr__nfsd_walk_end(&f->s);
	assert_int_equal(begin(f, &f->b, &sb), 0);
	rr__nfsd_walk_end(&f->s);
	assert_int_equal(atomic_load(&f->s.walks_refused), 1);
	assert_int_equal(atomic_load(&f->s.searches), 2);
}

/* A client that walked past its share waits; another still may walk. */
static void a_client_in_debt_waits_alone(void **state)
{
	struct bfx *f = *state;
	size_t sa, sb;

	assert_int_equal(begin(f, &f->a, &sa), 0);
	rr__nfsd_walk_pay(&f->s, sa, 60); /* its share is 50 a second */
	rr__nfsd_walk_end(&f->s);
	assert_int_equal(begin(f, &f->a, &sa), -EAGAIN);
	assert_int_equal(begin(f, &f->b, &sb), 0);
	rr__nfsd_walk_end(&f->s);
}

/*
 * The server's bucket empty: a client that walked and has tokens left
 * waits with the rest; a client that has not walked (its bucket full)
 * may, down to a second of the server's debt, and no further.
 */
static void an_idle_client_walks_while_the_server_is_in_debt(void **state)
{
	struct bfx *f = *state;
	struct sockaddr_in c = f->a;
	size_t sa, sb, sc;

	assert_int_equal(begin(f, &f->a, &sa), 0);
	rr__nfsd_walk_pay(&f->s, sa, 10);
	rr__nfsd_walk_end(&f->s);
	assert_int_equal(begin(f, &f->b, &sb), 0);
	rr__nfsd_walk_pay(&f->s, sb, 150); /* the server: 100 - 160 */
	rr__nfsd_walk_end(&f->s);
	assert_int_equal(begin(f, &f->a, &sa), -EAGAIN); /* not idle */
	inet_pton(AF_INET, "198.51.100.7", &c.sin_addr);
	assert_int_equal(begin(f, &c, &sc), 0); /* idle */
	rr__nfsd_walk_pay(&f->s, sc, 50);	/* the server: -110 */
	rr__nfsd_walk_end(&f->s);
	inet_pton(AF_INET, "198.51.100.8", &c.sin_addr);
	assert_int_equal(begin(f, &c, &sc), -EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(walks_at_once_are_bounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_client_in_debt_waits_alone,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			an_idle_client_walks_while_the_server_is_in_debt, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
