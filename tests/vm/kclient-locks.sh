#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: kclient-locks.sh NFSRDMAD NFSRDMA LOCK_PROBE SOCKET_ACTIVATE PROVIDER
# In an rr-vm.sh guest (its RDMA device, rxe0 or siw0, on eth0): the Linux
# kernel's NFSv3 client mounts nfsrdmad over RDMA with its default options
# (locks on, no "nolock"), and fcntl locks go through NLM to our lock
# manager. PROVIDER is nfsrdmad's: iwarp (over TCP, for siw0) or verbs.
#
# Client and server need a host each: the kernel's lockd registers NLM
# with its host's rpcbind, and so does nfsrdmad; the kernel's statd and
# our NSM both want "status". So the guest is two hosts on eth0: the
# client at 10.0.2.15 (the kernel client, lockd, rpc.statd) and the server
# at 10.0.2.16 (nfsrdmad), each with an rpcbind of its own that listens
# on its address only (SOCKET_ACTIVATE hands it its sockets) and its own
# /run for rpcbind's local socket (the server's in a private mount
# namespace). Traffic to the server's address leaves from the client's
# (a local route with src 10.0.2.15), so nfsrdmad sees the client host
# where its rpcbind is. One network namespace: nfsrdmad in a namespace of
# its own behind a veth did not work with rxe here (the guest kernel's rxe
# takes RoCE packets in the first namespace only).
#
# Shown, by the kernel's client and nfs-utils' tools as the judges:
#   - the kernel client's lock refuses another host (our FUSE mount, its
#     own host name) an overlapping range (EAGAIN) and not the range
#     beside; that host's F_GETLK sees it; it is gone after the close;
#   - a kernel process waiting in F_SETLKW on a lock the other host holds
#     is granted when that host closes, by our GRANTED callback to the
#     kernel's lockd (nfsrdmad counts it; the kernel's own fallback,
#     polling every 30 s, would not);
#   - another client host (our FUSE mount, its own host name) is refused
#     while the kernel client holds the lock, and granted once sm-notify
#     (the client's "reboot") has told our NSM: the rebooted host's locks
#     were released on the server.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
# shellcheck source=tests/lib/poll-and-probe.sh
. "$HERE/../lib/poll-and-probe.sh"
DAEMON=${1:?nfsrdmad} NFSRDMA=${2:?nfsrdma} PROBE=${3:?lock_probe}
ACTIVATE=${4:?socket_activate} PROV=${5:?iwarp or verbs}
CLI=$ADDR SRV=10.0.2.16
PORT=20049 MPORT=20048 TPORT=2049
W=/srv/rr-locks
EXP=$W/exp MNT=/mnt/rr-locks MNT2=/mnt/rr-locks-fuse
DPID= FPID=
PIDS=()
DEADLINE_S=60 PROBE_DIR=$W

finish() {
	local rc=$?
	if [ $rc != 0 ]; then
		echo "=== nfsrdmad log (tail)" && tail -n 30 "$W/nfsrdmad.log"
		echo "=== fuse mount" && cat "$W/fuse.err" 2>/dev/null
		echo "=== rpcinfo of the server" && rpcinfo -p $SRV 2>&1
		echo "=== rpcinfo of the client" && rpcinfo -p $CLI 2>&1
		dmesg | grep -iE 'lockd|statd|nlm|nfs' | tail -n 20
	fi
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	mountpoint -q "$MNT2" && umount -l "$MNT2"
	mountpoint -q "$MNT" && timeout 30 umount -f "$MNT"
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	exit $rc
}
trap finish EXIT

# --------------------------------------------------------------- hosts

# The server's address beside the client's; reaching it, the client's.
network() {
	ip addr add $SRV/24 dev eth0 || fail "address $SRV"
	ip route replace local $SRV dev eth0 table local proto kernel \
		scope host src $CLI || fail "local route to $SRV from $CLI"
	ip route get $SRV | grep -q "src $CLI" ||
		fail "the route to $SRV: $(ip route get $SRV)"
	ok "hosts: client $CLI, server $SRV (reached from $CLI)"
}

