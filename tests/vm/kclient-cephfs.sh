#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: kclient-cephfs.sh NFSRDMAD NFSRDMA CEPHLAB [PROVIDER]
# In an rr-vm.sh guest: a throw-away Ceph cluster (cephlab.sh, from the
# host's packages on the shared root) runs in the guest, nfsrdmad serves
# its CephFS (backend=cephfs) over RDMA (provider PROVIDER, verbs on rxe
# by default), and the Linux kernel's NFSv3 client mounts it with
# proto=rdma. Files are written through the mount (O_DIRECT and
# buffered), read back through it after its caches are dropped, and read
# again by another client, our nfsrdma over TCP, so that what CephFS
# stored is seen apart from the kernel's cache; a directory is listed, a
# file renamed and everything removed. The kernel's counters must show
# read, write and reply chunks and no bad replies.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
DAEMON=${1:?nfsrdmad binary} CLI=${2:?nfsrdma binary} CEPHLAB=${3:?cephlab.sh}
PROV=${4:-verbs}
MNT=/mnt/rr-cephfs
PORT=20049 TPORT=2049 MPORT=20048
W=$(mktemp -d /run/rr-kceph.XXXXXX)
DPID=
NFILES=200

finish() {
	local rc=$?
	if [ $rc != 0 ]; then
		[ -f "$W/nfsrdmad.log" ] && echo "=== nfsrdmad log (tail)" &&
			tail -n 30 "$W/nfsrdmad.log"
		[ -f "$W/cephlab.out" ] && echo "=== cephlab" && tail -n 10 "$W/cephlab.out"
	fi
	mountpoint -q "$MNT" && timeout 30 umount -f "$MNT"
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	"$CEPHLAB" stop "$W/cluster" >/dev/null 2>&1
	exit $rc
}
trap finish EXIT

start_cluster() {
	local t0=$SECONDS
	"$CEPHLAB" check >"$W/check.out" 2>&1 || {
		cat "$W/check.out"
		exit 77
	}
	mkdir "$W/cluster"
	timeout $(($(guest_secs_left) / 2)) "$CEPHLAB" start "$W/cluster" \
		>"$W/cephlab.out" 2>&1 || fail "the ceph cluster did not start"
	ok "ceph cluster (mon, memstore osd, mds) active in $((SECONDS - t0)) s"
}

start_daemon() {
	local m
	for m in rpcrdma nfs nfsv3; do modprobe "$m" || fail "modprobe $m"; done
	echo "/cephfs *(rw,no_root_squash,backend=cephfs,ceph_conf=$W/cluster/ceph.conf)" \
		>"$W/exports"
	"$DAEMON" --exports "$W/exports" --provider "$PROV" --rdma-port $PORT \
		--tcp-port $TPORT --mount-port $MPORT --nlm-port off \
		--nsm-port off --state-dir "$W/state" >"$W/nfsrdmad.log" 2>&1 &
	DPID=$!
	await_line "$W/nfsrdmad.log" "ready" $DPID 60 ||
		fail "nfsrdmad did not get ready"
	ok "nfsrdmad ($PROV) serves CephFS as /cephfs on rdma $PORT"
}

kmount() {
	mkdir -p "$MNT"
	timeout 60 mount -t nfs -o "vers=3,proto=rdma,port=$PORT,mountport=$MPORT,mountproto=tcp,nolock,soft,timeo=100,retrans=2" \
		"$ADDR:/cephfs" "$MNT" || fail "mount -o proto=rdma of $ADDR:/cephfs"
	grep -A30 "mounted on $MNT " /proc/self/mountstats |
		grep -qE '^[[:space:]]*xprt:[[:space:]]+rdma ' ||
		fail "the mount's transport is not rdma"
	ok "kernel client mounted $ADDR:/cephfs over rdma"
}

# what nfsrdmad reads from CephFS for another client (ours, over TCP)
stored() {
	timeout 60 "$CLI" -q get "nfs://$ADDR/cephfs/$1?proto=tcp&nfsport=$TPORT&mountport=$MPORT" \
		"$W/stored" || fail "nfsrdma get of $1"
	same "$2" "$W/stored" "$1 as CephFS stored it"
}

files() {
	local size=$((4 * 1024 * 1024 + 4097))
	step "files ($size bytes)"
	randfile "$W/big" $size
	timeout 120 dd if="$W/big" of="$MNT/big.direct" bs=1M oflag=direct \
		status=none || fail "dd oflag=direct to $MNT/big.direct"
	timeout 120 cp "$W/big" "$MNT/big.buffered" && sync ||
		fail "buffered write of $MNT/big.buffered"
	stored big.direct "$W/big"
	stored big.buffered "$W/big"
	drop_caches
	timeout 120 dd if="$MNT/big.direct" of="$W/big.back" bs=1M iflag=direct \
		status=none || fail "dd iflag=direct from $MNT/big.direct"
	same "$W/big" "$W/big.back" "O_DIRECT read back"
	same "$W/big" "$MNT/big.buffered" "buffered read back"
	ok "files: sha256 $(sum_of "$W/big")... written, stored and read back"
}

listing() {
	local n=$NFILES
	step "directory of $n entries"
	kclient_list "$MNT/dir" $n "$W"
	(cd "$MNT/dir" && many_names $n | xargs rm --) || fail "remove $n files"
	rmdir "$MNT/dir" || fail "rmdir $MNT/dir"
	ok "$n entries created, listed and removed"
}

rename_remove() {
	step "rename and remove"
	mv "$MNT/big.direct" "$MNT/big.renamed" || fail "rename"
	stored big.renamed "$W/big"
	rm "$MNT/big.renamed" "$MNT/big.buffered" || fail "rm"
	drop_caches
	[ -z "$(ls -A "$MNT")" ] || fail "left in the mount: $(ls -A "$MNT")"
	ok "renamed and removed"
}

start_cluster
start_daemon
kmount
files
listing
rename_remove
kclient_chunks "$MNT"
stop_nfsrdmad "$MNT" "$DPID" "$W/nfsrdmad.log"
DPID=
echo "kclient-cephfs: ok"
