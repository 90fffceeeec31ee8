/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The exports table (exports.c parses it, exporter.c serves it): which
 * directories are served, and to which clients with what rights. Every
 * size is bounded here, never by the file.
 */
#ifndef RR_NFSD_EXPORTS_H
#define RR_NFSD_EXPORTS_H

#include <rpcrdma/nfs3_server.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#define NFSD_EXPORTS_MAX 256  /* exports in one table */
#define NFSD_RULES_MAX	 64   /* client rules of one export */
#define NFSD_LINE_MAX	 4096 /* one logical line, continuations joined */
#define NFSD_HOST_ADDRS	 8    /* addresses one host name may stand for */

enum nfsd_squash { NFSD_SQUASH_NONE, NFSD_SQUASH_ROOT, NFSD_SQUASH_ALL };

/* What one client may do in one export. */
struct nfsd_policy {
	bool ro;
	uint8_t squash; /* enum nfsd_squash */
	uint32_t anon_uid, anon_gid;
};

/* One client rule: "*", an address or network, or a host's addresses. */
struct nfsd_rule {
	char *spec; /* as written: the group MOUNT's EXPORT names */
	int family; /* AF_INET, AF_INET6, or 0: every client */
	uint8_t addr[16];
	unsigned prefix; /* bits of addr that must match */
	struct nfsd_policy pol;
};

/* Where an export's files live: the backend and its settings. */
enum nfsd_be_kind { NFSD_BE_LOCAL, NFSD_BE_CEPHFS };

struct nfsd_be_conf {
	uint8_t kind; /* enum nfsd_be_kind */
	/* CephFS (NULL: libcephfs' default): its ceph.conf, client id (as
	 * in client.ID), file system name, and the directory exported */
	char *ceph_conf, *ceph_id, *ceph_fs, *ceph_path;
};

struct nfsd_export {
	char *path; /* what clients mount (a local export: the directory) */
	struct nfsd_be_conf be;
	struct nfsd_rule *rules;
	uint32_t nrules;
	uint32_t member; /* exporter.c: the server that serves it */
};

struct rr_nfs3_exports {
	struct nfsd_export *ex;
	uint32_t n;
};

/*
 * Parses f (name: what error messages call it). 0, or -EINVAL (syntax,
 * with "name:line: what" in err), -ENOMEM, -EIO.
 */
int rr__nfsd_exports_parse(FILE *f, const char *name,
			   struct rr_nfs3_exports **out, char *err,
			   size_t errlen);
/* The rule that admits peer (the most specific one), or NULL. */
const struct nfsd_rule *rr__nfsd_export_match(const struct nfsd_export *e,
					      const struct sockaddr *peer);

#endif
