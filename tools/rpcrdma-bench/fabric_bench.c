// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fabric phase: a passive peer in a forked child and the active client
 * here, both on the public fabric API only.
 *
 * write/read: the peer exposes one registered buffer (depth slots of SIZE)
 * through the accept private data, 8-byte address + 4-byte rkey + 4-byte
 * length, big-endian; the client keeps depth RDMA Writes or Reads in flight,
 * slot i always targeting remote slot i.
 * send: the peer echoes every Send with a Send of the same size; the client
 * keeps depth messages in flight and times each to its echo.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define PDATA_LEN  16
#define POLL_BATCH 32
#define RECV_TAG   (1ull << 63)

struct fab {
	const struct bench_opts *o;
	const char *who; /* prefix of every message */
	struct rr_device *dev;
	struct rr_device_attr attr;
	struct rr_evch *ch;
	struct rr_listener *lis;
	struct rr_pd *pd;
	struct rr_cq *cq;
	struct rr_qp *qp;
	struct rr_mr *mr;
	char *buf;
	size_t buf_len;
	uint32_t sq_depth, rq_depth;
	uint64_t *t_post;
	/* Work requests posted and not yet retired by a polled completion. */
	uint32_t sq_used, rq_used;
};

struct fab_remote {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static const char *wc_opcode_str(enum rr_wc_opcode op)
{
	static const char *const names[] = {
		[RR_WC_SEND] = "SEND",
		[RR_WC_RDMA_WRITE] = "RDMA_WRITE",
		[RR_WC_RDMA_READ] = "RDMA_READ",
		[RR_WC_LOCAL_INV] = "LOCAL_INV",
		[RR_WC_REG] = "REG",
		[RR_WC_RECV] = "RECV",
	};

