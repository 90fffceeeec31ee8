/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A hostile peer against the shm provider, where the target's memory is
 * copied by process_vm_readv/writev: the peer uses a key the target has
 * invalidated (by rr_mw_fence, or by the peer's own Send With
 * Invalidate), a range past the window, and a key without the right it
 * needs; it writes an impossible index into the rings it shares with the
 * target; a raw client offers rings it could shrink, or none; and a
 * process of another user tries to connect. Each is refused (the peer's
 * request completes with REM_ACCESS_ERR, the connection fails or is not
 * made), the reason is counted, and the target's memory is unchanged.
 *
 * This process is the target. The peer is this program run again
 * ("peer" mode, posix_spawn: no fork of a process with provider threads),
 * told over a socketpair what to post, answering with each completion.
 * Sizes are above SHM_CMA_MIN, so every access goes the cross-memory way.
 */
#include <rpcrdma/fabric.h>

#include "fabric/iwarp/iw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define WAIT_MS	  5000
#define BUF_LEN	  (256 * 1024)
#define IO_LEN	  (64 * 1024)
#define PEER_FILL 0xEE

enum op_kind { OP_END, OP_WRITE, OP_READ, OP_SEND_INV, OP_BREAK_RING };

struct op {
	int kind;
	uint32_t len;
	uint32_t rkey;
	uint64_t addr;
};

struct res {
	int event;  /* the connect's outcome */
	int status; /* the operation's completion status */
	int sink_changed;
};

extern char **environ;
static const char *g_self;

/* ------------------------------------------------------------------ peer */

static int peer_wait_wc(struct rr_cq *cq, struct rr_wc *wc)
{
	for (int waited = 0; waited < WAIT_MS; waited += 10) {
		int n = rr_cq_poll(cq, wc, 1);

		if (n == 1)
			return 0;
		rr_cq_wait(cq, 10);
	}
	return -ETIMEDOUT;
}

static int peer_post(struct rr_qp *qp, struct rr_mr *mr, uint8_t *buf,
		     const struct op *o)
{
	struct rr_sge sge = {.addr = (uintptr_t)buf,
			     .length = o->len,
			     .lkey = rr_mr_lkey(mr)};
	struct rr_send_wr wr = {.wr_id = 1,
				.flags = RR_SEND_SIGNALED,
				.sg_list = &sge,
				.num_sge = 1};

	if (o->kind == OP_SEND_INV) {
		wr.opcode = RR_WR_SEND_WITH_INV;
		wr.invalidate_rkey = o->rkey;
	} else {
		wr.opcode = o->kind == OP_WRITE ? RR_WR_RDMA_WRITE
						: RR_WR_RDMA_READ;
		wr.rdma.remote_addr = o->addr;
		wr.rdma.rkey = o->rkey;
	}
	return rr_qp_post_send(qp, &wr, NULL);
}

/*
 * Claims three rings' worth of frames in the target's input, as a peer
 * writing its own index into the shared mapping can, and rings.
 */
static void peer_break_ring(struct rr_qp *qp)
{
	struct iw_qp *iq = to_iw_qp(qp);

	atomic_store(&iq->link.tx_ctl->tail,
		     iq->link.tx_tail + 3 * SHM_RING_BYTES);
	rr__shm_bell(iq->fd);
}

static void peer_ops(int ctl, struct rr_qp *qp, struct rr_cq *cq,
		     struct rr_mr *mr, uint8_t *buf)
{
	struct op o;

	while (read(ctl, &o, sizeof(o)) == sizeof(o) && o.kind != OP_END) {
		struct res r = {.status = -1};
		struct rr_wc wc;

		memset(buf, PEER_FILL, BUF_LEN);
		if (o.kind == OP_BREAK_RING) {
			peer_break_ring(qp);
			r.status = 0;
		} else if (o.len <= BUF_LEN &&
			   peer_post(qp, mr, buf, &o) == 0 &&
			   peer_wait_wc(cq, &wc) == 0)
			r.status = (int)wc.status;
		for (uint32_t i = 0; i < BUF_LEN; i++)
			r.sink_changed |= buf[i] != PEER_FILL;
		if (write(ctl, &r, sizeof(r)) != sizeof(r))
			return;
	}
}

