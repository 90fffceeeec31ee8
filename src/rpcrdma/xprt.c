/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "rpcrdma/xprt.h"
#include "base/alloc.h"

#include "rpcrdma/hdr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int rr__bufpool_init(struct rr_bufpool *p, struct rr_pd *pd, uint32_t count,
		     uint32_t size, unsigned access)
{
	size_t len = (size_t)count * size;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!len)
		return 0;
	if (RR_ALLOC_FAILS())
		return -ENOMEM;
	p->mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->mem == MAP_FAILED) {
		p->mem = NULL;
		return -ENOMEM;
	}
	rc = rr_mr_reg(pd, p->mem, len, access, &p->mr);
	if (rc) {
		munmap(p->mem, len);
		p->mem = NULL;
		return rc;
	}
	p->count = count;
	p->size = size;
	return 0;
}

void rr__bufpool_fini(struct rr_bufpool *p)
{
	if (p->mr)
		rr_mr_dereg(p->mr);
	if (p->mem)
		munmap(p->mem, (size_t)p->count * p->size);
	memset(p, 0, sizeof(*p));
}

void rr__xprt_cparams(uint8_t out[8], uint32_t inline_size, bool rem_inv_ok)
{
	struct rr_cparams cp = {.rem_inv_ok = rem_inv_ok,
				.inline_send = inline_size,
				.inline_recv = inline_size};

	rr__cparams_encode(&cp, out);
}

/*
 * RFC 8797 section 4: each side sends no more than the peer can receive;
 * without parameters the peer gets the 1 KiB default of RFC 8166 3.3.3.
 */
void rr__xprt_negotiate(const uint8_t *pd, uint32_t pd_len, uint32_t ours,
			uint32_t *send, uint32_t *recv, bool *peer_inv_ok)
{
	struct rr_cparams cp;

	if (rr__cparams_decode(pd, pd_len, &cp) != 0) {
		cp.inline_send = RR_INLINE_DEFAULT;
		cp.inline_recv = RR_INLINE_DEFAULT;
		cp.rem_inv_ok = false;
	}
	*send = cp.inline_recv < ours ? cp.inline_recv : ours;
	*recv = cp.inline_send < ours ? cp.inline_send : ours;
	*peer_inv_ok = cp.rem_inv_ok;
}
