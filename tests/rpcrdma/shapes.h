/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A test program whose calls take every shape RPC-over-RDMA has (RFC 8166
 * section 3.5), and the client side that makes one call of each and checks
 * every byte that comes back:
 *
 *   inline        ECHO, arguments and results inline
 *   read chunk    WRITE, the data (DDP-eligible) pulled by the server, from
 *                 registered memory and through a bounce buffer
 *   write chunk   READ, the data pushed by the server, into registered
 *                 memory and through a bounce buffer
 *   reply chunk   BIG, results too large for an inline reply
 *   RDMA_NOMSG    ECHO of arguments too large for an inline call (a
 *                 position-zero read chunk), its results by reply chunk
 *
 * Data depends on a seed per round, so a reply of another round or call
 * shows. Used by the allocation-failure tests (no_fresh_memory.c,
 * alloc_sweep.c).
 */
#ifndef RR_TESTS_SHAPES_H
#define RR_TESTS_SHAPES_H

#include <rpcrdma/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SHAPES_PROG	0x20000099u
#define SHAPES_VERS	1u
#define SHAPES_BULK	(64u << 10) /* bulk of READ and WRITE */
#define SHAPES_BIG	(16u << 10) /* BIG: results past the inline size */
#define SHAPES_NOMSG	6000u /* ECHO arguments past the inline size (4 KiB) */
#define SHAPES_MAX_BULK (128u << 10) /* the opts' max_bulk, both sides */

enum { SP_NULL, SP_ECHO, SP_READ, SP_WRITE, SP_BIG, SP_N };

static inline uint8_t shapes_pat(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u;

	return (uint8_t)((x >> 24) ^ (x >> 11) ^ (uint32_t)(i >> 8));
}

static inline void shapes_fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = shapes_pat(seed, i);
}

static inline bool shapes_check(const uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != shapes_pat(seed, i))
			return false;
	return true;
}

