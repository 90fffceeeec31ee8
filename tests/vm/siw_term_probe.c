/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * siw_term_probe ADDR PORT: makes the Linux kernel's soft-iWARP send
 * Terminates, and checks that our codec (src/fabric/iwarp/wire.c) reads
 * each as the error siw meant.
 *
 * Each probe is a raw TCP connection to a kernel iWARP listener (the
 * kernel nfsd's, on siw): an MPA Request (RFC 6581 enhanced, no CRC, no
 * markers), then one FPDU that RFC 5040/5041 make siw refuse. The
 * Terminate siw answers with is printed byte for byte, with where its
 * control word puts the layer and error type (RFC 5040 section 4.8: layer
 * in the high nibble of the first byte, M/D/R in the top bits of the
 * third) and whether our decoder got layer, type and code right. Linux
 * declares that word as a bitfield, so its layout on the wire is the
 * question this answers. A last probe sends siw a Terminate of ours
 * (RFC layout), so the kernel log can say how siw read it.
 *
 * Exit: 0 when every Terminate was read right, 1 otherwise.
 */
#include "fabric/iwarp/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WAIT_MS	 10000
#define NUDGE_MS 2000 /* await_answer */
#define NUDGES	 4
#define BAD_STAG 0xdead0100u

struct probe {
	const char *name;
	int (*send_bad)(int fd);
	uint8_t layer, etype, ecode; /* what siw must report */
};

static int io_wait(int fd, short ev)
{
	struct pollfd p = {.fd = fd, .events = ev};
	int n = poll(&p, 1, WAIT_MS);

	return n == 1 ? 0 : n == 0 ? -ETIMEDOUT : -errno;
}

static int write_all(int fd, const uint8_t *b, size_t len)
{
	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* -ECONNRESET when the peer closed before len bytes. */
static int read_full(int fd, uint8_t *b, size_t len)
{
	while (len) {
		ssize_t n;
		int rc = io_wait(fd, POLLIN);

		if (rc)
			return rc;
		n = read(fd, b, len);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0) {
			b += n;
			len -= (size_t)n;
		}
	}
	return 0;
}

static int tcp_connect(const char *addr, uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port)};
	int fd;

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* MPA Request out, Reply in; the stream then carries FPDUs. */
static int mpa_handshake(int fd)
{
	struct iw_mpa_frame req = {.flags = IW_MPA_FLAG_ENHANCED,
				   .rev = IW_MPA_REV,
				   .ird = 16,
				   .ord = 16};
	struct iw_mpa_frame rep;
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	uint16_t pd_total;
	int n = rr__iw_mpa_encode(&req, buf, sizeof(buf)), rc;

	if (n < 0)
		return n;
	rc = write_all(fd, buf, (size_t)n);
	if (!rc)
		rc = read_full(fd, buf, IW_MPA_HDR_LEN);
	if (!rc)
		rc = rr__iw_mpa_decode_header(buf, true, &rep, &pd_total);
	if (!rc)
		rc = read_full(fd, buf, pd_total);
	if (!rc)
		rc = rr__iw_mpa_decode_pdata(buf, pd_total, &rep);
	if (rc)
		return rc;
	if (rep.flags & (IW_MPA_FLAG_REJECT | IW_MPA_FLAG_CRC))
		return -ECONNREFUSED; /* refused, or CRC we did not ask for */
	return 0;
}

/* One FPDU: header, payload, pad, a zero CRC field (CRC is off). */
static int send_fpdu(int fd, struct iw_hdr *h, const void *pl, size_t len)
{
	uint8_t buf[128] = {0};
	size_t hl = h->tagged ? IW_TAGGED_HDR_LEN : IW_UNTAGGED_HDR_LEN;

	h->mpa_len = (uint16_t)(hl - 2 + len);
	if (rr__iw_hdr_encode(h, buf) != hl ||
	    hl + len + 3 + IW_CRC_LEN > sizeof(buf))
		return -EINVAL;
	memcpy(buf + hl, pl, len);
	return write_all(fd, buf,
			 hl + len + iw_fpdu_pad(h->mpa_len) + IW_CRC_LEN);
}

