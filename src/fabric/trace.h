/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Static probes (USDT, provider "rpcrdma") at every work request posted
 * and every completion polled through the fabric API. Only the
 * RPC-over-RDMA layer uses that API, so these are that layer's posts and
 * completions, whatever the provider; the faults provider, which posts to
 * the provider it wraps through the same API, shows up twice, each time
 * with its own QP.
 *
 * Each probe names the QP and the work request's 64-bit id, which carries
 * the connection generation, kind, slot and sequence (rpcrdma/xprt.h), so
 * a tool attached to a live process (perf probe, bpftrace, SystemTap) can
 * pair each post with its completion, as the kernel's xprtrdma
 * tracepoints allow. tests/trace does exactly that with perf.
 *
 *   post_send(qp, wr_id, opcode, flags, hit)  before the provider sees it
 *   post_recv(qp, wr_id, hit)
 *   post_error(qp, wr_id, rc, hit)         one not posted after all, for
 *                                          each of them (the first refused
 *                                          and the rest of its chain)
 *   post_drain(qp, sq_wr_id, rq_wr_id, hit)  rr_qp_drain's two markers
 *   completion(qp, wr_id, status, opcode, byte_len, hit)
 *   qp_reset(qp), qp_destroy(qp)           nothing may be outstanding then
 *   device_close(dev)                      the process tears down cleanly
 *
 * hit numbers the probe hits of one thread (fabric.c). A tracer may
 * record one hit twice (perf's uprobes did, now and then, in a busy
 * test): its copy carries the same thread and hit, where a provider that
 * completes one work request twice makes two hits. A plain per-thread
 * counter, so the data path shares no cache line between threads.
 *
 * A probe that no tool attached to is one no-op instruction. Without
 * <sys/sdt.h> (Debian's systemtap-sdt-dev) the probes compile to nothing.
 */
#ifndef RR_FABRIC_TRACE_H
#define RR_FABRIC_TRACE_H

#include "base/usdt.h"

#endif
