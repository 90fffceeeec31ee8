/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The `shm` provider: RDMA between processes of one user on one host.
 *
 * It is the iwarp engine (src/fabric/iwarp) with three differences, each
 * switched on by iw_device.shm:
 *
 *  - the stream is a Unix stream socket in the abstract namespace, named
 *    after the port of the address the layers above use (shm_addr.c), so
 *    "provider=shm" works with the same URLs and ports as iwarp and never
 *    touches the kernel's TCP stack;
 *  - both ends check the other's credentials with SO_PEERCRED: same user
 *    or root, else the connection is closed and counted (peer_cred_refused).
 *    The client checks too, since an abstract name has no permissions and
 *    any user could bind it first (shm_cred.c);
 *  - bulk data of RDMA Reads and Writes is not sent through the socket: the
 *    side that owns the memory copies it with process_vm_readv/writev after
 *    checking the key, holding the key's lock during the copy (shm_cma.c).
 *
 * Everything else (queues, completions, keys, windows, invalidation,
 * Terminate on a refused access, flushes) is the iwarp engine's, so both
 * providers pass the same conformance suite by the same code.
 */
#ifndef RR_SHM_SHM_H
#define RR_SHM_SHM_H

#include "fabric/iwarp/iw.h"

#include <sys/types.h>

/* Payloads from this size on are copied by the memory's owner. */
#define SHM_CMA_MIN 4096

/* shm_addr.c */
int rr__shm_listen_socket(const struct sockaddr *addr, socklen_t addrlen,
			  int backlog, int *fd, struct sockaddr_storage *bound);
int rr__shm_connect_socket(const struct sockaddr *addr, socklen_t addrlen,
			   int *fd, int *failed);
void rr__shm_peer_addr(const struct sockaddr_storage *local, pid_t pid,
		       struct sockaddr_storage *out);

/* shm_cred.c */
int rr__shm_peer_check(struct iw_device *dev, int fd, pid_t *pid);

#endif
