/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The shm provider's table: the iwarp engine's ops on a device marked shm. */
#include "fabric/shm/shm.h"

static int shm_device_open(const struct rr_device_opts *opts,
			   struct rr_device **out)
{
	(void)opts;
	return rr__iw_device_open_as(&rr__shm_ops, true, out);
}

const struct rr_provider_ops rr__shm_ops = {
	.name = "shm",
	.device_open = shm_device_open,
	.device_close = rr__iw_device_close,
	.device_counters = rr__iw_device_counters,
	.pd_alloc = rr__iw_pd_alloc,
	.pd_free = rr__iw_pd_free,
	.mr_reg = rr__iw_mr_reg,
	.mr_dereg = rr__iw_mr_dereg,
	.mw_alloc = rr__iw_mw_alloc,
	.mw_free = rr__iw_mw_free,
	.mw_fence = rr__iw_mw_fence,
	.mw_rkey_next = rr__iw_mw_rkey_next,
	.mw_bind = rr__iw_mw_bind_now,
	.cq_create = rr__iw_cq_create,
	.cq_destroy = rr__iw_cq_destroy,
	.cq_poll = rr__iw_cq_poll,
	.cq_fd = rr__iw_cq_fd,
	.cq_wait = rr__iw_cq_wait,
	.evch_create = rr__iw_evch_create,
	.evch_destroy = rr__iw_evch_destroy,
	.evch_fd = rr__iw_evch_fd,
	.evch_get = rr__iw_evch_get,
	.qp_create = rr__iw_qp_create,
	.qp_destroy = rr__iw_qp_destroy,
	.qp_reset = rr__iw_qp_reset,
	.qp_state = rr__iw_qp_get_state,
	.post_send = rr__iw_post_send,
	.post_recv = rr__iw_post_recv,
	.listen = rr__iw_listen,
	.listener_close = rr__iw_listener_close,
	.listener_addr = rr__iw_listener_addr,
	.connect = rr__iw_connect,
	.accept = rr__iw_accept,
	.reject = rr__iw_reject,
	.disconnect = rr__iw_disconnect,
	.drain = rr__iw_drain,
};
