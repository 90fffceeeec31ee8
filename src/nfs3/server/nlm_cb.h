/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Calls to client hosts (nlm_cb.c): NLM's GRANTED callback to a host's
 * lock manager, NSM's SM_NOTIFY to its status monitor.
 */
#ifndef RR_NFS3_SERVER_NLM_CB_H
#define RR_NFS3_SERVER_NLM_CB_H

#include "nlm4.h"
#include "nsm1.h"

/*
 * Tells host's lock manager (its rpcbind names the port) that the lock
 * a is granted, calling from source (our address the lock was asked at;
 * NULL: as routed): 0 when it took it, -ECANCELED when it answered that
 * it no longer wants it, else the error that kept the call from it.
 */
int rr__nfsd_nlm_granted(const char *host, const char *source,
			 const nlm4_testargs *a);

/*
 * Tells host's status monitor (its rpcbind names the port) that we,
 * my_name, restarted and are at state now: 0 once it answered.
 */
int rr__nfsd_nsm_tell(const char *host, const char *my_name, int32_t state);

#endif