/* A Send on untagged queue 5, which RFC 5040 does not define. */
static int send_bad_qn(int fd)
{
	struct iw_hdr h = {
		.last = true, .opcode = IW_OP_SEND, .qn = 5, .msn = 1};

	return send_fpdu(fd, &h, "probe", 5);
}

/* An RDMA Write to an STag nobody registered. */
static int write_bad_stag(int fd)
{
	struct iw_hdr h = {.tagged = true,
			   .last = true,
			   .opcode = IW_OP_WRITE,
			   .stag = BAD_STAG};

	return send_fpdu(fd, &h, "probe", 5);
}

/* An RDMA Read Request whose source STag nobody registered. */
static int read_bad_stag(int fd)
{
	struct iw_hdr h = {.last = true,
			   .opcode = IW_OP_READ_REQ,
			   .qn = IW_QN_READ_REQ,
			   .msn = 1};
	struct iw_read_req r = {
		.sink_stag = 0x1234, .size = 64, .src_stag = BAD_STAG};
	uint8_t pl[IW_READ_REQ_LEN];

	rr__iw_read_req_encode(&r, pl);
	return send_fpdu(fd, &h, pl, sizeof(pl));
}

static void hex(const char *what, const uint8_t *b, size_t len)
{
	printf("  %s (%zu bytes):", what, len);
	for (size_t i = 0; i < len; i++)
		printf("%s%02x", i % 16 ? " " : "\n    ", b[i]);
	printf("\n");
}

/* Reads FPDUs until a Terminate; its whole FPDU lands in buf. */
static int recv_terminate(int fd, uint8_t *buf, size_t cap, struct iw_hdr *h)
{
	for (;;) {
		size_t total;
		int rc = read_full(fd, buf, 2);

		if (rc)
			return rc;
		total = 2 + ((size_t)buf[0] << 8 | buf[1]);
		total += iw_fpdu_pad((uint16_t)(total - 2)) + IW_CRC_LEN;
		if (total > cap)
			return -EMSGSIZE;
		rc = read_full(fd, buf + 2, total - 2);
		if (!rc)
			rc = rr__iw_hdr_decode(buf, total, h);
		if (rc < 0)
			return rc;
		if (h->opcode == IW_OP_TERMINATE)
			return (int)total;
		printf("  (skipped an FPDU with opcode %u)\n", h->opcode);
	}
}

/* Where the control word put things, judged against what siw meant. */
static void layout(const struct probe *p, const uint8_t *c)
{
	uint8_t rfc = (uint8_t)(p->layer << 4 | p->etype);
	uint8_t le = (uint8_t)(p->etype << 4 | p->layer);

	printf("  control word %02x %02x %02x %02x: ", c[0], c[1], c[2], c[3]);
	if (rfc == le)
		printf("layer and type equal, nibble order not visible");
	else if (c[0] == rfc)
		printf("layer in the high nibble (RFC 5040)");
	else if (c[0] == le)
		printf("layer in the LOW nibble (siw's little-endian "
		       "bitfield)");
	else
		printf("layer/type byte matches neither layout");
	if (c[2] & 0xe0)
		printf("; M/D/R in bits 7..5 (RFC 5040)\n");
	else if (c[2] & 0x07)
		printf("; M/D/R in bits 0..2 (siw's little-endian bitfield)\n");
	else
		printf("; no M/D/R bits\n");
}

static int check(const struct probe *p, const uint8_t *fpdu, size_t len,
		 const struct iw_hdr *h)
{
	size_t hl = IW_UNTAGGED_HDR_LEN;
	struct iw_term t;
	int rc;

	hex("Terminate FPDU from siw", fpdu, len);
	if (h->qn != IW_QN_TERMINATE)
		printf("  note: Terminate on queue %u, not 2\n", h->qn);
	layout(p, fpdu + hl);
	rc = rr__iw_term_decode(fpdu + hl, iw_hdr_payload_len(h), &t);
	if (rc) {
		printf("  FAIL: our decoder refused it (%s)\n", strerror(-rc));
		return 1;
	}
	printf("  decoded: layer %u type %u code 0x%02x, M%d D%d R%d, %u "
	       "header bytes; siw meant layer %u type %u code 0x%02x\n",
	       t.layer, t.etype, t.ecode, t.hdr_mpa, t.hdr_ddp, t.hdr_rdmap,
	       t.hdr_len, p->layer, p->etype, p->ecode);
	if (t.layer != p->layer || t.etype != p->etype || t.ecode != p->ecode) {
		printf("  FAIL: decoded as another error\n");
		return 1;
	}
	return 0;
}

