/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A hostile peer against the iwarp provider: a raw TCP client that speaks
 * MPA/DDP/RDMAP by hand and gets the bytes wrong on purpose. Each bad input
 * must end that connection (a Terminate naming the layer and code where
 * the protocol has one, a close otherwise), bump the counter of its
 * reason, and leave the listener and an established good connection
 * working.
 */
#include "fabric/iwarp/wire.h"
#include "base/crc32c.h"

#include <rpcrdma/fabric.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define WAIT_MS 5000

struct env {
	struct rr_device *dev;
	struct rr_pd *pd;
	struct rr_evch *ch;
	struct rr_cq *cq;
	struct rr_listener *l;
	uint16_t port;
	struct rr_mr *mr;
	char buf[65536];
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_storage ss;

	assert_int_equal(rr_device_open("iwarp", NULL, &e->dev), 0);
	assert_int_equal(rr_pd_alloc(e->dev, &e->pd), 0);
	assert_int_equal(rr_evch_create(e->dev, &e->ch), 0);
	assert_int_equal(rr_cq_create(e->dev, 1024, &e->cq), 0);
	assert_int_equal(rr_mr_reg(e->pd, e->buf, sizeof(e->buf),
				   RR_ACCESS_LOCAL_WRITE |
					   RR_ACCESS_REMOTE_WRITE |
					   RR_ACCESS_REMOTE_READ,
				   &e->mr),
			 0);
	assert_int_equal(rr_listener_create(e->dev, e->ch,
					    (struct sockaddr *)&sin,
					    sizeof(sin), 16, &e->l),
			 0);
	assert_int_equal(rr_listener_addr(e->l, &ss), 0);
	e->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	assert_int_equal(rr_listener_close(e->l), 0);
	assert_int_equal(rr_mr_dereg(e->mr), 0);
	assert_int_equal(rr_cq_destroy(e->cq), 0);
	assert_int_equal(rr_evch_destroy(e->ch), 0);
	assert_int_equal(rr_pd_free(e->pd), 0);
	assert_int_equal(rr_device_close(e->dev), 0);
	free(e);
	return 0;
}

static struct rr_fabric_counters counters(struct env *e)
{
	struct rr_fabric_counters c;

	assert_int_equal(rr_device_counters(e->dev, &c), 0);
	return c;
}

static int raw_connect(struct env *e)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(e->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void raw_send(int fd, const void *p, size_t len)
{
	assert_int_equal(send(fd, p, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Reads exactly len bytes, or returns how many came before EOF/timeout. */
static size_t raw_recv(int fd, void *p, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pf, 1, WAIT_MS) != 1)
			break;
		n = recv(fd, (char *)p + got, len - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* True when the provider closed the stream (EOF or reset) in time. */
static bool raw_closed(int fd)
{
	char b[256];

	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pf, 1, WAIT_MS) != 1)
			return false;
		n = recv(fd, b, sizeof(b), 0);
		if (n <= 0)
			return true;
	}
}

static void mpa_request(int fd, bool crc, uint8_t extra_flags)
{
	struct iw_mpa_frame f = {.flags = IW_MPA_FLAG_ENHANCED | extra_flags |
					  (crc ? IW_MPA_FLAG_CRC : 0),
				 .rev = IW_MPA_REV,
				 .ird = 8,
				 .ord = 8};
	uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD];
	int n = rr__iw_mpa_encode(&f, buf, sizeof(buf));

	assert_true(n > 0);
	raw_send(fd, buf, (size_t)n);
}

static struct rr_qp *new_qp(struct env *e)
{
	struct rr_qp_attr a = {.send_cq = e->cq,
			       .recv_cq = e->cq,
			       .evch = e->ch,
			       .sq_depth = 16,
			       .rq_depth = 16,
			       .max_send_sge = 1,
			       .max_recv_sge = 1,
			       .ird = 8,
			       .ord = 8};
	struct rr_qp *qp;

	assert_int_equal(rr_qp_create(e->pd, &a, &qp), 0);
	return qp;
}

static void expect_event(struct env *e, enum rr_cm_event_type t,
			 struct rr_cm_event *ev)
{
	assert_int_equal(rr_evch_get(e->ch, ev, WAIT_MS), 0);
	assert_string_equal(rr_cm_event_str(ev->type), rr_cm_event_str(t));
}

