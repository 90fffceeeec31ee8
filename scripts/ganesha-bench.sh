#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Issue 22's server against its peer: nfsrdmad and NFS-Ganesha (FSAL_VFS,
# Debian's nfs-ganesha-vfs) exporting the same temporary directory on
# this host, with the same client (nfsrdma bench) in the same run: 1 MiB
# sequential read and write at depth 4, 4 KiB random read at depth 16;
# Ganesha over TCP, nfsrdmad over TCP and over RDMA (iwarp), with ratios
# against Ganesha (goals: 1.2x over TCP, 2x over RDMA). Under each read
# row, what one thread serving those READs does on this host with no RPC
# (nfsrdma bench's server row), and what ours and 2x Ganesha are of it.
# The file read is in the page cache for both (a tmpfs $TMPDIR keeps it
# there where the host takes page cache back). Figures and ratios, not
# assertions; run it
# on a quiet machine, as root (Ganesha needs it), more than once before
# believing a ratio.
#
#   scripts/ganesha-bench.sh [-B BUILD] [-s SECONDS] [-m MIB] [-r ROUNDS]
#     -B  build tree with bin/nfsrdma and bin/nfsrdmad (default build)
#     -s  seconds per run (default 5); -m  file size in MiB (default 256)
#     -r  rounds of each row, the servers taking turns, each figure their
#         median (default 1)
# Exit: 0 when every run ran; 77 when something it needs is missing.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build SECS=5 MIB=256 ROUNDS=1
while getopts "B:s:m:r:h" o; do
	case $o in
	B) BUILD=$(cd "$OPTARG" && pwd) || exit 2 ;;
	s) SECS=$OPTARG ;;
	m) MIB=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	*) sed -n '4,19p' "$0"; exit 2 ;;
	esac
done

skip() {
	echo "ganesha-bench: SKIP: $*" >&2
	exit 77
}
fail() {
	echo "ganesha-bench: FAIL: $*" >&2
	ganesha_log >&2
	[ -f "$tmp/nfsrdmad.err" ] && tail -5 "$tmp/nfsrdmad.err" | sed 's/^/  nfsrdmad: /' >&2
	exit 1
}
# shellcheck source=tests/lib/ganesha.sh
. "$ROOT/tests/lib/ganesha.sh"

for b in "$BUILD/bin/nfsrdmad" "$BUILD/bin/nfsrdma"; do
	[ -x "$b" ] || skip "no $b (build first)"
done
ganesha_need VFS
command -v jq >/dev/null 2>&1 || skip "jq not found"
command -v bc >/dev/null 2>&1 || skip "bc not found"

tmp=$(mktemp -d)
# shellcheck disable=SC2034 # GANESHA_TMP and BENCH_*: tests/lib/ganesha.sh's
GANESHA_TMP=$tmp
cleanup() {
	nfsrdmad_stop
	ganesha_stop
	rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$tmp/export"
ganesha_vfs "$tmp/export"
nport=$GANESHA_NPORT mport=$GANESHA_MPORT
nfsrdmad_start "$BUILD/bin/nfsrdmad" --export "$tmp/export" \
	--state-dir "$tmp/state"

# One file to read, in the page cache, the same for both servers (the
# read rows use big.g and big.n: one file under two names).
head -c $((MIB * 1024 * 1024)) /dev/urandom >"$tmp/export/big.g"
ln "$tmp/export/big.g" "$tmp/export/big.n"
cat "$tmp/export/big.g" >/dev/null

# shellcheck disable=SC2034 # read by bench_row
BENCH_NFSRDMA=$BUILD/bin/nfsrdma BENCH_BASE=nfs://127.0.0.1$tmp/export \
	BENCH_SECONDS=$SECS BENCH_ROUNDS=$ROUNDS BENCH_LIMIT=1 \
	BENCH_GQ="?proto=tcp&nfsport=$nport&mountport=$mport" \
	BENCH_TQ="?proto=tcp&nfsport=$NFSRDMAD_TCP&mountport=$NFSRDMAD_MOUNT" \
	BENCH_RQ="?nfsport=$NFSRDMAD_RDMA&mountport=$NFSRDMAD_MOUNT"

echo "nfsrdma bench, $SECS s each, one directory ($MIB MiB file); ratios against Ganesha (VFS) over TCP"
[ "$ROUNDS" -le 1 ] || echo "each figure the median of $ROUNDS rounds"
echo "nfsrdmad: --threads 4 (default), one connection a client; Ganesha: its defaults"
echo "goals: nfsrdmad over TCP >= 1.2x, over RDMA (iwarp) >= 2x"
bench_header
bench_row read 1M 4 MB/s big
bench_row write 1M 4 MB/s new
bench_row randread 4K 16 calls/s big
