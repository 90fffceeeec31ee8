/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libFuzzer harness for every iWARP decoder that reads peer bytes: the MPA
 * request/reply header and private data, the DDP/RDMAP header, the Read
 * Request and the Terminate payloads. Whatever decodes must re-encode and
 * decode to the same values.
 */
#include "fabric/iwarp/wire.h"

#include <stdlib.h>
#include <string.h>

static void check_mpa(const uint8_t *d, size_t n, bool reply)
{
	struct iw_mpa_frame f, g;
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	uint16_t pd;
	int len;

	if (n < IW_MPA_HDR_LEN || rr__iw_mpa_decode_header(d, reply, &f, &pd))
		return;
	if (n - IW_MPA_HDR_LEN < pd ||
	    rr__iw_mpa_decode_pdata(d + IW_MPA_HDR_LEN, pd, &f))
		return;
	len = rr__iw_mpa_encode(&f, buf, sizeof(buf));
	if (len < 0)
		return; /* e.g. a foreign layout we read but do not write */
	if (rr__iw_mpa_decode_header(buf, reply, &g, &pd) ||
	    rr__iw_mpa_decode_pdata(buf + IW_MPA_HDR_LEN, pd, &g) ||
	    g.pd_len != f.pd_len || memcmp(g.pd, f.pd, f.pd_len) ||
	    g.ird != f.ird || g.ord != f.ord || g.flags != f.flags)
		abort();
}

static void check_hdr(const uint8_t *d, size_t n)
{
	struct iw_hdr h, g;
	uint8_t buf[IW_UNTAGGED_HDR_LEN];
	int len = rr__iw_hdr_decode(d, n, &h);

	if (len <= 0)
		return;
	if ((int)rr__iw_hdr_encode(&h, buf) != len ||
	    rr__iw_hdr_decode(buf, (size_t)len, &g) != len ||
	    memcmp(buf, d, 2) || g.opcode != h.opcode || g.stag != h.stag ||
	    g.msn != h.msn || g.mo != h.mo || g.to != h.to || g.qn != h.qn)
		abort();
}

static void check_payloads(const uint8_t *d, size_t n)
{
	struct iw_read_req r, r2;
	struct iw_term t, t2;
	uint8_t buf[128];
	int len;

	if (rr__iw_read_req_decode(d, n, &r) == 0) {
		rr__iw_read_req_encode(&r, buf);
		if (rr__iw_read_req_decode(buf, IW_READ_REQ_LEN, &r2) ||
		    r.sink_stag != r2.sink_stag || r.sink_to != r2.sink_to ||
		    r.size != r2.size || r.src_stag != r2.src_stag ||
		    r.src_to != r2.src_to)
			abort();
	}
	if (rr__iw_term_decode(d, n, &t) == 0) {
		len = rr__iw_term_encode(&t, buf, sizeof(buf));
		if (len >= 0 && (rr__iw_term_decode(buf, (size_t)len, &t2) ||
				 t2.layer != t.layer || t2.ecode != t.ecode ||
				 t2.hdr_len != t.hdr_len))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);

	/* An exactly-sized copy: any read past n is an ASan report. */
	memcpy(copy, d, n);
	check_mpa(copy, n, false);
	check_mpa(copy, n, true);
	check_hdr(copy, n);
	check_payloads(copy, n);
	free(copy);
	return 0;
}
