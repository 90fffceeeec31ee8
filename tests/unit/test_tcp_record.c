/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Record marking (RFC 5531 section 11) and the non-blocking output queue
 * of the TCP transport: framing, reassembly from pieces of any size,
 * zero-length fragments, the max_record limit, and sends that the socket
 * takes only in part.
 */
#include "rpc/tcp_io.h"
#include "rpc/tcp_record.h"
#include "rpc/spares.h"

#include <rpcrdma/alloc_inject.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* A byte stream of fragments built for a test. */
struct stream {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct stream *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2 + 64;
		s->p = realloc(s->p, s->cap);
		assert_non_null(s->p);
	}
	if (n)
		memcpy(s->p + s->len, p, n);
	s->len += n;
}

static void frag(struct stream *s, const void *p, uint32_t n, bool last)
{
	uint8_t h[RR_RM_HDR_LEN];

	rr__rm_hdr(h, n, last);
	put(s, h, sizeof(h));
	put(s, p, n);
}

static uint8_t byte_at(size_t i)
{
	return (uint8_t)(i * 131u + (i >> 7));
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = byte_at(i);
}

/*
 * Feeds s in pieces of at most step bytes (step 0: a pseudo-random mix)
 * and expects exactly one record of want_len pattern bytes, ending where
 * the stream ends.
 */
static void expect_one_record(const struct stream *s, uint32_t max, size_t step,
			      size_t want_len)
{
	struct rr__rm_rx rx;
	size_t off = 0, len;
	uint32_t r = 12345;
	int rc = 0;
	const uint8_t *rec;

	rr__rm_rx_init(&rx, max);
	while (off < s->len) {
		size_t n = step, used;

		if (!step) {
			r = r * 1103515245u + 12345u;
			n = 1 + (r >> 16) % 9;
		}
		if (n > s->len - off)
			n = s->len - off;
		rc = rr__rm_rx_feed(&rx, s->p + off, n, &used);
		assert_true(rc >= 0);
		off += used;
		if (rc == 1)
			break;
		assert_int_equal(used, n);
	}
	assert_int_equal(rc, 1);
	assert_int_equal(off, s->len);
	rec = rr__rm_rx_record(&rx, &len);
	assert_int_equal(len, want_len);
	for (size_t i = 0; i < len; i++)
		if (rec[i] != byte_at(i))
			fail_msg("byte %zu of %zu is wrong", i, len);
	rr__rm_rx_fini(&rx);
}

static void header_word_carries_the_last_bit_and_the_length(void **state)
{
	uint8_t h[4];

	(void)state;
	rr__rm_hdr(h, 0x1234, true);
	assert_memory_equal(h, ((uint8_t[]){0x80, 0, 0x12, 0x34}), 4);
	rr__rm_hdr(h, 0x7fffffff, false);
	assert_memory_equal(h, ((uint8_t[]){0x7f, 0xff, 0xff, 0xff}), 4);
	rr__rm_hdr(h, 0, true);
	assert_memory_equal(h, ((uint8_t[]){0x80, 0, 0, 0}), 4);
}

static void one_fragment_record_arrives_whole_or_byte_by_byte(void **state)
{
	struct stream s = {0};
	uint8_t data[5000];

	(void)state;
	fill(data, sizeof(data));
	frag(&s, data, sizeof(data), true);
	expect_one_record(&s, 1 << 20, s.len, sizeof(data));
	expect_one_record(&s, 1 << 20, 1, sizeof(data));
	expect_one_record(&s, 1 << 20, 0, sizeof(data));
	free(s.p);
}

static void many_small_fragments_reassemble_in_order(void **state)
{
	struct stream s = {0};
	uint8_t *data = malloc(70000);
	size_t off = 0;
	uint32_t k = 0;

	(void)state;
	assert_non_null(data);
	fill(data, 70000);
	while (off < 70000) {
		uint32_t n = 1 + (k++ * 7) % 13;

		if (n > 70000 - off)
			n = (uint32_t)(70000 - off);
		frag(&s, data + off, n, off + n == 70000);
		off += n;
	}
	assert_true(k > 5000);
	expect_one_record(&s, 1 << 20, s.len, 70000);
	expect_one_record(&s, 1 << 20, 3, 70000);
	expect_one_record(&s, 1 << 20, 0, 70000);
	free(data);
	free(s.p);
}

