/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* NLM's GRANTED callback to a client host's lock manager (nlm_cb.c). */
#ifndef RR_NFS3_SERVER_NLM_CB_H
#define RR_NFS3_SERVER_NLM_CB_H

#include "nlm4.h"

/*
 * Tells host's lock manager (its rpcbind names the port) that the lock
 * a is granted: 0 when it took it, -ECANCELED when it answered that it
 * no longer wants it, else the error that kept the call from it.
 */
int rr__nfsd_nlm_granted(const char *host, const nlm4_testargs *a);

#endif
