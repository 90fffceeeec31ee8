/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Reference counts whose put says whether it dropped the last reference. */
#ifndef RR_BASE_REFCOUNT_H
#define RR_BASE_REFCOUNT_H

#include <stdatomic.h>
#include <stdbool.h>

struct rr_ref {
	atomic_uint n;
};

static inline void rr_ref_init(struct rr_ref *r)
{
	atomic_init(&r->n, 1);
}
static inline void rr_ref_get(struct rr_ref *r)
{
	atomic_fetch_add_explicit(&r->n, 1, memory_order_relaxed);
}
/* True when this put dropped the last reference: the caller frees. */
static inline bool rr_ref_put(struct rr_ref *r)
{
	return atomic_fetch_sub_explicit(&r->n, 1, memory_order_acq_rel) == 1;
}
static inline unsigned rr_ref_read(struct rr_ref *r)
{
	return atomic_load_explicit(&r->n, memory_order_relaxed);
}

#endif
