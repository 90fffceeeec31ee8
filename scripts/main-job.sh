#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The main job: serve a temporary directory with nfsrdmad and copy a file
# through it over NFSv3 on RPC-over-RDMA (the iwarp provider on loopback),
# both ways with --verify; then nfsrdma bench: RDMA against our TCP
# transport to the same server in the same run, and for the sequential
# read also against libnfs's nfs-cp.
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

# The bench reads 64 MiB of a file at most; nfs-cp copies a whole file,
# so it gets one of exactly that size, and both read the same bytes.
head -c $((64 * 1024 * 1024)) "$tmp/src.bin" >"$tmp/export/bench.bin"
bench="nfs://127.0.0.1$tmp/export/bench.bin?nfsport=$rport&mountport=$mport"

echo
echo "== nfsrdma bench: 1 MiB sequential read (and libnfs's nfs-cp), then 4 KiB random read, depth 16 =="
"$nfsrdma" bench "$bench" --tcp-nfsport "$tport" --op read --bs 1M \
	--depth 16 --seconds 3 || exit 1
"$nfsrdma" bench "$bench" --tcp-nfsport "$tport" --op randread --bs 4K \
	--depth 16 --seconds 3 || exit 1