# rpcbind for ADDRESS only, TCP also on the addresses after it (the
# kernel asks 127.0.0.1 for its statd), its socket in this /run
rpcbind_at() {
	mkdir -p /run/rpcbind &&
		"$ACTIVATE" /run/rpcbind.sock 111 "$1" rpcbind -f -w -h "${1%%,*}" &
	poll rpcinfo -p "${1%%,*}" >/dev/null 2>&1
}

# The server host: its rpcbind (private /run), then nfsrdmad.
start_server() {
	mkdir -p "$EXP" "$W/state" && mount -t tmpfs -o size=64m tmpfs "$EXP" ||
		fail "tmpfs on $EXP"
	unshare -m --propagation private bash -c '
		. "$1"; shift
		mount -t tmpfs tmpfs /run && rpcbind_at '$SRV' || exit 2
		exec "$@"' rr-srv <(declare -f poll rpcbind_at; echo "ACTIVATE=$ACTIVATE DEADLINE_S=$DEADLINE_S") \
		"$DAEMON" --export "$EXP" --provider "$PROV" \
		--address $SRV --rdma-port $PORT --tcp-port $TPORT \
		--mount-port $MPORT --nlm-port 0 --nsm-port 0 --grace 0 \
		--state-dir "$W/state" >"$W/nfsrdmad.log" 2>&1 &
	DPID=$!
	await_line "$W/nfsrdmad.log" "ready" $DPID 30 ||
		fail "nfsrdmad did not get ready"
	rpcinfo -p $SRV | grep -qw nlockmgr ||
		fail "nlockmgr is not registered at $SRV"
	ok "nfsrdmad ($PROV) at $SRV, its NLM and NSM in its own rpcbind"
}

# The client host: rpcbind and rpc.statd, as nfs-common runs them.
start_client_services() {
	rpcbind_at $CLI,127.0.0.1 || fail "the client's rpcbind"
	mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak
	rpc.statd --no-notify -F -d >"$W/statd.log" 2>&1 &
	PIDS+=($!)
	poll rpcinfo -T tcp $CLI status >/dev/null 2>&1 ||
		fail "rpc.statd did not register: $(tail -n 20 "$W/statd.log")"
	ok "the client's rpcbind and rpc.statd"
}

kmount() {
	local opts
	for m in rpcrdma nfs nfsv3 lockd; do modprobe "$m" || fail "modprobe $m"; done
	mkdir -p "$MNT"
	timeout 60 mount -t nfs -o "vers=3,proto=rdma,port=$PORT,mountport=$MPORT,mountproto=tcp,soft,timeo=100,retrans=2" \
		"$SRV:$EXP" "$MNT" || fail "mount -o proto=rdma of $SRV:$EXP"
	opts=$(grep -A30 "mounted on $MNT " /proc/self/mountstats | grep 'opts:')
	grep -qE '^[[:space:]]*xprt:[[:space:]]+rdma ' \
		< <(grep -A30 "mounted on $MNT " /proc/self/mountstats) ||
		fail "the mount's transport is not rdma"
	case $opts in
	*nolock*|*local_lock=all*|*local_lock=posix*)
		fail "the kernel keeps locks local: $opts" ;;
	esac
	ok "kernel client mounted $SRV:$EXP over rdma, locks through NLM"
}

# Our client as another host: FUSE, its NLM by rpcbind, another name.
fuse_mount() {
	modprobe fuse || fail "modprobe fuse"
	mkdir -p "$MNT2"
	unshare -u bash -c 'hostname rr-other && exec "$@"' rr-other \
		"$NFSRDMA" mount "nfs://$SRV:$TPORT$EXP?proto=tcp&mountport=$MPORT" \
		"$MNT2" -f -o noac 2>"$W/fuse.err" &
	FPID=$!
	PIDS+=($FPID)
	poll grep -q " $MNT2 [^ ]* - fuse.nfsrdma " /proc/self/mountinfo ||
		fail "the FUSE mount did not come up"
	ok "our client mounted the export as host rr-other"
}

# ---------------------------------------------------------- lock probes


