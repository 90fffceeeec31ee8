// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for record-marking reassembly (src/rpc/tcp_record.c),
 * the first thing a TCP server does with a peer's bytes.
 *
 * The first two input bytes choose max_record and the size of the pieces
 * the rest is fed in (a socket returns any split); the rest is the
 * stream. A plain model parses the same stream in one pass, and every
 * record the reassembler delivers must be the model's next record: the
 * same bytes when it fits max_record, or, when it does not, refused and
 * skipped with its first 8 bytes kept. Reading past the input or
 * allocating past max_record is caught by ASan or the checks below.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xdr.h"
#include "rpc/tcp_record.h"

/* The model's view of one record: its bytes, gathered. */
struct model_rec {
	uint8_t *bytes; /* room for the whole stream */
	size_t total;
};

static void check(int cond)
{
	if (!cond)
		abort();
}

/*
 * The model's next complete record from *pos: 1, or 0 when the stream
 * ends first, or -1 when it holds a run of more than RR_RM_MAX_EMPTY
 * empty fragments that are not last (refused, and the stream with it).
 */
static int model_next(const uint8_t *s, size_t n, size_t *pos,
		      struct model_rec *m)
{
	size_t p = *pos;
	uint32_t empty = 0;

	m->total = 0;
	for (;;) {
		uint32_t w, flen;

		if (n - p < RR_RM_HDR_LEN)
			return 0;
		w = rr_get32(s + p);
		flen = w & RR_RM_MAX_FRAG;
		p += RR_RM_HDR_LEN;
		empty = flen || (w & RR_RM_LAST) ? 0 : empty + 1;
		if (empty > RR_RM_MAX_EMPTY)
			return -1;
		if (n - p < flen)
			return 0;
		memcpy(m->bytes + m->total, s + p, flen);
		m->total += flen;
		p += flen;
		if (w & RR_RM_LAST) {
			*pos = p;
			return 1;
		}
	}
}

static void check_record(const struct model_rec *m, const uint8_t *rec,
			 size_t len)
{
	check(len == m->total);
	check(!len || !memcmp(m->bytes, rec, len));
}

static void check_head(const struct model_rec *m, const uint8_t *head,
		       size_t len)
{
	size_t k = m->total < RR_RM_HEAD_LEN ? m->total : RR_RM_HEAD_LEN;

	check(len == k && !memcmp(m->bytes, head, k));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr__rm_rx rx;
	struct model_rec m;
	const uint8_t *s;
	size_t n, off = 0, mpos = 0, piece;
	bool detach;
	uint32_t max;

	if (size < 2)
		return 0;
	max = 1u << (data[0] % 21); /* 1 byte .. 1 MiB */
	detach = data[0] & 0x80;
	piece = (size_t)data[1] + 1;
	s = data + 2;
	n = size - 2;
	m.bytes = malloc(n ? n : 1);
	check(m.bytes != NULL);
	rr__rm_rx_init(&rx, max);
	while (off < n) {
		size_t len = n - off < piece ? n - off : piece, used = 0;
		int rc = rr__rm_rx_feed(&rx, s + off, len, &used);

		check(used <= len);
		off += used;
		if (rc == -EMSGSIZE) {
			rr__rm_rx_skip(&rx);
			continue;
		}
		if (rc == -EPROTO) {
			/* the stream is refused: nothing after it counts */
			check(model_next(s, n, &mpos, &m) == -1);
			mpos = n;
			break;
		}
		check(rc >= 0 && rc <= 2);
		if (rc == 0) {
			check(used == len);
			continue;
		}
		check(model_next(s, n, &mpos, &m) == 1);
		check((rc == 1) == (m.total <= max));
		if (rc == 1 && detach) {
			size_t rl, cap;
			uint8_t *b = rr__rm_rx_detach(&rx, &rl, &cap);

			check_record(&m, b, rl);
			free(b);
			continue;
		}
		if (rc == 1) {
			size_t rl;
			const uint8_t *rec = rr__rm_rx_record(&rx, &rl);

			check_record(&m, rec, rl);
		} else {
			size_t hl;
			const uint8_t *head = rr__rm_rx_head(&rx, &hl);

			check_head(&m, head, hl);
		}
		check(rx.cap <= (max > 4096 ? max : 4096));
		rr__rm_rx_next(&rx);
	}
	/* Whatever is left is an incomplete record for both. */
	check(model_next(s, n, &mpos, &m) == 0);
	rr__rm_rx_fini(&rx);
	free(m.bytes);
	return 0;
}
