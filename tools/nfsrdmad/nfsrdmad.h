/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* nfsrdmad: options, the transports it runs, rpcbind registration. */
#ifndef NFSRDMAD_H
#define NFSRDMAD_H

#include <rpcrdma/nfs3_server.h>

#include <stdbool.h>
#include <stdint.h>

struct nfsrdmad_opts {
	const char *export_path;  /* --export: one export to everyone */
	const char *exports_file; /* --exports: what it lists */
	const char *state_dir;
	/* --control: NULL: state_dir/control; "off": none */
	const char *control_path;
	const char *address; /* IPv4 to bind, default 0.0.0.0 */
	const char *provider;
	/* 0: ephemeral, -1: off */
	int rdma_port, tcp_port, mount_port, nlm_port, nsm_port;
	uint32_t grace_s;	     /* NLM's grace period after start */
	uint32_t nlm_locks_per_host; /* 0: the library's default */
	uint32_t threads;
	uint32_t bulk_bufs; /* 0: rr_svc_opts' default */
	/* TCP admission (rr_tcp_svc_opts); 0: the default */
	uint32_t max_conns, max_per_host;
	int idle_s; /* < 0: never */
	/* after SIGTERM, how long calls in flight may hold the exit; 0: all */
	uint32_t stop_timeout_s;
	/* handle resolution (rr_nfs3_server_opts); 0: the default */
	uint32_t handle_cache_mb, walk_dirs_per_s, walk_dir_us;
	bool read_only, root_squash;
	bool count_allocs; /* RPCRDMA_COUNT_ALLOCS=1: stats list them */
};

/* Serves until SIGTERM or SIGINT; returns the exit status. */
int nfsrdmad_serve(const struct nfsrdmad_opts *o);

/*
 * What rpcbind is told: prog/vers is served on netid (the listener's
 * transport names it, rr_rpc_svc_netid) at the listeners' address and
 * port. Listeners that are off have no entry.
 */
struct nfsrdmad_rpcb {
	uint32_t prog, vers;
	const char *netid;
	uint16_t port;
};

struct nfsrdmad_ports {
	const char *addr; /* IPv4, dotted */
	struct nfsrdmad_rpcb e[7];
	int n;
};
/* Registers each with rpcbind, when one answers on 127.0.0.1:111. */
void nfsrdmad_rpcbind_set(const struct nfsrdmad_ports *p);
void nfsrdmad_rpcbind_unset(const struct nfsrdmad_ports *p);

#endif
