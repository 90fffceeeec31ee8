/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Foreign conventions in one place. ibverbs returns 0 or a positive errno
 * (and some providers -1 with errno); rdmacm returns -1 and sets errno;
 * constructors of both return NULL and set errno. Everything above this
 * file sees 0 or a negative errno.
 */
#include "fabric/verbs/v.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

int rr__v_ibv_rc(int rc)
{
	if (rc == 0)
		return 0;
	if (rc < 0) /* a provider that followed the -1/errno habit */
		return errno ? -errno : -EIO;
	return -rc;
}

int rr__v_cm_rc(int rc)
{
	if (rc == 0)
		return 0;
	return errno ? -errno : -EIO;
}

int rr__v_ptr_rc(const void *p)
{
	if (p)
		return 0;
	return errno ? -errno : -ENOMEM;
}

enum rr_wc_status rr__v_wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return RR_WC_SUCCESS;
	case IBV_WC_LOC_LEN_ERR:
		return RR_WC_LOC_LEN_ERR;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
		return RR_WC_LOC_PROT_ERR;
	case IBV_WC_LOC_QP_OP_ERR:
		return RR_WC_LOC_QP_OP_ERR;
	case IBV_WC_WR_FLUSH_ERR:
		return RR_WC_WR_FLUSH_ERR;
	case IBV_WC_MW_BIND_ERR:
		return RR_WC_MW_BIND_ERR;
	case IBV_WC_REM_ACCESS_ERR:
		return RR_WC_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR:
	/* RoCE's answer to a Send without a receive: the peer refused it */
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return RR_WC_REM_OP_ERR;
	case IBV_WC_REM_INV_REQ_ERR:
		return RR_WC_REM_INV_REQ_ERR;
	default:
		return RR_WC_GENERAL_ERR;
	}
}

int rr__v_fd_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int rr__v_epoll_pair(int a, int b)
{
	struct epoll_event e = {.events = EPOLLIN};
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0)
		return -errno;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, a, &e) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, b, &e)) {
		int rc = -errno;

		close(ep);
		return rc;
	}
	return ep;
}

/* An eventfd used as a flag: counter 1 is readable, 0 is not. */
void rr__v_efd_set(int efd, bool readable)
{
	uint64_t v = 1;

	if (readable) {
		ssize_t n = write(efd, &v, sizeof(v));
		(void)n; /* EAGAIN: already readable */
	} else {
		ssize_t n = read(efd, &v, sizeof(v));
		(void)n; /* EAGAIN: already clear */
	}
}
