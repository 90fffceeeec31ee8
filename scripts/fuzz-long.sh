#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Long fuzzing run: every libFuzzer harness of tests/fuzz for SECONDS each
# (default 3600), one after the other (the machine's cores are few).
#   scripts/fuzz-long.sh [SECONDS]
# Environment: RR_FUZZ_RESULTS (default build-fuzz/<UTC time> in the
# source tree, which git ignores),
# RR_FUZZ_ONLY (space-separated harness names to run; default all).
#
# Harnesses and their sources are read from tests/fuzz/CMakeLists.txt (the
# rr_fuzz lines), so the list ctest runs and this one cannot drift. Each is
# built with clang exactly as tests/fuzz/run_fuzz.sh builds it. The
# committed seed corpus is read, never written; new inputs go to
# RESULTS/corpus/NAME (copy the interesting ones into tests/fuzz/corpus),
# crash inputs to RESULTS/crashes/NAME-*, the full log to RESULTS/NAME.log.
# Exit status: 0 when no harness crashed, 1 otherwise, 77 without clang.
set -euo pipefail

secs=${1:-3600}
case $secs in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS]" >&2
	exit 2
	;;
esac
src=$(cd "$(dirname "$0")/.." && pwd)
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cc" ]; then
	echo "SKIP: clang not installed (Debian: clang, libclang-rt-14-dev)"
	exit 77
fi
res=${RR_FUZZ_RESULTS:-$src/build-fuzz/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$res/bin" "$res/corpus" "$res/crashes"
res=$(cd "$res" && pwd)


# "name src1 src2 ..." per harness, from the CMake list.
harnesses() {
	sed -n 's/^rr_fuzz(\(.*\))[[:space:]]*$/\1/p' \
		"$src/tests/fuzz/CMakeLists.txt"
}

build() {
	local name=$1 bin=$res/bin/$1
	shift
	local sources=()
	for f in "$@"; do sources+=("$src/$f"); done
	"$cc" -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -D_GNU_SOURCE \
		-I"$src/src" -I"$src/include" "$src/tests/fuzz/$name.c" \
		"${sources[@]}" -o "$bin" 2>"$res/$name.build.log"
}

stat_of() { # the value of a -print_final_stats line, or "?"
	sed -n "s/^stat::$1:[[:space:]]*//p" "$2" | tail -n 1 | grep . ||
		echo "?"
}

summary=()
failed=0
while read -r name sources; do
	if [ -n "${RR_FUZZ_ONLY:-}" ] && [[ " $RR_FUZZ_ONLY " != *" $name "* ]]; then
		continue
	fi
	# shellcheck disable=SC2086 # sources is a list
	if ! build "$name" $sources; then
		echo "$name: build failed, see $res/$name.build.log" >&2
		summary+=("$(printf '%-22s BUILD FAILED' "$name")")
		failed=1
		continue
	fi
	mkdir -p "$res/corpus/$name"
	seeds=$src/tests/fuzz/corpus/${name#fuzz_}
	before=$(find "$res/corpus/$name" -type f | wc -l)
	echo "== $name: ${secs}s (log: $res/$name.log)"
	status=ok
	if ! "$res/bin/$name" -max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$res/crashes/$name-" \
		"$res/corpus/$name" "$seeds" >"$res/$name.log" 2>&1; then
		status=CRASH
		failed=1
	fi
	after=$(find "$res/corpus/$name" -type f | wc -l)
	crashes=$(find "$res/crashes" -name "$name-*" -type f | wc -l)
	summary+=("$(printf '%-22s %-6s execs %-12s exec/s %-8s new-corpus %-6s crashes %s' \
		"$name" "$status" "$(stat_of number_of_executed_units "$res/$name.log")" \
		"$(stat_of average_exec_per_sec "$res/$name.log")" \
		"$((after - before))" "$crashes")")
	tail -n 6 "$res/$name.log"
done < <(harnesses)

echo
echo "== fuzz-long summary (${secs}s each; results in $res)"
printf '%s\n' "${summary[@]}"
exit $failed