static int peer_main(int ctl, uint16_t port, bool other_user)
{
	static uint8_t buf[BUF_LEN];
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_cq *cq;
	struct rr_evch *ch;
	struct rr_qp *qp;
	struct rr_mr *mr;
	struct rr_cm_event ev = {.type = -1};
	struct res r = {0};

	if (other_user) {
		struct passwd *pw = getpwnam("nobody");

		if (!pw || setgid(pw->pw_gid) || setuid(pw->pw_uid))
			return 2;
	}
	if (rr_device_open("shm", NULL, &dev) || rr_pd_alloc(dev, &pd) ||
	    rr_cq_create(dev, 64, &cq) || rr_evch_create(dev, &ch) ||
	    rr_mr_reg(pd, buf, sizeof(buf), RR_ACCESS_LOCAL_WRITE, &mr))
		return 3;
	struct rr_qp_attr a = {.send_cq = cq,
			       .recv_cq = cq,
			       .evch = ch,
			       .sq_depth = 16,
			       .rq_depth = 16,
			       .max_send_sge = 1,
			       .max_recv_sge = 1,
			       .ird = 4,
			       .ord = 4};
	if (rr_qp_create(pd, &a, &qp) ||
	    rr_qp_connect(qp, (struct sockaddr *)&sin, sizeof(sin), NULL, 0))
		return 4;
	rr_evch_get(ch, &ev, WAIT_MS);
	r.event = (int)ev.type;
	if (write(ctl, &r, sizeof(r)) != sizeof(r))
		return 5;
	if (ev.type == RR_CM_ESTABLISHED)
		peer_ops(ctl, qp, cq, mr, buf);
	return 0; /* exit tears it all down, as a dying peer would */
}

/* ---------------------------------------------------------------- target */

struct env {
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_cq *cq;
	struct rr_evch *ch;
	struct rr_listener *l;
	uint16_t port;
	uint8_t *mem; /* the target's exposed memory */
	struct rr_mr *mr;
	uint8_t recv_buf[IO_LEN];
	struct rr_mr *recv_mr;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_storage ss;

	e->mem = aligned_alloc(4096, BUF_LEN);
	for (int i = 0; i < BUF_LEN; i++)
		e->mem[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(rr_device_open("shm", NULL, &e->dev), 0);
	assert_int_equal(rr_pd_alloc(e->dev, &e->pd), 0);
	assert_int_equal(rr_evch_create(e->dev, &e->ch), 0);
	assert_int_equal(rr_cq_create(e->dev, 64, &e->cq), 0);
	assert_int_equal(rr_mr_reg(e->pd, e->mem, BUF_LEN,
				   RR_ACCESS_LOCAL_WRITE |
					   RR_ACCESS_REMOTE_WRITE |
					   RR_ACCESS_REMOTE_READ,
				   &e->mr),
			 0);
	assert_int_equal(rr_mr_reg(e->pd, e->recv_buf, sizeof(e->recv_buf),
				   RR_ACCESS_LOCAL_WRITE, &e->recv_mr),
			 0);
	assert_int_equal(rr_listener_create(e->dev, e->ch,
					    (struct sockaddr *)&sin,
					    sizeof(sin), 8, &e->l),
			 0);
	assert_int_equal(rr_listener_addr(e->l, &ss), 0);
	e->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	rr_listener_close(e->l);
	rr_mr_dereg(e->recv_mr);
	rr_mr_dereg(e->mr);
	rr_cq_destroy(e->cq);
	rr_evch_destroy(e->ch);
	rr_pd_free(e->pd);
	rr_device_close(e->dev);
	free(e->mem);
	free(e);
	return 0;
}

/* One connection to a fresh peer process. */
struct conn {
	pid_t pid;
	int ctl;
	struct rr_qp *qp;
};

static void spawn_peer(struct env *e, struct conn *c, bool other_user)
{
	int sv[2];
	char fd_arg[16], port_arg[16];
	char *argv[] = {(char *)g_self,		"peer", fd_arg, port_arg,
			other_user ? "1" : "0", NULL};

	/* only the peer's end is inherited: the peer sees EOF if we fail */
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(fcntl(sv[1], F_SETFD, 0), 0);
	snprintf(fd_arg, sizeof(fd_arg), "%d", sv[1]);
	snprintf(port_arg, sizeof(port_arg), "%u", e->port);
	assert_int_equal(
		posix_spawn(&c->pid, g_self, NULL, NULL, argv, environ), 0);
	close(sv[1]);
	c->ctl = sv[0];
	c->qp = NULL;
}

static struct res peer_answer(struct conn *c)
{
	struct res r;

