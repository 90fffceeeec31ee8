/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mpa_synth: a tiny, self-contained iWARP talker used to test the wire judge
 * (wire_check.sh) itself, independently of our provider.
 *
 * It opens one TCP connection to itself on 127.0.0.1:PORT (a forked child is
 * the initiator) and puts on the wire what a siw peer would: an MPA Request
 * and Reply (rev 2, enhanced/RFC 6581 IRD/ORD block), then FPDUs carrying
 * RDMAP Send, RDMA Write, RDMA Read Request and RDMA Read Response.
 *
 * It deliberately shares no code with src/: a judge that reuses the encoder
 * it judges proves nothing. The CRC32c here is a plain bitwise one.
 *
 *   mpa_synth --port P [--crc] [--bad-crc] [--coalesce]
 *
 *   --crc       negotiate MPA CRC and fill it in (little-endian, like siw)
 *   --bad-crc   with --crc: corrupt the CRC of one FPDU (the judge must fail)
 *   --coalesce  also write several FPDUs with one write(), so that one TCP
 *               segment carries more than one FPDU
 *
 * Exit status 0 when the exchange completed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int use_crc, bad_crc, coalesce;

static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
	}
	return ~c;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static void die(const char *what)
{
	fprintf(stderr, "mpa_synth: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		p += w;
		n -= (size_t)w;
	}
}

static void read_all(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read");
		if (r == 0) {
			fprintf(stderr, "mpa_synth: unexpected EOF\n");
			exit(1);
		}
		p += r;
		n -= (size_t)r;
	}
}

/* MPA Request/Reply: key, flags, rev 2, pd length, IRD/ORD, 4 bytes app. */
static size_t mpa_rr(uint8_t *b, int reply)
{
	memcpy(b, reply ? "MPA ID Rep Frame" : "MPA ID Req Frame", 16);
	b[16] = (uint8_t)((use_crc ? 0x40 : 0) | 0x10); /* C, S (enhanced) */
	b[17] = 2;
	put16(b + 18, 8);
	put16(b + 20, 16); /* IRD */
	put16(b + 22, 16); /* ORD */
	memcpy(b + 24, reply ? "rep!" : "req!", 4);
	return 28;
}

static int fpdu_count;

/* Frames ULPDU [u, u+n) into an FPDU at b; returns the FPDU length. */
static size_t fpdu(uint8_t *b, const uint8_t *u, size_t n)
{
	size_t len = 2 + n, pad = (4 - len % 4) % 4;
	uint32_t crc = 0;

	put16(b, (uint16_t)n);
	memcpy(b + 2, u, n);
	memset(b + len, 0, pad);
	len += pad;
	if (use_crc) {
		crc = crc32c(b, len);
		if (bad_crc && ++fpdu_count == 2)
			crc ^= 0x00010000u;
	}
	/* MPA CRC goes out least significant byte first (as siw does). */
	b[len] = (uint8_t)crc;
	b[len + 1] = (uint8_t)(crc >> 8);
	b[len + 2] = (uint8_t)(crc >> 16);
	b[len + 3] = (uint8_t)(crc >> 24);
	return len + 4;
}

#define DDP_T	0x80
#define DDP_L	0x40
#define DDP_V	0x01
#define RDMAP_V 0x40

/* Untagged: Send (QN 0), Read Request (QN 1). */
static size_t untagged(uint8_t *u, uint8_t op, uint32_t qn, uint32_t msn,
		       const uint8_t *pl, size_t n)
{
	u[0] = DDP_L | DDP_V;
	u[1] = RDMAP_V | op;
	put32(u + 2, 0); /* reserved for ULP / invalidate STag */
	put32(u + 6, qn);
	put32(u + 10, msn);
	put32(u + 14, 0); /* MO */
	memcpy(u + 18, pl, n);
	return 18 + n;
}

/* Tagged: RDMA Write, Read Response. */
static size_t tagged(uint8_t *u, uint8_t op, uint32_t stag, uint64_t to,
		     const uint8_t *pl, size_t n)
{
	u[0] = DDP_T | DDP_L | DDP_V;
	u[1] = RDMAP_V | op;
	put32(u + 2, stag);
	put64(u + 6, to);
	memcpy(u + 14, pl, n);
	return 14 + n;
}

