// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfsrdmad against hostile RPC-over-RDMA clients on the iwarp provider
 * (architecture.md invariant 8; issue 15 item 6). Each test starts the daemon
 * as a process, measures the good client (good_client.h, over RDMA: the
 * READ by write chunk, the WRITE by read chunk) alone, then sets up one
 * attack from other loopback addresses (127.0.0.2 and up) and runs the
 * same client beside it, which good_judge holds to its bounds.
 *
 * The attackers are raw peers: TCP sockets speaking MPA and DDP/RDMAP by
 * hand (the provider's own wire codecs), carrying RPC-over-RDMA calls
 * built with the transport's header encoder. A raw peer can do what no
 * provider would: never answer the server's RDMA Read Requests.
 *
 * argv[1] is the nfsrdmad binary.
 */
#include "base/crc32c.h"
#include "fabric/iwarp/wire.h"
#include "rpc/msg.h"
#include "rpcrdma/hdr.h"

#include <rpcrdma/nfs3.h>
#include <rpcrdma/rpc.h>

#include "daemon.h"
#include "io.h"
#include "good_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* Past the 4 KiB inline size: WRITE goes by read chunk, READ by write. */
#define IO_LEN (16u << 10)
/*
 * Under attack the good client runs this long at least: the first stall
 * drop (3 s), the reconnect into a penalty (1 s), the second drop.
 */
#define ATTACK_MS 9000
#define WAIT_MS	  10000
/* Each attacking connection: calls with a read chunk of CHUNK_LEN. */
#define CALLS_PER_CONN 16
#define CHUNK_LEN      (1u << 20)
#define MAX_ATTACKERS  4
#define MAX_IDLE       600
#define RDMA_XPRT      "nfs3+mount3 over rdma"

static const char *daemon_path;

/* A thread attacking from 127.0.0.<host>, and what it saw. */
struct attacker {
	pthread_t th;
	unsigned host;
	uint16_t port;
	atomic_bool *stop;
	atomic_ulong conns, drops, refused, read_reqs;
};

/* The fixture owns the attackers: a failed test still stops them. */
struct fx {
	char top[PATH_MAX], exp[PATH_MAX], state[PATH_MAX];
	struct rr_t_daemon d;
	double base_p99;
	long log0;
	int idle[MAX_IDLE];
	int nidle;
	struct attacker a[MAX_ATTACKERS];
	unsigned nattack;
	atomic_bool stop;
};

/*
 * The good client over RDMA (READ by write chunk, WRITE by read chunk),
 * mounted afresh: GOOD_ROUNDS rounds, and for min_ms at least.
 */
static struct good_run rdma_good(struct fx *f, uint64_t min_ms)
{
	char url[PATH_MAX + 128];

	snprintf(url, sizeof(url),
		 "nfs://127.0.0.1%s?proto=rdma&provider=iwarp&nfsport=%u&"
		 "mountport=%u",
		 f->exp, f->d.rdma, f->d.mount);
	return good_client(url, IO_LEN, min_ms);
}

/* The good client beside the attack set up by the test: the verdicts. */
static void judge(struct fx *f, const char *attack, uint64_t min_ms)
{
	good_judge("hostile-rdma", attack, rdma_good(f, min_ms), f->base_p99,
		   &f->d, f->log0);
}

static long counter(struct fx *f, const char *name)
{
	long v = rr_t_daemon_counter(&f->d, RDMA_XPRT, name);

	if (v < 0)
		fail_msg("the daemon printed no counter %s", name);
	return v;
}

/* ----------------------------------------------------- raw RDMA peer */

struct raw {
	int fd;
	bool crc;
	uint32_t msn; /* of our next Send (RFC 5040: the first is 1) */
};

/* Reads exactly len bytes within WAIT_MS; false on EOF or timeout. */
static bool recv_all(int fd, void *p, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pf, 1, WAIT_MS) != 1)
			return false;
		n = recv(fd, (char *)p + got, len - got, 0);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

static bool send_all(int fd, const void *p, size_t len)
{
	return send(fd, p, len, MSG_NOSIGNAL) == (ssize_t)len;
}

