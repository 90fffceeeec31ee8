#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Every allocation in src/ goes through base/alloc.h (rr_malloc and the
# rest), so the allocation-failure sweeps reach it: a libc call that
# allocates is allowed only behind RR_ALLOC_FAILS() on the same line.
#
# usage: alloc.sh SOURCE_DIR | alloc.sh --self-test
set -u
calls='malloc|calloc|realloc|strdup|strndup|realpath|fdopendir|aligned_alloc|posix_memalign|asprintf|vasprintf|open_memstream'

# check ROOT: prints each raw allocation; exit 1 if any.
check() {
	local hits
	hits=$(grep -rnE "(^|[^_a-zA-Z0-9])($calls)\(" "$1/src" \
		--include='*.c' --include='*.h' |
		grep -v "^$1/src/base/alloc.h:" |
		grep -vE ':[0-9]+:\s*(/?\*|//)' |
		grep -v 'RR_ALLOC_FAILS()')
	[ -z "$hits" ] && return 0
	echo "allocations that bypass base/alloc.h (rr_malloc, rr_realloc, ...):"
	echo "$hits"
	return 1
}

if [ "${1:-}" = --self-test ]; then
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	mkdir -p "$t/src/base"
	printf 'p = rr_malloc(4);\nq = RR_ALLOC_FAILS() ? NULL : realpath(x, NULL);\n/* realloc(p) in a comment */\n' >"$t/src/ok.c"
	check "$t" >/dev/null || { echo "FAIL: a clean tree was refused"; exit 1; }
	for bad in 'p = malloc(4);' 'r = realloc(s->r, n);' 'd = fdopendir(fd);' 'n = strdup(s);'; do
		printf '%s\n' "$bad" >"$t/src/bad.c"
		if check "$t" >/dev/null; then
			echo "FAIL: '$bad' was not caught"
			exit 1
		fi
		echo "caught: $bad"
	done
	exit 0
fi
check "${1:?usage: alloc.sh SOURCE_DIR | --self-test}"
