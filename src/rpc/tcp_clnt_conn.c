/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TCP client: the connection's life. Connecting and reconnecting are one
 * path, stepped by the client's I/O thread without ever blocking on the
 * network (tcp_clnt.h has the states).
 *
 * Losing the connection drops what it had half done, both ways: the
 * output queue (a call whose record was partly written goes again whole)
 * and the record being reassembled (a reply cut off is nobody's). A call
 * still waiting for its reply keeps its slot and xid and is sent again
 * first on the next connection, unless the client is soft, so that a
 * server with a duplicate request cache answers it instead of running it
 * twice; calls not sent yet wait for that connection. The first retry is
 * immediate; later ones back off exponentially up to reconnect_max_ms, and
 * the first reply on a connection resets that. After a failed attempt the
 * next one tries the next address the name resolved to.
 *
 * Liveness: TCP notices a dead peer only when its own retransmissions run
 * out (or, with SO_KEEPALIVE, after hours by default), and a server that
 * is stalled rather than dead it never notices: the socket stays open.
 * So when nothing has arrived for keepalive_ms, the client sends a NULL
 * call (procedure 0 of the program last used), in a slot like any call;
 * if that gets no reply within keepalive_timeout_ms, the connection is
 * treated as lost. Linux gets the like from TCP keepalive timers derived
 * from the mount's timeo and retrans, and over RDMA (which has no
 * keepalive) by dropping the connection when a call's timer fires; the
 * default here, a minute idle, then a minute for the reply, is of that
 * order.
 *
 * Caller holds c->mu throughout, unless said otherwise.
 */
#include "rpc/tcp_clnt.h"

#include "base/fsm.h"

#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const tc_names[TC_NSTATES] = {
	[TC_UP] = "UP",		  [TC_LOST] = "LOST",
	[TC_BACKOFF] = "BACKOFF", [TC_CONNECTING] = "CONNECTING",
	[TC_DOWN] = "DOWN",	  [TC_IDLE] = "IDLE",
};

#define TO RR_FSM_TO
static const uint32_t tc_next[TC_NSTATES] = {
	[TC_IDLE] = TO(TC_CONNECTING) | TO(TC_UP) | TO(TC_DOWN),
	[TC_UP] = TO(TC_LOST) | TO(TC_DOWN),
	[TC_LOST] = TO(TC_BACKOFF) | TO(TC_DOWN),
	[TC_BACKOFF] = TO(TC_CONNECTING) | TO(TC_UP) | TO(TC_DOWN),
	[TC_CONNECTING] = TO(TC_UP) | TO(TC_BACKOFF) | TO(TC_DOWN),
	[TC_DOWN] = 0,
};

static const struct rr_fsm tc_fsm = {
	.name = "rpc.tcp_clnt_conn",
	.nstates = TC_NSTATES,
	.states = tc_names,
	.next = tc_next,
};

/* Every move of the connection. Caller holds c->mu. */
void rr__tc_move(struct rr_tcp_clnt *c, enum tc_state s, uint64_t now)
{
	if (!rr__fsm_move(&tc_fsm, c->gen, c->state, s))
		c->st.state_violations++;
	c->state = s;
	c->state_ms = now;
}

/* Somebody needs a connection: a call waits for a reply or to be sent. */
static bool needed(const struct rr_tcp_clnt *c)
{
	return c->nbusy || c->pend_head;
}

/* The source address, numeric; the caller's string is not kept. */
static int resolve_source(struct rr_tcp_clnt *c)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_PASSIVE},
			*res;
	int rc = -EINVAL;

	if (getaddrinfo(c->o.source, NULL, &hints, &res))
		return -EINVAL;
	if (res->ai_addrlen <= sizeof(c->src.ss)) {
		memcpy(&c->src.ss, res->ai_addr, res->ai_addrlen);
		c->src.len = res->ai_addrlen;
		rc = 0;
	}
	freeaddrinfo(res);
	c->o.source = NULL;
	return rc;
}

/* Up to max more addresses host resolves to; -EHOSTUNREACH if none. */
static int resolve_one(struct rr_tcp_clnt *c, const char *host, uint16_t port,
		       uint32_t max)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
	uint32_t had = c->naddrs;
	char ps[8];

	snprintf(ps, sizeof(ps), "%u", port);
	if (!host || getaddrinfo(host, ps, &hints, &res))
		return -EHOSTUNREACH;
	for (ai = res; ai && c->naddrs < had + max; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(c->addrs[0].ss))
			continue;
		memcpy(&c->addrs[c->naddrs].ss, ai->ai_addr, ai->ai_addrlen);
		c->addrs[c->naddrs++].len = ai->ai_addrlen;
	}
	freeaddrinfo(res);
	return c->naddrs > had ? 0 : -EHOSTUNREACH;
}

/*
 * Resolved once: a reconnect must not wait on the resolver. Each server
 * of a failover list gets an equal share of the addresses, so that all
 * of them are tried.
 */
