#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nfsrdmad (backend=cephfs) and NFS-Ganesha (FSAL_CEPH), the server users
# run on CephFS today, serving one throw-away cluster side by side, each
# exporting the file system's root as /cephfs.
#
#   ganesha_ceph.sh test  NFSRDMAD NFSRDMA NFS3_CLIENT CEPHLAB
#     The same operations give the same results: the NFS client suite's
#     remote cases (tests/nfs3/client; integration/nfs3-ceph runs them
#     against nfsrdmad) pass against Ganesha; a file written through
#     either server, by our client or by libnfs's nfs-cp, reads back the
#     same through the other; listings (ls -l) of one directory agree;
#     and both refuse the same operations with the same error.
#   ganesha_ceph.sh bench NFSRDMAD NFSRDMA NFS3_CLIENT CEPHLAB [SECONDS]
#     nfsrdma bench, the same client for both, in one run: 1 MiB
#     sequential read and write (depth 4; the write timed to its COMMIT)
#     and 4 KiB random read (depth 16) from Ganesha over TCP, nfsrdmad
#     over TCP and nfsrdmad over RDMA (iwarp), with ratios against
#     Ganesha (issue 19's goals: 1.0x over TCP, 1.2x over RDMA), and each
#     server's peak resident size in the write row. With CEPH_LIMIT set
#     to the ceph_limit program, also the cluster's own rate for each
#     row: the same I/O from a libcephfs client with no NFS server in its
#     way. BENCH_ROUNDS:
#     rounds of each row, each figure their median (tests/lib/ganesha.sh).
#
# Skipped (77, saying why) without ganesha.nfsd and its FSAL_CEPH, the ceph
# daemons, libnfs's tools (test), root or rpcinfo.
set -uo pipefail

mode=$1 nfsrdmad=$2 nfsrdma=$3 client=$4 cephlab=$5
seconds=${6:-5}
here=$(cd "$(dirname "$0")" && pwd)

skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	ganesha_log
	[ -f "$tmp/nfsrdmad.err" ] && tail -5 "$tmp/nfsrdmad.err" | sed 's/^/  nfsrdmad: /'
	exit 1
}
# shellcheck source=../lib/ganesha.sh
. "$here/../lib/ganesha.sh"

case $mode in
test | bench) ;;
*)
	echo "usage: $0 test|bench NFSRDMAD NFSRDMA NFS3_CLIENT CEPHLAB [SECONDS]" >&2
	exit 2
	;;
esac
ganesha_need CEPH
"$cephlab" check || exit 77
[ "$mode" = bench ] || command -v nfs-cp >/dev/null 2>&1 ||
	skip "nfs-cp not found (Debian package libnfs-utils)"
command -v jq >/dev/null 2>&1 || skip "jq not found"

