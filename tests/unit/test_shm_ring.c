/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The shm provider's rings (src/fabric/shm/shm_ring.c) on a real memfd,
 * mapped twice as the two processes of a connection map it: bytes cross
 * the wrap intact, a full ring says so and asks for a bell, the bells go
 * exactly where a side may be asleep, and a peer that lies in its index
 * or hands over a memfd it could shrink is refused.
 */
#include "fabric/shm/shm_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

struct pair {
	struct shm_link client, server;
};

static int setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));
	int fd;

	assert_int_equal(rr__shm_link_create(&p->client, &fd), 0);
	assert_int_equal(rr__shm_link_attach(&p->server, fd), 0);
	close(fd); /* the mappings keep the memory */
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct pair *p = *state;

	rr__shm_link_close(&p->client);
	rr__shm_link_close(&p->server);
	free(p);
	return 0;
}

static ssize_t put(struct shm_link *l, const void *b, size_t n, bool *bell)
{
	struct iovec v = {(void *)b, n};

	return rr__shm_ring_writev(l, &v, 1, bell);
}

static ssize_t get(struct shm_link *l, void *b, size_t n, bool *bell)
{
	struct iovec v = {b, n};

	return rr__shm_ring_readv(l, &v, 1, bell);
}

static void bytes_cross_the_wrap_intact(void **state)
{
	struct pair *p = *state;
	static uint8_t in[SHM_RING_BYTES], out[SHM_RING_BYTES];
	bool bell;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 31 + 7);
	/* Move the indices near the end, so the next write wraps. */
	for (int k = 0; k < 3; k++) {
		assert_int_equal(
			put(&p->client, in, SHM_RING_BYTES - 1000, &bell),
			SHM_RING_BYTES - 1000);
		assert_int_equal(get(&p->server, out, SHM_RING_BYTES, &bell),
				 SHM_RING_BYTES - 1000);
	}
	/* Two iovecs on each side, split where the other side does not. */
	struct iovec w[2] = {{in, 3000}, {in + 3000, 5000}};
	uint8_t a[1234], b[8000 - 1234];
	struct iovec r[2] = {{a, sizeof(a)}, {b, sizeof(b)}};

	assert_int_equal(rr__shm_ring_writev(&p->client, w, 2, &bell), 8000);
	assert_int_equal(rr__shm_ring_readv(&p->server, r, 2, &bell), 8000);
	assert_memory_equal(a, in, sizeof(a));
	assert_memory_equal(b, in + sizeof(a), sizeof(b));
	/* And the other way. */
	assert_int_equal(put(&p->server, in, 100, &bell), 100);
	assert_int_equal(get(&p->client, out, sizeof(out), &bell), 100);
	assert_memory_equal(out, in, 100);
}

static void a_full_ring_asks_for_a_bell(void **state)
{
	struct pair *p = *state;
	static uint8_t buf[SHM_RING_BYTES + 10];
	bool bell;

	assert_int_equal(put(&p->client, buf, sizeof(buf), &bell),
			 SHM_RING_BYTES); /* what fits */
	assert_int_equal(put(&p->client, buf, 1, &bell), -EAGAIN);
	/* The consumer that frees space learns that the producer waits... */
	assert_int_equal(get(&p->server, buf, 10, &bell), 10);
	assert_true(bell);
	/* ...once. */
	assert_int_equal(get(&p->server, buf, 10, &bell), 10);
	assert_false(bell);
	assert_int_equal(put(&p->client, buf, 100, &bell), 20);
}

static void bells_only_for_a_side_that_may_sleep(void **state)
{
	struct pair *p = *state;
	uint8_t b[64] = {0};
	bool bell;

	/* A new connection: the consumer has not looked yet. */
	assert_int_equal(put(&p->client, b, 8, &bell), 8);
	assert_true(bell);
	assert_int_equal(put(&p->client, b, 8, &bell), 8);
	assert_false(bell); /* one bell wakes it for both */
	assert_int_equal(get(&p->server, b, sizeof(b), &bell), 16);
	/* Empty: the consumer arms and looks again (shm_ring.h). */
	assert_int_equal(get(&p->server, b, sizeof(b), &bell), 0);
	rr__shm_ring_arm(&p->server);
	assert_false(rr__shm_ring_ready(&p->server));
	assert_int_equal(put(&p->client, b, 8, &bell), 8);
	assert_true(bell);
	assert_true(rr__shm_ring_ready(&p->server));
	assert_int_equal(get(&p->server, b, sizeof(b), &bell), 8);
	/* A consumer watching its ring needs no bell. */
	rr__shm_ring_watch(&p->server);
	assert_int_equal(put(&p->client, b, 8, &bell), 8);
	assert_false(bell);
}

static void a_peer_index_past_the_ring_is_refused(void **state)
{
	struct pair *p = *state;
	uint8_t b[64];
	bool bell;

	/* The client's mapping is the "peer" writing the server's input. */
	atomic_store(&p->client.tx_ctl->tail, SHM_RING_BYTES + 1);
	assert_int_equal(get(&p->server, b, sizeof(b), &bell), -EPROTO);
	/* A head behind the tail by more than a ring, on the way out. */
	atomic_store(&p->client.rx_ctl->head,
		     (uint32_t) - (SHM_RING_BYTES + 1));
	assert_int_equal(put(&p->server, b, 8, &bell), -EPROTO);
	/* A head ahead of our tail is the same lie. */
	atomic_store(&p->client.rx_ctl->head, 5);
	assert_int_equal(put(&p->server, b, 8, &bell), -EPROTO);
}

static void a_memfd_that_could_shrink_is_refused(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct shm_link l;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, SHM_LINK_BYTES), 0);
	assert_int_equal(rr__shm_link_attach(&l, fd), -EPERM);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	assert_int_equal(rr__shm_link_fd_ok(fd), 0);
	close(fd);
	/* Sealed, but smaller than a link. */
	fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	assert_int_equal(rr__shm_link_fd_ok(fd), -EINVAL);
	close(fd);
	/* Not a memfd at all. */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	assert_int_equal(rr__shm_link_fd_ok(fd), -EPERM);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(bytes_cross_the_wrap_intact,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_full_ring_asks_for_a_bell,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			bells_only_for_a_side_that_may_sleep, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_peer_index_past_the_ring_is_refused, setup, teardown),
		cmocka_unit_test(a_memfd_that_could_shrink_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
