/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC server over TCP with record marking (RFC 5531 section 11).
 *
 * One thread (rr_tcp_svc_run's) owns an epoll loop over the listening
 * socket and every connection: it accepts, reads, reassembles records
 * (tcp_record.c) and flushes output queues. A complete call goes through
 * the same dispatch as over RDMA (dispatch.c) either right there
 * (threads == 0, or a call of nowait_procs whose handler need not block)
 * or in a worker pool, and its reply leaves as one record,
 * sent without blocking: what the socket does not take is queued and the
 * loop sends it when the socket is writable (tcp_io.c).
 *
 * Lifetimes: a connection is reference counted. The loop holds one
 * reference while the connection is in epoll; each call in a worker holds
 * one. Only the loop closes a connection (marks it closed and removes it
 * from epoll); its descriptor is closed when the last reference goes, so
 * a worker that finishes late never writes to a descriptor number reused
 * by a newer connection. A worker that finds the socket broken shuts it
 * down, and the loop sees the hang-up and closes.
 *
 * Back-pressure: a connection whose output queue holds max_queued bytes
 * or that has too many calls in workers serves no further call until that
 * drains, even in the middle of what one read brought: the rest of that
 * input is held (at most one read's worth) and its socket is not read
 * meanwhile. A client that pipelines calls without reading replies thus
 * costs bounded memory and never stalls other connections; one that
 * takes none of its replies for stall_ms is dropped. The loop resumes a
 * held connection when its queue drains (EPOLLOUT) or, when a worker
 * finished one of its calls, on the worker's wake-up. Calls already
 * handed to workers obey the same bound: a worker that finds its call's
 * connection over max_queued parks the call on the connection, and the
 * loop gives it back to the pool when the queue drains; so a connection's
 * queue grows past max_queued by at most one reply per worker.
 *
 * A connection carries calls to its client too (tcp_svc_callback.c):
 * records that are REPLYs are matched to those, on the loop thread.
 *
 * Admission (rr_tcp_svc_opts): a cap per peer address, eviction of the
 * idlest connection when the table is full, deadlines checked once a
 * second (sweep), and a reserved descriptor for EMFILE.
 *
 * Locking: conn->mu covers the output queue, the epoll interest, jobs and
 * closed. s->q has its own lock, s->smu covers the counters. Neither is
 * held while taking the other. s->lmu covers the list of connections
 * against rr_rpc_svc_conns; ORDER: lmu before a conn->mu.
 */
#include "rpc/tcp_svc.h"

#include "base/log.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "rpc/admit.h"
#include "rpc/workq.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEF_MAX_RECORD	((1u << 20) + (64u << 10))
#define DEF_MAX_CONNS	256
#define DEF_MAX_BULK	(1u << 20)
#define STAGE_LEN	(64u << 10)
#define MAX_CONN_JOBS	16
#define JOB_SPARES	64 /* queue entries and small records kept */
#define REPLY_HDR_ROOM	64 /* accepted reply header with AUTH_NONE verf */
#define EPOLL_BATCH	64
#define MAX_WORKERS	256
#define DEF_PER_PEER	32
#define DEF_MAX_QUEUED	(256u << 10)
#define DEF_FIRST_MS	10000
#define DEF_IDLE_MS	360000
#define DEF_STALL_MS	30000
#define SWEEP_MS	1000 /* deadlines are checked this often */
#define EMFILE_PAUSE_MS 100  /* accepting pauses after running out of fds */
/*
 * The smallest bulk result a reply lends rather than copies (send_reply).
 * Lending costs the lender a max_bulk spare in its buffer's place, and a
 * spare the pool lacks is a fresh allocation: a mapping, its page faults
 * and, when freed, a TLB shootdown. That is worth sparing a large reply
 * its copy, not a small one: 4 KiB READ replies queued 16 at a time
 * (one read's worth of calls, answered inline) each took a fresh 1 MiB
 * buffer, and cut 4 KiB random reads at depth 16 to a fifth.
 */
#define LEND_MIN (64u << 10)

/* calls back to a client (tcp_svc_callback.c) */
#define DEF_CB_IN_FLIGHT  16
#define MAX_CB_IN_FLIGHT  256
#define DEF_CB_TIMEOUT_MS 30000

/* epoll tags of the two descriptors that are not connections */
static char tag_listen, tag_wake;

static void count(struct rr_tcp_svc *s, uint64_t *ctr)
{
	pthread_mutex_lock(&s->smu);
	(*ctr)++;
	pthread_mutex_unlock(&s->smu);
}

void rr__tcp_svc_count(struct rr_tcp_svc *s, uint64_t *ctr)
{
	count(s, ctr);
}

/* ------------------------------------------------------- connections */

static void conn_put(struct tcp_conn *c)
{
	if (!rr_ref_put(&c->ref))
		return;
	close(c->fd);
	rr__rm_rx_fini(&c->rx);
	rr__outq_free(&c->out);
	rr__tcp_cb_fini(c);
	pthread_mutex_destroy(&c->mu);
	free(c->held);
	free(c);
}

void rr__tcp_conn_put(struct tcp_conn *c)
{
	conn_put(c);
}

/* Whether c may have its next call served now. Caller holds c->mu. */
static bool conn_may_serve(const struct tcp_conn *c)
{
	return c->out.bytes < c->s->o.max_queued && c->jobs < MAX_CONN_JOBS;
}

/* What epoll should tell us about c. Caller holds c->mu. */
static uint32_t wanted_events(const struct tcp_conn *c)
{
	uint32_t ev = 0;

	if (conn_may_serve(c) && !c->holding)
		ev |= EPOLLIN;
	if (c->out.head)
		ev |= EPOLLOUT;
	return ev;
}

/* Caller holds c->mu. */
static void update_events(struct tcp_conn *c)
{
	uint32_t ev = wanted_events(c);
	struct epoll_event e = {.events = ev, .data.ptr = c};

	if (c->closed || ev == c->events)
		return;
	if (epoll_ctl(c->s->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = ev;
}

static void job_done(struct tcp_job *j);
static struct tcp_job *conn_unpark_list(struct tcp_conn *c, bool drained);

/* Loop thread only. */
static void conn_close(struct rr_tcp_svc *s, struct tcp_conn *c)
{
	struct tcp_job *j;

	pthread_mutex_lock(&c->mu);
	c->closed = true;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	shutdown(c->fd, SHUT_RDWR);
	/* never sent now; and lent buffers go back while the pool exists */
	rr__outq_free(&c->out);
	pthread_mutex_unlock(&c->mu);
	/* the loop's alone, done with; its buffer may be a spare */
	rr__rm_rx_fini(&c->rx);
	rr__tcp_cb_conn_gone(c);
	/* Parked calls will never be answered: they end here. */
	for (j = conn_unpark_list(c, false); j;) {
		struct tcp_job *next = j->next;

		job_done(j);
		j = next;
	}
	pthread_mutex_lock(&s->lmu);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	pthread_mutex_unlock(&s->lmu);
	count(s, &s->st.conn_lost);
	if (s->o.on_conn)
		s->o.on_conn(s->o.on_conn_arg, (struct sockaddr *)&c->peer,
			     false, c->why ? c->why : "closed");
	conn_put(c);
}

/* A bulk buffer an output queue kept until sent (send_reply lent it). */
static void give_back_bulk(void *arg, void *buf)
{
	struct rr_tcp_svc *s = arg;

	rr__spares_put(&s->bulk_spares, buf);
}

static int conn_add(struct rr_tcp_svc *s, int fd,
		    const struct sockaddr_storage *peer)
{
	struct tcp_conn *c = rr_calloc(1, sizeof(*c));
	struct epoll_event e = {.events = EPOLLIN};
	int err;

	if (!c)
		return -ENOMEM;
	rr_ref_init(&c->ref);
	c->s = s;
	c->fd = fd;
	c->peer = *peer;
	if (getsockname(fd, (struct sockaddr *)&c->local,
			&(socklen_t){sizeof(c->local)}))
		c->local.ss_family = AF_UNSPEC;
	c->events = EPOLLIN;
	c->born_ms = rr_coarse_ms();
	c->base.ops = &rr__tcp_svc_conn_ops;
	c->base.peer = (const struct sockaddr *)&c->peer;
	c->out.give_back = give_back_bulk;
	c->out.arg = s;
	c->out.spare_max = OUTQ_SMALL; /* bulk goes out lent (tcp_io.h) */
	pthread_mutex_init(&c->mu, NULL);
	rr__rm_rx_init(&c->rx, s->o.max_record);
	c->rx.big = &s->rec_spares;
	c->rx.small = &s->rec_small;
	e.data.ptr = c;
	err = rr__tcp_cb_init(c);
	if (!err && epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &e))
		err = -errno;
	if (err) {
		rr__tcp_cb_fini(c);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return err;
	}
	pthread_mutex_lock(&s->lmu);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	pthread_mutex_unlock(&s->lmu);
	if (s->o.on_conn)
		s->o.on_conn(s->o.on_conn_arg, (struct sockaddr *)&c->peer,
			     true, NULL);
	return 0;
}

/* ---------------------------------------------------------- admission */

static uint32_t peer_conns(const struct rr_tcp_svc *s,
			   const struct sockaddr_storage *peer)
{
	uint32_t n = 0;

	for (const struct tcp_conn *c = s->conns; c; c = c->next)
		n += rr__admit_same_host(&c->peer, peer);
	return n;
}

/* What admission knows of c. Busy: calls in workers, output, held input. */
static struct rr__admit_conn admit_view(struct tcp_conn *c)
{
	struct rr__admit_conn a = {.born_ms = c->born_ms,
				   .last_call_ms = c->last_call_ms};

	pthread_mutex_lock(&c->mu);
	a.busy = c->jobs || c->out.head || c->holding;
	pthread_mutex_unlock(&c->mu);
	return a;
}

/*
 * The connection a newcomer may take the slot of (rpc/admit.h), among
 * all or (peer) that peer's own, or NULL.
 */
static struct tcp_conn *
idlest(struct rr_tcp_svc *s, const struct sockaddr_storage *peer, uint64_t now)
{
	struct tcp_conn *best = NULL;
	uint64_t best_rank = 0;

	for (struct tcp_conn *c = s->conns; c; c = c->next) {
		struct rr__admit_conn a;
		uint64_t rank;

		if (peer && !rr__admit_same_host(&c->peer, peer))
			continue;
		a = admit_view(c);
		rank = rr__admit_evict_rank(&a, now, 0);

		if (rank > best_rank) {
			best = c;
			best_rank = rank;
		}
	}
	return best;
}

/* Whether a connection from peer may join; may evict one for room. */
static bool admit(struct rr_tcp_svc *s, const struct sockaddr_storage *peer)
{
	const struct sockaddr_storage *within = NULL;
	struct tcp_conn *victim;

	if (peer_conns(s, peer) >= s->o.max_per_peer)
		within = peer; /* its share is full: one of its own goes */
	else if (s->nconns < s->o.max_conns)
		return true;
	victim = idlest(s, within, rr_coarse_ms());
	if (!victim)
		return false;
	count(s, &s->st.conn_evicted);
	victim->why = "evicted to make room";
	conn_close(s, victim);
	return true;
}

static void listen_interest(struct rr_tcp_svc *s, uint32_t ev)
{
	struct epoll_event e = {.events = ev, .data.ptr = &tag_listen};

	epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &e);
}

/*
 * accept failed for want of descriptors or memory. Retrying at once would
 * spin: the listener stays readable. With EMFILE/ENFILE the reserved
 * descriptor takes the pending connection and closes it (the peer sees a
 * close, not a hang); then accepting pauses for EMFILE_PAUSE_MS.
 */
static void accept_starved(struct rr_tcp_svc *s, int err)
{
	count(s, &s->st.accept_errors);
	rr_warn_rl("tcp svc: accept: %s: refusing connections for %d ms",
		   strerror(err), EMFILE_PAUSE_MS);
	if ((err == EMFILE || err == ENFILE) && s->spare_fd >= 0) {
		int fd;

		close(s->spare_fd);
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			close(fd);
		s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	listen_interest(s, 0);
	s->listen_paused_until = rr_coarse_ms() + EMFILE_PAUSE_MS;
}

/* The administrator's send buffer, if set: 0 or -errno. */
static int sndbuf_set(const struct rr_tcp_svc *s, int fd)
{
	int v = (int)s->o.sndbuf;

	if (!v)
		return 0;
	return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) ? -errno
								    : 0;
}

static void accept_all(struct rr_tcp_svc *s)
{
	for (;;) {
		struct sockaddr_storage peer = {0};
		socklen_t plen = sizeof(peer);
		int fd = accept4(s->lfd, (struct sockaddr *)&peer, &plen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				accept_starved(s, errno);
			return;
		}
		if (!admit(s, &peer)) {
			count(s, &s->st.conn_refused);
			close(fd);
		} else if (rr__tcp_sock_setup(fd) || sndbuf_set(s, fd) ||
			   conn_add(s, fd, &peer)) {
			close(fd);
		}
	}
}

/* ------------------------------------------------------------ calls */

static int ctx_init(struct tcp_ctx *x, const struct rr_tcp_svc_opts *o)
{
	x->res_cap = o->max_record;
	x->bulk_cap = o->max_bulk;
	x->enc_cap = x->res_cap + REPLY_HDR_ROOM;
	x->res = rr_malloc(x->res_cap);
	x->bulk = rr_malloc(x->bulk_cap);
	x->enc = rr_malloc(x->enc_cap);
	return x->res && x->bulk && x->enc ? 0 : -ENOMEM;
}

static void ctx_fini(struct tcp_ctx *x)
{
	free(x->res);
	free(x->bulk);
	free(x->enc);
	memset(x, 0, sizeof(*x));
}

/* Bytes queued count as sent: a connection that closes first drops them. */
static void count_out(struct tcp_conn *c, const struct iovec *iov, int n)
{
	uint64_t len = 0;

	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	rr__conn_ctr_add(&c->ctr.bytes_out, len);
}

void rr__tcp_conn_out_lent(struct tcp_conn *c, const struct iovec *iov, int n,
			   const struct rr__outq_loan *loan)
{
	int rc;

	if (c->closed)
		return;
	count_out(c, iov, n);
	if (c->corked) {
		/* the loop's flush sends it, and sets the epoll interest */
		rc = rr__outq_put_lent(&c->out, iov, n, loan);
	} else {
		rc = rr__outq_send_lent(c->fd, &c->out, iov, n, loan);
		update_events(c);
	}
	if (rc)
		shutdown(c->fd, SHUT_RDWR); /* the loop closes it */
}

void rr__tcp_conn_out(struct tcp_conn *c, const struct iovec *iov, int n)
{
	rr__tcp_conn_out_lent(c, iov, n, NULL);
}

/* What a lent bulk buffer leaves its owner: a spare in its place. */
struct bulk_swap {
	struct rr_tcp_svc *s;
	struct tcp_ctx *x;
};

static bool swap_bulk(void *arg)
{
	struct bulk_swap *w = arg;
	uint8_t *spare = rr__spares_get(&w->s->bulk_spares);

	if (!spare)
		return false;
	w->x->bulk = spare;
	return true;
}

/*
 * The reply header, results and (inline) the bulk result, as one record.
 * The bulk result may stay in x's bulk buffer until the socket takes it,
 * x taking a spare instead: a large READ reply is then never copied.
 */
static void send_reply(struct tcp_ctx *x, struct tcp_conn *c,
		       const struct rr_svc_req *r, struct rr_reply_hdr *rh)
{
	static const uint8_t zero[4];
	uint8_t rm[RR_RM_HDR_LEN];
	bool ok = rh->stat == RR_MSG_ACCEPTED && rh->accept == RR_SUCCESS;
	size_t blen = ok ? r->res_bulk_len : 0;
	struct iovec iov[4];
	struct bulk_swap w = {c->s, x};
	struct rr__outq_loan loan = {2, x->bulk, swap_bulk, &w};
	const uint8_t *b = r->res_bulk;
	bool lend = blen >= LEND_MIN && b >= x->bulk &&
		    b + blen <= x->bulk + x->bulk_cap;
	int n = rr__reply_encode(r, rh, false, x->enc, x->enc_cap);

	if (n < 0) {
		/* Only a handler that broke its contract gets here. */
		rh->accept = RR_SYSTEM_ERR;
		blen = 0;
		n = rr__reply_encode(r, rh, false, x->enc, x->enc_cap);
		if (n < 0)
			return;
	}
	rr__rm_hdr(rm, (uint32_t)(n + blen + rr_xdr_pad(blen)), true);
	iov[0] = (struct iovec){rm, sizeof(rm)};
	iov[1] = (struct iovec){x->enc, (size_t)n};
	iov[2] = (struct iovec){(void *)r->res_bulk, blen};
	iov[3] = (struct iovec){(void *)zero, rr_xdr_pad(blen)};
	pthread_mutex_lock(&c->mu);
	if (!c->out.bytes) /* the stall deadline counts from here */
		c->out_since_ms = rr_coarse_ms();
	rr__tcp_conn_out_lent(c, iov, 4, lend ? &loan : NULL);
	pthread_mutex_unlock(&c->mu);
	rr__conn_ctr_add(&c->ctr.replies, 1);
}

/*
 * A procedure that must not run twice (rr_svc_prog.drc_procs): a client
 * that reconnected and sent it again gets the first run's reply. false:
 * drop this copy (the first still runs, past the cache's wait).
 */
static bool run_cached(struct rr_tcp_svc *s, struct tcp_conn *c,
		       struct rr_svc_req *r, struct rr_reply_hdr *rh)
{
	struct rr_drc_key k;
	enum rr_drc_verdict v;

	rr__drc_key_of(&k, (const struct sockaddr *)&c->peer, &r->call, r->args,
		       r->args_len, NULL, 0);
	v = rr__drc_lookup(&s->drc, &k, rh, r->res, &r->res_len);
	if (v == RR_DRC_BUSY)
		return false;
	if (v == RR_DRC_NEW) {
		rr__dispatch(&s->progs, r, rh);
		rr__drc_done(&s->drc, &k, rh, r->res, r->res_len,
			     r->res_bulk_len == 0);
	}
	return true;
}

/* Points r's results at the buffers of the thread about to run it. */
static void req_bufs(const struct rr_tcp_svc *s, const struct tcp_ctx *x,
		     struct rr_svc_req *r)
{
	r->res = x->res;
	r->res_cap = x->res_cap;
	r->bulk_buf = x->bulk;
	r->bulk_cap = x->bulk_cap;
	r->max_bulk = s->o.max_bulk;
}

/*
 * A worker's record goes back to the spares once the handler is done with
 * it, before the reply leaves: the reply wakes the client, whose next call
 * the loop then reads into a spare, which would otherwise often still be
 * this one (on two cores the woken client tends to preempt the worker
 * first): a fresh allocation and copies per large call. Only when the
 * bulk result, the one part of a reply a handler may point anywhere, is
 * in the worker's own buffer (or absent).
 */
static void release_record(const struct tcp_ctx *x, struct tcp_conn *c,
			   struct tcp_job *j, const struct rr_svc_req *r)
{
	const uint8_t *b = r->res_bulk;

	if (!j ||
	    (b && (b < x->bulk || b + r->res_bulk_len > x->bulk + x->bulk_cap)))
		return;
	rr__rm_rx_give_back(&c->rx, j->rec, j->cap);
	j->rec = NULL;
}

static void serve(struct rr_tcp_svc *s, struct tcp_ctx *x, struct tcp_conn *c,
		  const uint8_t *rec, size_t len, struct tcp_job *j)
{
	struct rr_svc_req r;
	struct rr_reply_hdr rh;

	memset(&r, 0, sizeof(r));
	r.peer = (const struct sockaddr *)&c->peer;
	r.local = (const struct sockaddr *)&c->local;
	r.conn = &c->base;
	if (!rec || rr__svc_req_parse(&r, rec, len)) {
		/* Not a call: there is no xid we could answer. */
		count(s, &s->st.bad_headers);
		rr__conn_ctr_add(&c->ctr.errors, 1);
		return;
	}
	rr__conn_ctr_add(&c->ctr.calls, 1);
	req_bufs(s, x, &r);
	if (rr__progtab_drc(&s->progs, &r.call)) {
		if (!run_cached(s, c, &r, &rh))
			return; /* a copy of a call still running, dropped */
	} else {
		rr__dispatch(&s->progs, &r, &rh);
	}
	count(s, &s->st.calls);
	if (rh.stat == RR_MSG_ACCEPTED && rh.accept == RR_GARBAGE_ARGS)
		count(s, &s->st.garbage_args);
	release_record(x, c, j, &r);
	send_reply(x, c, &r, &rh);
}

/* ----------------------------------------------------------- workers */

static struct tcp_job *job_pop(struct rr_tcp_svc *s)
{
	struct rr_work *w = rr__workq_pop(&s->q);

	return w ? rr_container_of(w, struct tcp_job, work) : NULL;
}

static void svc_wake(struct rr_tcp_svc *s)
{
	uint64_t one = 1;
	ssize_t n = write(s->evfd, &one, sizeof(one));

	(void)n; /* a full counter still wakes the loop */
}

void rr__tcp_svc_wake(struct rr_tcp_svc *s)
{
	svc_wake(s);
}

static void job_done(struct tcp_job *j)
{
	struct tcp_conn *c = j->conn;
	struct rr_tcp_svc *s = c->s;
	bool wake;

	pthread_mutex_lock(&c->mu);
	c->jobs--;
	/* Held input waits for room; the loop alone may feed it. */
	wake = c->holding && !c->resume && !c->closed && conn_may_serve(c);
	if (wake)
		c->resume = true;
	update_events(c);
	pthread_mutex_unlock(&c->mu);
	if (wake)
		svc_wake(c->s);
	rr__rm_rx_give_back(&c->rx, j->rec, j->cap);
	conn_put(c);
	rr__spares_put(&s->job_spares, j);
}

/*
 * Sets j aside on its connection when the connection's replies are not
 * being read: running it now would only queue more. The loop gives it
 * back (conn_unpark) when the queue drains, or ends it with the
 * connection. true: parked.
 */
static bool job_park(struct tcp_job *j)
{
	struct tcp_conn *c = j->conn;
	bool park;

	pthread_mutex_lock(&c->mu);
	park = !c->closed && c->out.bytes >= c->s->o.max_queued;
	if (park) {
		j->next = NULL;
		if (c->parked_tail)
			c->parked_tail->next = j;
		else
			c->parked = j;
		c->parked_tail = j;
	}
	pthread_mutex_unlock(&c->mu);
	return park;
}

static void *worker_main(void *arg)
{
	struct tcp_worker *w = arg;
	struct tcp_job *j;

	pthread_setname_np(pthread_self(), "rr-tcp-worker");

	while ((j = job_pop(w->s))) {
		if (job_park(j))
			continue;
		serve(w->s, &w->x, j->conn, j->rec, j->len, j);
		job_done(j);
	}
	return NULL;
}

static void job_enqueue(struct rr_tcp_svc *s, struct tcp_job *j)
{
	rr__workq_push(&s->q, &j->work);
}

/* c's parked calls, taken off it; with drained: only if its queue has. */
static struct tcp_job *conn_unpark_list(struct tcp_conn *c, bool drained)
{
	struct tcp_job *list = NULL;

	pthread_mutex_lock(&c->mu);
	if (!drained || c->out.bytes < c->s->o.max_queued) {
		list = c->parked;
		c->parked = c->parked_tail = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	return list;
}

/* Loop thread: c's queue drained, so its parked calls go back to the pool. */
static void conn_unpark(struct tcp_conn *c)
{
	struct tcp_job *j = conn_unpark_list(c, true);

	while (j) {
		struct tcp_job *next = j->next;

		job_enqueue(c->s, j);
		j = next;
	}
}

/* Loop thread: hands the complete record of c to the pool. */
static int job_push(struct rr_tcp_svc *s, struct tcp_conn *c)
{
	struct tcp_job *j = rr__spares_get(&s->job_spares);

	if (!j)
		return -ENOMEM;
	j->rec = rr__rm_rx_detach(&c->rx, &j->len, &j->cap);
	j->conn = c;
	j->next = NULL;
	rr_ref_get(&c->ref);
	pthread_mutex_lock(&c->mu);
	c->jobs++;
	update_events(c);
	pthread_mutex_unlock(&c->mu);
	job_enqueue(s, j);
	return 0;
}

static void workers_stop(struct rr_tcp_svc *s)
{
	rr__workq_stop(&s->q);
	for (uint32_t i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i].th, NULL);
	s->nworkers = 0;
}

/* After workers_stop: every worker's buffers, also of those never run. */
static void workers_free(struct rr_tcp_svc *s)
{
	for (uint32_t i = 0; s->workers && i < s->o.threads; i++)
		ctx_fini(&s->workers[i].x);
	free(s->workers);
	s->workers = NULL;
}

/*
 * All or none: a pool short of a worker would still take calls, and one
 * with none (its only worker out of memory) would answer no call ever.
 */
static int workers_start(struct rr_tcp_svc *s)
{
	s->workers = rr_calloc(s->o.threads, sizeof(*s->workers));
	if (!s->workers)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->o.threads; i++) {
		struct tcp_worker *w = &s->workers[i];
		int rc = ctx_init(&w->x, &s->o);

		w->s = s;
		if (!rc)
			rc = -pthread_create(&w->th, NULL, worker_main, w);
		if (rc) {
			workers_stop(s);
			return rc;
		}
		s->nworkers++;
	}
	return 0;
}

/* -------------------------------------------------------------- loop */

/*
 * With a pool, a call of its program's nowait_procs runs here first: when
 * its handler answers without blocking, the hand-off to a worker (a
 * wake-up, a copy of the record, the worker's locks) is saved. false: a
 * worker must run it (another call, a malformed one, or deferred).
 */
static bool try_inline(struct rr_tcp_svc *s, struct tcp_conn *c,
		       const uint8_t *rec, size_t len)
{
	struct rr_svc_req r;
	struct rr_reply_hdr rh;
	bool done;

	memset(&r, 0, sizeof(r));
	r.peer = (const struct sockaddr *)&c->peer;
	r.local = (const struct sockaddr *)&c->local;
	r.conn = &c->base;
	if (!rec || rr__svc_req_parse(&r, rec, len) ||
	    !rr__progtab_nowait(&s->progs, &r.call))
		return false;
	req_bufs(s, &s->ctx, &r);
	done = rr__dispatch_nowait(&s->progs, &r, &rh);
	pthread_mutex_lock(&s->smu);
	if (done) {
		s->st.inline_calls++;
		s->st.calls++;
	} else {
		s->st.deferred_calls++;
	}
	pthread_mutex_unlock(&s->smu);
	if (done) {
		/* a deferred call counts once, where serve() parses it again */
		rr__conn_ctr_add(&c->ctr.calls, 1);
		send_reply(&s->ctx, c, &r, &rh);
	}
	return done;
}

/* Whether rec is a REPLY: the client answering a callback. */
static bool is_reply(const uint8_t *rec, size_t len)
{
	uint32_t xid, type;

	return rec && !rr__rpc_peek(rec, len, &xid, &type) &&
	       type == RR_RPC_REPLY;
}

/*
 * A complete record of c: a reply to a callback is matched here, a call
 * is served here or in a worker.
 */
static int on_record(struct rr_tcp_svc *s, struct tcp_conn *c)
{
	size_t len;
	const uint8_t *rec = rr__rm_rx_record(&c->rx, &len);

	if (is_reply(rec, len)) {
		rr__tcp_cb_reply(c, rec, len);
		rr__rm_rx_next(&c->rx);
		return 0;
	}

	if (s->o.threads && !try_inline(s, c, rec, len))
		return job_push(s, c);
	if (!s->o.threads)
		serve(s, &s->ctx, c, rec, len, NULL);
	rr__rm_rx_next(&c->rx);
	return 0;
}

/*
 * Feeds p[0..n) to c's reassembler, serving each whole call, until all is
 * used or c may serve no more; *used says how far. false: c must close.
 */
static bool conn_feed(struct rr_tcp_svc *s, struct tcp_conn *c,
		      const uint8_t *p, size_t n, size_t *used)
{
	size_t off = 0;
	bool may = true;

	while (off < n && may) {
		size_t k;
		int rc = rr__rm_rx_feed(&c->rx, p + off, n - off, &k);

		off += k;
		if (rc < 0) {
			/* Over max_record: RPC has no answer for it. */
			count(s, &s->st.bad_headers);
			rr__conn_ctr_add(&c->ctr.errors, 1);
			return false;
		}
		if (rc != 1)
			continue;
		c->last_call_ms = rr_coarse_ms();
		if (on_record(s, c))
			return false;
		pthread_mutex_lock(&c->mu);
		may = conn_may_serve(c);
		pthread_mutex_unlock(&c->mu);
	}
	*used = off;
	return true;
}

/* A drained queue lets waiting callbacks out too. */
static bool conn_flush(struct tcp_conn *c)
{
	struct tcp_cb_done l = {0};
	size_t before;
	int rc;

	pthread_mutex_lock(&c->mu);
	c->corked = false;
	before = c->out.bytes;
	rc = rr__outq_flush(c->fd, &c->out);
	if (c->out.bytes < before)
		c->out_since_ms = rr_coarse_ms();
	if (!rc)
		rr__tcp_cb_pump(c, &l);
	update_events(c);
	pthread_mutex_unlock(&c->mu);
	rr__tcp_cb_done_run(c->s, &l);
	conn_unpark(c);
	return rc == 0;
}

/* Keeps p[0..n) (at most STAGE_LEN, maybe already in c->held) for later. */
static bool conn_hold(struct tcp_conn *c, const uint8_t *p, size_t n)
{
	if (!c->held && !(c->held = rr_malloc(STAGE_LEN)))
		return false;
	if (p < c->held || p >= c->held + STAGE_LEN) {
		memcpy(c->held, p, n);
		c->held_len = n;
		p = c->held;
	}
	c->held_off = (size_t)(p - c->held);
	return true;
}

/*
 * Serves what c may of p[0..n), a read's input or c's held input, and
 * holds back the rest until c drains. false: c must close.
 */
static bool conn_consume(struct rr_tcp_svc *s, struct tcp_conn *c,
			 const uint8_t *p, size_t n)
{
	for (;;) {
		size_t used = 0;
		bool ok, may;

		pthread_mutex_lock(&c->mu);
		c->corked = true;
		pthread_mutex_unlock(&c->mu);
		ok = conn_feed(s, c, p, n, &used);
		if (!conn_flush(c) || !ok)
			return false;
		p += used;
		n -= used;
		if (!n) {
			c->held_off = c->held_len = 0;
			return true;
		}
		pthread_mutex_lock(&c->mu);
		may = conn_may_serve(c);
		c->holding = !may;
		update_events(c);
		pthread_mutex_unlock(&c->mu);
		if (!may)
			return conn_hold(c, p, n);
	}
}

/* Goes on with c's held input once c may serve again. false: close c. */
static bool conn_resume(struct rr_tcp_svc *s, struct tcp_conn *c)
{
	bool go;

	pthread_mutex_lock(&c->mu);
	c->resume = false;
	go = c->holding && conn_may_serve(c);
	if (go)
		c->holding = false;
	pthread_mutex_unlock(&c->mu);
	if (!go)
		return true;
	return conn_consume(s, c, c->held + c->held_off,
			    c->held_len - c->held_off);
}

/*
 * False when c must close. One read may hold many pipelined calls: the
 * replies of those served here (and of workers finishing meanwhile) leave
 * together, one sendmsg instead of one each, as the RDMA server posts a
 * loop pass's replies together.
 */
static bool conn_read(struct rr_tcp_svc *s, struct tcp_conn *c)
{
	ssize_t n = recv(c->fd, s->stage, STAGE_LEN, MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ||
		       errno == EINTR;
	if (n == 0)
		return false;
	rr__conn_ctr_add(&c->ctr.bytes_in, (uint64_t)n);
	return conn_consume(s, c, s->stage, (size_t)n);
}

static void conn_event(struct rr_tcp_svc *s, struct tcp_conn *c, uint32_t ev)
{
	bool ok = true, reading;

	if (ev & EPOLLOUT)
		ok = conn_flush(c) && conn_resume(s, c);
	pthread_mutex_lock(&c->mu);
	reading = (c->events & EPOLLIN) != 0;
	pthread_mutex_unlock(&c->mu);
	if (ok && reading && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		ok = conn_read(s, c);
	else if (ok && (ev & (EPOLLHUP | EPOLLERR)))
		ok = false; /* not reading now, but the peer is gone */
	if (!ok && !c->why)
		c->why = "closed by the peer, or for bad input";
	if (!ok)
		conn_close(s, c);
}

/* Resumes the connections whose workers made room for held input. */
static void wake_drain(struct rr_tcp_svc *s)
{
	struct tcp_conn *c, *next;
	uint64_t v;

	while (read(s->evfd, &v, sizeof(v)) > 0)
		;
	for (c = s->conns; c; c = next) {
		bool resume;

		next = c->next;
		pthread_mutex_lock(&c->mu);
		resume = c->resume;
		pthread_mutex_unlock(&c->mu);
		if (resume && !conn_resume(s, c))
			conn_close(s, c);
	}
}

/* Whether c is past one of its deadlines (rr_tcp_svc_opts). */
static bool conn_overdue(const struct rr_tcp_svc *s, struct tcp_conn *c,
			 uint64_t now)
{
	struct rr__admit_conn a = admit_view(c);
	bool stalled;

	pthread_mutex_lock(&c->mu);
	stalled = c->out.bytes &&
		  rr__admit_past(s->o.stall_ms, c->out_since_ms, now);
	pthread_mutex_unlock(&c->mu);
	return stalled ||
	       rr__admit_overdue(&a, s->o.first_call_ms, s->o.idle_ms, now);
}

static void sweep(struct rr_tcp_svc *s, uint64_t now)
{
	struct tcp_conn *c, *next;

	for (c = s->conns; c; c = next) {
		next = c->next;
		if (!conn_overdue(s, c, now))
			continue;
		count(s, &s->st.conn_timeouts);
		rr_info_rl("tcp svc: a connection missed its deadline: closed");
		c->why = "past its deadline (idle, silent or not reading)";
		conn_close(s, c);
	}
}

/* The loop's clock work: accepting again after a pause, deadlines. */
static void timers(struct rr_tcp_svc *s)
{
	uint64_t now = rr_coarse_ms();

	if (s->listen_paused_until && now >= s->listen_paused_until) {
		s->listen_paused_until = 0;
		listen_interest(s, EPOLLIN);
	}
	if (now >= s->next_sweep_ms) {
		s->next_sweep_ms = now + SWEEP_MS;
		sweep(s, now);
	}
	rr__tcp_cb_expire(s, rr_mono_ms());
}

/* How long the loop may sleep: shorter while callbacks have deadlines. */
static int loop_timeout(struct rr_tcp_svc *s)
{
	int tmo = s->listen_paused_until ? EMFILE_PAUSE_MS : SWEEP_MS;

	if (rr__tcp_cb_ticking(s) && rr__tcp_cb_tick_ms() < tmo)
		tmo = rr__tcp_cb_tick_ms();
	return tmo;
}

int rr_tcp_svc_run(struct rr_tcp_svc *s)
{
	struct epoll_event ev[EPOLL_BATCH];

	rr__tcp_cb_loop_enter(s);
	while (!atomic_load(&s->stop)) {
		int n = epoll_wait(s->epfd, ev, EPOLL_BATCH, loop_timeout(s));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rr__tcp_cb_loop_enter(NULL);
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &tag_wake)
				wake_drain(s);
			else if (ev[i].data.ptr == &tag_listen)
				accept_all(s);
			else
				conn_event(s, ev[i].data.ptr, ev[i].events);
		}
		timers(s);
	}
	rr__tcp_cb_loop_enter(NULL);
	return 0;
}

void rr_tcp_svc_stop(struct rr_tcp_svc *s)
{
	atomic_store(&s->stop, true);
	svc_wake(s);
}

/* ---------------------------------------------------------- lifetime */

static void opts_default(struct rr_tcp_svc_opts *o,
			 const struct rr_tcp_svc_opts *in)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	if (!o->max_record)
		o->max_record = DEF_MAX_RECORD;
	if (o->max_record > RR_RM_MAX_FRAG)
		o->max_record = RR_RM_MAX_FRAG;
	if (!o->max_conns)
		o->max_conns = DEF_MAX_CONNS;
	if (!o->max_bulk)
		o->max_bulk = DEF_MAX_BULK;
	if (!o->max_per_peer)
		o->max_per_peer = DEF_PER_PEER;
	if (!o->max_queued)
		o->max_queued = DEF_MAX_QUEUED;
	if (!o->first_call_ms)
		o->first_call_ms = DEF_FIRST_MS;
	if (!o->idle_ms)
		o->idle_ms = DEF_IDLE_MS;
	if (!o->stall_ms)
		o->stall_ms = DEF_STALL_MS;
	if (!o->cb_max_in_flight)
		o->cb_max_in_flight = DEF_CB_IN_FLIGHT;
	if (o->cb_max_in_flight > MAX_CB_IN_FLIGHT)
		o->cb_max_in_flight = MAX_CB_IN_FLIGHT;
	if (!o->cb_timeout_ms)
		o->cb_timeout_ms = DEF_CB_TIMEOUT_MS;
}

