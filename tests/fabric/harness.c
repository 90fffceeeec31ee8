/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#define H_INTERNAL
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

enum h_type {
	H_T_QP,
	H_T_LISTENER,
	H_T_MW,
	H_T_BUF,
	H_T_CQ,
	H_T_EVCH,
	H_T_PD,
	H_T_DEV,
	H_T_NTYPES,
};

#if defined(__SANITIZE_THREAD__)
#define H_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define H_TSAN 1
#endif
#endif
#ifndef H_TSAN
#define H_TSAN 0
#endif

static struct h_test *h_self;
bool h_peer_tsan_reported;
const char *h_loc_file;
int h_loc_line;

/* ---------------------------------------------------------------- checks */

const char *h_errname(int rc)
{
	if (rc == 0)
		return "ok";
	if (rc > 0)
		return "positive";
	return strerror(-rc);
}

static void h_raw_send(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t n = send(fd, c, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(h_self && h_self->is_peer ? 2 : 99);
		c += n;
		len -= (size_t)n;
	}
}

void h_fail(const char *file, int line, const char *fmt, ...)
{
	char msg[1024];
	int n;
	va_list ap;

	n = snprintf(msg, sizeof(msg), "%s:%d: ", file, line);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	if (h_loc_file && strcmp(file, h_loc_file) != 0) {
		n = (int)strlen(msg);
		snprintf(msg + n, sizeof(msg) - (size_t)n,
			 " [called from %s:%d]", h_loc_file, h_loc_line);
	}

	if (h_self && h_self->is_peer) {
		uint32_t hdr[2] = {H_MSG_FAIL, (uint32_t)strlen(msg) + 1};

		fprintf(stderr, "[peer %d] FAIL %s\n", (int)getpid(), msg);
		if (h_self->ctl >= 0) {
			h_raw_send(h_self->ctl, hdr, sizeof(hdr));
			h_raw_send(h_self->ctl, msg, hdr[1]);
		}
		_exit(1);
	}
	print_error("%s\n", msg);
	_fail(file, line);
	abort(); /* _fail longjmps */
}

/* ------------------------------------------------------------- tracking */

static void h_track(struct h_test *t, int type, void *obj)
{
	H_CHECK(t->ntracked < H_MAX_TRACKED, "too many objects");
	t->tracked[t->ntracked].type = type;
	t->tracked[t->ntracked].obj = obj;
	t->ntracked++;
}

static void h_untrack(struct h_test *t, void *obj)
{
	for (int i = 0; i < t->ntracked; i++) {
		if (t->tracked[i].obj == obj) {
			memmove(&t->tracked[i], &t->tracked[i + 1],
				sizeof(t->tracked[0]) *
					(size_t)(t->ntracked - i - 1));
			t->ntracked--;
			return;
		}
	}
}

static int h_destroy(int type, void *obj)
{
	struct h_buf *b;
	int rc;

	switch (type) {
	case H_T_QP:
		return rr_qp_destroy(obj);
	case H_T_LISTENER:
		return rr_listener_close(obj);
	case H_T_MW:
		return rr_mw_free(obj);
	case H_T_BUF:
		b = obj;
		rc = rr_mr_dereg(b->mr);
		free(b->p);
		free(b);
		return rc;
	case H_T_CQ:
		return rr_cq_destroy(obj);
	case H_T_EVCH:
		return rr_evch_destroy(obj);
	case H_T_PD:
		return rr_pd_free(obj);
	case H_T_DEV:
		return rr_device_close(obj);
	}
	return -EINVAL;
}

static const char *const h_type_name[] = {
	"rr_qp_destroy", "rr_listener_close", "rr_mw_free", "rr_mr_dereg",
	"rr_cq_destroy", "rr_evch_destroy",   "rr_pd_free", "rr_device_close",
};