	assert_int_equal(read(c->ctl, &r, sizeof(r)), sizeof(r));
	return r;
}

static void accept_peer(struct env *e, struct conn *c)
{
	struct rr_cm_event ev;
	struct rr_qp_attr a = {.send_cq = e->cq,
			       .recv_cq = e->cq,
			       .evch = e->ch,
			       .sq_depth = 16,
			       .rq_depth = 16,
			       .max_send_sge = 1,
			       .max_recv_sge = 1,
			       .ird = 4,
			       .ord = 4};
	struct rr_sge sge = {.addr = (uintptr_t)e->recv_buf,
			     .length = sizeof(e->recv_buf),
			     .lkey = rr_mr_lkey(e->recv_mr)};
	struct rr_recv_wr rwr = {.wr_id = 77, .sg_list = &sge, .num_sge = 1};

	for (int i = 0; i < BUF_LEN; i++)
		e->mem[i] = (uint8_t)(i * 7 + 1); /* never PEER_FILL's run */
	spawn_peer(e, c, false);
	assert_int_equal(rr_evch_get(e->ch, &ev, WAIT_MS), 0);
	assert_int_equal(ev.type, RR_CM_CONNECT_REQUEST);
	assert_int_equal(rr_qp_create(e->pd, &a, &c->qp), 0);
	assert_int_equal(rr_qp_post_recv(c->qp, &rwr, NULL), 0);
	assert_int_equal(rr_conn_req_accept(ev.req, c->qp, NULL, 0), 0);
	assert_int_equal(rr_evch_get(e->ch, &ev, WAIT_MS), 0);
	assert_int_equal(ev.type, RR_CM_ESTABLISHED);
	assert_int_equal(peer_answer(c).event, RR_CM_ESTABLISHED);
}

static struct res peer_do(struct conn *c, int kind, uint64_t addr, uint32_t len,
			  uint32_t rkey)
{
	struct op o = {.kind = kind, .addr = addr, .len = len, .rkey = rkey};

	assert_int_equal(write(c->ctl, &o, sizeof(o)), sizeof(o));
	return peer_answer(c);
}

/* The peer's last request was refused: the connection ends, as on iwarp. */
static void finish(struct env *e, struct conn *c, bool refused)
{
	struct op end = {.kind = OP_END};
	struct rr_cm_event ev;
	struct rr_wc wc;
	ssize_t w;
	int st;

	if (refused) {
		assert_int_equal(rr_evch_get(e->ch, &ev, WAIT_MS), 0);
		assert_int_equal(ev.type, RR_CM_QP_ERROR);
	}
	/* a peer that was refused may have exited already */
	w = send(c->ctl, &end, sizeof(end), MSG_NOSIGNAL);
	assert_true(w == (ssize_t)sizeof(end) ||
		    (w < 0 && (errno == EPIPE || errno == ECONNRESET)));
	assert_int_equal(waitpid(c->pid, &st, 0), c->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(c->ctl);
	if (c->qp) {
		assert_int_equal(rr_qp_destroy(c->qp), 0);
		while (rr_cq_poll(e->cq, &wc, 1) == 1)
			; /* the unused receive, flushed */
	}
}

static uint64_t at(struct env *e, size_t off)
{
	return (uint64_t)(uintptr_t)(e->mem + off);
}

static struct rr_fabric_counters counters(struct env *e)
{
	struct rr_fabric_counters k;

	assert_int_equal(rr_device_counters(e->dev, &k), 0);
	return k;
}

/*
 * A request the target must refuse: REM_ACCESS_ERR at the peer, no byte
 * of the target's memory changed, no byte read into the peer's sink, and
 * the reason counted.
 */
static void expect_refused(struct env *e, struct conn *c, int kind,
			   uint64_t addr, uint32_t len, uint32_t rkey,
			   bool bounds)
{
	uint8_t *before = malloc(BUF_LEN);
	struct rr_fabric_counters k0 = counters(e), k1;
	struct res r;

	memcpy(before, e->mem, BUF_LEN);
	r = peer_do(c, kind, addr, len, rkey);
	assert_int_equal(r.status, RR_WC_REM_ACCESS_ERR);
	assert_int_equal(r.sink_changed, 0);
	assert_memory_equal(before, e->mem, BUF_LEN);
	k1 = counters(e);
	if (bounds)
		assert_int_equal(k1.bad_bounds, k0.bad_bounds + 1);
	else
		assert_int_equal(k1.bad_stag, k0.bad_stag + 1);
	free(before);
	finish(e, c, true);
}

static uint32_t bind_mw(struct rr_mw *mw, struct env *e, size_t off, size_t len,
			unsigned access)
{
	assert_int_equal(rr_mw_bind(mw, e->mr, at(e, off), len, access), 0);
	return rr_mw_rkey(mw);
}

#define RW (RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE)

static void invalidated_key(void **state, int kind)
{
	struct env *e = *state;
	struct conn c;
	struct rr_mw *mw;
	uint32_t rkey;
	struct res r;

	assert_int_equal(rr_mw_alloc(e->pd, &mw), 0);
	rkey = bind_mw(mw, e, 0, 2 * IO_LEN, RW);
	accept_peer(e, &c);
	/* The key works while it is valid ... */
	r = peer_do(&c, kind, at(e, 0), IO_LEN, rkey);
	assert_int_equal(r.status, RR_WC_SUCCESS);
	/* ... and never again once invalidated. */
	assert_int_equal(rr_mw_fence(mw), 0);
	/* ORDER: after the fence, which waited for the copy (TSan sees it
	 * there; the peer's answer is in another process) */
	if (kind == OP_WRITE)
		assert_int_equal(e->mem[0], PEER_FILL);
	else
		assert_true(r.sink_changed);
	expect_refused(e, &c, kind, at(e, IO_LEN), IO_LEN, rkey, false);
	assert_int_equal(rr_mw_free(mw), 0);
}

static void invalidated_key_write(void **state)
{
	invalidated_key(state, OP_WRITE);
}

static void invalidated_key_read(void **state)
{
	invalidated_key(state, OP_READ);
}

/* The peer invalidates the key itself, then tries to use it. */
static void key_the_peer_invalidated(void **state)
{
	struct env *e = *state;
	struct conn c;
	struct rr_mw *mw;
	struct rr_wc wc;
	uint32_t rkey;

	assert_int_equal(rr_mw_alloc(e->pd, &mw), 0);
	rkey = bind_mw(mw, e, 0, 2 * IO_LEN, RW);
	accept_peer(e, &c);
	assert_int_equal(peer_do(&c, OP_SEND_INV, 0, 16, rkey).status,
			 RR_WC_SUCCESS);
	assert_int_equal(peer_wait_wc(e->cq, &wc), 0);
	assert_int_equal(wc.status, RR_WC_SUCCESS);
	assert_true(wc.flags & RR_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, rkey);
	expect_refused(e, &c, OP_WRITE, at(e, 0), IO_LEN, rkey, false);
	assert_int_equal(rr_mw_fence(mw), 0);
	assert_int_equal(rr_mw_free(mw), 0);
}

static void out_of_bounds(void **state, int kind)
{
	struct env *e = *state;
	struct conn c;
	struct rr_mw *mw;
	uint32_t rkey;

	assert_int_equal(rr_mw_alloc(e->pd, &mw), 0);
	rkey = bind_mw(mw, e, 4096, 2 * IO_LEN, RW);
	accept_peer(e, &c);
	/* one byte past the window's end */
	expect_refused(e, &c, kind, at(e, 4096 + IO_LEN + 1), IO_LEN, rkey,
		       true);
	assert_int_equal(rr_mw_fence(mw), 0);
	assert_int_equal(rr_mw_free(mw), 0);
}

static void out_of_bounds_write(void **state)
{
	out_of_bounds(state, OP_WRITE);
}

static void out_of_bounds_read(void **state)
{
	out_of_bounds(state, OP_READ);
}

static void without_the_right(void **state, int kind)
{
	struct env *e = *state;
	unsigned other = kind == OP_WRITE ? RR_ACCESS_REMOTE_READ
					  : RR_ACCESS_REMOTE_WRITE;
	struct conn c;
	struct rr_mw *mw;
	uint32_t rkey;

	assert_int_equal(rr_mw_alloc(e->pd, &mw), 0);
	rkey = bind_mw(mw, e, 0, 2 * IO_LEN, other);
	accept_peer(e, &c);
	expect_refused(e, &c, kind, at(e, 0), IO_LEN, rkey, false);
	assert_int_equal(rr_mw_fence(mw), 0);
	assert_int_equal(rr_mw_free(mw), 0);
}

static void write_without_remote_write(void **state)
{
	without_the_right(state, OP_WRITE);
}

static void read_without_remote_read(void **state)
{
	without_the_right(state, OP_READ);
}

/*
 * The rings are the peer's to write: an index claiming more than a ring
 * holds ends the connection (QP error, counted) before a byte is read.
 */
static void a_broken_ring_index_ends_the_connection(void **state)
{
	struct env *e = *state;
	struct rr_fabric_counters k0 = counters(e);
	struct conn c;

	accept_peer(e, &c);
	assert_int_equal(peer_do(&c, OP_BREAK_RING, 0, 0, 0).status, 0);
	finish(e, &c, true);
	assert_int_equal(counters(e).shm_ring_refused, k0.shm_ring_refused + 1);
}

/* A raw client: our own MPA request, with fd (or nothing) passed along. */
static int raw_request(uint16_t port, int fd)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct iw_mpa_frame f = {.flags = IW_MPA_FLAG_ENHANCED,
				 .rev = IW_MPA_REV,
				 .ird = 4,
				 .ord = 4};
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	int n = rr__iw_mpa_encode(&f, buf, sizeof(buf));
	int len = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1,
			   "rpcrdma-shm/%u", port);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	struct timeval tv = {.tv_sec = WAIT_MS / 1000};

