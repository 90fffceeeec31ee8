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
	RR_IW_ENGINE_OPS,
};
