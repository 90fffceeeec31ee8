#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The issue's benchmark against the Linux kernel, in qemu guests
# (tests/vm/bench-kernel.sh inside tests/vm/rr-vm.sh):
#   1. rxe0, provider verbs, and 2. siw0, provider iwarp: our nfsrdma
#      client vs the kernel's client, both against the kernel's nfsd
#      (goal: ours >= 1.0x), and the kernel's client against nfsrdmad vs
#      against the kernel's nfsd (goal: ours >= 0.8x).
#   With -M fuse instead: fio through our FUSE mount of the kernel's nfsd
#   vs through the kernel's client of it (goal: ours >= 0.8x), beside fio
#   through a FUSE file system that does nothing (tests/fuse/null_fs.c)
#   and nfsrdma bench of the same nfsd: what FUSE and our client each
#   cost, and the ratio the two allow together.
#   With -A OTHER_BUILD: two FUSE mounts of the kernel's nfsd, this
#   build's and OTHER_BUILD's, and the kernel's client, taking turns in an
#   order that rotates each round (use -r 6 or more): whether a change
#   helps the mount, judged within one guest, since the guest's speed
#   moves more between boots than most changes do.
# Figures, not assertions. Under TCG the absolute numbers mean little and
# the ratios are noisy, more so while the machine is busy: run it on a
# quiet machine and more than once before believing a ratio.
#
#   scripts/vm-bench.sh [-B BUILD] [-C CACHE] [-s SECONDS] [-m MIB] [-r N]
#                       [-M all|client|server|fuse] [-A OTHER_BUILD]
#     -B  build tree with bin/nfsrdma and bin/nfsrdmad (default build)
#     -C  the guest's cache dir (default BUILD/vm-cache); siw.ko is built
#         into it on first use (tests/vm/build-siw.sh)
#     -s  seconds per run (default 8); -m  file size in MiB (default 64)
#     -r  rounds of each pair of runs, alternating which goes first
#         (default 2)
#     -M  which comparisons (default all: client and server)
#     -A  compare this build's FUSE mount with OTHER_BUILD's (mode fuse-ab)
# Exit: 0 when both guests ran every run; 77 when no guest can run here.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build CACHE='' SECS=8 MIB=64 ROUNDS=2 MODE=all OTHER=''
while getopts "B:C:s:m:r:M:A:h" o; do
	case $o in
	B) BUILD=$(cd "$OPTARG" && pwd) || exit 2 ;;
	C) CACHE=$OPTARG ;;
	s) SECS=$OPTARG ;;
	m) MIB=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	M) MODE=$OPTARG ;;
	A) OTHER=$(cd "$OPTARG" && pwd) || exit 2 ;;
	*) sed -n '4,34p' "$0"; exit 2 ;;
	esac
done
CACHE=${CACHE:-$BUILD/vm-cache}
if [ -n "$OTHER" ]; then
	[ -x "$OTHER/bin/nfsrdma" ] ||
		{ echo "vm-bench: no $OTHER/bin/nfsrdma (build it first)" >&2; exit 2; }
	MODE=fuse-ab
fi
for b in nfsrdma nfsrdmad; do
	[ -x "$BUILD/bin/$b" ] || { echo "vm-bench: no $BUILD/bin/$b (build first)" >&2; exit 2; }
done
for t in fio jq; do
	command -v $t >/dev/null ||
		{ echo "vm-bench: SKIP: $t not found (scripts/install-deps.sh)" >&2; exit 77; }
done
# -M fuse: FUSE alone (tests/fuse/null_fs.c) beside the mount, when built
NULLFS=$BUILD/tests/fuse/null_fs
[ -x "$NULLFS" ] || NULLFS=''
LOGS=$(mktemp -d /tmp/rr-vm-bench.XXXXXX)

# guest NAME DEV DEVICE PROVIDER MODE: one guest, its log kept for the end.
guest() {
	local name=$1 dev=$2
	shift 2
	echo "== vm-bench: $name (guest device $dev)"
	RR_BENCH_SECONDS=$SECS RR_BENCH_MIB=$MIB RR_BENCH_ROUNDS=$ROUNDS \
		RR_NULLFS=$NULLFS RR_NFSRDMA_B=${OTHER:+$OTHER/bin/nfsrdma} \
		"$ROOT/tests/vm/rr-vm.sh" -C "$CACHE" -d "$dev" -m 2G -t 900 -- \
		"$ROOT/tests/vm/bench-kernel.sh" "$BUILD/bin/nfsrdma" \
		"$BUILD/bin/nfsrdmad" "$@" 2>&1 | tee "$LOGS/$name.log"
	return "${PIPESTATUS[0]}"
}

rc=0
guest rxe rxe rxe0 verbs "$MODE" || rc=$?
[ $rc = 77 ] && exit 77
guest siw siw siw0 iwarp "$MODE" || {
	r=$?
	# No siw.ko for this kernel: the rxe figures still stand.
	[ $r = 77 ] && echo "vm-bench: siw guest skipped, see above" >&2
	[ $r != 77 ] && [ $rc = 0 ] && rc=$r
}

echo
echo "== vm-bench: summary (${MIB} MiB files, $SECS s per run, $ROUNDS rounds; logs in $LOGS)"
for name in rxe siw; do
	sed -n '/^=== bench-kernel:/,$p' "$LOGS/$name.log"
done
exit $rc
