// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The FUSE adapter's parts that need no mount (src/fuse): the node table,
 * whose lookup counts bound its memory and whose ids must never name a
 * wrong handle; the write log, whose bytes are what a restarted server
 * gets again; and the -o list.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuse/fpriv.h"

static struct nfsc_fh fh_of(uint8_t tag)
{
	struct nfsc_fh fh = {.len = 12};

	memset(fh.data, 0xa5, fh.len);
	fh.data[11] = tag;
	return fh;
}

/* The same handle twice is one node; FORGET of both frees it. */
static void a_node_lives_while_the_kernel_holds_it(void **state)
{
	struct nfsc_fh root = fh_of(0), a = fh_of(1), got;
	struct ftable t;
	uint64_t id1, id2, id3;

	(void)state;
	assert_int_equal(rr__ftab_init(&t, &root), 0);
	assert_int_equal(rr__ftab_ref(&t, &a, &id1), 0);
	assert_int_equal(rr__ftab_ref(&t, &a, &id2), 0);
	assert_int_equal(id1, id2);
	assert_int_not_equal(id1, 1);
	assert_int_equal(rr__ftab_count(&t), 2);
	rr__ftab_forget(&t, id1, 1);
	assert_int_equal(rr__ftab_fh(&t, id1, &got), 0);
	assert_memory_equal(got.data, a.data, a.len);
	rr__ftab_forget(&t, id1, 1);
	assert_int_equal(rr__ftab_fh(&t, id1, &got), -ESTALE);
	assert_int_equal(rr__ftab_count(&t), 1);
	/* a late FORGET of the old id cannot touch the new node */
	assert_int_equal(rr__ftab_ref(&t, &a, &id3), 0);
	assert_int_not_equal(id3, id1);
	rr__ftab_forget(&t, id1, 5);
	assert_int_equal(rr__ftab_fh(&t, id3, &got), 0);
	rr__ftab_fini(&t);
}

/* FORGET names the root too (batch forgets); it stays. */
static void the_root_is_never_forgotten(void **state)
{
	struct nfsc_fh root = fh_of(0), got;
	struct ftable t;
	uint64_t id;

	(void)state;
	assert_int_equal(rr__ftab_init(&t, &root), 0);
	rr__ftab_forget(&t, 1, 1000);
	assert_int_equal(rr__ftab_fh(&t, 1, &got), 0);
	assert_int_equal(rr__ftab_ref(&t, &root, &id), 0);
	assert_int_equal(id, 1);
	rr__ftab_fini(&t);
}

/* Memory follows the kernel: many nodes made and forgotten leave none. */
static void many_nodes_forgotten_leave_the_root(void **state)
{
	struct nfsc_fh root = fh_of(0);
	struct ftable t;
	uint64_t ids[5000];

	(void)state;
	assert_int_equal(rr__ftab_init(&t, &root), 0);
	for (uint32_t i = 0; i < 5000; i++) {
		struct nfsc_fh fh = {.len = 8};

		memcpy(fh.data, &i, sizeof(i));
		assert_int_equal(rr__ftab_ref(&t, &fh, &ids[i]), 0);
	}
	assert_int_equal(rr__ftab_count(&t), 5001);
	for (uint32_t i = 0; i < 5000; i++)
		rr__ftab_forget(&t, ids[i], 1);
	assert_int_equal(rr__ftab_count(&t), 1);
	rr__ftab_fini(&t);
}

/* Close-to-open: the same mtime, ctime and size keep the cache. */
static void change_attributes_decide_keep_cache(void **state)
{
	struct nfsc_fh root = fh_of(0), one = fh_of(1);
	struct ftable t;
	struct stat st = {.st_size = 10};
	uint64_t id;

	(void)state;
	assert_int_equal(rr__ftab_init(&t, &root), 0);
	assert_int_equal(rr__ftab_ref(&t, &one, &id), 0);
	st.st_mtim.tv_sec = 100;
	assert_false(rr__ftab_same_change(&t, id, &st)); /* nothing known */
	assert_true(rr__ftab_same_change(&t, id, &st));
	st.st_mtim.tv_nsec = 1; /* written in the same second */
	assert_false(rr__ftab_same_change(&t, id, &st));
	st.st_ctim.tv_sec = 5;
	assert_false(rr__ftab_same_change(&t, id, &st));
	st.st_size = 11;
	assert_false(rr__ftab_same_change(&t, id, &st));
	assert_true(rr__ftab_same_change(&t, id, &st));
	rr__ftab_fini(&t);
}

