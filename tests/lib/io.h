/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Bounded I/O for tests: a test waits for an event (bytes from a child,
 * a reply) never longer than it says, and never for time alone.
 */
#ifndef RR_TEST_LIB_IO_H
#define RR_TEST_LIB_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exactly len bytes before the CLOCK_MONOTONIC deadline (ms); false on
 * EOF, error or the deadline. */
bool rr_t_read_by(int fd, void *p, size_t len, uint64_t deadline_ms);
/* The same within tmo_ms from now. */
bool rr_t_read_within(int fd, void *p, size_t len, int tmo_ms);
/* All of len bytes, retrying short writes; a socket gets no SIGPIPE. */
bool rr_t_write_all(int fd, const void *p, size_t len);
/* A forked child's report to its parent: all of it, or the child exits 9. */
void rr_t_write_or_exit(int fd, const void *p, size_t len);

/* Removes dir and everything below it; 0, or -1 if anything stayed. */
int rr_t_rm_tree(const char *dir);

#endif
