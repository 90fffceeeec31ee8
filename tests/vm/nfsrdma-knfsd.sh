#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: nfsrdma-knfsd.sh NFSRDMA [DEVICE] [PROVIDER]
# In an rr-vm.sh guest: our nfsrdma client (provider PROVIDER, iwarp by
# default) against the Linux kernel's NFS server, whose RDMA listener is
# on DEVICE (siw0 by default; knfsd-rdma.sh starts it), MOUNT over TCP to
# rpc.mountd. Files of sizes that travel inline, in read chunks (WRITE)
# and in write chunks (READ), up to 64 MiB, are put and got back with
# --verify (CRC32C of both ends) and compared byte for byte with what the
# kernel stored; a listing large enough for a reply chunk must match the
# directory; then stat, mkdir, mv and rm. The kernel's svcrdma counters
# must show RDMA Reads for the WRITEs and RDMA Writes for the READs and
# the listing, so the bulk paths were taken. Our client's own counters
# (--stats) must show that it took svcrdma's Send With Invalidate for the
# bulk transfers (none at all when it registers per call, not inviting
# it) and never saw one naming a key that was not the call's.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
CLI=${1:?nfsrdma binary} DEV=${2:-siw0} PROV=${3:-iwarp}
EXP=/srv/rr-knfsd PORT=20049 MPORT=20048
W=$(mktemp -d /run/rr-nfsrdma.XXXXXX)
STATS=/proc/sys/sunrpc/svc_rdma
RINV_TOTAL=0 UNINVITED=0

finish() {
	local rc=$?
	if [ $rc != 0 ]; then
		echo "=== svcrdma counters"
		grep -H . "$STATS"/rdma_stat_* 2>/dev/null
		echo "=== last client output"
		tail -n 20 "$W/cli.out" 2>/dev/null
		echo "=== its transport's counters (--stats)"
		tr '\n' ' ' <"$W/cli.stats" 2>/dev/null && echo
	fi
	exit $rc
}
trap finish EXIT

url() { echo "nfs://$ADDR$EXP/$1?mountport=$MPORT&provider=$PROV"; }

# One client command, bounded; its output kept for a failure report, and
# its transport's counters (--stats: "name value" lines at the end) in XS
# and checked (invs_sound).
declare -A XS
cli() {
	local rc k v
	# info: a lost connection says why
	RPCRDMA_LOG=info timeout 120 "$CLI" --stats "$@" >"$W/cli.out" 2>"$W/cli.err"
	rc=$?
	grep -E '^[a-z_]+ [0-9]+$' "$W/cli.err" >"$W/cli.stats"
	grep -vE '^[a-z_]+ [0-9]+$' "$W/cli.err" >>"$W/cli.out"
	cat "$W/cli.out"
	XS=()
	while read -r k v; do XS[$k]=$v; done <"$W/cli.stats"
	[ $rc != 0 ] && return $rc
	for k in regs local_invs remote_invs bad_remote_invs; do
		[ -n "${XS[$k]:-}" ] || fail "nfsrdma --stats printed no $k"
	done
	invs_sound "$1"
}

# A counter of the last client command's transport; 0 for one this build
# does not count.
xstat() { echo "${XS[$1]:-0}"; }

# After any command: no Send With Invalidate named a key that was not the
# call's (such a call would fail and the connection drop), and every key
# bound for a call is gone, invalidated by us or by the server,
# deregistered (sync_invs, registration per call), or fenced when its
# connection was lost (loss_fences: the call went again on the next).
invs_sound() {
	local bad regs inv
	bad=$(xstat bad_remote_invs) regs=$(xstat regs)
	inv=$(($(xstat local_invs) + $(xstat remote_invs) + $(xstat sync_invs) +
		$(xstat loss_fences)))
	[ "$bad" = 0 ] || fail "$1: $bad Send With Invalidate naming a wrong key"
	[ "$inv" -ge "$regs" ] ||
		fail "$1: $regs keys bound, only $inv invalidated"
}

