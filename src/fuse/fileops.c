// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Open files: close-to-open consistency (GETATTR at open; the kernel
 * keeps its cached pages only when the change attributes did not move),
 * UNSTABLE WRITEs logged until the COMMIT that flush, fsync and release
 * send through the client library (rr_nfs_fsync, rr_nfs_close), and the
 * library's refill reading the log back when the server restarted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fpriv.h"

static struct ofile *of_of(const struct fuse_file_info *fi)
{
	return (struct ofile *)(uintptr_t)fi->fh;
}

/*
 * I/O on an open file goes as its opener, as the kernel client's does
 * (the open context's credential): the identity the open was checked
 * with, and no read of the requester's groups from /proc per READ or
 * WRITE.
 */
static struct ofile *io_begin(fuse_req_t req, struct fuse_file_info *fi)
{
	struct rrf *f = fuse_req_userdata(req);
	struct ofile *of = of_of(fi);

	rr_nfs_set_thread_cred(f->n, &of->cred.c);
	rr__fuse_intr_arm(req);
	return of;
}

/* A READ's bytes land in its thread's buffer, kept from call to call. */
struct rbuf {
	size_t cap;
	char data[];
};

static pthread_key_t rbuf_key;
static pthread_once_t rbuf_once = PTHREAD_ONCE_INIT;
static bool rbuf_ok; /* the key exists: a thread's buffer is freed at its end */

static void rbuf_key_make(void)
{
	rbuf_ok = !pthread_key_create(&rbuf_key, free);
}

/* NULL: no buffer of the thread's (the caller allocates its own). */
static char *rbuf_get(size_t size)
{
	struct rbuf *b;

	pthread_once(&rbuf_once, rbuf_key_make);
	if (!rbuf_ok)
		return NULL;
	b = pthread_getspecific(rbuf_key);
	if (b && b->cap >= size)
		return b->data;
	pthread_setspecific(rbuf_key, NULL);
	free(b);
	b = rr_malloc(sizeof(*b) + size);
	if (!b || pthread_setspecific(rbuf_key, b)) {
		free(b);
		return NULL;
	}
	b->cap = size;
	return b->data;
}

static void of_free(struct ofile *of)
{
	rr__fuse_wb_fini(of);
	pthread_rwlock_destroy(&of->io);
	free(of);
}

/* io prefers writers (fpriv.h): a commit waits only for the writes begun. */
static void of_io_init(pthread_rwlock_t *io)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(
		&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(io, &a);
	pthread_rwlockattr_destroy(&a);
}

static int of_new(struct rrf *f, uint64_t ino, const struct nfsc_fh *fh,
		  int flags, bool checked, const struct fcred *cred,
		  struct ofile **out)
{
	struct ofile *of = rr_calloc(1, sizeof(*of));
	int rc;

	if (!of)
		return -ENOMEM;
	of->cred = *cred;
	of->cred.c.groups = of->cred.groups;
	of_io_init(&of->io);
	of->ino = ino;
	of->rdonly = (flags & O_ACCMODE) == O_RDONLY;
	of->direct = flags & O_DIRECT;
	rr__fuse_wb_init(of);
	rc = rr__nfsc_h_open(f->n, fh, flags & O_ACCMODE, checked, &of->f);
	if (rc) {
		of_free(of);
		return rc;
	}
	rr__fuse_wb_set_refill(of);
	rr__ftab_opened(&f->tab, ino);
	*out = of;
	return 0;
}

/*
 * An open ends: of goes, and the last close of a file unlinked while
 * open removes the name it was renamed to (ops.c's silly_rename).
 */
static int of_end(struct rrf *f, struct ofile *of)
{
	struct fsilly *s = rr__ftab_closed(&f->tab, of->ino);
	int rc = 0;

	if (s)
		rc = rr__nfsc_h_remove(f->n, &s->dir, s->name, false);
	free(s);
	of_free(of);
	return rc;
}

void rr__fuse_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fcred cred;
	struct rrf *f = rr__fuse_req(req, &cred);
	struct nfsc_fh fh;
	struct stat st;
	struct ofile *of;
	int rc = rr__ftab_fh(&f->tab, ino, &fh);

	/* close-to-open: what this open reads is what the server has now */
	if (!rc)
		rc = rr__nfsc_h_getattr(f->n, &fh, &st);
	if (!rc)
		rc = of_new(f, ino, &fh, fi->flags, false, &cred, &of);
	if (rc) {
		rr__fuse_reply_err(req, -rc);
		return;
	}
	fi->keep_cache = !f->o.noac && rr__ftab_same_change(&f->tab, ino, &st);
	/*
	 * Changed elsewhere: the kernel's cached attributes go too, not only
	 * its pages (Linux 6.1 drops only the pages at open), or a read
	 * would stop at the size it cached. Attributes alone (offset -1):
	 * no page lock is taken while this open waits for our reply.
	 */
	if (!fi->keep_cache)
		fuse_lowlevel_notify_inval_inode(f->se, ino, -1, 0);
	fi->fh = (uintptr_t)of;
	if (fuse_reply_open(req, fi)) {
		rr_nfs_close(of->f);
		of_end(f, of);
	}
}

