// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * get and put: whole files between the server and the local disk, in
 * pieces of depth x the mount's READ/WRITE size so that every pread or
 * pwrite keeps the pipeline full.
 *
 * --verify compares three CRC32Cs: the one of the bytes as they went
 * through, and the ones of both ends read back afterwards (the local file
 * from disk, the remote one from the server), so a corruption on either
 * side, or in flight, shows. A pipe (LOCAL "-") cannot be read back: only
 * the remote end is then.
 *
 * The file being written carries a temporary name until it is complete
 * (and verified), then is renamed: never a partial file under the final
 * name (partial.c), unless --partial.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/crc32c.h"
#include "nfsrdma.h"

#define MIN_BUF	  (1u << 20)
#define MAX_BUF	  (4u << 20)
#define PIPE_BUF_ (32u << 20) /* put from a pipe: committed this often */

struct xfer {
	struct cli *c;
	struct rr_nfs *n;
	struct rr_nfs_file *f;
	int fd;
	const char *url, *local;
	char *local_path; /* the local file's name, after a directory */
	char *remote;	  /* the remote path, after a directory */
	char *tmp;	  /* the file written, under its temporary name */
	bool put;
	bool pipe;	  /* LOCAL is "-" and not a regular file */
	bool remote_gone; /* the connection failed: no cleanup call */
	uint64_t win_off; /* put from a pipe: the bytes not yet committed */
	uint8_t *buf;
	size_t cap;
	uint32_t crc;
	uint64_t bytes;	       /* transferred */
	const char *remote_in; /* get/put -r: this path, not the URL's */
	bool shared_mount;     /* get/put -r: the tree's, not unmounted here */
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

static int alloc_buf(struct xfer *x, uint32_t io, bool pipe)
{
	x->cap = pipe ? PIPE_BUF_ : buf_size(x, io);
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
static int crc_local(struct xfer *x, struct progress *p, uint32_t *crc)
{
	uint32_t c = RR_CRC32C_INIT;
	off_t off = 0;
	ssize_t n;

	while ((n = read_full(x->fd, x->buf, x->cap, off)) > 0) {
		c = rr__crc32c_update(c, x->buf, (size_t)n);
		off += n;
		progress_add(p, (uint64_t)n);
	}
	if (n < 0)
		return cli_fail(x->local_path, (int)n);
	*crc = rr_crc32c_final(c);
	return 0;
}

/* CRC32C of the remote file, read back from the server. */
static int crc_remote(struct xfer *x, struct progress *p, uint32_t *crc)
{
	struct rr_nfs_file *f;
	uint32_t c = RR_CRC32C_INIT;
	uint64_t off = 0;
	ssize_t n;
	int rc = rr_nfs_open(x->n, x->put && x->tmp ? x->tmp : x->remote,
			     O_RDONLY, 0, &f);

	if (rc)
		return cli_fail(x->url, rc);
	while ((n = rr_nfs_pread(f, x->buf, x->cap, off)) > 0) {
		c = rr__crc32c_update(c, x->buf, (size_t)n);
		off += (uint64_t)n;
		progress_add(p, (uint64_t)n);
	}
	rr_nfs_close(f);
	if (n < 0)
		return cli_fail(x->url, (int)n);
	*crc = rr_crc32c_final(c);
	return 0;
}

/* Both ends read back, with a progress line of their own. */
static int verify(struct xfer *x)
{
	uint32_t lcrc = x->crc, rcrc = 0;
	struct progress p;
	int rc;

	progress_start(&p, "verify", x->pipe ? x->bytes : 2 * x->bytes,
		       x->c->quiet);
	rc = (!x->pipe && crc_local(x, &p, &lcrc)) || crc_remote(x, &p, &rcrc);
	progress_clear(&p);
	if (rc)
		return 1;
	if (lcrc != x->crc || rcrc != x->crc)
		return cli_failf("verify: checksums differ: transfer %08x, "
				 "local %08x, remote %08x",
				 x->crc, lcrc, rcrc);
	if (!x->c->quiet)
		fprintf(stderr, "verify: ok, crc32c %08x on %s\n", x->crc,
			x->pipe ? "the server" : "both ends");
	return 0;
}

/* Whether err says the server is out of reach (no call will answer). */
static bool unreachable(int err)
{
	switch (-err) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case ECONNRESET:
	case ENOTCONN:
	case EPIPE:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return true;
	default:
		return false;
	}
}

/* A remote failure: said, and remembered when the server is gone. */
static int remote_fail(struct xfer *x, int err)
{
	if (unreachable(err))
		x->remote_gone = true;
	return cli_fail(x->url, err);
}

static int interrupted(void)
{
	return xfer_interrupted() ? 1 : 0;
}

/* ------------------------------------------------------------------ get */

static int get_loop(struct xfer *x, struct progress *p)
{
	uint64_t off = 0;
	ssize_t n;
	int rc;

	x->crc = RR_CRC32C_INIT;
	while (!interrupted() &&
	       (n = rr_nfs_pread(x->f, x->buf, x->cap, off)) > 0) {
		rc = write_all(x->fd, x->buf, (size_t)n);
		if (rc)
			return cli_fail(x->local_path, rc);
		if (x->c->verify) /* else nothing reads it */
			x->crc = rr__crc32c_update(x->crc, x->buf, (size_t)n);
		off += (uint64_t)n;
		progress_add(p, (uint64_t)n);
	}
	if (interrupted())
		return 1;
	if (n < 0)
		return remote_fail(x, (int)n);
	/* No fsync: like cp, get leaves flushing to the kernel (write
	 * errors, ENOSPC included, were seen above). */
	x->bytes = off;
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

/*
 * Only a regular file, or none, is replaced by renaming a temporary over
 * it: a device (/dev/null), a FIFO or a symbolic link is written into, as
 * cp does, since renaming would put a file in its place.
 */
static bool local_replaceable(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? errno == ENOENT : S_ISREG(st.st_mode);
}

static int get_local_open(struct xfer *x)
{
	if (!strcmp(x->local, "-")) {
		x->pipe = true;
		x->local_path = strdup("stdout");
		x->fd = STDOUT_FILENO;
		return x->local_path ? 0 : cli_fail("stdout", -ENOMEM);
	}
	if (get_local_name(x))
		return cli_fail(x->local, -ENOMEM);
	if (x->c->partial || !local_replaceable(x->local_path))
		x->fd = open(x->local_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	else
		x->fd = local_temp_open(x->local_path, &x->tmp);
	if (x->fd < 0)
		return cli_fail(x->local_path, x->tmp ? x->fd : -errno);
	return 0;
}

static int get_open(struct xfer *x, struct stat *st)
{
	int rc = rr_nfs_stat(x->n, x->remote, st);

	if (!rc && S_ISDIR(st->st_mode))
		rc = -EISDIR;
	if (!rc)
		rc = rr_nfs_open(x->n, x->remote, O_RDONLY, 0, &x->f);
	if (rc)
		return remote_fail(x, rc);
	return get_local_open(x);
}

static int get_run(struct xfer *x)
{
	struct progress p;
	struct stat st;
	int rc;

	x->remote = strdup(x->remote_in ? x->remote_in : rr_nfs_url_path(x->n));
	if (!x->remote)
		return cli_fail(x->url, -ENOMEM);
	if (get_open(x, &st))
		return 1;
	if (alloc_buf(x, rr_nfs_max_read(x->n), false))
		return cli_fail("buffer", -ENOMEM);
	progress_start(&p, "get", (uint64_t)st.st_size, x->c->quiet);
	rc = get_loop(x, &p);
	progress_end(&p, x->c->quiet || rc);
	if (!rc && x->c->verify)
		rc = verify(x);
	if (!rc && x->tmp) {
		if (rename(x->tmp, x->local_path))
			return cli_fail(x->local_path, -errno);
		free(x->tmp);
		x->tmp = NULL;
	}
	return rc;
}

/* Closes both ends; a temporary still named is a failed transfer's. */
static void xfer_fini(struct xfer *x, bool remote_tmp)
{
	if (x->f)
		rr_nfs_close(x->f);
	if (x->fd > STDERR_FILENO)
		close(x->fd);
	if (x->tmp && !remote_tmp)
		unlink(x->tmp);
	if (x->tmp && remote_tmp && !x->remote_gone &&
	    rr_nfs_unlink(x->n, x->tmp))
		x->remote_gone = true;
	if (x->tmp && remote_tmp && x->remote_gone)
		cli_failf("left the partial file %s on the server", x->tmp);
	if (x->n && !x->shared_mount)
		cli_umount(x->c, x->n);
	free(x->buf);
	free(x->local_path);
	free(x->remote);
	free(x->tmp);
}

int get_file(struct cli *c, struct rr_nfs *n, const char *remote,
	     const char *local)
{
	struct xfer x = {.c = c,
			 .fd = -1,
			 .url = remote,
			 .local = local,
			 .n = n,
			 .remote_in = remote,
			 .shared_mount = true};
	int rc = get_run(&x);

	xfer_fini(&x, false);
	return rc;
}

int cmd_get(struct cli *c)
{
	struct xfer x = {
		.c = c, .fd = -1, .url = c->argv[0], .local = c->argv[1]};
	struct stat st;
	int rc;

	xfer_catch_signals();
	if (cli_mount(c, x.url, &x.n))
		return 1;
	if (c->recursive && !rr_nfs_stat(x.n, rr_nfs_url_path(x.n), &st) &&
	    S_ISDIR(st.st_mode)) {
		rc = get_tree(c, x.n, rr_nfs_url_path(x.n), x.local);
		cli_umount(c, x.n);
	} else {
		rc = get_run(&x);
		xfer_fini(&x, false);
	}
	xfer_die_if_interrupted();
	return rc;
}

/* ------------------------------------------------------------------ put */

/* Up to len bytes of a pipe; fewer only at its end. */
static ssize_t read_pipe(int fd, uint8_t *p, size_t len)
{
	size_t got = 0;

	while (got < len && !interrupted()) {
		ssize_t n = read(fd, p + got, len - got);

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

/*
 * The bytes of a range put wrote, for the library to send again when the
 * server restarted before committing them: a local file still has them,
 * a pipe's are in the buffer until they are committed.
 */
static ssize_t put_refill(void *arg, void *buf, size_t len, uint64_t off)
{
	struct xfer *x = arg;

	if (!x->pipe)
		return read_full(x->fd, buf, len, (off_t)off);
	if (off < x->win_off || off - x->win_off + len > x->cap)
		return -ESPIPE;
	memcpy(buf, x->buf + (off - x->win_off), len);
	return (ssize_t)len;
}

static ssize_t put_read(struct xfer *x, uint64_t off)
{
	if (x->pipe)
		return read_pipe(x->fd, x->buf, x->cap);
	return read_full(x->fd, x->buf, x->cap, (off_t)off);
}

/* One buffer's worth; from a pipe, committed before it is refilled. */
static int put_piece(struct xfer *x, size_t n, uint64_t off)
{
	ssize_t w = rr_nfs_pwrite(x->f, x->buf, n, off);

	if (w < 0)
		return remote_fail(x, (int)w);
	if (!x->pipe)
		return 0;
	x->win_off = off;
	w = rr_nfs_fsync(x->f);
	return w ? remote_fail(x, (int)w) : 0;
}

static int put_loop(struct xfer *x, struct progress *p)
{
	uint64_t off = 0;
	ssize_t n;

	x->crc = RR_CRC32C_INIT;
	while (!interrupted() && (n = put_read(x, off)) > 0) {
		if (put_piece(x, (size_t)n, off))
			return 1;
		if (x->c->verify || x->pipe)
			x->crc = rr__crc32c_update(x->crc, x->buf, (size_t)n);
		off += (uint64_t)n;
		progress_add(p, (uint64_t)n);
	}
	if (interrupted())
		return 1;
	if (n < 0)
		return cli_fail(x->local, (int)n);
	x->crc = rr_crc32c_final(x->crc);
	x->bytes = off;
	n = rr_nfs_close(x->f); /* COMMIT: a full disk may show only here */
	x->f = NULL;
	if (n)
		return remote_fail(x, (int)n);
	return 0;
}

/* URL may name a directory: the file goes in it under its own name. */
static int put_remote_name(struct xfer *x)
{
	const char *path = x->remote_in ? x->remote_in : rr_nfs_url_path(x->n);
	struct stat st;

	if (!rr_nfs_stat(x->n, path, &st) && S_ISDIR(st.st_mode)) {
		if (x->pipe)
			return cli_failf("%s: a directory: name the file to "
					 "put stdin in",
					 x->url);
		x->remote = join(path, x->local);
	} else {
		x->remote = strdup(path);
	}
	if (!x->remote)
		return cli_fail(x->url, -ENOMEM);
	return 0;
}

/* As local_replaceable, on the server: a symbolic link is written into. */
static bool remote_replaceable(struct xfer *x)
{
	struct stat st;
	int rc = rr_nfs_lstat(x->n, x->remote, &st);

	return rc ? rc == -ENOENT : S_ISREG(st.st_mode);
}

static int put_open(struct xfer *x)
{
	int rc = put_remote_name(x);
	bool direct;

	if (rc)
		return rc;
	x->local_path = strdup(x->local);
	if (!x->local_path)
		return cli_fail(x->local, -ENOMEM);
	direct = x->c->partial || !remote_replaceable(x);
	if (direct)
		rc = rr_nfs_open(x->n, x->remote, O_WRONLY | O_CREAT | O_TRUNC,
				 0644, &x->f);
	for (int i = 0; !direct && i < 16; i++) {
		free(x->tmp);
		x->tmp = temp_name(x->remote);
		rc = x->tmp ? rr_nfs_open(x->n, x->tmp,
					  O_WRONLY | O_CREAT | O_EXCL, 0644,
					  &x->f)
			    : -ENOMEM;
		if (rc != -EEXIST)
			break;
	}
	if (rc)
		return remote_fail(x, rc);
	rr_nfs_set_refill(x->f, put_refill, x);
	return 0;
}

static int put_local(struct xfer *x, struct stat *st)
{
	x->fd = strcmp(x->local, "-") ? open(x->local, O_RDONLY) : STDIN_FILENO;
	if (x->fd < 0)
		return cli_fail(x->local, -errno);
	if (fstat(x->fd, st))
		return cli_fail(x->local, -errno);
	if (S_ISDIR(st->st_mode))
		return cli_fail(x->local, -EISDIR);
	x->pipe = !S_ISREG(st->st_mode);
	return 0;
}

/* The finished file takes its name; the temporary is gone then. */
static int put_finish(struct xfer *x)
{
	int rc;

	if (!x->tmp)
		return 0;
	rc = rr_nfs_rename(x->n, x->tmp, x->remote);
	if (rc)
		return remote_fail(x, rc);
	free(x->tmp);
	x->tmp = NULL;
	return 0;
}

/* After the mount: one file, local to remote. */
static int put_run(struct xfer *x, struct stat *st)
{
	struct progress p;
	int rc = put_open(x);

	if (!rc && alloc_buf(x, rr_nfs_max_write(x->n), x->pipe))
		rc = cli_fail("buffer", -ENOMEM);
	if (!rc) {
		progress_start(&p, "put", x->pipe ? 0 : (uint64_t)st->st_size,
			       x->c->quiet);
		rc = put_loop(x, &p);
		progress_end(&p, x->c->quiet || rc);
	}
	if (!rc && x->c->verify)
		rc = verify(x);
	if (!rc)
		rc = put_finish(x);
	return rc;
}

int put_file(struct cli *c, struct rr_nfs *n, const char *local,
	     const char *remote)
{
	struct xfer x = {.c = c,
			 .fd = -1,
			 .local = local,
			 .url = remote,
			 .put = true,
			 .n = n,
			 .remote_in = remote,
			 .shared_mount = true};
	struct stat st;
	int rc = put_local(&x, &st);

	if (!rc)
		rc = put_run(&x, &st);
	xfer_fini(&x, true);
	return rc;
}

/* put -r of a directory: the tree, into the URL as cp -r would. */
static int put_dir(struct cli *c, const char *local, const char *url)
{
	struct rr_nfs *n;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	rc = put_tree(c, n, local, rr_nfs_url_path(n));
	cli_umount(c, n);
	return rc;
}

int cmd_put(struct cli *c)
{
	struct xfer x = {.c = c,
			 .fd = -1,
			 .local = c->argv[0],
			 .url = c->argv[1],
			 .put = true};
	struct stat st;
	int rc;

	xfer_catch_signals();
	if (c->recursive && !stat(x.local, &st) && S_ISDIR(st.st_mode)) {
		rc = put_dir(c, x.local, x.url);
		xfer_die_if_interrupted();
		return rc;
	}
	rc = put_local(&x, &st);
	if (!rc && cli_mount(c, x.url, &x.n))
		rc = 1;
	if (!rc)
		rc = put_run(&x, &st);
	xfer_fini(&x, true);
	xfer_die_if_interrupted();
	return rc;
}
