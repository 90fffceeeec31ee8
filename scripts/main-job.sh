#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The main job: serve a temporary directory with nfsrdmad and copy a file
# through it over NFSv3 on RPC-over-RDMA (the iwarp provider on loopback),
# both ways with --verify; then the same read by libnfs's nfs-cp over TCP
# from the same server, and nfsrdma bench (RDMA against TCP, same run).
#
#   scripts/main-job.sh [BUILD_DIR] [MIB]     (defaults: build, 256)
set -uo pipefail

build=${1:-build}
mib=${2:-256}
nfsrdmad=$build/bin/nfsrdmad
nfsrdma=$build/bin/nfsrdma
for b in "$nfsrdmad" "$nfsrdma"; do
	[ -x "$b" ] || {
		echo "main-job: $b was not built" >&2
		exit 1
	}
done

tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/export" "$tmp/state"

mkfifo "$tmp/out"
"$nfsrdmad" --export "$tmp/export" --address 127.0.0.1 --rdma-port 0 \
	--tcp-port 0 --mount-port 0 --state-dir "$tmp/state" >"$tmp/out" 2>&1 &
pid=$!
exec 3<"$tmp/out"
rport= tport= mport=
while IFS= read -r -t 20 line <&3; do
	echo "$line"
	case $line in
	*"over rdma on "*) rport=${line##*:} ;;
	*"nfs3 over tcp on "*) tport=${line##*:} ;;
	*"mount3 over tcp on "*) mport=${line##*:} ;;
	*ready*) break ;;
	esac
done
if [ -z "$rport" ] || [ -z "$tport" ] || [ -z "$mport" ]; then
	echo "main-job: nfsrdmad did not start" >&2
	exit 1
fi
cat <&3 >"$tmp/log" &

url="nfs://127.0.0.1$tmp/export/big.bin"
rdma="$url?nfsport=$rport&mountport=$mport"
tcp="$url?proto=tcp&nfsport=$tport&mountport=$mport"

echo
echo "== put and get $mib MiB over NFSv3 on RPC-over-RDMA (iwarp, loopback) =="
head -c $((mib * 1024 * 1024)) /dev/urandom >"$tmp/src.bin"
"$nfsrdma" put --verify "$tmp/src.bin" "$rdma" || exit 1
"$nfsrdma" get --verify "$rdma" "$tmp/back.bin" || exit 1
cmp -s "$tmp/src.bin" "$tmp/back.bin" || {
	echo "main-job: the file came back different" >&2
	exit 1
}
echo "bytes equal at both ends"

mbps() { # bytes nanoseconds
	awk -v b="$1" -v ns="$2" 'BEGIN { printf "%.0f", b / 1e6 / (ns / 1e9) }'
}
if command -v nfs-cp >/dev/null 2>&1; then
	echo
	echo "== the same read: our client over RDMA vs libnfs's nfs-cp over TCP =="
	bytes=$((mib * 1024 * 1024))
	t0=$(date +%s%N)
	"$nfsrdma" -q get "$rdma" "$tmp/a.bin" || exit 1
	t1=$(date +%s%N)
	nfs-cp "nfs://127.0.0.1$tmp/export/big.bin?nfsport=$tport&mountport=$mport" \
		"$tmp/b.bin" >/dev/null || exit 1
	t2=$(date +%s%N)
	ours=$(mbps "$bytes" $((t1 - t0)))
	theirs=$(mbps "$bytes" $((t2 - t1)))
	echo "nfsrdma get (rdma): $ours MB/s; nfs-cp (libnfs, tcp): $theirs MB/s;" \
		"ratio $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')x" \
		"(goal >= 1.2x)"
	rm -f "$tmp/a.bin" "$tmp/b.bin"
fi

echo
echo "== nfsrdma bench: 1 MiB sequential read, then 4 KiB random read, depth 16 =="
"$nfsrdma" bench "$rdma" --tcp-nfsport "$tport" --op read --bs 1M \
	--depth 16 --seconds 3 || exit 1
"$nfsrdma" bench "$rdma" --tcp-nfsport "$tport" --op randread --bs 4K \
	--depth 16 --seconds 3 || exit 1
