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
 *  - once connected, the frames travel through two rings in one sealed
 *    memfd the client made and passed with its MPA request, and the
 *    socket only rings the other side's bell when it may be asleep
 *    (shm_ring.c);
 *  - bulk data of RDMA Reads and Writes is not sent through the rings: the
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

/*
 * One-sided operations. The side that owns the memory copies, never the
 * initiator: it checks key, protection domain, bounds and rights, and holds
 * the key's lock during process_vm_readv/writev, so a key invalidated
 * (LOCAL_INV, Send With Invalidate, rr_mw_fence) waits for a copy in
 * progress and refuses every later one. The initiator's own memory was
 * checked against its lkey when it posted.
 *
 *  - RDMA Read: the Read Request travels as on iwarp; the target copies
 *    its source into the initiator's sink (process_vm_writev) and answers
 *    with an empty Read Response whose offset is the end of the sink.
 *  - RDMA Write: sent as a Read Request with SHM_PULL in the sink STag
 *    (STags use 28 bits): the target copies the initiator's source into
 *    its memory (process_vm_readv), checked for remote write, and answers
 *    the same way; the Write completes on that answer, as a Read does, so
 *    the source is never changed before it is copied. Pulls take ORD/IRD
 *    slots like Reads; a QP without ORD, a gather list or a small Write
 *    goes through the socket as on iwarp. While a pull is out, only
 *    Reads and further pulls are sent: a Send or local operation posted
 *    after it waits, so that send-queue completions keep the order of
 *    posting (a Write's completion before the Send's that follows it).
 *
 * One copy and one round trip of two small frames per operation. The
 * other design, the initiator copying after the target has said yes, needs
 * a second message to release the key after the copy; without it, an
 * invalidation could complete while the initiator still writes.
 */
/*
 * Below this, the socket's two copies cost less than a pull's round trip
 * and the Sends it holds back (NFS 4 KiB random reads ran at 0.17x TCP
 * with 4 KiB here, as fast as iwarp with 64 KiB).
 */
#define SHM_CMA_MIN (64 * 1024)
#define SHM_PULL    0x80000000u

/* shm_addr.c */
int rr__shm_listen_socket(const struct sockaddr *addr, socklen_t addrlen,
			  int backlog, int *fd, struct sockaddr_storage *bound);
int rr__shm_connect_socket(const struct sockaddr *addr, socklen_t addrlen,
			   int *fd, int *failed);
void rr__shm_peer_addr(const struct sockaddr_storage *local,
		       struct sockaddr_storage *out);

/* shm_cma.c */
bool rr__shm_pull_ok(const struct iw_qp *qp, const struct iw_wqe *w);
int rr__shm_serve(struct iw_qp *qp, const struct iw_read_req *rr, bool pull);

/* shm_cred.c */
int rr__shm_peer_check(struct iw_device *dev, int fd, pid_t *pid);

#endif
