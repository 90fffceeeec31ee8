/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The shm provider's rings (shm_ring.h says what is shared and who may
 * write what). The client makes the memfd and produces into ring 0;
 * the server attaches it and produces into ring 1.
 */
#include "fabric/shm/shm_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define RING_MASK (SHM_RING_BYTES - 1)
#define SEALS	  (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

_Static_assert((SHM_RING_BYTES & RING_MASK) == 0, "ring size: a power of 2");
_Static_assert(sizeof(struct shm_ring_ctl) <= SHM_CTL_BYTES, "ring control");

static struct shm_ring_ctl *ctl_of(uint8_t *map, int i)
{
	return (struct shm_ring_ctl *)(map + (size_t)i * SHM_CTL_BYTES);
}

static uint8_t *data_of(uint8_t *map, int i)
{
	return map + 2 * SHM_CTL_BYTES + (size_t)i * SHM_RING_BYTES;
}

static int link_map(struct shm_link *l, int fd, int tx)
{
	void *m = mmap(NULL, SHM_LINK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);

	if (m == MAP_FAILED)
		return -errno;
	*l = (struct shm_link){.map = m};
	l->tx_ctl = ctl_of(l->map, tx);
	l->tx_data = data_of(l->map, tx);
	l->rx_ctl = ctl_of(l->map, !tx);
	l->rx_data = data_of(l->map, !tx);
	return 0;
}

int rr__shm_link_create(struct shm_link *l, int *memfd)
{
	int fd = memfd_create("rpcrdma-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int rc;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, SHM_LINK_BYTES) || fcntl(fd, F_ADD_SEALS, SEALS)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = link_map(l, fd, 0);
	if (rc) {
		close(fd);
		return rc;
	}
	/* Both consumers start asleep: the first frame each way rings. */
	atomic_store(&l->rx_ctl->sleeping, 1);
	atomic_store(&l->tx_ctl->sleeping, 1);
	*memfd = fd;
	return 0;
}

/* A peer's memfd: of our size, and unable to shrink under us. */
int rr__shm_link_fd_ok(int fd)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size != (off_t)SHM_LINK_BYTES)
		return -EINVAL;
	return 0;
}

int rr__shm_link_attach(struct shm_link *l, int fd)
{
	int rc = rr__shm_link_fd_ok(fd);

	return rc ? rc : link_map(l, fd, 1);
}

void rr__shm_link_close(struct shm_link *l)
{
	if (l->map)
		munmap(l->map, SHM_LINK_BYTES);
	*l = (struct shm_link){0};
}

static void copy_out(const uint8_t *data, uint32_t at, uint8_t *dst, size_t len)
{
	size_t off = at & RING_MASK, first = SHM_RING_BYTES - off;

	if (first > len)
		first = len;
	memcpy(dst, data + off, first);
	memcpy(dst + first, data, len - first);
}

static void copy_in(uint8_t *data, uint32_t at, const uint8_t *src, size_t len)
{
	size_t off = at & RING_MASK, first = SHM_RING_BYTES - off;

	if (first > len)
		first = len;
	memcpy(data + off, src, first);
	memcpy(data, src + first, len - first);
}

/* Bytes the peer says it has produced; -EPROTO if more than a ring. */
static int64_t ring_avail(const struct shm_link *l)
{
	uint32_t tail = atomic_load(&l->rx_ctl->tail);
	uint32_t n = tail - l->rx_head;

	return n > SHM_RING_BYTES ? -EPROTO : (int64_t)n;
}

static int64_t ring_space(const struct shm_link *l)
{
	uint32_t head = atomic_load(&l->tx_ctl->head);
	uint32_t used = l->tx_tail - head;

	return used > SHM_RING_BYTES ? -EPROTO
				     : (int64_t)(SHM_RING_BYTES - used);
}

/*
 * A Dekker flag, read after our index was stored: both sequentially
 * consistent, so either the other side saw the index or we see its flag.
 * It cleared the flag itself, or we ring.
 */