void h_cleanup(struct h_test *t, bool strict)
{
	for (int type = 0; type < H_T_NTYPES; type++) {
		for (int i = t->ntracked - 1; i >= 0; i--) {
			int rc;

			if (t->tracked[i].type != type)
				continue;
			rc = h_destroy(type, t->tracked[i].obj);
			t->tracked[i].type = -1;
			if (strict && rc)
				h_fail(__FILE__, __LINE__,
				       "cleanup: %s returned %d (%s)",
				       h_type_name[type], rc, h_errname(rc));
		}
	}
	t->ntracked = 0;
	t->dev = NULL;
	t->pd = NULL;
	t->scq = t->rcq = NULL;
	t->evch = NULL;
	t->lst = NULL;
	t->qp = NULL;
}

/* ------------------------------------------------------------- lifecycle */

int h_setup(void **state)
{
	struct h_test *t = calloc(1, sizeof(*t));
	const char *prov = getenv("RR_PROVIDER");

	if (!t)
		return -1;
	t->params = *state;
	t->provider = prov && *prov ? prov : "iwarp";
	t->ctl = -1;
	t->qp_flags = t->params ? t->params->qp_flags : 0;
	h_self = t;
	h_loc_file = NULL;
	*state = t;
	return 0;
}

int h_teardown(void **state)
{
	struct h_test *t = *state;

	if (t->peer > 0)
		h_peer_kill(t);
	if (t->ctl >= 0)
		close(t->ctl);
	t->ctl = -1;
	h_cleanup(t, false);
	h_self = NULL;
	free(t);
	return 0;
}

/* fork(); the child dies with the test process and of its own faults. */
static pid_t h_fork(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL,
				   SIGFPE,  SIGSYS, SIGABRT};
	pid_t parent = getpid(), pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	H_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid)
		return pid;
	/* cmocka's handlers would resume the test runner here. */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(4);
	return 0;
}

/*
 * RR_PROVIDER_INNER names the provider the "faults" provider wraps (NULL:
 * the default), so that the suite shows faults composes with each one.
 */
static const struct rr_device_opts *h_opts(void)
{
	static struct rr_device_opts o;

	o.inner = getenv("RR_PROVIDER_INNER");
	return o.inner && *o.inner ? &o : NULL;
}

/* The probe child: rc, then the attributes, down fd. */
static void h_probe(const char *provider, int fd)
{
	struct rr_device *dev;
	struct rr_device_attr a = {0};
	int rc = rr_device_open(provider, h_opts(), &dev);

	if (!rc) {
		rc = rr_device_query(dev, &a);
		rr_device_close(dev);
	}
	if (write(fd, &rc, sizeof(rc)) != sizeof(rc) ||
	    write(fd, &a, sizeof(a)) != sizeof(a))
		_exit(1);
	_exit(0);
}

const struct rr_device_attr *h_device_attr(struct h_test *t)
{
	static struct rr_device_attr attr;
	static bool probed;
	int p[2], rc = -EIO, st = 0;
	pid_t pid;

	if (probed)
		return &attr;
	H_CHECK(t->ntracked == 0 && !t->is_peer,
		"probe the device before opening one, in the test process");
	H_CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
	pid = h_fork();
	if (pid == 0) {
		close(p[0]);
		h_probe(t->provider, p[1]);
	}
	close(p[1]);
	if (read(p[0], &rc, sizeof(rc)) != sizeof(rc) ||
	    read(p[0], &attr, sizeof(attr)) != sizeof(attr))
		rc = -EIO;
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* 66: TSan's mark of a report, maybe the test process's own */
	H_CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 ||
				  (H_TSAN && WEXITSTATUS(st) == 66)),
		"device probe exit status 0x%x", st);
	H_OK(rc);
	probed = true;
	return &attr;
}

void h_require(bool cond, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (cond)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	print_message("skipped: %s\n", msg);
	skip();
}

void h_spawn(struct h_test *t, h_peer_fn fn, const void *arg)
{
	int sv[2];
	pid_t pid;

	H_CHECK(t->ntracked == 0, "spawn the peer before opening a device");
	H_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0,
		"socketpair: %s", strerror(errno));
	pid = h_fork();
	if (pid == 0) {
		close(sv[0]);
		t->ctl = sv[1];
		t->is_peer = true;
		t->peer = 0;
		fn(t, arg);
		h_cleanup(t, true);
		h_signal(t, H_MSG_DONE);
		_exit(0);
	}
	close(sv[1]);
	t->ctl = sv[0];
	t->peer = pid;
}