static void zero_length_fragments_are_legal_anywhere(void **state)
{
	struct stream s = {0};
	uint8_t data[100];

	(void)state;
	fill(data, sizeof(data));
	frag(&s, NULL, 0, false);
	frag(&s, data, 40, false);
	frag(&s, NULL, 0, false);
	frag(&s, NULL, 0, false);
	frag(&s, data + 40, 60, false);
	frag(&s, NULL, 0, true); /* an empty last fragment ends it */
	expect_one_record(&s, 1 << 20, s.len, 100);
	expect_one_record(&s, 1 << 20, 1, 100);
	free(s.p);
}

/*
 * A run of empty fragments carries nothing and costs a pass each: up to
 * RR_RM_MAX_EMPTY in a row are taken (a fragment with data restarts the
 * count), one more ends the stream.
 */
static void endless_empty_fragments_are_refused(void **state)
{
	struct stream s = {0};
	struct rr__rm_rx rx;
	uint8_t data[4] = {1, 2, 3, 4};
	size_t used;

	(void)state;
	for (int run = 0; run < 3; run++) {
		for (int i = 0; i < RR_RM_MAX_EMPTY; i++)
			frag(&s, NULL, 0, false);
		frag(&s, data, 4, run == 2);
	}
	rr__rm_rx_init(&rx, 1 << 20);
	assert_int_equal(rr__rm_rx_feed(&rx, s.p, s.len, &used), 1);
	assert_int_equal(used, s.len);
	rr__rm_rx_next(&rx);
	s.len = 0;
	for (int i = 0; i <= RR_RM_MAX_EMPTY; i++)
		frag(&s, NULL, 0, false);
	assert_int_equal(rr__rm_rx_feed(&rx, s.p, s.len, &used), -EPROTO);
	assert_int_equal(used, s.len);
	rr__rm_rx_fini(&rx);
	free(s.p);
}

static void empty_record_is_a_record_of_length_zero(void **state)
{
	struct stream s = {0};

	(void)state;
	frag(&s, NULL, 0, true);
	expect_one_record(&s, 1 << 20, 1, 0);
	free(s.p);
}

/* Two records in one read: the feed stops after the first. */
static void back_to_back_records_are_returned_one_at_a_time(void **state)
{
	struct stream s = {0};
	struct rr__rm_rx rx;
	uint8_t data[300];
	const uint8_t *rec;
	size_t used, len, first;

	(void)state;
	fill(data, sizeof(data));
	frag(&s, data, 100, true);
	first = s.len;
	frag(&s, data, 50, false);
	frag(&s, data + 50, 150, true);
	rr__rm_rx_init(&rx, 1000);
	assert_int_equal(rr__rm_rx_feed(&rx, s.p, s.len, &used), 1);
	assert_int_equal(used, first);
	rec = rr__rm_rx_record(&rx, &len);
	assert_int_equal(len, 100);
	assert_memory_equal(rec, data, 100);
	rr__rm_rx_next(&rx);
	assert_int_equal(rr__rm_rx_feed(&rx, s.p + first, s.len - first, &used),
			 1);
	assert_int_equal(used, s.len - first);
	rec = rr__rm_rx_record(&rx, &len);
	assert_int_equal(len, 200);
	assert_memory_equal(rec, data, 200);
	rr__rm_rx_fini(&rx);
	free(s.p);
}

static void record_of_exactly_max_record_is_accepted(void **state)
{
	struct stream s = {0};
	uint8_t data[1000];

	(void)state;
	fill(data, sizeof(data));
	frag(&s, data, 600, false);
	frag(&s, data + 600, 400, true);
	expect_one_record(&s, 1000, 7, 1000);
	free(s.p);
}

