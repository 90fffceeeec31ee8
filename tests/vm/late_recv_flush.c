/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * late_recv_flush [ADDR]: a receive posted after the peer has gone, but
 * before its disconnect was read, still completes once at the drain.
 *
 * Why: siw flushes a QP's queues only on the QP's way into ERROR, and
 * rdma-core posts a user QP's receives into a queue mapped from the
 * kernel, without a system call. When the peer's disconnect reaches the
 * device first, the QP has flushed what it held; a receive posted before
 * the DISCONNECTED event is read (the QP still looks connected to us) is
 * queued after that flush and never flushed by the device. The RPC server
 * reposts a receive as each call ends, so over siw a connection closed
 * by its client now and then ended with "receives 1 outstanding" (in 3
 * of 4 runs of tests/rpc/rpc_functional.c). rr_qp_drain must account for
 * it (include/rpcrdma/fabric.h: every work request not retired completes
 * with RR_WC_WR_FLUSH_ERR).
 *
 * One process, two QPs: A connects to B over the provider (RR_PROVIDER,
 * default iwarp) at ADDR (default RR_TEST_ADDR, else 127.0.0.1). B posts
 * NRECV receives; A disconnects; once B's receive CQ signals (the
 * device's flushes), B posts one more receive without having read its
 * event channel or polled its CQ, and a signaled Send (siw's doorbell
 * for a QP in ERROR flushes nothing either), then disconnects and drains.
 * Every request B's posts accepted must complete once, flushed, before
 * its queue's marker. A provider may refuse a late post (-ENOTCONN): then
 * there is nothing more to account for, and the test says so.
 *
 * Exit: 0 pass, 1 fail (the reason on stderr).
 */
#include <rpcrdma/fabric.h>

#include "clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_MS	 10000
#define NRECV	 4
#define RLEN	 64
#define LATE_ID	 (NRECV + 1)
#define SEND_ID	 50
#define MARK_SQ	 100
#define MARK_RQ	 200
#define DEPTH	 16
#define CQ_DEPTH 64

struct side {
	struct rr_evch *ch;
	struct rr_cq *scq, *rcq;
	struct rr_qp *qp;
	bool up;
};

static struct rr_device *dev;
static struct rr_pd *pd;
static struct rr_mr *mr;
static uint8_t rbuf[(NRECV + 1) * RLEN];

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			exit(1);                                               \
		}                                                              \
	} while (0)
#define OK(expr)                                                               \
	do {                                                                   \
		int ok_rc_ = (expr);                                           \
		CHECK(ok_rc_ == 0, "%s returned %d (%s)", #expr, ok_rc_,       \
		      strerror(-ok_rc_));                                      \
	} while (0)

static void side_open(struct side *s)
{
	struct rr_qp_attr a = {.sq_depth = DEPTH,
			       .rq_depth = DEPTH,
			       .max_send_sge = 1,
			       .max_recv_sge = 1};

	OK(rr_evch_create(dev, &s->ch));
	OK(rr_cq_create(dev, CQ_DEPTH, &s->scq));
	OK(rr_cq_create(dev, CQ_DEPTH, &s->rcq));
	a.send_cq = s->scq;
	a.recv_cq = s->rcq;
	a.evch = s->ch;
	OK(rr_qp_create(pd, &a, &s->qp));
}

static void side_close(struct side *s)
{
	OK(rr_qp_destroy(s->qp));
	OK(rr_cq_destroy(s->scq));
	OK(rr_cq_destroy(s->rcq));
	OK(rr_evch_destroy(s->ch));
}

static int post_recv(struct rr_qp *qp, uint64_t id)
{
	struct rr_sge sge = {.addr = (uintptr_t)&rbuf[(id - 1) * RLEN],
			     .length = RLEN,
			     .lkey = rr_mr_lkey(mr)};
	struct rr_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};

	return rr_qp_post_recv(qp, &wr, NULL);
}

static int post_send(struct rr_qp *qp)
{
	struct rr_sge sge = {.addr = (uintptr_t)rbuf,
			     .length = RLEN,
			     .lkey = rr_mr_lkey(mr)};
	struct rr_send_wr wr = {.wr_id = SEND_ID,
				.opcode = RR_WR_SEND,
				.flags = RR_SEND_SIGNALED,
				.sg_list = &sge,
				.num_sge = 1};

	return rr_qp_post_send(qp, &wr, NULL);
}

/*
 * The next completion of cq within the deadline, which must be a flush;
 * what names the queue in messages. Returns its wr_id.
 */
static uint64_t next_flush(struct rr_cq *cq, uint64_t end, const char *what)
{
	struct rr_wc wc;
	int n;

	while ((n = rr_cq_poll(cq, &wc, 1)) == 0) {
		CHECK(rr_t_now_ms() < end, "no %s marker within %d ms", what,
		      WAIT_MS);
		rr_cq_wait(cq, 100);
	}
	CHECK(n > 0, "rr_cq_poll: %d", n);
	CHECK(wc.status == RR_WC_WR_FLUSH_ERR, "%s %llu: status %s", what,
	      (unsigned long long)wc.wr_id, rr_wc_status_str(wc.status));
	return wc.wr_id;
}

/* The late Send, if posted, completes once, flushed, before the marker. */
static void expect_send_flush(struct side *b, bool posted)
{
	uint64_t end = rr_t_now_ms() + WAIT_MS;
	unsigned seen = 0;
	uint64_t id;

	while ((id = next_flush(b->scq, end, "send")) != MARK_SQ) {
		CHECK(id == SEND_ID, "unknown send wr_id %llu",
		      (unsigned long long)id);
		seen++;
	}
	CHECK(seen == posted,
	      "the late Send completed %u times before the marker, "
	      "expected %u",
	      seen, (unsigned)posted);
}

