/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Counters of the calls nfsrdmad answers, per NFS and MOUNT procedure:
 * calls, errors (RPC-level, and the nfsstat3/mountstat3 a result
 * carries) and a log2 histogram of the handler's run time. Kept by
 * wrapping each program's handlers, so the server library is unchanged.
 */
#ifndef NFSRDMAD_COUNTERS_H
#define NFSRDMAD_COUNTERS_H

#include <rpcrdma/oncrpc.h>

#include <stdint.h>
#include <stdio.h>

/*
 * Bucket 0: under 1 us; bucket b: [2^(b-1), 2^b) us; the last (2^30 us,
 * some 18 minutes, and up) also holds anything longer.
 */
#define CTR_BUCKETS 32

enum ctr_prog { CTR_NFS, CTR_MOUNT, CTR_NPROGS };

/* The error statuses a result may carry (NFS3ERR_x, MNT3ERR_x alike). */
#define CTR_NSTATUS 29

struct ctr_proc {
	uint64_t calls;
	uint64_t rpc_errors; /* answered other than SUCCESS: GARBAGE_ARGS... */
	uint64_t status[CTR_NSTATUS]; /* SUCCESS carrying an error status */
	uint64_t hist[CTR_BUCKETS];
};

struct nfsrdmad_counters;

int nfsrdmad_counters_create(struct nfsrdmad_counters **out);
void nfsrdmad_counters_destroy(struct nfsrdmad_counters *c);
/*
 * Makes p's handlers count around the ones it had (NFS or MOUNT v3
 * only; others are left alone). Before p is registered; c outlives it.
 */
void nfsrdmad_counters_wrap(struct nfsrdmad_counters *c, struct rr_svc_prog *p);

/* The procedures of a program: their count and names. */
uint32_t ctr_nprocs(enum ctr_prog g);
const char *ctr_prog_name(enum ctr_prog g);
const char *ctr_proc_name(enum ctr_prog g, uint32_t proc);
/* The name of status index i (0 .. CTR_NSTATUS - 1), e.g. "noent". */
const char *ctr_status_name(uint32_t i);
/* Bound of bucket b in us: its calls took less (2^b). */
uint64_t ctr_bucket_le_us(uint32_t b);
/*
 * The sums over every thread of procedure proc. Read while calls run, a
 * call in progress may show in one field and not yet in another.
 */
void nfsrdmad_counters_read(struct nfsrdmad_counters *c, enum ctr_prog g,
			    uint32_t proc, struct ctr_proc *out);
/* The bucket bound under which a fraction q of calls fell (0: none). */
uint64_t ctr_percentile_us(const struct ctr_proc *p, double q);

#endif
