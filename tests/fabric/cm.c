/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Connection management: private data, reject, unreachable. */
#include "suite.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ================================================================== cm */

static size_t pdata_len(struct h_test *t, const void *arg)
{
	size_t n = *(const size_t *)arg;

	return n == PDATA_MAX ? t->attr.max_private_data : n;
}

static void check_pdata(const struct rr_cm_event *ev, size_t n, uint64_t seed)
{
	H_EQ(ev->private_data_len, n);
	H_CHECK(h_verify(ev->private_data, n, seed, 0) == SIZE_MAX,
		"private data of %s corrupted", rr_cm_event_str(ev->type));
}

static void peer_accept_pdata(struct h_test *t, const void *arg)
{
	struct rr_cm_event ev;
	struct rr_conn_req *req;
	uint8_t pd[RR_MAX_PRIVATE_DATA + 1];
	struct sockaddr_storage want;
	socklen_t wlen;
	size_t n;

	h_open(t);
	h_listen(t);
	n = pdata_len(t, arg);
	req = h_get_request(t, &ev);
	check_pdata(&ev, n, 1);
	H_EQ(ev.peer.ss_family, AF_INET);
	h_addr(&want, &wlen, 0);
	H_EQ(((struct sockaddr_in *)&ev.peer)->sin_addr.s_addr,
	     ((struct sockaddr_in *)&want)->sin_addr.s_addr);
	t->qp = h_qp_new(t);
	h_fill(pd, sizeof(pd), 2, 0);
	/* Argument checks consume nothing: req stays usable. */
	H_RC(rr_conn_req_accept(req, t->qp, pd, t->attr.max_private_data + 1),
	     -EINVAL);
	H_OK(rr_conn_req_accept(req, t->qp, pd, n));
	h_expect_event(t, RR_CM_ESTABLISHED, &ev);
	H_CHECK(ev.qp == t->qp, "ESTABLISHED names another QP");
	h_wait(t, M_GO);
}

/* Both directions carry n private data bytes intact. */
void test_private_data(void **state)
{
	struct h_test *t = T(state);
	struct sockaddr_storage ss;
	socklen_t alen;
	struct rr_cm_event ev;
	uint8_t pd[RR_MAX_PRIVATE_DATA + 1];
	size_t n;

	h_spawn(t, peer_accept_pdata, t->params->arg);
	h_open(t);
	n = pdata_len(t, t->params->arg);
	if (strcmp(t->provider, "iwarp") == 0)
		H_EQ(t->attr.max_private_data, 252);
	H_CHECK(t->attr.max_private_data <= RR_MAX_PRIVATE_DATA,
		"max_private_data %u", t->attr.max_private_data);
	h_addr(&ss, &alen, h_recv_port(t));
	t->qp = h_qp_new(t);
	h_fill(pd, sizeof(pd), 1, 0);
	H_RC(rr_qp_connect(t->qp, (struct sockaddr *)&ss, alen, pd,
			   t->attr.max_private_data + 1),
	     -EINVAL);
	H_EQ(rr_qp_state(t->qp), RR_QPS_INIT);
	H_OK(rr_qp_connect(t->qp, (struct sockaddr *)&ss, alen, pd, n));
	h_expect_event(t, RR_CM_ESTABLISHED, &ev);
	H_CHECK(ev.qp == t->qp, "ESTABLISHED names another QP");
	H_EQ(rr_qp_state(t->qp), RR_QPS_RTS);
	check_pdata(&ev, n, 2);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_cleanup(t, true);
}

static void peer_reject(struct h_test *t, const void *arg)
{
	struct rr_cm_event ev;
	struct rr_conn_req *req;
	uint8_t pd[RR_MAX_PRIVATE_DATA + 1];
	size_t n = t->attr.max_private_data;
	struct rr_fabric_counters c;

	(void)arg;
	h_open(t);
	h_listen(t);
	n = t->attr.max_private_data;
	req = h_get_request(t, &ev);
	h_fill(pd, sizeof(pd), 3, 0);
	H_RC(rr_conn_req_reject(req, pd, n + 1), -EINVAL);
	H_OK(rr_conn_req_reject(req, pd, n));
	h_wait(t, M_GO);
	c = h_counters(t);
	H_EQ(c.conn_established, 0);
}

void test_reject_delivers_private_data(void **state)
{
	struct h_test *t = T(state);
	struct sockaddr_storage ss;
	socklen_t alen;
	struct rr_cm_event ev;

	h_spawn(t, peer_reject, NULL);
	h_open(t);
	h_addr(&ss, &alen, h_recv_port(t));
	t->qp = h_qp_new(t);
	H_OK(rr_qp_connect(t->qp, (struct sockaddr *)&ss, alen, "x", 1));
	h_expect_event(t, RR_CM_REJECTED, &ev);
	H_CHECK(ev.qp == t->qp, "REJECTED names another QP");
	check_pdata(&ev, t->attr.max_private_data, 3);
	H_CHECK(rr_qp_state(t->qp) != RR_QPS_RTS, "rejected QP is in RTS");
	H_RC(h_post_send(t->qp, 1, RR_SEND_SIGNALED, h_buf_new(t, 16, 0), 0, 1),
	     -ENOTCONN);
	h_signal(t, M_GO);
	h_peer_finish(t);
	h_expect_cq_empty(t, t->scq);
	h_cleanup(t, true);
}

void test_connect_without_listener_is_unreachable(void **state)
{
	struct h_test *t = T(state);
	struct sockaddr_storage ss;
	socklen_t alen = sizeof(ss);
	struct rr_cm_event ev;
	int s;

	/* A bound, non-listening socket holds a port nobody listens on. */
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	H_CHECK(s >= 0, "socket");
	h_addr(&ss, &alen, 0);
	H_CHECK(bind(s, (struct sockaddr *)&ss, alen) == 0, "bind");
	alen = sizeof(ss);
	H_CHECK(getsockname(s, (struct sockaddr *)&ss, &alen) == 0, "name");

	h_open(t);
	t->qp = h_qp_new(t);
	H_OK(rr_qp_connect(t->qp, (struct sockaddr *)&ss, alen, NULL, 0));
	h_expect_event(t, RR_CM_UNREACHABLE, &ev);
	close(s);
	H_CHECK(ev.qp == t->qp, "UNREACHABLE names another QP");
	H_CHECK(ev.status < 0, "UNREACHABLE status %d, expected -errno",
		ev.status);
	H_CHECK(rr_qp_state(t->qp) != RR_QPS_RTS, "unreachable QP in RTS");
	H_CHECK(h_counters(t).conn_failed >= 1, "conn_failed not counted");
	h_cleanup(t, true);
}