static void h_reap(struct h_test *t, int *status)
{
	pid_t r;

	do
		r = waitpid(t->peer, status, 0);
	while (r < 0 && errno == EINTR);
	t->peer = 0;
}

void h_peer_finish(struct h_test *t)
{
	struct pollfd pfd = {.fd = t->ctl, .events = POLLIN};
	char c;
	int st = 0;

	h_wait(t, H_MSG_DONE);
	/* The peer exits right after DONE: wait for its end of the socket. */
	H_CHECK(poll(&pfd, 1, H_TIMEOUT_MS) == 1, "peer did not exit");
	H_CHECK(read(t->ctl, &c, 1) == 0, "peer sent data after DONE");
	close(t->ctl);
	t->ctl = -1;
	h_reap(t, &st);
	/*
	 * TSan turns _exit(0) into 66 once the process has reported (the
	 * count is inherited across fork, so it may be the test process's own
	 * earlier report). Not this test's failure: main() fails the run.
	 */
	if (H_TSAN && WIFEXITED(st) && WEXITSTATUS(st) == 66) {
		print_message("peer: ThreadSanitizer reports (see above)\n");
		h_peer_tsan_reported = true;
		return;
	}
	H_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "peer exit status 0x%x",
		st);
}

void h_peer_kill(struct h_test *t)
{
	int st;

	if (t->peer <= 0)
		return;
	kill(t->peer, SIGKILL);
	h_reap(t, &st);
}

/* ------------------------------------------------------ control messages */

static int64_t h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void h_peer_gone(struct h_test *t)
{
	int st = 0;

	if (t->is_peer)
		_exit(3); /* the test process is gone or gave up */
	if (t->peer > 0 && waitpid(t->peer, &st, WNOHANG) == t->peer) {
		t->peer = 0;
		if (WIFSIGNALED(st))
			h_fail(__FILE__, __LINE__, "peer killed by signal %d",
			       WTERMSIG(st));
		h_fail(__FILE__, __LINE__, "peer exited with status %d",
		       WEXITSTATUS(st));
	}
	h_fail(__FILE__, __LINE__, "peer closed the control socket");
}

