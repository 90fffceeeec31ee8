/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fuse-bench's ceiling: a FUSE file system that does nothing, mounted as
 * `nfsrdma mount` mounts (the same INIT answers, read-ahead window and
 * libfuse loop: src/fuse/ops.c and session.c), so that fio through it
 * measures what FUSE itself costs on this machine. Its files "data" and
 * "small" have the sizes given; a read is answered at once from one
 * static buffer of zeros (one copy, into the kernel, as the mount's
 * replies are), a write is taken and dropped. No NFS, no network.
 *
 * usage: null_fs MOUNTPOINT DATA_MIB   (foreground; SIGTERM or
 * fusermount3 -u ends it). Exit 0, or 1 saying what failed.
 */
#include "fuse/fpriv.h" /* FUSE_USE_VERSION, the read-ahead setter */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IO_MAX	     (1u << 20)		  /* the mount's rsize and wsize */
#define READAHEAD_KB (IO_MAX / 1024 * 15) /* rr__fuse_readahead_kb's */
#define BACKGROUND   64 /* about what acall.c keeps in flight */
#define MAX_THREADS  16 /* session.c's */
#define IDLE_THREADS 4

static const char zeros[IO_MAX];

struct nfile {
	const char *name;
	fuse_ino_t ino;
	off_t size;
};

static struct nfile files[] = {
	{"data", 2, 0},
	{"small", 3, 64 << 20},
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static void stat_of(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_nlink = 1;
	st->st_mode = S_IFDIR | 0755;
	for (size_t i = 0; i < NFILES; i++)
		if (files[i].ino == ino) {
			st->st_mode = S_IFREG | 0644;
			st->st_size = files[i].size;
		}
}

static const struct nfile *file_of(fuse_ino_t ino)
{
	for (size_t i = 0; i < NFILES; i++)
		if (files[i].ino == ino)
			return &files[i];
	return NULL;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	if (IO_MAX > conn->max_write)
		conn->max_write = IO_MAX;
	if (READAHEAD_KB * 1024u > conn->max_readahead)
		conn->max_readahead = READAHEAD_KB * 1024u;
	if (BACKGROUND > conn->max_background) {
		conn->max_background = BACKGROUND;
		conn->congestion_threshold = BACKGROUND * 3 / 4;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	for (size_t i = 0; parent == FUSE_ROOT_ID && i < NFILES; i++)
		if (!strcmp(files[i].name, name)) {
			e.ino = files[i].ino;
			stat_of(e.ino, &e.attr);
			e.attr_timeout = e.entry_timeout = 3600;
			fuse_reply_entry(req, &e);
			return;
		}
	fuse_reply_err(req, ENOENT);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && !file_of(ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	stat_of(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!file_of(ino)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	const struct nfile *f = file_of(ino);
	size_t n = 0;

	(void)fi;
	if (f && off < f->size)
		n = (size_t)(f->size - off) < size ? (size_t)(f->size - off)
						   : size;
	fuse_reply_buf(req, zeros, n < IO_MAX ? n : IO_MAX);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)off;
	(void)fi;
	fuse_reply_write(req, size);
}

static const struct fuse_lowlevel_ops null_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.write = op_write,
};

static int serve(struct fuse_session *se, const char *mnt)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int rc;

	if (!cfg)
		return -ENOMEM;
	rc = rr__fuse_set_readahead(mnt, READAHEAD_KB);
	if (rc)
		fprintf(stderr, "null_fs: read-ahead not set: %s\n",
			strerror(-rc));
	fuse_loop_cfg_set_max_threads(cfg, MAX_THREADS);
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_idle_threads(cfg, IDLE_THREADS);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

int main(int argc, char **argv)
{
	char *fargv[] = {argv[0], "-o", "fsname=null_fs", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se;
	int rc = 1;

	if (argc != 3 || atol(argv[2]) <= 0) {
		fprintf(stderr, "usage: null_fs MOUNTPOINT DATA_MIB\n");
		return 1;
	}
	files[0].size = (off_t)atol(argv[2]) << 20;
	se = fuse_session_new(&args, &null_ops, sizeof(null_ops), NULL);
	if (!se)
		return 1;
	if (!fuse_set_signal_handlers(se)) {
		if (!fuse_session_mount(se, argv[1])) {
			rc = serve(se, argv[1]) ? 1 : 0;
			fuse_session_unmount(se);
		}
		fuse_remove_signal_handlers(se);
	}
	fuse_session_destroy(se);
	return rc;
}