/* The announced length is refused before any body byte is stored. */
static void fragment_over_max_record_is_refused_at_its_header(void **state)
{
	struct rr__rm_rx rx;
	uint8_t h[4];
	size_t used;

	(void)state;
	rr__rm_hdr(h, 1001, true);
	rr__rm_rx_init(&rx, 1000);
	assert_int_equal(rr__rm_rx_feed(&rx, h, 3, &used), 0);
	assert_int_equal(rr__rm_rx_feed(&rx, h + 3, 1, &used), -EMSGSIZE);
	assert_true(rx.cap == 0); /* nothing allocated for the claim */
	rr__rm_rx_fini(&rx);
	/* A huge claim is refused the same way. */
	rr__rm_hdr(h, 0x7fffffff, false);
	rr__rm_rx_init(&rx, 1000);
	assert_int_equal(rr__rm_rx_feed(&rx, h, 4, &used), -EMSGSIZE);
	rr__rm_rx_fini(&rx);
}

static void fragments_adding_up_past_max_record_are_refused(void **state)
{
	struct stream s = {0};
	struct rr__rm_rx rx;
	uint8_t data[1000];
	size_t used, off = 0;
	int rc = 0;

	(void)state;
	fill(data, sizeof(data));
	frag(&s, data, 600, false);
	frag(&s, data, 401, true);
	rr__rm_rx_init(&rx, 1000);
	while (off < s.len) {
		rc = rr__rm_rx_feed(&rx, s.p + off, 1, &used);
		if (rc)
			break;
		off += used;
	}
	assert_int_equal(rc, -EMSGSIZE);
	assert_int_equal(off, 600 + 4 + 3); /* at the second header */
	rr__rm_rx_fini(&rx);
	free(s.p);
}

/* Announcing a big fragment allocates only what really arrives. */
static void buffer_grows_with_bytes_not_with_claims(void **state)
{
	struct rr__rm_rx rx;
	uint8_t h[4], body[100] = {0};
	size_t used;

	(void)state;
	rr__rm_hdr(h, 1 << 20, true);
	rr__rm_rx_init(&rx, 2 << 20);
	assert_int_equal(rr__rm_rx_feed(&rx, h, 4, &used), 0);
	assert_int_equal(rr__rm_rx_feed(&rx, body, sizeof(body), &used), 0);
	assert_true(rx.cap <= 4096);
	rr__rm_rx_fini(&rx);
}

static void detached_record_belongs_to_the_caller(void **state)
{
	struct stream s = {0};
	struct rr__rm_rx rx;
	uint8_t data[64], *rec;
	size_t used, len, cap;

	(void)state;
	fill(data, sizeof(data));
	frag(&s, data, 64, true);
	frag(&s, data, 64, true);
	rr__rm_rx_init(&rx, 1000);
	assert_int_equal(rr__rm_rx_feed(&rx, s.p, s.len, &used), 1);
	rec = rr__rm_rx_detach(&rx, &len, &cap);
	assert_int_equal(len, 64);
	assert_true(cap >= len);
	/* The next record must not land in the detached buffer. */
	assert_int_equal(rr__rm_rx_feed(&rx, s.p + used, s.len - used, &used),
			 1);
	assert_memory_equal(rec, data, 64);
	assert_true(rr__rm_rx_record(&rx, &len) != rec);
	free(rec);
	rr__rm_rx_fini(&rx);
	free(s.p);
}

/*
 * A record announcing more than RR_RM_BIG_AT moves into a spare when the
 * pool has one, and goes back to it when given back. With none, it grows
 * with the bytes received (a peer's claim never allocates), and is grown
 * to a spare's size on its way back while the pool has room, so that
 * the next big record finds one.
 */