/* Raw client handshake accepted by a QP of ours, receives posted. */
static struct rr_qp *raw_established(struct env *e, int fd, bool crc)
{
	struct rr_cm_event ev;
	struct rr_qp *qp = new_qp(e);
	uint8_t rep[IW_MPA_HDR_LEN + IW_MPA_IRDORD_LEN];
	struct rr_sge sge = {(uintptr_t)e->buf, 1024, rr_mr_lkey(e->mr)};
	struct rr_recv_wr rw = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};

	assert_int_equal(rr_qp_post_recv(qp, &rw, NULL), 0);
	mpa_request(fd, crc, 0);
	expect_event(e, RR_CM_CONNECT_REQUEST, &ev);
	assert_int_equal(rr_conn_req_accept(ev.req, qp, NULL, 0), 0);
	expect_event(e, RR_CM_ESTABLISHED, &ev);
	assert_ptr_equal(ev.qp, qp);
	assert_int_equal(raw_recv(fd, rep, sizeof(rep)), sizeof(rep));
	assert_memory_equal(rep, "MPA ID Rep Frame", 16);
	assert_int_equal(rep[16] & IW_MPA_FLAG_CRC, crc ? IW_MPA_FLAG_CRC : 0);
	return qp;
}

/* An FPDU with a correct or deliberately wrong CRC. */
static void send_fpdu(int fd, const struct iw_hdr *h, const void *payload,
		      uint32_t plen, bool crc, bool corrupt)
{
	uint8_t b[256];
	size_t hl = rr__iw_hdr_encode(h, b);
	uint32_t pad = iw_fpdu_pad(h->mpa_len), c;

	memcpy(b + hl, payload, plen);
	memset(b + hl + plen, 0, pad);
	c = crc ? rr_crc32c(b, hl + plen + pad) : 0;
	rr__iw_crc_store(b + hl + plen + pad, corrupt ? c ^ 1 : c);
	raw_send(fd, b, hl + plen + pad + IW_CRC_LEN);
}

static struct iw_hdr send_hdr(uint32_t plen)
{
	return (struct iw_hdr){
		.mpa_len = (uint16_t)(IW_UNTAGGED_HDR_LEN - 2 + plen),
		.last = true,
		.opcode = IW_OP_SEND,
		.qn = IW_QN_SEND,
		.msn = 1};
}

/* Reads the Terminate the provider must send and checks what it names. */
static void expect_terminate(int fd, uint8_t layer, uint8_t etype,
			     uint8_t ecode)
{
	uint8_t b[IW_UNTAGGED_HDR_LEN];
	uint8_t p[128];
	struct iw_term t;
	struct iw_hdr h;
	uint32_t plen;

	assert_int_equal(raw_recv(fd, b, sizeof(b)), sizeof(b));
	assert_int_equal(rr__iw_hdr_decode(b, sizeof(b), &h),
			 IW_UNTAGGED_HDR_LEN);
	assert_int_equal(h.opcode, IW_OP_TERMINATE);
	assert_int_equal(h.qn, IW_QN_TERMINATE);
	plen = iw_hdr_payload_len(&h);
	assert_true(plen + iw_fpdu_pad(h.mpa_len) + IW_CRC_LEN <= sizeof(p));
	assert_int_equal(
		raw_recv(fd, p, plen + iw_fpdu_pad(h.mpa_len) + IW_CRC_LEN),
		plen + iw_fpdu_pad(h.mpa_len) + IW_CRC_LEN);
	assert_int_equal(rr__iw_term_decode(p, plen, &t), 0);
	assert_int_equal(t.layer, layer);
	assert_int_equal(t.etype, etype);
	assert_int_equal(t.ecode, ecode);
	assert_true(raw_closed(fd));
}

static void expect_qp_error(struct env *e, struct rr_qp *qp)
{
	struct rr_cm_event ev;
	struct rr_wc wc;

	expect_event(e, RR_CM_QP_ERROR, &ev);
	assert_ptr_equal(ev.qp, qp);
	assert_int_equal(rr_qp_state(qp), RR_QPS_ERROR);
	/* The posted receive is flushed, once. */
	assert_int_equal(rr_cq_wait(e->cq, WAIT_MS), 0);
	assert_int_equal(rr_cq_poll(e->cq, &wc, 1), 1);
	assert_int_equal(wc.status, RR_WC_WR_FLUSH_ERR);
	assert_int_equal(rr_cq_poll(e->cq, &wc, 1), 0);
	assert_int_equal(rr_qp_destroy(qp), 0);
}

