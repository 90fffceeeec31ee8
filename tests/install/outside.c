// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A program from outside the tree, built against an installed rpcrdma:
 * mounts URL, writes the file NAME in it over NFS, reads it back and
 * compares. Usage: outside nfs://HOST/EXPORT?... NAME  (0: they match)
 * It names the fabric provider too: a program of both libraries.
 */
#include <rpcrdma/fabric.h>
#include <rpcrdma/nfs3.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	static const char msg[] = "written from outside the tree\n";
	char back[sizeof(msg)] = {0};
	struct rr_nfs *n;
	struct rr_nfs_file *f;
	int rc;

	if (argc != 3 || (rc = rr_nfs_mount(argv[1], NULL, &n)))
		return fprintf(stderr, "mount: %s\n", rr_nfs_error()), 1;
	if ((rc = rr_nfs_open(n, argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644,
			      &f)) ||
	    rr_nfs_pwrite(f, msg, sizeof(msg) - 1, 0) != sizeof(msg) - 1 ||
	    rr_nfs_pread(f, back, sizeof(back), 0) != sizeof(msg) - 1 ||
	    memcmp(back, msg, sizeof(msg)) || rr_nfs_close(f))
		return fprintf(stderr, "file: %s\n", rr_nfs_error()), 1;
	printf("over %s, read back: %s", rr_fabric_default_provider(), back);
	return rr_nfs_umount(n) ? 1 : 0;
}
