// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfsrdmad against hostile TCP clients (architecture.md invariant 8). Each test
 * starts the daemon as a process, measures the good client
 * (good_client.h, over TCP) alone, then sets up one attack from another
 * loopback address (127.0.0.2 and up) and runs the same client beside it,
 * which good_judge holds to its bounds.
 *
 * argv[1] is the nfsrdmad binary.
 */
#include <rpcrdma/nfs3.h>
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include "daemon.h"
#include "io.h"
#include "good_client.h"
#include "mount3.h"
#include "nfs3_prot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
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

#define FILE_LEN   GOOD_FILE_LEN
#define IO_LEN	   4096
#define MAX_ATTACK 1024
/* Files of one fixture cannot grow past this (RLIMIT_FSIZE). */
#define FSIZE_LIMIT (FILE_LEN + (64u << 10))

static const char *daemon_path;

struct fx {
	char top[PATH_MAX], exp[PATH_MAX], state[PATH_MAX];
	struct rr_t_daemon d;
	int fds[MAX_ATTACK];
	int nfds;
	double base_p99;
	long log0;
};

/* The good client over TCP, mounted afresh: GOOD_ROUNDS rounds. */
static struct good_run tcp_good(struct fx *f)
{
	char url[PATH_MAX + 128];

	snprintf(url, sizeof(url),
		 "nfs://127.0.0.1%s?proto=tcp&nfsport=%u&mountport=%u", f->exp,
		 f->d.tcp, f->d.mount);
	return good_client(url, IO_LEN, 0);
}

/* The good client beside the attack set up by the test: the verdicts. */
static void judge(struct fx *f, const char *attack)
{
	good_judge("hostile", attack, tcp_good(f), f->base_p99, &f->d, f->log0);
}

/* The daemon's live counter of transport xprt ("nfs3 over tcp", ...). */
static long live_counter(struct fx *f, const char *xprt, const char *name)
{
	long v = rr_t_daemon_counter(&f->d, xprt, name);

	if (v < 0)
		fail_msg("no live counter %s of %s within 10 s", name, xprt);
	return v;
}

/* -------------------------------------------------------- attackers */

/* A socket to port from 127.0.0.<host>, connected (blocking). */
static int attacker(struct fx *f, unsigned host, uint16_t port)
{
	struct sockaddr_in me = {.sin_family = AF_INET}, to = me;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 4096;

	assert_true(fd >= 0);
	assert_true(f->nfds < MAX_ATTACK);
	me.sin_addr.s_addr = htonl(0x7f000000u | host);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	to.sin_port = htons(port);
	/* small buffers: the kernel must not absorb what we never read */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	f->fds[f->nfds++] = fd;
	return fd;
}

static void put32(uint8_t **p, uint32_t v)
{
	uint32_t be = htonl(v);

	memcpy(*p, &be, 4);
	*p += 4;
}

static void put_bytes(uint8_t **p, const void *b, uint32_t n)
{
	put32(p, n);
	memcpy(*p, b, n);
	memset(*p + n, 0, ((n + 3) & ~3u) - n);
	*p += (n + 3) & ~3u;
}

/* A call header (record mark to fill, AUTH_SYS as root) at buf. */
static uint8_t *call_hdr(uint8_t *buf, uint32_t xid, uint32_t prog,
			 uint32_t proc)
{
	uint8_t *p = buf + 4;

	put32(&p, xid);
	put32(&p, 0); /* CALL */
	put32(&p, 2); /* RPC version */
	put32(&p, prog);
	put32(&p, 3);
	put32(&p, proc);
	put32(&p, 1); /* AUTH_SYS: stamp, empty name, uid 0, gid 0, no gids */
	put32(&p, 20);
	for (int i = 0; i < 5; i++)
		put32(&p, 0);
	put32(&p, 0); /* AUTH_NONE verifier */
	put32(&p, 0);
	return p;
}

/* Fills in the record mark of the call from buf to end; its length. */
static size_t call_end(uint8_t *buf, uint8_t *end)
{
	size_t len = (size_t)(end - buf);
	uint8_t *p = buf;

	put32(&p, 0x80000000u | (uint32_t)(len - 4));
	return len;
}

/* A record-marked NFSv3 READ of count bytes at 0 of fh, as root. */
static size_t read_call(uint8_t *buf, uint32_t xid, const nfs_fh3 *fh,
			uint32_t count)
{
	uint8_t *p = call_hdr(buf, xid, NFS_PROGRAM, NFSPROC3_READ);

	put_bytes(&p, fh->data.data_val, fh->data.data_len);
	put32(&p, 0); /* offset, 64 bits */
	put32(&p, 0);
	put32(&p, count);
	return call_end(buf, p);
}

/* ------------------------------------------------ handles, the rpcgen way */

/* One call on c, its results decoded into r (xdr_free them after). */
static void one_call(struct rr_tcp_clnt *c, uint32_t prog, uint32_t proc,
		     xdrproc_t xa, void *a, xdrproc_t xr, void *r)
{
	static uint8_t res[64 << 10];
	struct rr_cred me = {.uid = 0, .gid = 0};
	char args[1024];
	struct rr_call rc = {.prog = prog,
			     .vers = 3,
			     .proc = proc,
			     .cred = &me,
			     .args = args,
			     .res = res,
			     .res_cap = sizeof(res)};
	XDR x;

	xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
	assert_true(xa(&x, a));
	rc.args_len = xdr_getpos(&x);
	assert_int_equal(rr_tcp_clnt_call(c, &rc), 0);
	xdrmem_create(&x, (char *)res, (u_int)rc.res_len, XDR_DECODE);
	assert_true(xr(&x, r));
}