/* A good connection made through the API survives each attack. */
static void good_connection_still_works(struct env *e)
{
	struct rr_cm_event ev;
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(e->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_qp *c = new_qp(e), *s = new_qp(e);
	struct rr_sge rs = {(uintptr_t)e->buf, 64, rr_mr_lkey(e->mr)};
	struct rr_sge ss = {(uintptr_t)e->buf + 64, 8, rr_mr_lkey(e->mr)};
	struct rr_recv_wr rw = {.wr_id = 7, .sg_list = &rs, .num_sge = 1};
	struct rr_send_wr sw = {.wr_id = 8,
				.opcode = RR_WR_SEND,
				.flags = RR_SEND_SIGNALED,
				.sg_list = &ss,
				.num_sge = 1};
	struct rr_wc wc[2];
	int got = 0;

	assert_int_equal(rr_qp_post_recv(s, &rw, NULL), 0);
	assert_int_equal(
		rr_qp_connect(c, (struct sockaddr *)&sin, sizeof(sin), NULL, 0),
		0);
	expect_event(e, RR_CM_CONNECT_REQUEST, &ev);
	assert_int_equal(rr_conn_req_accept(ev.req, s, NULL, 0), 0);
	expect_event(e, RR_CM_ESTABLISHED, &ev);
	expect_event(e, RR_CM_ESTABLISHED, &ev);
	assert_int_equal(rr_qp_post_send(c, &sw, NULL), 0);
	while (got < 2) {
		int n;

		assert_int_equal(rr_cq_wait(e->cq, WAIT_MS), 0);
		n = rr_cq_poll(e->cq, wc + got, 2 - got);
		assert_true(n >= 0);
		got += n;
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(wc[i].status, RR_WC_SUCCESS);
	assert_int_equal(rr_qp_destroy(c), 0);
	assert_int_equal(rr_qp_destroy(s), 0);
	while (rr_evch_get(e->ch, &ev, 0) == 0)
		; /* the disconnect events of the two QPs just destroyed */
}

static void bad_mpa_key_is_dropped_and_counted(void **state)
{
	struct env *e = *state;
	uint64_t before = counters(e).mpa_bad_frame;
	int fd = raw_connect(e);
	uint8_t junk[IW_MPA_HDR_LEN + 4] = "MPA ID Rex Frame\x10\x02\x00\x04";

	raw_send(fd, junk, sizeof(junk));
	assert_true(raw_closed(fd));
	close(fd);
	assert_int_equal(counters(e).mpa_bad_frame, before + 1);
	good_connection_still_works(e);
}

static void request_for_markers_gets_a_reject(void **state)
{
	struct env *e = *state;
	uint64_t before = counters(e).mpa_markers_refused;
	int fd = raw_connect(e);
	uint8_t rep[IW_MPA_HDR_LEN];

	mpa_request(fd, false, IW_MPA_FLAG_MARKERS);
	assert_int_equal(raw_recv(fd, rep, sizeof(rep)), sizeof(rep));
	assert_memory_equal(rep, "MPA ID Rep Frame", 16);
	assert_true(rep[16] & IW_MPA_FLAG_REJECT);
	assert_true(raw_closed(fd));
	close(fd);
	assert_int_equal(counters(e).mpa_markers_refused, before + 1);
	good_connection_still_works(e);
}

static void oversized_private_data_length_is_refused(void **state)
{
	struct env *e = *state;
	uint64_t before = counters(e).mpa_bad_frame;
	int fd = raw_connect(e);
	uint8_t hdr[IW_MPA_HDR_LEN] = "MPA ID Req Frame\x10\x02\xff\xff";

	raw_send(fd, hdr, sizeof(hdr));
	assert_true(raw_closed(fd));
	close(fd);
	assert_int_equal(counters(e).mpa_bad_frame, before + 1);
	good_connection_still_works(e);
}

static void connect_and_vanish_leaves_nothing_behind(void **state)
{
	struct env *e = *state;
	uint64_t before = counters(e).conn_failed;
	struct rr_cm_event ev;

	for (int i = 0; i < 20; i++)
		close(raw_connect(e));
	/* Each vanished handshake is counted once it is noticed. */
	for (int i = 0; i < 500 && counters(e).conn_failed < before + 20; i++)
		poll(NULL, 0, 10);
	assert_int_equal(counters(e).conn_failed, before + 20);
	assert_int_equal(rr_evch_get(e->ch, &ev, 0), -EAGAIN);
	good_connection_still_works(e);
}

static void bad_crc_is_terminated_at_the_llp_layer(void **state)
{
	struct env *e = *state;
	uint64_t before = counters(e).crc_errors;
	int fd = raw_connect(e);
	struct rr_qp *qp = raw_established(e, fd, true);
	struct iw_hdr h = send_hdr(8);

	send_fpdu(fd, &h, "12345678", 8, true, true);
	expect_terminate(fd, IW_TERM_LLP, 0, IW_TERM_LLP_CRC);
	close(fd);
	expect_qp_error(e, qp);
	assert_int_equal(counters(e).crc_errors, before + 1);
	good_connection_still_works(e);
}

static void good_crc_is_accepted(void **state)
{
	struct env *e = *state;
	int fd = raw_connect(e);
	struct rr_qp *qp = raw_established(e, fd, true);
	struct iw_hdr h = send_hdr(8);
	struct rr_wc wc;

	send_fpdu(fd, &h, "12345678", 8, true, false);
	assert_int_equal(rr_cq_wait(e->cq, WAIT_MS), 0);
	assert_int_equal(rr_cq_poll(e->cq, &wc, 1), 1);
	assert_int_equal(wc.status, RR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 8);
	assert_memory_equal(e->buf, "12345678", 8);
	close(fd);
	assert_int_equal(rr_qp_destroy(qp), 0);
	while (rr_evch_get(e->ch, &(struct rr_cm_event){0}, 0) == 0)
		;
}

/* A frame the header decoder or the queue checks refuse. */
static void attack(struct env *e, const struct iw_hdr *h, uint8_t layer,
		   uint8_t etype, uint8_t ecode, size_t counter_off)
{
	struct rr_fabric_counters c0 = counters(e), c1;
	int fd = raw_connect(e);
	struct rr_qp *qp = raw_established(e, fd, false);

	send_fpdu(fd, h, "abcd",
		  iw_hdr_payload_len(h) > 4 ? 4 : iw_hdr_payload_len(h), false,
		  false);
	expect_terminate(fd, layer, etype, ecode);
	close(fd);
	expect_qp_error(e, qp);
	c1 = counters(e);
	assert_int_equal(*(uint64_t *)((char *)&c1 + counter_off),
			 *(uint64_t *)((char *)&c0 + counter_off) + 1);
	good_connection_still_works(e);
}

static void unknown_opcode_is_terminated(void **state)
{
	struct iw_hdr h = send_hdr(4);
	struct env *e = *state;
	uint8_t b[IW_UNTAGGED_HDR_LEN + 8];
	struct rr_fabric_counters c0 = counters(e);
	int fd = raw_connect(e);
	struct rr_qp *qp = raw_established(e, fd, false);
	size_t hl = rr__iw_hdr_encode(&h, b);

	b[3] = (b[3] & 0xf0) | 0x9; /* RDMAP opcode 9 does not exist */
	memcpy(b + hl, "abcd", 4);
	memset(b + hl + 4, 0, 4 + iw_fpdu_pad(h.mpa_len));
	raw_send(fd, b, hl + 4 + iw_fpdu_pad(h.mpa_len) + 4);
	expect_terminate(fd, IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_OP,
			 IW_TERM_ECODE_UNEXPECTED_OP);
	close(fd);
	expect_qp_error(e, qp);
	assert_int_equal(counters(e).rdmap_bad_opcode, c0.rdmap_bad_opcode + 1);
	good_connection_still_works(e);
}

static void invalid_queue_number_is_terminated(void **state)
{
	struct iw_hdr h = send_hdr(4);

	h.qn = 7;
	attack(*state, &h, IW_TERM_DDP, IW_TERM_DDP_UNTAGGED,
	       IW_TERM_DDP_U_INVALID_QN,
	       offsetof(struct rr_fabric_counters, ddp_bad_header));
}

static void wrong_msn_is_terminated(void **state)
{
	struct iw_hdr h = send_hdr(4);

	h.msn = 5;
	attack(*state, &h, IW_TERM_DDP, IW_TERM_DDP_UNTAGGED,
	       IW_TERM_DDP_U_MSN_RANGE,
	       offsetof(struct rr_fabric_counters, bad_msn));
}

static void wrong_message_offset_is_terminated(void **state)
{
	struct iw_hdr h = send_hdr(4);

	h.mo = 100;
	attack(*state, &h, IW_TERM_DDP, IW_TERM_DDP_UNTAGGED,
	       IW_TERM_DDP_U_INVALID_MO,
	       offsetof(struct rr_fabric_counters, bad_mo));
}

static void write_to_a_garbage_stag_is_terminated(void **state)
{
	struct iw_hdr h = {.mpa_len = IW_TAGGED_HDR_LEN - 2 + 4,
			   .tagged = true,
			   .last = true,
			   .opcode = IW_OP_WRITE,
			   .stag = 0x12345678,
			   .to = 0x1000};

	attack(*state, &h, IW_TERM_DDP, IW_TERM_DDP_TAGGED,
	       IW_TERM_DDP_T_INVALID_STAG,
	       offsetof(struct rr_fabric_counters, bad_stag));
}

/*
 * A Write to a key that is live but gives no remote write, or belongs to
 * another protection domain, is answered as one to a garbage key: the
 * Terminate must not tell a peer which of our keys exist.
 */
static void write_to_a_live_but_foreign_key_looks_like_garbage(void **state)
{
	struct env *e = *state;
	struct rr_mr *local, *other;
	struct rr_pd *pd2;
	struct iw_hdr h = {.mpa_len = IW_TAGGED_HDR_LEN - 2 + 4,
			   .tagged = true,
			   .last = true,
			   .opcode = IW_OP_WRITE,
			   .to = (uintptr_t)e->buf};

	assert_int_equal(rr_mr_reg(e->pd, e->buf, sizeof(e->buf),
				   RR_ACCESS_LOCAL_WRITE, &local),
			 0);
	assert_int_equal(rr_pd_alloc(e->dev, &pd2), 0);
	assert_int_equal(
		rr_mr_reg(pd2, e->buf, sizeof(e->buf),
			  RR_ACCESS_LOCAL_WRITE | RR_ACCESS_REMOTE_WRITE,
			  &other),
		0);
	h.stag = rr_mr_lkey(local);
	attack(e, &h, IW_TERM_DDP, IW_TERM_DDP_TAGGED,
	       IW_TERM_DDP_T_INVALID_STAG,
	       offsetof(struct rr_fabric_counters, bad_stag));
	h.stag = rr_mr_rkey(other);
	attack(e, &h, IW_TERM_DDP, IW_TERM_DDP_TAGGED,
	       IW_TERM_DDP_T_INVALID_STAG,
	       offsetof(struct rr_fabric_counters, bad_stag));
	assert_int_equal(rr_mr_dereg(other), 0);
	assert_int_equal(rr_pd_free(pd2), 0);
	assert_int_equal(rr_mr_dereg(local), 0);
}

static void read_response_nobody_asked_for_is_terminated(void **state)
{
	struct env *e = *state;
	struct iw_hdr h = {.mpa_len = IW_TAGGED_HDR_LEN - 2 + 4,
			   .tagged = true,
			   .last = true,
			   .opcode = IW_OP_READ_RESP,
			   .stag = rr_mr_lkey(e->mr),
			   .to = (uintptr_t)e->buf};

	attack(e, &h, IW_TERM_RDMAP, IW_TERM_RDMAP_REMOTE_OP,
	       IW_TERM_ECODE_UNEXPECTED_OP,
	       offsetof(struct rr_fabric_counters, rdmap_bad_opcode));
}

static void send_without_a_receive_is_terminated(void **state)
{
	struct env *e = *state;
	struct rr_fabric_counters c0 = counters(e);
	int fd = raw_connect(e);
	struct rr_qp *qp = raw_established(e, fd, false);
	struct iw_hdr h = send_hdr(4);
	struct rr_wc wc;

	/* The one posted receive takes the first Send; the second has none. */
	send_fpdu(fd, &h, "abcd", 4, false, false);
	h.msn = 2;
	send_fpdu(fd, &h, "efgh", 4, false, false);
	expect_terminate(fd, IW_TERM_DDP, IW_TERM_DDP_UNTAGGED,
			 IW_TERM_DDP_U_NO_BUFFER);
	close(fd);
	assert_int_equal(rr_cq_wait(e->cq, WAIT_MS), 0);
	assert_int_equal(rr_cq_poll(e->cq, &wc, 1), 1);
	assert_int_equal(wc.status, RR_WC_SUCCESS);
	assert_int_equal(rr_evch_get(e->ch, &(struct rr_cm_event){0}, WAIT_MS),
			 0);
	assert_int_equal(rr_qp_destroy(qp), 0);
	assert_int_equal(counters(e).no_recv_posted, c0.no_recv_posted + 1);
	good_connection_still_works(e);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(bad_mpa_key_is_dropped_and_counted),
		T(request_for_markers_gets_a_reject),
		T(oversized_private_data_length_is_refused),
		T(connect_and_vanish_leaves_nothing_behind),
		T(good_crc_is_accepted),
		T(bad_crc_is_terminated_at_the_llp_layer),
		T(unknown_opcode_is_terminated),
		T(invalid_queue_number_is_terminated),
		T(wrong_msn_is_terminated),
		T(wrong_message_offset_is_terminated),
		T(write_to_a_garbage_stag_is_terminated),
		T(write_to_a_live_but_foreign_key_looks_like_garbage),
		T(read_response_nobody_asked_for_is_terminated),
		T(send_without_a_receive_is_terminated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
