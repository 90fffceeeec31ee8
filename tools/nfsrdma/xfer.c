// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * get and put: whole files between the server and the local disk, in
 * pieces of depth x the mount's READ/WRITE size so that every pread or
 * pwrite keeps the pipeline full.
 *
 * --verify compares three CRC32Cs: the one of the bytes as they went
 * through, and the ones of both ends read back afterwards (the local file
 * from disk, the remote one from the server), so a corruption on either
 * side, or in flight, shows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/crc32c.h"
#include "nfsrdma.h"

#define MIN_BUF (1u << 20)
#define MAX_BUF (4u << 20)

struct xfer {
	struct cli *c;
	struct rr_nfs *n;
	struct rr_nfs_file *f;
	int fd;
	const char *url, *local;
	char *local_path; /* the local file's name, after a directory */
	char *remote;	  /* the remote path, after a directory */
	uint8_t *buf;
	size_t cap;
	uint32_t crc;
	uint64_t bytes;
};

/*
 * Each pread/pwrite pipelines the READs/WRITEs that fill the buffer, then
 * the data is written out and checksummed. Past a few MiB the buffer
 * falls out of the CPU caches between those passes, which costs more than
 * the deeper pipeline gains (measured: 4 MiB ~800 MiB/s, 16 MiB ~400).
 */
static size_t buf_size(const struct xfer *x, uint32_t io)
{
	size_t depth = x->c->o.depth ? x->c->o.depth : 16;
	size_t sz = depth * io;

	if (sz > MAX_BUF)
		sz = MAX_BUF;
	return sz < MIN_BUF ? MIN_BUF : sz;
}

static int alloc_buf(struct xfer *x, uint32_t io)
{
	x->cap = buf_size(x, io);
	if (posix_memalign((void **)&x->buf, 4096, x->cap))
		return -ENOMEM;
	return 0;
}

static char *join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	const char *base = strrchr(name, '/');
	char *p;

	base = base ? base + 1 : name;
	p = malloc(dl + strlen(base) + 2);
	if (p)
		sprintf(p, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/",
			base);
	return p;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads up to len bytes at off; fewer only at end of file. */