static size_t send_msg(uint8_t *b, uint32_t msn, size_t n)
{
	uint8_t u[2048], pl[2048];

	memset(pl, 'S', n);
	return fpdu(b, u, untagged(u, 3, 0, msn, pl, n));
}

static size_t write_msg(uint8_t *b, uint32_t stag, size_t n)
{
	uint8_t u[2048], pl[2048];

	memset(pl, 'W', n);
	return fpdu(b, u, tagged(u, 0, stag, 0x1000, pl, n));
}

static size_t read_req(uint8_t *b, uint32_t msn, uint32_t sink, uint32_t src,
		       uint32_t sz)
{
	uint8_t u[64], rr[28];

	put32(rr, sink);
	put64(rr + 4, 0x2000);
	put32(rr + 12, sz);
	put32(rr + 16, src);
	put64(rr + 20, 0x3000);
	return fpdu(b, u, untagged(u, 1, 1, msn, rr, sizeof(rr)));
}

static size_t read_resp(uint8_t *b, uint32_t sink, size_t n)
{
	uint8_t u[2048], pl[2048];

	memset(pl, 'R', n);
	return fpdu(b, u, tagged(u, 2, sink, 0x2000, pl, n));
}

/* Reads one FPDU (length-prefixed) and discards it. */
static void eat_fpdu(int fd)
{
	uint8_t b[4096];
	size_t n, len, pad;

	read_all(fd, b, 2);
	n = ((size_t)b[0] << 8) | b[1];
	len = 2 + n;
	pad = (4 - len % 4) % 4;
	if (len + pad + 4 > sizeof(b)) {
		fprintf(stderr, "mpa_synth: FPDU too long\n");
		exit(1);
	}
	read_all(fd, b + 2, n + pad + 4);
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int initiator(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	uint8_t b[8192];
	size_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	nodelay(fd);
	write_all(fd, b, mpa_rr(b, 0));
	read_all(fd, b, 28); /* reply */

	for (uint32_t i = 0; i < 4; i++) {
		write_all(fd, b, send_msg(b, i + 1, 64));
		write_all(fd, b, write_msg(b, 0x100 + i, 200 + i));
	}
	write_all(fd, b, read_req(b, 1, 0x200, 0x300, 300));
	eat_fpdu(fd); /* Read Response */
	if (coalesce) {
		n = send_msg(b, 5, 16);
		n += write_msg(b + n, 0x105, 33);
		n += send_msg(b + n, 6, 1);
		n += read_req(b + n, 2, 0x201, 0x301, 7);
		write_all(fd, b, n);
		eat_fpdu(fd); /* Read Response */
	}
	eat_fpdu(fd); /* final Send from the responder */
	close(fd);
	return 0;
}

static int responder(int lfd)
{
	uint8_t b[8192];
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		die("accept");
	nodelay(fd);
	read_all(fd, b, 28); /* request */
	write_all(fd, b, mpa_rr(b, 1));
	for (int i = 0; i < 8; i++) /* 4 x (Send, Write) */
		eat_fpdu(fd);
	eat_fpdu(fd); /* Read Request */
	write_all(fd, b, read_resp(b, 0x200, 300));
	if (coalesce) {
		for (int i = 0; i < 4; i++) /* Send, Write, Send, Read Req */
			eat_fpdu(fd);
		write_all(fd, b, read_resp(b, 0x201, 7));
	}
	write_all(fd, b, send_msg(b, 1, 40));
	/* Wait for the initiator's FIN so the whole exchange is on the wire. */
	while (read(fd, b, sizeof(b)) > 0)
		;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	long port = 0;
	int lfd, one = 1, st;
	pid_t pid;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--crc"))
			use_crc = 1;
		else if (!strcmp(argv[i], "--bad-crc"))
			bad_crc = 1;
		else if (!strcmp(argv[i], "--coalesce"))
			coalesce = 1;
		else {
			fprintf(stderr,
				"usage: %s --port P [--crc] "
				"[--bad-crc] [--coalesce]\n",
				argv[0]);
			return 2;
		}
	}
	if (port <= 0 || port > 65535) {
		fprintf(stderr, "mpa_synth: --port is required\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(lfd, 1) < 0)
		die("listen");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(lfd);
		_exit(initiator((uint16_t)port));
	}
	responder(lfd);
	close(lfd);
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
