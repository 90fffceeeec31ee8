// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfsrdma mount URL MOUNTPOINT [-o OPTIONS] [-f] and nfsrdma umount
 * MOUNTPOINT: the NFS mount served through FUSE (src/fuse).
 *
 * Without -f the command returns once the mount is there (or failed,
 * saying why), leaving a daemon to serve it. The fork comes first and
 * the daemon makes the NFS mount itself: the RDMA provider's progress
 * threads would not survive a fork, so nothing is connected before it.
 * The parent waits on a pipe for the daemon's word.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_count.h"
#include "nfsrdma.h"

#ifdef RR_HAVE_FUSE
#include "fuse/nfs_fuse.h"

struct daemon_pipe {
	int fd; /* -1 in the foreground */
	struct mount_ctl ctl;
};

/*
 * The mount is up: its control socket opens (saying on stderr if it
 * cannot), the parent may go, and the daemon's stdio goes.
 */
static void mounted(void *arg)
{
	struct daemon_pipe *p = arg;
	int null;
	char ok = 0;

	mount_ctl_start(&p->ctl);
	if (p->fd < 0)
		return;
	if (write(p->fd, &ok, 1) != 1)
		return;
	close(p->fd);
	p->fd = -1;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
}

static int serve(struct cli *c, const struct rr_fuse_opts *fo,
		 const char *fuse_opts, struct daemon_pipe *p)
{
	const char *url = c->argv[0], *mp = c->argv[1];
	bool count = tool_count_allocs(); /* from before the mount */
	struct rr_nfs *n;
	int rc;

	if (cli_mount(c, url, &n))
		return 1;
	p->ctl = (struct mount_ctl){.n = n,
				    .url = url,
				    .mountpoint = mp,
				    .fo = fo,
				    .count_allocs = count};
	rc = rr__fuse_serve(n, mp, url, fo, fuse_opts, mounted, p);
	mount_ctl_stop(&p->ctl);
	rr_nfs_umount(n);
	if (rc == -ENOTCONN)
		return cli_failf("%s: FUSE could not mount it (see above)", mp);
	return rc ? cli_fail(mp, rc) : 0;
}

/* The parent: the daemon's exit status if it failed before mounting. */
static int wait_daemon(pid_t pid, int fd)
{
	char ok;
	int st;

	if (read(fd, &ok, 1) == 1)
		return 0;
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st))
		return WEXITSTATUS(st);
	return cli_failf("mount: the daemon died before mounting");
}

static int daemonize(struct cli *c, const struct rr_fuse_opts *fo,
		     const char *fuse_opts)
{
	struct daemon_pipe p;
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return cli_fail("pipe", -errno);
	pid = fork();
	if (pid < 0)
		return cli_fail("fork", -errno);
	if (pid) {
		close(fds[1]);
		return wait_daemon(pid, fds[0]);
	}
	close(fds[0]);
	setsid();
	p.fd = fds[1];
	if (chdir("/"))
		_exit(1);
	_exit(serve(c, fo, fuse_opts, &p));
}

int cmd_mount(struct cli *c)
{
	struct rr_fuse_opts fo;
	struct daemon_pipe fg = {.fd = -1};
	char *fuse_opts = NULL;
	const char *bad;
	int rc = rr__fuse_opts_parse(c->mount_opts, &fo, &fuse_opts, &bad);

	if (rc == -EINVAL) {
		cli_failf("-o: bad option '%s'", bad);
		return 2;
	}
	if (rc)
		return cli_fail("-o", rc);
	c->o.timeout_ms = rr__fuse_timeout_ms(&fo); /* -o hard/soft rule */
	/* a relative mount point must survive the daemon's chdir("/") */
	char *mp = realpath(c->argv[1], NULL);
	if (!mp) {
		free(fuse_opts);
		return cli_fail(c->argv[1], -errno);
	}
	c->argv[1] = mp;
	rc = c->foreground ? serve(c, &fo, fuse_opts, &fg)
			   : daemonize(c, &fo, fuse_opts);
	free(fuse_opts);
	free(mp);
	return rc;
}
#else
int cmd_mount(struct cli *c)
{
	(void)c;
	return cli_failf("mount: built without libfuse3 (libfuse3-dev)");
}
#endif

/*
 * The daemon sees its session end and exits: it has when its control
 * socket is gone (mount_ctl.c says why that matters): at once when it
 * had none.
 */
static int wait_exit(const char *mp, const char *sock, int rc)
{
	if (rc || !*sock || !mount_ctl_wait_gone(sock, MOUNT_CTL_WAIT_MS))
		return rc;
	fprintf(stderr,
		"nfsrdma: %s: unmounted, but its daemon still holds %s\n", mp,
		sock);
	return 0;
}

/* As root, umount(2) directly; otherwise fusermount3. */
static int unmount(const char *mp)
{
	pid_t pid;
	int st;

	if (geteuid() == 0)
		return umount2(mp, 0) ? cli_fail(mp, -errno) : 0;
	pid = fork();
	if (pid < 0)
		return cli_fail("fork", -errno);
	if (!pid) {
		execlp("fusermount3", "fusermount3", "-u", "--", mp,
		       (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return cli_failf("umount: fusermount3 did not finish");
	if (WEXITSTATUS(st) == 127)
		return cli_failf("umount: fusermount3 not found (fuse3)");
	return WEXITSTATUS(st) ? 1 : 0;
}

/* Unmounts what fusermount3 may (its user's mounts), then waits: above. */
int cmd_umount(struct cli *c)
{
	const char *mp = c->argv[0];
	char real[PATH_MAX], sock[512] = "";

	if (!realpath(mp, real) ||
	    mount_ctl_path(real, false, sock, sizeof(sock)))
		sock[0] = 0;
	return wait_exit(mp, sock, unmount(mp));
}