static void call(uint16_t port, uint32_t prog, uint32_t proc, xdrproc_t xa,
		 void *a, xdrproc_t xr, void *r)
{
	struct rr_tcp_clnt *c;

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", port, NULL, &c), 0);
	one_call(c, prog, proc, xa, a, xr, r);
	assert_int_equal(rr_tcp_clnt_destroy(c), 0);
}

/* The export's root handle, through MNT; fh points into buf. */
static void root_handle(struct fx *f, nfs_fh3 *fh, char *buf)
{
	char *path = f->exp;
	mountres3 mr;

	memset(&mr, 0, sizeof(mr));
	call(f->d.mount, MOUNT_PROGRAM, MOUNTPROC3_MNT,
	     (xdrproc_t)rr__xdr_dirpath, &path, (xdrproc_t)rr__xdr_mountres3,
	     &mr);
	assert_int_equal(mr.fhs_status, MNT3_OK);
	fh->data.data_len = mr.mountres3_u.mountinfo.fhandle.fhandle3_len;
	memcpy(buf, mr.mountres3_u.mountinfo.fhandle.fhandle3_val,
	       fh->data.data_len);
	fh->data.data_val = buf;
	xdr_free((xdrproc_t)rr__xdr_mountres3, (char *)&mr);
}

/* The handle of "data", through MNT and LOOKUP; fh points into buf. */
static void data_handle(struct fx *f, nfs_fh3 *fh, char *buf)
{
	char rootbuf[NFS3_FHSIZE];
	LOOKUP3args la;
	LOOKUP3res lr;

	root_handle(f, &la.what.dir, rootbuf);
	la.what.name = "data";
	memset(&lr, 0, sizeof(lr));
	call(f->d.tcp, NFS_PROGRAM, NFSPROC3_LOOKUP,
	     (xdrproc_t)rr__xdr_LOOKUP3args, &la, (xdrproc_t)rr__xdr_LOOKUP3res,
	     &lr);
	assert_int_equal(lr.status, NFS3_OK);
	fh->data.data_len = lr.LOOKUP3res_u.resok.object.data.data_len;
	memcpy(buf, lr.LOOKUP3res_u.resok.object.data.data_val,
	       fh->data.data_len);
	fh->data.data_val = buf;
	xdr_free((xdrproc_t)rr__xdr_LOOKUP3res, (char *)&lr);
}

/* A raw call's reply, whole: accept_stat and where the results start. */
struct raw_res {
	int accept;
	uint8_t body[1024];
	size_t len, res;
};

static void raw_call(uint16_t port, const uint8_t *buf, size_t len,
		     struct raw_res *r)
{
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tmo = {.tv_sec = 10};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint32_t mark, vlen;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), len);
	assert_int_equal(recv(fd, &mark, 4, MSG_WAITALL), 4);
	r->len = ntohl(mark) & 0x7fffffffu;
	assert_true(r->len >= 24 && r->len <= sizeof(r->body));
	assert_int_equal(recv(fd, r->body, r->len, MSG_WAITALL), r->len);
	close(fd);
	assert_int_equal(ntohl(*(uint32_t *)(r->body + 8)), 0); /* ACCEPTED */
	memcpy(&vlen, r->body + 16, 4);
	r->res = 20 + ((ntohl(vlen) + 3) & ~3u);
	assert_true(r->res + 4 <= r->len);
	r->accept = (int)ntohl(*(uint32_t *)(r->body + r->res));
	r->res += 4;
}

/* The accept_stat of the reply to buf[0..len), sent on a new connection. */
static int raw_exchange(uint16_t port, const uint8_t *buf, size_t len)
{
	struct raw_res r;

	raw_call(port, buf, len, &r);
	return r.accept;
}

/* ------------------------------------------------------------ tests */

/*
 * 20 connections that each send a 64 KiB burst of pipelined READs of
 * count bytes and never read a reply.
 */
static void never_reading(struct fx *f, uint32_t count, const char *name)
{
	static uint8_t burst[64 << 10];
	char fhbuf[NFS3_FHSIZE];
	nfs_fh3 fh = {0};
	size_t len = 0;
	uint32_t xid = 1;

	data_handle(f, &fh, fhbuf);
	while (len + 128 <= sizeof(burst))
		len += read_call(burst + len, xid++, &fh, count);
	for (unsigned i = 0; i < 20; i++) {
		int fd = attacker(f, 2, f->d.tcp);

		assert_int_equal(send(fd, burst, len, MSG_NOSIGNAL), len);
	}
	judge(f, name);
}

/*
 * READs of 1 MiB go to the workers: a worker finding its call's
 * connection over its queue bound parks the call (20 x 16 calls in
 * workers x 1 MiB, 320 MiB, without that). Before either bound, one such
 * connection grew the server by about 530 MiB.
 */
static void never_reading_pipelines(void **state)
{
	never_reading(*state, 1u << 20, "never-reading pipelines");
}

/*
 * READs of 64 KiB are answered on the loop's thread as they arrive: the
 * loop stops serving a connection's input within one read once its
 * queue is full (20 x 585 x 64 KiB, 730 MiB, without that).
 */
static void never_reading_pipelines_of_small_reads(void **state)
{
	never_reading(*state, 64u << 10, "never-reading, 64 KiB READs");
}

/*
 * Connections that connect and say nothing, on the NFS and MOUNT ports:
 * before, 256 of them refused every other client.
 */
