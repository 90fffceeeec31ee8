// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * iWARP wire codecs. Every multi-byte field is big-endian except the MPA CRC
 * trailer, so fields are assembled byte by byte: no alignment or host byte
 * order assumptions, and no read outside the caller's length.
 */
#include "fabric/iwarp/wire.h"

#include <errno.h>
#include <string.h>

static const char mpa_key_req[IW_MPA_KEY_LEN] = "MPA ID Req Frame";
static const char mpa_key_rep[IW_MPA_KEY_LEN] = "MPA ID Rep Frame";

#define MPA_IRD_SEND_RTR 0x4000 /* IRD word: zero-length Send RTR */
#define MPA_ORD_RTR_MASK (IW_MPA_RTR_WRITE | IW_MPA_RTR_READ)

#define DDP_RSVD_MASK	0x3c
#define DDP_VER_MASK	0x03
#define RDMAP_VER_SHIFT 6
#define RDMAP_RSVD_MASK 0x30
#define RDMAP_OP_MASK	0x0f

#define TERM_CTRL_LEN	4
#define TERM_SEGLEN_LEN 2
#define TERM_M		0x80
#define TERM_D		0x40
#define TERM_R		0x20
/* Where a little-endian siw's bitfields put M, D and R (see term_ctrl_get). */
#define TERM_SIW_LE_MASK 0x07

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, v >> 16);
	put_be16(p + 2, v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, v);
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* ---------------------------------------------------------------- MPA */

static bool mpa_irdord_valid(const struct iw_mpa_frame *f)
{
	uint16_t rtr_ok = MPA_ORD_RTR_MASK | IW_MPA_RTR_SEND;

	return f->ird <= IW_MPA_IRDORD_MASK && f->ord <= IW_MPA_IRDORD_MASK &&
	       !(f->rtr & ~rtr_ok);
}

static void mpa_put_irdord(const struct iw_mpa_frame *f, uint8_t *p)
{
	uint16_t ird = f->ird;
	uint16_t ord = f->ord | (f->rtr & MPA_ORD_RTR_MASK);

	if (f->p2p)
		ird |= IW_MPA_P2P;
	if (f->rtr & IW_MPA_RTR_SEND)
		ird |= MPA_IRD_SEND_RTR;
	put_be16(p, ird);
	put_be16(p + 2, ord);
}

int rr__iw_mpa_encode(const struct iw_mpa_frame *f, uint8_t *buf, size_t cap)
{
	bool enh = f->flags & IW_MPA_FLAG_ENHANCED;
	size_t total = (size_t)f->pd_len + (enh ? IW_MPA_IRDORD_LEN : 0);
	uint8_t *p = buf + IW_MPA_HDR_LEN;

	if (total > IW_MPA_MAX_PD || (enh && !mpa_irdord_valid(f)))
		return -EINVAL;
	if (cap < IW_MPA_HDR_LEN + total)
		return -ENOSPC;
	memcpy(buf, f->reply ? mpa_key_rep : mpa_key_req, IW_MPA_KEY_LEN);
	buf[16] = f->flags;
	buf[17] = f->rev;
	put_be16(buf + 18, (uint16_t)total);
	if (enh) {
		mpa_put_irdord(f, p);
		p += IW_MPA_IRDORD_LEN;
	}
	memcpy(p, f->pd, f->pd_len);
	return (int)(IW_MPA_HDR_LEN + total);
}

int rr__iw_mpa_decode_header(const uint8_t hdr[IW_MPA_HDR_LEN],
			     bool expect_reply, struct iw_mpa_frame *f,
			     uint16_t *pd_total)
{
	const char *key = expect_reply ? mpa_key_rep : mpa_key_req;
	uint8_t flags = hdr[16], rev = hdr[17];
	uint16_t len = get_be16(hdr + 18);
	bool enh = flags & IW_MPA_FLAG_ENHANCED;

	if (memcmp(hdr, key, IW_MPA_KEY_LEN))
		return -EBADMSG;
	/* Enhanced setup is a revision 2 feature (RFC 6581 section 5). */
	if (rev != IW_MPA_REV && (rev != 1 || enh))
		return -EPROTO;
	if (len > IW_MPA_MAX_PD || (enh && len < IW_MPA_IRDORD_LEN))
		return -EMSGSIZE;
	memset(f, 0, sizeof(*f));
	f->reply = expect_reply;
	f->flags = flags;
	f->rev = rev;
	*pd_total = len;
	return 0;
}

