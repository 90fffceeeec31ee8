// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "tprog.h"
#include "clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint8_t *pattern; /* RR_T_MAX_BULK bytes: the READ bulk source */

static uint32_t done(struct rr_svc_req *r, size_t len, const void *bulk,
		     size_t bulk_len)
{
	return rr_svc_set_res(r, len, bulk, bulk_len) ? RR_SYSTEM_ERR
						      : RR_SUCCESS;
}

uint32_t rr_t_null(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return done(r, 0, NULL, 0);
}

uint32_t rr_t_echo(struct rr_svc_req *r, void *arg)
{
	size_t len, cap;
	const void *a = rr_svc_args(r, &len);
	void *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	if (len > cap)
		return RR_GARBAGE_ARGS;
	if (len)
		memcpy(res, a, len);
	return done(r, len, NULL, 0);
}

/* The one argument word of READ, BIG and SLEEP, at most max. */
static bool arg_word(struct rr_svc_req *r, uint32_t max, uint32_t *v)
{
	size_t len;
	const uint8_t *a = rr_svc_args(r, &len);

	if (len != 4)
		return false;
	*v = rr_t_get32(a);
	return *v <= max;
}

static uint32_t h_read(struct rr_svc_req *r, void *arg)
{
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint32_t size;

	(void)arg;
	if (!arg_word(r, RR_T_MAX_BULK, &size))
		return RR_GARBAGE_ARGS;
	rr_t_put32(res, size);
	return done(r, 4, pattern, size);
}

static bool args_inline;

void rr_t_prog_args_inline(void)
{
	args_inline = true;
}

/*
 * WRITE's bytes: apart (a read chunk) or inline after the length word,
 * XDR-padded and nothing more.
 */
static const uint8_t *write_data(struct rr_svc_req *r, uint32_t *n)
{
	size_t len, blen;
	const uint8_t *a = rr_svc_args(r, &len);
	const uint8_t *bulk = rr_svc_arg_bulk(r, &blen);

	if (len < 4)
		return NULL;
	*n = rr_t_get32(a);
	if (bulk) /* nothing may follow the length word then */
		return !args_inline && blen == *n && len == 4 ? bulk : NULL;
	return len - 4 == *n + rr_t_xdr_pad(*n) ? a + 4 : NULL;
}

static uint32_t h_write(struct rr_svc_req *r, void *arg)
{
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);
	const uint8_t *data;
	uint32_t n = 0;

	(void)arg;
	data = write_data(r, &n);
	if (!data)
		return RR_GARBAGE_ARGS;
	rr_t_put32(res, n);
	rr_t_put32(res + 4, rr_t_fnv1a(data, n));
	return done(r, 8, NULL, 0);
}

static uint32_t h_big(struct rr_svc_req *r, void *arg)
{
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint32_t n;

	(void)arg;
	if (!arg_word(r, RR_T_MAX_BULK, &n) || 4 + n + rr_t_xdr_pad(n) > cap)
		return RR_GARBAGE_ARGS;
	rr_t_put32(res, n);
	memcpy(res + 4, pattern, n);
	memset(res + 4 + n, 0, rr_t_xdr_pad(n));
	return done(r, 4 + n + rr_t_xdr_pad(n), NULL, 0);
}

static uint32_t h_whoami(struct rr_svc_req *r, void *arg)
{
	const struct rr_cred *cr = rr_svc_cred(r);
	size_t cap, n = 12;
	uint8_t *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	if (!cr) {
		for (int i = 0; i < 3; i++)
			rr_t_put32(res + 4 * i, RR_T_NO_CRED);
		return done(r, n, NULL, 0);
	}
	rr_t_put32(res, cr->uid);
	rr_t_put32(res + 4, cr->gid);
	rr_t_put32(res + 8, cr->ngids);
	for (uint32_t i = 0; i < cr->ngids && i < 16; i++, n += 4)
		rr_t_put32(res + n, cr->gids[i]);
	return done(r, n, NULL, 0);
}

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static atomic_uint count, ticks, bumps;

