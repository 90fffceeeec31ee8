// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One FUSE session over one NFS mount, served by loop.c: one thread that
 * reads /dev/fuse and drives the transport, and workers, so that requests
 * of different processes (and a process's parallel I/O) are NFS calls in
 * flight together on the one transport, each worker making its calls as
 * its request's user.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fpriv.h"

#define DEFAULT_THREADS 16

/* "nfsrdma -o fsname=...,subtype=nfsrdma[,theirs]" as libfuse reads it. */
static int make_args(struct fuse_args *a, const char *fsname,
		     const char *fuse_opts)
{
	size_t len = strlen(fsname) + strlen(fuse_opts) + 64;
	char *o = rr_malloc(len);
	int rc = 0;

	if (!o)
		return -ENOMEM;
	/* a comma in fsname would split it: libfuse takes "\," */
	snprintf(o, len, "subtype=nfsrdma%s%s", *fuse_opts ? "," : "",
		 fuse_opts);
	if (fuse_opt_add_arg(a, "nfsrdma") || fuse_opt_add_arg(a, "-o") ||
	    fuse_opt_add_arg(a, o) || fuse_opt_add_arg(a, "-o"))
		rc = -ENOMEM;
	free(o);
	if (!rc) {
		size_t fl = strlen(fsname) * 2 + 8;
		char *fs = rr_malloc(fl), *p = fs;

		if (!fs)
			return -ENOMEM;
		p += sprintf(p, "fsname=");
		for (const char *s = fsname; *s; s++) {
			if (*s == ',' || *s == '\\')
				*p++ = '\\';
			*p++ = *s;
		}
		*p = '\0';
		rc = fuse_opt_add_arg(a, fs) ? -ENOMEM : 0;
		free(fs);
	}
	return rc;
}

/* Before the daemon's stderr goes: a failure is said where it is seen. */
static void ra_set(struct rrf *f, const char *mountpoint)
{
	unsigned kb = rr__fuse_readahead_kb(&f->o, rr_nfs_max_read(f->n));
	int rc = rr__fuse_set_readahead(mountpoint, kb);

	if (rc &&
	    (f->o.readahead_kb != RR_FUSE_READAHEAD_AUTO || rc != -EACCES))
		fprintf(stderr,
			"nfsrdma: %s: read-ahead of %u KiB not set (%s); "
			"the kernel's default stays\n",
			mountpoint, kb, strerror(-rc));
}

static int run(struct rrf *f, struct fuse_args *args, const char *mountpoint,
	       void (*mounted)(void *arg), void *arg)
{
	struct fuse_session *se =
		fuse_session_new(args, &rr__fuse_ops, sizeof(rr__fuse_ops), f);
	int rc = -ENOTCONN;

	if (!se)
		return -EINVAL;
	f->se = se;
	/* without them (no memory) every READ waits in its FUSE thread */
	rr__fuse_acalls_start(f);
	if (fuse_set_signal_handlers(se))
		goto out_destroy;
	if (fuse_session_mount(se, mountpoint))
		goto out_signals;
	ra_set(f, mountpoint);
	if (mounted)
		mounted(arg);
	rc = rr__fuse_loop(
		f, se, f->o.max_threads ? f->o.max_threads : DEFAULT_THREADS);
	rr__fuse_acalls_stop(f); /* ends the calls still out */
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_destroy:
	rr__fuse_acalls_stop(f);
	fuse_session_destroy(se);
	return rc;
}

int rr__fuse_serve(struct rr_nfs *n, const char *mountpoint, const char *fsname,
		   const struct rr_fuse_opts *o, const char *fuse_opts,
		   void (*mounted)(void *arg), void *arg)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct rrf f = {.n = n, .o = *o};
	struct nfsc_fh root;
	int rc = rr__nfsc_h_root(n, &root, NULL);

	if (rc)
		return rc;
	/* rsize and wsize lower what the server offers, never raise it */
	rr__nfsc_cap_io(n, o->rsize, o->wsize);
	rc = rr__ftab_init(&f.tab, &root);
	if (rc)
		return rc;
	rc = make_args(&args, fsname, fuse_opts ? fuse_opts : "");
	if (!rc)
		rc = run(&f, &args, mountpoint, mounted, arg);
	fuse_opt_free_args(&args);
	rr__ftab_fini(&f.tab);
	return rc;
}