static void idle_connections_one_address(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < 300; i++) {
		attacker(f, 2, f->d.tcp);
		attacker(f, 2, f->d.mount);
	}
	judge(f, "idle conns, one address");
	/*
	 * One address holds its share (32) at most: each newcomer past it
	 * took the place of one of its own idle connections (or was refused).
	 */
	assert_true(live_counter(f, "nfs3 over tcp", "conn_refused") +
			    live_counter(f, "nfs3 over tcp", "conn_evicted") >=
		    300 - 32);
	assert_true(
		live_counter(f, "mount3 over tcp", "conn_refused") +
			live_counter(f, "mount3 over tcp", "conn_evicted") >=
		300 - 32);
}

/* The same from 16 addresses: the table fills; idle ones make room. */
static void idle_connections_many_addresses(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < 320; i++) {
		attacker(f, 2 + i % 16, f->d.tcp);
		attacker(f, 2 + i % 16, f->d.mount);
	}
	judge(f, "idle conns, 16 addresses");
}

/*
 * The daemon under a low RLIMIT_NOFILE, and more connections than it has
 * descriptors for, from 16 addresses: its tables fill before its
 * descriptors run out (connections are budgeted from the limit), idle
 * ones make room, and nothing spins or floods the log. Before, it logged
 * "Too many open files" at 30 MB/s and answered valid handles STALE.
 */
static void descriptor_exhaustion(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < 400; i++)
		attacker(f, 2 + i % 16, f->d.tcp);
	for (unsigned i = 0; i < 100; i++)
		attacker(f, 2 + i % 16, f->d.mount);
	judge(f, "descriptor exhaustion");
}

/*
 * Names that rpcgen would cut at an embedded NUL: "..\0" must not act as
 * "..", "x\0/../../y" must not create "x", a MNT path "/export\0junk"
 * must not mount "/export". Each is GARBAGE_ARGS, as Linux's nfsd
 * answers a name holding a NUL.
 */
static void names_with_a_nul_are_garbage(void **state)
{
	static const uint8_t sattr_none[24]; /* six set_it FALSE */
	struct fx *f = *state;
	char rootbuf[NFS3_FHSIZE], mnt[PATH_MAX + 8], x[PATH_MAX + 8];
	uint8_t buf[2048], *p;
	struct stat st;
	nfs_fh3 root = {0};
	size_t n;

	root_handle(f, &root, rootbuf);
	p = call_hdr(buf, 1, NFS_PROGRAM, NFSPROC3_LOOKUP);
	put_bytes(&p, root.data.data_val, root.data.data_len);
	put_bytes(&p, "..\0", 3);
	assert_int_equal(raw_exchange(f->d.tcp, buf, call_end(buf, p)),
			 RR_GARBAGE_ARGS);

	p = call_hdr(buf, 2, NFS_PROGRAM, NFSPROC3_CREATE);
	put_bytes(&p, root.data.data_val, root.data.data_len);
	put_bytes(&p, "x\0/../../y", 10);
	put32(&p, 0); /* UNCHECKED */
	memcpy(p, sattr_none, sizeof(sattr_none));
	p += sizeof(sattr_none);
	assert_int_equal(raw_exchange(f->d.tcp, buf, call_end(buf, p)),
			 RR_GARBAGE_ARGS);
	snprintf(x, sizeof(x), "%s/x", f->exp);
	assert_int_equal(stat(x, &st), -1);

	n = (size_t)snprintf(mnt, sizeof(mnt), "%s%cjunk", f->exp, '\0');
	p = call_hdr(buf, 3, MOUNT_PROGRAM, MOUNTPROC3_MNT);
	put_bytes(&p, mnt, (uint32_t)n);
	assert_int_equal(raw_exchange(f->d.mount, buf, call_end(buf, p)),
			 RR_GARBAGE_ARGS);
}

/*
 * A LOOKUP whose name length word says 0xfffffffe, in a call of 100-odd
 * bytes: GARBAGE_ARGS before anything is allocated (rpcgen's decoder
 * would first map 4 GiB).
 */
static void huge_length_word_allocates_nothing(void **state)
{
	struct fx *f = *state;
	char rootbuf[NFS3_FHSIZE];
	uint8_t buf[512], *p;
	long vm0, vm1;
	nfs_fh3 root = {0};

	root_handle(f, &root, rootbuf);
	vm0 = rr_t_daemon_status_kb(&f->d, "VmPeak");
	p = call_hdr(buf, 1, NFS_PROGRAM, NFSPROC3_LOOKUP);
	put_bytes(&p, root.data.data_val, root.data.data_len);
	put32(&p, 0xfffffffeu);
	put32(&p, 0x41414141u);
	assert_int_equal(raw_exchange(f->d.tcp, buf, call_end(buf, p)),
			 RR_GARBAGE_ARGS);
	vm1 = rr_t_daemon_status_kb(&f->d, "VmPeak");
	printf("hostile: LOOKUP claiming a 4 GiB name: daemon VmPeak "
	       "%ld -> %ld MiB\n",
	       vm0 >> 10, vm1 >> 10);
	assert_true(vm0 > 0 && vm1 - vm0 < (1L << 20));
	judge(f, "huge length word");
}

/* Reads one record-marked reply from fd (10 s bound): its accept_stat. */
static int read_reply(int fd)
{
	uint8_t body[512];
	uint32_t mark, len, vlen;

	assert_int_equal(recv(fd, &mark, 4, MSG_WAITALL), 4);
	len = ntohl(mark) & 0x7fffffffu;
	assert_true(len >= 24 && len <= sizeof(body));
	assert_int_equal(recv(fd, body, len, MSG_WAITALL), len);
	memcpy(&vlen, body + 16, 4);
	vlen = (ntohl(vlen) + 3) & ~3u;
	assert_true(24 + vlen <= len);
	memcpy(&mark, body + 20 + vlen, 4);
	return (int)ntohl(mark);
}

