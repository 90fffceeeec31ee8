/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One READ answered from its completion, for the FUSE adapter: a FUSE
 * thread starts it and goes back to the kernel for the next request, and
 * whichever thread completes the call (rr_rpc_clnt_progress) hands the
 * bytes to done, which answers the kernel. A synchronous pread would keep
 * the FUSE thread asleep until a driving thread woke it: a thread switch
 * per READ, on a machine where one costs tens of microseconds.
 *
 * What the pipelined pread does for a call, this does too: a short READ
 * without EOF is sent again for the rest, from the completion; a JUKEBOX
 * answer parks the READ (done is told NFSC_AREAD_PARKED, and the owner
 * calls rr__nfsc_aread_resend once again_ms has come).
 *
 * The owner keeps the struct, and its buffer, until done has said
 * anything but NFSC_AREAD_PARKED; done runs exactly once per start or
 * resend, without any of the client's locks held, and may answer, free
 * nothing of the client's, and start nothing but another READ.
 */
#ifndef RR_NFS3_CLIENT_AREAD_H
#define RR_NFS3_CLIENT_AREAD_H

#include "nfsc.h"

/* A READ3res beyond its data, when the data comes inline (TCP). */
#define NFSC_AREAD_SLACK  1024
#define NFSC_AREAD_PARKED 1

struct nfsc_aread;
/*
 * rc 0: got bytes at data (fewer than asked only at the file's end);
 * NFSC_AREAD_PARKED; or -errno (-ECANCELED once cancelled).
 */
typedef void (*nfsc_aread_fn)(struct nfsc_aread *a, int rc, const char *data,
			      uint32_t got);

struct nfsc_aread {
	/* the owner's, set before the first start */
	char *buf; /* rtmax + NFSC_AREAD_SLACK bytes */
	nfsc_aread_fn done;
	/* one READ's */
	struct rr_nfs_file *f;
	struct rr_call call;
	struct rr_cred cred; /* the starting thread's (rr__nfsc_cred) */
	uint64_t off;
	uint32_t len, got; /* asked for, and received so far */
	uint64_t again_ms; /* parked: when it may go again */
	struct nfsc_jukebox jb;
	char args[256];
	char hdr[512]; /* the reply's XDR when the data comes apart */
};

/* -errno when it could not go (done will not run). */
int rr__nfsc_aread_start(struct nfsc_aread *a, struct rr_nfs_file *f,
			 uint64_t off, uint32_t len);
int rr__nfsc_aread_resend(struct nfsc_aread *a);
/* Ends a READ in flight with -ECANCELED (rr_rpc_clnt_cancel). */
int rr__nfsc_aread_cancel(struct nfsc_aread *a);

#endif