static void mpa_get_irdord(const uint8_t *p, struct iw_mpa_frame *f)
{
	uint16_t ird = get_be16(p), ord = get_be16(p + 2);

	f->ird = ird & IW_MPA_IRDORD_MASK;
	f->ord = ord & IW_MPA_IRDORD_MASK;
	f->p2p = ird & IW_MPA_P2P;
	f->rtr = ord & MPA_ORD_RTR_MASK;
	if (ird & MPA_IRD_SEND_RTR)
		f->rtr |= IW_MPA_RTR_SEND;
}

int rr__iw_mpa_decode_pdata(const uint8_t *pd, uint16_t pd_total,
			    struct iw_mpa_frame *f)
{
	if (pd_total > IW_MPA_MAX_PD)
		return -EMSGSIZE;
	if (f->flags & IW_MPA_FLAG_ENHANCED) {
		if (pd_total < IW_MPA_IRDORD_LEN)
			return -EMSGSIZE;
		mpa_get_irdord(pd, f);
		pd += IW_MPA_IRDORD_LEN;
		pd_total -= IW_MPA_IRDORD_LEN;
	}
	f->pd_len = pd_total;
	memcpy(f->pd, pd, pd_total);
	return 0;
}

/* ---------------------------------------------------------- DDP/RDMAP */

/* RFC 5040 section 4.3: Write and Read Response are the tagged messages. */
static bool op_is_tagged(uint8_t op)
{
	return op == IW_OP_WRITE || op == IW_OP_READ_RESP;
}

size_t rr__iw_hdr_encode(const struct iw_hdr *h, uint8_t *buf)
{
	uint8_t ddp = IW_DDP_VERSION;

	if (h->tagged)
		ddp |= IW_DDP_TAGGED;
	if (h->last)
		ddp |= IW_DDP_LAST;
	put_be16(buf, h->mpa_len);
	buf[2] = ddp;
	buf[3] = IW_RDMAP_VERSION << RDMAP_VER_SHIFT |
		 (h->opcode & RDMAP_OP_MASK);
	if (h->tagged) {
		put_be32(buf + 4, h->stag);
		put_be64(buf + 8, h->to);
		return IW_TAGGED_HDR_LEN;
	}
	put_be32(buf + 4, h->inval_stag);
	put_be32(buf + 8, h->qn);
	put_be32(buf + 12, h->msn);
	put_be32(buf + 16, h->mo);
	return IW_UNTAGGED_HDR_LEN;
}

static int hdr_check_ctrl(uint8_t ddp, uint8_t rdmap)
{
	uint8_t op = rdmap & RDMAP_OP_MASK;

	if ((ddp & DDP_RSVD_MASK) || (ddp & DDP_VER_MASK) != IW_DDP_VERSION)
		return -EPROTO;
	if ((rdmap & RDMAP_RSVD_MASK) ||
	    rdmap >> RDMAP_VER_SHIFT != IW_RDMAP_VERSION)
		return -EPROTO;
	if (op > IW_OP_TERMINATE)
		return -EOPNOTSUPP;
	if (op_is_tagged(op) != !!(ddp & IW_DDP_TAGGED))
		return -EOPNOTSUPP;
	return 0;
}

int rr__iw_hdr_decode(const uint8_t *buf, size_t avail, struct iw_hdr *h)
{
	size_t hlen;
	int rc;

	/* Judge the control bytes as soon as they arrive: garbage fails fast.
	 */
	if (avail < 4)
		return 0;
	rc = hdr_check_ctrl(buf[2], buf[3]);
	if (rc)
		return rc;
	hlen = (buf[2] & IW_DDP_TAGGED) ? IW_TAGGED_HDR_LEN
					: IW_UNTAGGED_HDR_LEN;
	if ((size_t)get_be16(buf) + 2 < hlen)
		return -EMSGSIZE;
	if (avail < hlen)
		return 0;
	memset(h, 0, sizeof(*h));
	h->mpa_len = get_be16(buf);
	h->tagged = buf[2] & IW_DDP_TAGGED;
	h->last = buf[2] & IW_DDP_LAST;
	h->opcode = buf[3] & RDMAP_OP_MASK;
	if (h->tagged) {
		h->stag = get_be32(buf + 4);
		h->to = get_be64(buf + 8);
	} else {
		h->inval_stag = get_be32(buf + 4);
		h->qn = get_be32(buf + 8);
		h->msn = get_be32(buf + 12);
		h->mo = get_be32(buf + 16);
	}
	return (int)hlen;
}

void rr__iw_read_req_encode(const struct iw_read_req *r,
			    uint8_t buf[IW_READ_REQ_LEN])
{
	put_be32(buf, r->sink_stag);
	put_be64(buf + 4, r->sink_to);
	put_be32(buf + 12, r->size);
	put_be32(buf + 16, r->src_stag);
	put_be64(buf + 20, r->src_to);
}

