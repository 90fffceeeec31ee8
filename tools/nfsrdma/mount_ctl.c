// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A FUSE mount's counters while it is mounted (issue 18): its daemon
 * answers "stats" and "stats json" on a control socket of its own
 * (tools/common/control.c), named after the mount's device number in the
 * mounting user's runtime directory: /run/nfsrdma as root, else
 * $XDG_RUNTIME_DIR/nfsrdma, else /tmp/nfsrdma-UID. `nfsrdma stat
 * MOUNTPOINT`, run by the same user, finds it from the mount point.
 *
 * The kernel gives a new FUSE mount the device number an unmounted one
 * had, while that one's daemon may still be exiting with its socket at
 * the same path. So `nfsrdma umount` returns once the daemon has let go
 * of its socket, and a new daemon that finds the path still answered
 * waits for it to be let go, both for a bounded time.
 */
#include <errno.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc_count.h"
#include "base/clock.h"
#include "control.h"
#include "json.h"
#include "nfsrdma.h"

#ifdef RR_HAVE_FUSE
#include <rpcrdma/oncrpc.h>

#include "fuse/nfs_fuse.h"

/* The user's runtime directory for mount sockets, made if asked. */
static int run_dir(char *buf, size_t cap, bool create)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (geteuid() == 0)
		snprintf(buf, cap, "/run/nfsrdma");
	else if (xdg && *xdg == '/')
		snprintf(buf, cap, "%s/nfsrdma", xdg);
	else
		snprintf(buf, cap, "/tmp/nfsrdma-%u", (unsigned)geteuid());
	if (create && mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(buf, &st))
		return -errno;
	/* in /tmp, someone else's directory would get our socket */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -EPERM;
	return 0;
}

int mount_ctl_path(const char *mountpoint, bool create, char *buf, size_t cap)
{
	char dir[256], dev[64];
	int rc = rr__fuse_mount_dev(mountpoint, dev, sizeof(dev));

	if (!rc)
		rc = run_dir(dir, sizeof(dir), create);
	if (rc)
		return rc;
	if ((size_t)snprintf(buf, cap, "%s/mount-%s.sock", dir, dev) >= cap)
		return -ENAMETOOLONG;
	return 0;
}

/* Whether path names nothing any more. */
static bool gone(const char *path)
{
	struct stat st;

	return lstat(path, &st) && errno == ENOENT;
}

int mount_ctl_wait_gone(const char *path, int timeout_ms)
{
	uint64_t end = rr_mono_ms() + (uint64_t)timeout_ms;
	char dir[512];
	int fd, rc = 0;

	if (gone(path))
		return 0;
	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* watched first, then looked at: no removal falls in between */
	if (inotify_add_watch(fd, dirname(dir), IN_DELETE | IN_MOVED_FROM) < 0)
		rc = -errno;
	while (!rc && !gone(path)) {
		uint64_t now = rr_mono_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char ev[4096];

		if (now >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		if (poll(&p, 1, (int)(end - now)) < 0 && errno != EINTR)
			rc = -errno;
		while (read(fd, ev, sizeof(ev)) > 0)
			; /* which entry went does not matter: look again */
	}
	close(fd);
	return rc;
}

static void render_text(const struct mount_ctl *m,
			const struct rr_xprt_stats *s, int rc, FILE *f)
{
	fprintf(f, "mount %s: %s\n", m->mountpoint, m->url);
	fprintf(f, "rsize %u wsize %u %s", rr_nfs_max_read(m->n),
		rr_nfs_max_write(m->n), m->fo->soft ? "soft" : "hard");
	if (m->fo->soft)
		fprintf(f, " timeo %u retrans %u", m->fo->timeo,
			m->fo->retrans);
	fputc('\n', f);
	if (m->count_allocs)
		tool_allocs_text(f);
	if (rc) {
		fprintf(f, "transport counters: %s\n", strerror(-rc));
		return;
	}
#define X(name) fprintf(f, "%s %llu\n", #name, (unsigned long long)s->name);
	RR_XPRT_STATS_FIELDS(X)
#undef X
}

static void render_json(const struct mount_ctl *m,
			const struct rr_xprt_stats *s, int rc, FILE *f)
{
	struct jw j;

	jw_init(&j, f);
	jw_obj(&j, NULL);
	jw_str(&j, "mountpoint", m->mountpoint);
	jw_str(&j, "url", m->url);
	jw_u64(&j, "rsize_bytes", rr_nfs_max_read(m->n));
	jw_u64(&j, "wsize_bytes", rr_nfs_max_write(m->n));
	jw_bool(&j, "hard", !m->fo->soft);
	jw_u64(&j, "timeo_ds", m->fo->timeo);
	jw_u64(&j, "retrans", m->fo->retrans);
	if (m->count_allocs)
		tool_allocs_json(&j, "allocations");
	if (rc) {
		jw_null(&j, "transport");
	} else {
		jw_obj(&j, "transport");
#define X(name) jw_u64(&j, #name, s->name);
		RR_XPRT_STATS_FIELDS(X)
#undef X
		jw_obj_end(&j);
	}
	jw_obj_end(&j);
	jw_finish(&j);
}

static void render(void *arg, FILE *f, bool json)
{
	const struct mount_ctl *m = arg;
	struct rr_xprt_stats s = {0};
	int rc = rr_nfs_xprt_stats(m->n, &s);

	if (json)
		render_json(m, &s, rc, f);
	else
		render_text(m, &s, rc, f);
}

int mount_ctl_start(struct mount_ctl *m)
{
	char path[512];
	int rc = mount_ctl_path(m->mountpoint, true, path, sizeof(path));

	if (!rc)
		rc = tool_control_open(path, &m->ctl);
	if (rc == -EADDRINUSE &&
	    !mount_ctl_wait_gone(path, MOUNT_CTL_WAIT_MS)) /* see above */
		rc = tool_control_open(path, &m->ctl);
	if (!rc)
		rc = tool_control_run(m->ctl, render, m);
	if (rc) {
		if (m->ctl)
			tool_control_close(m->ctl);
		m->ctl = NULL;
		fprintf(stderr,
			"nfsrdma: %s: no control socket, so no "
			"'nfsrdma stat %s': %s\n",
			m->mountpoint, m->mountpoint, strerror(-rc));
	}
	return rc;
}

void mount_ctl_stop(struct mount_ctl *m)
{
	if (m->ctl)
		tool_control_close(m->ctl);
	m->ctl = NULL;
}
#else
int mount_ctl_wait_gone(const char *path, int timeout_ms)
{
	(void)path;
	(void)timeout_ms;
	return -EOPNOTSUPP;
}

int mount_ctl_path(const char *mountpoint, bool create, char *buf, size_t cap)
{
	(void)mountpoint;
	(void)create;
	(void)buf;
	(void)cap;
	return -EOPNOTSUPP;
}
#endif