static bool_t xvoid(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

/* DUMP from 127.0.0.1: how many entries, and how many are 127.0.0.1's. */
static void dump_counts(struct fx *f, unsigned *all, unsigned *mine)
{
	mountlist ml = NULL;
	char dummy;

	call(f->d.mount, MOUNT_PROGRAM, MOUNTPROC3_DUMP, (xdrproc_t)xvoid,
	     &dummy, (xdrproc_t)rr__xdr_mountlist, &ml);
	*all = *mine = 0;
	for (mountlist m = ml; m; m = m->ml_next) {
		(*all)++;
		*mine += !strcmp(m->ml_hostname, "127.0.0.1");
	}
	xdr_free((xdrproc_t)rr__xdr_mountlist, (char *)&ml);
}

/*
 * MNT floods: 3000 MNTs of the export under 900 spellings (runs of
 * slashes up to 900 bytes long) from another address, then its UMNTALL.
 * Before, each MNT added an entry (100 000 of them about 98 MiB), DUMP
 * then failed, and any client's UMNTALL emptied everyone's. Now the list
 * keeps one entry per host and path, MNT_MAX (256) in all, and UMNTALL
 * forgets only its caller's.
 */
static void mount_flood(void **state)
{
	static uint8_t buf[100 * 1100];
	struct fx *f = *state;
	char path[PATH_MAX + 1024];
	unsigned all, mine;
	int fd = attacker(f, 2, f->d.mount);
	char rootbuf[NFS3_FHSIZE];
	nfs_fh3 root = {0};
	uint8_t *p;
	size_t len;

	for (unsigned i = 0; i < 3000; i += 100) {
		len = 0;
		for (unsigned k = i; k < i + 100; k++) {
			int n = snprintf(path, sizeof(path), "%s%*s", f->exp,
					 (int)(1 + k % 900), "");

			memset(path + strlen(f->exp), '/',
			       (size_t)n - strlen(f->exp));
			p = call_hdr(buf + len, k, MOUNT_PROGRAM,
				     MOUNTPROC3_MNT);
			put_bytes(&p, path, (uint32_t)n);
			len += call_end(buf + len, p);
		}
		assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), len);
		for (unsigned k = 0; k < 100; k++)
			assert_int_equal(read_reply(fd), RR_SUCCESS);
	}
	judge(f, "MOUNT flood");
	root_handle(f, &root, rootbuf); /* a MNT of ours, kept */
	dump_counts(f, &all, &mine);
	printf("hostile: DUMP after the flood: %u entries, %u of the good "
	       "client\n",
	       all, mine);
	assert_true(all <= 256 && mine >= 1);
	p = call_hdr(buf, 9999, MOUNT_PROGRAM, MOUNTPROC3_UMNTALL);
	len = call_end(buf, p);
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), len);
	assert_int_equal(read_reply(fd), RR_SUCCESS);
	dump_counts(f, &all, &mine);
	assert_true(mine >= 1);
	assert_int_equal(all, mine); /* the attacker's are gone, ours stay */
}

static uint32_t word_at(const struct raw_res *r, size_t off)
{
	uint32_t w;

	assert_true(r->res + off + 4 <= r->len);
	memcpy(&w, r->body + r->res + off, 4);
	return ntohl(w);
}

/* Skips a post_op_attr at off of the results: where what follows is. */
static size_t after_post_op_attr(const struct raw_res *r, size_t off)
{
	return off + 4 + (word_at(r, off) ? 84 : 0);
}

/* RFC 1813: a READ at or past the end, 2^63 included, is 0 bytes and eof. */
static void read_past_2_63_is_zero_bytes_and_eof(void **state)
{
	struct fx *f = *state;
	char fhbuf[NFS3_FHSIZE];
	struct raw_res r;
	uint8_t buf[256], *p;
	nfs_fh3 fh = {0};
	size_t off;

	data_handle(f, &fh, fhbuf);
	p = call_hdr(buf, 1, NFS_PROGRAM, NFSPROC3_READ);
	put_bytes(&p, fh.data.data_val, fh.data.data_len);
	put32(&p, 0x80000000u); /* offset 2^63 */
	put32(&p, 0);
	put32(&p, 4096);
	raw_call(f->d.tcp, buf, call_end(buf, p), &r);
	assert_int_equal(r.accept, RR_SUCCESS);
	assert_int_equal(word_at(&r, 0), NFS3_OK);
	off = after_post_op_attr(&r, 4);
	assert_int_equal(word_at(&r, off), 0);	   /* count */
	assert_int_equal(word_at(&r, off + 4), 1); /* eof */
	assert_int_equal(word_at(&r, off + 8), 0); /* data<> */
}

/* The count of a WRITE3resok: after status and wcc_data. */
static uint32_t write_count(const struct raw_res *r)
{
	size_t pre = word_at(r, 4) ? 24 : 0; /* pre_op_attr */

	return word_at(r, after_post_op_attr(r, 8 + pre));
}

/*
 * A WRITE of which only part fits (here under RLIMIT_FSIZE): the part
 * written is the answer, with its count, as RFC 1813 allows; the next
 * WRITE gets the error. Before, it answered FBIG with the data half
 * written.
 */