/* Bounded, so that a lost RELEASE fails the test rather than hangs it. */
static bool gate_wait(void)
{
	struct timespec until = rr_t_realtime_in(RR_T_GATE_MS);
	int rc = 0;

	pthread_mutex_lock(&gate_mu);
	while (!gate_open && rc == 0)
		rc = pthread_cond_timedwait(&gate_cv, &gate_mu, &until);
	gate_open = false;
	pthread_mutex_unlock(&gate_mu);
	return rc == 0;
}

static uint32_t h_gate(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return gate_wait() ? done(r, 0, NULL, 0) : RR_SYSTEM_ERR;
}

static uint32_t h_release(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&gate_mu);
	gate_open = true;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	return done(r, 0, NULL, 0);
}

static uint32_t h_count(struct rr_svc_req *r, void *arg)
{
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint32_t n = atomic_fetch_add(&count, 1) + 1;

	(void)arg;
	if (!gate_wait())
		return RR_SYSTEM_ERR;
	rr_t_put32(res, n);
	return done(r, 4, NULL, 0);
}

static uint32_t h_peek(struct rr_svc_req *r, void *arg)
{
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	rr_t_put32(res, atomic_load(&count));
	return done(r, 4, NULL, 0);
}

static uint32_t h_sleep(struct rr_svc_req *r, void *arg)
{
	struct timespec ts;
	uint32_t ms;

	(void)arg;
	if (!arg_word(r, RR_T_GATE_MS, &ms))
		return RR_GARBAGE_ARGS;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts))
		;
	return done(r, 0, NULL, 0);
}

static uint32_t reply_u32(struct rr_svc_req *r, uint32_t v)
{
	size_t cap;
	uint8_t *res = rr_svc_res_buf(r, &cap);

	rr_t_put32(res, v);
	return done(r, 4, NULL, 0);
}

static uint32_t h_tick(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return reply_u32(r, atomic_fetch_add(&ticks, 1) + 1);
}

static uint32_t h_ticks(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return reply_u32(r, atomic_load(&ticks));
}

static uint32_t h_bump(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return reply_u32(r, atomic_fetch_add(&bumps, 1) + 1);
}

static uint32_t h_bumps(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return reply_u32(r, atomic_load(&bumps));
}

static const rr_svc_fn procs[RR_T_NPROCS] = {
	[RR_T_NULL] = rr_t_null, [RR_T_ECHO] = rr_t_echo,
	[RR_T_READ] = h_read,	 [RR_T_WRITE] = h_write,
	[RR_T_BIG] = h_big,	 [RR_T_WHOAMI] = h_whoami,
	[RR_T_GATE] = h_gate,	 [RR_T_RELEASE] = h_release,
	[RR_T_COUNT] = h_count,	 [RR_T_PEEK] = h_peek,
	[RR_T_SLEEP] = h_sleep,	 [RR_T_TICK] = h_tick,
	[RR_T_TICKS] = h_ticks,	 [RR_T_BUMP] = h_bump,
	[RR_T_BUMPS] = h_bumps,
};

static const struct rr_svc_prog prog = {.prog = RR_T_PROG,
					.vers = RR_T_VERS,
					.nprocs = RR_T_NPROCS,
					.procs = procs,
					.drc_procs = 1u << RR_T_COUNT |
						     1u << RR_T_TICK};

const uint8_t *rr_t_prog_pattern(void)
{
	return pattern;
}

const struct rr_svc_prog *rr_t_prog(void)
{
	if (!pattern) {
		pattern = malloc(RR_T_MAX_BULK);
		if (!pattern)
			return NULL;
		for (size_t i = 0; i < RR_T_MAX_BULK; i++)
			pattern[i] = rr_t_pat(i);
	}
	return &prog;
}
