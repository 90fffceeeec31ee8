# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# Sourced by the guest-side NFS interop scripts (kclient-nfsrdmad.sh,
# nfsrdma-knfsd.sh): steps, checks and the waits they share. A failed
# check prints one FAIL line and exits 1; the caller's EXIT trap adds
# the logs that say why.

ADDR=${RR_TEST_ADDR:-10.0.2.15}

step() { echo "--- $*"; }
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	exit 1
}

# SIZE random bytes into PATH: content a wrong offset cannot reproduce.
randfile() {
	head -c "$2" /dev/urandom >"$1" || fail "cannot make $1"
}

# same A B WHAT: the two files hold the same bytes.
same() {
	cmp -s "$1" "$2" || fail "$3: $1 and $2 differ ($(cmp "$1" "$2" 2>&1))"
}

sum_of() { sha256sum <"$1" | cut -c1-16; }

# Until FILE (written by process PID) has a line containing TEXT: read as
# it is written, not polled. Fails when PID ends first or nothing new
# arrives for SECS.
await_line() {
	local file=$1 text=$2 pid=$3 secs=${4:-30} line
	while IFS= read -r -t "$secs" line; do
		case $line in *"$text"*) return 0 ;; esac
	done < <(tail -n +1 -F --pid="$pid" "$file" 2>/dev/null)
	return 1
}

# N empty files with names long enough that a listing of them outgrows
# any inline reply (about 60 bytes an entry, more with attributes).
many_names() {
	local i
	for ((i = 0; i < $1; i++)); do
		printf 'entry-%04d-abcdefghijklmnopqrstuvwxyz-0123456789\n' "$i"
	done
}

# The kernel forgets what it cached of NFS files, so reads go to the wire.
drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches; }

# KVM offers its paravirtual clock to the guest; TCG does not.
under_kvm() {
	grep -qw kvm-clock \
		/sys/devices/system/clocksource/clocksource0/available_clocksource
}

# Seconds before rr-vm.sh's time bound ends this guest: rr.tmo on the
# kernel command line counts from boot. Outside such a guest: a day.
guest_secs_left() {
	local a tmo=
	for a in $(cat /proc/cmdline); do
		case $a in rr.tmo=*) tmo=${a#rr.tmo=} ;; esac
	done
	[ -n "$tmo" ] || { echo 86400; return; }
	echo $((tmo - $(cut -d. -f1 /proc/uptime)))
}

# kclient_chunks MNT: the kernel client's RPC-over-RDMA counters for the
# mount at MNT show read, write and reply chunks, and no unknown xids or
# bad replies. xprt: rdma fields after "rdma"
# (net/sunrpc/xprtrdma/transport.c): 1 port, 2 bind, 3 connect, 4
# connect time, 5 idle, 6 sends, 7 recvs, 8 bad xids, 9 req_u, 10
# bklog_u, 11 read chunks, 12 write chunks, 13 reply chunks, 14 rdma
# request bytes, 15 rdma reply bytes, 16 pullup, 17 fixup, 18 hardway, 19
# failed marshal, 20 bad replies.
kclient_chunks() {
	local x
	x=$(grep -A30 "mounted on $1 " /proc/self/mountstats |
		awk '$1 == "xprt:" && $2 == "rdma" {print; exit}')
	echo "kernel client: $x"
	# shellcheck disable=SC2086 # the counters, one word each
	set -- ${x#*rdma}
	[ $# -ge 20 ] || fail "short xprt line"
	[ "${11}" -gt 0 ] || fail "no read chunks (WRITE data) were sent"
	[ "${12}" -gt 0 ] || fail "no write chunks (READ data) were sent"
	[ "${13}" -gt 0 ] || fail "no reply chunks (READDIRPLUS) were sent"
	[ "$8" = 0 ] || fail "$8 replies with unknown xids"
	[ "${20}" = 0 ] || fail "${20} bad replies"
	ok "read chunks ${11}, write chunks ${12}, reply chunks ${13}," \
		"no bad replies"
}

# stop_nfsrdmad MNT PID LOG: unmounts MNT, stops nfsrdmad (PID) with
# SIGTERM, and wants its exit 0 and no garbage or bad handle in LOG
stop_nfsrdmad() {
	timeout 30 umount "$1" || fail "umount $1"
	kill -TERM "$2" && wait "$2" || fail "nfsrdmad exit status $?"
	grep -q ' 0 garbage, 0 bad handles' "$3" ||
		fail "nfsrdmad: $(grep 'nfs calls' "$3")"
	ok "$(grep 'nfs calls' "$3")"
}

# kclient_list DIR N WORK: makes DIR with N entries through the kernel
# client (a shell redirection: CREATE alone, where touch adds a SETATTR),
# drops the caches, and wants ls -l to list exactly those names; the
# names it wants are left in WORK/names.want
kclient_list() {
	local got
	mkdir "$1" || fail "mkdir $1"
	(cd "$1" && many_names "$2" |
		while read -r f; do : >"$f" || exit 1; done) ||
		fail "create $2 files"
	drop_caches
	ls -l "$1" >"$3/ls.client" || fail "ls -l $1"
	awk 'NF >= 9 {print $9}' "$3/ls.client" | sort >"$3/names.client"
	got=$(wc -l <"$3/names.client")
	[ "$got" = "$2" ] || fail "the client lists $got entries, not $2"
	many_names "$2" | sort >"$3/names.want"
	same "$3/names.want" "$3/names.client" "names listed by the client"
}
