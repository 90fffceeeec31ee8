/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The client library's locks (rr_nfs_lock, rr_nfs_unlock,
 * rr_nfs_testlock) against nfsrdmad's NLM version 4: two mounts are two
 * clients contending for one file's ranges, as two hosts would. One
 * server for every case; each case locks its own file.
 *
 * A waiter is shown to wait by the server's count of NLM calls: it has
 * asked again (been refused at least twice) while the holder holds, and
 * returns once the holder lets go. argv[1] is the nfsrdmad binary.
 */
#include <rpcrdma/nfs3.h>

#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static const char *daemon_path;

struct fx {
	char top[PATH_MAX], exp[PATH_MAX], state[PATH_MAX], exports[PATH_MAX];
	char url[PATH_MAX + 128];
	struct rr_t_daemon d;
	struct rr_nfs *a, *b; /* two clients */
};

static struct fx fx;

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static struct rr_nfs *mount_one(const char *url)
{
	struct rr_nfs_opts o = {.timeout_ms = 10000};
	struct rr_nfs *n = NULL;

	if (rr_nfs_mount(url, &o, &n)) {
		fprintf(stderr, "mount %s: %s\n", url, rr_nfs_error());
		fail();
	}
	return n;
}

static int setup(void **state)
{
	struct fx *f = &fx;
	char line[PATH_MAX + 64];
	const char *extra[] = {"--exports",  f->exports, "--grace", "0",
			       "--nlm-port", "0",	 NULL};

	snprintf(f->top, sizeof(f->top), "/tmp/rr-nlmc-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->exp, sizeof(f->exp), "%s/exp", f->top);
	snprintf(f->state, sizeof(f->state), "%s/state", f->top);
	snprintf(f->exports, sizeof(f->exports), "%s/exports", f->top);
	assert_int_equal(mkdir(f->exp, 0777), 0);
	snprintf(line, sizeof(line), "%s 127.0.0.1(rw,no_root_squash)\n",
		 f->exp);
	write_file(f->exports, line);
	assert_int_equal(rr_t_daemon_start(&f->d, daemon_path, NULL, f->state,
					   extra, NULL),
			 0);
	assert_true(f->d.nlm != 0);
	snprintf(f->url, sizeof(f->url),
		 "nfs://127.0.0.1%s?proto=tcp&nfsport=%u&mountport=%u"
		 "&nlmport=%u",
		 f->exp, f->d.tcp, f->d.mount, f->d.nlm);
	f->a = mount_one(f->url);
	f->b = mount_one(f->url);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[PATH_MAX + 16];

	rr_nfs_umount(f->a);
	rr_nfs_umount(f->b);
	assert_int_equal(rr_t_daemon_stop(&f->d), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->top);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static struct rr_nfs_file *open_on(struct rr_nfs *n, const char *name)
{
	struct rr_nfs_file *f = NULL;

	assert_int_equal(rr_nfs_open(n, name, O_RDWR | O_CREAT, 0666, &f), 0);
	return f;
}

static struct rr_nfs_lock rng(int type, uint64_t start, uint64_t len)
{
	return (struct rr_nfs_lock){.type = type, .start = start, .len = len};
}

static int try(struct rr_nfs_file *f, int type, uint64_t start, uint64_t len)
{
	struct rr_nfs_lock l = rng(type, start, len);

	return rr_nfs_lock(f, &l, 0);
}

static int unlock(struct rr_nfs_file *f, uint64_t start, uint64_t len)
{
	struct rr_nfs_lock l = rng(F_UNLCK, start, len);

	return rr_nfs_unlock(f, &l);
}

static void two_clients_contend_as_fcntl_says(void **state)
{
	struct fx *fx_ = *state;
	struct rr_nfs_file *fa = open_on(fx_->a, "contend");
	struct rr_nfs_file *fb = open_on(fx_->b, "contend");

	assert_int_equal(try(fa, F_WRLCK, 0, 100), 0);
	/* the other client: refused, shared or exclusive, as fcntl's EAGAIN */
	assert_int_equal(try(fb, F_RDLCK, 50, 10), -EAGAIN);
	assert_int_equal(try(fb, F_WRLCK, 99, 1), -EAGAIN);
	/* beside it is free */
	assert_int_equal(try(fb, F_WRLCK, 100, 10), 0);
	/* the owner itself may take its range again, and change its type */
	assert_int_equal(try(fa, F_RDLCK, 0, 100), 0);
	assert_int_equal(try(fb, F_RDLCK, 0, 50), 0);
	assert_int_equal(try(fb, F_WRLCK, 0, 50), -EAGAIN);
	/* unlocking a hole splits A's range: the hole is B's to take */
	assert_int_equal(unlock(fb, 0, 50), 0);
	assert_int_equal(try(fa, F_WRLCK, 0, 100), 0);
	assert_int_equal(unlock(fa, 40, 10), 0);
	assert_int_equal(try(fb, F_WRLCK, 45, 1), 0);
	assert_int_equal(try(fb, F_WRLCK, 30, 1), -EAGAIN);
	/* the whole file: start 0, len 0 */
	assert_int_equal(unlock(fa, 0, 0), 0);
	assert_int_equal(try(fb, F_WRLCK, 0, 0), 0);
	assert_int_equal(try(fa, F_RDLCK, 1u << 30, 1), -EAGAIN);
	assert_int_equal(unlock(fb, 0, 0), 0);
	/* locks stay after close, as NLM keeps them for the owner */
	assert_int_equal(try(fa, F_WRLCK, 7, 1), 0);
	assert_int_equal(rr_nfs_close(fa), 0);
	assert_int_equal(try(fb, F_WRLCK, 7, 1), -EAGAIN);
	fa = open_on(fx_->a, "contend");
	assert_int_equal(unlock(fa, 0, 0), 0);
	assert_int_equal(try(fb, F_WRLCK, 7, 1), 0);
	rr_nfs_close(fa);
	rr_nfs_close(fb);
}

static void owners_of_one_client_are_apart(void **state)
{
	struct fx *fx_ = *state;
	struct rr_nfs_file *f = open_on(fx_->a, "owners");
	struct rr_nfs_lock one = {.type = F_WRLCK, .len = 10, .owner = 1};
	struct rr_nfs_lock two = {.type = F_WRLCK, .len = 10, .owner = 2};

	assert_int_equal(rr_nfs_lock(f, &one, 0), 0);
	assert_int_equal(rr_nfs_lock(f, &two, 0), -EAGAIN);
	assert_int_equal(rr_nfs_unlock(f, &one), 0);
	assert_int_equal(rr_nfs_lock(f, &two, 0), 0);
	assert_int_equal(rr_nfs_unlock(f, &two), 0);
	rr_nfs_close(f);
}

static void testlock_names_the_holder(void **state)
{
	struct fx *fx_ = *state;
	struct rr_nfs_file *fa = open_on(fx_->a, "test");
	struct rr_nfs_file *fb = open_on(fx_->b, "test");
	struct rr_nfs_lock held = {
		.type = F_WRLCK, .start = 1000, .len = 24, .pid = 4242};
	struct rr_nfs_lock t = rng(F_RDLCK, 1010, 1);

	assert_int_equal(rr_nfs_lock(fa, &held, 0), 0);
	assert_int_equal(rr_nfs_testlock(fb, &t), 0);
	assert_int_equal(t.type, F_WRLCK);
	assert_int_equal(t.start, 1000);
	assert_int_equal(t.len, 24);
	assert_int_equal(t.pid, 4242);
	/* free beside it, and for the holder itself */
	t = rng(F_WRLCK, 1024, 1);
	assert_int_equal(rr_nfs_testlock(fb, &t), 0);
	assert_int_equal(t.type, F_UNLCK);
	t = (struct rr_nfs_lock){
		.type = F_WRLCK, .start = 1000, .len = 1, .pid = 4242};
	assert_int_equal(rr_nfs_testlock(fa, &t), 0);
	assert_int_equal(t.type, F_UNLCK);
	/* a bad type */
	t = rng(F_UNLCK, 0, 1);
	assert_int_equal(rr_nfs_testlock(fb, &t), -EINVAL);
	assert_int_equal(rr_nfs_lock(fa, &t, 0), -EINVAL);
	/* a range past 2^64 */
	t = rng(F_WRLCK, UINT64_MAX, 2);
	assert_int_equal(rr_nfs_lock(fa, &t, 0), -EINVAL);
	assert_int_equal(rr_nfs_unlock(fa, &held), 0);
	rr_nfs_close(fa);
	rr_nfs_close(fb);
}

struct waiter {
	pthread_t t;
	struct rr_nfs_file *f;
	struct rr_nfs_lock l;
	atomic_bool done, stop;
	int rc;
};

static bool stop_asked(void *arg)
{
	return atomic_load(&((struct waiter *)arg)->stop);
}

static void *wait_lock(void *arg)
{
	struct waiter *w = arg;

	w->rc = rr_nfs_lock(w->f, &w->l, RR_NFS_LOCK_WAIT);
	atomic_store(&w->done, true);
	return NULL;
}

static void waiter_start(struct waiter *w, struct rr_nfs_file *f, int type)
{
	w->f = f;
	w->l = rng(type, 0, 10);
	w->l.cancelled = stop_asked;
	w->l.arg = w;
	assert_int_equal(pthread_create(&w->t, NULL, wait_lock, w), 0);
}

/* Until the server has had `more` NLM calls past `from` (10 s at most). */
static void await_calls(struct fx *f, long from, long more)
{
	for (int i = 0; i < 200; i++)
		if (rr_t_daemon_counter(&f->d, "nlm4", "calls") >= from + more)
			return;
	fail_msg("the waiter did not ask again");
}

static void a_waiting_lock_is_granted_when_the_holder_lets_go(void **state)
{
	struct fx *fx_ = *state;
	struct rr_nfs_file *fa = open_on(fx_->a, "wait");
	struct rr_nfs_file *fb = open_on(fx_->b, "wait");
	struct waiter w = {0};
	long calls;

	assert_int_equal(try(fa, F_WRLCK, 0, 0), 0);
	calls = rr_t_daemon_counter(&fx_->d, "nlm4", "calls");
	waiter_start(&w, fb, F_WRLCK);
	/* refused, and asked again: it waits */
	await_calls(fx_, calls, 3);
	assert_false(atomic_load(&w.done));
	assert_int_equal(unlock(fa, 0, 0), 0);
	pthread_join(w.t, NULL);
	assert_int_equal(w.rc, 0);
	/* it holds the range now */
	assert_int_equal(try(fa, F_RDLCK, 5, 1), -EAGAIN);
	assert_int_equal(unlock(fb, 0, 0), 0);
	rr_nfs_close(fa);
	rr_nfs_close(fb);
}

static void a_waiting_lock_stops_when_cancelled(void **state)
{
	struct fx *fx_ = *state;
	struct rr_nfs_file *fa = open_on(fx_->a, "cancel");
	struct rr_nfs_file *fb = open_on(fx_->b, "cancel");
	struct waiter w = {0};
	long calls;

	assert_int_equal(try(fa, F_RDLCK, 0, 0), 0);
	calls = rr_t_daemon_counter(&fx_->d, "nlm4", "calls");
	waiter_start(&w, fb, F_WRLCK);
	await_calls(fx_, calls, 3);
	atomic_store(&w.stop, true);
	pthread_join(w.t, NULL);
	assert_int_equal(w.rc, -EINTR);
	/* it took nothing: A can still upgrade its lock */
	assert_int_equal(try(fa, F_WRLCK, 0, 0), 0);
	assert_int_equal(unlock(fa, 0, 0), 0);
	rr_nfs_close(fa);
	rr_nfs_close(fb);
}

static void no_lock_manager_is_enolck(void **state)
{
	struct fx *fx_ = *state;
	char url[PATH_MAX + 128];
	struct rr_nfs *n;
	struct rr_nfs_file *f;
	struct rr_nfs_lock l = rng(F_WRLCK, 0, 1);

	/* the NFS port speaks no NLM: the probe tells at once */
	snprintf(url, sizeof(url),
		 "nfs://127.0.0.1%s?proto=tcp&nfsport=%u&mountport=%u"
		 "&nlmport=%u",
		 fx_->exp, fx_->d.tcp, fx_->d.mount, fx_->d.tcp);
	n = mount_one(url);
	f = open_on(n, "none");
	assert_int_equal(rr_nfs_lock(f, &l, 0), -ENOLCK);
	assert_non_null(strstr(rr_nfs_error(), "lock manager"));
	assert_int_equal(rr_nfs_testlock(f, &l), -ENOLCK);
	rr_nfs_close(f);
	rr_nfs_umount(n);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_clients_contend_as_fcntl_says),
		cmocka_unit_test(owners_of_one_client_are_apart),
		cmocka_unit_test(testlock_names_the_holder),
		cmocka_unit_test(
			a_waiting_lock_is_granted_when_the_holder_lets_go),
		cmocka_unit_test(a_waiting_lock_stops_when_cancelled),
		cmocka_unit_test(no_lock_manager_is_enolck),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s NFSRDMAD\n", argv[0]);
		return 2;
	}
	daemon_path = argv[1];
	return cmocka_run_group_tests(tests, setup, teardown);
}
