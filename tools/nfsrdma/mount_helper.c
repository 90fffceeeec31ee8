// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfsrdma as mount(8)'s helper, so that `mount -t fuse.nfsrdma URL DIR`
 * and an fstab line mount through FUSE as `nfsrdma mount` does. mount(8)
 * runs /sbin/mount.fuse.nfsrdma (installed as a link to nfsrdma) as
 *
 *   mount.fuse.nfsrdma URL DIR [-sfnv] [-N NS] [-o OPTIONS] [-t TYPE]
 *
 * and fuse3's mount.fuse3, where that link is missing, runs
 * `nfsrdma URL DIR -o OPTIONS`. Both come here. fstab's own options
 * (defaults, noauto, user, _netdev, nofail, x-*, comment=) are for
 * mount(8), not the file system: they are dropped before the rest goes
 * to `nfsrdma mount`. -f is mount(8)'s "fake": check, do not mount.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfsrdma.h"

#define HELPER_NAME "mount.fuse.nfsrdma"

bool mount_helper_called(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');

	base = base ? base + 1 : argv[0];
	return !strcmp(base, HELPER_NAME) ||
	       (argc > 2 && strstr(argv[1], "://") && argv[2][0] != '-');
}

static bool mount8_only(const char *opt)
{
	static const char *const words[] = {
		"defaults", "auto",  "noauto",	"user",	  "users", "nouser",
		"owner",    "group", "_netdev", "nofail", "sw",
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(opt, words[i]))
			return true;
	return !strncmp(opt, "x-", 2) || !strncmp(opt, "comment=", 8);
}

/* opts without mount(8)'s own; malloc'd ("" when nothing is left). */
static char *fs_options(const char *opts)
{
	char *copy = strdup(opts ? opts : ""), *out, *save = NULL;

	out = calloc(1, strlen(opts ? opts : "") + 1);
	if (!copy || !out) {
		free(copy);
		free(out);
		return NULL;
	}
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (mount8_only(t))
			continue;
		if (*out)
			strcat(out, ",");
		strcat(out, t);
	}
	free(copy);
	return out;
}

int mount_helper(int argc, char **argv)
{
	struct cli c = {.rw = "read", .size = 1 << 20, .seconds = 5};
	const char *opts = NULL;
	bool fake = false, verbose = false;
	char *pos[2], *fsopts;
	int opt, rc;

	if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-') {
		fprintf(stderr, "usage: " HELPER_NAME
				" URL DIR [-sfnv] [-o OPTIONS]\n");
		return 2;
	}
	pos[0] = argv[1];
	pos[1] = argv[2];
	optind = 3;
	while ((opt = getopt(argc, argv, "sfnvo:t:N:")) != -1) {
		if (opt == 'o')
			opts = optarg;
		else if (opt == 'f')
			fake = true;
		else if (opt == 'v')
			verbose = true;
		else if (opt == 'N')
			return cli_failf(HELPER_NAME
					 ": -N (another mount "
					 "namespace) is not supported");
		else if (opt == '?')
			return 2;
	}
	fsopts = fs_options(opts);
	if (!fsopts)
		return cli_fail("-o", -ENOMEM);
	if (verbose)
		fprintf(stderr, "nfsrdma mount %s %s -o '%s'\n", pos[0], pos[1],
			fsopts);
	c.mount_opts = fsopts;
	c.argc = 2;
	c.argv = pos;
	rc = fake ? 0 : cmd_mount(&c);
	free(fsopts);
	return rc;
}