static ssize_t read_full(int fd, uint8_t *p, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, p + got, len - got, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* CRC32C of the local file, read back from disk. */
static int crc_local(struct xfer *x, uint32_t *crc)
{
	uint32_t c = RR_CRC32C_INIT;
	off_t off = 0;
	ssize_t n;

	while ((n = read_full(x->fd, x->buf, x->cap, off)) > 0) {
		c = rr_crc32c_update(c, x->buf, (size_t)n);
		off += n;
	}
	if (n < 0)
		return cli_fail(x->local_path, (int)n);
	*crc = rr_crc32c_final(c);
	return 0;
}

/* CRC32C of the remote file, read back from the server. */
static int crc_remote(struct xfer *x, uint32_t *crc)
{
	struct rr_nfs_file *f;
	uint32_t c = RR_CRC32C_INIT;
	uint64_t off = 0;
	ssize_t n;
	int rc = rr_nfs_open(x->n, x->remote, O_RDONLY, 0, &f);

	if (rc)
		return cli_fail(x->url, rc);
	while ((n = rr_nfs_pread(f, x->buf, x->cap, off)) > 0) {
		c = rr_crc32c_update(c, x->buf, (size_t)n);
		off += (uint64_t)n;
	}
	rr_nfs_close(f);
	if (n < 0)
		return cli_fail(x->url, (int)n);
	*crc = rr_crc32c_final(c);
	return 0;
}

static int verify(struct xfer *x)
{
	uint32_t lcrc = 0, rcrc = 0;

	if (crc_local(x, &lcrc) || crc_remote(x, &rcrc))
		return 1;
	if (lcrc != x->crc || rcrc != x->crc)
		return cli_failf("verify: checksums differ: transfer %08x, "
				 "local %08x, remote %08x",
				 x->crc, lcrc, rcrc);
	if (!x->c->quiet)
		fprintf(stderr, "verify: ok, crc32c %08x on both ends\n",
			x->crc);
	return 0;
}

/* ------------------------------------------------------------------ get */

static int get_loop(struct xfer *x, struct progress *p)
{
	uint64_t off = 0;
	ssize_t n;
	int rc;

	x->crc = RR_CRC32C_INIT;
	while ((n = rr_nfs_pread(x->f, x->buf, x->cap, off)) > 0) {
		rc = write_all(x->fd, x->buf, (size_t)n);
		if (rc)
			return cli_fail(x->local_path, rc);
		if (x->c->verify) /* else nothing reads it */
			x->crc = rr_crc32c_update(x->crc, x->buf, (size_t)n);
		off += (uint64_t)n;
		progress_add(p, (uint64_t)n);
	}
	if (n < 0)
		return cli_fail(x->url, (int)n);
	/* No fsync: like cp, get leaves flushing to the kernel (write
	 * errors, ENOSPC included, were seen above). */
	x->crc = rr_crc32c_final(x->crc);
	return 0;
}

/* LOCAL may be a directory: the file goes in it under its own name. */
static int get_local_name(struct xfer *x)
{
	struct stat st;

	if (!stat(x->local, &st) && S_ISDIR(st.st_mode))
		x->local_path = join(x->local, x->remote);
	else
		x->local_path = strdup(x->local);
	return x->local_path ? 0 : -ENOMEM;
}

static int get_open(struct xfer *x, struct stat *st)
{
	int rc = rr_nfs_stat(x->n, x->remote, st);

	if (!rc && S_ISDIR(st->st_mode))
		rc = -EISDIR;
	if (!rc)
		rc = rr_nfs_open(x->n, x->remote, O_RDONLY, 0, &x->f);
	if (rc)
		return cli_fail(x->url, rc);
	if (get_local_name(x))
		return cli_fail(x->local, -ENOMEM);
	x->fd = open(x->local_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (x->fd < 0)
		return cli_fail(x->local_path, -errno);
	return 0;
}

static int get_run(struct xfer *x)
{
	struct progress p;
	struct stat st;
	int rc;

	x->remote = strdup(rr_nfs_url_path(x->n));
	if (!x->remote)
		return cli_fail(x->url, -ENOMEM);
	if (get_open(x, &st))
		return 1;
	if (alloc_buf(x, rr_nfs_max_read(x->n)))
		return cli_fail("buffer", -ENOMEM);
	progress_start(&p, "get", (uint64_t)st.st_size, x->c->quiet);
	rc = get_loop(x, &p);
	progress_end(&p, x->c->quiet || rc);
	if (!rc && x->c->verify)
		rc = verify(x);
	return rc;
}

static void xfer_fini(struct xfer *x)
{
	if (x->f)
		rr_nfs_close(x->f);
	if (x->fd >= 0)
		close(x->fd);
	if (x->n)
		cli_umount(x->c, x->n);
	free(x->buf);
	free(x->local_path);
	free(x->remote);
}

int cmd_get(struct cli *c)
{
	struct xfer x = {
		.c = c, .fd = -1, .url = c->argv[0], .local = c->argv[1]};
	int rc;

	if (cli_mount(c, x.url, &x.n))
		return 1;
	rc = get_run(&x);
	xfer_fini(&x);
	return rc;
}

/* ------------------------------------------------------------------ put */

static int put_loop(struct xfer *x, struct progress *p)
{
	uint64_t off = 0;
	ssize_t n;

	x->crc = RR_CRC32C_INIT;
	while ((n = read_full(x->fd, x->buf, x->cap, (off_t)off)) > 0) {
		ssize_t w = rr_nfs_pwrite(x->f, x->buf, (size_t)n, off);

		if (w < 0)
			return cli_fail(x->url, (int)w);
		if (x->c->verify)
			x->crc = rr_crc32c_update(x->crc, x->buf, (size_t)n);
		off += (uint64_t)n;
		progress_add(p, (uint64_t)n);
	}
	if (n < 0)
		return cli_fail(x->local, (int)n);
	x->crc = rr_crc32c_final(x->crc);
	n = rr_nfs_close(x->f); /* COMMIT: a full disk may show only here */
	x->f = NULL;
	if (n)
		return cli_fail(x->url, (int)n);
	return 0;
}

/*
 * The bytes of a range put wrote, for the library to send again when the
 * server restarted before committing them: the local file still has them.
 */
static ssize_t put_refill(void *arg, void *buf, size_t len, uint64_t off)
{
	struct xfer *x = arg;

	return read_full(x->fd, buf, len, (off_t)off);
}

/* URL may name a directory: the file goes in it under its own name. */
static int put_open(struct xfer *x)
{
	const char *path = rr_nfs_url_path(x->n);
	struct stat st;
	int rc;

	if (!rr_nfs_stat(x->n, path, &st) && S_ISDIR(st.st_mode))
		x->remote = join(path, x->local);
	else
		x->remote = strdup(path);
	if (!x->remote)
		return cli_fail(x->url, -ENOMEM);
	x->local_path = strdup(x->local);
	rc = rr_nfs_open(x->n, x->remote, O_WRONLY | O_CREAT | O_TRUNC, 0644,
			 &x->f);
	if (rc)
		return cli_fail(x->url, rc);
	rr_nfs_set_refill(x->f, put_refill, x);
	return 0;
}

static int put_local(struct xfer *x, struct stat *st)
{
	x->fd = open(x->local, O_RDONLY);
	if (x->fd < 0)
		return cli_fail(x->local, -errno);
	if (fstat(x->fd, st))
		return cli_fail(x->local, -errno);
	if (S_ISDIR(st->st_mode))
		return cli_fail(x->local, -EISDIR);
	return 0;
}

int cmd_put(struct cli *c)
{
	struct xfer x = {
		.c = c, .fd = -1, .local = c->argv[0], .url = c->argv[1]};
	struct progress p;
	struct stat st;
	int rc = put_local(&x, &st);

	if (!rc && cli_mount(c, x.url, &x.n))
		rc = 1;
	if (!rc)
		rc = put_open(&x);
	if (!rc && alloc_buf(&x, rr_nfs_max_write(x.n)))
		rc = cli_fail("buffer", -ENOMEM);
	if (!rc) {
		progress_start(&p, "put", (uint64_t)st.st_size, c->quiet);
		rc = put_loop(&x, &p);
		progress_end(&p, c->quiet || rc);
	}
	if (!rc && c->verify)
		rc = verify(&x);
	xfer_fini(&x);
	return rc;
}