/* A TCP connection to port from 127.0.0.<host>, or -1. */
static int tcp_from(unsigned host, uint16_t port)
{
	struct sockaddr_in me = {.sin_family = AF_INET}, to = me;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	me.sin_addr.s_addr = htonl(0x7f000000u | host);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	to.sin_port = htons(port);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The MPA exchange of an RPC-over-RDMA client (enhanced mode, RFC 8797
 * parameters: 4 KiB inline each way). 0, -ECONNREFUSED for a reject
 * (admission said no), or -EIO.
 */
static int mpa_handshake(struct raw *r)
{
	struct iw_mpa_frame f = {.flags = IW_MPA_FLAG_ENHANCED,
				 .rev = IW_MPA_REV,
				 .ird = 8,
				 .ord = 8,
				 .pd_len = RR_CPARAMS_LEN};
	struct rr_cparams cp = {.inline_send = 4096, .inline_recv = 4096};
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	uint16_t pd_total;
	int n;

	rr__cparams_encode(&cp, f.pd);
	n = rr__iw_mpa_encode(&f, buf, sizeof(buf));
	if (n <= 0 || !send_all(r->fd, buf, (size_t)n) ||
	    !recv_all(r->fd, buf, IW_MPA_HDR_LEN) ||
	    rr__iw_mpa_decode_header(buf, true, &f, &pd_total) ||
	    !recv_all(r->fd, buf + IW_MPA_HDR_LEN, pd_total))
		return -EIO;
	if (f.flags & IW_MPA_FLAG_REJECT)
		return -ECONNREFUSED;
	r->crc = f.flags & IW_MPA_FLAG_CRC;
	r->msn = 1;
	return 0;
}

/* Connects from 127.0.0.<host> through MPA; 0 or a negative errno. */
static int raw_open(struct raw *r, unsigned host, uint16_t port)
{
	int rc;

	r->fd = tcp_from(host, port);
	if (r->fd < 0)
		return -errno;
	rc = mpa_handshake(r);
	if (rc) {
		close(r->fd);
		r->fd = -1;
	}
	return rc;
}

/* One untagged Send carrying msg (the next MSN), CRC as negotiated. */
static bool raw_send(struct raw *r, const uint8_t *msg, uint32_t len)
{
	uint8_t b[1024];
	struct iw_hdr h = {.mpa_len = (uint16_t)(IW_UNTAGGED_HDR_LEN - 2 + len),
			   .last = true,
			   .opcode = IW_OP_SEND,
			   .qn = IW_QN_SEND,
			   .msn = r->msn++};
	size_t hl = rr__iw_hdr_encode(&h, b);
	uint32_t pad = iw_fpdu_pad(h.mpa_len);

	if (hl + len + pad + IW_CRC_LEN > sizeof(b))
		return false;
	memcpy(b + hl, msg, len);
	memset(b + hl + len, 0, pad);
	rr__iw_crc_store(b + hl + len + pad,
			 r->crc ? rr_crc32c(b, hl + len + pad) : 0);
	return send_all(r->fd, b, hl + len + pad + IW_CRC_LEN);
}

static void put32(uint8_t **p, uint32_t v)
{
	uint32_t be = htonl(v);

	memcpy(*p, &be, 4);
	*p += 4;
}

/*
 * An NFSv3 WRITE of CHUNK_LEN bytes whose data is in a read chunk naming
 * memory this peer never serves: the RPC call (AUTH_NONE, a made-up
 * handle) up to the data's length word inline, the chunk at its position
 * (RFC 8166 section 3.5.3). The server pulls the chunk before it looks at
 * the call, so the handle does not matter.
 */
static bool send_read_chunk_call(struct raw *r, uint32_t xid)
{
	struct rr_call_hdr ch = {
		.xid = xid, .rpcvers = 2, .prog = 100003, .vers = 3, .proc = 7};
	struct rr_rdma_hdr rh = {.xid = xid,
				 .vers = RR_RDMA_VERSION,
				 .credits = CALLS_PER_CONN,
				 .proc = RR_RDMA_MSG,
				 .nread = 1};
	uint8_t rpc[256], msg[512], *p;
	int n = rr__call_hdr_encode(&ch, rpc, sizeof(rpc)), hl;

	if (n <= 0)
		return false; /* in an attacker's thread: no cmocka here */
	p = rpc + n;
	put32(&p, 8); /* fhandle3 of 8 bytes */
	put32(&p, 0x12345678);
	put32(&p, 0x9abcdef0);
	put32(&p, 0); /* offset */
	put32(&p, 0);
	put32(&p, CHUNK_LEN); /* count */
	put32(&p, 0);	      /* UNSTABLE */
	put32(&p, CHUNK_LEN); /* data's length word; the bytes: the chunk */
	rh.reads[0] = (struct rr_rdma_read_seg){
		(uint32_t)(p - rpc), {0x5eed, CHUNK_LEN, 0x7f0000000000ull}};
	hl = rr__rdma_hdr_encode(&rh, msg, sizeof(msg));
	if (hl <= 0)
		return false;
	memcpy(msg + hl, rpc, (size_t)(p - rpc));
	return raw_send(r, msg, (uint32_t)hl + (uint32_t)(p - rpc));
}

/*
 * Reads what the server sends until it closes the stream or stop is set,
 * counting its RDMA Read Requests (never answered). True: it closed.
 */
static bool swallow(struct raw *r, atomic_bool *stop, atomic_ulong *reqs)
{
	static _Thread_local uint8_t b[1 << 16];
	size_t have = 0;

	while (!atomic_load(stop)) {
		struct pollfd pf = {.fd = r->fd, .events = POLLIN};
		struct iw_hdr h;
		ssize_t n;

		if (poll(&pf, 1, 50) != 1)
			continue;
		n = recv(r->fd, b + have, sizeof(b) - have, 0);
		if (n <= 0)
			return true;
		have += (size_t)n;
		while (have >= IW_UNTAGGED_HDR_LEN &&
		       rr__iw_hdr_decode(b, have, &h) > 0) {
			size_t all = 2u + h.mpa_len + iw_fpdu_pad(h.mpa_len) +
				     IW_CRC_LEN;

			if (all > have)
				break;
			if (h.opcode == IW_OP_READ_REQ)
				atomic_fetch_add(reqs, 1);
			memmove(b, b + all, have - all);
			have -= all;
		}
		if (have == sizeof(b))
			have = 0; /* not FPDUs we know: keep draining */
	}
	return false;
}

/* ---------------------------------------------- never-answering peers */

/*
 * Connects, sends CALLS_PER_CONN calls with read chunks, never answers
 * the Reads; when dropped, reconnects at once. Until stop.
 */
static void *never_answering(void *arg)
{
	struct attacker *a = arg;
	uint32_t xid = a->host << 24;

	while (!atomic_load(a->stop)) {
		struct raw r;
		bool sent = true;

		if (raw_open(&r, a->host, a->port)) {
			atomic_fetch_add(&a->refused, 1);
			continue;
		}
		atomic_fetch_add(&a->conns, 1);
		for (unsigned i = 0; i < CALLS_PER_CONN && sent; i++)
			sent = send_read_chunk_call(&r, ++xid);
		if (swallow(&r, a->stop, &a->read_reqs))
			atomic_fetch_add(&a->drops, 1);
		close(r.fd);
	}
	return NULL;
}

static void stop_attackers(struct fx *f)
{
	atomic_store(&f->stop, true);
	for (; f->nattack; f->nattack--)
		pthread_join(f->a[f->nattack - 1].th, NULL);
}

/* Waits until every attacker has seen a Read Request (WAIT_MS at most). */
static void wait_reads(struct attacker *a, unsigned n)
{
	uint64_t end = rr_t_now_ms() + WAIT_MS;

	for (unsigned i = 0; i < n; i++)
		while (!atomic_load(&a[i].read_reqs)) {
			if (rr_t_now_ms() >= end)
				fail_msg("attacker %u: no RDMA Read Request "
					 "within %d ms",
					 i, WAIT_MS);
			poll(NULL, 0, 10); /* polling a counter, bounded */
		}
}

/*
 * Two hosts, two connections each, that send WRITEs whose data is in
 * read chunks and never answer the server's RDMA Reads, reconnecting at
 * once each time the server drops them. Before the bulk buffers had
 * shares and penalties, they held all 16 of them; the good client's
 * calls, behind theirs in the server's FIFO, took about 3 s each (the
 * stall bound).
 */
static void reads_never_answered(void **state)
{
	struct fx *f = *state;
	struct attacker *a = f->a;
	unsigned long conns = 0, drops = 0, reqs = 0;

	for (unsigned i = 0; i < MAX_ATTACKERS; i++) {
		a[i].host = 2 + i / 2;
		a[i].port = f->d.rdma;
		a[i].stop = &f->stop;
		assert_int_equal(
			pthread_create(&a[i].th, NULL, never_answering, &a[i]),
			0);
		f->nattack++;
	}
	wait_reads(a, MAX_ATTACKERS);
	judge(f, "RDMA Reads never answered", ATTACK_MS);
	stop_attackers(f);
	for (unsigned i = 0; i < MAX_ATTACKERS; i++) {
		conns += atomic_load(&a[i].conns);
		drops += atomic_load(&a[i].drops);
		reqs += atomic_load(&a[i].read_reqs);
	}
	printf("hostile-rdma: attackers: %lu connections, %lu dropped, %lu "
	       "Read Requests unanswered; daemon: bulk_stalls %ld, "
	       "peers_penalised %ld, bulk_share_waits %ld, penalty_waits "
	       "%ld\n",
	       conns, drops, reqs, counter(f, "bulk_stalls"),
	       counter(f, "peers_penalised"), counter(f, "bulk_share_waits"),
	       counter(f, "penalty_waits"));
	/* The attack was real: the server's Reads stalled, it dropped them. */
	assert_true(drops >= 1);
	assert_true(counter(f, "bulk_stalls") >= 1);
	assert_true(counter(f, "peers_penalised") >= 1);
	assert_true(counter(f, "penalty_waits") >= 1);
}

/* ------------------------------------------------- idle and half-open */

static void keep(struct fx *f, int fd)
{
	assert_true(f->nidle < MAX_IDLE);
	f->idle[f->nidle++] = fd;
}

/*
 * 300 connections from one address that complete MPA and never send a
 * call: the address's share (16 in nfsrdmad) is taken, the rest refused
 * at MPA (or, once a second old, made room for); the good client, from
 * another address, is served.
 */
static void mpa_then_silent_one_address(void **state)
{
	struct fx *f = *state;
	unsigned taken = 0, refused = 0;

	for (unsigned i = 0; i < 300; i++) {
		struct raw r;
		int rc = raw_open(&r, 2, f->d.rdma);

		assert_true(rc == 0 || rc == -ECONNREFUSED);
		taken += !rc;
		refused += rc == -ECONNREFUSED;
		if (!rc)
			keep(f, r.fd);
	}
	printf("hostile-rdma: silent after MPA: %u taken, %u refused\n", taken,
	       refused);
	assert_true(taken >= 1);
	judge(f, "silent after MPA, one address", 0);
	assert_true(counter(f, "conn_refused") + counter(f, "conn_evicted") >=
		    300 - 16);
}

/*
 * 300 TCP connections from one address to the RDMA port that never start
 * MPA (half-open for the iwarp provider, which waits IW_HANDSHAKE_MS for
 * them): the good client's handshake is not held up behind them.
 */
static void half_open_one_address(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < 300; i++) {
		int fd = tcp_from(2, f->d.rdma);

		assert_true(fd >= 0);
		keep(f, fd);
	}
	judge(f, "half-open (no MPA), one address", 0);
}

