#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A throw-away single-host Ceph cluster for the ceph tests: one monitor,
# one OSD on memstore (its data in the OSD's memory), one MDS and a
# CephFS named "cephfs", on 127.0.0.1 with auth none, every file under
# DIR. Started in seconds: paxos and beacon intervals are shortened (the
# defaults take about 8 s to an active MDS, these 2-4 s).
#
#   cephlab.sh start DIR   # prints CEPH_CONF=DIR/ceph.conf when active
#   cephlab.sh stop DIR    # SIGKILL to every daemon it started, by PID
#   cephlab.sh check       # exit 77 with the reason when it cannot run
#
# Ports: the monitor's two are odd ports below the ephemeral range that
# nothing uses when we look (a monitor that still cannot bind is tried
# again on others); the OSD and MDS take the first free port of Ceph's
# own range, so clusters started at once do not collide. Stopping kills
# rather than terminates: the data is thrown away, and an MDS takes 4-10 s
# to stop on SIGTERM. No mgr: nothing the tests ask needs one.
set -euo pipefail

DAEMONS=(ceph-mon ceph-osd ceph-mds ceph monmaptool)

check() {
	local b
	for b in "${DAEMONS[@]}"; do
		if ! command -v "$b" >/dev/null 2>&1; then
			echo "SKIP: $b not installed (ceph-mon ceph-osd ceph-mds ceph-common)"
			return 77
		fi
	done
	# not "ldconfig -p | grep -q": grep quitting early makes ldconfig die
	# of SIGPIPE, and pipefail then says the library is missing
	local libs
	libs=$(ldconfig -p 2>/dev/null || true)
	if ! grep -q 'libcephfs\.so\.2 ' <<<"$libs"; then
		echo "SKIP: libcephfs not installed"
		return 77
	fi
	return 0
}

die() {
	echo "cephlab: $*" >&2
	exit 1
}

# wait_for SECONDS WHAT CMD...: polls CMD (every 0.1 s) until it succeeds.
wait_for() {
	local t=$1 what=$2 end
	shift 2
	end=$((SECONDS + t))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt "$end" ] || die "timeout waiting for $what (logs in $D/log)"
		sleep 0.1
	done
}

port_unused() {
	! ss -tanH "sport = :$1" 2>/dev/null | grep -q .
}

# Two odd ports in 20001-31999, neither in use.
pick_ports() {
	local p
	for _ in $(seq 1 200); do
		p=$((20001 + 2 * (RANDOM % 6000)))
		if port_unused "$p" && port_unused $((p + 2)); then
			echo "$p $((p + 2))"
			return 0
		fi
	done
	die "no free port pair for the monitor"
}

# start NAME CMD...: a daemon in the foreground, backgrounded, its PID kept.
launch() {
	local n=$1
	shift
	"$@" >"$D/log/$n.out" 2>&1 </dev/null &
	echo "$! $n" >>"$D/pids"
}

write_conf() {
	cat >"$D/ceph.conf" <<EOF
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$V2,v1:127.0.0.1:$V1]
public addr = 127.0.0.1
public network = 127.0.0.0/8
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $D/run
admin socket = $D/run/\$cluster-\$name.\$pid.asok
pid file = $D/run/\$name.pid
log file = $D/log/\$cluster-\$name.log
crash dir = $D/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 2
mon data avail crit = 1
paxos propose interval = 0.1
paxos min wait = 0.01
mon tick interval = 1
mds beacon interval = 1
client mount timeout = 15

[mon]
mon data = $D/data/mon.\$id
mon cluster log file = $D/log/\$cluster.log

[osd]
osd data = $D/data/osd.\$id
osd objectstore = memstore
memstore device bytes = 1073741824

[mds]
mds data = $D/data/mds.\$id
mds cache memory limit = 134217728
EOF
}