static void big_record_moves_into_a_spare_and_back(void **state)
{
	uint32_t max = 1 << 20, body = 300000;
	struct rr__spares sp;
	struct stream s = {0};
	struct rr__rm_rx rx;
	uint8_t *data = malloc(body), *spare, *rec;
	size_t used, len, cap;

	(void)state;
	assert_non_null(data);
	fill(data, body);
	frag(&s, data, body, true);
	assert_int_equal(rr__spares_init(&sp, max, 2), 0);
	rr__rm_rx_init(&rx, max);
	rx.big = &sp;
	/* no spare: plain growth; given back, it becomes the pool's */
	assert_int_equal(rr__rm_rx_feed(&rx, s.p, s.len, &used), 1);
	rec = rr__rm_rx_detach(&rx, &len, &cap);
	assert_int_equal(len, body);
	assert_true(cap < max);
	assert_memory_equal(rec, data, body);
	rr__rm_rx_give_back(&rx, rec, cap);
	assert_int_equal(sp.n, 1);
	/* a spare: the record ends up in it, fed in small pieces */
	spare = rr__spares_get(&sp);
	assert_non_null(spare);
	rr__spares_put(&sp, spare);
	for (size_t off = 0; off < s.len; off += used)
		if (rr__rm_rx_feed(&rx, s.p + off,
				   s.len - off < 9000 ? s.len - off : 9000,
				   &used) == 1)
			break;
	rec = rr__rm_rx_detach(&rx, &len, &cap);
	assert_ptr_equal(rec, spare);
	assert_int_equal(cap, max);
	assert_memory_equal(rec, data, body);
	assert_int_equal(sp.n, 0);
	rr__rm_rx_give_back(&rx, rec, cap);
	assert_int_equal(sp.n, 1);
	/* a full pool takes no grown record: it is freed as it is */
	rec = rr__spares_get(&sp);
	rr__spares_put(&sp, malloc(max));
	rr__spares_put(&sp, rec);
	assert_int_equal(sp.n, 2);
	rec = malloc(RR_RM_BIG_AT * 2);
	assert_non_null(rec);
	rr__rm_rx_give_back(&rx, rec, RR_RM_BIG_AT * 2);
	assert_int_equal(sp.n, 2);
	rr__rm_rx_fini(&rx);
	rr__spares_fini(&sp);
	free(data);
	free(s.p);
}

/*
 * A small record's buffer, detached and given back, is the next record's
 * first buffer: a server handing every call to a worker allocates none a
 * call. A record that outgrew it is freed, not kept.
 */
static void small_record_buffer_comes_back_for_the_next(void **state)
{
	struct rr__spares sp;
	struct stream s = {0};
	struct rr__rm_rx rx;
	uint8_t data[3 * RR_RM_SMALL], *rec, *first;
	size_t used, len, cap;

	(void)state;
	fill(data, sizeof(data));
	frag(&s, data, 100, true);
	frag(&s, data, 200, true);
	frag(&s, data, sizeof(data), true);
	assert_int_equal(rr__spares_init(&sp, RR_RM_SMALL, 2), 0);
	rr__rm_rx_init(&rx, 1u << 20);
	rx.small = &sp;
	assert_int_equal(rr__rm_rx_feed(&rx, s.p, s.len, &used), 1);
	first = rr__rm_rx_detach(&rx, &len, &cap);
	assert_int_equal(cap, RR_RM_SMALL);
	rr__rm_rx_give_back(&rx, first, cap);
	assert_int_equal(sp.n, 1);
	/* the next record is read into it */
	assert_int_equal(rr__rm_rx_feed(&rx, s.p + used, s.len - used, &len),
			 1);
	used += len;
	rec = rr__rm_rx_detach(&rx, &len, &cap);
	assert_ptr_equal(rec, first);
	assert_int_equal(len, 200);
	assert_memory_equal(rec, data, 200);
	assert_int_equal(sp.n, 0);
	rr__rm_rx_give_back(&rx, rec, cap);
	/* one that outgrows it keeps its bytes, and is not a spare after */
	assert_int_equal(rr__rm_rx_feed(&rx, s.p + used, s.len - used, &len),
			 1);
	rec = rr__rm_rx_detach(&rx, &len, &cap);
	assert_int_equal(len, sizeof(data));
	assert_memory_equal(rec, data, sizeof(data));
	assert_true(cap > RR_RM_SMALL);
	assert_int_equal(sp.n, 0);
	rr__rm_rx_give_back(&rx, rec, cap);
	assert_int_equal(sp.n, 0);
	rr__rm_rx_fini(&rx);
	rr__spares_fini(&sp);
	free(s.p);
}

