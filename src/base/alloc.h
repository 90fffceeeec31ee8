/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The library's allocator: malloc and friends behind one check, so tests
 * can make any allocation fail (include/rpcrdma/alloc_inject.h) and prove
 * that every failure is handled (architecture.md invariant 6). Each macro
 * passes its call site, which names the allocation in the injector's counts.
 *
 * Use these instead of the libc calls everywhere in src/; free() stays.
 * An allocation that is not a malloc (an mmap, say) asks RR_ALLOC_FAILS()
 * first and fails the same way when told to.
 */
#ifndef RR_BASE_ALLOC_H
#define RR_BASE_ALLOC_H

#include <rpcrdma/alloc_inject.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * The NFS shared libraries check allocations through librpcrdma's state
 * (cmake/shared.cmake: its private version node), so these two are not
 * hidden with the rest.
 */
extern __attribute__((visibility("default"))) atomic_int rr__alloc_armed;
__attribute__((visibility("default"))) bool
rr__alloc_should_fail(const char *file, int line);

/* Disarmed (always, outside tests): one relaxed load, not taken. */
static inline bool rr__alloc_fails(const char *file, int line)
{
	if (__builtin_expect(!atomic_load_explicit(&rr__alloc_armed,
						   memory_order_relaxed),
			     1))
		return false;
	if (!rr__alloc_should_fail(file, line))
		return false;
	errno = ENOMEM;
	return true;
}

static inline void *rr__malloc(size_t n, const char *file, int line)
{
	return rr__alloc_fails(file, line) ? NULL : malloc(n);
}

static inline void *rr__calloc(size_t n, size_t size, const char *file,
			       int line)
{
	return rr__alloc_fails(file, line) ? NULL : calloc(n, size);
}

/* Fails as realloc does: NULL, and p is left as it was. */
static inline void *rr__realloc(void *p, size_t n, const char *file, int line)
{
	return rr__alloc_fails(file, line) ? NULL : realloc(p, n);
}

static inline char *rr__strdup(const char *s, const char *file, int line)
{
	return rr__alloc_fails(file, line) ? NULL : strdup(s);
}

static inline char *rr__strndup(const char *s, size_t n, const char *file,
				int line)
{
	return rr__alloc_fails(file, line) ? NULL : strndup(s, n);
}

#define RR_ALLOC_FAILS()   rr__alloc_fails(__FILE__, __LINE__)
#define rr_malloc(n)	   rr__malloc((n), __FILE__, __LINE__)
#define rr_calloc(n, size) rr__calloc((n), (size), __FILE__, __LINE__)
#define rr_realloc(p, n)   rr__realloc((p), (n), __FILE__, __LINE__)
#define rr_strdup(s)	   rr__strdup((s), __FILE__, __LINE__)
#define rr_strndup(s, n)   rr__strndup((s), (n), __FILE__, __LINE__)

#endif