	assert_true(n > 0 && s >= 0);
	/* a request the target took in gets no answer: fail, not hang */
	assert_int_equal(
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(
		connect(s, (struct sockaddr *)&un,
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    (size_t)len)),
		0);
	/* The engine's own sender: the frame is ours, the memfd the test's. */
	assert_int_equal(rr__shm_send_fd(s, buf, (size_t)n, fd), n);
	return s;
}

/* The target answers with a reject and closes; it never tells the app. */
static void expect_rejected(struct env *e, int s)
{
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	struct iw_mpa_frame f;
	struct rr_cm_event ev;
	uint16_t pd_total;
	size_t have = 0;
	ssize_t n;

	while (have < IW_MPA_HDR_LEN &&
	       (n = recv(s, buf + have, sizeof(buf) - have, 0)) > 0)
		have += (size_t)n;
	assert_true(have >= IW_MPA_HDR_LEN);
	assert_int_equal(rr__iw_mpa_decode_header(buf, true, &f, &pd_total), 0);
	assert_true(f.flags & IW_MPA_FLAG_REJECT);
	close(s);
	assert_int_equal(rr_evch_get(e->ch, &ev, 0), -EAGAIN);
}

/*
 * Rings in a memfd the peer could still shrink would let it make our
 * every access fault (SIGBUS): such a request, or one with no memfd, is
 * refused at the handshake and counted.
 */