static void write_that_partly_fits_answers_the_count_written(void **state)
{
	static uint8_t data[8192], buf[8192 + 512];
	struct fx *f = *state;
	char fhbuf[NFS3_FHSIZE], path[PATH_MAX + 8];
	uint32_t at = FSIZE_LIMIT - 4096;
	struct raw_res r;
	struct stat st;
	uint8_t *p;
	nfs_fh3 fh = {0};

	data_handle(f, &fh, fhbuf);
	memset(data, 0x5a, sizeof(data));
	for (uint32_t i = 0; i < 2; i++) {
		p = call_hdr(buf, 1 + i, NFS_PROGRAM, NFSPROC3_WRITE);
		put_bytes(&p, fh.data.data_val, fh.data.data_len);
		put32(&p, 0);
		put32(&p, at + i * 4096);
		put32(&p, sizeof(data));
		put32(&p, 2); /* FILE_SYNC */
		put_bytes(&p, data, sizeof(data));
		raw_call(f->d.tcp, buf, call_end(buf, p), &r);
		assert_int_equal(r.accept, RR_SUCCESS);
		assert_int_equal(word_at(&r, 0), i ? NFS3ERR_FBIG : NFS3_OK);
		if (!i)
			assert_int_equal(write_count(&r), 4096);
	}
	snprintf(path, sizeof(path), "%s/data", f->exp);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, FSIZE_LIMIT);
}

/* ------------------------------------------------- handle resolution */

/* LOOKUP of name in dir on c: its status; the handle into fh, buf. */
static int lookup_on(struct rr_tcp_clnt *c, const nfs_fh3 *dir,
		     const char *name, nfs_fh3 *fh, char *buf)
{
	LOOKUP3args la = {.what = {.dir = *dir, .name = (char *)name}};
	LOOKUP3res lr;
	int st;

	memset(&lr, 0, sizeof(lr));
	one_call(c, NFS_PROGRAM, NFSPROC3_LOOKUP,
		 (xdrproc_t)rr__xdr_LOOKUP3args, &la,
		 (xdrproc_t)rr__xdr_LOOKUP3res, &lr);
	st = (int)lr.status;
	if (st == NFS3_OK) {
		fh->data.data_len = lr.LOOKUP3res_u.resok.object.data.data_len;
		memcpy(buf, lr.LOOKUP3res_u.resok.object.data.data_val,
		       fh->data.data_len);
		fh->data.data_val = buf;
	}
	xdr_free((xdrproc_t)rr__xdr_LOOKUP3res, (char *)&lr);
	return st;
}

static struct rr_tcp_clnt *nfs_clnt(struct fx *f)
{
	struct rr_tcp_clnt_opts o = {.timeout_ms = 20000};
	struct rr_tcp_clnt *c;

	assert_int_equal(rr_tcp_clnt_create("127.0.0.1", f->d.tcp, &o, &c), 0);
	return c;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	close(fd);
}

static int getattr_settled(struct fx *f, const nfs_fh3 *fh, int ms);

#define CACHE_DEPTH 15
#define CACHE_FILES 20000
#define CACHE_WARM  1000
/*
 * What the handle cache may cost per object it knows, in resident bytes
 * of the daemon (entry, name, index, allocator): before it was compacted
 * an object cost about 4 KiB.
 */
#if defined(__SANITIZE_THREAD__)
#define CACHE_OBJ_BYTES 2048 /* TSan's shadow is resident too: 540 B */
#else
#define CACHE_OBJ_BYTES 512
#endif

/* Of every CACHE_EVERY-th file, the handle deep_lookups saw. */
#define CACHE_EVERY 100
static char cache_fhs[CACHE_FILES / CACHE_EVERY][NFS3_FHSIZE];
static uint32_t cache_fhlen;

/*
 * Makes CACHE_FILES files at depth CACHE_DEPTH and looks each up once on
 * c, keeping some handles (cache_fhs); the daemon's VmRSS after the
 * first CACHE_WARM lookups into *rss0.
 */
static void deep_lookups(struct fx *f, struct rr_tcp_clnt *c, long *rss0)
{
	char path[PATH_MAX], fhbuf[2][NFS3_FHSIZE], leafbuf[NFS3_FHSIZE];
	size_t n = (size_t)snprintf(path, sizeof(path), "%s", f->exp);
	nfs_fh3 dir = {0}, leaf = {0}, fh = {0};

	root_handle(f, &dir, fhbuf[0]);
	for (int d = 0; d < CACHE_DEPTH; d++) {
		char name[16];

		snprintf(name, sizeof(name), "level%02d", d);
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/%s", name);
		assert_int_equal(mkdir(path, 0755), 0);
		assert_int_equal(lookup_on(c, &dir, name, &leaf, leafbuf), 0);
		memcpy(fhbuf[(d + 1) & 1], leafbuf, leaf.data.data_len);
		dir.data.data_val = fhbuf[(d + 1) & 1];
		dir.data.data_len = leaf.data.data_len;
	}
	for (int i = 0; i < CACHE_FILES; i++) {
		snprintf(path + n, sizeof(path) - n, "/file-with-a-name-%05d",
			 i);
		touch(path);
	}
	for (int i = 0; i < CACHE_FILES; i++) {
		char name[64];

		if (i == CACHE_WARM)
			*rss0 = rr_t_daemon_status_kb(&f->d, "VmRSS");
		snprintf(name, sizeof(name), "file-with-a-name-%05d", i);
		assert_int_equal(lookup_on(c, &dir, name, &fh, leafbuf), 0);
		if (i % CACHE_EVERY == 0)
			memcpy(cache_fhs[i / CACHE_EVERY], leafbuf,
			       fh.data.data_len);
		cache_fhlen = fh.data.data_len;
	}
}

