/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the NLM tests share (nlm_fixture.c): nfsrdmad started on a
 * directory with a file "f", libtirpc clients of its TCP services, and
 * the file's handle found as a client finds it (MNT, then LOOKUP).
 * Failures are cmocka assertions.
 */
#ifndef RR_TESTS_NLM_FIXTURE_H
#define RR_TESTS_NLM_FIXTURE_H

#include "daemon.h"
#include "nfs3_prot.h"
#include "nlm4.h"

#include <limits.h>
#include <stdbool.h>
#include <rpc/rpc.h>
#include <stdint.h>

static const struct timeval tmo = {.tv_sec = 10};

struct fx {
	char top[PATH_MAX], exp[PATH_MAX], state[PATH_MAX], exports[PATH_MAX];
	struct rr_t_daemon d;
	CLIENT *nlm;
	char fh[NFS3_FHSIZE];
	u_int fh_len;
	uint16_t cb_port; /* the test's own lock manager, where it has one */
};

/* A client of prog/vers at port, its source address from (NULL: any). */
CLIENT *client(uint16_t port, u_long prog, u_long vers, const char *from);
void forget(CLIENT *c);
/* The handle of the file "f" in the export, as a client finds it. */
void find_fh(struct fx *f);
void write_file(const char *path, const char *text);

/* A lock owner: its host (caller_name), svid and owner handle. */
struct owner {
	char *host;
	int svid;
	char *oh;
};

/* The cookie every call carries. */
extern const nlm4_netobj fx_cookie;
/* o's lock of [off, off + len) on f's file "f". */
nlm4_lock fx_lock(const struct fx *f, const struct owner *o, uint64_t off,
		  uint64_t len);
/* One NLM call on f->nlm whose result is an nlm4_res: its status. */
nlm4_stats fx_res(struct fx *f, u_long proc, xdrproc_t xa, void *a);
/* LOCK (exclusive; block: wait) and UNLOCK of o's range: the status. */
nlm4_stats fx_nlm_lock(struct fx *f, const struct owner *o, uint64_t off,
		       uint64_t len, bool block);
nlm4_stats fx_nlm_unlock(struct fx *f, const struct owner *o, uint64_t off,
			 uint64_t len);
/*
 * RPCBPROC_SET of prog/vers on tcp at 127.0.0.1:port (set), or UNSET
 * on every netid, over rpcbind's local socket as nfsrdmad registers
 * (libtirpc's pmap_set leaks): whether rpcbind agreed.
 */
bool rpcb_local(bool set, u_long prog, u_long vers, uint16_t port);

#endif
