/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Per-procedure counters, kept in shards: a thread takes a shard the
 * first time it counts and keeps it, so handler threads add to their own
 * cache lines (relaxed atomics: nothing is ordered by them) and only a
 * reader sums the shards. The time is taken around the handler with
 * CLOCK_MONOTONIC (vDSO: no system call). A call a handler sends to a
 * worker (RR_SVC_DEFER) is counted once, when the worker runs it, with
 * the worker's time: the try on the receiving thread is not counted.
 */
#include "counters.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NFS_PROG     100003u
#define MOUNT_PROG   100005u
#define NFS_NPROCS   22u
#define MOUNT_NPROCS 6u
#define MNT_PROC     1u /* the one MOUNT result that starts with a status */
#define SHARDS	     8
#define MAX_PROCS    32 /* procedures a wrapped table may have */

struct actr {
	_Atomic uint64_t calls, rpc_errors;
	_Atomic uint64_t status[CTR_NSTATUS];
	_Atomic uint64_t hist[CTR_BUCKETS];
};

struct shard {
	struct actr nfs[NFS_NPROCS], mount[MOUNT_NPROCS];
};

struct wrapped {
	struct nfsrdmad_counters *c;
	enum ctr_prog g;
	struct rr_svc_prog orig;
	rr_svc_fn table[MAX_PROCS];
};

struct nfsrdmad_counters {
	struct shard shard[SHARDS];
	struct wrapped w[CTR_NPROGS];
	_Atomic unsigned next_shard;
};

static const char *const nfs_names[NFS_NPROCS] = {
	"NULL",	  "GETATTR", "SETATTR",	 "LOOKUP", "ACCESS",  "READLINK",
	"READ",	  "WRITE",   "CREATE",	 "MKDIR",  "SYMLINK", "MKNOD",
	"REMOVE", "RMDIR",   "RENAME",	 "LINK",   "READDIR", "READDIRPLUS",
	"FSSTAT", "FSINFO",  "PATHCONF", "COMMIT"};

static const char *const mount_names[MOUNT_NPROCS] = {
	"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"};

/* RFC 1813's error statuses; MOUNT's share their numbers and names. */
static const struct {
	uint32_t v;
	const char *name;
} statuses[CTR_NSTATUS] = {
	{1, "perm"},	     {2, "noent"},	     {5, "io"},
	{6, "nxio"},	     {13, "acces"},	     {17, "exist"},
	{18, "xdev"},	     {19, "nodev"},	     {20, "notdir"},
	{21, "isdir"},	     {22, "inval"},	     {27, "fbig"},
	{28, "nospc"},	     {30, "rofs"},	     {31, "mlink"},
	{63, "nametoolong"}, {66, "notempty"},	     {69, "dquot"},
	{70, "stale"},	     {71, "remote"},	     {10001, "badhandle"},
	{10002, "not_sync"}, {10003, "bad_cookie"},  {10004, "notsupp"},
	{10005, "toosmall"}, {10006, "serverfault"}, {10007, "badtype"},
	{10008, "jukebox"},  {0, "other"}, /* any other value */
};

uint32_t ctr_nprocs(enum ctr_prog g)
{
	return g == CTR_NFS ? NFS_NPROCS : MOUNT_NPROCS;
}

const char *ctr_prog_name(enum ctr_prog g)
{
	return g == CTR_NFS ? "nfs3" : "mount3";
}

const char *ctr_proc_name(enum ctr_prog g, uint32_t proc)
{
	return g == CTR_NFS ? nfs_names[proc] : mount_names[proc];
}

const char *ctr_status_name(uint32_t i)
{
	return statuses[i].name;
}

uint64_t ctr_bucket_le_us(uint32_t b)
{
	return UINT64_C(1) << b;
}

static uint32_t status_index(uint32_t v)
{
	for (uint32_t i = 0; i + 1 < CTR_NSTATUS; i++)
		if (statuses[i].v == v)
			return i;
	return CTR_NSTATUS - 1;
}

static uint32_t bucket_of(uint64_t us)
{
	uint32_t b = us ? 64 - (uint32_t)__builtin_clzll(us) : 0;

	return b < CTR_BUCKETS ? b : CTR_BUCKETS - 1;
}

