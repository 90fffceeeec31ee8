/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Server transport: listening, connections, and the loop. Each connection
 * gets receive buffers for the credits it is granted (plus a margin, so a
 * client that overruns by a little is answered rather than cut off), send
 * contexts, and request slots; bulk buffers are shared.
 *
 * A connection that goes away is disconnected, drained (every work request
 * it posted completes or flushes exactly once, each receive too), then
 * destroyed; other connections are not disturbed (invariant 8).
 */
#include "rpcrdma/svc.h"
#include "base/alloc.h"

#include "base/clock.h"
#include "base/log.h"
#include "rpc/admit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define POLL_BATCH   32
#define LOOP_WAIT_MS 20

_Thread_local struct rr_svc *rr__svc_tl_loop, *rr__svc_tl_locked;

static void opts_defaults(struct rr_svc_opts *o, const struct rr_svc_opts *in)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	if (!o->credits)
		o->credits = 128;
	if (o->credits > 1024)
		o->credits = 1024;
	if (!o->inline_size)
		o->inline_size = RR_INLINE_OURS;
	if (!o->max_bulk)
		o->max_bulk = 1u << 20;
	if (!o->bulk_bufs)
		o->bulk_bufs = SVC_BULK_BUFS;
	if (o->bulk_bufs > SVC_BULK_BUFS_MAX)
		o->bulk_bufs = SVC_BULK_BUFS_MAX;
	if (!o->max_conns)
		o->max_conns = 32;
	if (!o->max_per_peer)
		o->max_per_peer = o->max_conns;
	if (!o->first_call_ms)
		o->first_call_ms = 10000;
	if (!o->idle_ms)
		o->idle_ms = 360000;
	if (!o->drc_entries)
		o->drc_entries = 1024;
	if (!o->penalty_ms)
		o->penalty_ms = 1000;
	if (!o->penalty_max_ms)
		o->penalty_max_ms = 60000;
	if (o->penalty_max_ms < o->penalty_ms)
		o->penalty_max_ms = o->penalty_ms;
}

/*
 * Who posts replies: the worker that ran the handler (no thread hop),
 * unless handlers change their thread's credentials on a device that
 * checks them when posting. Then the loop thread, which never changes
 * them, posts; a worker wakes it through kick_fd. Inline handlers would
 * change the loop's own credentials: that needs a pool.
 */
static int setup_posting(struct rr_svc *s)
{
	struct rr_device_attr da;
	int rc;

	if (!s->o.handlers_change_creds)
		return 0;
	rc = rr_device_query(s->dev, &da);
	if (rc || !da.post_checks_creds)
		return rc;
	if (!s->o.threads) {
		rr_err("svc: handlers that change credentials need a worker "
		       "pool on %s (threads >= 1)",
		       da.provider);
		return -EINVAL;
	}
	s->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->kick_fd < 0)
		return -errno;
	s->post_in_loop = true;
	return 0;
}

static uint32_t conn_sq_depth(const struct rr_svc *s)
{
	return s->o.credits * 4 + 2 * RR_RDMA_MAX_CHUNK_SEGS + 8;
}

/* Forward calls, a margin, and the replies to our callbacks. */
static uint32_t conn_rq_depth(const struct rr_svc *s)
{
	return s->o.credits + SVC_RECV_EXTRA + SVC_CB_MAX;
}

/*
 * The bulk pool resident from the start, as a device's registration pins
 * it: over iwarp and shm, which pin nothing, the first large calls after
 * the server started paid for its first touches (2199 page faults in the
 * first 64 MiB of 1 MiB READs, 136 in the next; 145 in the first with
 * this). A hint: a kernel without MADV_POPULATE_WRITE (before 5.14)
 * leaves them to first use.
 */
static void populate(const struct rr_bufpool *p)
{
	(void)madvise(p->mem, (size_t)p->count * p->size, MADV_POPULATE_WRITE);
}

