/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * iWARP wire formats: MPA (RFC 5044, enhanced connection setup RFC 6581),
 * DDP (RFC 5041) and RDMAP (RFC 5040) headers, as the Linux siw driver
 * puts them on the wire. Pure codecs: no I/O, no allocation, every decoder
 * bounds-checks its input and returns a negative errno on bad bytes.
 *
 * An FPDU on the stream is:
 *   MPA length (2, = ULPDU length) | ULPDU (DDP/RDMAP header + payload)
 *   | pad to a 4-byte boundary of (2 + ULPDU length) | CRC32c (4)
 * The CRC covers length, ULPDU and pad; with CRC off the field is zero.
 */
#ifndef RR_IWARP_WIRE_H
#define RR_IWARP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- MPA */

#define IW_MPA_KEY_LEN	  16
#define IW_MPA_HDR_LEN	  20  /* key + flags + rev + private data length */
#define IW_MPA_IRDORD_LEN 4   /* RFC 6581 block at the start of private data */
#define IW_MPA_MAX_PD	  256 /* total private data incl. the IRD/ORD block */
#define IW_MPA_MAX_APP_PD (IW_MPA_MAX_PD - IW_MPA_IRDORD_LEN) /* 252 */
#define IW_MPA_REV	  2

#define IW_MPA_FLAG_MARKERS  0x80
#define IW_MPA_FLAG_CRC	     0x40
#define IW_MPA_FLAG_REJECT   0x20
#define IW_MPA_FLAG_ENHANCED 0x10

#define IW_MPA_IRDORD_MASK 0x3fff
#define IW_MPA_P2P	   0x8000 /* in the IRD word: peer-to-peer mode */
#define IW_MPA_RTR_WRITE   0x8000 /* in the ORD word: zero-length Write RTR */
#define IW_MPA_RTR_READ	   0x4000 /* in the ORD word: zero-length Read RTR */
/*
 * Bit 14 of the IRD word asks for a zero-length Send as RTR (RFC 6581). It
 * shares the rtr field with the ORD-word bits above, so it gets a bit that
 * is free there; the codec moves it to and from the IRD word.
 */
#define IW_MPA_RTR_SEND 0x0001

struct iw_mpa_frame {
	bool reply;    /* "MPA ID Rep Frame" rather than "MPA ID Req Frame" */
	uint8_t flags; /* IW_MPA_FLAG_* */
	uint8_t rev;
	/* RFC 6581 block; present on the wire when flags has ENHANCED. */
	uint16_t ird;
	uint16_t ord;
	bool p2p;
	uint16_t rtr; /* IW_MPA_RTR_* bits as received/to send */
	/* Application private data after the IRD/ORD block. */
	uint16_t pd_len;
	uint8_t pd[IW_MPA_MAX_PD];
};

/*
 * Encodes header + private data into buf. Returns the byte count or
 * -ENOSPC (buffer) / -EINVAL (pd_len too large for the mode).
 */
int rr__iw_mpa_encode(const struct iw_mpa_frame *f, uint8_t *buf, size_t cap);
/*
 * Decodes the fixed 20-byte header. Checks the key (request or reply, as
 * expect_reply says), rev == 2 (rev 1 accepted only without ENHANCED), and
 * the private data length (<= IW_MPA_MAX_PD, >= 4 when ENHANCED).
 * Sets *pd_total to the number of private data bytes that follow.
 * Returns 0, -EBADMSG (wrong key), -EPROTO (rev/flags), -EMSGSIZE (length).
 */
int rr__iw_mpa_decode_header(const uint8_t hdr[IW_MPA_HDR_LEN],
			     bool expect_reply, struct iw_mpa_frame *f,
			     uint16_t *pd_total);
/* Parses the private data that followed the header (IRD/ORD block + app). */
int rr__iw_mpa_decode_pdata(const uint8_t *pd, uint16_t pd_total,
			    struct iw_mpa_frame *f);

/* ---------------------------------------------------------- DDP/RDMAP */

