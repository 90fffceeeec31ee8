/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The cluster's own limit for ceph-bench: the same reads and writes as
 * "nfsrdma bench" (1 MiB sequential or 4 KiB random, over the first
 * 64 MiB of one file, DEPTH at once), made by a libcephfs client in this
 * process with no NFS server in between. Whatever an NFS gateway does,
 * it reaches the OSDs through such a client, so no gateway's figure can
 * be above this one for long: it tells a gateway's cost apart from the
 * cluster's.
 *
 * usage: ceph_limit CEPH_CONF PATH read|write|randread BS DEPTH SECONDS
 *   (PATH from the file system's root; write creates or overwrites it,
 *   read and randread need it at least 64 MiB or BS long)
 * Prints "MBps N ops_per_s N"; exit 0, or 1 saying what failed.
 */
#define _FILE_OFFSET_BITS 64 /* libcephfs.h insists */
#include <cephfs/libcephfs.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REGION	  (64ull << 20)
#define MAX_DEPTH 64

struct run {
	struct ceph_mount_info *cm;
	int fd;
	bool write, rnd;
	uint64_t bs, span, end_ns;
	atomic_uint_fast64_t next, ops;
	atomic_int err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The offset of the n-th call: in order, or scattered as a random read. */
static uint64_t offset_of(const struct run *r, uint64_t n)
{
	uint64_t slots = r->span / r->bs;

	if (r->rnd)
		n = (n * 0x9e3779b97f4a7c15ull) >> 17;
	return (n % slots) * r->bs;
}

static void *worker(void *arg)
{
	struct run *r = arg;
	char *buf = malloc(r->bs);
	int64_t rc;

	if (!buf) {
		atomic_store(&r->err, -ENOMEM);
		return NULL;
	}
	memset(buf, 0x5a, r->bs);
	while (now_ns() < r->end_ns && !atomic_load(&r->err)) {
		uint64_t off = offset_of(r, atomic_fetch_add(&r->next, 1));

		rc = r->write ? ceph_write(r->cm, r->fd, buf, (int64_t)r->bs,
					   (int64_t)off)
			      : ceph_read(r->cm, r->fd, buf, (int64_t)r->bs,
					  (int64_t)off);
		if (rc != (int64_t)r->bs) {
			atomic_store(&r->err, rc < 0 ? (int)rc : -EIO);
			break;
		}
		atomic_fetch_add(&r->ops, 1);
	}
	free(buf);
	return NULL;
}

static int open_file(struct run *r, const char *conf, const char *path)
{
	struct ceph_statx stx;
	int rc;

	rc = ceph_create(&r->cm, NULL);
	if (!rc)
		rc = ceph_conf_read_file(r->cm, conf);
	if (!rc)
		rc = ceph_mount(r->cm, "/");
	if (rc)
		return rc;
	r->fd = ceph_open(r->cm, path, r->write ? O_WRONLY | O_CREAT : O_RDONLY,
			  0644);
	if (r->fd < 0)
		return r->fd;
	r->span = REGION;
	if (!r->write) {
		rc = ceph_fstatx(r->cm, r->fd, &stx, CEPH_STATX_SIZE, 0);
		if (rc)
			return rc;
		if (stx.stx_size < r->span)
			r->span = stx.stx_size;
	}
	return r->span < r->bs ? -EINVAL : 0;
}

/*
 * DEPTH threads for SECONDS. A write's fsync is inside the clock, as
 * nfsrdma bench --fsync's COMMIT is: libcephfs answers a write from its
 * cache and sends it on later, so without it this is the cache's rate.
 */
static int measure(struct run *r, unsigned depth, double secs)
{
	pthread_t t[MAX_DEPTH];
	uint64_t t0 = now_ns();
	unsigned i, n = 0;
	int rc = 0;

	r->end_ns = t0 + (uint64_t)(secs * 1e9);
	for (i = 0; i < depth; i++)
		if (!pthread_create(&t[i], NULL, worker, r))
			n++;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (n < depth)
		rc = -EAGAIN;
	if (!rc)
		rc = atomic_load(&r->err);
	if (!rc && r->write)
		rc = ceph_fsync(r->cm, r->fd, 0);
	double s = (double)(now_ns() - t0) / 1e9;
	uint64_t ops = atomic_load(&r->ops);

	if (!rc)
		printf("MBps %.1f ops_per_s %.0f\n",
		       (double)(ops * r->bs) / 1e6 / s, (double)ops / s);
	return rc;
}

int main(int argc, char **argv)
{
	struct run r = {.fd = -1};
	unsigned depth;
	int rc;

	if (argc != 7) {
		fprintf(stderr, "usage: ceph_limit CEPH_CONF PATH "
				"read|write|randread BS DEPTH SECONDS\n");
		return 1;
	}
	r.write = !strcmp(argv[3], "write");
	r.rnd = !strcmp(argv[3], "randread");
	r.bs = strtoull(argv[4], NULL, 10);
	depth = (unsigned)strtoul(argv[5], NULL, 10);
	if (!r.bs || r.bs > REGION || !depth || depth > MAX_DEPTH ||
	    (!r.write && !r.rnd && strcmp(argv[3], "read"))) {
		fprintf(stderr, "ceph_limit: bad operation, size or depth\n");
		return 1;
	}
	rc = open_file(&r, argv[1], argv[2]);
	if (!rc)
		rc = measure(&r, depth, atof(argv[6]));
	if (rc)
		fprintf(stderr, "ceph_limit: %s %s: %s\n", argv[3], argv[2],
			strerror(-rc));
	if (r.fd >= 0)
		ceph_close(r.cm, r.fd);
	if (r.cm)
		ceph_shutdown(r.cm);
	return rc ? 1 : 0;
}
