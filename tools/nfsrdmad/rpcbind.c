/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Registration with rpcbind, so clients that ask rpcbind find NFS,
 * MOUNT, NLM (nlockmgr version 4) and NSM (status version 1) on TCP and NFS on
 * RPC-over-RDMA: rpcbind version 4 SETs of netid "tcp", and "rdma" with the
 * RDMA listener's universal address, as Linux's nfsd registers its RDMA port
 * (RFC 5665 names the netid; portmap version 2 has no protocol number for it,
 * so `rpcinfo` shows it and `rpcinfo -p` does not). They go over rpcbind's
 * local socket, which tells rpcbind who we are (libtirpc's pmap_set would too,
 * but leaks the address it converts on every call). Only when that socket
 * takes the connection at once: without an rpcbind, libtirpc's own lookup
 * would retry for many seconds before giving up, and serving goes on
 * regardless. The socket, not 127.0.0.1:111, is what is probed: an rpcbind
 * may listen on chosen addresses only (one per host on a machine that acts
 * as several). We listen on IPv4 only, so there is no "rdma6" to register.
 */
#include "nfsrdmad.h"

#include <rpc/rpc.h>
#include <rpc/rpcb_prot.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define NFS_PROG   100003
#define MOUNT_PROG 100005
#define NLM_PROG   100021
#define NSM_PROG   100024

/* A client of rpcbind version 4 on its local socket, or NULL. */
static CLIENT *local_rpcbind(void)
{
	struct sockaddr_un sun = {.sun_family = AF_LOCAL};
	struct netbuf nb = {
		.len = sizeof(sun), .maxlen = sizeof(sun), .buf = &sun};
	int fd = socket(AF_LOCAL, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CLIENT *c;

	if (fd < 0)
		return NULL;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", _PATH_RPCBINDSOCK);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		close(fd);
		return NULL;
	}
	c = clnt_vc_create(fd, &nb, RPCBPROG, RPCBVERS4, 0, 0);
	if (!c) {
		close(fd);
		return NULL;
	}
	clnt_control(c, CLSET_FD_CLOSE, NULL);
	return c;
}

/*
 * RPCBPROC_SET (set) or UNSET of prog/vers on netid at addr:port; UNSET
 * with netid "" takes every netid's entry of prog/vers.
 */
static bool rb_call(CLIENT *c, bool set, uint32_t prog, uint32_t vers,
		    const char *netid, const char *addr, uint16_t port)
{
	char uaddr[64], owner[] = "nfsrdmad";
	struct timeval tmo = {.tv_sec = 2};
	rpcb parms = {.r_prog = prog,
		      .r_vers = vers,
		      .r_netid = (char *)netid,
		      .r_addr = uaddr,
		      .r_owner = owner};
	bool_t ok = FALSE;

	/* a universal address: the IPv4 address, then the port's 2 bytes */
	snprintf(uaddr, sizeof(uaddr), "%s.%u.%u", addr, port >> 8,
		 port & 0xff);
	if (clnt_call(c, set ? RPCBPROC_SET : RPCBPROC_UNSET,
		      (xdrproc_t)xdr_rpcb, (char *)&parms, (xdrproc_t)xdr_bool,
		      (char *)&ok, tmo) != RPC_SUCCESS)
		ok = FALSE;
	return ok;
}

static void rb_set(CLIENT *c, const struct nfsrdmad_rpcb *e, const char *addr)
{
	const char *name = e->prog == NFS_PROG	 ? "NFS"
			   : e->prog == NLM_PROG ? "NLM"
			   : e->prog == NSM_PROG ? "NSM"
						 : "MOUNT";

	if (!e->port)
		return; /* that listener is off */
	if (rb_call(c, true, e->prog, e->vers, e->netid, addr, e->port))
		fprintf(stderr,
			"nfsrdmad: registered %s on %s %s:%u with rpcbind\n",
			name, e->netid, addr, e->port);
	else
		fprintf(stderr, "nfsrdmad: rpcbind refused %s on %s\n", name,
			e->netid);
}

/* Whether an entry before the i-th names its prog/vers too. */
static bool seen_before(const struct nfsrdmad_ports *p, int i)
{
	for (int j = 0; j < i; j++)
		if (p->e[j].prog == p->e[i].prog &&
		    p->e[j].vers == p->e[i].vers)
			return true;
	return false;
}

/* UNSET of every prog/vers the entries name, on every netid. */
static void rb_unset_all(CLIENT *c, const struct nfsrdmad_ports *p)
{
	for (int i = 0; i < p->n; i++)
		if (!seen_before(p, i))
			rb_call(c, false, p->e[i].prog, p->e[i].vers, "",
				p->addr, 0);
}

static CLIENT *reachable_rpcbind(void)
{
	CLIENT *c = local_rpcbind();

	if (!c)
		fprintf(stderr, "nfsrdmad: no rpcbind on %s, not registered\n",
			_PATH_RPCBINDSOCK);
	return c;
}

void nfsrdmad_rpcbind_set(const struct nfsrdmad_ports *p)
{
	CLIENT *c = reachable_rpcbind();

	if (!c)
		return;
	/* what an earlier run left behind, on every netid */
	rb_call(c, false, NFS_PROG, 3, "", p->addr, 0);
	rb_call(c, false, MOUNT_PROG, 3, "", p->addr, 0);
	rb_call(c, false, NLM_PROG, 4, "", p->addr, 0);
	/* only when ours replaces it: another statd may be the host's */
	for (int i = 0; i < p->n; i++)
		if (p->e[i].prog == NSM_PROG)
			rb_call(c, false, NSM_PROG, 1, "", p->addr, 0);
	for (int i = 0; i < p->n; i++)
		rb_set(c, &p->e[i], p->addr);
	clnt_destroy(c);
}

void nfsrdmad_rpcbind_unset(const struct nfsrdmad_ports *p)
{
	CLIENT *c = local_rpcbind();

	if (!c)
		return;
	rb_unset_all(c, p);
	clnt_destroy(c);
}