static const struct wlog *const *one(const struct wlog *l)
{
	static const struct wlog *p[1];

	p[0] = l;
	return p;
}

/* The newest write of each byte is what goes out again. */
static void the_log_gives_the_last_bytes_written(void **state)
{
	struct wlog l = {0};
	char buf[16];

	(void)state;
	assert_int_equal(rr__wlog_add(&l, 0, "aaaaaaaa", 8, NULL), 0);
	assert_int_equal(rr__wlog_add(&l, 4, "bbbbbbbb", 8, NULL), 0);
	assert_int_equal(rr__wlog_add(&l, 2, "cc", 2, NULL), 0);
	assert_int_equal(l.bytes, 18);
	assert_int_equal(rr__wlog_fill(one(&l), 1, buf, 12, 0), 12);
	assert_memory_equal(buf, "aaccbbbbbbbb", 12);
	assert_int_equal(rr__wlog_fill(one(&l), 1, buf, 3, 5), 3);
	assert_memory_equal(buf, "bbb", 3);
	/* a byte nobody logged cannot be sent again: say so, send nothing */
	assert_int_equal(rr__wlog_fill(one(&l), 1, buf, 13, 0), -EIO);
	/* over two logs, the later one's bytes win */
	{
		struct wlog newer = {0};
		const struct wlog *both[2] = {&l, &newer};

		assert_int_equal(rr__wlog_add(&newer, 6, "dd", 2, NULL), 0);
		assert_int_equal(rr__wlog_fill(both, 2, buf, 12, 0), 12);
		assert_memory_equal(buf, "aaccbbddbbbb", 12);
		assert_int_equal(rr__wlog_fill(both, 2, buf, 13, 0), -EIO);
		rr__wlog_clear(&newer);
	}
	rr__wlog_clear(&l);
	assert_null(l.b);
	assert_int_equal(l.n, 0);
	assert_int_equal(l.bytes, 0);
	assert_int_equal(rr__wlog_fill(one(&l), 1, buf, 1, 0), -EIO);
}

static void options_split_ours_from_fuses(void **state)
{
	struct rr_fuse_opts o;
	char *rest = NULL;
	const char *bad;

	(void)state;
	assert_int_equal(rr__fuse_opts_parse(NULL, &o, &rest, &bad), 0);
	assert_true(o.acregmin == 3 && o.acregmax == 60);
	assert_true(o.acdirmin == 30 && o.acdirmax == 60 && !o.noac);
	assert_string_equal(rest, "");
	free(rest);
	assert_int_equal(rr__fuse_opts_parse("allow_other,actimeo=7,noac,"
					     "threads=4,ro,acdirmax=9",
					     &o, &rest, &bad),
			 0);
	assert_true(o.acregmin == 7 && o.acregmax == 7 && o.acdirmin == 7);
	assert_true(o.acdirmax == 9 && o.noac && o.max_threads == 4);
	assert_string_equal(rest, "allow_other,ro");
	free(rest);
	assert_int_equal(rr__fuse_opts_parse("ro,acregmin=x", &o, &rest, &bad),
			 -EINVAL);
	assert_string_equal(bad, "acregmin=x");
	assert_int_equal(rr__fuse_opts_parse("acregmin=70", &o, &rest, &bad),
			 -EINVAL);
	assert_int_equal(rr__fuse_opts_parse("threads=0", &o, &rest, &bad),
			 -EINVAL);
}