# took_remote_invs WHAT SIZE: a bulk transfer of SIZE bytes. With memory
# windows our client invites Send With Invalidate in its CM private data,
# and svcrdma must have invalidated our chunks' keys with its replies,
# not left them to LOCAL_INVs of ours: at least one per MiB moved, as no
# READ or WRITE carries more. Registering per call (sync_invs counted:
# devices without windows), the client does not invite it, and svcrdma
# must not send it.
took_remote_invs() {
	local n want=$(($2 / (1024 * 1024)))
	n=$(xstat remote_invs)
	if [ "$(xstat sync_invs)" -gt 0 ]; then
		[ "$n" = 0 ] && [ "$(xstat regs)" -gt 0 ] ||
			fail "$1: registering per call, $n Send With Invalidate" \
				"($(tr '\n' ' ' <"$W/cli.stats"))"
		UNINVITED=$((UNINVITED + 1))
		return
	fi
	[ "$want" -gt 0 ] || want=1
	[ "$n" -ge "$want" ] ||
		fail "$1: $n Send With Invalidate from the kernel, want $want" \
			"or more ($(tr '\n' ' ' <"$W/cli.stats"))"
	RINV_TOTAL=$((RINV_TOTAL + n))
}

stat_of() { cat "$STATS/rdma_stat_$1"; }

# put --verify, compare with the kernel's copy, get --verify, compare.
# CHECK (took_remote_invs for bulk) judges each command's counters too.
round_trip() {
	local name=$1 size=$2 check=${3:-:} t0=$SECONDS
	randfile "$W/$name" "$size"
	cli put --verify "$W/$name" "$(url "$name")" ||
		fail "put $name ($size bytes)"
	$check "put $name" "$size"
	same "$W/$name" "$EXP/$name" "$name as the kernel stored it"
	cli get --verify "$(url "$name")" "$W/$name.back" ||
		fail "get $name ($size bytes)"
	$check "get $name" "$size"
	same "$W/$name" "$W/$name.back" "$name read back"
	ok "$name: $size bytes there and back in $((SECONDS - t0)) s," \
		"remote invalidations $(xstat remote_invs) (get)"
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
	round_trip mid $((64 * 1024 + 5)) took_remote_invs
	r0=$(stat_of read) w0=$(stat_of write)
	round_trip big $size took_remote_invs
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

# The sizes the issue names: a page, one 1 MiB READ or WRITE, and many of
# them in flight at once (64 MiB: every credit busy, keys recycled).
sized_files() {
	step "files of 4 KiB, 1 MiB and 64 MiB"
	round_trip f4k 4096
	round_trip f1m $((1024 * 1024)) took_remote_invs
	round_trip f64m $((64 * 1024 * 1024)) took_remote_invs
	rm -f "$W"/f64m* "$EXP/f64m"
}

# Made in the kernel's export directly; only the listing goes over NFS.
listing() {
	local n=300 w0
	step "directory of $n entries"
	mkdir "$EXP/dir" && (cd "$EXP/dir" && many_names $n | xargs touch) ||
		fail "create $n files in $EXP/dir"
	w0=$(stat_of write)
	cli ls "$(url dir)" >/dev/null || fail "ls dir"
	# ls prints one name a line (-l would add the attributes)
	grep -vx '\.\|\.\.' "$W/cli.out" | sort >"$W/names.client"
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
sized_files
listing
namespace
if [ $UNINVITED = 0 ]; then
	ok "Send With Invalidate from the kernel: $RINV_TOTAL keys in the" \
		"bulk transfers; none named a wrong key in any command"
else
	# every bulk transfer or none: the client registers one way
	[ $RINV_TOTAL = 0 ] ||
		fail "$UNINVITED transfers registered per call, others not"
	ok "registration per call: no Send With Invalidate in" \
		"$UNINVITED bulk transfers, as the client asked"
fi
echo "nfsrdma-knfsd: ok"
