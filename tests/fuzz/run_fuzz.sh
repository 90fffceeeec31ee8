#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Builds one libFuzzer harness with clang and runs it for a bounded time.
#   run_fuzz.sh SRCDIR OUTDIR NAME SECONDS SOURCES...
# The committed seed corpus is read, never written: new inputs go to a
# scratch directory. Exit 77 (skipped) when clang or libFuzzer is missing.
set -euo pipefail

src=$1 out=$2 name=$3 secs=$4
shift 4

cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cc" ]; then
	echo "SKIP: clang not installed (Debian: clang, libclang-rt-14-dev)"
	exit 77
fi
mkdir -p "$out"
bin="$out/$name"
sources=()
for f in "$@"; do sources+=("$src/$f"); done
if ! "$cc" -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -D_GNU_SOURCE \
	-I"$src/src" -I"$src/include" "$src/tests/fuzz/$name.c" \
	"${sources[@]}" -o "$bin" 2>"$out/$name.build.log"; then
	if grep -q "libclang_rt.fuzzer\|fuzzer.*not found\|cannot find" \
		"$out/$name.build.log"; then
		echo "SKIP: libFuzzer runtime missing (Debian: libclang-rt-14-dev)"
		exit 77
	fi
	cat "$out/$name.build.log" >&2
	exit 1
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# libFuzzer's own exit code for a crash is 77, which ctest reads as a
# skip: a crash must be a failure.
"$bin" -max_total_time="$secs" -print_final_stats=1 \
	-error_exitcode=1 -timeout_exitcode=1 \
	-artifact_prefix="$out/$name-" "$scratch" \
	"$src/tests/fuzz/corpus/${name#fuzz_}" 2>&1 | tail -n 25
