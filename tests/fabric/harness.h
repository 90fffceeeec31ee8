/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Two-process test harness for the fabric API: the conformance suite that
 * every provider must pass.
 *
 * Each test runs in the cmocka process (the "active" side, which connects)
 * and forks one peer process (the "passive" side, which listens on
 * 127.0.0.1 port 0 and accepts). The two coordinate over a socketpair with
 * tagged messages; every wait is bounded by H_TIMEOUT_MS.
 *
 * The peer is forked before either side opens a device, so no provider
 * thread is ever duplicated by fork. Checks use the H_* macros on both
 * sides: in the test process a failed check fails the cmocka test; in the
 * peer it sends the failure text to the test process and exits, and the
 * test process fails with that text at its next message exchange.
 *
 * The provider comes from the environment variable RR_PROVIDER (default
 * "iwarp").
 */
#ifndef RR_TESTS_FABRIC_HARNESS_H
#define RR_TESTS_FABRIC_HARNESS_H

#include <rpcrdma/fabric.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Upper bound of any single wait (event, completion, peer message). */
#define H_TIMEOUT_MS 10000
/* How long "nothing more arrives" is watched for. */
#define H_QUIET_MS 200

#define H_MAX_TRACKED 64

/* Message tags below H_MSG_USER are the harness's own. */
enum {
	H_MSG_FAIL = 1,
	H_MSG_DONE,
	H_MSG_PORT,
	H_MSG_USER = 100,
};

/* Parameters of one cmocka test entry (its initial state). */
struct h_params {
	unsigned qp_flags; /* RR_QP_CRC or 0 */
	const void *arg;   /* test specific */
};

struct h_qp_cfg {
	uint32_t sq_depth;
	uint32_t rq_depth;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint16_t ird;
	uint16_t ord;
};

struct h_buf {
	uint8_t *p;
	size_t len;
	struct rr_mr *mr;
};

/* A remote buffer, as advertised over the control socket. */
struct h_remote {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t pad;
};

struct h_test {
	const struct h_params *params;
	const char *provider;
	bool is_peer;
	pid_t peer;
	int ctl; /* control socket to the other process, -1 if none */

	struct rr_device *dev;
	struct rr_device_attr attr;
	struct rr_pd *pd;
	struct rr_cq *scq;
	struct rr_cq *rcq;
	struct rr_evch *evch;
	struct rr_listener *lst;
	struct rr_qp *qp;
	struct h_qp_cfg cfg;
	unsigned qp_flags;

	struct {
		int type;
		void *obj;
	} tracked[H_MAX_TRACKED];
	int ntracked;
};

/* ---------------------------------------------------------------- checks */

void h_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