tmp=$(mktemp -d)
GANESHA_TMP=$tmp
cleanup() {
	nfsrdmad_stop
	ganesha_stop
	"$cephlab" stop "$tmp/cluster" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$tmp/cluster"
"$cephlab" start "$tmp/cluster" >"$tmp/cephlab.out" 2>&1 ||
	fail "the cluster did not start: $(tail -5 "$tmp/cephlab.out")"
conf=$tmp/cluster/ceph.conf

ganesha_rpcbind
nport=$(ganesha_free_port)
mport=$(ganesha_free_port)
[ "$nport" != "$mport" ] || mport=$((nport + 1))
{
	ganesha_core "$nport" "$mport"
	cat <<CONF
MDCACHE { Dir_Chunk = 0; }
EXPORT {
	Export_ID = 1;
	Path = /;
	Pseudo = /cephfs;
	Protocols = 3;
	Transports = TCP;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Attr_Expiration_Time = 0;
	FSAL { Name = CEPH; Filesystem = cephfs; }
}
CEPH { Ceph_Conf = $conf; }
CONF
} >"$tmp/ganesha.conf"
ganesha_start "$tmp/ganesha.conf" "$nport"

# nfsrdmad after Ganesha: its rpcbind registration then fails, saying so,
# and Ganesha's stays; the clients here name every port.
echo "/cephfs *(rw,no_root_squash,backend=cephfs,ceph_conf=$conf)" >"$tmp/exports"
nfsrdmad_start "$nfsrdmad" --exports "$tmp/exports" --state-dir "$tmp/state"

base=nfs://127.0.0.1/cephfs
gq="?proto=tcp&nfsport=$nport&mountport=$mport" # Ganesha, TCP
tq="?proto=tcp&nfsport=$NFSRDMAD_TCP&mountport=$NFSRDMAD_MOUNT"
rq="?nfsport=$NFSRDMAD_RDMA&mountport=$NFSRDMAD_MOUNT" # RDMA (iwarp)
BENCH_NFSRDMA=$nfsrdma BENCH_BASE=$base BENCH_SECONDS=$seconds
BENCH_GQ=$gq BENCH_TQ=$tq BENCH_RQ=$rq
run() { "$nfsrdma" -q "$@"; }

# ------------------------------------------------------------------ test

passed=0
ok() {
	echo "ok: $*"
	passed=$((passed + 1))
}

same_suite() {
	RR_TEST_NFS_URL="$base$gq" RR_TEST_NFS_SUITE=remote RR_TEST_NFS_DIR='' \
		"$client" >"$tmp/suite.out" 2>&1 ||
		fail "the client suite against Ganesha: $(grep -E 'FAILED|ERROR' "$tmp/suite.out" | head -5)"
	ok "the NFS client suite's remote cases pass against Ganesha (FSAL_CEPH)"
}

across() {
	head -c $((8 * 1024 * 1024 + 5)) /dev/urandom >"$tmp/a.bin"
	run put --verify "$tmp/a.bin" "$base/a.bin$rq" || fail "put through nfsrdmad"
	nfs-cp "$base/a.bin$gq" "$tmp/a.back" >/dev/null 2>&1 ||
		fail "nfs-cp from Ganesha of what nfsrdmad stored"
	cmp -s "$tmp/a.bin" "$tmp/a.back" || fail "Ganesha reads other bytes than nfsrdmad wrote"
	head -c $((3 * 1024 * 1024 + 7)) /dev/urandom >"$tmp/b.bin"
	nfs-cp "$tmp/b.bin" "$base/b.bin$gq" >/dev/null 2>&1 || fail "nfs-cp into Ganesha"
	run get --verify "$base/b.bin$tq" "$tmp/b.back" || fail "get through nfsrdmad"
	cmp -s "$tmp/b.bin" "$tmp/b.back" || fail "nfsrdmad reads other bytes than Ganesha wrote"
	ok "written through one server (nfsrdma put, nfs-cp), read back the same through the other"
}

listings() {
	run mkdir "$base/dir$gq" || fail "mkdir through Ganesha"
	for i in $(seq 1 40); do
		printf '%*s' "$i" "" | run put - "$base/dir/f$i$tq" || fail "put f$i"
	done
	run ls -l "$base/dir$gq" >"$tmp/ls.g" || fail "ls -l through Ganesha"
	run ls -l "$base/dir$tq" >"$tmp/ls.n" || fail "ls -l through nfsrdmad"
	[ "$(wc -l <"$tmp/ls.g")" -ge 40 ] || fail "Ganesha listed $(wc -l <"$tmp/ls.g") entries"
	diff "$tmp/ls.g" "$tmp/ls.n" >"$tmp/ls.diff" ||
		fail "ls -l differs between Ganesha and nfsrdmad: $(head -6 "$tmp/ls.diff")"
	ok "ls -l of a 40-entry directory: the same through both servers"
}

errors() {
	local g n what
	for what in "rm dir" "get missing" "mkdir dir"; do
		# shellcheck disable=SC2086 # split into the command and its name
		set -- $what
		local url="$base/$2"
		if [ "$1" = get ]; then
			g=$("$nfsrdma" -q get "$url$gq" "$tmp/x" 2>&1 >/dev/null | sed 's/.*: //')
			n=$("$nfsrdma" -q get "$url$tq" "$tmp/x" 2>&1 >/dev/null | sed 's/.*: //')
		else
			g=$("$nfsrdma" -q "$1" "$url$gq" 2>&1 >/dev/null | sed 's/.*: //')
			n=$("$nfsrdma" -q "$1" "$url$tq" 2>&1 >/dev/null | sed 's/.*: //')
		fi
		[ -n "$g" ] || fail "Ganesha allowed: $what"
		[ "$g" = "$n" ] || fail "$what: Ganesha says '$g', nfsrdmad '$n'"
	done
	ok "both refuse rm of a full directory, get of a missing file, mkdir of an existing one, alike"
}

# ----------------------------------------------------------------- bench

# Each server reads and writes one file of its own: nfsrdmad's rows over
# TCP and over RDMA share one process, and with it one libcephfs cache, so
# they share their file too (bench_row, tests/lib/ganesha.sh).
bench() {
	# 64 MiB: all of a file nfsrdma bench uses. Three of 256 MiB and the
	# written files took the 1 GiB memstore OSD to 94%, near the full
	# ratio at which the cluster stops taking writes.
	head -c $((64 * 1024 * 1024)) /dev/urandom >"$tmp/big"
	# Each through its own server: a file the other server has just
	# written starts the run waiting for the writer's caps (Ganesha read
	# one so at 3 MB/s).
	run put "$tmp/big" "$base/big.g$gq" || fail "put big.g"
	run put "$tmp/big" "$base/big.n$tq" || fail "put big.n"
	echo "nfsrdma bench, ${seconds} s each, one cluster; ratios against Ganesha over TCP"
	[ "${BENCH_ROUNDS:-1}" -le 1 ] ||
		echo "each figure the median of $BENCH_ROUNDS rounds"
	echo "goals: nfsrdmad over TCP >= 1.0x, over RDMA >= 1.2x"
	bench_header
	bench_row read 1M 4 MB/s big
	# timed to the COMMIT: libcephfs takes WRITEs into memory faster than
	# one memstore OSD stores them, so untimed it is the cache's rate
	peak_reset "$GANESHA_PID" "$NFSRDMAD_PID"
	bench_row write 1M 4 MB/s new --fsync
	printf '  peak resident size in it: ganesha %s MiB, nfsrdmad %s MiB' \
		"$(peak_mib "$GANESHA_PID")" "$(peak_mib "$NFSRDMAD_PID")"
	echo ' (both rows)'
	bench_row randread 4K 16 calls/s big
	[ -n "${CEPH_LIMIT:-}" ] || return 0
	# its own file, so that no server's caps on theirs slow it
	"$CEPH_LIMIT" "$conf" /big.l write 1048576 4 2 >/dev/null ||
		fail "ceph_limit could not write /big.l"
	echo "the cluster itself: the same I/O from libcephfs in one process, no NFS server"
	limit_row "read 1M depth 4" read 1048576 4 MBps big.l MB/s
	limit_row "write 1M depth 4 --fsync" write 1048576 4 MBps new.l MB/s
	limit_row "randread 4K depth 16" randread 4096 16 ops_per_s big.l calls/s
}

# peak_reset PID...: each one's peak resident size starts again from now
peak_reset() {
	local p
	for p in "$@"; do
		echo 5 >"/proc/$p/clear_refs" || fail "cannot reset $p's peak size"
	done
}

# peak_mib PID: its peak resident size since peak_reset, in MiB
peak_mib() {
	awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"
}

# limit_row LABEL OP BYTES DEPTH FIELD FILE UNIT: ceph_limit's rate, the
# median of BENCH_ROUNDS runs as bench_row's
limit_row() {
	local v vs=() i
	for ((i = 0; i < ${BENCH_ROUNDS:-1}; i++)); do
		v=$("$CEPH_LIMIT" "$conf" "/$6" "$2" "$3" "$4" "$seconds" |
			sed -n "s/.*$5 \([0-9.]*\).*/\1/p")
		[ -n "$v" ] || fail "ceph_limit $2 gave no figure"
		vs+=("$v")
	done
	printf '%-28s %10.0f  %s\n' "$1" "$(median "${vs[@]}")" "$7"
}

if [ "$mode" = test ]; then
	same_suite
	across
	listings
	errors
	echo "$passed passed, 0 failed"
else
	bench
fi
