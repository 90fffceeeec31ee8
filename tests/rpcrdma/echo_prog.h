/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The test program's ECHO procedure (proc 1): results are the arguments. */
#ifndef RR_TESTS_ECHO_PROG_H
#define RR_TESTS_ECHO_PROG_H

#include <rpcrdma/rpc.h>

#include <string.h>

static inline uint32_t echo_proc(struct rr_svc_req *r, void *a)
{
	size_t n, cap;
	const void *args = rr_svc_args(r, &n);
	void *res = rr_svc_res_buf(r, &cap);

	(void)a;
	if (n > cap)
		return RR_SYSTEM_ERR;
	memcpy(res, args, n);
	rr_svc_set_res(r, n, NULL, 0);
	return RR_SUCCESS;
}

static const rr_svc_fn echo_procs[] = {NULL, echo_proc};

#endif
