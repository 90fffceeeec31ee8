// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness for the RFC 8797 private data decoder: peer bytes are
 * rejected, or decode to parameters that encode and decode unchanged.
 */
#include <stdint.h>
#include <stdlib.h>

#include "rpcrdma/hdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_cparams p1, p2;
	uint8_t out[RR_CPARAMS_LEN];

	if (rr__cparams_decode(data, size, &p1))
		return 0;
	if (size < RR_CPARAMS_LEN || p1.inline_send < RR_INLINE_DEFAULT ||
	    p1.inline_send > 262144 || p1.inline_send % 1024 ||
	    p1.inline_recv < RR_INLINE_DEFAULT || p1.inline_recv > 262144 ||
	    p1.inline_recv % 1024)
		abort();
	rr__cparams_encode(&p1, out);
	/* Only unassigned flag bits may differ from what came in. */
	if (out[6] != data[6] || out[7] != data[7] || (out[5] ^ data[5]) & 0x01)
		abort();
	if (rr__cparams_decode(out, sizeof(out), &p2) ||
	    p1.rem_inv_ok != p2.rem_inv_ok ||
	    p1.inline_send != p2.inline_send ||
	    p1.inline_recv != p2.inline_recv)
		abort();
	return 0;
}
