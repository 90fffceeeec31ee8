#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: nfsrdma-knfsd.sh NFSRDMA [DEVICE] [PROVIDER]
# In an rr-vm.sh guest: our nfsrdma client (provider PROVIDER, iwarp by
# default) against the Linux kernel's NFS server, whose RDMA listener is
# on DEVICE (siw0 by default; knfsd-rdma.sh starts it), MOUNT over TCP to
# rpc.mountd. Files of sizes that travel inline, in read chunks (WRITE)
# and in write chunks (READ) are put and got back with --verify and
# compared with what the kernel stored; a listing large enough for a reply
# chunk must match the directory; then stat, mkdir, mv and rm. The
# kernel's svcrdma counters must show RDMA Reads for the WRITEs and RDMA
# Writes for the READs and the listing, so the bulk paths were taken.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
CLI=${1:?nfsrdma binary} DEV=${2:-siw0} PROV=${3:-iwarp}
EXP=/srv/rr-knfsd PORT=20049 MPORT=20048
W=$(mktemp -d /run/rr-nfsrdma.XXXXXX)
STATS=/proc/sys/sunrpc/svc_rdma

finish() {
	local rc=$?
	if [ $rc != 0 ]; then
		echo "=== svcrdma counters"
		grep -H . "$STATS"/rdma_stat_* 2>/dev/null
		echo "=== last client output"
		tail -n 20 "$W/cli.out" 2>/dev/null
	fi
	exit $rc
}
trap finish EXIT

url() { echo "nfs://$ADDR$EXP/$1?mountport=$MPORT&provider=$PROV"; }

# One client command, bounded; its output kept for a failure report.
cli() {
	timeout 120 "$CLI" "$@" >"$W/cli.out" 2>&1
	local rc=$?
	cat "$W/cli.out"
	return $rc
}

stat_of() { cat "$STATS/rdma_stat_$1"; }

# put --verify, compare with the kernel's copy, get --verify, compare.
round_trip() {
	local name=$1 size=$2
	randfile "$W/$name" "$size"
	cli put --verify "$W/$name" "$(url "$name")" ||
		fail "put $name ($size bytes)"
	same "$W/$name" "$EXP/$name" "$name as the kernel stored it"
	cli get --verify "$(url "$name")" "$W/$name.back" ||
		fail "get $name ($size bytes)"
	same "$W/$name" "$W/$name.back" "$name read back"
	ok "$name: $size bytes there and back"
}

small_files() {
	step "files that fit inline"
	round_trip empty 0
	round_trip tiny 200
	round_trip page 3000
}

# A WRITE whose data is in read chunks makes svcrdma post RDMA Reads; a
# READ whose data goes in write chunks, RDMA Writes.
big_files() {
	local size=$((4 * 1024 * 1024 + 4097)) r0 w0
	step "files that need chunks"
	round_trip mid $((64 * 1024 + 5))
	r0=$(stat_of read) w0=$(stat_of write)
	round_trip big $size
	[ "$(stat_of read)" -gt "$r0" ] ||
		fail "knfsd posted no RDMA Read for our WRITEs (read chunks)"
	[ "$(stat_of write)" -gt "$w0" ] ||
		fail "knfsd posted no RDMA Write for our READs (write chunks)"
	ok "svcrdma: RDMA Reads $r0 -> $(stat_of read)," \
		"RDMA Writes $w0 -> $(stat_of write)"
	cli stat "$(url big)" || fail "stat big"
	grep -q "Size: ${size}[[:space:]]" "$W/cli.out" ||
		fail "stat big: size is not $size"
	ok "stat: size $size"
}

# Made in the kernel's export directly; only the listing goes over NFS.
listing() {
	local n=300 w0
	step "directory of $n entries"
	mkdir "$EXP/dir" && (cd "$EXP/dir" && many_names $n | xargs touch) ||
		fail "create $n files in $EXP/dir"
	w0=$(stat_of write)
	cli ls "$(url dir)" >/dev/null || fail "ls dir"
	awk 'NF >= 8 {print $8}' "$W/cli.out" | grep -vx '\.\|\.\.' |
		sort >"$W/names.client"
	many_names $n | sort >"$W/names.want"
	same "$W/names.want" "$W/names.client" "names listed by the client"
	[ "$(stat_of write)" -gt "$w0" ] ||
		fail "knfsd posted no RDMA Write for the listing (reply chunk)"
	ok "$n entries listed (reply chunk)"
}

namespace() {
	step "mkdir, mv, rm"
	cli mkdir "$(url sub)" || fail "mkdir sub"
	[ -d "$EXP/sub" ] || fail "the kernel shows no directory sub"
	cli mv "$(url big)" sub/big.moved || fail "mv big"
	[ ! -e "$EXP/big" ] || fail "big is still in the export after mv"
	same "$W/big" "$EXP/sub/big.moved" "moved file"
	cli rm "$(url sub/big.moved)" || fail "rm sub/big.moved"
	cli rm "$(url sub)" || fail "rm sub"
	[ ! -e "$EXP/sub" ] || fail "sub is still on the server"
	ok "made, moved and removed, as the kernel shows"
}

"$HERE/knfsd-rdma.sh" "$DEV" "$EXP" $PORT $MPORT || exit 1
small_files
big_files
listing
namespace
echo "nfsrdma-knfsd: ok"