/*
 * Feeds s[0..len) byte by byte, skipping what is refused; returns the
 * feed result that ended the first record (1 or 2) and sets *off.
 */
static int feed_skipping(struct rr__rm_rx *rx, const struct stream *s,
			 size_t start, size_t *off)
{
	size_t at = start, used;
	int rc = 0;

	while (at < s->len) {
		rc = rr__rm_rx_feed(rx, s->p + at, 1, &used);
		at += used;
		if (rc == -EMSGSIZE) {
			rr__rm_rx_skip(rx);
			continue;
		}
		assert_true(rc >= 0);
		if (rc)
			break;
	}
	*off = at;
	return rc;
}

/*
 * A record over max_record can be skipped: its bytes are dropped but its
 * first 8 kept (a client fails just that call), and the record after it
 * arrives intact, whether the refusal came at the first fragment or at a
 * later one.
 */
static void oversized_record_is_skipped_keeping_its_head(void **state)
{
	struct stream s = {0};
	struct rr__rm_rx rx;
	uint8_t *data = malloc(5000);
	const uint8_t *p;
	size_t off = 0, len;

	(void)state;
	assert_non_null(data);
	fill(data, 5000);
	frag(&s, data, 3000, true); /* refused at its only fragment */
	frag(&s, data, 600, false); /* refused at its second fragment */
	frag(&s, data + 600, 500, false);
	frag(&s, NULL, 0, true);
	rr__rm_rx_init(&rx, 1000);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(feed_skipping(&rx, &s, off, &off), 2);
		p = rr__rm_rx_head(&rx, &len);
		assert_int_equal(len, RR_RM_HEAD_LEN);
		assert_memory_equal(p, data, RR_RM_HEAD_LEN);
		rr__rm_rx_next(&rx);
	}
	assert_int_equal(off, s.len);
	assert_true(rx.cap <= 4096); /* nothing stored for the big one */
	rr__rm_rx_fini(&rx);
	free(data);
	free(s.p);
}

static void record_after_a_skipped_one_arrives_intact(void **state)
{
	struct stream s = {0};
	struct rr__rm_rx rx;
	uint8_t data[900];
	size_t off, len;
	const uint8_t *p;

	(void)state;
	fill(data, sizeof(data));
	frag(&s, data, 700, false);
	frag(&s, data, 700, true); /* 1400 > 1000: refused, skipped */
	frag(&s, data, 900, true);
	rr__rm_rx_init(&rx, 1000);
	assert_int_equal(feed_skipping(&rx, &s, 0, &off), 2);
	p = rr__rm_rx_head(&rx, &len);
	assert_int_equal(len, 8);
	assert_memory_equal(p, data, 8);
	rr__rm_rx_next(&rx);
	assert_int_equal(feed_skipping(&rx, &s, off, &off), 1);
	assert_int_equal(off, s.len);
	p = rr__rm_rx_record(&rx, &len);
	assert_int_equal(len, 900);
	assert_memory_equal(p, data, 900);
	rr__rm_rx_fini(&rx);
	free(s.p);
}

/* ------------------------------------------------------ output queue */

static size_t drain(int fd, uint8_t *dst, size_t cap)
{
	size_t got = 0;

	for (;;) {
		ssize_t n = recv(fd, dst + got, cap - got, MSG_DONTWAIT);

		if (n <= 0)
			return got;
		got += (size_t)n;
	}
}

