#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Issue 19's benchmark: nfsrdmad (backend=cephfs) against NFS-Ganesha
# with FSAL_CEPH, the server users run on CephFS today, on one throw-away
# cluster (tests/ceph/cephlab.sh), with the same client (nfsrdma bench)
# in the same run: 1 MiB sequential read and write, 4 KiB random read at
# depth 16; Ganesha over TCP, nfsrdmad over TCP and over RDMA (iwarp),
# with ratios against Ganesha (goals: 1.0x over TCP, 1.2x over RDMA),
# then the cluster's own rate for each (tests/ceph/ceph_limit.c: the same
# I/O from a libcephfs client with no NFS server in its way).
# Figures and ratios, not assertions; run it on a quiet machine, as root
# (Ganesha needs it), more than once before believing a ratio.
#
#   scripts/ceph-bench.sh [-B BUILD] [-s SECONDS] [-r ROUNDS]
#     -B  build tree with bin/nfsrdma, bin/nfsrdmad and the nfs3_client
#         test (default build); -s  seconds per run (default 5);
#     -r  rounds of each row, the servers taking turns, and the median of
#         each printed (default 1): the memstore OSD's rate swings by 2-4x
#         from one run to the next on a small VM
# Exit: 0 when every run ran; 77 when something it needs is missing.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build SECS=5 ROUNDS=1
while getopts "B:s:r:h" o; do
	case $o in
	B) BUILD=$(cd "$OPTARG" && pwd) || exit 2 ;;
	s) SECS=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	*) sed -n '4,21p' "$0"; exit 2 ;;
	esac
done
CLIENT=$BUILD/tests/nfs3/client/nfs3_client
for b in "$BUILD/bin/nfsrdmad" "$BUILD/bin/nfsrdma" "$CLIENT"; do
	[ -x "$b" ] || { echo "ceph-bench: SKIP: no $b (build first)" >&2; exit 77; }
done
LIMIT=$BUILD/tests/ceph/ceph_limit
[ -x "$LIMIT" ] || LIMIT=''
CEPH_LIMIT=$LIMIT BENCH_ROUNDS=$ROUNDS exec "$ROOT/tests/ceph/ganesha_ceph.sh" bench "$BUILD/bin/nfsrdmad" \
	"$BUILD/bin/nfsrdma" "$CLIENT" "$ROOT/tests/ceph/cephlab.sh" "$SECS"