#define H_CHECK(cond, ...)                                                     \
	do {                                                                   \
		if (!(cond))                                                   \
			h_fail(__FILE__, __LINE__,                             \
			       "check '" #cond "' failed: " __VA_ARGS__);      \
	} while (0)

/* expr is a fabric call: 0 or a negative errno. */
#define H_OK(expr)                                                             \
	do {                                                                   \
		int h_rc_ = (expr);                                            \
		if (h_rc_ != 0)                                                \
			h_fail(__FILE__, __LINE__, "%s returned %d (%s)",      \
			       #expr, h_rc_, h_errname(h_rc_));                \
	} while (0)

/* expr must return exactly want (a negative errno or a count). */
#define H_RC(expr, want)                                                       \
	do {                                                                   \
		int h_rc_ = (expr), h_want_ = (want);                          \
		if (h_rc_ != h_want_)                                          \
			h_fail(__FILE__, __LINE__,                             \
			       "%s returned %d (%s), expected %d (%s)", #expr, \
			       h_rc_, h_errname(h_rc_), h_want_,               \
			       h_errname(h_want_));                            \
	} while (0)

#define H_EQ(a, b)                                                             \
	do {                                                                   \
		long long h_a_ = (long long)(a), h_b_ = (long long)(b);        \
		if (h_a_ != h_b_)                                              \
			h_fail(__FILE__, __LINE__,                             \
			       "%s == %lld, expected %s == %lld", #a, h_a_,    \
			       #b, h_b_);                                      \
	} while (0)

const char *h_errname(int rc);

/* ------------------------------------------------------------- lifecycle */

/* cmocka setup/teardown: *state becomes a struct h_test. */
int h_setup(void **state);
int h_teardown(void **state);

typedef void (*h_peer_fn)(struct h_test *t, const void *arg);
/* Forks the peer process, which runs fn, cleans up and reports DONE. */
void h_spawn(struct h_test *t, h_peer_fn fn, const void *arg);
/* Test process: waits for the peer's DONE and its exit status 0. */
void h_peer_finish(struct h_test *t);
/* Set when a peer exited with ThreadSanitizer's exit code 66. */
extern bool h_peer_tsan_reported;
/* Test process: SIGKILLs the peer and reaps it. */
void h_peer_kill(struct h_test *t);
/* Destroys everything the harness tracks; checks return codes if strict. */
void h_cleanup(struct h_test *t, bool strict);

/*
 * Test process, before h_spawn: the device's limits, read by a child that
 * opens the device and exits (no device is open when the peer is forked).
 * Probed once per process.
 */
const struct rr_device_attr *h_device_attr(struct h_test *t);
/*
 * Test process: unless cond holds, prints why and skips the test (cmocka
 * reports it SKIPPED). For a capability the device lacks: a test that
 * cannot show what it claims is skipped, never passed.
 */
void h_require(bool cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------ control messages */

void h_msg_send(struct h_test *t, uint32_t tag, const void *p, uint32_t len);
/* Receives a message with this tag and exactly len bytes. */
void h_msg_recv(struct h_test *t, uint32_t tag, void *p, uint32_t len);
/* As h_msg_recv; returns -ETIMEDOUT when nothing came within timeout_ms. */
int h_msg_recv_timeout(struct h_test *t, uint32_t tag, void *p, uint32_t len,
		       int timeout_ms);
/* A bare synchronisation point. */
void h_signal(struct h_test *t, uint32_t tag);
void h_wait(struct h_test *t, uint32_t tag);

/* ---------------------------------------------------------- fabric setup */

/* Opens device, pd, send cq, recv cq and event channel. */
void h_open(struct h_test *t);
/*
 * Default queue configuration: depths 64, 4 SGEs, ird/ord 16, or the
 * device's limits where they are lower (h_open sets it).
 */
void h_default_cfg(struct h_test *t);
struct rr_qp *h_qp_new(struct h_test *t);
void h_qp_destroy(struct h_test *t, struct rr_qp *qp);

/* Passive side: listens on 127.0.0.1:0 and sends the port (H_MSG_PORT). */
void h_listen(struct h_test *t);
/*
 * Passive side: waits for a connection request (skipping stale
 * DISCONNECTED/QP_ERROR events of earlier QPs), copies it to *req_ev if
 * given, creates t->qp and accepts with the private data; waits for
 * ESTABLISHED.
 */
void h_accept(struct h_test *t, const void *pdata, size_t len,
	      struct rr_cm_event *req_ev);
struct rr_conn_req *h_get_request(struct h_test *t, struct rr_cm_event *ev);
/* Active side: receives the port from the peer. */
uint16_t h_recv_port(struct h_test *t);
/* Active side: creates t->qp, connects, waits for ESTABLISHED (into *ev). */
void h_connect(struct h_test *t, uint16_t port, const void *pdata, size_t len,
	       struct rr_cm_event *ev);
void h_addr(struct sockaddr_storage *ss, socklen_t *len, uint16_t port);

/* The usual pair: open + listen + accept, or open + connect. */
void h_passive(struct h_test *t);
void h_active(struct h_test *t);

/* ------------------------------------------------------------- events */

/* Next event within H_TIMEOUT_MS; fails if none. */
void h_event(struct h_test *t, struct rr_cm_event *ev);
void h_expect_event(struct h_test *t, enum rr_cm_event_type type,
		    struct rr_cm_event *ev);
/* Next event must be RR_CM_QP_ERROR or RR_CM_DISCONNECTED. */
void h_expect_down(struct h_test *t, struct rr_cm_event *ev);

/* ---------------------------------------------------------- completions */

/* 1 with *wc filled, or 0 when nothing came within timeout_ms. */
int h_poll_wc(struct rr_cq *cq, struct rr_wc *wc, int timeout_ms);
/* Exactly one completion within H_TIMEOUT_MS. */
void h_wc(struct h_test *t, struct rr_cq *cq, struct rr_wc *wc);
/* One completion with this wr_id, status and (for SUCCESS) opcode. */
void h_expect_wc(struct h_test *t, struct rr_cq *cq, uint64_t wr_id,
		 enum rr_wc_status status, enum rr_wc_opcode opcode,
		 struct rr_wc *out);
/* Nothing arrives on cq within H_QUIET_MS. */
void h_expect_cq_empty(struct h_test *t, struct rr_cq *cq);

/* ---------------------------------------------------------- work requests */

struct h_buf *h_buf_new(struct h_test *t, size_t len, unsigned access);
/* A buffer registered in the given PD (tracked). */
struct h_buf *h_buf_new_pd(struct h_test *t, struct rr_pd *pd, size_t len,
			   unsigned access);
/*
 * A buffer holding the h_fill stream seed from byte 0, written before it
 * is registered: use it for memory the peer accesses remotely.
 */
struct h_buf *h_buf_pattern(struct h_test *t, struct rr_pd *pd, size_t len,
			    unsigned access, uint64_t seed);
struct rr_pd *h_pd_new(struct h_test *t);
struct rr_mw *h_mw_new(struct h_test *t);
struct h_remote h_remote_of(const struct h_buf *b, uint32_t rkey);

int h_post_recv(struct rr_qp *qp, uint64_t wr_id, const struct h_buf *b,
		size_t off, size_t len);
int h_post_send(struct rr_qp *qp, uint64_t wr_id, unsigned flags,
		const struct h_buf *b, size_t off, size_t len);
/* RDMA Write or Read of [off, off+len) of b against remote addr/rkey. */
int h_post_rdma(struct rr_qp *qp, enum rr_wr_opcode op, uint64_t wr_id,
		unsigned flags, const struct h_buf *b, size_t off, size_t len,
		uint64_t raddr, uint32_t rkey);
/*
 * Work requests that must reach the queue together (e.g. a request the peer
 * refuses and the fence behind it: once the refusal comes back, posting
 * fails with -ENOTCONN) are filled with h_wr_* and posted as one chain.
 */
void h_wr_send(struct rr_send_wr *wr, struct rr_sge *sge, uint64_t wr_id,
	       unsigned flags, const struct h_buf *b, size_t off, size_t len);
void h_wr_rdma(struct rr_send_wr *wr, struct rr_sge *sge, enum rr_wr_opcode op,
	       uint64_t wr_id, unsigned flags, const struct h_buf *b,
	       size_t off, size_t len, uint64_t raddr, uint32_t rkey);
/* Links wrs[0..n) and posts them with one rr_qp_post_send. */
int h_post_chain(struct rr_qp *qp, struct rr_send_wr *wrs, int n);
int h_post_reg(struct rr_qp *qp, uint64_t wr_id, struct rr_mw *mw,
	       const struct h_buf *b, size_t off, size_t len, unsigned access);
int h_post_local_inv(struct rr_qp *qp, uint64_t wr_id, uint32_t rkey);

/* -------------------------------------------------------------- payloads */

/* Deterministic bytes: byte i of stream seed is a function of (seed, i). */
void h_fill(void *p, size_t len, uint64_t seed, uint64_t pos);
/* Offset of the first byte differing from the stream, or SIZE_MAX. */
size_t h_verify(const void *p, size_t len, uint64_t seed, uint64_t pos);
uint64_t h_sum(const void *p, size_t len);
uint64_t h_rand(uint64_t *state);

/* Device counters snapshot. */
struct rr_fabric_counters h_counters(struct h_test *t);

/*
 * Failure messages name the test line that called into the harness: the
 * calls below record their call site (not inside harness.c and suite.c,
 * which define H_INTERNAL, so the outermost call site is kept).
 */
extern const char *h_loc_file;
extern int h_loc_line;
#define H_AT(call) (h_loc_file = __FILE__, h_loc_line = __LINE__, call)
#ifndef H_INTERNAL
#define h_peer_finish(...)     H_AT(h_peer_finish(__VA_ARGS__))
#define h_cleanup(...)	       H_AT(h_cleanup(__VA_ARGS__))
#define h_msg_recv(...)	       H_AT(h_msg_recv(__VA_ARGS__))
#define h_wait(...)	       H_AT(h_wait(__VA_ARGS__))
#define h_open(...)	       H_AT(h_open(__VA_ARGS__))
#define h_qp_new(...)	       H_AT(h_qp_new(__VA_ARGS__))
#define h_qp_destroy(...)      H_AT(h_qp_destroy(__VA_ARGS__))
#define h_listen(...)	       H_AT(h_listen(__VA_ARGS__))
#define h_accept(...)	       H_AT(h_accept(__VA_ARGS__))
#define h_get_request(...)     H_AT(h_get_request(__VA_ARGS__))
#define h_connect(...)	       H_AT(h_connect(__VA_ARGS__))
#define h_passive(...)	       H_AT(h_passive(__VA_ARGS__))
#define h_active(...)	       H_AT(h_active(__VA_ARGS__))
#define h_event(...)	       H_AT(h_event(__VA_ARGS__))
#define h_expect_event(...)    H_AT(h_expect_event(__VA_ARGS__))
#define h_expect_down(...)     H_AT(h_expect_down(__VA_ARGS__))
#define h_wc(...)	       H_AT(h_wc(__VA_ARGS__))
#define h_expect_wc(...)       H_AT(h_expect_wc(__VA_ARGS__))
#define h_expect_cq_empty(...) H_AT(h_expect_cq_empty(__VA_ARGS__))
#define h_buf_new(...)	       H_AT(h_buf_new(__VA_ARGS__))
#define h_counters(...)	       H_AT(h_counters(__VA_ARGS__))
#endif

#endif
