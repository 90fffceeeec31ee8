#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# PID 1 of the rr-vm.sh guest, on the host's root under a tmpfs overlay.
# Brings up eth0 and an RDMA device on it (rr.dev: Soft-RoCE rxe0 by
# default, soft-iWARP siw0, or none), runs JOB/cmd with JOB/env, leaves
# output, status and dmesg in JOB (shared with the host), and powers off.
# A failed device setup is a harness failure (status 125).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
JOB= CACHE= TMO=280 DEV=rxe
for a in $(cat /proc/cmdline); do
	case $a in
	rr.job=*) JOB=${a#rr.job=} ;;
	rr.cache=*) CACHE=${a#rr.cache=} ;;
	rr.tmo=*) TMO=${a#rr.tmo=} ;;
	rr.dev=*) DEV=${a#rr.dev=} ;;
	esac
done
KV=$(uname -r)

# A sync that cannot finish (a stuck 9p or block request) must not hold
# the guest up until the host's bound: it gets 20 s.
off() {
	timeout -s KILL 20 sync
	busybox poweroff -f
}

# On failure: the kernel's list of tasks blocked in it (sysrq w), so a
# command stuck in a system call shows where.
blocked_tasks() {
	echo w >/proc/sysrq-trigger 2>/dev/null
}

base_mounts() {
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	# devtmpfs lacks these links (udev makes them); bash's <(...) needs them
	ln -sfn /proc/self/fd /dev/fd
	ln -sf /proc/self/fd/0 /dev/stdin
	ln -sf /proc/self/fd/1 /dev/stdout
	ln -sf /proc/self/fd/2 /dev/stderr
	# /run only: /tmp comes from the host, where the build tree may live
	mount -t tmpfs tmpfs /run
}

# The guest kernel's modules are in the cache, not in the host's
# /lib/modules (the host may run another kernel, or none of Debian's).
modules() {
	local m=$CACHE/kroot/lib/modules/$KV
	[ -e "/lib/modules/$KV/modules.dep" ] && return 0
	mkdir -p "/lib/modules/$KV" && mount --bind "$m" "/lib/modules/$KV"
}

# slirp's guest address; restrict=on keeps every packet inside the guest.
network() {
	hostname rr-vm
	ip link set lo up
	ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0
}

rxe() {
	modprobe rdma_rxe && modprobe rdma_ucm || return 1
	rdma link add rxe0 type rxe netdev eth0 || return 1
	[ -d /sys/class/infiniband/rxe0 ]
}

# siw.ko is not Debian's: rr-vm.sh built it into the cache's module tree.
siw() {
	modprobe siw && modprobe rdma_ucm || return 1
	rdma link add siw0 type siw netdev eth0 || return 1
	[ -d /sys/class/infiniband/siw0 ]
}

rdma_dev() {
	case $DEV in
	rxe) rxe ;;
	siw) siw ;;
	none) return 0 ;;
	*) echo "unknown rr.dev=$DEV"; return 1 ;;
	esac
}

run_job() {
	local rc up
	if ! rdma_dev >"$JOB/output" 2>&1; then
		echo "rr-vm guest: $DEV setup failed" >>"$JOB/output"
		return 125
	fi
	# the host's bound counts from qemu's start: leave room to power off
	up=$(cut -d. -f1 /proc/uptime)
	TMO=$((TMO - up))
	[ $TMO -gt 5 ] || TMO=5
	# a file, not a pipe: stray background children cannot hold up the
	# power-off, and timeout ends the job's whole process group
	(
		. "$JOB/env"
		# siw charges what it pins to RLIMIT_MEMLOCK even for root,
		# and the default 8 MiB is less than a server registers
		ulimit -l unlimited
		exec timeout -k 5 "$TMO" bash "$JOB/cmd"
	) </dev/null >>"$JOB/output" 2>&1
	rc=$?
	[ $rc = 124 ] && echo "rr-vm guest: command hit the ${TMO}s bound" >>"$JOB/output"
	if [ $rc != 0 ]; then
		# beside the command's output, not in it: rr-vm.sh says it
		echo "command exit $rc at uptime $(cut -d' ' -f1 /proc/uptime)s" >"$JOB/diag"
		blocked_tasks
	fi
	return $rc
}

base_mounts
modules
network
echo "RR-VM-BOOTED uptime=$(cut -d' ' -f1 /proc/uptime)s"
if [ -z "$JOB" ] || [ ! -f "$JOB/cmd" ]; then
	echo "RR-VM: no job"
	off
fi
run_job
rc=$?
dmesg >"$JOB/dmesg" 2>&1
echo "$rc" >"$JOB/rc"
echo "RR-VM-DONE rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)s"
off
