/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What each transport counts per server connection, for rr_rpc_svc_conns.
 * The counters are relaxed atomics: a TCP connection's are added to by its
 * loop and its workers, and read by whoever asks, with no lock in common;
 * nothing is ordered by them, and a reader may see one field move before
 * another.
 */
#ifndef RR_RPC_CONN_INFO_H
#define RR_RPC_CONN_INFO_H

#include <rpcrdma/oncrpc.h>

#include <stdatomic.h>
#include <stdint.h>

struct rr__conn_ctr {
	_Atomic uint64_t calls, replies, bytes_in, bytes_out, errors;
};

static inline void rr__conn_ctr_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/*
 * Fills info's counters from c and its times from born_coarse_ms (an
 * rr_coarse_ms() value: when the connection came).
 */
void rr__conn_info_fill(struct rr_svc_conn_info *info,
			const struct rr__conn_ctr *c, uint64_t born_coarse_ms);

#endif