static struct shard *my_shard(struct nfsrdmad_counters *c)
{
	static _Thread_local int mine = -1;

	if (mine < 0)
		mine = (int)(atomic_fetch_add_explicit(&c->next_shard, 1,
						       memory_order_relaxed) %
			     SHARDS);
	return &c->shard[mine];
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The status word every NFS result (but NULL's) and MNT's starts with. */
static bool result_status(struct rr_svc_req *req, enum ctr_prog g,
			  uint32_t proc, uint32_t *st)
{
	size_t cap;
	const uint8_t *res = rr_svc_res_buf(req, &cap);

	if (!proc || (g == CTR_MOUNT && proc != MNT_PROC) || cap < 4)
		return false;
	*st = (uint32_t)res[0] << 24 | (uint32_t)res[1] << 16 |
	      (uint32_t)res[2] << 8 | res[3];
	return true;
}

static void add(_Atomic uint64_t *v)
{
	atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

static void count(struct wrapped *w, struct rr_svc_req *req, uint32_t proc,
		  uint32_t rc, uint64_t ns)
{
	struct shard *s = my_shard(w->c);
	struct actr *a = w->g == CTR_NFS ? &s->nfs[proc] : &s->mount[proc];
	uint32_t st;

	add(&a->hist[bucket_of(ns / 1000)]);
	if (rc != RR_SUCCESS)
		add(&a->rpc_errors);
	else if (result_status(req, w->g, proc, &st) && st)
		add(&a->status[status_index(st)]);
	add(&a->calls);
}

static uint32_t counted(struct rr_svc_req *req, void *arg)
{
	struct wrapped *w = arg;
	uint32_t proc = rr_svc_req_proc(req);
	uint64_t t0 = now_ns();
	uint32_t rc = w->orig.procs[proc](req, w->orig.arg);

	if (rc != RR_SVC_DEFER)
		count(w, req, proc, rc, now_ns() - t0);
	return rc;
}

void nfsrdmad_counters_wrap(struct nfsrdmad_counters *c, struct rr_svc_prog *p)
{
	enum ctr_prog g = p->prog == NFS_PROG ? CTR_NFS : CTR_MOUNT;
	struct wrapped *w = &c->w[g];

	if ((p->prog != NFS_PROG && p->prog != MOUNT_PROG) || p->vers != 3 ||
	    p->nprocs > ctr_nprocs(g) || !p->procs)
		return;
	w->c = c;
	w->g = g;
	w->orig = *p;
	for (uint32_t i = 0; i < p->nprocs; i++)
		w->table[i] = p->procs[i] ? counted : NULL;
	p->procs = w->table;
	p->arg = w;
}

int nfsrdmad_counters_create(struct nfsrdmad_counters **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void nfsrdmad_counters_destroy(struct nfsrdmad_counters *c)
{
	free(c);
}

static uint64_t get(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

void nfsrdmad_counters_read(struct nfsrdmad_counters *c, enum ctr_prog g,
			    uint32_t proc, struct ctr_proc *out)
{
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < SHARDS; k++) {
		struct shard *s = &c->shard[k];
		struct actr *a = g == CTR_NFS ? &s->nfs[proc] : &s->mount[proc];

		out->calls += get(&a->calls);
		out->rpc_errors += get(&a->rpc_errors);
		for (int i = 0; i < CTR_NSTATUS; i++)
			out->status[i] += get(&a->status[i]);
		for (int b = 0; b < CTR_BUCKETS; b++)
			out->hist[b] += get(&a->hist[b]);
	}
}

uint64_t ctr_percentile_us(const struct ctr_proc *p, double q)
{
	uint64_t n = 0, seen = 0, want;

	for (int b = 0; b < CTR_BUCKETS; b++)
		n += p->hist[b];
	if (!n)
		return 0;
	want = (uint64_t)(q * (double)n + 0.999999);
	if (want < 1)
		want = 1;
	for (uint32_t b = 0; b < CTR_BUCKETS; b++) {
		seen += p->hist[b];
		if (seen >= want)
			return ctr_bucket_le_us(b);
	}
	return ctr_bucket_le_us(CTR_BUCKETS - 1);
}
