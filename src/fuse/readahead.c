// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The mount's read-ahead window. FUSE gives a new mount the kernel's
 * default of 128 KiB whatever the daemon asks in INIT, so sequential
 * reads come one or two 128 KiB requests at a time however large rsize
 * is. The kernel NFS client opens its window to rsize * 15; we do the
 * same through the mount's backing device in sysfs, which only root may
 * write (others keep the default, and are told once).
 *
 * The device is found in /proc/self/mountinfo, not by stat(2) of the
 * mount point: the mount's own daemon is not serving requests yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fpriv.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] &&
		    s[3]) {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

int rr__fuse_mount_dev(const char *mountpoint, char *dev, size_t cap)
{
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	char line[4096], mid[64], mp[4096];
	int rc = -ENOENT;

	if (!mi)
		return -errno;
	while (fgets(line, sizeof(line), mi)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... */
		if (sscanf(line, "%*s %*s %63s %*s %4095s", mid, mp) != 2)
			continue;
		unescape(mp);
		if (!strcmp(mp, mountpoint) && strlen(mid) < cap) {
			strcpy(dev, mid); /* later lines are newer mounts */
			rc = 0;
		}
	}
	fclose(mi);
	return rc;
}

int rr__fuse_set_readahead(const char *mountpoint, unsigned kb)
{
	char dev[64], path[128], val[32];
	int fd, rc = rr__fuse_mount_dev(mountpoint, dev, sizeof(dev));
	ssize_t n;

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(val, sizeof(val), "%u\n", kb);
	n = write(fd, val, strlen(val));
	rc = n < 0 ? -errno : 0;
	close(fd);
	return rc;
}

unsigned rr__fuse_readahead_kb(const struct rr_fuse_opts *o, uint32_t rtmax)
{
	if (o->readahead_kb != RR_FUSE_READAHEAD_AUTO)
		return o->readahead_kb;
	return rtmax / 1024 * 15;
}