/* 0, or -ETIMEDOUT when no byte came before the deadline. */
static int h_raw_recv(struct h_test *t, void *p, size_t len, int64_t deadline)
{
	char *c = p;

	while (len) {
		struct pollfd pfd = {.fd = t->ctl, .events = POLLIN};
		int64_t left = deadline - h_now_ms();
		ssize_t n;
		int rc;

		if (left < 0)
			left = 0;
		rc = poll(&pfd, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0) {
			H_CHECK(c == (char *)p, "control message truncated");
			return -ETIMEDOUT;
		}
		n = read(t->ctl, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			h_peer_gone(t);
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

void h_msg_send(struct h_test *t, uint32_t tag, const void *p, uint32_t len)
{
	uint32_t hdr[2] = {tag, len};

	H_CHECK(t->ctl >= 0, "no peer");
	h_raw_send(t->ctl, hdr, sizeof(hdr));
	if (len)
		h_raw_send(t->ctl, p, len);
}

int h_msg_recv_timeout(struct h_test *t, uint32_t tag, void *p, uint32_t len,
		       int timeout_ms)
{
	uint32_t hdr[2];
	int64_t deadline = h_now_ms() + timeout_ms;

	H_CHECK(t->ctl >= 0, "no peer");
	if (h_raw_recv(t, hdr, sizeof(hdr), deadline))
		return -ETIMEDOUT;
	if (hdr[0] == H_MSG_FAIL) {
		char msg[1024];
		uint32_t n = hdr[1] < sizeof(msg) ? hdr[1] : sizeof(msg) - 1;

		h_raw_recv(t, msg, n, h_now_ms() + H_TIMEOUT_MS);
		msg[n] = 0;
		h_fail(__FILE__, __LINE__, "peer failed: %s", msg);
	}
	H_CHECK(hdr[0] == tag, "control message tag %u, expected %u", hdr[0],
		tag);
	H_CHECK(hdr[1] == len, "control message %u has %u bytes, expected %u",
		tag, hdr[1], len);
	if (len)
		H_CHECK(!h_raw_recv(t, p, len, h_now_ms() + H_TIMEOUT_MS),
			"control message %u truncated", tag);
	return 0;
}

void h_msg_recv(struct h_test *t, uint32_t tag, void *p, uint32_t len)
{
	int rc = h_msg_recv_timeout(t, tag, p, len, H_TIMEOUT_MS);

	H_CHECK(rc == 0, "no control message %u from the %s within %d ms", tag,
		t->is_peer ? "test process" : "peer", H_TIMEOUT_MS);
}

void h_signal(struct h_test *t, uint32_t tag)
{
	h_msg_send(t, tag, NULL, 0);
}

void h_wait(struct h_test *t, uint32_t tag)
{
	h_msg_recv(t, tag, NULL, 0);
}

/* ---------------------------------------------------------- fabric setup */

static uint32_t h_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * The suite's usual queues, cut to what the device allows (rr_qp_create
 * refuses more): siw, for one, takes a single SGE per work request, as
 * its RDMA Reads scatter into one (rr_device_attr.max_sge).
 */
void h_default_cfg(struct h_test *t)
{
	const struct rr_device_attr *a = &t->attr;
	struct h_qp_cfg c = {
		.sq_depth = h_min(64, a->max_qp_wr),
		.rq_depth = h_min(64, a->max_qp_wr),
		.max_send_sge = h_min(4, a->max_sge),
		.max_recv_sge = h_min(4, a->max_sge),
		.ird = (uint16_t)h_min(16, a->max_ird),
		.ord = (uint16_t)h_min(16, a->max_ord),
	};

	t->cfg = c;
}

void h_open(struct h_test *t)
{
	uint32_t depth;

	H_OK(rr_device_open(t->provider, h_opts(), &t->dev));
	h_track(t, H_T_DEV, t->dev);
	H_OK(rr_device_query(t->dev, &t->attr));
	H_OK(rr_pd_alloc(t->dev, &t->pd));
	h_track(t, H_T_PD, t->pd);
	depth = t->attr.max_cqe < 1024 ? t->attr.max_cqe : 1024;
	H_OK(rr_cq_create(t->dev, depth, &t->scq));
	h_track(t, H_T_CQ, t->scq);
	H_OK(rr_cq_create(t->dev, depth, &t->rcq));
	h_track(t, H_T_CQ, t->rcq);
	H_OK(rr_evch_create(t->dev, &t->evch));
	h_track(t, H_T_EVCH, t->evch);
	h_default_cfg(t);
}

struct rr_qp *h_qp_new(struct h_test *t)
{
	struct rr_qp_attr a = {
		.send_cq = t->scq,
		.recv_cq = t->rcq,
		.evch = t->evch,
		.sq_depth = t->cfg.sq_depth,
		.rq_depth = t->cfg.rq_depth,
		.max_send_sge = t->cfg.max_send_sge,
		.max_recv_sge = t->cfg.max_recv_sge,
		.ird = t->cfg.ird,
		.ord = t->cfg.ord,
		.flags = t->qp_flags,
		.context = t,
	};
	struct rr_qp *qp;

	H_OK(rr_qp_create(t->pd, &a, &qp));
	h_track(t, H_T_QP, qp);
	H_EQ(rr_qp_state(qp), RR_QPS_INIT);
	H_CHECK(rr_qp_context(qp) == t, "rr_qp_context");
	return qp;
}

void h_qp_destroy(struct h_test *t, struct rr_qp *qp)
{
	h_untrack(t, qp);
	if (t->qp == qp)
		t->qp = NULL;
	H_OK(rr_qp_destroy(qp));
}

void h_addr(struct sockaddr_storage *ss, socklen_t *len, uint16_t port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* RoCE cannot use loopback: the vm tests name the rxe interface's */
	if (getenv("RR_TEST_ADDR"))
		H_CHECK(inet_pton(AF_INET, getenv("RR_TEST_ADDR"),
				  &sin->sin_addr) == 1,
			"RR_TEST_ADDR is not an IPv4 address");
	*len = sizeof(*sin);
}

void h_listen(struct h_test *t)
{
	struct sockaddr_storage ss, bound;
	socklen_t len;
	uint16_t port;

	h_addr(&ss, &len, 0);
	H_OK(rr_listener_create(t->dev, t->evch, (struct sockaddr *)&ss, len,
				16, &t->lst));
	h_track(t, H_T_LISTENER, t->lst);
	H_OK(rr_listener_addr(t->lst, &bound));
	H_EQ(bound.ss_family, AF_INET);
	port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
	H_CHECK(port != 0, "rr_listener_addr reported port 0");
	h_msg_send(t, H_MSG_PORT, &port, sizeof(port));
}

uint16_t h_recv_port(struct h_test *t)
{
	uint16_t port;

	h_msg_recv(t, H_MSG_PORT, &port, sizeof(port));
	return port;
}

struct rr_conn_req *h_get_request(struct h_test *t, struct rr_cm_event *ev)
{
	for (;;) {
		h_event(t, ev);
		if (ev->type == RR_CM_DISCONNECTED ||
		    ev->type == RR_CM_QP_ERROR)
			continue; /* of an earlier connection */
		break;
	}
	H_CHECK(ev->type == RR_CM_CONNECT_REQUEST, "got %s, expected %s",
		rr_cm_event_str(ev->type),
		rr_cm_event_str(RR_CM_CONNECT_REQUEST));
	H_CHECK(ev->req != NULL, "CONNECT_REQUEST without req");
	H_CHECK(ev->listener == t->lst, "CONNECT_REQUEST names listener %p",
		(void *)ev->listener);
	return ev->req;
}

void h_accept(struct h_test *t, const void *pdata, size_t len,
	      struct rr_cm_event *req_ev)
{
	struct rr_cm_event ev;
	struct rr_conn_req *req = h_get_request(t, &ev);

	if (req_ev)
		*req_ev = ev;
	t->qp = h_qp_new(t);
	H_OK(rr_conn_req_accept(req, t->qp, pdata, len));
	h_expect_event(t, RR_CM_ESTABLISHED, &ev);
	H_CHECK(ev.qp == t->qp, "ESTABLISHED names another QP");
	H_EQ(rr_qp_state(t->qp), RR_QPS_RTS);
}

void h_connect(struct h_test *t, uint16_t port, const void *pdata, size_t len,
	       struct rr_cm_event *out)
{
	struct sockaddr_storage ss;
	socklen_t alen;
	struct rr_cm_event ev;

	h_addr(&ss, &alen, port);
	t->qp = h_qp_new(t);
	H_OK(rr_qp_connect(t->qp, (struct sockaddr *)&ss, alen, pdata, len));
	h_expect_event(t, RR_CM_ESTABLISHED, &ev);
	H_CHECK(ev.qp == t->qp, "ESTABLISHED names another QP");
	H_EQ(rr_qp_state(t->qp), RR_QPS_RTS);
	if (out)
		*out = ev;
}

void h_passive(struct h_test *t)
{
	h_open(t);
	h_listen(t);
	h_accept(t, NULL, 0, NULL);
}

void h_active(struct h_test *t)
{
	uint16_t port;

	h_open(t);
	port = h_recv_port(t);
	h_connect(t, port, NULL, 0, NULL);
}

/* ------------------------------------------------------------- events */

void h_event(struct h_test *t, struct rr_cm_event *ev)
{
	int rc = rr_evch_get(t->evch, ev, H_TIMEOUT_MS);

	H_CHECK(rc != -ETIMEDOUT && rc != -EAGAIN, "no CM event within %d ms",
		H_TIMEOUT_MS);
	H_OK(rc);
}

void h_expect_event(struct h_test *t, enum rr_cm_event_type type,
		    struct rr_cm_event *ev)
{
	h_event(t, ev);
	H_CHECK(ev->type == type, "got %s (status %d), expected %s",
		rr_cm_event_str(ev->type), ev->status, rr_cm_event_str(type));
}

void h_expect_down(struct h_test *t, struct rr_cm_event *ev)
{
	h_event(t, ev);
	H_CHECK(ev->type == RR_CM_QP_ERROR || ev->type == RR_CM_DISCONNECTED,
		"got %s (status %d), expected QP_ERROR or DISCONNECTED",
		rr_cm_event_str(ev->type), ev->status);
}

/* ---------------------------------------------------------- completions */

int h_poll_wc(struct rr_cq *cq, struct rr_wc *wc, int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;

	for (;;) {
		int64_t left;
		int rc = rr_cq_poll(cq, wc, 1);

		if (rc == 1)
			return 1;
		H_CHECK(rc == 0, "rr_cq_poll returned %d (%s)", rc,
			h_errname(rc));
		left = deadline - h_now_ms();
		if (left <= 0)
			return 0;
		rc = rr_cq_wait(cq, (int)left);
		H_CHECK(rc == 0 || rc == -ETIMEDOUT,
			"rr_cq_wait returned %d (%s)", rc, h_errname(rc));
		if (rc == -ETIMEDOUT) {
			rc = rr_cq_poll(cq, wc, 1);
			H_CHECK(rc == 0 || rc == 1, "rr_cq_poll returned %d",
				rc);
			return rc;
		}
	}
}

void h_wc(struct h_test *t, struct rr_cq *cq, struct rr_wc *wc)
{
	(void)t;
	H_CHECK(h_poll_wc(cq, wc, H_TIMEOUT_MS) == 1,
		"no completion on the %s CQ within %d ms",
		cq == t->scq ? "send" : "recv", H_TIMEOUT_MS);
}

void h_expect_wc(struct h_test *t, struct rr_cq *cq, uint64_t wr_id,
		 enum rr_wc_status status, enum rr_wc_opcode opcode,
		 struct rr_wc *out)
{
	struct rr_wc wc;

	h_wc(t, cq, &wc);
	H_CHECK(wc.wr_id == wr_id && wc.status == status,
		"completion wr_id %llu status %s (opcode %d), expected wr_id "
		"%llu status %s",
		(unsigned long long)wc.wr_id, rr_wc_status_str(wc.status),
		(int)wc.opcode, (unsigned long long)wr_id,
		rr_wc_status_str(status));
	if (status == RR_WC_SUCCESS)
		H_CHECK(wc.opcode == opcode,
			"completion wr_id %llu opcode %d, expected %d",
			(unsigned long long)wr_id, (int)wc.opcode, (int)opcode);
	H_CHECK(wc.qp != NULL, "completion without qp");
	if (out)
		*out = wc;
}

void h_expect_cq_empty(struct h_test *t, struct rr_cq *cq)
{
	struct rr_wc wc;

	H_CHECK(h_poll_wc(cq, &wc, H_QUIET_MS) == 0,
		"unexpected completion on the %s CQ: wr_id %llu status %s "
		"opcode %d",
		cq == t->scq ? "send" : "recv", (unsigned long long)wc.wr_id,
		rr_wc_status_str(wc.status), (int)wc.opcode);
}

/* ---------------------------------------------------------- work requests */

static struct h_buf *h_buf_make(struct h_test *t, struct rr_pd *pd, size_t len,
				unsigned access, bool fill, uint64_t seed)
{
	struct h_buf *b = calloc(1, sizeof(*b));
	void *p = NULL;

	H_CHECK(b, "out of memory");
	H_CHECK(posix_memalign(&p, 4096, len ? len : 1) == 0, "out of memory");
	memset(p, 0, len ? len : 1);
	if (fill)
		h_fill(p, len, seed, 0);
	b->p = p;
	b->len = len;
	/*
	 * Written before registration: the provider's remote accesses
	 * synchronise with rr_mr_reg, not with the control socket that
	 * advertises the buffer (TSan sees no order across processes).
	 */
	H_OK(rr_mr_reg(pd, p, len ? len : 1, access | RR_ACCESS_LOCAL_WRITE,
		       &b->mr));
	h_track(t, H_T_BUF, b);
	H_CHECK(rr_mr_addr(b->mr) == p, "rr_mr_addr");
	H_EQ(rr_mr_length(b->mr), len ? len : 1);
	if (access & (RR_ACCESS_REMOTE_READ | RR_ACCESS_REMOTE_WRITE))
		H_CHECK(rr_mr_rkey(b->mr) != 0, "no rkey with remote access");
	else
		H_EQ(rr_mr_rkey(b->mr), 0);
	return b;
}

struct h_buf *h_buf_new_pd(struct h_test *t, struct rr_pd *pd, size_t len,
			   unsigned access)
{
	return h_buf_make(t, pd, len, access, false, 0);
}

struct h_buf *h_buf_pattern(struct h_test *t, struct rr_pd *pd, size_t len,
			    unsigned access, uint64_t seed)
{
	return h_buf_make(t, pd, len, access, true, seed);
}

struct h_buf *h_buf_new(struct h_test *t, size_t len, unsigned access)
{
	return h_buf_new_pd(t, t->pd, len, access);
}

struct rr_pd *h_pd_new(struct h_test *t)
{
	struct rr_pd *pd;

	H_OK(rr_pd_alloc(t->dev, &pd));
	h_track(t, H_T_PD, pd);
	return pd;
}

struct rr_mw *h_mw_new(struct h_test *t)
{
	struct rr_mw *mw;

	H_OK(rr_mw_alloc(t->pd, &mw));
	h_track(t, H_T_MW, mw);
	return mw;
}

struct h_remote h_remote_of(const struct h_buf *b, uint32_t rkey)
{
	struct h_remote r = {
		.addr = (uint64_t)(uintptr_t)b->p,
		.len = b->len,
		.rkey = rkey,
	};

	return r;
}

int h_post_recv(struct rr_qp *qp, uint64_t wr_id, const struct h_buf *b,
		size_t off, size_t len)
{
	struct rr_sge sge = {
		.addr = (uint64_t)(uintptr_t)(b->p + off),
		.length = (uint32_t)len,
		.lkey = rr_mr_lkey(b->mr),
	};
	struct rr_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct rr_recv_wr *bad = NULL;

	return rr_qp_post_recv(qp, &wr, &bad);
}

void h_wr_send(struct rr_send_wr *wr, struct rr_sge *sge, uint64_t wr_id,
	       unsigned flags, const struct h_buf *b, size_t off, size_t len)
{
	sge->addr = (uint64_t)(uintptr_t)(b->p + off);
	sge->length = (uint32_t)len;
	sge->lkey = rr_mr_lkey(b->mr);
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->opcode = RR_WR_SEND;
	wr->flags = flags;
	wr->sg_list = len ? sge : NULL;
	wr->num_sge = len ? 1 : 0;
}

void h_wr_rdma(struct rr_send_wr *wr, struct rr_sge *sge, enum rr_wr_opcode op,
	       uint64_t wr_id, unsigned flags, const struct h_buf *b,
	       size_t off, size_t len, uint64_t raddr, uint32_t rkey)
{
	h_wr_send(wr, sge, wr_id, flags, b, off, len);
	wr->opcode = op;
	if (op == RR_WR_RDMA_READ) {
		/* A Read names exactly one sink SGE, even for 0 bytes. */
		wr->sg_list = sge;
		wr->num_sge = 1;
	}
	wr->rdma.remote_addr = raddr;
	wr->rdma.rkey = rkey;
}

int h_post_chain(struct rr_qp *qp, struct rr_send_wr *wrs, int n)
{
	struct rr_send_wr *bad = NULL;

	for (int i = 0; i < n; i++)
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	return rr_qp_post_send(qp, wrs, &bad);
}

int h_post_send(struct rr_qp *qp, uint64_t wr_id, unsigned flags,
		const struct h_buf *b, size_t off, size_t len)
{
	struct rr_sge sge;
	struct rr_send_wr wr;

	h_wr_send(&wr, &sge, wr_id, flags, b, off, len);
	return h_post_chain(qp, &wr, 1);
}

int h_post_rdma(struct rr_qp *qp, enum rr_wr_opcode op, uint64_t wr_id,
		unsigned flags, const struct h_buf *b, size_t off, size_t len,
		uint64_t raddr, uint32_t rkey)
{
	struct rr_sge sge;
	struct rr_send_wr wr;

	h_wr_rdma(&wr, &sge, op, wr_id, flags, b, off, len, raddr, rkey);
	return h_post_chain(qp, &wr, 1);
}

int h_post_reg(struct rr_qp *qp, uint64_t wr_id, struct rr_mw *mw,
	       const struct h_buf *b, size_t off, size_t len, unsigned access)
{
	struct rr_send_wr wr = {
		.wr_id = wr_id,
		.opcode = RR_WR_REG,
		.flags = RR_SEND_SIGNALED,
		.reg = {.mw = mw,
			.mr = b->mr,
			.addr = (uint64_t)(uintptr_t)(b->p + off),
			.length = len,
			.access = access},
	};
	struct rr_send_wr *bad = NULL;

	return rr_qp_post_send(qp, &wr, &bad);
}

int h_post_local_inv(struct rr_qp *qp, uint64_t wr_id, uint32_t rkey)
{
	struct rr_send_wr wr = {
		.wr_id = wr_id,
		.opcode = RR_WR_LOCAL_INV,
		.flags = RR_SEND_SIGNALED,
		.invalidate_rkey = rkey,
	};
	struct rr_send_wr *bad = NULL;

	return rr_qp_post_send(qp, &wr, &bad);
}

/* -------------------------------------------------------------- payloads */

static uint64_t h_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t h_rand(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return h_mix(*state);
}

static inline uint8_t h_byte(uint64_t seed, uint64_t i)
{
	return (uint8_t)(h_mix(seed ^ (i >> 3) * 0xff51afd7ed558ccdull) >>
			 ((i & 7) * 8));
}

void h_fill(void *p, size_t len, uint64_t seed, uint64_t pos)
{
	uint8_t *c = p;
	size_t i = 0;

	while (i < len && ((pos + i) & 7))
		c[i] = h_byte(seed, pos + i), i++;
	for (; i + 8 <= len; i += 8) {
		uint64_t w =
			h_mix(seed ^ ((pos + i) >> 3) * 0xff51afd7ed558ccdull);

		memcpy(c + i, &w, 8); /* little-endian hosts only */
	}
	for (; i < len; i++)
		c[i] = h_byte(seed, pos + i);
}

size_t h_verify(const void *p, size_t len, uint64_t seed, uint64_t pos)
{
	const uint8_t *c = p;
	size_t i = 0;

	while (i < len && ((pos + i) & 7)) {
		if (c[i] != h_byte(seed, pos + i))
			return i;
		i++;
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w =
			h_mix(seed ^ ((pos + i) >> 3) * 0xff51afd7ed558ccdull);

		if (memcmp(c + i, &w, 8))
			break;
	}
	for (; i < len; i++)
		if (c[i] != h_byte(seed, pos + i))
			return i;
	return SIZE_MAX;
}

uint64_t h_sum(const void *p, size_t len)
{
	const uint8_t *c = p;
	uint64_t h = 0xcbf29ce484222325ull ^ len;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, c + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h_mix(h);
}

struct rr_fabric_counters h_counters(struct h_test *t)
{
	struct rr_fabric_counters c;

	H_OK(rr_device_counters(t->dev, &c));
	return c;
}