/*
 * 20 000 files at depth 15, each looked up once: the daemon's resident
 * set grows by what the handle cache keeps per object, which is measured
 * after a warm-up (the allocator's first arenas, the workers' stacks).
 * 76 B measured (184 B under ASan), 78 B before the cache was bounded.
 */
static void handle_cache_costs_little_per_object(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt *c = nfs_clnt(f);
	long rss0 = -1, rss1;
	double per;

	deep_lookups(f, c, &rss0);
	rss1 = rr_t_daemon_status_kb(&f->d, "VmRSS");
	assert_int_equal(rr_tcp_clnt_destroy(c), 0);
	per = (double)(rss1 - rss0) * 1024 / (CACHE_FILES - CACHE_WARM);
	printf("hostile: %u files at depth %u looked up: daemon VmRSS "
	       "%ld -> %ld KiB, %.0f B per object\n",
	       CACHE_FILES, CACHE_DEPTH, rss0, rss1, per);
	assert_true(rss0 > 0 && rss1 > 0);
	if (per > CACHE_OBJ_BYTES)
		fail_msg("the handle cache costs %.0f B per object > %u", per,
			 CACHE_OBJ_BYTES);
	judge(f, "20 000 objects cached");
}

/*
 * The same under --handle-cache-mb 1: the cache holds 1 MiB, letting go
 * of what was not used since the clock last passed, and the handles it
 * forgot still resolve (by walks), never STALE.
 */
static void handle_cache_holds_its_bound(void **state)
{
	struct fx *f = *state;
	struct rr_tcp_clnt *c = nfs_clnt(f);
	long rss0 = -1, bytes, entries, walks;

	deep_lookups(f, c, &rss0);
	assert_int_equal(rr_tcp_clnt_destroy(c), 0);
	bytes = live_counter(f, "nfs3 handles", "cache_bytes");
	entries = live_counter(f, "nfs3 handles", "cache_entries");
	printf("hostile: 1 MiB handle cache after %u lookups: %ld entries, "
	       "%ld bytes, %ld evicted\n",
	       CACHE_FILES + CACHE_DEPTH, entries, bytes,
	       live_counter(f, "nfs3 handles", "cache_evicted"));
	assert_true(bytes > 0 && bytes <= (1L << 20));
	assert_true(entries > 0 && entries < CACHE_FILES);
	assert_true(live_counter(f, "nfs3 handles", "cache_evicted") > 0);
	walks = live_counter(f, "nfs3 handles", "walks");
	for (int i = 0; i < CACHE_FILES / CACHE_EVERY; i++) {
		nfs_fh3 fh = {.data = {cache_fhlen, cache_fhs[i]}};

		assert_int_equal(getattr_settled(f, &fh, 10000), NFS3_OK);
	}
	/* some were forgotten: walks found them */
	assert_true(live_counter(f, "nfs3 handles", "walks") > walks);
	judge(f, "1 MiB handle cache, full");
}

#define FLOOD_DIRS    2000
#define FLOOD_HANDLES 400
#define FLOOD_CONNS   8
#define FLOOD_GAP_US  2000
#define FLOOD_MIN     500
#define PROBES	      100
#define WALK_RATE     20000 /* nfsrdmad's walk-dirs-per-sec by default */

struct flood {
	char (*fhs)[NFS3_FHSIZE];
	uint32_t fhlen;
	atomic_bool stop;
	atomic_ulong stale, jukebox, other;
};

struct flooder {
	struct flood *fl;
	int fd, i;
	pthread_t th;
};

/* A GETATTR of fh (a record) into buf: its length. */
static size_t getattr_call(uint8_t *buf, uint32_t xid, const void *fh,
			   uint32_t fhlen)
{
	uint8_t *p = call_hdr(buf, xid, NFS_PROGRAM, NFSPROC3_GETATTR);

	put_bytes(&p, fh, fhlen);
	return call_end(buf, p);
}

/*
 * One reply on fd: the NFS status after an accepted SUCCESS, -1 when
 * there is none (or another accept_stat).
 */
static int reply_status(int fd)
{
	uint8_t body[8192];
	uint32_t mark, len, vlen, w;

	if (recv(fd, &mark, 4, MSG_WAITALL) != 4)
		return -1;
	len = ntohl(mark) & 0x7fffffffu;
	if (len < 28 || len > sizeof(body) ||
	    recv(fd, body, len, MSG_WAITALL) != (ssize_t)len)
		return -1;
	memcpy(&vlen, body + 16, 4);
	vlen = (ntohl(vlen) + 3) & ~3u;
	if (28 + vlen > len)
		return -1;
	memcpy(&w, body + 20 + vlen, 4);
	if (ntohl(w) != RR_SUCCESS)
		return -1;
	memcpy(&w, body + 24 + vlen, 4);
	return (int)ntohl(w);
}

/*
 * One attacking connection: GETATTRs of the stale handles, one at a time,
 * FLOOD_GAP_US apart at most (8 of them: 56 times the rate that starved
 * a client before), FLOOD_MIN of them at least (the flood lasts 1 s and
 * more, whatever the good client takes). Paced, so that what is measured is
 * what the handles cost, not how the transport shares its workers among
 * connections that never pause.
 */