/*
 * siw's accept sends its MPA Reply before it hands the socket's data-ready
 * upcall to the QP (siw_accept, Linux 6.1): a frame that lands in between
 * waits in the socket until more data comes. Once, with the guest beside
 * busy host tests, a probe got no answer in 10 s where it gets one in
 * 0.1 s, and nothing in siw's log; that window is the likely cause. So the
 * probe sends its frame again when nothing has come for NUDGE_MS, at most
 * NUDGES times (10 s in all, as before); siw reads its socket from the
 * first copy, which is the one it answers.
 */
static int await_answer(int fd, const struct probe *p)
{
	for (int i = 0;; i++) {
		struct pollfd q = {.fd = fd, .events = POLLIN};
		int n = poll(&q, 1, NUDGE_MS), rc;

		if (n)
			return n < 0 ? -errno : 0;
		if (i == NUDGES)
			return -ETIMEDOUT;
		printf("  (nothing in %d ms: the frame once more)\n", NUDGE_MS);
		rc = p->send_bad(fd);
		if (rc)
			return rc;
	}
}

static int run_probe(const char *addr, uint16_t port, const struct probe *p)
{
	uint8_t buf[512];
	struct iw_hdr h;
	int fd = tcp_connect(addr, port), rc, n;

	printf("probe %s:\n", p->name);
	if (fd < 0) {
		printf("  FAIL: connect: %s\n", strerror(-fd));
		return 1;
	}
	rc = mpa_handshake(fd);
	if (!rc)
		rc = p->send_bad(fd);
	if (!rc)
		rc = await_answer(fd, p);
	n = rc ? rc : recv_terminate(fd, buf, sizeof(buf), &h);
	close(fd);
	if (n < 0) {
		printf("  FAIL: no Terminate: %s\n", strerror(-n));
		return 1;
	}
	return check(p, buf, (size_t)n, &h);
}

/*
 * Ours to siw: layer DDP, type untagged, code 3 (MSN out of range), no
 * copied header. siw logs how it read the control word.
 */
static int send_ours(const char *addr, uint16_t port)
{
	struct iw_term t = {.layer = IW_TERM_DDP,
			    .etype = IW_TERM_DDP_UNTAGGED,
			    .ecode = IW_TERM_DDP_U_MSN_RANGE};
	struct iw_hdr h = {.last = true,
			   .opcode = IW_OP_TERMINATE,
			   .qn = IW_QN_TERMINATE,
			   .msn = 1};
	uint8_t pl[64];
	int fd = tcp_connect(addr, port), n, rc;

	printf("probe our-terminate-to-siw: layer 1 type 2 code 0x03, no "
	       "header copied\n");
	if (fd < 0)
		return 1;
	n = rr__iw_term_encode(&t, pl, sizeof(pl));
	rc = n < 0 ? n : mpa_handshake(fd);
	if (!rc)
		rc = send_fpdu(fd, &h, pl, (size_t)n);
	if (!rc)
		hex("our Terminate payload", pl, (size_t)n);
	/* siw closes; wait for that so its log line is written first */
	while (!rc && read_full(fd, pl, 1) == 0)
		;
	close(fd);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct probe probes[] = {
		{"send-on-queue-5", send_bad_qn, IW_TERM_DDP,
		 IW_TERM_DDP_UNTAGGED, IW_TERM_DDP_U_INVALID_QN},
		{"write-to-unknown-stag", write_bad_stag, IW_TERM_DDP,
		 IW_TERM_DDP_TAGGED, IW_TERM_DDP_T_INVALID_STAG},
		{"read-from-unknown-stag", read_bad_stag, IW_TERM_RDMAP,
		 IW_TERM_RDMAP_REMOTE_PROT, IW_TERM_ECODE_INVALID_STAG},
	};
	int bad = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: siw_term_probe ADDR PORT\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		bad += run_probe(argv[1], (uint16_t)atoi(argv[2]), &probes[i]);
	bad += send_ours(argv[1], (uint16_t)atoi(argv[2]));
	printf("siw_term_probe: %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
