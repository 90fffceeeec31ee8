#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Quick start, step 2: builds and runs every check. Installs nothing
# (scripts/bootstrap.sh does that). .ci/run calls this.
#
#   build/       RelWithDebInfo, all tests; the guest tests (label vm)
#                beside everything after the build, reported at the end
#   build-asan/  ASan+UBSan, labels unit and integration
#   build-tsan/  TSan, label integration
#   build-release/  Release, as scripts/bootstrap.sh builds it: compiled
#                only, since -O3 warns (-Werror) where -O2 does not
#
# The last line printed is "N passed, N failed, N skipped", summed over the
# three ctest runs (a build that fails counts as one failure). Skipped tests
# are those that exited 77 because something they need is missing; ctest's
# output says why. Exit status is non-zero if anything failed.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
jobs=$(nproc 2>/dev/null || echo 2)

# ---------------------------------------------------------- prerequisites
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc >/dev/null 2>&1 || need+=(gcc)
if ! command -v pkg-config >/dev/null 2>&1; then
	need+=(pkg-config)
elif ! pkg-config --exists cmocka; then
	need+=(libcmocka-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
	echo "check: missing ${need[*]}; run 'sudo scripts/bootstrap.sh' first" \
		"(it installs what the project needs)" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
if ! command -v tshark >/dev/null 2>&1; then
	echo "check: note: tshark is missing, so the wire tests will be" \
		"skipped ('sudo scripts/bootstrap.sh' installs it)"
fi

passed=0
failed=0
skipped=0
summary=()

# Adds the counts of a ctest JUnit file to the totals; a run that left
# none (ctest itself failed) counts as one failure.
tally() { # tally NAME JUNIT_FILE
	local name=$1 xml=$2 t=0 f=0 s=0 d=0 p

	if [ ! -s "$xml" ]; then
		echo "check: $name: ctest left no results ($xml)"
		failed=$((failed + 1))
		summary+=("$name: ctest FAILED (no results)")
		return
	fi
	attr() {
		sed -n "s/^[[:space:]]*$1=\"\([0-9]*\)\".*/\1/p" "$xml" |
			head -1
	}
	t=$(attr tests)
	f=$(attr failures)
	s=$(attr skipped)
	d=$(attr disabled)
	t=${t:-0} f=${f:-0} s=${s:-0} d=${d:-0}
	p=$((t - f - s - d))
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s + d))
	summary+=("$name: $p passed, $f failed, $((s + d)) skipped")
}

# build NAME BUILD_DIR "CMAKE_ARGS": false, and one failure counted, if
# it does not build.
build() {
	local name=$1 dir=$2 cmake_args=$3

	echo
	echo "=== $name: configure and build $dir/ ==="
	# shellcheck disable=SC2086 # cmake_args is a word list
	if cmake -S . -B "$dir" $cmake_args &&
		cmake --build "$dir" -j"$jobs"; then
		return 0
	fi
	echo "check: $name: build failed"
	failed=$((failed + 1))
	summary+=("$name: build FAILED")
	return 1
}

# run_ctest NAME BUILD_DIR JUNIT_FILE [ctest args...]: no tally, so that
# a run in the background can be counted once it ends.
run_ctest() {
	local name=$1 dir=$2 xml=$3
	shift 3

	echo
	echo "=== $name: ctest $* ==="
	rm -f "$xml"
	ctest --test-dir "$dir" --output-on-failure --output-junit "$xml" "$@"
}

# run_suite NAME BUILD_DIR "CMAKE_ARGS" [ctest args...]
run_suite() {
	local name=$1 dir=$2 cmake_args=$3 xml=$PWD/$2/ctest-junit.xml
	shift 3

	build "$name" "$dir" "$cmake_args" || return
	run_ctest "$name" "$dir" "$xml" "$@"
	tally "$name" "$xml"
}

# The guest tests (label vm) take one guest at a time, and a TCG guest
# keeps about one of two cores busy for 20-25 minutes. Run in line, they
# were the default run's whole length, and the sanitizer runs after it
# kept the CPUs only 56-85% busy. So they run beside every later phase,
# from build/, and their output is printed at the end.
vm_pid=
vm_log=$PWD/build/ctest-vm.log
vm_xml=$PWD/build/ctest-vm-junit.xml
if build "default" build "-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRR_SANITIZE="; then
	echo
	echo "=== vm: ctest -L vm, beside the phases below; output at the end ==="
	run_ctest "vm" build "$vm_xml" -L vm >"$vm_log" 2>&1 </dev/null &
	vm_pid=$!
	run_ctest "default" build "$PWD/build/ctest-junit.xml" -j2 -LE vm
	tally "default" "$PWD/build/ctest-junit.xml"
fi

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	run_suite "asan" build-asan \
	"-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRR_SANITIZE=address" \
	-j2 -L 'unit|integration'

TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1} \
	run_suite "tsan" build-tsan \
	"-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRR_SANITIZE=thread" \
	-j2 -L integration

build "release" build-release "-DCMAKE_BUILD_TYPE=Release -DRR_SANITIZE=" &&
	summary+=("release: built (no tests run)")

if [ -n "$vm_pid" ]; then
	wait "$vm_pid"
	echo
	echo "=== vm: ran beside the phases above ==="
	cat "$vm_log"
	tally "vm" "$vm_xml"
fi

echo
echo "=== summary ==="
for line in "${summary[@]}"; do
	echo "  $line"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