void rr__fuse_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, struct fuse_file_info *fi)
{
	struct fcred cred;
	struct rrf *f = rr__fuse_req(req, &cred);
	struct fuse_entry_param e = {0};
	struct nfsc_fh dir, fh;
	struct ofile *of;
	uint64_t id;
	int rc = rr__ftab_fh(&f->tab, parent, &dir);

	if (!rc)
		rc = rr__nfsc_h_create(f->n, &dir, name, mode,
				       fi->flags & O_EXCL, &fh, &e.attr);
	if (!rc)
		rc = rr__ftab_ref(&f->tab, &fh, &id);
	if (rc) {
		rr__fuse_reply_err(req, -rc);
		return;
	}
	/* the file is its creator's whatever its mode says: no ACCESS */
	rc = of_new(f, id, &fh, fi->flags, true, &cred, &of);
	if (rc) {
		rr__ftab_forget(&f->tab, id, 1);
		rr__fuse_reply_err(req, -rc);
		return;
	}
	rr__ftab_same_change(&f->tab, id, &e.attr);
	e.ino = id;
	e.attr_timeout = rr__fuse_attr_tmo(f, &e.attr);
	e.entry_timeout = rr__fuse_entry_tmo(f, true);
	fi->fh = (uintptr_t)of;
	if (fuse_reply_create(req, &e, fi)) {
		rr_nfs_close(of->f);
		of_end(f, of);
		rr__ftab_forget(&f->tab, id, 1);
	}
}

/*
 * Answered from the READ's completion (acall.c) when it can be; else
 * here, the thread waiting for the server.
 */
void rr__fuse_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct rrf *f = fuse_req_userdata(req);
	struct ofile *of = io_begin(req, fi);
	char *buf, *own = NULL;
	ssize_t n;

	/* the server has every write the kernel was answered for */
	rr__ftab_wb_drain(&f->tab, ino);
	if (rr__fuse_aread(f, req, of, size, off))
		return;
	rr__fuse_intr_arm(req); /* rr__fuse_aread may have taken INTERRUPTs */
	buf = rbuf_get(size ? size : 1);
	if (!buf)
		buf = own = rr_malloc(size ? size : 1);
	if (!buf) {
		rr__fuse_reply_err(req, ENOMEM);
		return;
	}
	n = rr_nfs_pread(of->f, buf, size, (uint64_t)off);
	if (n < 0)
		rr__fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(own);
}

/*
 * A write answered once the server has it. O_DIRECT: FILE_SYNC, so it is
 * on the server's stable storage when write(2) returns, as the kernel
 * client's O_DIRECT writes are, and nothing of it is logged or
 * committed later (an O_DIRECT file logs nothing, so no older bytes of
 * its log can be sent again over it). A buffered write the log could not
 * take behind: UNSTABLE, logged like the others, so that a resend after
 * a server restart sends these bytes and not older ones of the same
 * range; committed when the log is full.
 */
static int write_through(struct ofile *of, const char *buf, size_t size,
			 off_t off, bool *full)
{
	ssize_t n;

	if (of->direct)
		return (int)rr_nfs_pwrite_sync(of->f, buf, size, (uint64_t)off);
	n = rr_nfs_pwrite(of->f, buf, size, (uint64_t)off);
	if (n >= 0)
		rr__fuse_wb_log(of, buf, (size_t)n, off, full);
	return (int)n;
}

void rr__fuse_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		    size_t size, off_t off, struct fuse_file_info *fi)
{
	/* req is gone once answered: nothing may be read from it after */
	struct rrf *f = fuse_req_userdata(req);
	struct ofile *of = io_begin(req, fi);
	bool full = false, answered = false;
	int rc = rr__fuse_wb_err(of), n = 0;

	(void)ino;
	pthread_rwlock_rdlock(&of->io);
	if (!rc && !of->direct)
		answered = rr__fuse_write_behind(f, req, of, buf, size, off,
						 &full);
	if (!rc && !answered) {
		/* after the writes before it, as the kernel flushes first */
		rr__ftab_wb_drain(&f->tab, of->ino);
		n = rc = write_through(of, buf, size, off, &full);
	}
	pthread_rwlock_unlock(&of->io);
	if (rc >= 0 && full)
		rc = rr__fuse_commit(f, of, true);
	if (answered && rc)
		rr__fuse_wb_keep_err(of, -rc);
	else if (rc < 0)
		rr__fuse_reply_err(req, -rc);
	else if (!answered)
		fuse_reply_write(req, (size_t)n);
}

/*
 * close(2): the data goes to stable storage before close returns, as
 * the kernel client's close-to-open promises the next opener; the
 * attributes after it are what this client's cache now matches. An
 * opener that cannot write has nothing to send.
 */
void rr__fuse_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rrf *f = rr__fuse_req(req, NULL);
	struct nfsc_fh fh;
	struct stat st;
	int rc;

	/* a reader's close costs no round trip, as the kernel client's */
	if (of_of(fi)->rdonly) {
		rr__fuse_reply_err(req, 0);
		return;
	}
	rc = rr__fuse_commit(f, of_of(fi), false);

	if (!rc && !rr__ftab_fh(&f->tab, ino, &fh) &&
	    !rr__nfsc_h_getattr(f->n, &fh, &st))
		rr__ftab_same_change(&f->tab, ino, &st);
	rr__fuse_reply_err(req, -rc);
}

void rr__fuse_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi)
{
	struct ofile *of = io_begin(req, fi);

	(void)ino;
	(void)datasync; /* COMMIT has no data-only form */
	rr__fuse_reply_err(req,
			   -rr__fuse_commit(fuse_req_userdata(req), of, false));
}

void rr__fuse_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rrf *f = fuse_req_userdata(req);
	struct ofile *of = of_of(fi);
	int rc;

	(void)ino;
	rr_nfs_set_thread_cred(f->n, &of->cred.c);
	pthread_rwlock_wrlock(&of->io);
	/* a write-behind WRITE still out (acall.c) ends in of */
	rr__ftab_wb_drain(&f->tab, of->ino);
	rc = rr_nfs_close(of->f);
	pthread_rwlock_unlock(&of->io);
	rc = of_end(f, of) ?: rc;
	rr__fuse_reply_err(req, -rc);
}
