/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The physical limits of moving bytes on this host, for the benchmarks of
 * the shm provider to print beside their own figures, measured in the
 * same run: one core's memcpy, and the cross-memory call shm's one-sided
 * operations are made of, between this process and another. The side
 * that owns the memory copies (src/fabric/shm/shm.h): an RDMA Write's
 * target pulls (process_vm_readv), an RDMA Read's target pushes
 * (process_vm_writev). Same size and number of buffers as the run they
 * bound, one copy at a time.
 */
#ifndef RR_TOOLS_COPY_LIMITS_H
#define RR_TOOLS_COPY_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct copy_limit_opts {
	size_t size;
	uint32_t depth;
	double seconds; /* for each of the two loops */
	bool read;	/* process_vm_readv from the peer, else writev */
	/* Optional: run first in the peer process (to pin it, say). */
	void (*in_peer)(void *arg);
	/* Optional: each copy's time, cma false for memcpy's. */
	void (*sample)(void *arg, bool cma, uint64_t ns);
	void *arg;
};

struct copy_limit {
	uint64_t ops, bytes;
	double secs;
};

/* 0, or a negative errno (memory, fork, the copy itself). */
int copy_limits_run(const struct copy_limit_opts *o, struct copy_limit *mem,
		    struct copy_limit *cma);

/* The name of the cross-memory call o measures. */
const char *copy_limits_cma_name(bool read);

#endif