/*
 * A send far bigger than the socket buffer: the rest is queued (copied:
 * the caller's buffer is scribbled on right away), and flushing while the
 * peer reads delivers every byte once, in order, after a later send.
 */
static void partial_send_is_queued_and_flushed_in_order(void **state)
{
	size_t big = 4 << 20, cap = big + 16, got = 0;
	uint8_t *src = malloc(big), *dst = malloc(cap), tail[8] = "ABCDEFGH";
	struct rr__outq q = {0};
	struct iovec iov[2];
	int sv[2], small = 4096;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	fill(src, big);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	iov[0] = (struct iovec){src, big / 2};
	iov[1] = (struct iovec){src + big / 2, big / 2};
	assert_int_equal(rr__outq_send(sv[0], &q, iov, 2), 0);
	assert_non_null(q.head);
	assert_true(q.bytes > 0 && q.bytes <= big);
	memset(src, 0, big);
	/* Queued data goes first: this one is queued behind it. */
	iov[0] = (struct iovec){tail, sizeof(tail)};
	assert_int_equal(rr__outq_send(sv[0], &q, iov, 1), 0);
	while (q.head) {
		struct pollfd p = {.fd = sv[0], .events = POLLOUT};

		got += drain(sv[1], dst + got, cap - got);
		poll(&p, 1, 1000);
		assert_int_equal(rr__outq_flush(sv[0], &q), 0);
	}
	assert_int_equal(q.bytes, 0);
	while (got < big + sizeof(tail)) {
		size_t n = drain(sv[1], dst + got, cap - got);

		if (!n)
			break;
		got += n;
	}
	assert_int_equal(got, big + sizeof(tail));
	fill(src, big);
	assert_memory_equal(dst, src, big);
	assert_memory_equal(dst + big, tail, sizeof(tail));
	rr__outq_free(&q);
	close(sv[0]);
	close(sv[1]);
	free(src);
	free(dst);
}

/* Sends iov whole through q, the peer reading: rounds until q is empty. */
static void send_through(int wfd, int rfd, struct rr__outq *q,
			 const struct iovec *iov, int n, uint8_t *dst,
			 size_t cap)
{
	assert_int_equal(rr__outq_send(wfd, q, iov, n), 0);
	while (q->head) {
		struct pollfd p = {.fd = wfd, .events = POLLOUT};

		drain(rfd, dst, cap);
		poll(&p, 1, 1000);
		assert_int_equal(rr__outq_flush(wfd, q), 0);
	}
	drain(rfd, dst, cap);
}

/*
 * A client's queue (spare_max its largest record) keeps what it queued:
 * once a record the socket took only part of has been sent, records of
 * any size up to spare_max that the socket again takes only part of are
 * queued without an allocation, and the queue keeps at most OUTQ_SPARES
 * entries. A queue without spare_max keeps none.
 */