int rr_svc_create(const struct sockaddr *addr, socklen_t addrlen,
		  const struct rr_svc_opts *opts, struct rr_svc **out)
{
	struct rr_svc *s = rr_calloc(1, sizeof(*s));
	uint32_t depth;
	int rc;

	if (!s)
		return -ENOMEM;
	s->rpc.ops = &rr__svc_rpc_ops;
	opts_defaults(&s->o, opts);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->posted_cv, NULL);
	s->kick_fd = -1;
	s->next_gen = 1;
	gethostname(s->machine, sizeof(s->machine) - 1);
	depth = s->o.max_conns * (conn_sq_depth(s) + conn_rq_depth(s));
	rc = rr__svc_scratch_alloc(&s->scratch, s->o.max_bulk);
	if (!rc)
		rc = rr__drc_init(&s->drc, s->o.drc_entries, SVC_DRC_MAX_RES);
	if (!rc && s->o.threads)
		rc = rr__svc_pool_start(s, s->o.threads);
	if (!rc)
		rc = rr_device_open(s->o.provider, s->o.dev_opts, &s->dev);
	if (!rc)
		rc = setup_posting(s);
	if (!rc)
		rc = rr_pd_alloc(s->dev, &s->pd);
	if (!rc)
		rc = rr_evch_create(s->dev, &s->ch);
	if (!rc)
		rc = rr_cq_create(s->dev, depth, &s->cq);
	if (!rc)
		rc = rr__bufpool_init(&s->bulk, s->pd, s->o.bulk_bufs,
				      s->o.max_bulk + SVC_RES_SCRATCH + 1024,
				      RR_ACCESS_LOCAL_WRITE);
	if (!rc)
		populate(&s->bulk);
	s->bulk_free = (uint32_t)((1ull << s->o.bulk_bufs) - 1);
	if (!rc)
		rc = rr_listener_create(s->dev, s->ch, addr, addrlen, 64,
					&s->l);
	if (rc) {
		rr_svc_destroy(s);
		return rc;
	}
	s->st.registered_bytes = (uint64_t)s->o.bulk_bufs * s->bulk.size;
	*out = s;
	return 0;
}