	if ((unsigned)op < sizeof(names) / sizeof(names[0]))
		return names[op];
	return "?";
}

static const char *qp_state_str(enum rr_qp_state s)
{
	switch (s) {
	case RR_QPS_INIT:
		return "INIT";
	case RR_QPS_CONNECTING:
		return "CONNECTING";
	case RR_QPS_RTS:
		return "RTS";
	case RR_QPS_ERROR:
		return "ERROR";
	}
	return "?";
}

static int fail(const struct fab *f, const char *call, int err)
{
	fprintf(stderr, "%s: %s: %s (%d)\n", f->who, call, strerror(-err), err);
	return err;
}

static int wc_fail(const struct fab *f, const struct rr_wc *wc)
{
	fprintf(stderr,
		"%s: completion failed: wr_id 0x%llx opcode %s status %s "
		"(%d)\n",
		f->who, (unsigned long long)wc->wr_id,
		wc_opcode_str(wc->opcode), rr_wc_status_str(wc->status),
		wc->status);
	return -EIO;
}

/* ------------------------------------------------------------ resources */

static int fab_open(struct fab *f, const struct bench_opts *o, const char *who)
{
	int err;

	memset(f, 0, sizeof(*f));
	f->o = o;
	f->who = who;
	err = rr_device_open(o->provider, NULL, &f->dev);
	if (err)
		return fail(f, "rr_device_open", err);
	err = rr_device_query(f->dev, &f->attr);
	if (err)
		return fail(f, "rr_device_query", err);
	err = rr_evch_create(f->dev, &f->ch);
	if (err)
		return fail(f, "rr_evch_create", err);
	err = rr_pd_alloc(f->dev, &f->pd);
	if (err)
		return fail(f, "rr_pd_alloc", err);
	f->t_post = calloc(o->depth, sizeof(*f->t_post));
	return f->t_post ? 0 : fail(f, "calloc", -ENOMEM);
}

static int fab_reg(struct fab *f, size_t len, unsigned access)
{
	int err;

	if (posix_memalign((void **)&f->buf, 4096, len))
		return fail(f, "posix_memalign", -ENOMEM);
	f->buf_len = len;
	/* Fault every page in now so page faults are not measured. */
	memset(f->buf, 0x5a, len);
	err = rr_mr_reg(f->pd, f->buf, len, access, &f->mr);
	return err ? fail(f, "rr_mr_reg", err) : 0;
}

static uint16_t min_u16(uint32_t a, uint32_t b)
{
	uint32_t m = a < b ? a : b;

	return m > UINT16_MAX ? UINT16_MAX : (uint16_t)m;
}

static int fab_qp(struct fab *f, uint32_t sq_depth, uint32_t rq_depth)
{
	struct rr_qp_attr qa = {0};
	int err;

	if (sq_depth > f->attr.max_qp_wr || rq_depth > f->attr.max_qp_wr ||
	    sq_depth + rq_depth > f->attr.max_cqe) {
		fprintf(stderr,
			"%s: depth %u exceeds the device (max_qp_wr %u, "
			"max_cqe %u)\n",
			f->who, f->o->depth, f->attr.max_qp_wr,
			f->attr.max_cqe);
		return -EINVAL;
	}
	/* One CQ for both queues: sized to their sum it cannot overrun. */
	err = rr_cq_create(f->dev, sq_depth + rq_depth, &f->cq);
	if (err)
		return fail(f, "rr_cq_create", err);
	qa.send_cq = f->cq;
	qa.recv_cq = f->cq;
	qa.evch = f->ch;
	qa.sq_depth = f->sq_depth = sq_depth;
	qa.rq_depth = f->rq_depth = rq_depth;
	qa.max_send_sge = 1;
	qa.max_recv_sge = 1;
	qa.ird = min_u16(f->o->depth, f->attr.max_ird);
	qa.ord = min_u16(f->o->depth, f->attr.max_ord);
	qa.flags = f->o->crc ? RR_QP_CRC : 0;
	if (f->o->op == BENCH_OP_READ && qa.ord < f->o->depth)
		fprintf(stderr,
			"%s: note: ord %u < depth %u, Reads will queue\n",
			f->who, qa.ord, f->o->depth);
	err = rr_qp_create(f->pd, &qa, &f->qp);
	return err ? fail(f, "rr_qp_create", err) : 0;
}

static int keep_first(const struct fab *f, int err, int rc, const char *call)
{
	if (rc)
		fail(f, call, rc);
	return err ? err : rc;
}

static int fab_close(struct fab *f)
{
	int err = 0;

	if (f->qp)
		err = keep_first(f, err, rr_qp_destroy(f->qp), "rr_qp_destroy");
	if (f->lis)
		err = keep_first(f, err, rr_listener_close(f->lis),
				 "rr_listener_close");
	if (f->cq)
		err = keep_first(f, err, rr_cq_destroy(f->cq), "rr_cq_destroy");
	if (f->mr)
		err = keep_first(f, err, rr_mr_dereg(f->mr), "rr_mr_dereg");
	if (f->pd)
		err = keep_first(f, err, rr_pd_free(f->pd), "rr_pd_free");
	if (f->ch)
		err = keep_first(f, err, rr_evch_destroy(f->ch),
				 "rr_evch_destroy");
	if (f->dev)
		err = keep_first(f, err, rr_device_close(f->dev),
				 "rr_device_close");
	free(f->buf);
	free(f->t_post);
	memset(f, 0, sizeof(*f));
	return err;
}

/* ------------------------------------------------------ events and posts */

static int fab_expect(struct fab *f, enum rr_cm_event_type want, int timeout_ms,
		      struct rr_cm_event *ev)
{
	int err = rr_evch_get(f->ch, ev, timeout_ms);

