/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One READ or WRITE answered from its completion, for the FUSE adapter:
 * a FUSE thread starts it and goes back to the kernel for the next
 * request, and whichever thread completes the call
 * (rr_rpc_clnt_progress) hands the result to done. A synchronous call
 * would keep the FUSE thread asleep until a driving thread woke it: a
 * thread switch per call, on a machine where one costs tens of
 * microseconds.
 *
 * What the pipelined pread and pwrite do for a call, this does too: a
 * short transfer (without EOF) is sent again for the rest, from the
 * completion; a JUKEBOX answer parks the call (done is told
 * NFSC_ACALL_PARKED, and the owner calls rr__nfsc_acall_resend once
 * again_ms has come); a WRITE's reply is noted for the write-verifier
 * story (commit.c), and its failure kept for fsync and close to say.
 *
 * The owner keeps the struct and the buffer until done has said
 * anything but NFSC_ACALL_PARKED; done runs exactly once per start or
 * resend, without any of the client's locks held.
 */
#ifndef RR_NFS3_CLIENT_ACALL_H
#define RR_NFS3_CLIENT_ACALL_H

#include "nfsc.h"

#include <pthread.h>

/* A READ3res beyond its data, when the data comes inline (TCP). */
#define NFSC_ACALL_SLACK  1024
#define NFSC_ACALL_PARKED 1

struct nfsc_acall;
/*
 * rc 0: got bytes moved (a READ's at data, fewer than asked only at the
 * file's end; a WRITE's all of them); NFSC_ACALL_PARKED; or -errno
 * (-ECANCELED once cancelled).
 */
typedef void (*nfsc_acall_fn)(struct nfsc_acall *a, int rc, const char *data,
			      uint32_t got);

struct nfsc_acall {
	nfsc_acall_fn done; /* the owner's, set before the first start */
	/* one call's */
	char *buf; /* a READ's room, rtmax + NFSC_ACALL_SLACK; a WRITE's bytes
		    */
	bool write;
	struct rr_nfs_file *f;
	struct rr_call call;
	struct rr_cred cred; /* the starting thread's (rr__nfsc_cred) */
	uint64_t off;
	uint32_t len, got; /* asked for, and moved so far */
	uint64_t again_ms; /* parked: when it may go again */
	struct nfsc_jukebox jb;
	char args[256];
	char hdr[512]; /* the reply's XDR when the data comes apart */
	/*
	 * A short transfer is sent again from the completing thread, which
	 * rewrites `call`, while the owner's thread may be cancelling it
	 * (rr_rpc_clnt_cancel reads the call). Neither waits on the other
	 * long: a continuation waits out a cancel in progress (unless it
	 * runs inside that very cancel, as its callback), and a cancel finds
	 * a continuation being sent busy; the owner cancels again later.
	 */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int issuing;
	bool cancelling;
	pthread_t canceller;
};

/* Once before the first start; fini after the last done. */
void rr__nfsc_acall_init(struct nfsc_acall *a, nfsc_acall_fn done);
void rr__nfsc_acall_fini(struct nfsc_acall *a);

/* -errno when it could not go (done will not run). */
int rr__nfsc_aread_start(struct nfsc_acall *a, struct rr_nfs_file *f, char *buf,
			 uint64_t off, uint32_t len);
/* An UNSTABLE WRITE of len bytes at data, which stay until done. */
int rr__nfsc_awrite_start(struct nfsc_acall *a, struct rr_nfs_file *f,
			  const void *data, uint64_t off, uint32_t len);
int rr__nfsc_acall_resend(struct nfsc_acall *a);
/*
 * Ends a call in flight with -ECANCELED (rr_rpc_clnt_cancel); -EBUSY while
 * its continuation is being sent (cancel again later).
 */
int rr__nfsc_acall_cancel(struct nfsc_acall *a);

#endif
