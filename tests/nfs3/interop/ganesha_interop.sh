#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Our NFS client (nfsrdma, over TCP) against NFS-Ganesha, a server nobody
# here wrote, exporting a temporary directory on loopback: put and get with
# --verify, listing, mkdir, rename, remove, df; and its export mounted
# with nfsrdma mount (FUSE), fio verifying what it wrote through it.
#
#   ganesha_interop.sh NFSRDMA
#
# Ganesha registers with rpcbind. The test uses a running rpcbind, or (as
# root) starts one for itself; it is skipped (exit 77, saying why) without
# ganesha.nfsd, without root, or when another NFS server is registered
# already (it would be displaced).
set -uo pipefail

nfsrdma=$1
skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	ganesha_log
	exit 1
}
# shellcheck source=../../lib/ganesha.sh
. "$(dirname "$0")/../../lib/ganesha.sh"
ganesha_need VFS

tmp=$(mktemp -d)
GANESHA_TMP=$tmp
cleanup() {
	grep -q " $tmp/mnt " /proc/self/mountinfo 2>/dev/null && umount -l "$tmp/mnt"
	ganesha_stop
	rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$tmp/export"
ganesha_vfs "$tmp/export"
nport=$GANESHA_NPORT mport=$GANESHA_MPORT

url="nfs://127.0.0.1$tmp/export"
q="?proto=tcp&nfsport=$nport&mountport=$mport"
passed=0
ok() {
	echo "ok: $*"
	passed=$((passed + 1))
}
run() { "$nfsrdma" -q "$@"; }

head -c $((5 * 1024 * 1024 + 3)) /dev/urandom >"$tmp/in.bin"
run put --verify "$tmp/in.bin" "$url/in.bin$q" || fail "put"
cmp -s "$tmp/in.bin" "$tmp/export/in.bin" || fail "bytes put differ"
ok "put --verify (5 MiB + 3 B), bytes equal on Ganesha's disk"

run get --verify "$url/in.bin$q" "$tmp/out.bin" || fail "get"
cmp -s "$tmp/in.bin" "$tmp/out.bin" || fail "bytes got differ"
ok "get --verify, bytes equal"

run mkdir "$url/dir$q" || fail "mkdir"
[ -d "$tmp/export/dir" ] || fail "mkdir made no directory"
for i in $(seq 1 500); do : >"$tmp/export/dir/f$i"; done
n=$(run ls "$url/dir$q" | grep -cx 'f[0-9]*') || true # one name a line
[ "$n" = 500 ] || fail "ls listed $n of 500 entries"
ok "mkdir, and ls of a 500-entry directory"

run mv "$url/in.bin$q" "dir/moved.bin" || fail "mv"
[ -f "$tmp/export/dir/moved.bin" ] && [ ! -e "$tmp/export/in.bin" ] ||
	fail "mv did not rename"
ok "mv renames"

run rm "$url/dir/moved.bin$q" || fail "rm of a file"
rm -f "$tmp"/export/dir/f*
run rm "$url/dir$q" || fail "rm of an empty directory"
[ ! -e "$tmp/export/dir" ] || fail "rm left the directory"
ok "rm of a file and of a directory"

run df "$url$q" >/dev/null || fail "df"
ok "df"

if run get "$url/missing$q" "$tmp/x" 2>/dev/null; then
	fail "get of a missing file succeeded"
fi
ok "get of a missing file fails"

# nfsrdma mount of Ganesha's export (issue 18): fio writes and verifies
# through the FUSE mount, cp and cmp agree with Ganesha's disk
mounted() { grep -q " $tmp/mnt [^ ]* - fuse.nfsrdma " /proc/self/mountinfo; }
if [ ! -c /dev/fuse ] || ! "$nfsrdma" --help | grep -q '^  mount '; then
	echo "mount: not tried (no /dev/fuse, or nfsrdma built without libfuse3)"
elif ! command -v fio >/dev/null 2>&1; then
	echo "mount: not tried (no fio)"
else
	mkdir "$tmp/mnt"
	"$nfsrdma" mount "$url$q" "$tmp/mnt" -o actimeo=3 2>"$tmp/mount.err" ||
		fail "nfsrdma mount of Ganesha's export: $(cat "$tmp/mount.err")"
	mounted || fail "nfsrdma mount returned before the mount was up"
	fio --name=g --directory="$tmp/mnt" --rw=randwrite --bs=4k --size=4m \
		--numjobs=2 --verify=crc32c --verify_state_save=0 --do_verify=1 --verify_fatal=1 \
		--output-format=terse >"$tmp/fio" 2>&1 ||
		fail "fio through the mount: $(tail -3 "$tmp/fio")"
	head -c $((3 * 1024 * 1024)) /dev/urandom >"$tmp/m.bin"
	cp "$tmp/m.bin" "$tmp/mnt/m.bin" && cmp -s "$tmp/m.bin" "$tmp/export/m.bin" ||
		fail "cp through the mount differs on Ganesha's disk"
	"$nfsrdma" umount "$tmp/mnt" || fail "nfsrdma umount"
	for _ in $(seq 100); do mounted || break; ganesha_pause; done
	mounted && fail "still mounted after umount"
	ok "nfsrdma mount of Ganesha's export: fio write+verify (crc32c), cp and cmp"
fi

echo "$passed passed, 0 failed"