static void *flood_main(void *arg)
{
	struct flooder *me = arg;
	struct flood *fl = me->fl;
	struct timespec next;
	uint8_t buf[256];

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (uint32_t k = 0; k < FLOOD_MIN || !atomic_load(&fl->stop); k++) {
		next.tv_nsec += FLOOD_GAP_US * 1000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		uint32_t h = (k + (uint32_t)me->i * 53) % FLOOD_HANDLES;
		size_t len = getattr_call(buf, k, fl->fhs[h], fl->fhlen);
		int st;

		if (send(me->fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
			atomic_fetch_add(&fl->other, 1);
			break;
		}
		st = reply_status(me->fd);
		if (st == NFS3ERR_STALE)
			atomic_fetch_add(&fl->stale, 1);
		else if (st == NFS3ERR_JUKEBOX)
			atomic_fetch_add(&fl->jukebox, 1);
		else
			atomic_fetch_add(&fl->other, 1);
	}
	return NULL;
}

/* p99 in ms of PROBES calls of buf[0..len) on one connection, all OK. */
static double probe_p99(struct fx *f, const uint8_t *buf, size_t len)
{
	static double lat[PROBES];
	int fd = attacker(f, 1, f->d.tcp); /* 127.0.0.1: the good client's */
	struct timeval tmo = {.tv_sec = 20};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	for (int i = 0; i < PROBES; i++) {
		double t0 = good_now_us();

		assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), len);
		assert_int_equal(reply_status(fd), NFS3_OK);
		lat[i] = (good_now_us() - t0) / 1e3;
	}
	return good_p99(lat, PROBES);
}

/* GETATTR and 4 KiB READ of "data", the good client's own: their p99. */
static void probe(struct fx *f, const char *when)
{
	char fhbuf[NFS3_FHSIZE];
	uint8_t buf[256];
	nfs_fh3 fh = {0};
	double ga, rd;

	data_handle(f, &fh, fhbuf);
	ga = probe_p99(
		f, buf,
		getattr_call(buf, 1, fh.data.data_val, fh.data.data_len));
	rd = probe_p99(f, buf, read_call(buf, 2, &fh, IO_LEN));
	printf("hostile: %s: GETATTR p99 %.2f ms, 4 KiB READ p99 %.2f ms\n",
	       when, ga, rd);
}

/*
 * The status of a GETATTR of fh from 127.0.0.1 once it is no longer
 * JUKEBOX (try again later: RFC 1813), within ms; JUKEBOX after that.
 */
static int getattr_settled(struct fx *f, const nfs_fh3 *fh, int ms)
{
	uint64_t end = rr_t_now_ms() + (uint64_t)ms;
	uint8_t buf[256];
	size_t len = getattr_call(buf, 7, fh->data.data_val, fh->data.data_len);
	struct raw_res r;
	int st;

	do {
		raw_call(f->d.tcp, buf, len, &r);
		assert_int_equal(r.accept, RR_SUCCESS);
		st = (int)word_at(&r, 0);
		if (st != NFS3ERR_JUKEBOX)
			return st;
		poll(NULL, 0,
		     20); /* the client's back-off, not a wait for state */
	} while (rr_t_now_ms() < end);
	return st;
}

/*
 * An export of 2000 directories and 400 handles of files since removed:
 * before, each GETATTR of one walked the whole export (10 ms) and 400 of
 * them defeated the negative cache, so 8 connections sending them pushed
 * a good client's GETATTR from 0.04 ms to 730 ms. Now walks are bounded
 * per second (per client address and in all) and at once; what the
 * budget refuses is JUKEBOX, what a walk proves absent STALE, and
 * nothing else. A handle whose file exists where the cache does not
 * know it (moved behind the server's back) still resolves.
 */
