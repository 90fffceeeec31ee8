/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Record marking (RFC 5531 section 11): see tcp_record.h. */
#include "rpc/tcp_record.h"
#include "rpc/spares.h"
#include "base/alloc.h"

#include "base/xdr.h"
#include "rpc/msg.h"

#include <sys/uio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Smallest buffer we start a record with: most calls fit. */
#define RM_MIN_CAP RR_RM_SMALL

void rr__rm_hdr(uint8_t out[RR_RM_HDR_LEN], uint32_t len, bool last)
{
	rr_put32(out, (len & RR_RM_MAX_FRAG) | (last ? RR_RM_LAST : 0));
}

void rr__rm_rx_init(struct rr__rm_rx *r, uint32_t max_record)
{
	memset(r, 0, sizeof(*r));
	r->max_record = max_record;
}

/*
 * A big record grown by reallocation (there was no spare) is grown to a
 * spare's size on its way back, while the pool has room: records under
 * max_record would otherwise never fill it, and every one would grow
 * afresh.
 */
void rr__rm_rx_give_back(const struct rr__rm_rx *r, uint8_t *buf, size_t cap)
{
	uint8_t *b;

	if (buf && r->big && cap > RR_RM_BIG_AT && cap < r->big->size &&
	    rr__spares_room(r->big) && (b = rr_realloc(buf, r->big->size))) {
		buf = b;
		cap = r->big->size;
	}
	if (buf && r->big && cap == r->big->size)
		rr__spares_put(r->big, buf);
	else if (buf && r->small && cap == RM_MIN_CAP)
		rr__spares_put(r->small, buf);
	else
		free(buf);
}

void rr__rm_rx_fini(struct rr__rm_rx *r)
{
	rr__rm_rx_give_back(r, r->buf, r->cap);
	r->buf = NULL;
	r->cap = 0;
}

/* A spare for a record grown big, its bytes so far moved in; or false. */
static bool take_spare(struct rr__rm_rx *r, size_t need)
{
	uint8_t *b;

	if (!r->big || need <= RR_RM_BIG_AT || need > r->big->size ||
	    r->cap == r->big->size)
		return false;
	b = rr__spares_take(r->big);
	if (!b)
		return false;
	if (r->len)
		memcpy(b, r->buf, r->len);
	free(r->buf);
	r->buf = b;
	r->cap = r->big->size;
	return true;
}

/* Room for need bytes, doubling; never more than max_record. */
static int reserve(struct rr__rm_rx *r, size_t need)
{
	size_t cap = r->cap ? r->cap : RM_MIN_CAP;
	uint8_t *b;

	if (need <= r->cap || take_spare(r, need))
		return 0;
	if (!r->cap && r->small && (b = rr__spares_take(r->small))) {
		r->buf = b;
		r->cap = RM_MIN_CAP;
		if (need <= RM_MIN_CAP)
			return 0;
	}
	while (cap < need)
		cap *= 2;
	if (cap > r->max_record)
		cap = need > RM_MIN_CAP ? r->max_record : RM_MIN_CAP;
	b = rr_realloc(r->buf, cap);
	if (!b)
		return -ENOMEM;
	r->buf = b;
	r->cap = cap;
	return 0;
}

/*
 * A fragment header is complete: check it against max_record (-EMSGSIZE)
 * and against runs of empty fragments (-EPROTO).
 */
static int start_frag(struct rr__rm_rx *r)
{
	uint32_t w = rr_get32(r->hdr);

	r->hdr_have = 0;
	r->last = (w & RR_RM_LAST) != 0;
	r->frag_left = w & RR_RM_MAX_FRAG;
	r->frags++;
	r->in_body = true;
	/*
	 * RFC 5531 allows empty fragments, but a run of them costs a pass
	 * per header and carries nothing: a few in a row are tolerated, an
	 * endless stream of them ends the connection.
	 */
	if (r->frag_left || r->last)
		r->empty_frags = 0;
	else if (++r->empty_frags > RR_RM_MAX_EMPTY)
		return -EPROTO;
	if (!r->skipping && (uint64_t)r->len + r->frag_left > r->max_record)
		return -EMSGSIZE;
	return 0;
}

