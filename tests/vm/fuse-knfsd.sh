#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: fuse-knfsd.sh NFSRDMA DEVICE PROVIDER
# In an rr-vm.sh guest: our FUSE mount (nfsrdma mount, provider PROVIDER)
# of the Linux kernel's NFS server, whose RDMA listener is on DEVICE
# (knfsd-rdma.sh starts it). fio, with --verify=crc32c, writes and reads
# back through the mount: buffered sequential 1 MiB, O_DIRECT random
# 4 KiB in two jobs, and the mmap engine; each file is then compared with
# what knfsd stored, byte for byte. The mount must then come down whole:
# nfsrdma umount, and the mount's process exits 0.
#
# Sizes are small (16 MiB sequential, 2 MiB of 4 KiB blocks a job, 8 MiB
# mmap): under TCG the guest moves a few MB/s, and 4 KiB O_DIRECT
# through FUSE over siw a few hundred KB/s.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
# shellcheck source=tests/lib/poll-and-probe.sh
. "$HERE/../lib/poll-and-probe.sh"
CLI=${1:?nfsrdma binary} DEV=${2:?device (rxe0, siw0)} PROV=${3:?provider}
EXP=/srv/rr-fuse-knfsd MNT=/mnt/rr-fuse PORT=20049 MPORT=20048
W=$(mktemp -d /run/rr-fuse.XXXXXX)
FPID=
DEADLINE_S=60

finish() {
	local rc=$?
	if [ $rc != 0 ]; then
		echo "=== mount's stderr" && tail -n 20 "$W/mount.err" 2>/dev/null
		echo "=== last fio output" && tail -n 30 "$W/fio.out" 2>/dev/null
	fi
	mountpoint -q "$MNT" && umount -l "$MNT"
	[ -n "$FPID" ] && kill "$FPID" 2>/dev/null
	exit $rc
}
trap finish EXIT

mounted() { grep -q " $MNT [^ ]* - fuse.nfsrdma " /proc/self/mountinfo; }
gone() { ! kill -0 "$1" 2>/dev/null; }

fuse_mount() {
	modprobe fuse || fail "modprobe fuse"
	mkdir -p "$MNT"
	"$CLI" mount "nfs://$ADDR:$PORT$EXP?mountport=$MPORT&provider=$PROV" \
		"$MNT" -f 2>"$W/mount.err" &
	FPID=$!
	poll mounted || fail "not mounted: $(cat "$W/mount.err")"
	ok "nfsrdma mount ($PROV) of knfsd on $DEV at $MNT"
}

# fio JOB-OPTIONS...: one verified job; fails with fio's own words.
fio_job() {
	local name=$1
	shift
	timeout 600 fio --name="$name" --directory="$MNT" \
		--verify=crc32c --verify_state_save=0 --verify_fatal=1 --do_verify=1 "$@" \
		>"$W/fio.out" 2>&1 || fail "fio $name: $(grep -iE 'err|verify' "$W/fio.out" | head -5)"
	grep -q 'verify: bad' "$W/fio.out" && fail "fio $name: verify errors"
	ok "fio $name: written and verified"
}

# Every file fio left, as knfsd stored it, is what the mount reads.
same_on_server() {
	local f n=0
	drop_caches
	for f in "$MNT"/*; do
		same "$f" "$EXP/${f##*/}" "${f##*/} through the mount and on knfsd"
		n=$((n + 1))
	done
	[ $n -ge 4 ] || fail "only $n files to compare"
	ok "$n files: the mount's bytes are knfsd's"
}

fuse_umount() {
	"$CLI" umount "$MNT" || fail "nfsrdma umount"
	wait "$FPID"
	local st=$?
	FPID=
	[ "$st" = 0 ] || fail "nfsrdma mount exited with $st: $(cat "$W/mount.err")"
	ok "unmounted, the mount's process exited 0"
}

"$HERE/knfsd-rdma.sh" "$DEV" "$EXP" $PORT $MPORT || exit 1
fuse_mount
fio_job seq-buffered --rw=write --bs=1M --size=16M --ioengine=psync
fio_job rand-direct --rw=randwrite --bs=4k --size=2M --direct=1 \
	--ioengine=libaio --iodepth=16 --numjobs=2
fio_job mmap --rw=randwrite --bs=64k --size=8M --ioengine=mmap
same_on_server
fuse_umount
ok "FUSE mount of the kernel's nfsd over $DEV ($PROV): passed"
