#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: nfsrdma-knfsd-sizes.sh NFS3_CLIENT_TEST [DEVICE] [PROVIDER]
# In an rr-vm.sh guest: the size sweeps of our client's end-to-end test
# (tests/nfs3/client/nfs3_client.c, run with RR_TEST_NFS_URL) against the
# Linux kernel's NFS server, whose RDMA listener is on DEVICE (siw0 by
# default; knfsd-rdma.sh starts it), our client on PROVIDER (iwarp by
# default): READ and WRITE of every size from 1 byte to 12 KiB (every byte
# from 3396 to 4395, where calls and replies cross the 4 KiB inline size),
# byte-compared through the client and in the export; SYMLINK and
# READLINK with targets of every length to 4095 (every length from 3500),
# compared likewise. The client's transport counters (RDMA_ERROR replies,
# bad headers, lost connections, connects, retransmissions) must not move
# in either sweep. svcrdma's counters must show RDMA Reads (the WRITEs
# too long to go inline came in read chunks) and RDMA Writes (READ
# replies in write chunks), so both chunk paths were crossed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
TEST=${1:?nfs3_client binary} DEV=${2:-siw0} PROV=${3:-iwarp}
EXP=/srv/rr-knfsd PORT=20049 MPORT=20048
STATS=/proc/sys/sunrpc/svc_rdma
W=$(mktemp -d /run/rr-sizes.XXXXXX)

finish() {
	local rc=$?
	if [ $rc != 0 ]; then
		echo "=== svcrdma counters"
		grep -H . "$STATS"/rdma_stat_* 2>/dev/null
		echo "=== the sweeps' last output"
		tail -n 40 "$W/sweep.out" 2>/dev/null
	fi
	exit $rc
}
trap finish EXIT

stat_of() { cat "$STATS/rdma_stat_$1"; }

# The sweeps end before the guest's own bound, so their output is seen.
sweep() {
	local url="nfs://$ADDR$EXP?mountport=$MPORT&provider=$PROV"
	local bound=$(($(guest_secs_left) - 15))
	[ $bound -gt 30 ] || fail "only $bound s left in this guest"
	step "size sweeps of our client ($PROV) against knfsd on $DEV"
	RR_TEST_NFS_URL=$url RR_TEST_NFS_DIR=$EXP timeout "$bound" \
		"$TEST" >"$W/sweep.out" 2>&1
}

"$HERE/knfsd-rdma.sh" "$DEV" "$EXP" $PORT $MPORT || exit 1
r0=$(stat_of read) w0=$(stat_of write) t0=$SECONDS
sweep
rc=$?
grep '^\[' "$W/sweep.out" # cmocka's lines: each sweep's verdict
[ $rc = 0 ] || fail "the sweeps failed (exit $rc)"
ok "both sweeps passed in $((SECONDS - t0)) s"
[ "$(stat_of read)" -gt "$r0" ] ||
	fail "knfsd posted no RDMA Read: no WRITE came in a read chunk"
[ "$(stat_of write)" -gt "$w0" ] ||
	fail "knfsd posted no RDMA Write: no reply went in a chunk"
ok "svcrdma: RDMA Reads $r0 -> $(stat_of read)," \
	"RDMA Writes $w0 -> $(stat_of write)"
echo "nfsrdma-knfsd-sizes: ok"