static int listen_on(struct rr_tcp_svc *s, const struct sockaddr *addr,
		     socklen_t len)
{
	int one = 1;

	s->lfd = socket(addr->sa_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return -errno;
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->lfd, addr, len) || listen(s->lfd, SOMAXCONN))
		return -errno;
	return 0;
}

static int poll_setup(struct rr_tcp_svc *s)
{
	struct epoll_event l = {.events = EPOLLIN, .data.ptr = &tag_listen};
	struct epoll_event w = {.events = EPOLLIN, .data.ptr = &tag_wake};

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->evfd < 0)
		return -errno;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &l) ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &w))
		return -errno;
	return 0;
}

static struct rr_tcp_svc *svc_alloc(const struct rr_tcp_svc_opts *o)
{
	struct rr_tcp_svc *s = rr_calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	opts_default(&s->o, o);
	s->lfd = s->epfd = s->evfd = -1;
	/* Taken now: when descriptors run out, there is none to take. */
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	atomic_init(&s->stop, false);
	rr__workq_init(&s->q);
	atomic_init(&s->cb_busy, 0);
	gethostname(s->machine, sizeof(s->machine) - 1);
	pthread_mutex_init(&s->smu, NULL);
	pthread_mutex_init(&s->lmu, NULL);
	return s;
}