static void stale_handle_flood(void **state)
{
	/* static: a failed assertion leaves the threads running on them */
	static char fhs[FLOOD_HANDLES][NFS3_FHSIZE];
	static struct flooder th[FLOOD_CONNS];
	static struct flood fl = {.fhs = fhs};
	struct fx *f = *state;
	char path[PATH_MAX + 64], to[PATH_MAX + 64], rootbuf[NFS3_FHSIZE];
	char dirbuf[NFS3_FHSIZE], keepbuf[NFS3_FHSIZE];
	struct rr_tcp_clnt *c;
	nfs_fh3 root = {0}, dir = {0}, fh = {0}, keep = {0};
	long dirs0, dirs;
	uint64_t t0;
	double secs;
	int st;

	for (int d = 0; d < FLOOD_DIRS; d++) {
		snprintf(path, sizeof(path), "%.3000s/d%04d", f->exp, d);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	root_handle(f, &root, rootbuf);
	c = nfs_clnt(*state);
	for (int h = 0; h < FLOOD_HANDLES; h++) {
		char name[16];

		snprintf(name, sizeof(name), "d%04d", h * 5);
		assert_int_equal(lookup_on(c, &root, name, &dir, dirbuf), 0);
		snprintf(path, sizeof(path), "%.3000s/%s/gone", f->exp, name);
		touch(path);
		assert_int_equal(lookup_on(c, &dir, "gone", &fh, fhs[h]), 0);
		fl.fhlen = fh.data.data_len;
		assert_int_equal(unlink(path), 0);
	}
	assert_int_equal(lookup_on(c, &root, "d0007", &dir, dirbuf), 0);
	snprintf(path, sizeof(path), "%.3000s/d0007/keep", f->exp);
	touch(path);
	assert_int_equal(lookup_on(c, &dir, "keep", &keep, keepbuf), 0);
	assert_int_equal(rr_tcp_clnt_destroy(c), 0);
	/* moved behind the server's back: the cache knows the old place */
	snprintf(to, sizeof(to), "%.3000s/d1993/kept", f->exp);
	assert_int_equal(rename(path, to), 0);

	probe(f, "before the flood");
	dirs0 = live_counter(f, "nfs3 handles", "walk_dirs");
	t0 = rr_t_now_ms();
	for (int i = 0; i < FLOOD_CONNS; i++) {
		struct timeval tmo = {.tv_sec = 30};

		th[i] = (struct flooder){.fl = &fl, .i = i};
		th[i].fd = attacker(f, 2 + (unsigned)i, f->d.tcp);
		setsockopt(th[i].fd, SOL_SOCKET, SO_RCVTIMEO, &tmo,
			   sizeof(tmo));
		assert_int_equal(
			pthread_create(&th[i].th, NULL, flood_main, &th[i]), 0);
	}
	probe(f, "stale-handle flood");
	judge(f, "stale-handle flood");
	st = getattr_settled(f, &keep, 5000);
	printf("hostile: moved file's handle during the flood: %d\n", st);
	assert_true(st == NFS3_OK || st == NFS3ERR_JUKEBOX);
	atomic_store(&fl.stop, true);
	for (int i = 0; i < FLOOD_CONNS; i++)
		pthread_join(th[i].th, NULL);
	secs = (double)(rr_t_now_ms() - t0) / 1e3;
	dirs = live_counter(f, "nfs3 handles", "walk_dirs") - dirs0;
	printf("hostile: flood answers: %lu STALE, %lu JUKEBOX, %lu other; "
	       "walks read %ld directories in %.1f s\n",
	       atomic_load(&fl.stale), atomic_load(&fl.jukebox),
	       atomic_load(&fl.other), dirs, secs);
	assert_true(live_counter(f, "nfs3 handles", "walks_refused") > 0);
	/* the default 20000 a second, a second of burst and one of debt */
	assert_true(dirs <= (long)(WALK_RATE * (secs + 2)) + FLOOD_DIRS);
	assert_int_equal(atomic_load(&fl.other), 0);
	assert_true(atomic_load(&fl.stale) > 0);
	if (st != NFS3_OK)
		st = getattr_settled(f, &keep, 10000);
	assert_int_equal(st, NFS3_OK);
}

/* ----------------------------------------------------------- fixture */

static const char *const two_threads[] = {"--threads", "2", NULL};

static int start(void **state, const struct rr_t_limits *lim,
		 const char *const *extra)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	char data[PATH_MAX + 8];

	if (!f)
		return -1;
	snprintf(f->top, sizeof(f->top), "%.200s/hostile.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(f->top))
		return -1;
	snprintf(f->exp, sizeof(f->exp), "%.200s/export", f->top);
	snprintf(f->state, sizeof(f->state), "%.200s/state", f->top);
	snprintf(data, sizeof(data), "%s/data", f->exp);
	if (mkdir(f->exp, 0755))
		return -1;
	good_make_file(data);
	if (rr_t_daemon_start(&f->d, daemon_path, f->exp, f->state, extra, lim))
		return -1;
	*state = f;
	f->base_p99 = tcp_good(f).p99_ms;
	f->log0 = rr_t_daemon_log_bytes(&f->d);
	return 0;
}

static int setup(void **state)
{
	return start(state, NULL, two_threads);
}

static int setup_few_fds(void **state)
{
	static const struct rr_t_limits few_fds = {.nofile = 128};

	return start(state, &few_fds, two_threads);
}

static int setup_small_files(void **state)
{
	static const struct rr_t_limits small = {.fsize = FSIZE_LIMIT};

	return start(state, &small, two_threads);
}

/*
 * A daemon whose resident set grows only by what it keeps: under ASan,
 * without the quarantine of freed memory (each call's arena would stay
 * resident until 256 MiB of them had been freed).
 */
static int setup_exact_rss(void **state)
{
#if defined(__SANITIZE_ADDRESS__)
	const char *was = getenv("ASAN_OPTIONS");
	char *saved = was ? strdup(was) : NULL, opts[1024];
	int rc;

	snprintf(opts, sizeof(opts), "%.900s%squarantine_size_mb=0",
		 was ? was : "", was && *was ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	rc = start(state, NULL, two_threads);
	if (saved)
		setenv("ASAN_OPTIONS", saved, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(saved);
	return rc;
#else
	return start(state, NULL, two_threads);
#endif
}

static int setup_small_cache(void **state)
{
	/*
	 * Walks unbounded by their budget (a client's share would make
	 * finding 200 forgotten handles in a leaf of 20 000 entries take
	 * minutes under TSan): the test is of the cache.
	 */
	static const char *const extra[] = {"--threads",
					    "2",
					    "--handle-cache-mb",
					    "1",
					    "--walk-dirs-per-sec",
					    "100000000",
					    NULL};

	return start(state, NULL, extra);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc;

	for (int i = 0; i < f->nfds; i++)
		close(f->fds[i]);
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
		T(stale_handle_flood),
		cmocka_unit_test_setup_teardown(
			handle_cache_costs_little_per_object, setup_exact_rss,
			teardown),
		cmocka_unit_test_setup_teardown(handle_cache_holds_its_bound,
						setup_small_cache, teardown),
		T(never_reading_pipelines),
		T(never_reading_pipelines_of_small_reads),
		T(idle_connections_one_address),
		T(idle_connections_many_addresses),
		cmocka_unit_test_setup_teardown(descriptor_exhaustion,
						setup_few_fds, teardown),
		T(names_with_a_nul_are_garbage),
		T(huge_length_word_allocates_nothing),
		T(read_past_2_63_is_zero_bytes_and_eof),
		T(mount_flood),
		cmocka_unit_test_setup_teardown(
			write_that_partly_fits_answers_the_count_written,
			setup_small_files, teardown),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: hostile_tcp PATH-TO-NFSRDMAD\n");
		return 2;
	}
	daemon_path = argv[1];
	if (argc > 2) /* one test (or a glob of them) by hand */
		cmocka_set_test_filter(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