enum iw_opcode {
	IW_OP_WRITE = 0,
	IW_OP_READ_REQ = 1,
	IW_OP_READ_RESP = 2,
	IW_OP_SEND = 3,
	IW_OP_SEND_INV = 4,
	IW_OP_SEND_SE = 5,
	IW_OP_SEND_SE_INV = 6,
	IW_OP_TERMINATE = 7,
};

/* Untagged queue numbers (RFC 5040 section 5.1). */
enum iw_qn {
	IW_QN_SEND = 0,
	IW_QN_READ_REQ = 1,
	IW_QN_TERMINATE = 2,
};

#define IW_DDP_TAGGED	 0x80
#define IW_DDP_LAST	 0x40
#define IW_DDP_VERSION	 1
#define IW_RDMAP_VERSION 1

/* Header lengths including the 2-byte MPA length field. */
#define IW_TAGGED_HDR_LEN   16
#define IW_UNTAGGED_HDR_LEN 20
#define IW_CRC_LEN	    4

struct iw_hdr {
	uint16_t mpa_len; /* ULPDU length: DDP/RDMAP header + payload */
	bool tagged;
	bool last;
	uint8_t opcode; /* enum iw_opcode */
	/* tagged: the sink STag and tagged offset */
	uint32_t stag;
	uint64_t to;
	/* untagged: invalidate STag (Send with Invalidate), QN, MSN, MO */
	uint32_t inval_stag;
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;
};

/* Encodes the header (MPA length first). Returns its length (16 or 20). */
size_t rr__iw_hdr_encode(const struct iw_hdr *h, uint8_t *buf);
/*
 * Decodes a header from avail bytes. Returns the header length (16 or 20)
 * when complete, 0 when more bytes are needed, or a negative errno:
 * -EPROTO for a bad DDP or RDMAP version or reserved bits, -EOPNOTSUPP for an
 * opcode not in iw_opcode or an opcode whose tagged bit is wrong (Write and
 * Read Response are tagged, the rest untagged), -EMSGSIZE when mpa_len is
 * shorter than the header.
 */
int rr__iw_hdr_decode(const uint8_t *buf, size_t avail, struct iw_hdr *h);
/* Payload bytes carried by an FPDU whose header is h. */
static inline uint32_t iw_hdr_payload_len(const struct iw_hdr *h)
{
	return (uint32_t)h->mpa_len + 2u -
	       (h->tagged ? IW_TAGGED_HDR_LEN : IW_UNTAGGED_HDR_LEN);
}
/* Pad bytes after the ULPDU so that 2 + mpa_len + pad is a multiple of 4. */
static inline uint32_t iw_fpdu_pad(uint16_t mpa_len)
{
	return (4u - ((2u + mpa_len) & 3u)) & 3u;
}

/* RDMA Read Request payload (RFC 5040 section 4.4), 28 bytes. */
#define IW_READ_REQ_LEN 28
struct iw_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};
void rr__iw_read_req_encode(const struct iw_read_req *r,
			    uint8_t buf[IW_READ_REQ_LEN]);
/* len is the whole payload: 0, or -EMSGSIZE unless it is IW_READ_REQ_LEN. */
int rr__iw_read_req_decode(const uint8_t *buf, size_t len,
			   struct iw_read_req *r);