/* Takes what ch has; on the listener's channel, accepts with b. */
static void take_events(struct rr_evch *ch, struct side *b, struct side *who)
{
	struct rr_cm_event ev;

	while (rr_evch_get(ch, &ev, 0) == 0) {
		if (ev.type == RR_CM_CONNECT_REQUEST) {
			OK(rr_conn_req_accept(ev.req, b->qp, NULL, 0));
			continue;
		}
		CHECK(ev.type == RR_CM_ESTABLISHED && who,
		      "connecting: %s (status %d)", rr_cm_event_str(ev.type),
		      ev.status);
		who->up = true;
	}
}

static void connect_pair(struct rr_evch *lch, struct side *a, struct side *b,
			 const struct sockaddr_in *to)
{
	uint64_t end = rr_t_now_ms() + WAIT_MS;

	OK(rr_qp_connect(a->qp, (const struct sockaddr *)to, sizeof(*to), NULL,
			 0));
	while (!a->up || !b->up) {
		struct pollfd p[3] = {{rr_evch_fd(lch), POLLIN, 0},
				      {rr_evch_fd(a->ch), POLLIN, 0},
				      {rr_evch_fd(b->ch), POLLIN, 0}};
		long long left = (long long)(end - rr_t_now_ms());

		CHECK(left > 0, "not connected within %d ms", WAIT_MS);
		poll(p, 3, (int)left);
		take_events(lch, b, NULL);
		take_events(a->ch, b, a);
		take_events(b->ch, b, b);
	}
}

/* fd readable within WAIT_MS; nothing is read from it. */
static void wait_readable(int fd, const char *what)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n;

	do
		n = poll(&p, 1, WAIT_MS);
	while (n < 0 && errno == EINTR);
	CHECK(n == 1, "%s: not readable within %d ms", what, WAIT_MS);
}

/* Polls b's receive CQ until the marker; each receive must come once. */
static void expect_flushes(struct side *b, bool late_posted)
{
	unsigned seen[LATE_ID + 1] = {0};
	uint64_t end = rr_t_now_ms() + WAIT_MS;
	struct rr_wc wc;
	uint64_t wr;

	while ((wr = next_flush(b->rcq, end, "receive")) != MARK_RQ) {
		CHECK(wr >= 1 && wr <= LATE_ID, "unknown wr_id %llu",
		      (unsigned long long)wr);
		seen[wr]++;
	}
	for (uint64_t id = 1; id <= LATE_ID; id++) {
		unsigned want = id < LATE_ID || late_posted;

		CHECK(seen[id] == want,
		      "receive %llu%s completed %u times before the marker, "
		      "expected %u",
		      (unsigned long long)id,
		      id == LATE_ID ? " (posted late)" : "", seen[id], want);
	}
	CHECK(rr_cq_poll(b->rcq, &wc, 1) == 0,
	      "a completion after the marker: wr_id %llu",
	      (unsigned long long)wc.wr_id);
}

int main(int argc, char **argv)
{
	const char *prov = getenv("RR_PROVIDER");
	const char *addr = argc > 1 ? argv[1] : getenv("RR_TEST_ADDR");
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_storage bound;
	struct side a = {0}, b = {0};
	struct rr_evch *lch;
	struct rr_listener *l;
	int rc, src;

	CHECK(inet_pton(AF_INET, addr ? addr : "127.0.0.1", &sin.sin_addr) == 1,
	      "bad address");
	OK(rr_device_open(prov ? prov : "iwarp", NULL, &dev));
	OK(rr_pd_alloc(dev, &pd));
	OK(rr_mr_reg(pd, rbuf, sizeof(rbuf), RR_ACCESS_LOCAL_WRITE, &mr));
	OK(rr_evch_create(dev, &lch));
	OK(rr_listener_create(dev, lch, (struct sockaddr *)&sin, sizeof(sin), 4,
			      &l));
	OK(rr_listener_addr(l, &bound));
	sin.sin_port = ((struct sockaddr_in *)&bound)->sin_port;
	side_open(&a);
	side_open(&b);
	for (uint64_t id = 1; id <= NRECV; id++)
		OK(post_recv(b.qp, id));
	connect_pair(lch, &a, &b, &sin);

	OK(rr_qp_disconnect(a.qp));
	/* B's device has flushed what it holds; B has not looked yet. */
	wait_readable(rr_cq_fd(b.rcq), "B's receive CQ after A left");
	rc = post_recv(b.qp, LATE_ID);
	CHECK(rc == 0 || rc == -ENOTCONN, "late post: %d", rc);
	src = post_send(b.qp);
	CHECK(src == 0 || src == -ENOTCONN, "late send: %d", src);
	printf("late receive %s, late send %s\n",
	       rc ? "refused (-ENOTCONN)" : "accepted",
	       src ? "refused (-ENOTCONN)" : "accepted");

	OK(rr_qp_disconnect(b.qp));
	OK(rr_qp_drain(b.qp, MARK_SQ, MARK_RQ));
	expect_flushes(&b, rc == 0);
	expect_send_flush(&b, src == 0);

	side_close(&a);
	side_close(&b);
	OK(rr_listener_close(l));
	OK(rr_evch_destroy(lch));
	OK(rr_mr_dereg(mr));
	OK(rr_pd_free(pd));
	OK(rr_device_close(dev));
	printf("PASS: every request completed once, flushed, before its "
	       "queue's marker\n");
	return 0;
}