/* ----------------------------------------------------------- fixture */

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	static const char *const extra[] = {"--threads", "2", NULL};
	char data[PATH_MAX + 8];

	if (!f)
		return -1;
	snprintf(f->top, sizeof(f->top), "%.200s/hostile-rdma.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(f->top))
		return -1;
	snprintf(f->exp, sizeof(f->exp), "%.200s/export", f->top);
	snprintf(f->state, sizeof(f->state), "%.200s/state", f->top);
	snprintf(data, sizeof(data), "%s/data", f->exp);
	if (mkdir(f->exp, 0755))
		return -1;
	good_make_file(data);
	if (rr_t_daemon_start(&f->d, daemon_path, f->exp, f->state, extra,
			      NULL))
		return -1;
	*state = f;
	f->base_p99 = rdma_good(f, 0).p99_ms;
	f->log0 = rr_t_daemon_log_bytes(&f->d);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc;

	stop_attackers(f);
	for (int i = 0; i < f->nidle; i++)
		close(f->idle[i]);
	rc = rr_t_daemon_stop(&f->d);
	if (rr_t_rm_tree(f->top) || rc != 0)
		return -1;
	free(f);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(reads_never_answered),
		T(mpa_then_silent_one_address),
		T(half_open_one_address),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: hostile_rdma PATH-TO-NFSRDMAD\n");
		return 2;
	}
	daemon_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