int rr_svc_register(struct rr_svc *s, const struct rr_svc_prog *prog)
{
	int rc;

	if (!s || !prog)
		return -EINVAL;
	pthread_mutex_lock(&s->mu);
	rc = rr__progtab_add(&s->progs, prog);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int rr_svc_port(struct rr_svc *s, uint16_t *port)
{
	struct sockaddr_storage ss;
	int rc = rr_listener_addr(s->l, &ss);

	if (rc)
		return rc;
	if (ss.ss_family == AF_INET)
		*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	else
		*port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* ------------------------------------------------------- connections */

static void conn_free(struct svc_conn *cn)
{
	if (cn->qp)
		rr_qp_destroy(cn->qp);
	rr__bufpool_fini(&cn->recvbufs);
	rr__bufpool_fini(&cn->sendbufs);
	rr__svc_cb_put_conn(cn);
	free(cn->reqs);
	free(cn->sctx);
	free(cn);
}

static int conn_alloc(struct rr_svc *s, struct svc_conn **out)
{
	struct svc_conn *cn = rr_calloc(1, sizeof(*cn));
	struct rr_qp_attr a = {.send_cq = s->cq,
			       .recv_cq = s->cq,
			       .evch = s->ch,
			       .max_send_sge = 1,
			       .max_recv_sge = 1,
			       .ird = 16,
			       .ord = 16};
	int rc;

	if (!cn)
		return -ENOMEM;
	cn->s = s;
	cn->gen = s->next_gen++;
	cn->sq_depth = a.sq_depth = conn_sq_depth(s);
	cn->nrecv = a.rq_depth = conn_rq_depth(s);
	cn->nsctx = s->o.credits + SVC_SIGNAL_EVERY;
	a.context = cn;
	cn->reqs = rr_calloc(cn->nrecv, sizeof(*cn->reqs));
	cn->sctx = rr_calloc(cn->nsctx, sizeof(*cn->sctx));
	rc = cn->reqs && cn->sctx ? 0 : -ENOMEM;
	if (!rc)
		rc = rr__svc_cb_new(cn);
	if (!rc)
		rc = rr__bufpool_init(&cn->recvbufs, s->pd, cn->nrecv,
				      s->o.inline_size, RR_ACCESS_LOCAL_WRITE);
	if (!rc)
		rc = rr__bufpool_init(&cn->sendbufs, s->pd, cn->nsctx,
				      s->o.inline_size, 0);
	if (!rc)
		rc = rr_qp_create(s->pd, &a, &cn->qp);
	if (rc) {
		conn_free(cn);
		return rc;
	}
	for (uint32_t i = 0; i < cn->nrecv; i++) {
		cn->reqs[i].conn = cn;
		cn->reqs[i].idx = i;
		cn->reqs[i].bulk = -1;
		cn->reqs[i].res_bulk = -1;
	}
	for (uint32_t i = 0; i < cn->nsctx; i++)
		cn->sctx[i].bulk = cn->sctx[i].mem = -1;
	*out = cn;
	return 0;
}

static struct rr__admit_conn admit_view(const struct svc_conn *cn)
{
	return (struct rr__admit_conn){.born_ms = cn->born_ms,
				       .last_call_ms = cn->last_call_ms,
				       .busy = cn->calls_in || cn->running ||
					       rr__svc_conn_dead(cn) ||
					       (cn->cb && cn->cb->tab.nbusy)};
}

static uint32_t peer_conns(const struct rr_svc *s,
			   const struct sockaddr_storage *peer)
{
	uint32_t n = 0;

	for (const struct svc_conn *cn = s->conns; cn; cn = cn->next)
		n += !rr__svc_conn_dead(cn) &&
		     rr__admit_same_host(&cn->peer, peer);
	return n;
}

/*
 * The table (peer NULL) or peer's share is full: the idlest connection
 * of it (rpc/admit.h) is dropped, so that the client's next attempt finds
 * its slot once it is reaped (the queues are sized for max_conns: the
 * newcomer cannot be taken now).
 */
static void make_room(struct rr_svc *s, const struct sockaddr_storage *peer,
		      uint64_t now)
{
	struct svc_conn *best = NULL;
	uint64_t best_rank = 0;

	for (struct svc_conn *cn = s->conns; cn; cn = cn->next) {
		struct rr__admit_conn a = admit_view(cn);

		if (peer && !rr__admit_same_host(&cn->peer, peer))
			continue;
		uint64_t rank =
			rr__admit_evict_rank(&a, now, RR_ADMIT_EVICT_IDLE_MS);

		if (rank > best_rank) {
			best = cn;
			best_rank = rank;
		}
	}
	if (best) {
		rr__svc_conn_kill(best, "evicted to make room");
		s->st.conn_evicted++;
	}
}

/* Whether a connection from peer may be taken now (maybe making room). */
static bool admit(struct rr_svc *s, const struct sockaddr_storage *peer)
{
	if (s->closing)
		return false;
	if (peer_conns(s, peer) >= s->o.max_per_peer)
		make_room(s, peer, rr_coarse_ms());
	else if (s->nconns < s->o.max_conns)
		return true;
	else
		make_room(s, NULL, rr_coarse_ms());
	s->st.conn_refused++;
	return false;
}

/* Idle connections past their deadlines are dropped (rr_svc_opts). */
static void find_overdue(struct rr_svc *s, uint64_t now)
{
	for (struct svc_conn *cn = s->conns; cn; cn = cn->next) {
		struct rr__admit_conn a = admit_view(cn);

		if (rr__admit_overdue(&a, s->o.first_call_ms, s->o.idle_ms,
				      now)) {
			rr__svc_conn_kill(cn, "idle past its deadline");
			s->st.conn_timeouts++;
		}
	}
}

static void conn_request(struct rr_svc *s, struct rr_cm_event *ev)
{
	struct svc_conn *cn;
	uint8_t pd[RR_CPARAMS_LEN];
	int rc;

	if (!admit(s, &ev->peer) || conn_alloc(s, &cn)) {
		rr_conn_req_reject(ev->req, NULL, 0);
		return;
	}
	cn->born_ms = rr_coarse_ms();
	cn->penalty_until = rr__admit_penalty_until(
		s->penalties, SVC_PENALTY_HOSTS, &ev->peer, cn->born_ms);
	rr__xprt_negotiate(ev->private_data, ev->private_data_len,
			   s->o.inline_size, &cn->inline_send, &cn->inline_recv,
			   &cn->peer_inv_ok);
	cn->peer = ev->peer;
	cn->cb->peer = ev->peer;
	for (uint32_t i = 0; i < cn->nrecv; i++)
		rr__svc_post_recv(cn, i);
	/* We never ask clients to invalidate for us: we expose nothing. */
	rr__xprt_cparams(pd, s->o.inline_size, false);
	rc = rr_conn_req_accept(ev->req, cn->qp, pd, sizeof(pd));
	if (rc) {
		conn_free(cn);
		return;
	}
	cn->next = s->conns;
	s->conns = cn;
	s->nconns++;
	rr__svc_share_update(s);
	if (s->o.on_conn)
		s->o.on_conn(s->o.on_conn_arg, (struct sockaddr *)&cn->peer,
			     true, NULL);
}

/* Work requests and receives of cn not yet completed or flushed. */
static uint64_t outstanding(const struct svc_conn *cn)
{
	return cn->sq_posted - cn->sq_retired + cn->reads_out + cn->recv_posted;
}

static void drain(struct svc_conn *cn)
{
	if (rr_qp_drain(cn->qp, rr_wrid(cn->gen, RR_WRK_DRAIN, 0, 0),
			rr_wrid(cn->gen, RR_WRK_DRAIN, 1, 0)))
		return;
	cn->drain_posted = true;
	cn->sq_posted++;
	cn->recv_posted++;
}

/* Both markers are back and every request before them accounted for. */
static bool drained(const struct svc_conn *cn)
{
	return cn->drain_sq && cn->drain_rq && !outstanding(cn);
}

/*
 * Frees a dead connection once drained: its parked calls are dropped, its
 * bulk buffers go back. Caller holds s->mu; no worker runs its calls.
 */
static void conn_close(struct rr_svc *s, struct svc_conn *cn)
{
	if (!drained(cn)) {
		s->st.teardown_unbalanced++;
		rr_err_rl("svc: connection torn down undrained: sends %llu "
			  "reads %u receives %u outstanding, markers %s/%s",
			  (unsigned long long)(cn->sq_posted - cn->sq_retired),
			  cn->reads_out, cn->recv_posted,
			  cn->drain_sq ? "back" : "out",
			  cn->drain_rq ? "back" : "out");
	}
	rr__svc_cb_gone(cn);
	/* Destroying the QP first: no Read or Write can touch them after. */
	rr_qp_destroy(cn->qp);
	cn->qp = NULL;
	for (uint32_t i = 0; i < cn->nrecv; i++) {
		rr__svc_bulk_put(cn, cn->reqs[i].bulk);
		rr__svc_bulk_put(cn, cn->reqs[i].res_bulk);
	}
	for (uint32_t i = 0; i < cn->nsctx; i++)
		if (cn->sctx[i].busy)
			rr__svc_sctx_release(cn, &cn->sctx[i]);
	for (struct svc_conn **cp = &s->conns; *cp; cp = &(*cp)->next)
		if (*cp == cn) {
			*cp = cn->next;
			break;
		}
	s->nconns--;
	s->st.conn_lost++;
	if (s->o.on_conn)
		s->o.on_conn(s->o.on_conn_arg, (struct sockaddr *)&cn->peer,
			     false, cn->why ? cn->why : "closed");
	conn_free(cn);
}

static void cm_events(struct rr_svc *s)
{
	struct rr_cm_event ev;

	while (rr_evch_get(s->ch, &ev, 0) == 0) {
		if (ev.type == RR_CM_CONNECT_REQUEST)
			conn_request(s, &ev);
		else if ((ev.type == RR_CM_DISCONNECTED ||
			  ev.type == RR_CM_QP_ERROR) &&
			 ev.qp) {
			struct svc_conn *cn = rr_qp_context(ev.qp);

			rr__svc_conn_kill(cn, ev.type == RR_CM_DISCONNECTED
						      ? "disconnected"
						      : "queue pair error");
		}
	}
}

/*
 * Whether cn's peer has held up bulk-pinning work past SVC_STALL_MS (a
 * Send reading a registered region pins it too: it cannot be unregistered).
 */
static bool stalled(const struct svc_conn *cn, uint64_t now)
{
	for (uint32_t i = 0; i < cn->nrecv; i++)
		if (cn->reqs[i].state == SREQ_PULLING &&
		    now - cn->reqs[i].pull_ms > SVC_STALL_MS)
			return true;
	for (uint32_t i = 0; i < cn->nsctx; i++)
		if (cn->sctx[i].busy &&
		    (cn->sctx[i].bulk >= 0 || cn->sctx[i].mem >= 0) &&
		    now - cn->sctx[i].bulk_ms > SVC_STALL_MS)
			return true;
	return false;
}

/*
 * cn's host held bulk buffers past the bound: every connection of it gets
 * none until its penalty ends (rr_svc_opts.penalty_ms), those it has now
 * too, so that reconnecting at once gains it nothing.
 */
static void penalise(struct rr_svc *s, const struct svc_conn *cn, uint64_t now)
{
	uint64_t until;

	if (s->o.penalty_ms < 0)
		return;
	if (!rr__admit_penalty_until(s->penalties, SVC_PENALTY_HOSTS, &cn->peer,
				     now))
		s->st.peers_penalised++;
	until = rr__admit_penalise(s->penalties, SVC_PENALTY_HOSTS, &cn->peer,
				   now, (uint32_t)s->o.penalty_ms,
				   (uint32_t)s->o.penalty_max_ms);
	for (struct svc_conn *c = s->conns; c; c = c->next)
		if (rr__admit_same_host(&c->peer, &cn->peer))
			c->penalty_until = until;
}

/* A few times per SVC_STALL_MS: stalled peers are treated as dead. */
static void find_stalled(struct rr_svc *s, uint64_t now)
{
	if (now - s->stall_check_ms < SVC_STALL_MS / 10)
		return;
	s->stall_check_ms = now;
	find_overdue(s, now);
	for (struct svc_conn *cn = s->conns; cn; cn = cn->next) {
		if (!rr__svc_conn_dead(cn) && stalled(cn, now)) {
			rr_warn_rl("svc: peer stalled for %d ms with bulk "
				   "buffers held: dropping it",
				   SVC_STALL_MS);
			rr__svc_conn_kill(cn, "stalled holding bulk buffers");
			s->st.bulk_stalls++;
			penalise(s, cn, now);
		}
	}
}

/*
 * Dead connections are disconnected (flushing everything they posted),
 * then closed once drained and no worker holds one of their calls; a
 * drain that takes longer than SVC_DRAIN_MS is closed anyway, counted.
 */
static void reap(struct rr_svc *s, bool force)
{
	struct svc_conn *cn = s->conns, *next;
	uint64_t now = rr_coarse_ms();

	find_stalled(s, now);
	for (; cn; cn = next) {
		next = cn->next;
		if (cn->state == SCONN_UP)
			continue;
		if (cn->state == SCONN_DEAD) {
			rr__svc_cb_gone(cn); /* its callbacks end now */
			rr__svc_conn_move(cn, SCONN_DRAINING);
			cn->dead_ms = now;
			rr_qp_disconnect(cn->qp);
		}
		if (!cn->drain_posted) /* -ENOMEM: flushes to poll first */
			drain(cn);
		if (cn->running && !force)
			continue;
		if (!drained(cn) && !force && now - cn->dead_ms < SVC_DRAIN_MS)
			continue;
		conn_close(s, cn);
	}
}

/*
 * A completion of a dead connection, or an error: nothing is acted upon,
 * but each queue's count goes down by the one request it accounts for.
 */
static void account_error(struct svc_conn *cn, unsigned kind, uint32_t slot,
			  uint32_t seq)
{
	rr__svc_conn_kill(cn, NULL);
	if (kind == RR_WRK_DRAIN && cn->drain_posted) {
		if (slot == 0 && !cn->drain_sq) {
			cn->drain_sq = true;
			rr__svc_sq_retire(cn, cn->sq_posted);
			cn->reads_out = 0;
		} else if (slot == 1 && !cn->drain_rq) {
			cn->drain_rq = true;
			cn->recv_posted--;
		}
		return;
	}
	if (kind == RR_WRK_RECV) {
		if (slot < cn->nrecv && cn->reqs[slot].recv_out &&
		    cn->reqs[slot].recv_seq == seq) {
			cn->reqs[slot].recv_out = false;
			cn->recv_posted--;
		}
		return;
	}
	if (kind == RR_WRK_READ) {
		cn->reads_out -= cn->reads_out > 0;
		return;
	}
	if (kind == RR_WRK_SEND && slot < cn->nsctx) {
		if (cn->sctx[slot].seq != seq || cn->sctx[slot].cqe_seen)
			return;
		cn->sctx[slot].cqe_seen = true;
	}
	if (cn->sq_retired < cn->sq_posted)
		rr__svc_sq_retire(cn, cn->sq_retired + 1);
}

static void dispatch(struct rr_svc *s, const struct rr_wc *wc)
{
	struct svc_conn *cn = rr_qp_context(wc->qp);
	uint64_t id = wc->wr_id;
	uint32_t slot = rr_wrid_slot(id), seq = rr_wrid_seq(id);
	unsigned kind = rr_wrid_kind(id);

	if (rr_wrid_gen(id) != cn->gen) {
		s->st.stale_cqes++;
		return;
	}
	if (wc->status != RR_WC_SUCCESS || rr__svc_conn_dead(cn)) {
		account_error(cn, kind, slot, seq);
		return;
	}
	if (kind == RR_WRK_RECV && slot < cn->nrecv &&
	    cn->reqs[slot].recv_out && cn->reqs[slot].recv_seq == seq) {
		cn->reqs[slot].recv_out = false;
		cn->recv_posted--;
		rr__svc_recv(cn, slot, wc->byte_len);
	} else if (kind == RR_WRK_SEND && slot < cn->nsctx &&
		   cn->sctx[slot].seq == seq && !cn->sctx[slot].cqe_seen) {
		cn->sctx[slot].cqe_seen = true;
		rr__svc_sq_retire(cn, cn->sctx[slot].sq_mark);
	} else if (kind == RR_WRK_READ && slot < cn->nrecv &&
		   cn->reqs[slot].seq == seq &&
		   cn->reqs[slot].state == SREQ_PULLING) {
		rr__svc_read_done(cn, &cn->reqs[slot]);
	} else if (kind >= RR_WRK_SEND && kind <= RR_WRK_READ) {
		s->st.stale_cqes++; /* a use already completed: duplicate */
	} else {
		s->st.unknown_cqes++;
	}
}

/*
 * post_in_loop: the loop also wakes for the workers' finished calls and
 * for connection events (the provider's own wait would not see the kick).
 */
static void wait_cq_or_kick(struct rr_svc *s)
{
	struct pollfd p[3] = {{.fd = rr_cq_fd(s->cq), .events = POLLIN},
			      {.fd = s->kick_fd, .events = POLLIN},
			      {.fd = rr_evch_fd(s->ch), .events = POLLIN}};
	uint64_t n;

	if (poll(p, 3, LOOP_WAIT_MS) <= 0)
		return;
	s->cm_ready = p[2].revents != 0;
	if ((p[1].revents & POLLIN) && read(s->kick_fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: another wake-up took it; nothing is lost */
	}
}

static void loop_once(struct rr_svc *s, bool force_reap)
{
	struct rr_wc wc[POLL_BATCH];
	int n;

	rr__svc_tl_loop = s;
	if (s->post_in_loop)
		wait_cq_or_kick(s);
	else
		rr_cq_wait(s->cq, LOOP_WAIT_MS);
	n = rr_cq_poll(s->cq, wc, POLL_BATCH);
	pthread_mutex_lock(&s->mu);
	rr__svc_tl_locked = s;
	rr__svc_share_update(s);
	s->batching = true;
	for (int i = 0; i < n; i++)
		dispatch(s, &wc[i]);
	rr__svc_reply_ready(s);
	rr__svc_resume(s);
	for (struct svc_conn *cn = s->conns; cn; cn = cn->next)
		rr__svc_flush(cn);
	s->batching = false;
	if (!s->post_in_loop || s->cm_ready || force_reap)
		cm_events(s);
	s->cm_ready = false;
	reap(s, force_reap);
	rr__svc_cb_tick(s);
	rr__svc_tl_locked = NULL;
	pthread_mutex_unlock(&s->mu);
	rr__svc_cb_run_done(s);
	rr__svc_tl_loop = NULL;
}

int rr_svc_run(struct rr_svc *s)
{
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed))
		loop_once(s, false);
	return 0;
}

void rr_svc_stop(struct rr_svc *s)
{
	atomic_store_explicit(&s->stop, 1, memory_order_relaxed);
}

/* post_in_loop: the workers' last replies need the loop to post them. */
static void drain_workers(struct rr_svc *s)
{
	rr__workq_stop(&s->pool.q);
	while (rr__svc_pool_busy(s))
		loop_once(s, false);
}

int rr_svc_shutdown(struct rr_svc *s)
{
	uint64_t deadline;

	if (!s)
		return -EINVAL;
	if (s->closing)
		return 0;
	s->closing = true;
	/*
	 * Callbacks end first: a handler waiting for one could otherwise
	 * hold up the workers' end, with no loop left to read its reply.
	 */
	pthread_mutex_lock(&s->mu);
	for (struct svc_conn *cn = s->conns; cn; cn = cn->next)
		rr__svc_cb_gone(cn);
	pthread_mutex_unlock(&s->mu);
	rr__svc_cb_run_done(s);
	/* The workers finish every call they were given, replies included. */
	if (s->post_in_loop)
		drain_workers(s);
	rr__svc_pool_stop(s);
	deadline = rr_mono_ms() + SVC_DRAIN_MS;
	pthread_mutex_lock(&s->mu);
	for (struct svc_conn *cn = s->conns; cn; cn = cn->next) {
		cn->running = 0;
		rr__svc_conn_kill(cn, NULL);
	}
	pthread_mutex_unlock(&s->mu);
	while (s->conns && rr_mono_ms() < deadline)
		loop_once(s, false);
	pthread_mutex_lock(&s->mu);
	reap(s, true);
	pthread_mutex_unlock(&s->mu);
	rr__svc_cb_run_done(s);
	return 0;
}

int rr_svc_destroy(struct rr_svc *s)
{
	if (!s)
		return -EINVAL;
	if (s->cq)
		rr_svc_shutdown(s);
	rr__svc_pool_stop(s);
	if (s->l)
		rr_listener_close(s->l);
	rr__bufpool_fini(&s->bulk);
	rr__svc_mem_fini(s);
	if (s->cq)
		rr_cq_destroy(s->cq);
	if (s->ch)
		rr_evch_destroy(s->ch);
	if (s->pd)
		rr_pd_free(s->pd);
	if (s->dev)
		rr_device_close(s->dev);
	rr__svc_scratch_free(&s->scratch);
	rr__drc_fini(&s->drc);
	if (s->kick_fd >= 0)
		close(s->kick_fd);
	pthread_cond_destroy(&s->posted_cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return 0;
}

int rr_svc_stats(struct rr_svc *s, struct rr_xprt_stats *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->st;
	pthread_mutex_unlock(&s->mu);
	rr__drc_stats(&s->drc, out);
	return 0;
}

static const char *const conn_state_names[SCONN_NSTATES] = {
	[SCONN_UP] = "up",
	[SCONN_DEAD] = "dead",
	[SCONN_DRAINING] = "draining",
};

/* Caller holds s->mu. */
static void conn_info(const struct svc_conn *cn, struct rr_svc_conn_info *info)
{
	memset(info, 0, sizeof(*info));
	info->peer = cn->peer;
	info->netid = "rdma";
	info->state = conn_state_names[cn->state];
	info->credits_granted = cn->s->o.credits;
	info->credits_used = cn->calls_in;
	rr__conn_info_fill(info, &cn->ctr, cn->born_ms);
}

int rr__svc_conns(struct rr_rpc_svc *rpc, struct rr_svc_conn_info *out,
		  uint32_t cap, uint32_t *shown, uint32_t *hidden)
{
	struct rr_svc *s = rr_container_of(rpc, struct rr_svc, rpc);
	uint32_t n = 0;

	/* A handler run inline holds s->mu: taking it again would hang. */
	if (rr__svc_tl_locked == s)
		return -EDEADLK;
	pthread_mutex_lock(&s->mu);
	for (const struct svc_conn *cn = s->conns; cn && n < cap; cn = cn->next)
		conn_info(cn, &out[n++]);
	*shown = n;
	*hidden = s->nconns - n;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

struct rr_device *rr_svc_device(struct rr_svc *s)
{
	return s->dev;
}