/* The current fragment's body is all in: end it, maybe the record too. */
static void end_frag(struct rr__rm_rx *r)
{
	r->in_body = false;
	if (r->last)
		r->complete = true;
}

/* A skipped record's bytes: only its head is kept. */
static void keep_head(struct rr__rm_rx *r, const uint8_t *p, size_t n)
{
	size_t k = RR_RM_HEAD_LEN - r->head_len;

	if (k > n)
		k = n;
	memcpy(r->head + r->head_len, p, k);
	r->head_len += (uint32_t)k;
}

static int feed_body(struct rr__rm_rx *r, const uint8_t *p, size_t n,
		     size_t *used)
{
	size_t take = n < r->frag_left ? n : r->frag_left;
	int rc;

	*used = take;
	r->frag_left -= (uint32_t)take;
	if (r->skipping) {
		keep_head(r, p, take);
		return 0;
	}
	/*
	 * A fragment that announces a big record moves it into a spare at
	 * once, when there is one, sparing the growth by reallocation up to
	 * RR_RM_BIG_AT. The claim only picks a buffer we hold already.
	 */
	if (r->cap < RR_RM_BIG_AT)
		take_spare(r, r->len + take + r->frag_left);
	rc = reserve(r, r->len + take);
	if (rc)
		return rc;
	memcpy(r->buf + r->len, p, take);
	r->len += take;
	return 0;
}

int rr__rm_rx_feed(struct rr__rm_rx *r, const uint8_t *p, size_t n,
		   size_t *used)
{
	size_t off = 0;
	int rc;

	while (!r->complete) {
		if (r->in_body && r->frag_left == 0) {
			end_frag(r);
			continue;
		}
		if (off == n)
			break;
		if (r->in_body) {
			size_t k;
			int rc = feed_body(r, p + off, n - off, &k);

			if (rc)
				return rc;
			off += k;
			continue;
		}
		r->hdr[r->hdr_have++] = p[off++];
		if (r->hdr_have == RR_RM_HDR_LEN && (rc = start_frag(r))) {
			*used = off;
			return rc;
		}
	}
	*used = off;
	if (!r->complete)
		return 0;
	return r->skipping ? 2 : 1;
}

void rr__rm_rx_skip(struct rr__rm_rx *r)
{
	size_t k = r->len < RR_RM_HEAD_LEN ? r->len : RR_RM_HEAD_LEN;

	r->skipping = true;
	r->head_len = 0;
	if (k)
		keep_head(r, r->buf, k);
	r->len = 0;
}

const uint8_t *rr__rm_rx_head(const struct rr__rm_rx *r, size_t *len)
{
	*len = r->head_len;
	return r->head;
}

const uint8_t *rr__rm_rx_record(const struct rr__rm_rx *r, size_t *len)
{
	*len = r->len;
	return r->buf;
}

void rr__rm_rx_next(struct rr__rm_rx *r)
{
	r->len = 0;
	r->complete = false;
	r->skipping = false;
	r->head_len = 0;
	r->frags = 0;
	r->empty_frags = 0;
}

uint8_t *rr__rm_rx_detach(struct rr__rm_rx *r, size_t *len, size_t *cap)
{
	uint8_t *b = r->buf;

	*len = r->len;
	*cap = r->cap;
	r->buf = NULL;
	r->cap = 0;
	rr__rm_rx_next(r);
	return b;
}

int rr__rm_call_iov(const struct rr_call *call, uint32_t xid,
		    const char *machine, uint8_t *hdr, size_t hdr_max,
		    struct iovec iov[4])
{
	static const uint8_t zero[4];
	size_t pad = rr_xdr_pad(call->arg_bulk_len), total;
	int n = rr__call_msg_hdr(call, xid, machine, hdr + RR_RM_HDR_LEN,
				 hdr_max);

	if (n < 0)
		return n;
	total = (size_t)n + call->args_len + call->arg_bulk_len + pad;
	rr__rm_hdr(hdr, (uint32_t)total, true);
	iov[0] = (struct iovec){hdr, RR_RM_HDR_LEN + (size_t)n};
	iov[1] = (struct iovec){(void *)call->args, call->args_len};
	iov[2] = (struct iovec){(void *)call->arg_bulk, call->arg_bulk_len};
	iov[3] = (struct iovec){(void *)zero, pad};
	return 0;
}
