#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# libnfs's tools (nfs-ls, nfs-cp, nfs-cat from Debian's libnfs-utils),
# which nobody here wrote, against nfsrdmad over TCP: listing, copying in
# and out, reading; the bytes must be equal at both ends.
#
#   libnfs_interop.sh NFSRDMAD
#
# Exits 77 (skipped) when libnfs-utils is not installed.
set -uo pipefail

nfsrdmad=$1
for t in nfs-ls nfs-cp nfs-cat; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "SKIP: $t not found (Debian package libnfs-utils)"
		exit 77
	fi
done

tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/export" "$tmp/state"

fail() {
	echo "FAIL: $*"
	[ -f "$tmp/log" ] && sed 's/^/  nfsrdmad: /' "$tmp/log"
	exit 1
}

# The daemon prints its endpoints, then "ready": read them as they come.
mkfifo "$tmp/out"
"$nfsrdmad" --export "$tmp/export" --address 127.0.0.1 --rdma-port off \
	--tcp-port 0 --mount-port 0 --state-dir "$tmp/state" >"$tmp/out" 2>&1 &
pid=$!
exec 3<"$tmp/out"
tport= mport=
while IFS= read -r -t 20 line <&3; do
	echo "$line" >>"$tmp/log"
	case $line in
	*"nfs3 over tcp on "*) tport=${line##*:} ;;
	*"mount3 over tcp on "*) mport=${line##*:} ;;
	*ready*) break ;;
	esac
done
[ -n "$tport" ] && [ -n "$mport" ] || fail "nfsrdmad did not start"
# Keep draining its output so it never blocks on a full pipe.
cat <&3 >>"$tmp/log" &

url="nfs://127.0.0.1$tmp/export"
q="?nfsport=$tport&mountport=$mport"
passed=0
ok() {
	echo "ok: $*"
	passed=$((passed + 1))
}

head -c $((3 * 1024 * 1024 + 17)) /dev/urandom >"$tmp/in.bin"
nfs-cp "$tmp/in.bin" "$url/in.bin$q" || fail "nfs-cp to the server"
cmp -s "$tmp/in.bin" "$tmp/export/in.bin" || fail "bytes written differ"
ok "nfs-cp local -> nfsrdmad (3 MiB + 17 B), bytes equal"

nfs-cp "$url/in.bin$q" "$tmp/out.bin" || fail "nfs-cp from the server"
cmp -s "$tmp/in.bin" "$tmp/out.bin" || fail "bytes read differ"
ok "nfs-cp nfsrdmad -> local, bytes equal"

mkdir "$tmp/export/dir"
for i in $(seq 1 300); do : >"$tmp/export/dir/f$i"; done
n=$(nfs-ls "$url/dir$q" | grep -c ' f[0-9]*$') || true
[ "$n" = 300 ] || fail "nfs-ls listed $n of 300 entries"
ok "nfs-ls lists all 300 entries of a directory"

echo "hello over nfs" >"$tmp/export/hello.txt"
[ "$(nfs-cat "$url/hello.txt$q")" = "hello over nfs" ] ||
	fail "nfs-cat returned other bytes"
ok "nfs-cat reads a file"

if nfs-cat "$url/missing$q" >/dev/null 2>&1; then
	fail "nfs-cat of a missing file succeeded"
fi
ok "nfs-cat of a missing file fails"

echo "$passed passed, 0 failed"