# The monitor on a fresh port pair: 0, or 1 when it could not bind.
start_mon() {
	read -r V1 V2 <<<"$(pick_ports)"
	write_conf
	rm -rf "$D/data/mon.a"
	monmaptool --create --fsid "$FSID" \
		--addv a "[v2:127.0.0.1:$V2,v1:127.0.0.1:$V1]" \
		--set-min-mon-release pacific --enable-all-features \
		"$D/run/monmap" >/dev/null
	ceph-mon -c "$D/ceph.conf" --mkfs -i a --monmap "$D/run/monmap" \
		>"$D/log/mon-mkfs.out" 2>&1
	launch mon.a ceph-mon -c "$D/ceph.conf" -f -i a
	local pid end=$((SECONDS + 20))
	pid=$(awk '$2 == "mon.a" { p = $1 } END { print p }' "$D/pids")
	until ss -ltnH "sport = :$V2" 2>/dev/null | grep -q .; do
		if ! kill -0 "$pid" 2>/dev/null; then
			sed -i "/^$pid mon.a\$/d" "$D/pids"
			return 1
		fi
		[ $SECONDS -lt $end ] || die "monitor did not listen"
		sleep 0.05
	done
}

start() {
	local osd_uuid osd_id try
	mkdir -p "$D"/{data,run,log,crash}
	: >"$D/pids"
	FSID=$(cat /proc/sys/kernel/random/uuid)
	for try in 1 2 3; do
		start_mon && break
		[ $try = 3 ] && die "monitor did not start (see $D/log/mon.a.out)"
	done
	export CEPH_CONF=$D/ceph.conf
	wait_for 30 "mon quorum" ceph --connect-timeout 5 mon stat
	osd_uuid=$(cat /proc/sys/kernel/random/uuid)
	osd_id=$(ceph osd new "$osd_uuid" 2>>"$D/log/cli.out")
	mkdir -p "$D/data/osd.$osd_id"
	ceph-osd -c "$CEPH_CONF" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" \
		>"$D/log/osd-mkfs.out" 2>&1
	launch "osd.$osd_id" ceph-osd -c "$CEPH_CONF" -f -i "$osd_id"
	ceph osd pool create cephfs_metadata 8 >>"$D/log/cli.out" 2>&1
	ceph osd pool create cephfs_data 8 >>"$D/log/cli.out" 2>&1
	ceph fs new cephfs cephfs_metadata cephfs_data >>"$D/log/cli.out" 2>&1
	mkdir -p "$D/data/mds.a"
	launch mds.a ceph-mds -c "$CEPH_CONF" -f -i a
	wait_for 60 "osd.$osd_id up" sh -c "ceph osd dump | grep -q '^osd.$osd_id up'"
	wait_for 60 "MDS active" sh -c "ceph mds stat | grep -q 'up:active'"
	echo "CEPH_CONF=$CEPH_CONF"
}

stop() {
	local pid name
	[ -s "$D/pids" ] || return 0
	while read -r pid name; do
		# a PID we recorded, and still one of ours (not reused)
		case $(readlink "/proc/$pid/exe" 2>/dev/null) in
		*/ceph-mon | */ceph-osd | */ceph-mds) kill -KILL "$pid" ;;
		esac
	done <"$D/pids"
	while read -r pid name; do
		while [ -e "/proc/$pid" ] &&
			! grep -q '^[^)]*) Z' "/proc/$pid/stat" 2>/dev/null; do
			sleep 0.05
		done
	done <"$D/pids"
	rm -f "$D/pids"
}

case ${1:-} in
check) check ;;
start)
	[ $# = 2 ] || die "usage: cephlab.sh start DIR"
	check || exit $?
	D=$(realpath "$2")
	trap 'rc=$?; [ $rc = 0 ] || stop; exit $rc' EXIT
	start
	;;
stop)
	[ $# = 2 ] || die "usage: cephlab.sh stop DIR"
	D=$(realpath "$2")
	stop
	;;
*) die "usage: cephlab.sh check | start DIR | stop DIR" ;;
esac