int rr__iw_read_req_decode(const uint8_t *buf, size_t len,
			   struct iw_read_req *r)
{
	if (len != IW_READ_REQ_LEN)
		return -EMSGSIZE;
	r->sink_stag = get_be32(buf);
	r->sink_to = get_be64(buf + 4);
	r->size = get_be32(buf + 12);
	r->src_stag = get_be32(buf + 16);
	r->src_to = get_be64(buf + 20);
	return 0;
}

/* ---------------------------------------------------------- Terminate */

/*
 * Bytes the header-control bits promise after the control word; the DDP
 * part's size depends on the T bit of the copied DDP control byte. Returns
 * -1 when hdr is too short to hold that byte.
 */
static int term_hdr_len(bool m, bool d, bool r, const uint8_t *hdr, size_t have)
{
	int len = 0;

	if (m || d) {
		if (have < TERM_SEGLEN_LEN + 1)
			return -1;
		len = (hdr[TERM_SEGLEN_LEN] & IW_DDP_TAGGED)
			      ? IW_TAGGED_HDR_LEN
			      : IW_UNTAGGED_HDR_LEN;
	}
	if (r)
		len += IW_READ_REQ_LEN;
	return len;
}

int rr__iw_term_encode(const struct iw_term *t, uint8_t *buf, size_t cap)
{
	int want = term_hdr_len(t->hdr_mpa, t->hdr_ddp, t->hdr_rdmap, t->hdr,
				t->hdr_len);

	if (t->layer > 0xf || t->etype > 0xf || want != t->hdr_len)
		return -EINVAL;
	if (cap < TERM_CTRL_LEN + (size_t)t->hdr_len)
		return -ENOSPC;
	buf[0] = t->layer << 4 | t->etype;
	buf[1] = t->ecode;
	buf[2] = (t->hdr_mpa ? TERM_M : 0) | (t->hdr_ddp ? TERM_D : 0) |
		 (t->hdr_rdmap ? TERM_R : 0);
	buf[3] = 0;
	memcpy(buf + TERM_CTRL_LEN, t->hdr, t->hdr_len);
	return TERM_CTRL_LEN + t->hdr_len;
}

/*
 * Linux siw declares the control word as a __be32 bitfield listing layer
 * first; on a little-endian host that puts layer in the low nibble of byte
 * 0, etype in the high one, and M/D/R in bits 0/1/2 of byte 2, where RFC
 * 5040 has reserved zeroes. Flags found only there are that layout, so read
 * it that way; without flags the two layouts cannot be told apart.
 */
static void term_ctrl_get(const uint8_t *b, struct iw_term *t)
{
	bool siw_le = !(b[2] & (TERM_M | TERM_D | TERM_R)) &&
		      (b[2] & TERM_SIW_LE_MASK);

	t->ecode = b[1];
	if (siw_le) {
		t->layer = b[0] & 0xf;
		t->etype = b[0] >> 4;
		t->hdr_mpa = b[2] & 0x01;
		t->hdr_ddp = b[2] & 0x02;
		t->hdr_rdmap = b[2] & 0x04;
		return;
	}
	t->layer = b[0] >> 4;
	t->etype = b[0] & 0xf;
	t->hdr_mpa = b[2] & TERM_M;
	t->hdr_ddp = b[2] & TERM_D;
	t->hdr_rdmap = b[2] & TERM_R;
}

int rr__iw_term_decode(const uint8_t *buf, size_t len, struct iw_term *t)
{
	size_t have;
	int want;

	if (len < TERM_CTRL_LEN)
		return -EMSGSIZE;
	memset(t, 0, sizeof(*t));
	term_ctrl_get(buf, t);
	if (t->layer > IW_TERM_LLP)
		return -EPROTO;
	have = len - TERM_CTRL_LEN;
	want = term_hdr_len(t->hdr_mpa, t->hdr_ddp, t->hdr_rdmap,
			    buf + TERM_CTRL_LEN, have);
	if (want < 0 || (size_t)want != have)
		return -EMSGSIZE;
	t->hdr_len = (uint16_t)want;
	memcpy(t->hdr, buf + TERM_CTRL_LEN, have);
	return 0;
}

/* ---------------------------------------------------------------- CRC */

void rr__iw_crc_store(uint8_t out[IW_CRC_LEN], uint32_t crc)
{
	out[0] = crc;
	out[1] = crc >> 8;
	out[2] = crc >> 16;
	out[3] = crc >> 24;
}

uint32_t rr__iw_crc_load(const uint8_t in[IW_CRC_LEN])
{
	return (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 |
	       (uint32_t)in[3] << 24;
}