# The kernel checks a lock against its own processes' first (a second
# process on the client is refused, or waits, without a call), so the
# server is judged from another host: our FUSE client, rr-other.
contend() {
	local out
	step "the kernel client and another host contend"
	echo data >"$MNT/f" || fail "create $MNT/f"
	probe a hold "$MNT/f" w 0 100
	poll says a locked || fail "the first lock: $(cat "$W/a.out")"
	out=$("$PROBE" hold "$MNT/f" w 50 100 </dev/null)
	[ "$out" = "busy 11" ] || fail "a second process: '$out', want EAGAIN"
	out=$("$PROBE" hold "$MNT2/f" w 50 100 </dev/null)
	[ "$out" = "busy 11" ] || fail "rr-other, overlapping: '$out', want EAGAIN"
	out=$("$PROBE" hold "$MNT2/f" w 100 100 </dev/null)
	[ "$out" = locked ] || fail "rr-other, the range beside: '$out'"
	out=$("$PROBE" test "$MNT2/f" r 10 1)
	[[ $out =~ ^w\ [0-9]+\ 0\ 100$ ]] ||
		fail "rr-other's F_GETLK: '$out', want the kernel's [0, 100)"
	echo close >&"$FD_a"
	poll says a closed || fail "the holder did not close"
	out=$("$PROBE" hold "$MNT2/f" w 50 100 </dev/null)
	[ "$out" = locked ] || fail "rr-other after the kernel's unlock: '$out'"
	ok "refused while the kernel held [0, 100), F_GETLK saw it, free after"

	step "a kernel waiter, granted by callback when rr-other closes"
	probe o hold "$MNT2/f" w 0 0
	poll says o locked || fail "rr-other's lock: $(cat "$W/o.out")"
	waiter b "$MNT/f" w 0 0 || fail "$WAITER_WHY"
	says b locked && fail "the waiter got the lock while it was held"
	echo close >&"$FD_o"
	poll says o closed || fail "rr-other did not close"
	poll says b locked || fail "the waiter was not granted: $(cat "$W/b.out")"
	ok "F_SETLKW on the kernel client granted after rr-other closed"
}

# The kernel client "reboots": rpc.statd's sm-notify tells the hosts it
# monitors (our NSM, which lockd asked it to watch at the first lock).
reboot() {
	local out
	step "another host, before and after the client's reboot"
	out=$("$PROBE" hold "$MNT2/f" w 0 1 </dev/null)
	[ "$out" = "busy 11" ] || fail "rr-other while the kernel holds: '$out'"
	ls /var/lib/nfs/sm | grep -q . ||
		fail "rpc.statd monitors no server: $(ls -la /var/lib/nfs/sm)"
	# -d: in the foreground, exit 0 once every server answered
	timeout 90 sm-notify -f -d -m 1 >"$W/sm-notify.err" 2>&1 ||
		fail "sm-notify: $(cat "$W/sm-notify.err")"
	out=$("$PROBE" hold "$MNT2/f" w 0 1 </dev/null)
	[ "$out" = locked ] ||
		fail "the rebooted client's lock stayed on the server: '$out'"
	ok "rr-other refused, then granted once sm-notify told our NSM"
}

# nfsrdmad's counters at exit: the callback and the notify were ours.
server_counts() {
	local nlm nsm
	kill "$DPID" && wait "$DPID"
	DPID=
	nlm=$(grep 'nlm4:' "$W/nfsrdmad.log" | tail -n1)
	nsm=$(grep 'nsm1:' "$W/nfsrdmad.log" | tail -n1)
	echo "$nlm"
	echo "$nsm"
	grep -qE ' blocked=[1-9]' <<<"$nlm" ||
		fail "the kernel's blocking LOCK was never answered BLOCKED"
	grep -qE ' callbacks=[1-9]' <<<"$nlm" ||
		fail "no GRANTED callback was taken by the kernel's lockd"
	grep -q ' callback_failures=0' <<<"$nlm" || fail "callbacks failed"
	grep -qE ' notifies=[1-9]' <<<"$nsm" || fail "no SM_NOTIFY arrived"
	grep -qE ' released_locks=[1-9]' <<<"$nsm" ||
		fail "SM_NOTIFY released nothing"
}

network
start_server
start_client_services
kmount
fuse_mount
contend
reboot
umount -l "$MNT2"
server_counts
ok "NLM and NSM with the kernel client, nfsrdmad on $PROV: passed"