int rr__tc_resolve(struct rr_tcp_clnt *c, const char *host, uint16_t port)
{
	uint32_t n = c->o.nfailover, share;
	int rc;

	if (n > RR_FAILOVER_MAX || (n && !c->o.failover))
		return -EINVAL;
	share = TC_MAX_ADDRS / (n + 1);
	rc = resolve_one(c, host, port, share);
	for (uint32_t i = 0; !rc && i < n; i++)
		rc = resolve_one(c, c->o.failover[i].host,
				 c->o.failover[i].port, share);
	c->o.failover = NULL; /* the caller's array is not kept */
	if (rc)
		return rc;
	return c->o.source ? resolve_source(c) : 0;
}

/*
 * A non-blocking socket to address i with its connect started: 0 (done
 * already) or -EINPROGRESS, *out set; another error, no socket.
 */
static int open_to(const struct rr_tcp_clnt *c, uint32_t i, int *out)
{
	const struct tc_addr *a = &c->addrs[i];
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return -errno;
	rc = rr__tcp_sock_setup(fd);
	if (!rc && c->src.len &&
	    bind(fd, (const struct sockaddr *)&c->src.ss, c->src.len))
		rc = -errno;
	if (!rc && connect(fd, (const struct sockaddr *)&a->ss, a->len))
		rc = -errno;
	if (rc && rc != -EINPROGRESS) {
		close(fd);
		return rc;
	}
	*out = fd;
	return rc;
}

static int sock_error(int fd)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

static void up(struct rr_tcp_clnt *c, uint64_t now)
{
	rr__tc_move(c, TC_UP, now);
	c->gen++;
	/* idle time counts from here */
	atomic_store_explicit(&c->ka.last_rx_ms, now, memory_order_relaxed);
}

/* ------------------------------------------------- the first connect */

static int wait_connected(int fd, int tmo_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int n;

	do
		n = poll(&p, 1, tmo_ms);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return -ETIMEDOUT;
	return n < 0 ? -errno : sock_error(fd);
}

/*
 * Waited for, each address in turn, and not retried: a client that never
 * had a connection reports why. No other thread runs yet.
 */
int rr__tc_connect_first(struct rr_tcp_clnt *c)
{
	int rc = -EHOSTUNREACH;

	for (uint32_t i = 0; i < c->naddrs; i++) {
		int fd = -1;

		c->st.connects++;
		rc = open_to(c, i, &fd);
		if (rc == -EINPROGRESS) {
			rc = wait_connected(fd, c->o.connect_timeout_ms);
			if (rc)
				close(fd);
		}
		if (!rc) {
			c->fd = fd;
			c->addr_idx = i;
			up(c, rr_mono_ms());
			return 0;
		}
	}
	return rc;
}

/* -------------------------------------------------- loss and backoff */

/*
 * The connection is gone (any thread). The I/O thread closes the socket;
 * here it is only shut down, which ends that thread's poll on it.
 */
void rr__tc_conn_lost(struct rr_tcp_clnt *c, struct rr_call_list *l)
{
	bool resend = !c->o.soft && !c->o.no_reconnect && !c->stopping;

	if (c->state != TC_UP)
		return;
	rr__tc_move(c, TC_LOST, rr_mono_ms());
	c->st.conn_lost++;
	shutdown(c->fd, SHUT_RDWR);
	rr__outq_free(&c->out);
	for (uint32_t i = 0; i < c->nslots; i++) {
		struct tcp_slot *s = &c->slots[i];
		struct rr_call *call = s->call;

		if (!call)
			continue;
		if (resend) {
			s->resend = true;
			continue;
		}
		rr__tc_slot_free(c, s);
		rr__call_list_end(l, call, -ECONNRESET);
	}
	if (rr__tc_ended(c))
		rr__tc_fail_all(c, -ECONNRESET, l);
	rr__tc_wake(c);
}

static void backoff(struct rr_tcp_clnt *c, uint64_t now)
{
	rr__tc_move(c, TC_BACKOFF, now);
	c->retry_ms = rr__backoff_next(&c->backoff, now, c->o.reconnect_max_ms);
}

/* I/O thread: the socket of a lost connection goes. */
static void close_lost(struct rr_tcp_clnt *c, uint64_t now)
{
	close(c->fd);
	c->fd = -1;
	rr__tc_rx_discard(c);
	if (c->o.no_reconnect || c->stopping)
		rr__tc_move(c, TC_DOWN, now);
	else
		backoff(c, now);
}

static void connect_failed(struct rr_tcp_clnt *c, uint64_t now, int why)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	rr_dbg("rpc/tcp: connect attempt %llu: %s",
	       (unsigned long long)c->st.connects, strerror(-why));
	c->addr_idx = (c->addr_idx + 1) % c->naddrs;
	backoff(c, now);
}

