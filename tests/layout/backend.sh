#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The NFS procedures reach the file system only through the storage
# backend interface (issue 19, src/nfs3/server/backend/backend.h): the
# procedure files make no file-system call of their own, so a backend
# other than the local directory (CephFS) serves them unchanged.
#
# usage: backend.sh SOURCE_DIR | backend.sh --self-test
set -u
# the procedures, and the helpers they share
procs='ops.c dir.c rw.c readdir.c attr.c obj.c proc.c'
calls='open|openat|openat2|close|stat|lstat|fstat|fstatat|statx|access|faccessat'
calls+='|read|write|pread|pwrite|preadv|pwritev|preadv2|pwritev2|readv|writev'
calls+='|rename|renameat|renameat2|unlink|unlinkat|rmdir|mkdir|mkdirat|mknod|mknodat'
calls+='|link|linkat|symlink|symlinkat|readlink|readlinkat|truncate|ftruncate'
calls+='|fsync|fdatasync|sync_file_range|statvfs|fstatvfs|statfs|fstatfs'
calls+='|fpathconf|pathconf|getdents|getdents64|opendir|fdopendir|readdir'
calls+='|seekdir|telldir|closedir|utimensat|futimens|chmod|fchmod|fchmodat'
calls+='|chown|fchown|fchownat|lchown|open_by_handle_at|name_to_handle_at'
calls+='|fcntl|flock|lockf|setxattr|getxattr|fsetxattr|fgetxattr'

# check DIR: prints each file-system call in DIR's procedure files; exit 1
# if any. Calls through an ops table (be->read(...)) are not the
# procedures' own.
check() {
	local hits f
	hits=$(for f in $procs; do
		[ -f "$1/$f" ] || continue
		grep -nHE "(^|[^_a-zA-Z0-9>.])($calls)\(" "$1/$f" |
			grep -vE ':[0-9]+:\s*(/?\*|//)'
	done)
	[ -z "$hits" ] && return 0
	echo "file-system calls in the NFSv3 procedures (use the backend):"
	echo "$hits"
	return 1
}

if [ "${1:-}" = --self-test ]; then
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	printf 'n = be->read(c, &f, &iov, 1, off);\n/* fsync(fd) in a comment */\nrr__nfsd_stat(x);\n' >"$t/rw.c"
	check "$t" >/dev/null || { echo "FAIL: a clean tree was refused"; exit 1; }
	for bad in 'n = pread(fd, b, n, 0);' 'if (fsync(fd))' \
		'rc = renameat(a, b, c, d);' 'dp = fdopendir(fd);'; do
		printf '%s\n' "$bad" >"$t/ops.c"
		if check "$t" >/dev/null; then
			echo "FAIL: '$bad' was not caught"
			exit 1
		fi
		echo "caught: $bad"
	done
	exit 0
fi
check "${1:?usage: backend.sh SOURCE_DIR | --self-test}/src/nfs3/server"
