#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: knfsd-rdma.sh DEVICE EXPORT [RDMA_PORT] [MOUNT_PORT]
# In an rr-vm.sh guest: starts the Linux kernel's NFS server (NFSv3 only)
# exporting EXPORT read-write, with an RDMA listener on RDMA_PORT (20049)
# and rpc.mountd on MOUNT_PORT (20048, TCP and UDP). Returns once both
# listen; the guest's power-off ends them.
#
# EXPORT gets a fresh tmpfs: the guest's root is an overlayfs, which knfsd
# cannot export. The RDMA listener binds the wildcard address and so every
# RDMA device; DEVICE (siw0, rxe0) is the one the caller means to test, so
# it must be ACTIVE first. nfsd needs rpcbind to start, so one runs too.
set -u
DEV=${1:?device} EXPORT=${2:?export dir} PORT=${3:-20049} MPORT=${4:-20048}

fail() {
	echo "knfsd-rdma: $*"
	exit 1
}

device_up() {
	[ -d "/sys/class/infiniband/$DEV" ] || fail "no RDMA device $DEV"
	rdma link show "$DEV/1" | grep -q 'state ACTIVE' ||
		fail "$DEV is not ACTIVE: $(rdma link show "$DEV/1")"
}

modules() {
	local m
	for m in nfsd rpcrdma; do
		modprobe "$m" || fail "modprobe $m"
	done
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		fail "cannot mount /proc/fs/nfsd"
}

# rpcbind and mountd keep state under /run and /var/lib/nfs; in the guest
# both are writable (tmpfs, overlay), never the host's.
daemons() {
	mkdir -p /run/rpcbind /var/lib/nfs/rpc_pipefs /var/lib/nfs/sm
	: >/var/lib/nfs/etab && : >/var/lib/nfs/rmtab
	pgrep -x rpcbind >/dev/null || rpcbind || fail "rpcbind did not start"
	mkdir -p "$EXPORT" && mount -t tmpfs -o size=256m,mode=0777 tmpfs "$EXPORT" ||
		fail "tmpfs on $EXPORT"
	exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=7 \
		"*:$EXPORT" || fail "exportfs $EXPORT"
	rpc.mountd -N 4 -p "$MPORT" || fail "rpc.mountd -p $MPORT"
}

# Version 3 only: no NFSv4 grace period to wait out, no v4 state.
nfsd() {
	rpc.nfsd -N 4 4 || fail "rpc.nfsd"
	echo "rdma $PORT" >/proc/fs/nfsd/portlist ||
		fail "no RDMA listener on $PORT (svcrdma)"
	grep -qx "rdma $PORT" /proc/fs/nfsd/portlist ||
		fail "portlist lacks rdma $PORT: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
}

device_up
modules
daemons
nfsd
echo "knfsd-rdma: nfsd exports $EXPORT; listeners:" \
	"$(tr '\n' ' ' </proc/fs/nfsd/portlist); mountd on $MPORT"