static void rings_a_peer_could_shrink_are_refused(void **state)
{
	struct env *e = *state;
	struct rr_fabric_counters k0 = counters(e);
	int fd = memfd_create("rings", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, SHM_LINK_BYTES), 0);
	expect_rejected(e, raw_request(e->port, fd));
	assert_int_equal(counters(e).shm_ring_refused, k0.shm_ring_refused + 1);
	close(fd);
	expect_rejected(e, raw_request(e->port, -1));
	assert_int_equal(counters(e).shm_ring_refused, k0.shm_ring_refused + 2);
}

static void another_user_cannot_connect(void **state)
{
	struct env *e = *state;
	struct rr_fabric_counters k0 = counters(e);
	uint8_t *before = malloc(BUF_LEN);
	struct rr_cm_event ev;
	struct conn c;
	struct res r;

	if (geteuid() != 0) {
		free(before);
		printf("another user: needs root to setuid(nobody)\n");
		skip();
	}
	memcpy(before, e->mem, BUF_LEN);
	spawn_peer(e, &c, true);
	r = peer_answer(&c);
	assert_true(r.event == RR_CM_REJECTED || r.event == RR_CM_UNREACHABLE);
	/* refused before the application heard of it */
	assert_int_equal(rr_evch_get(e->ch, &ev, 0), -EAGAIN);
	assert_int_equal(counters(e).peer_cred_refused,
			 k0.peer_cred_refused + 1);
	assert_memory_equal(before, e->mem, BUF_LEN);
	free(before);
	finish(e, &c, false);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(invalidated_key_write),
		cmocka_unit_test(invalidated_key_read),
		cmocka_unit_test(key_the_peer_invalidated),
		cmocka_unit_test(out_of_bounds_write),
		cmocka_unit_test(out_of_bounds_read),
		cmocka_unit_test(write_without_remote_write),
		cmocka_unit_test(read_without_remote_read),
		cmocka_unit_test(a_broken_ring_index_ends_the_connection),
		cmocka_unit_test(rings_a_peer_could_shrink_are_refused),
		cmocka_unit_test(another_user_cannot_connect),
	};

	g_self = "/proc/self/exe";
	if (argc == 5 && strcmp(argv[1], "peer") == 0)
		return peer_main(atoi(argv[2]), (uint16_t)atoi(argv[3]),
				 strcmp(argv[4], "1") == 0);
	return cmocka_run_group_tests(tests, setup, teardown);
}
