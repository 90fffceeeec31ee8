/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What one thread serving NFS READs or WRITEs can do on this host with no
 * RPC at all, for nfsrdma bench to print beside a run against a server on
 * the same host. Per READ, what nfsrdmad's local backend asks of the
 * kernel (one statx for the reply's attributes, one preadv2 of the block
 * from a file whose pages are in memory) and, where the wire is loopback
 * TCP (iwarp), the send of the block to a reader on another thread. Per
 * WRITE, the receive of the block from a writer on another thread (where
 * the wire is TCP), a statx before and after for the reply's wcc data, and
 * one pwritev into the file. A server path with one thread cannot beat it,
 * whatever its protocol; where system calls are dear (a paravirtualised
 * host) it is far below memcpy.
 */
#ifndef RR_TOOLS_SERVE_LIMIT_H
#define RR_TOOLS_SERVE_LIMIT_H

#include "copy_limits.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct serve_limit_opts {
	size_t size; /* bytes per READ */
	bool random; /* block-aligned offsets at random, else in turn */
	bool write;  /* WRITEs, else READs */
	bool tcp;    /* also move each block over loopback TCP */
	double seconds;
};

/* 0, or a negative errno (memory, the file, the socket). */
int serve_limit_run(const struct serve_limit_opts *o, struct copy_limit *r);

#endif
