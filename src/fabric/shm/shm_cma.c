/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Cross-memory copies for RDMA Read and pulled Write (shm.h says who copies
 * and why). The caller holds the lock of the key naming our memory.
 */
#include "fabric/shm/shm.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

bool rr__shm_pull_ok(const struct iw_qp *qp, const struct iw_wqe *w)
{
	return qp->cma && qp->ord && w->num_sge == 1 &&
	       w->length >= SHM_CMA_MIN;
}

/*
 * Copies rr->size bytes between the peer's [sink_to, +size) and our
 * [src_to, +size): into the peer for a Read, from it for a pull. 0 when all
 * moved; a negative errno otherwise (a Read then goes through the socket).
 */
int rr__shm_serve(struct iw_qp *qp, const struct iw_read_req *rr, bool pull)
{
	struct iovec mine = {(void *)(uintptr_t)rr->src_to, rr->size};
	struct iovec peer = {(void *)(uintptr_t)rr->sink_to, rr->size};
	ssize_t n;

	if (!pull && rr->size < SHM_CMA_MIN)
		return -EAGAIN;
	n = pull ? process_vm_readv(qp->peer_pid, &mine, 1, &peer, 1, 0)
		 : process_vm_writev(qp->peer_pid, &mine, 1, &peer, 1, 0);
	if (n == (ssize_t)rr->size)
		return 0;
	if (n < 0) {
		int err = errno;

		rr_info_rl("shm: cross-memory copy with pid %d: %s",
			   (int)qp->peer_pid, strerror(err));
		return -err;
	}
	return -EIO;
}
