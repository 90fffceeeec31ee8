// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* See copy_limits.h. */
#include "copy_limits.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct loop {
	const struct copy_limit_opts *o;
	pid_t pid; /* the peer; 0 for memcpy */
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int copy_one(const struct loop *l, void *dst, const void *src,
		    size_t len)
{
	struct iovec mine, peer;
	ssize_t n;

	if (!l->pid) {
		memcpy(dst, src, len);
		return 0;
	}
	/* Reads copy the peer's buffer (src, at the same address) to ours. */
	mine = (struct iovec){l->o->read ? dst : (void *)src, len};
	peer = (struct iovec){l->o->read ? (void *)src : dst, len};
	n = l->o->read ? process_vm_readv(l->pid, &mine, 1, &peer, 1, 0)
		       : process_vm_writev(l->pid, &mine, 1, &peer, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* Copies slot i of src to slot i of dst, round robin, for o->seconds. */
static int copy_loop(const struct loop *l, uint8_t *dst, const uint8_t *src,
		     struct copy_limit *r)
{
	const struct copy_limit_opts *o = l->o;
	uint64_t start = now_ns(), now = start;
	uint64_t end = start + (uint64_t)(o->seconds * 1e9);

	*r = (struct copy_limit){0};
	for (uint32_t i = 0; now < end; i = (i + 1) % o->depth) {
		size_t off = (size_t)i * o->size;
		int err = copy_one(l, dst + off, src + off, o->size);
		uint64_t t = now_ns();

		if (err)
			return err;
		if (o->sample)
			o->sample(o->arg, l->pid != 0, t - now);
		now = t;
		r->ops++;
		r->bytes += o->size;
	}
	r->secs = (double)(now - start) / 1e9;
	return 0;
}

/*
 * The peer: a child whose copy of buf (after fork, at the same address) is
 * its own once written; it waits until it is killed.
 */
static pid_t peer_start(const struct copy_limit_opts *o, uint8_t *buf,
			size_t len)
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid == 0) {
		if (o->in_peer)
			o->in_peer(o->arg);
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

int copy_limits_run(const struct copy_limit_opts *o, struct copy_limit *mem,
		    struct copy_limit *cma)
{
	size_t len = o->size * o->depth;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct loop l = {.o = o};
	int err = -ENOMEM;

	if (!src || !dst || !o->depth)
		goto out;
	memset(src, 0xa5, len);
	memset(dst, 0, len);
	err = copy_loop(&l, dst, src, mem);
	if (err)
		goto out;
	l.pid = peer_start(o, dst, len);
	if (l.pid < 0) {
		err = l.pid;
		goto out;
	}
	/* a Read copies the peer's buffer into ours: dst and src swap */
	err = o->read ? copy_loop(&l, src, dst, cma)
		      : copy_loop(&l, dst, src, cma);
	kill(l.pid, SIGKILL);
	waitpid(l.pid, NULL, 0);
out:
	free(src);
	free(dst);
	return err;
}

const char *copy_limits_cma_name(bool read)
{
	return read ? "process_vm_readv" : "process_vm_writev";
}
