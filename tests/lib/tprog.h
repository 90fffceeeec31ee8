/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one test program every RPC test serves (prog RR_T_PROG vers 1),
 * written against <rpcrdma/oncrpc.h> so it runs over any transport:
 *   0 NULL
 *   1 ECHO    results = the argument bytes
 *   2 READ    args: size; results: size (XDR), then size bytes of the
 *             pattern (rr_t_pat) as the DDP-eligible item
 *   3 WRITE   args: length word, then the bytes as the DDP-eligible item;
 *             results: length, FNV-1a checksum of the bytes
 *   4 BIG     args: n; results: opaque<> of n pattern bytes, all XDR
 *   5 WHOAMI  results: uid, gid, ngids, gids[] of the AUTH_SYS
 *             credential, or three RR_T_NO_CRED when there was none
 *   6 GATE    returns once RELEASE ran (a call certainly in progress, as
 *             a handler blocked in file I/O); bounded by RR_T_GATE_MS
 *   7 RELEASE lets one GATE (or COUNT) return
 *   8 COUNT   adds one to a counter, then waits as GATE; results: the new
 *             count. Not idempotent: in drc_procs
 *   9 PEEK    results: the counter
 *  10 SLEEP   args: ms; returns after that long (at most RR_T_GATE_MS)
 *  11 TICK    adds one to a second counter at once; results: the new
 *             value. Not idempotent: in drc_procs
 *  12 TICKS   results: TICK's counter
 *  13 BUMP    as TICK on a third counter, but not in the reply cache:
 *             each run counts
 *  14 BUMPS   results: BUMP's counter
 */
#ifndef RR_TEST_LIB_TPROG_H
#define RR_TEST_LIB_TPROG_H

#include <rpcrdma/oncrpc.h>

#include <stddef.h>
#include <stdint.h>

#define RR_T_PROG     0x20000077u
#define RR_T_VERS     1u
#define RR_T_NO_CRED  0xffffffffu
#define RR_T_MAX_BULK (1u << 20)
#define RR_T_GATE_MS  30000

enum rr_t_proc {
	RR_T_NULL,
	RR_T_ECHO,
	RR_T_READ,
	RR_T_WRITE,
	RR_T_BIG,
	RR_T_WHOAMI,
	RR_T_GATE,
	RR_T_RELEASE,
	RR_T_COUNT,
	RR_T_PEEK,
	RR_T_SLEEP,
	RR_T_TICK,
	RR_T_TICKS,
	RR_T_BUMP,
	RR_T_BUMPS,
	RR_T_NPROCS
};

/* The program to register; builds the READ pattern on first use (NULL
 * when out of memory). */
const struct rr_svc_prog *rr_t_prog(void);
/* READ's source, RR_T_MAX_BULK bytes, once rr_t_prog() has built it. */
const uint8_t *rr_t_prog_pattern(void);

/*
 * Its NULL and ECHO handlers, for a suite that serves a program of its
 * own beside them: NULL sets empty results; ECHO returns the argument
 * bytes (RR_GARBAGE_ARGS when they exceed the result buffer).
 */
uint32_t rr_t_null(struct rr_svc_req *r, void *arg);
uint32_t rr_t_echo(struct rr_svc_req *r, void *arg);

/*
 * For a transport that never carries an argument apart (TCP): WRITE
 * then answers GARBAGE_ARGS to one that arrives apart, as the transport
 * must not pull it out of the record.
 */
void rr_t_prog_args_inline(void);

/* The deterministic pattern of READ and BIG results. */
static inline uint8_t rr_t_pat(size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u;

	return (uint8_t)((x >> 24) ^ (x >> 11) ^ (uint32_t)(i >> 8));
}

/* Data of its own per seed, so a mix-up of two calls' bytes shows. */
static inline void rr_t_fill_seeded(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(rr_t_pat(i + 7) ^
				 (seed * 37 + (uint32_t)(i >> 12)));
}

static inline uint32_t rr_t_fnv1a(const uint8_t *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static inline void rr_t_put32(void *p, uint32_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static inline uint32_t rr_t_get32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

static inline size_t rr_t_xdr_pad(size_t n)
{
	return (4 - (n & 3)) & 3;
}

#endif