/* Calls that were waiting for a reply go again, before any new one. */
static void resend(struct rr_tcp_clnt *c, struct rr_call_list *l)
{
	for (uint32_t i = 0; i < c->nslots && c->state == TC_UP; i++) {
		struct tcp_slot *s = &c->slots[i];

		if (!s->call || !s->resend)
			continue;
		s->resend = false;
		c->st.retransmits++;
		rr__tc_send_slot(c, s, l); /* a failure marks it again */
	}
}

static void connected(struct rr_tcp_clnt *c, uint64_t now,
		      struct rr_call_list *l)
{
	up(c, now);
	rr_info_rl("rpc/tcp: reconnected (attempt %llu)",
		   (unsigned long long)c->st.connects);
	resend(c, l);
	rr__tc_pump(c, l);
}

static void attempt(struct rr_tcp_clnt *c, uint64_t now, struct rr_call_list *l)
{
	int fd = -1, rc;

	c->st.connects++;
	rc = open_to(c, c->addr_idx, &fd);
	if (rc && rc != -EINPROGRESS) {
		connect_failed(c, now, rc);
		return;
	}
	c->fd = fd;
	if (rc)
		rr__tc_move(c, TC_CONNECTING, now);
	else
		connected(c, now, l);
}

/* I/O thread: the socket of an attempt under way reported. */
void rr__tc_conn_ready(struct rr_tcp_clnt *c, uint64_t now,
		       struct rr_call_list *l)
{
	int rc = sock_error(c->fd);

	if (rc)
		connect_failed(c, now, rc);
	else
		connected(c, now, l);
}

/* ---------------------------------------------------------- keepalive */

/* When the next probe is due; none before a program is known. */
static uint64_t ka_due(const struct rr_tcp_clnt *c)
{
	if (c->o.keepalive_ms <= 0 || !rr__ka_ready(&c->ka.p))
		return TC_NO_DEADLINE;
	return atomic_load_explicit(&c->ka.last_rx_ms, memory_order_relaxed) +
	       (uint64_t)c->o.keepalive_ms;
}

/* The probe's end, without c->mu (rpc/keepalive.h says what it means). */
static void ka_done(struct rr_call *call, int rc, void *arg)
{
	struct rr_tcp_clnt *c = arg;
	struct rr_call_list l = {0};

	(void)call;
	pthread_mutex_lock(&c->mu);
	if (rc == -ETIMEDOUT)
		c->st.keepalive_timeouts++;
	if (rr__ka_end(&c->ka.p, rc, c->state == TC_UP, c->gen)) {
		rr_warn_rl("rpc/tcp: no reply to a keepalive probe in %d ms: "
			   "reconnecting",
			   c->o.keepalive_timeout_ms);
		rr__tc_conn_lost(c, &l);
	}
	pthread_mutex_unlock(&c->mu);
	rr__call_list_run(&l);
}

static void ka_tick(struct rr_tcp_clnt *c, uint64_t now, struct rr_call_list *l)
{
	uint64_t due = ka_due(c);

	if (due == TC_NO_DEADLINE || now < due || c->stopping)
		return;
	c->st.keepalive_probes++;
	rr__tc_start(c, rr__ka_probe(&c->ka.p, c->gen), ka_done, c, l);
}

void rr__tc_ka_note(struct rr_tcp_clnt *c, const struct rr_call *call)
{
	rr__ka_note(&c->ka.p, call);
}

/* ----------------------------------------------------------- stepping */

/* I/O thread: moves the machine on as far as time and events allow. */
void rr__tc_conn_step(struct rr_tcp_clnt *c, uint64_t now,
		      struct rr_call_list *l)
{
	if (c->state == TC_LOST && !c->rx_busy) /* else its reader wakes us */
		close_lost(c, now);
	if (c->state == TC_BACKOFF && !c->stopping && needed(c) &&
	    now >= c->retry_ms)
		attempt(c, now, l);
	if (c->state == TC_CONNECTING &&
	    now - c->state_ms >= (uint64_t)c->o.connect_timeout_ms)
		connect_failed(c, now, -ETIMEDOUT);
	if (c->state == TC_UP)
		ka_tick(c, now, l);
}

/* I/O thread: when rr__tc_conn_step has something to do next. */
uint64_t rr__tc_conn_timer(const struct rr_tcp_clnt *c)
{
	switch (c->state) {
	case TC_LOST:
		return c->rx_busy ? TC_NO_DEADLINE : 0;
	case TC_BACKOFF:
		return needed(c) ? c->retry_ms : TC_NO_DEADLINE;
	case TC_CONNECTING:
		return c->state_ms + (uint64_t)c->o.connect_timeout_ms;
	case TC_UP:
		return ka_due(c);
	case TC_DOWN:
	case TC_IDLE:
	case TC_NSTATES:
		break;
	}
	return TC_NO_DEADLINE;
}

int rr_tcp_clnt_disconnect(struct rr_tcp_clnt *c)
{
	struct rr_call_list l = {0};

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->mu);
	rr__tc_conn_lost(c, &l);
	pthread_mutex_unlock(&c->mu);
	rr__call_list_run(&l);
	return 0;
}