int rr_tcp_svc_create(const struct sockaddr *addr, socklen_t len,
		      const struct rr_tcp_svc_opts *o, struct rr_tcp_svc **out)
{
	struct rr_tcp_svc *s;
	int rc;

	if (!addr || !out ||
	    (o && (o->threads > MAX_WORKERS || o->sndbuf > INT_MAX)))
		return -EINVAL;
	s = svc_alloc(o);
	if (!s)
		return -ENOMEM;
	s->rpc.ops = &rr__tcp_svc_rpc_ops;
	rc = listen_on(s, addr, len);
	if (!rc)
		rc = rr__drc_init(&s->drc, 1024, 512);
	if (!rc)
		rc = poll_setup(s);
	if (!rc)
		rc = (s->stage = rr_malloc(STAGE_LEN)) ? 0 : -ENOMEM;
	if (!rc) /* for inline calls, with a pool too (nowait_procs) */
		rc = ctx_init(&s->ctx, &s->o);
	if (!rc) /* one spare per thread that may lend its own */
		rc = rr__spares_init(&s->bulk_spares, s->o.max_bulk,
				     s->o.threads + 1);
	if (!rc) /* a record per worker, and one being read */
		rc = rr__spares_init(&s->rec_spares, s->o.max_record,
				     s->o.threads + 1);
	if (!rc) /* as many as calls a busy pool has queued, give or take */
		rc = rr__spares_init(&s->rec_small, RR_RM_SMALL, JOB_SPARES);
	if (!rc)
		rc = rr__spares_init(&s->job_spares, sizeof(struct tcp_job),
				     JOB_SPARES);
	if (!rc && s->o.threads)
		rc = workers_start(s);
	if (rc) {
		rr_tcp_svc_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

int rr_tcp_svc_register(struct rr_tcp_svc *s, const struct rr_svc_prog *prog)
{
	if (!prog || (prog->nprocs && !prog->procs))
		return -EINVAL;
	return rr__progtab_add(&s->progs, prog);
}

int rr_tcp_svc_port(struct rr_tcp_svc *s, uint16_t *port)
{
	return rr__sock_port(s->lfd, port);
}

int rr_tcp_svc_stats(struct rr_tcp_svc *s, struct rr_xprt_stats *out)
{
	pthread_mutex_lock(&s->smu);
	*out = s->st;
	pthread_mutex_unlock(&s->smu);
	rr__drc_stats(&s->drc, out);
	return 0;
}

/* Input held back is a client not reading its replies (back-pressure). */
static const char *conn_state(struct tcp_conn *c)
{
	const char *st;

	pthread_mutex_lock(&c->mu);
	st = c->closed ? "closing" : c->holding ? "held" : "up";
	pthread_mutex_unlock(&c->mu);
	return st;
}

static void conn_info(struct tcp_conn *c, struct rr_svc_conn_info *info)
{
	memset(info, 0, sizeof(*info));
	info->peer = c->peer;
	info->netid = "tcp";
	info->state = conn_state(c);
	rr__conn_info_fill(info, &c->ctr, c->born_ms);
}

int rr__tcp_svc_conns(struct rr_rpc_svc *rpc, struct rr_svc_conn_info *out,
		      uint32_t cap, uint32_t *shown, uint32_t *hidden)
{
	struct rr_tcp_svc *s = rr__tcp_svc_of(rpc);
	uint32_t n = 0;

	pthread_mutex_lock(&s->lmu);
	for (struct tcp_conn *c = s->conns; c && n < cap; c = c->next)
		conn_info(c, &out[n++]);
	*shown = n;
	*hidden = s->nconns - n;
	pthread_mutex_unlock(&s->lmu);
	return 0;
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

int rr_tcp_svc_destroy(struct rr_tcp_svc *s)
{
	if (!s)
		return 0;
	/*
	 * ORDER: callbacks fail first, so no worker waits for a reply the
	 * stopped loop would never read; then workers, so no call still
	 * holds a connection.
	 */
	for (struct tcp_conn *c = s->conns; c; c = c->next)
		rr__tcp_cb_conn_gone(c);
	workers_stop(s);
	workers_free(s);
	while (s->conns)
		conn_close(s, s->conns);
	ctx_fini(&s->ctx);
	rr__spares_fini(&s->bulk_spares);
	rr__spares_fini(&s->rec_spares);
	rr__spares_fini(&s->rec_small);
	rr__spares_fini(&s->job_spares);
	rr__drc_fini(&s->drc);
	free(s->stage);
	close_fd(s->evfd);
	close_fd(s->epfd);
	close_fd(s->spare_fd);
	close_fd(s->lfd);
	rr__workq_fini(&s->q);
	pthread_mutex_destroy(&s->smu);
	pthread_mutex_destroy(&s->lmu);
	free(s);
	return 0;
}

struct rr_rpc_svc *rr_tcp_svc_rpc(struct rr_tcp_svc *s)
{
	return s ? &s->rpc : NULL;
}

struct rr_tcp_svc *rr__tcp_svc_of(struct rr_rpc_svc *s)
{
	return rr_container_of(s, struct rr_tcp_svc, rpc);
}
