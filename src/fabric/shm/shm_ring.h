/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef RR_SHM_SHM_RING_H
#define RR_SHM_SHM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/*
 * The rings (shm_ring.c). One memfd per connection holds two
 * single-producer single-consumer byte rings, one each way, carrying the
 * same FPDU stream the iwarp engine would write to TCP.
 *
 * Everything in the mapping is the peer's to write at any moment, so:
 * each side keeps its own index privately and only publishes it; the
 * peer's index is checked on every read (a ring never holds more than its
 * size, else the connection fails, counted as shm_ring_refused); bytes
 * are copied out once and parsed from the copy, never in place; and the
 * memfd must be sealed against shrinking, so the peer cannot make our
 * accesses fault.
 *
 * Wake-ups. A consumer that finds its ring empty sets `sleeping`, then
 * looks again; a producer that has published sets nothing and looks at
 * `sleeping`: if set, it clears it and writes one byte to the socket, the
 * other side's bell, which its poll()/epoll sees as input. Symmetrically,
 * a producer finding no space sets `blocked`, and the consumer that frees
 * space rings. Both are Dekker pairs (a sequentially consistent store, then
 * load), so a wake-up is never lost; a side that polls its ring (rr_cq_wait
 * spins a while before sleeping) keeps `sleeping` clear and is sent no byte at
 * all.
 */
#define SHM_RING_BYTES (256u * 1024)
#define SHM_CTL_BYTES  4096u
#define SHM_LINK_BYTES (2 * (SHM_CTL_BYTES + SHM_RING_BYTES))

struct shm_ring_ctl {
	_Alignas(64) _Atomic uint32_t tail;	/* the producer's */
	_Alignas(64) _Atomic uint32_t head;	/* the consumer's */
	_Alignas(64) _Atomic uint32_t sleeping; /* consumer: ring my bell */
	_Alignas(64) _Atomic uint32_t blocked;	/* producer: ring mine */
};

struct shm_link {
	uint8_t *map; /* NULL: not connected through rings */
	struct shm_ring_ctl *rx_ctl, *tx_ctl;
	uint8_t *rx_data, *tx_data;
	uint32_t rx_head; /* ours, never read back from the mapping */
	uint32_t tx_tail; /* ours, likewise */
};

/* shm_ring.c */
int rr__shm_link_create(struct shm_link *l, int *memfd);
int rr__shm_link_fd_ok(int fd);
int rr__shm_link_attach(struct shm_link *l, int fd);
void rr__shm_link_close(struct shm_link *l);
ssize_t rr__shm_ring_readv(struct shm_link *l, const struct iovec *iov, int n,
			   bool *bell);
ssize_t rr__shm_ring_writev(struct shm_link *l, const struct iovec *iov, int n,
			    bool *bell);
bool rr__shm_ring_ready(const struct shm_link *l);
void rr__shm_ring_arm(struct shm_link *l);
void rr__shm_ring_watch(struct shm_link *l);
/* sendmsg of buf with fd (SCM_RIGHTS) along, unless fd < 0; -1/errno. */
ssize_t rr__shm_send_fd(int sock, const void *buf, size_t len, int fd);
void rr__shm_bell(int fd);
int rr__shm_bell_drain(int fd);

#endif