/* nfs(5)'s defaults: hard, so no call ever times out; soft: timeo. */
static void hard_soft_and_sizes_as_nfs5_says(void **state)
{
	struct rr_fuse_opts o;
	char *rest = NULL;
	const char *bad;

	(void)state;
	assert_int_equal(rr__fuse_opts_parse("", &o, &rest, &bad), 0);
	assert_false(o.soft);
	assert_int_equal(rr__fuse_timeout_ms(&o), -1);
	assert_int_equal(o.readahead_kb, RR_FUSE_READAHEAD_AUTO);
	assert_int_equal(rr__fuse_readahead_kb(&o, 1u << 20), 15 * 1024);
	free(rest);
	assert_int_equal(rr__fuse_opts_parse("soft,timeo=15,retrans=3,"
					     "rsize=65536,wsize=32768,"
					     "readahead=512,allow_other",
					     &o, &rest, &bad),
			 0);
	assert_true(o.soft && o.timeo == 15 && o.retrans == 3);
	assert_int_equal(rr__fuse_timeout_ms(&o), 6000); /* 1.5 s x 4 */
	assert_true(o.rsize == 65536 && o.wsize == 32768);
	assert_int_equal(rr__fuse_readahead_kb(&o, 1u << 20), 512);
	assert_string_equal(rest, "allow_other");
	free(rest);
	assert_int_equal(rr__fuse_opts_parse("soft,hard", &o, &rest, &bad), 0);
	assert_false(o.soft); /* the last one says, as mount(8) */
	free(rest);
	assert_int_equal(rr__fuse_opts_parse("timeo=0", &o, &rest, &bad),
			 -EINVAL);
	assert_int_equal(rr__fuse_opts_parse("rsize=100", &o, &rest, &bad),
			 -EINVAL);
	assert_int_equal(rr__fuse_opts_parse("hard=1", &o, &rest, &bad),
			 -EINVAL);
	assert_string_equal(bad, "hard=1");
	assert_int_equal(o.lookupcache, RR_FUSE_LC_ALL);
	assert_int_equal(
		rr__fuse_opts_parse("lookupcache=pos", &o, &rest, &bad), 0);
	assert_int_equal(o.lookupcache, RR_FUSE_LC_POS);
	free(rest);
	assert_int_equal(
		rr__fuse_opts_parse("lookupcache=none", &o, &rest, &bad), 0);
	assert_int_equal(o.lookupcache, RR_FUSE_LC_NONE);
	free(rest);
	assert_int_equal(
		rr__fuse_opts_parse("lookupcache=some", &o, &rest, &bad),
		-EINVAL);
}

/*
 * After a COMMIT the log's memory takes the next writes: none is made.
 * And bytes once logged never move while later writes come in: a
 * write-behind WRITE is sending them from there.
 */
static void a_committed_log_takes_the_next_writes_in_its_memory(void **state)
{
	static char big[WLOG_BLK - 2];
	struct wlog l = {0};
	struct wlog_ent *e;
	const void *first, *at;
	uint8_t *blk;
	char buf[8];

	(void)state;
	memset(big, 'x', sizeof(big));
	assert_int_equal(rr__wlog_add(&l, 0, big, sizeof(big), &first), 0);
	assert_int_equal(rr__wlog_add(&l, sizeof(big), "yyyy", 4, &at), 0);
	assert_int_equal(l.nb, 2); /* no room left in the first block */
	assert_ptr_equal(at, l.b[1].data);
	assert_ptr_equal(first, l.b[0].data);
	assert_memory_equal(first, big, sizeof(big));
	assert_int_equal(rr__wlog_fill(one(&l), 1, buf, 6, sizeof(big) - 2), 6);
	assert_memory_equal(buf, "xxyyyy", 6);
	blk = l.b[0].data;
	e = l.e;
	rr__wlog_reset(&l);
	assert_int_equal(l.bytes, 0);
	assert_int_equal(rr__wlog_fill(one(&l), 1, buf, 1, 0), -EIO);
	for (int i = 0; i < 10; i++)
		assert_int_equal(
			rr__wlog_add(&l, 8u * (unsigned)i, "abcdefgh", 8, NULL),
			0);
	assert_int_equal(l.nb, 2);
	assert_ptr_equal(l.b[0].data, blk);
	assert_ptr_equal(l.e, e);
	assert_int_equal(rr__wlog_fill(one(&l), 1, buf, 8, 8), 8);
	assert_memory_equal(buf, "abcdefgh", 8);
	rr__wlog_clear(&l);
}

