// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The physical limits of moving bytes on this host, measured in the same
 * run as the shm provider they bound: one core's memcpy, and
 * process_vm_writev/readv into another process (what shm's RDMA Write and
 * Read are made of). Same size and depth of buffers as the fabric phase,
 * one copy at a time, the peer on the peer's CPU.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

typedef int (*copy_fn)(void *ctx, void *dst, const void *src, size_t len);

static int do_memcpy(void *ctx, void *dst, const void *src, size_t len)
{
	(void)ctx;
	memcpy(dst, src, len);
	return 0;
}

struct cma_ctx {
	pid_t pid;
	bool read; /* process_vm_readv from the peer, else writev to it */
};

static int do_cma(void *ctx, void *dst, const void *src, size_t len)
{
	const struct cma_ctx *c = ctx;
	struct iovec mine = {c->read ? dst : (void *)src, len};
	struct iovec peer = {c->read ? (void *)src : dst, len};
	ssize_t n = c->read ? process_vm_readv(c->pid, &mine, 1, &peer, 1, 0)
			    : process_vm_writev(c->pid, &mine, 1, &peer, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* Copies slot i of src to slot i of dst, round robin, for o->seconds. */
static int copy_loop(const struct bench_opts *o, copy_fn fn, void *ctx,
		     uint8_t *dst, const uint8_t *src, struct bench_result *r)
{
	uint64_t start = bench_now_ns(), end, now = start;

	end = start + (uint64_t)(o->seconds * 1e9);
	for (uint32_t i = 0; now < end; i = (i + 1) % o->depth) {
		size_t off = (size_t)i * o->size;
		int err = fn(ctx, dst + off, src + off, o->size);
		uint64_t t = bench_now_ns();

		if (err)
			return err;
		bench_hist_record(&r->hist, t - now);
		now = t;
		r->ops++;
		r->bytes += o->size;
	}
	r->elapsed_s = (double)(now - start) / 1e9;
	r->done = true;
	return 0;
}

/*
 * The peer: a child whose copy of buf (after fork, at the same address) is
 * its own once written; it waits until the pipe closes.
 */
static pid_t peer_start(const struct bench_opts *o, uint8_t *buf, size_t len)
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid == 0) {
		bench_pin(o, 1);
		memset(buf, 0x5a, len);
		close(p[0]);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		close(p[0]);
		return -ECHILD;
	}
	close(p[0]);
	return pid;
}

int bench_limits_run(const struct bench_opts *o, struct bench_result *mem,
		     struct bench_result *cma)
{
	size_t len = (size_t)o->size * o->depth;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct cma_ctx c = {.read = o->op == BENCH_OP_READ};
	int err = -ENOMEM;

	if (!src || !dst)
		goto out;
	memset(src, 0xa5, len);
	memset(dst, 0, len);
	err = copy_loop(o, do_memcpy, NULL, dst, src, mem);
	if (err)
		goto out;
	c.pid = peer_start(o, dst, len);
	if (c.pid < 0) {
		err = c.pid;
		goto out;
	}
	/* a Read copies the peer's buffer into ours: dst and src swap */
	err = c.read ? copy_loop(o, do_cma, &c, src, dst, cma)
		     : copy_loop(o, do_cma, &c, dst, src, cma);
	kill(c.pid, SIGKILL);
	waitpid(c.pid, NULL, 0);
out:
	free(src);
	free(dst);
	return err;
}