static inline uint32_t shapes_fnv(const uint8_t *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static inline void shapes_put32(void *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static inline uint32_t shapes_get32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* ------------------------------------------------------------ server */

static inline uint32_t shapes_null(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return rr_svc_set_res(r, 0, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static inline uint32_t shapes_echo(struct rr_svc_req *r, void *arg)
{
	size_t len, cap;
	const void *a = rr_svc_args(r, &len);
	void *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	if (len > cap)
		return RR_GARBAGE_ARGS;
	memcpy(res, a, len);
	return rr_svc_set_res(r, len, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

/* args: seed, size. results: size, then size pattern bytes (bulk). */
static inline uint32_t shapes_read(struct rr_svc_req *r, void *arg)
{
	size_t len, cap, bcap;
	const uint8_t *a = rr_svc_args(r, &len);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint8_t *bulk = rr_svc_bulk_buf(r, &bcap);
	uint32_t seed, size;

	(void)arg;
	if (len != 8)
		return RR_GARBAGE_ARGS;
	seed = shapes_get32(a);
	size = shapes_get32(a + 4);
	if (size > bcap)
		return RR_GARBAGE_ARGS;
	shapes_fill(bulk, size, seed);
	shapes_put32(res, size);
	return rr_svc_set_res(r, 4, bulk, size) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

/* args: length, the bytes as the DDP-eligible item. results: len, sum. */
static inline uint32_t shapes_write(struct rr_svc_req *r, void *arg)
{
	size_t len, blen, cap;
	const uint8_t *a = rr_svc_args(r, &len);
	const uint8_t *bulk = rr_svc_arg_bulk(r, &blen);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	const uint8_t *data;
	uint32_t n;

	(void)arg;
	if (len < 4)
		return RR_GARBAGE_ARGS;
	n = shapes_get32(a);
	if (bulk ? (blen != n || len != 4) : len - 4 < n)
		return RR_GARBAGE_ARGS;
	data = bulk ? bulk : a + 4;
	shapes_put32(res, n);
	shapes_put32(res + 4, shapes_fnv(data, n));
	return rr_svc_set_res(r, 8, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

/* args: seed, n. results: n pattern bytes, inline XDR (opaque). */
static inline uint32_t shapes_big(struct rr_svc_req *r, void *arg)
{
	size_t len, cap;
	const uint8_t *a = rr_svc_args(r, &len);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint32_t n;

	(void)arg;
	if (len != 8)
		return RR_GARBAGE_ARGS;
	n = shapes_get32(a + 4);
	if (4 + (size_t)n > cap || (n & 3))
		return RR_GARBAGE_ARGS;
	shapes_put32(res, n);
	shapes_fill(res + 4, n, shapes_get32(a));
	return rr_svc_set_res(r, 4 + (size_t)n, NULL, 0) ? RR_SYSTEM_ERR
							 : RR_SUCCESS;
}

static const rr_svc_fn shapes_procs[SP_N] = {
	[SP_NULL] = shapes_null, [SP_ECHO] = shapes_echo,
	[SP_READ] = shapes_read, [SP_WRITE] = shapes_write,
	[SP_BIG] = shapes_big,
};

static const struct rr_svc_prog shapes_prog = {.prog = SHAPES_PROG,
					       .vers = SHAPES_VERS,
					       .nprocs = SP_N,
					       .procs = shapes_procs};

/* ------------------------------------------------------------ client */

/*
 * The caller's memory: reg is registered with the client (zero-copy
 * chunks) when reg_ok, plain is not (bounce buffers).
 */
struct shapes_mem {
	uint8_t reg[2 * SHAPES_BULK];
	bool reg_ok;
	uint8_t plain[SHAPES_BULK];
	uint8_t args[SHAPES_NOMSG + 8];
	uint8_t res[SHAPES_BIG + 64]; /* > SHAPES_NOMSG + 64 too */
};

/* The shape that failed last, for messages. */
struct shapes_result {
	const char *shape;
	int rc; /* the call's, or -EBADMSG: wrong bytes, -EPROTO: bad stat */
};

static inline struct rr_call shapes_call(uint32_t proc, void *res,
					 size_t res_cap)
{
	return (struct rr_call){.prog = SHAPES_PROG,
				.vers = SHAPES_VERS,
				.proc = proc,
				.res = res,
				.res_cap = res_cap};
}

static inline int shapes_done(struct rr_clnt *c, struct rr_call *call)
{
	int rc = rr_clnt_call(c, call);

	if (!rc && call->accept_stat != RR_SUCCESS)
		rc = -EPROTO;
	return rc;
}

static inline int shapes_echo_call(struct rr_clnt *c, struct shapes_mem *m,
				   size_t len, uint32_t seed)
{
	struct rr_call call = shapes_call(SP_ECHO, m->res, len + 64);
	int rc;

	shapes_fill(m->args, len, seed);
	call.args = m->args;
	call.args_len = len;
	memset(m->res, 0, len);
	rc = shapes_done(c, &call);
	if (!rc && (call.res_len != len || memcmp(m->res, m->args, len)))
		rc = -EBADMSG;
	return rc;
}

static inline int shapes_write_call(struct rr_clnt *c, uint8_t *data,
				    uint32_t seed, uint8_t *args, uint8_t *res)
{
	struct rr_call call = shapes_call(SP_WRITE, res, 8);
	int rc;

	shapes_fill(data, SHAPES_BULK, seed);
	shapes_put32(args, SHAPES_BULK);
	call.args = args;
	call.args_len = 4;
	call.arg_bulk = data;
	call.arg_bulk_len = SHAPES_BULK;
	rc = shapes_done(c, &call);
	if (!rc && (call.res_len != 8 || shapes_get32(res) != SHAPES_BULK ||
		    shapes_get32(res + 4) != shapes_fnv(data, SHAPES_BULK)))
		rc = -EBADMSG;
	return rc;
}

static inline int shapes_read_call(struct rr_clnt *c, uint8_t *data,
				   uint32_t seed, uint8_t *args, uint8_t *res)
{
	struct rr_call call = shapes_call(SP_READ, res, 8);
	int rc;

	shapes_put32(args, seed);
	shapes_put32(args + 4, SHAPES_BULK);
	call.args = args;
	call.args_len = 8;
	call.res_bulk = data;
	call.res_bulk_cap = SHAPES_BULK;
	memset(data, 0, SHAPES_BULK);
	rc = shapes_done(c, &call);
	if (!rc && (call.res_len != 4 || shapes_get32(res) != SHAPES_BULK ||
		    call.res_bulk_len != SHAPES_BULK ||
		    !shapes_check(data, SHAPES_BULK, seed)))
		rc = -EBADMSG;
	return rc;
}

static inline int shapes_big_call(struct rr_clnt *c, struct shapes_mem *m,
				  uint32_t seed)
{
	struct rr_call call = shapes_call(SP_BIG, m->res, sizeof(m->res));
	int rc;

	shapes_put32(m->args, seed);
	shapes_put32(m->args + 4, SHAPES_BIG);
	call.args = m->args;
	call.args_len = 8;
	rc = shapes_done(c, &call);
	if (!rc && (call.res_len != 4 + SHAPES_BIG ||
		    shapes_get32(m->res) != SHAPES_BIG ||
		    !shapes_check(m->res + 4, SHAPES_BIG, seed)))
		rc = -EBADMSG;
	return rc;
}

/*
 * One call of every shape. Returns 0, or the first failure (its shape in
 * *out); with keep_going the other shapes are still tried.
 */
static inline int shapes_round(struct rr_clnt *c, struct shapes_mem *m,
			       uint32_t seed, bool keep_going,
			       struct shapes_result *out)
{
	uint8_t *zc = m->reg; /* zero-copy if its registration worked */
	struct {
		const char *shape;
		int rc;
	} r[7];
	int n = 0;

#define SHAPE(name, expr)                                                      \
	do {                                                                   \
		if (n && r[n - 1].rc && !keep_going)                           \
			break;                                                 \
		r[n].shape = name;                                             \
		r[n].rc = (expr);                                              \
		n++;                                                           \
	} while (0)
	SHAPE("inline", shapes_echo_call(c, m, 200, seed));
	SHAPE("read chunk, registered",
	      shapes_write_call(c, zc, seed + 1, m->args, m->res));
	SHAPE("read chunk, bounce",
	      shapes_write_call(c, m->plain, seed + 2, m->args, m->res));
	SHAPE("write chunk, registered",
	      shapes_read_call(c, zc + SHAPES_BULK, seed + 3, m->args, m->res));
	SHAPE("write chunk, bounce",
	      shapes_read_call(c, m->plain, seed + 4, m->args, m->res));
	SHAPE("reply chunk", shapes_big_call(c, m, seed + 5));
	SHAPE("RDMA_NOMSG", shapes_echo_call(c, m, SHAPES_NOMSG, seed + 6));
#undef SHAPE
	for (int i = 0; i < n; i++) {
		if (r[i].rc) {
			out->shape = r[i].shape;
			out->rc = r[i].rc;
			return r[i].rc;
		}
	}
	out->shape = NULL;
	out->rc = 0;
	return 0;
}

#endif
