/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Who is at the other end. SO_PEERCRED gives the credentials the peer had
 * when it called connect() or listen(), from the kernel: a peer cannot lie
 * about them. Only this user and root may attach; process_vm_readv/writev
 * between the two needs the same relation anyway (ptrace access).
 */
#include "fabric/shm/shm.h"

#include "base/log.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

int rr__shm_peer_check(struct iw_device *dev, int fd, pid_t *pid)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len))
		return -errno;
	if (len != sizeof(uc))
		return -EPROTO;
	if (uc.uid != geteuid() && uc.uid != 0) {
		IW_COUNT(dev, peer_cred_refused);
		rr_info_rl("shm: refused a peer of uid %u (pid %d)",
			   (unsigned)uc.uid, (int)uc.pid);
		return -EACCES;
	}
	*pid = uc.pid;
	return 0;
}