/* Terminate (RFC 5040 section 4.8). Layers and error types/codes. */
enum iw_term_layer { IW_TERM_RDMAP = 0, IW_TERM_DDP = 1, IW_TERM_LLP = 2 };
enum iw_term_rdmap_etype {
	IW_TERM_RDMAP_LOCAL_CATA = 0,
	IW_TERM_RDMAP_REMOTE_PROT = 1,
	IW_TERM_RDMAP_REMOTE_OP = 2,
};
enum iw_term_rdmap_ecode {
	IW_TERM_ECODE_INVALID_STAG = 0x00,
	IW_TERM_ECODE_BASE_BOUNDS = 0x01,
	IW_TERM_ECODE_ACCESS_RIGHTS = 0x02,
	IW_TERM_ECODE_STAG_NOT_ASSOC = 0x03,
	IW_TERM_ECODE_TO_WRAP = 0x04,
	IW_TERM_ECODE_RDMAP_VERSION = 0x05,
	IW_TERM_ECODE_UNEXPECTED_OP = 0x06,
	IW_TERM_ECODE_CATA_STREAM = 0x07,
	IW_TERM_ECODE_CATA_GLOBAL = 0x08,
	IW_TERM_ECODE_CANT_INVALIDATE = 0x09,
	IW_TERM_ECODE_UNSPECIFIED = 0xff,
};
enum iw_term_ddp_etype {
	IW_TERM_DDP_LOCAL_CATA = 0,
	IW_TERM_DDP_TAGGED = 1,
	IW_TERM_DDP_UNTAGGED = 2,
};
enum iw_term_ddp_tagged_ecode {
	IW_TERM_DDP_T_INVALID_STAG = 0x00,
	IW_TERM_DDP_T_BASE_BOUNDS = 0x01,
	IW_TERM_DDP_T_STAG_NOT_ASSOC = 0x02,
	IW_TERM_DDP_T_TO_WRAP = 0x03,
	IW_TERM_DDP_T_VERSION = 0x04,
};
enum iw_term_ddp_untagged_ecode {
	IW_TERM_DDP_U_INVALID_QN = 0x01,
	IW_TERM_DDP_U_NO_BUFFER = 0x02, /* invalid MSN: no buffer available */
	IW_TERM_DDP_U_MSN_RANGE = 0x03,
	IW_TERM_DDP_U_INVALID_MO = 0x04,
	IW_TERM_DDP_U_TOO_LONG = 0x05,
	IW_TERM_DDP_U_VERSION = 0x06,
};
/* MPA error codes (LLP layer, error type 0): RFC 5044 section 8, RFC 6581. */
enum iw_term_llp_ecode {
	IW_TERM_LLP_LOST_ALIGN = 0x01, /* TCP connection closed or lost */
	IW_TERM_LLP_CRC = 0x02,
	IW_TERM_LLP_BAD_MARKER = 0x03, /* marker and ULPDU length mismatch */
	IW_TERM_LLP_INVALID_REQ_RESP = 0x04,
	/* Added by RFC 6581 (enhanced connection setup). */
	IW_TERM_LLP_LOCAL_CATA = 0x05,
	IW_TERM_LLP_INSUFFICIENT_IRD = 0x06,
	IW_TERM_LLP_NO_MATCHING_RTR = 0x07,
};

#define IW_TERM_MAX_HDR 28 /* copied DDP/RDMAP header of the offending FPDU */
struct iw_term {
	uint8_t layer; /* enum iw_term_layer */
	uint8_t etype;
	uint8_t ecode;
	bool hdr_mpa;	/* M: the copied header includes the MPA length */
	bool hdr_ddp;	/* D: a DDP segment header is copied */
	bool hdr_rdmap; /* R: an RDMAP header (Read Request) is copied */
	uint16_t hdr_len;
	uint8_t hdr[IW_TERM_MAX_HDR + IW_READ_REQ_LEN];
};
/*
 * The payload is the 4-byte Terminate Control word, then hdr: with D (or M)
 * the 2-byte DDP Segment Length and the 14/18-byte DDP header, with R the
 * 28-byte Read Request header. hdr_len must match what the bits announce.
 * Encode returns the length, -EINVAL (hdr_len/bits mismatch) or -ENOSPC.
 */
int rr__iw_term_encode(const struct iw_term *t, uint8_t *buf, size_t cap);
/*
 * len is the whole payload. Returns 0, -EMSGSIZE when len disagrees with the
 * header-control bits, -EPROTO for a layer above LLP.
 */
int rr__iw_term_decode(const uint8_t *buf, size_t len, struct iw_term *t);

/*
 * The MPA CRC trailer carries the final CRC32c least significant byte first:
 * the zero-length Write FPDU 00 0e c1 40 00 00 00 01 00*8 has CRC
 * 0x5f4cd3eb and trailer eb d3 4c 5f (as Linux siw sends it).
 */
void rr__iw_crc_store(uint8_t out[IW_CRC_LEN], uint32_t crc);
uint32_t rr__iw_crc_load(const uint8_t in[IW_CRC_LEN]);

#endif