static void partial_sends_reuse_kept_entries(void **state)
{
	static const size_t sizes[] = {1 << 20, 300 << 10, 64 << 10, 5000};
	size_t big = 1 << 20;
	uint8_t *src = calloc(1, big), *dst = malloc(big);
	struct rr__outq q = {.spare_max = big}, none = {0};
	struct rr_alloc_inject_stats st;
	int sv[2], small = 4096;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	send_through(sv[0], sv[1], &q, &(struct iovec){src, big}, 1, dst, big);
	assert_int_equal(q.nspares, 1);
	rr_alloc_inject_count();
	for (int r = 0; r < 3; r++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			send_through(sv[0], sv[1], &q,
				     &(struct iovec){src, sizes[i]}, 1, dst,
				     big);
	rr_alloc_inject_off();
	rr_alloc_inject_stats(&st);
	assert_int_equal(st.attempts, 0);
	assert_true(q.nspares >= 1 && q.nspares <= OUTQ_SPARES);
	rr__outq_free(&q);
	assert_null(q.spares);
	send_through(sv[0], sv[1], &none, &(struct iovec){src, big}, 1, dst,
		     big);
	assert_int_equal(none.nspares, 0);
	close(sv[0]);
	close(sv[1]);
	free(src);
	free(dst);
}

/* A lender's side of a loan: its buffer, and what the queue did with it. */
struct lender {
	uint8_t *buf;	/* lent, or still the lender's */
	uint8_t *spare; /* what swap gives the lender instead */
	bool may_swap;	/* whether the lender can do without buf */
	int swaps, backs;
	void *back; /* the last buffer given back */
};

static bool lender_swap(void *arg)
{
	struct lender *l = arg;

	if (!l->may_swap)
		return false;
	l->swaps++;
	return true;
}

static void lender_back(void *arg, void *buf)
{
	struct lender *l = arg;

	l->backs++;
	l->back = buf;
}

/* A record as a server sends one: header, the lent bulk, padding. */
static void record_iov(struct iovec iov[3], uint8_t *hdr, size_t hlen,
		       struct lender *l, size_t blen)
{
	static uint8_t pad[3];

	iov[0] = (struct iovec){hdr, hlen};
	iov[1] = (struct iovec){l->buf, blen};
	iov[2] = (struct iovec){pad, sizeof(pad)};
}

/* Reads all of fd that q still owes it, flushing q meanwhile. */
static size_t drain_all(int rfd, int wfd, struct rr__outq *q, uint8_t *dst,
			size_t cap)
{
	size_t got = 0;

	while (q->head) {
		struct pollfd p = {.fd = wfd, .events = POLLOUT};

		got += drain(rfd, dst + got, cap - got);
		poll(&p, 1, 1000);
		assert_int_equal(rr__outq_flush(wfd, q), 0);
	}
	for (size_t n = 1; n && got < cap;)
		got += (n = drain(rfd, dst + got, cap - got));
	return got;
}

/*
 * A lent piece is queued by reference, not copied: the bytes that reach
 * the peer are the lent buffer's as it is when sent, and the buffer is
 * given back exactly once, after its last byte left.
 */
static void lent_piece_is_sent_from_the_lenders_buffer(void **state)
{
	size_t big = 2 << 20, cap = big + 64, got;
	uint8_t hdr[12] = "HEADERHEADER", *dst = malloc(cap);
	struct lender l = {.buf = malloc(big), .may_swap = true};
	struct rr__outq q = {.give_back = lender_back, .arg = &l};
	struct rr__outq_loan loan = {1, NULL, lender_swap, &l};
	struct iovec iov[3];
	int sv[2], small = 4096;

	(void)state;
	assert_non_null(l.buf);
	assert_non_null(dst);
	loan.buf = l.buf;
	fill(l.buf, big);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	record_iov(iov, hdr, sizeof(hdr), &l, big);
	assert_int_equal(rr__outq_send_lent(sv[0], &q, iov, 3, &loan), 0);
	assert_int_equal(l.swaps, 1);
	assert_int_equal(l.backs, 0);
	/* kept by reference: what the buffer holds when sent is what goes */
	l.buf[big - 1] ^= 0xff;
	got = drain_all(sv[1], sv[0], &q, dst, cap);
	assert_int_equal(got, sizeof(hdr) + big + 3);
	assert_memory_equal(dst, hdr, sizeof(hdr));
	assert_memory_equal(dst + sizeof(hdr), l.buf, big);
	assert_int_equal(l.backs, 1);
	assert_ptr_equal(l.back, l.buf);
	rr__outq_free(&q);
	assert_int_equal(l.backs, 1);
	close(sv[0]);
	close(sv[1]);
	free(l.buf);
	free(dst);
}

/* A lender that cannot do without its buffer gets it copied instead. */
static void refused_loan_is_copied(void **state)
{
	uint8_t hdr[4] = "HDR!", bulk[64], dst[128];
	struct lender l = {.buf = bulk};
	struct rr__outq q = {.give_back = lender_back, .arg = &l};
	struct rr__outq_loan loan = {1, bulk, lender_swap, &l};
	struct iovec iov[3];
	int sv[2];

	(void)state;
	fill(bulk, sizeof(bulk));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	record_iov(iov, hdr, sizeof(hdr), &l, sizeof(bulk));
	assert_int_equal(rr__outq_put_lent(&q, iov, 3, &loan), 0);
	assert_int_equal(q.bytes, sizeof(hdr) + sizeof(bulk) + 3);
	memset(bulk, 0, sizeof(bulk)); /* ours again: the queue has a copy */
	assert_int_equal(drain_all(sv[1], sv[0], &q, dst, sizeof(dst)),
			 sizeof(hdr) + sizeof(bulk) + 3);
	fill(bulk, sizeof(bulk));
	assert_memory_equal(dst + sizeof(hdr), bulk, sizeof(bulk));
	assert_int_equal(l.backs, 0);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Out of memory while queueing a record with a loan: nothing is queued,
 * and a buffer already lent goes back, whichever allocation failed.
 */
static void loan_out_of_memory_queues_nothing_and_gives_back(void **state)
{
	uint8_t hdr[4] = "HDR!", bulk[64];

	(void)state;
	for (uint64_t nth = 1; nth <= 3; nth++) {
		struct lender l = {.buf = bulk, .may_swap = true};
		struct rr__outq q = {.give_back = lender_back, .arg = &l};
		struct rr__outq_loan loan = {1, bulk, lender_swap, &l};
		struct iovec iov[3];

		record_iov(iov, hdr, sizeof(hdr), &l, sizeof(bulk));
		rr_alloc_inject_fail_nth(nth);
		assert_int_equal(rr__outq_put_lent(&q, iov, 3, &loan), -ENOMEM);
		rr_alloc_inject_off();
		assert_null(q.head);
		assert_int_equal(q.bytes, 0);
		assert_int_equal(l.backs, l.swaps);
		if (l.backs)
			assert_ptr_equal(l.back, bulk);
	}
}

static void send_to_a_closed_peer_fails_without_sigpipe(void **state)
{
	struct rr__outq q = {0};
	uint8_t b[16] = {0};
	struct iovec iov = {b, sizeof(b)};
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	assert_int_equal(rr__outq_send(sv[0], &q, &iov, 1), -EPIPE);
	assert_null(q.head);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			header_word_carries_the_last_bit_and_the_length),
		cmocka_unit_test(
			one_fragment_record_arrives_whole_or_byte_by_byte),
		cmocka_unit_test(many_small_fragments_reassemble_in_order),
		cmocka_unit_test(zero_length_fragments_are_legal_anywhere),
		cmocka_unit_test(empty_record_is_a_record_of_length_zero),
		cmocka_unit_test(endless_empty_fragments_are_refused),
		cmocka_unit_test(
			back_to_back_records_are_returned_one_at_a_time),
		cmocka_unit_test(record_of_exactly_max_record_is_accepted),
		cmocka_unit_test(
			fragment_over_max_record_is_refused_at_its_header),
		cmocka_unit_test(
			fragments_adding_up_past_max_record_are_refused),
		cmocka_unit_test(buffer_grows_with_bytes_not_with_claims),
		cmocka_unit_test(detached_record_belongs_to_the_caller),
		cmocka_unit_test(big_record_moves_into_a_spare_and_back),
		cmocka_unit_test(small_record_buffer_comes_back_for_the_next),
		cmocka_unit_test(partial_sends_reuse_kept_entries),
		cmocka_unit_test(oversized_record_is_skipped_keeping_its_head),
		cmocka_unit_test(record_after_a_skipped_one_arrives_intact),
		cmocka_unit_test(partial_send_is_queued_and_flushed_in_order),
		cmocka_unit_test(send_to_a_closed_peer_fails_without_sigpipe),
		cmocka_unit_test(lent_piece_is_sent_from_the_lenders_buffer),
		cmocka_unit_test(refused_loan_is_copied),
		cmocka_unit_test(
			loan_out_of_memory_queues_nothing_and_gives_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