static bool take_flag(_Atomic uint32_t *f)
{
	return atomic_load(f) && atomic_exchange(f, 0);
}

/*
 * Copies what the ring holds, up to the iovecs' length. Never waits and
 * never arms the bell: 0 means empty (rr__shm_ring_watch, then look again).
 * *bell: the producer waits for the space freed, ring it.
 */
ssize_t rr__shm_ring_readv(struct shm_link *l, const struct iovec *iov, int n,
			   bool *bell)
{
	int64_t avail = ring_avail(l);
	size_t got = 0;

	*bell = false;
	if (avail <= 0)
		return (ssize_t)avail;
	for (int i = 0; i < n && avail; i++) {
		size_t take = iov[i].iov_len < (size_t)avail ? iov[i].iov_len
							     : (size_t)avail;

		copy_out(l->rx_data, l->rx_head + (uint32_t)got,
			 iov[i].iov_base, take);
		got += take;
		avail -= (int64_t)take;
	}
	l->rx_head += (uint32_t)got;
	atomic_store(&l->rx_ctl->head, l->rx_head);
	*bell = take_flag(&l->rx_ctl->blocked);
	return (ssize_t)got;
}

/*
 * Copies as much as fits; -EAGAIN when nothing does, with the producer's
 * flag set so the consumer rings once it frees space. *bell: the consumer
 * may be asleep, ring it.
 */
ssize_t rr__shm_ring_writev(struct shm_link *l, const struct iovec *iov, int n,
			    bool *bell)
{
	int64_t space = ring_space(l);
	size_t put = 0;

	*bell = false;
	if (space == 0) {
		atomic_store(&l->tx_ctl->blocked, 1);
		space = ring_space(l);
		if (space == 0)
			return -EAGAIN;
	}
	if (space < 0)
		return (ssize_t)space;
	for (int i = 0; i < n && space; i++) {
		size_t take = iov[i].iov_len < (size_t)space ? iov[i].iov_len
							     : (size_t)space;

		copy_in(l->tx_data, l->tx_tail + (uint32_t)put, iov[i].iov_base,
			take);
		put += take;
		space -= (int64_t)take;
	}
	l->tx_tail += (uint32_t)put;
	atomic_store(&l->tx_ctl->tail, l->tx_tail);
	*bell = take_flag(&l->tx_ctl->sleeping);
	return (ssize_t)put;
}

bool rr__shm_ring_ready(const struct shm_link *l)
{
	return ring_avail(l) != 0;
}

/*
 * The consumer is about to stop looking: from here on a producer rings.
 * The caller looks at the ring once more after this.
 */
void rr__shm_ring_arm(struct shm_link *l)
{
	atomic_store(&l->rx_ctl->sleeping, 1);
}

/* The consumer polls the ring itself for a while: nobody need ring. */
void rr__shm_ring_watch(struct shm_link *l)
{
	atomic_store_explicit(&l->rx_ctl->sleeping, 0, memory_order_relaxed);
}

ssize_t rr__shm_send_fd(int sock, const void *buf, size_t len, int fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} c;
	struct iovec v = {(void *)buf, len};
	struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};

	if (fd >= 0) {
		memset(&c, 0, sizeof(c));
		m.msg_control = c.b;
		m.msg_controllen = sizeof(c.b);
		c.h.cmsg_level = SOL_SOCKET;
		c.h.cmsg_type = SCM_RIGHTS;
		c.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&c.h), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void rr__shm_bell(int fd)
{
	static const uint8_t b = 1;

	/* EAGAIN: bells are pending already; EPIPE: the peer is gone. */
	(void)send(fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Empties the bell. 1 when the peer has closed, 0, or -errno. */
int rr__shm_bell_drain(int fd)
{
	uint8_t buf[256];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		if (n == 0)
			return 1;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	}
}
