/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ONC RPC (RFC 5531) server over UDP, for the small programs whose peers
 * speak only datagrams: nfs-utils' sm-notify tells a server of a client's
 * reboot by an NSM SM_NOTIFY over UDP, and nothing else. One call a
 * datagram, one reply a datagram, answered in the loop's thread in the
 * order they came: for calls that are few and quick, not for NFS.
 *
 * The view returned is the transport-neutral one of <rpcrdma/oncrpc.h>:
 * rr_rpc_svc_register, _port, _run, _stop, _stats and _destroy drive it.
 * A datagram that is not a call is dropped and counted (bad_headers); a
 * reply that does not fit one datagram is answered SYSTEM_ERR; a reply the
 * socket would not take counts as conn_lost (the client sends again).
 */
#ifndef RPCRDMA_RPC_UDP_H
#define RPCRDMA_RPC_UDP_H

#include <rpcrdma/oncrpc.h>

#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports what this header declares (-fvisibility=hidden). */
#pragma GCC visibility push(default)

/* Binds addr (port 0: any free one). 0 or a negative errno. */
int rr_udp_svc_create(const struct sockaddr *addr, socklen_t len,
		      struct rr_rpc_svc **out);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
