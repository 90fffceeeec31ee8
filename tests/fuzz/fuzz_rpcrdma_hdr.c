// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness for the RPC-over-RDMA header decoder. Whatever the
 * peer sends must be rejected or decode to a header whose encoding is the
 * same bytes (the XDR is canonical) and decodes to the same header again.
 * libFuzzer hands over exactly size bytes, so ASan sees any overread.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/hdr.h"

static int seg_eq(const struct rr_rdma_seg *a, const struct rr_rdma_seg *b)
{
	return a->handle == b->handle && a->length == b->length &&
	       a->offset == b->offset;
}

static int chunk_eq(const struct rr_rdma_chunk *a,
		    const struct rr_rdma_chunk *b)
{
	if (a->nsegs != b->nsegs || a->nsegs > RR_RDMA_MAX_CHUNK_SEGS)
		return 0;
	for (uint32_t i = 0; i < a->nsegs; i++)
		if (!seg_eq(&a->segs[i], &b->segs[i]))
			return 0;
	return 1;
}

static int lists_eq(const struct rr_rdma_hdr *a, const struct rr_rdma_hdr *b)
{
	if (a->nread != b->nread || a->nread > RR_RDMA_MAX_READ_SEGS ||
	    a->nwrite != b->nwrite || a->nwrite > RR_RDMA_MAX_WRITE_CHUNKS ||
	    a->has_reply != b->has_reply)
		return 0;
	for (uint32_t i = 0; i < a->nread; i++)
		if (a->reads[i].position != b->reads[i].position ||
		    !seg_eq(&a->reads[i].seg, &b->reads[i].seg))
			return 0;
	for (uint32_t i = 0; i < a->nwrite; i++)
		if (!chunk_eq(&a->writes[i], &b->writes[i]))
			return 0;
	return !a->has_reply || chunk_eq(&a->reply, &b->reply);
}

/* Compares what the header carries; unused array tails are junk. */
static int hdr_eq(const struct rr_rdma_hdr *a, const struct rr_rdma_hdr *b)
{
	if (a->xid != b->xid || a->vers != b->vers ||
	    a->credits != b->credits || a->proc != b->proc)
		return 0;
	if (a->proc != RR_RDMA_ERROR)
		return lists_eq(a, b);
	if (a->err != b->err)
		return 0;
	return a->err != RR_ERR_VERS ||
	       (a->vers_low == b->vers_low && a->vers_high == b->vers_high);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rr_rdma_hdr h1, h2;
	uint8_t *out;
	size_t n;
	int ret;

	ret = rr__rdma_hdr_decode(data, size, &h1);
	if (ret < 0)
		return 0;
	n = rr__rdma_hdr_size(&h1);
	if ((size_t)ret > size || n != (size_t)ret)
		abort();
	/* Exactly n bytes: ASan sees the encoder write past its size. */
	out = malloc(n);
	if (!out)
		return 0;
	if (rr__rdma_hdr_encode(&h1, out, n) != ret || memcmp(out, data, n))
		abort();
	if (rr__rdma_hdr_decode(out, n, &h2) != ret || !hdr_eq(&h1, &h2))
		abort();
	free(out);
	return 0;
}