	if (err) {
		fprintf(stderr, "%s: waiting %d ms for %s: rr_evch_get: %s\n",
			f->who, timeout_ms, rr_cm_event_str(want),
			strerror(-err));
		if (f->qp)
			fprintf(stderr, "%s: the QP is in state %s\n", f->who,
				qp_state_str(rr_qp_state(f->qp)));
		return err;
	}
	if (ev->type != want) {
		fprintf(stderr, "%s: expected %s, got %s (status %d: %s)\n",
			f->who, rr_cm_event_str(want),
			rr_cm_event_str(ev->type), ev->status,
			strerror(-ev->status));
		return -EPROTO;
	}
	return 0;
}

static int post_recv(struct fab *f, uint32_t slot)
{
	struct rr_sge sge = {
		.addr = (uintptr_t)f->buf + (uint64_t)slot * f->o->size,
		.length = f->o->size,
		.lkey = rr_mr_lkey(f->mr),
	};
	struct rr_recv_wr wr = {
		.wr_id = RECV_TAG | slot,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct rr_recv_wr *bad;
	int err = rr_qp_post_recv(f->qp, &wr, &bad);

	if (err)
		return fail(f, "rr_qp_post_recv", err);
	f->rq_used++;
	return 0;
}

/* Sends and RDMA ops; rem is NULL for Sends. */
static int post_send(struct fab *f, enum rr_wr_opcode opcode, uint64_t wr_id,
		     uint32_t slot, const struct fab_remote *rem)
{
	uint64_t off = (uint64_t)slot * f->o->size;
	struct rr_sge sge = {
		.addr = (uintptr_t)f->buf + off,
		.length = f->o->size,
		.lkey = rr_mr_lkey(f->mr),
	};
	struct rr_send_wr wr = {
		.wr_id = wr_id,
		.opcode = opcode,
		.flags = RR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct rr_send_wr *bad;
	int err;

	if (rem) {
		wr.rdma.remote_addr = rem->addr + off;
		wr.rdma.rkey = rem->rkey;
	}
	err = rr_qp_post_send(f->qp, &wr, &bad);
	if (err)
		return fail(f, "rr_qp_post_send", err);
	f->sq_used++;
	return 0;
}

/*
 * Waits in rr_cq_wait, which lets the provider make progress in this thread,
 * then drains. Returns the number of completions or a negative errno; a
 * silent CQ for BENCH_WAIT_MS is an error, never a hang.
 */
static int fab_poll(struct fab *f, struct rr_wc *wc)
{
	uint64_t deadline = bench_now_ns() + BENCH_WAIT_MS * 1000000ull;
	int n, err;

	for (;;) {
		err = rr_cq_wait(f->cq, BENCH_WAIT_MS);
		if (err && err != -ETIMEDOUT)
			return fail(f, "rr_cq_wait", err);
		n = rr_cq_poll(f->cq, wc, POLL_BATCH);
		if (n)
			return n < 0 ? fail(f, "rr_cq_poll", n) : n;
		if (bench_now_ns() >= deadline) {
			fprintf(stderr,
				"%s: no completion within %d ms (%u sends, %u "
				"receives outstanding)\n",
				f->who, BENCH_WAIT_MS, f->sq_used, f->rq_used);
			return -ETIMEDOUT;
		}
	}
}

/*
 * Retires one completion from the queue accounting. The wr_id, not the
 * opcode, says which queue: like ibverbs, a flushed completion need not
 * carry a meaningful opcode.
 */
static void retire(struct fab *f, const struct rr_wc *wc)
{
	if (wc->wr_id & RECV_TAG)
		f->rq_used--;
	else
		f->sq_used--;
}

/*
 * After a disconnect every outstanding work request must come back, flushed
 * or (if it had finished) successful. Anything else is a provider error.
 */
static int retire_flushed(struct fab *f, const struct rr_wc *wc, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (wc[i].status != RR_WC_SUCCESS &&
		    wc[i].status != RR_WC_WR_FLUSH_ERR)
			return wc_fail(f, &wc[i]);
		retire(f, &wc[i]);
	}
	return 0;
}

static int fab_drain(struct fab *f)
{
	struct rr_wc wc[POLL_BATCH];
	int n, err;

	while (f->sq_used || f->rq_used) {
		n = fab_poll(f, wc);
		if (n < 0)
			return n;
		err = retire_flushed(f, wc, n);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Retires a completion of the Send echo, which both sides run. Returns 1
 * for a received message of SIZE bytes (its buffer wants re-posting), 0
 * for a finished Send, or a negative errno after saying what went wrong.
 */
static int echo_wc(struct fab *f, const struct rr_wc *wc, const char *what)
{
	if (wc->status != RR_WC_SUCCESS)
		return wc_fail(f, wc);
	retire(f, wc);
	if (!(wc->wr_id & RECV_TAG))
		return 0;
	if (wc->byte_len != f->o->size) {
		fprintf(stderr, "%s: %s %u bytes, expected %u\n", f->who, what,
			wc->byte_len, f->o->size);
		return -EPROTO;
	}
	return 1;
}

static void pdata_pack(uint8_t *p, const struct fab_remote *r)
{
	uint64_t addr = htobe64(r->addr);
	uint32_t rkey = htobe32(r->rkey), len = htobe32(r->len);

	memcpy(p, &addr, 8);
	memcpy(p + 8, &rkey, 4);
	memcpy(p + 12, &len, 4);
}

static void pdata_unpack(const uint8_t *p, struct fab_remote *r)
{
	uint64_t addr;
	uint32_t rkey, len;

	memcpy(&addr, p, 8);
	memcpy(&rkey, p + 8, 4);
	memcpy(&len, p + 12, 4);
	r->addr = be64toh(addr);
	r->rkey = be32toh(rkey);
	r->len = be32toh(len);
}

/*
 * Send-mode buffers: slots [0, depth) receive, [depth, 2 * depth) send. The
 * RDMA modes need one slot per operation in flight.
 */
static size_t fab_buf_len(const struct bench_opts *o)
{
	size_t slots = o->op == BENCH_OP_SEND ? 2 * o->depth : o->depth;

	return slots * o->size;
}

static int post_recvs(struct fab *f)
{
	uint32_t slot;
	int err = 0;

	for (slot = 0; !err && slot < f->o->depth; slot++)
		err = post_recv(f, slot);
	return err;
}

/* Send mode may see a Send completion after the echo it provoked: 2x. */
static int fab_setup_qp(struct fab *f)
{
	uint32_t d = f->o->depth;
	int err;

	if (f->o->op != BENCH_OP_SEND)
		return fab_qp(f, d, 1);
	err = fab_qp(f, 2 * d < f->attr.max_qp_wr ? 2 * d : f->attr.max_qp_wr,
		     d);
	/* Receives go up before connecting: iWARP has no RNR retry. */
	return err ? err : post_recvs(f);
}

/* -------------------------------------------------------------- the peer */

static int peer_listen(struct fab *f, int notify_fd)
{
	struct sockaddr_storage ss;
	struct sockaddr_in sin;
	int err;

	bench_sockaddr(f->o, f->o->port, &sin);
	err = rr_listener_create(f->dev, f->ch, (struct sockaddr *)&sin,
				 sizeof(sin), 1, &f->lis);
	if (err)
		return fail(f, "rr_listener_create", err);
	err = rr_listener_addr(f->lis, &ss);
	if (err)
		return fail(f, "rr_listener_addr", err);
	if (ss.ss_family != AF_INET)
		return fail(f, "rr_listener_addr family", -EAFNOSUPPORT);
	return bench_peer_notify_port(
		notify_fd, ntohs(((struct sockaddr_in *)&ss)->sin_port));
}

static int peer_accept(struct fab *f)
{
	struct fab_remote me = {
		.addr = (uintptr_t)f->buf,
		.rkey = rr_mr_rkey(f->mr),
		.len = (uint32_t)f->buf_len,
	};
	uint8_t pdata[PDATA_LEN];
	struct rr_cm_event ev;
	int err;

	err = fab_expect(f, RR_CM_CONNECT_REQUEST, BENCH_WAIT_MS, &ev);
	if (err)
		return err;
	err = fab_setup_qp(f);
	if (err) {
		rr_conn_req_reject(ev.req, NULL, 0);
		return err;
	}
	pdata_pack(pdata, &me);
	err = rr_conn_req_accept(ev.req, f->qp, pdata, sizeof(pdata));
	if (err)
		return fail(f, "rr_conn_req_accept", err);
	err = fab_expect(f, RR_CM_ESTABLISHED, BENCH_WAIT_MS, &ev);
	if (err)
		return err;
	/* One connection per run; the port is free again for the next one. */
	err = rr_listener_close(f->lis);
	f->lis = NULL;
	return err ? fail(f, "rr_listener_close", err) : 0;
}

/* RDMA Write/Read need nothing from the peer's CPU: wait for the end. */
static int peer_wait_disconnect(struct fab *f)
{
	struct rr_cm_event ev;
	int timeout = (int)(f->o->seconds * 1000) + BENCH_WAIT_MS;
	int err;

	err = fab_expect(f, RR_CM_DISCONNECTED, timeout, &ev);
	return err ? err : fab_drain(f);
}

/* The client disconnected: the rest of the batch must be flushes too. */
static int peer_flushed(struct fab *f, const struct rr_wc *wc, int n)
{
	struct rr_cm_event ev;
	int err;

	err = retire_flushed(f, wc, n);
	if (!err)
		err = fab_drain(f);
	return err ? err
		   : fab_expect(f, RR_CM_DISCONNECTED, BENCH_WAIT_MS, &ev);
}

static int peer_echo_wc(struct fab *f, const struct rr_wc *wc,
			uint64_t *pending)
{
	int got = echo_wc(f, wc, "received");

	if (got <= 0)
		return got;
	(*pending)++;
	/* Re-post before answering, so the client's next Send finds it. */
	return post_recv(f, (uint32_t)(wc->wr_id & ~RECV_TAG));
}

static int peer_echo(struct fab *f)
{
	uint32_t d = f->o->depth;
	struct rr_wc wc[POLL_BATCH];
	uint64_t pending = 0, sent = 0;
	int i, n, err = 0;

	for (;;) {
		while (!err && pending && f->sq_used < f->sq_depth) {
			err = post_send(f, RR_WR_SEND, sent, d + sent % d,
					NULL);
			pending--;
			sent++;
		}
		n = err ? err : fab_poll(f, wc);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			if (wc[i].status == RR_WC_WR_FLUSH_ERR)
				return peer_flushed(f, wc + i, n - i);
			err = peer_echo_wc(f, &wc[i], &pending);
			if (err)
				return err;
		}
	}
}

static int fabric_peer(const struct bench_opts *o, int notify_fd)
{
	unsigned access = RR_ACCESS_LOCAL_WRITE;
	struct fab f;
	int err, cerr;

	if (o->op != BENCH_OP_SEND)
		access |= RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE;
	err = fab_open(&f, o, "fabric peer");
	if (!err)
		err = fab_reg(&f, fab_buf_len(o), access);
	if (!err)
		err = peer_listen(&f, notify_fd);
	if (!err)
		err = peer_accept(&f);
	if (!err)
		err = o->op == BENCH_OP_SEND ? peer_echo(&f)
					     : peer_wait_disconnect(&f);
	cerr = fab_close(&f);
	return err ? err : cerr;
}

/* ------------------------------------------------------------ the client */

struct run {
	struct bench_result *r;
	uint64_t start, end, now, last;
	struct bench_progress prog;
};

static void run_start(struct run *run, struct fab *f, struct bench_result *r)
{
	run->r = r;
	run->start = run->now = run->last = bench_now_ns();
	run->end = run->start + (uint64_t)(f->o->seconds * 1e9);
	bench_progress_init(&run->prog, f->o->provider, f->o->seconds,
			    run->start);
}

static void run_sample(struct run *run, const struct fab *f, uint64_t t_post)
{
	bench_hist_record(&run->r->hist, run->now - t_post);
	run->r->ops++;
	run->r->bytes += f->o->size;
	run->last = run->now;
}

static void run_end(struct run *run)
{
	bench_progress_done(&run->prog);
	run->r->elapsed_s = (double)(run->last - run->start) / 1e9;
}

static int client_connect(struct fab *f, uint16_t port, struct fab_remote *rem)
{
	struct rr_cm_event ev;
	struct sockaddr_in sin;
	int err;

	bench_sockaddr(f->o, port, &sin);
	err = rr_qp_connect(f->qp, (struct sockaddr *)&sin, sizeof(sin), NULL,
			    0);
	if (err)
		return fail(f, "rr_qp_connect", err);
	err = fab_expect(f, RR_CM_ESTABLISHED, BENCH_WAIT_MS, &ev);
	if (err)
		return err;
	if (ev.private_data_len < PDATA_LEN) {
		fprintf(stderr,
			"%s: accept private data is %u bytes, expected %u\n",
			f->who, ev.private_data_len, PDATA_LEN);
		return -EPROTO;
	}
	pdata_unpack(ev.private_data, rem);
	if (f->o->op != BENCH_OP_SEND && rem->len < f->buf_len) {
		fprintf(stderr, "%s: peer exposes %u bytes, need %zu\n", f->who,
			rem->len, f->buf_len);
		return -EPROTO;
	}
	return 0;
}

static int rdma_wc(struct fab *f, const struct rr_wc *wc,
		   enum rr_wc_opcode want)
{
	if (wc->status != RR_WC_SUCCESS)
		return wc_fail(f, wc);
	if (wc->opcode != want || wc->wr_id >= f->o->depth) {
		fprintf(stderr,
			"%s: unexpected completion: wr_id 0x%llx "
			"opcode %s\n",
			f->who, (unsigned long long)wc->wr_id,
			wc_opcode_str(wc->opcode));
		return -EPROTO;
	}
	if (want == RR_WC_RDMA_READ && wc->byte_len != f->o->size) {
		fprintf(stderr,
			"%s: RDMA Read completed %u bytes, expected %u\n",
			f->who, wc->byte_len, f->o->size);
		return -EPROTO;
	}
	retire(f, wc);
	return 0;
}

static int rdma_post(struct fab *f, struct run *run, uint32_t slot,
		     const struct fab_remote *rem)
{
	enum rr_wr_opcode opc =
		f->o->op == BENCH_OP_WRITE ? RR_WR_RDMA_WRITE : RR_WR_RDMA_READ;

	f->t_post[slot] = run->now;
	return post_send(f, opc, slot, slot, rem);
}

static int rdma_loop(struct fab *f, const struct fab_remote *rem,
		     struct bench_result *r)
{
	enum rr_wc_opcode want =
		f->o->op == BENCH_OP_WRITE ? RR_WC_RDMA_WRITE : RR_WC_RDMA_READ;
	struct rr_wc wc[POLL_BATCH];
	struct run run;
	uint32_t slot;
	int i, n, err = 0;

	run_start(&run, f, r);
	for (slot = 0; !err && slot < f->o->depth; slot++)
		err = rdma_post(f, &run, slot, rem);
	while (!err && f->sq_used) {
		n = fab_poll(f, wc);
		if (n < 0)
			return n;
		run.now = bench_now_ns();
		for (i = 0; !err && i < n; i++) {
			err = rdma_wc(f, &wc[i], want);
			if (err)
				break;
			slot = (uint32_t)wc[i].wr_id;
			run_sample(&run, f, f->t_post[slot]);
			if (run.now < run.end)
				err = rdma_post(f, &run, slot, rem);
		}
		bench_progress_tick(&run.prog, run.now, r->ops, r->bytes);
	}
	run_end(&run);
	return err;
}

struct echo_state {
	uint64_t posted, done;
};

static int send_post(struct fab *f, struct run *run, struct echo_state *es)
{
	uint32_t d = f->o->depth;
	int err = 0;

	while (!err && run->now < run->end && es->posted - es->done < d &&
	       f->sq_used < f->sq_depth) {
		f->t_post[es->posted % d] = run->now;
		err = post_send(f, RR_WR_SEND, es->posted, d + es->posted % d,
				NULL);
		es->posted++;
	}
	return err;
}

static int send_wc(struct fab *f, struct run *run, struct echo_state *es,
		   const struct rr_wc *wc)
{
	uint32_t d = f->o->depth;
	int got = echo_wc(f, wc, "echo of");

	if (got <= 0)
		return got;
	/* Echoes come back in order: the oldest message is answered. */
	run_sample(run, f, f->t_post[es->done % d]);
	es->done++;
	return post_recv(f, (uint32_t)(wc->wr_id & ~RECV_TAG));
}

static int send_loop(struct fab *f, struct bench_result *r)
{
	struct echo_state es = {0};
	struct rr_wc wc[POLL_BATCH];
	struct run run;
	int i, n, err;

	run_start(&run, f, r);
	for (;;) {
		err = send_post(f, &run, &es);
		if (err)
			break;
		if (es.posted == es.done && !f->sq_used)
			break; /* past the end and nothing in flight */
		n = fab_poll(f, wc);
		if (n < 0)
			return n;
		run.now = bench_now_ns();
		for (i = 0; !err && i < n; i++)
			err = send_wc(f, &run, &es, &wc[i]);
		if (err)
			break;
		bench_progress_tick(&run.prog, run.now, r->ops, r->bytes);
	}
	run_end(&run);
	return err;
}

static int client_disconnect(struct fab *f, struct bench_result *r)
{
	struct rr_cm_event ev;
	int err;

	err = rr_qp_disconnect(f->qp);
	if (err)
		return fail(f, "rr_qp_disconnect", err);
	err = fab_expect(f, RR_CM_DISCONNECTED, BENCH_WAIT_MS, &ev);
	if (!err)
		err = fab_drain(f);
	if (err)
		return err;
	err = rr_device_counters(f->dev, &r->counters);
	if (err)
		return fail(f, "rr_device_counters", err);
	r->have_counters = true;
	return 0;
}

static int client_run(struct fab *f, uint16_t port, struct bench_result *r)
{
	struct fab_remote rem;
	int err;

	err = fab_reg(f, fab_buf_len(f->o), RR_ACCESS_LOCAL_WRITE);
	if (!err)
		err = fab_setup_qp(f);
	if (!err)
		err = client_connect(f, port, &rem);
	if (!err && f->o->op == BENCH_OP_SEND)
		err = send_loop(f, r);
	else if (!err)
		err = rdma_loop(f, &rem, r);
	return err ? err : client_disconnect(f, r);
}

int bench_fabric_run(const struct bench_opts *o, struct bench_result *r)
{
	struct bench_peer peer;
	struct fab f = {0};
	uint16_t port;
	int err, cerr, perr;

	/* Fork first: the child must not inherit the provider's threads. */
	err = bench_peer_spawn(&peer, fabric_peer, o);
	if (err) {
		fprintf(stderr, "fabric: fork: %s\n", strerror(-err));
		return err;
	}
	err = bench_peer_port(&peer, &port, "fabric");
	if (!err) {
		r->port = port;
		err = fab_open(&f, o, "fabric");
	}
	if (!err)
		err = client_run(&f, port, r);
	cerr = fab_close(&f);
	perr = bench_peer_reap(&peer, "fabric");
	err = err ? err : cerr ? cerr : perr;
	r->done = !err;
	return err;
}