/* Overlapping WRITEs in flight together could land in either order. */
static void write_behind_keeps_overlapping_writes_in_order(void **state)
{
	struct nfsc_fh root = fh_of(0);
	struct ftable t;
	uint64_t stamp;

	(void)state;
	assert_int_equal(rr__ftab_init(&t, &root), 0);
	stamp = rr__ftab_wb_stamp(&t);
	assert_int_equal(rr__ftab_wb_begin(&t, 1, 0, 10), 0);
	assert_true(rr__ftab_wb_since(&t, 1, stamp));
	/* beside it: goes at once */
	assert_int_equal(rr__ftab_wb_begin(&t, 1, 10, 10), 0);
	assert_int_equal(rr__ftab_wb_begin(&t, 42, 0, 10), -ESTALE);
	rr__ftab_wb_end(&t, 1, 0, 10);
	rr__ftab_wb_end(&t, 1, 10, 10);
	/* over what ended: goes too */
	assert_int_equal(rr__ftab_wb_begin(&t, 1, 5, 10), 0);
	rr__ftab_wb_end(&t, 1, 5, 10);
	rr__ftab_wb_drain(&t, 1); /* none in flight: returns */
	assert_true(rr__ftab_wb_since(&t, 1, stamp));
	assert_false(rr__ftab_wb_since(&t, 1, rr__ftab_wb_stamp(&t)));
	rr__ftab_fini(&t);
}

struct wb_race {
	struct ftable *t;
	pthread_mutex_t mu;
	int step; /* 1: the second writer is about to begin; 2: it began */
};

static void *second_writer(void *arg)
{
	struct wb_race *r = arg;

	pthread_mutex_lock(&r->mu);
	r->step = 1;
	pthread_mutex_unlock(&r->mu);
	assert_int_equal(rr__ftab_wb_begin(r->t, 1, 8, 8), 0);
	pthread_mutex_lock(&r->mu);
	r->step = 2;
	pthread_mutex_unlock(&r->mu);
	rr__ftab_wb_end(r->t, 1, 8, 8);
	return NULL;
}

/*
 * A write over one in flight waits for it. The first is ended only
 * after the second has had every chance to begin (the test checks the
 * second has not); if wb_begin did not wait, step would be 2.
 */
static void an_overlapping_write_waits_for_the_one_in_flight(void **state)
{
	struct nfsc_fh root = fh_of(0);
	struct ftable t;
	struct wb_race r = {.t = &t, .mu = PTHREAD_MUTEX_INITIALIZER};
	pthread_t th;
	int step;

	(void)state;
	assert_int_equal(rr__ftab_init(&t, &root), 0);
	assert_int_equal(rr__ftab_wb_begin(&t, 1, 0, 10), 0);
	assert_int_equal(pthread_create(&th, NULL, second_writer, &r), 0);
	/* wait until the second thread is in (or past) wb_begin's wait */
	for (;;) {
		pthread_mutex_lock(&t.mu);
		pthread_mutex_lock(&r.mu);
		step = r.step;
		pthread_mutex_unlock(&r.mu);
		pthread_mutex_unlock(&t.mu);
		if (step)
			break;
		sched_yield();
	}
	/* it holds t.mu only while not waiting: take it twice, then look */
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&t.mu);
		pthread_mutex_unlock(&t.mu);
		sched_yield();
	}
	pthread_mutex_lock(&r.mu);
	step = r.step;
	pthread_mutex_unlock(&r.mu);
	assert_int_equal(step, 1);
	rr__ftab_wb_end(&t, 1, 0, 10);
	pthread_join(th, NULL);
	assert_int_equal(r.step, 2);
	rr__ftab_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_node_lives_while_the_kernel_holds_it),
		cmocka_unit_test(the_root_is_never_forgotten),
		cmocka_unit_test(many_nodes_forgotten_leave_the_root),
		cmocka_unit_test(change_attributes_decide_keep_cache),
		cmocka_unit_test(the_log_gives_the_last_bytes_written),
		cmocka_unit_test(
			a_committed_log_takes_the_next_writes_in_its_memory),
		cmocka_unit_test(
			write_behind_keeps_overlapping_writes_in_order),
		cmocka_unit_test(
			an_overlapping_write_waits_for_the_one_in_flight),
		cmocka_unit_test(options_split_ours_from_fuses),
		cmocka_unit_test(hard_soft_and_sizes_as_nfs5_says),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
