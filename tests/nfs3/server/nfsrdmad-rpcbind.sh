#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nfsrdmad registers every listener with a real rpcbind: NFS, MOUNT and NLM on
# tcp (rpcinfo -p shows them) and NFS on netid rdma at the RDMA port
# (rpcinfo's version 4 dump shows it, as for Linux's nfsd), and takes them
# all back when it stops. rpcbind runs in a private network and mount
# namespace (its own 127.0.0.1:111 and its own /run/rpcbind.sock), so no
# rpcbind of the host, or of another test, sees or disturbs it.
#
# usage: nfsrdmad-rpcbind.sh PATH-TO-NFSRDMAD
# Needs root, unshare, rpcbind and rpcinfo; else a skip with the reason.
set -u
bin=${1:?usage: nfsrdmad-rpcbind.sh PATH-TO-NFSRDMAD}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

if [ "${RR_IN_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || skip "needs root for a private network namespace"
	command -v unshare >/dev/null || skip "no unshare"
	command -v rpcbind >/dev/null || skip "no rpcbind (Debian package rpcbind)"
	command -v rpcinfo >/dev/null || skip "no rpcinfo"
	unshare -n -m --propagation private true 2>/dev/null ||
		skip "cannot make network and mount namespaces here"
	RR_IN_NS=1 exec unshare -n -m --propagation private "$0" "$@"
fi

# --- in the namespaces from here on
top=$(mktemp -d "${TMPDIR:-/tmp}/nfsrdmad-rpcbind.XXXXXX") || exit 1
rb= nd=
cleanup() {
	[ -n "$nd" ] && kill "$nd" 2>/dev/null
	[ -n "$rb" ] && kill "$rb" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$top"
}
trap cleanup EXIT
ip link set lo up || fail "cannot bring lo up"
mount -t tmpfs tmpfs /run || fail "cannot mount a private /run"
mkdir -p /run/rpcbind "$top/export"

# waits (10 s at most) for a command to succeed: polling another process
until_ok() {
	for _ in $(seq 1 500); do "$@" >/dev/null 2>&1 && return 0; sleep 0.02; done
	return 1
}

rpcbind -f -w &
rb=$!
until_ok rpcinfo -p 127.0.0.1 || fail "rpcbind did not come up"

"$bin" --export "$top/export" --state-dir "$top/state" --address 127.0.0.1 \
	--rdma-port 0 --tcp-port 0 --mount-port 0 >"$top/out" 2>"$top/err" &
nd=$!
until_ok grep -q ready "$top/out" || fail "nfsrdmad not ready: $(cat "$top/err")"
port_of() { sed -n "s/^nfsrdmad: $1 on 127.0.0.1:\([0-9]*\)$/\1/p" "$top/out"; }
rdma=$(port_of 'nfs3+mount3 over rdma')
tcp=$(port_of 'nfs3 over tcp')
mnt=$(port_of 'mount3 over tcp')
nlm=$(port_of 'nlm4 over tcp')
[ -n "$rdma" ] && [ -n "$tcp" ] && [ -n "$mnt" ] && [ -n "$nlm" ] || fail "no ports in: $(cat "$top/out")"
uaddr() { echo "127.0.0.1.$(($1 >> 8)).$(($1 & 255))"; }

# registered once nfsrdmad says so; then rpcbind must show each
until_ok grep -q "registered NFS on rdma" "$top/err" ||
	fail "no rdma registration: $(cat "$top/err")"
until_ok grep -q "registered NLM on tcp" "$top/err" ||
	fail "no NLM registration: $(cat "$top/err")"
rpcinfo -p 127.0.0.1 >"$top/p"
rpcinfo 127.0.0.1 >"$top/v4"
grep -Eq "^ +100003 +3 +tcp +$tcp +" "$top/p" || fail "NFS on tcp $tcp: $(cat "$top/p")"
grep -Eq "^ +100005 +3 +tcp +$mnt +" "$top/p" || fail "MOUNT on tcp $mnt: $(cat "$top/p")"
grep -Eq "^ +100021 +4 +tcp +$nlm +nlockmgr" "$top/p" || fail "NLM on tcp $nlm: $(cat "$top/p")"
grep -Eq "^ +100003 +3 +rdma +$(uaddr "$rdma") " "$top/v4" ||
	fail "NFS on rdma $(uaddr "$rdma"): $(cat "$top/v4")"
# and a client that asks rpcbind finds the server there
rpcinfo -t 127.0.0.1 100003 3 >/dev/null || fail "rpcinfo -t cannot reach NFS"
rpcinfo -t 127.0.0.1 nlockmgr 4 >/dev/null || fail "rpcinfo -t cannot reach NLM"

kill "$nd"
wait "$nd"
rc=$?
nd=
[ "$rc" = 0 ] || fail "nfsrdmad exited $rc: $(grep -v calls= "$top/err")"
rpcinfo 127.0.0.1 >"$top/v4"
if grep -Eq "^ +1000(0[35]|21) " "$top/v4"; then
	fail "still registered after stop: $(cat "$top/v4")"
fi
echo "ok: tcp $tcp, mount $mnt, nlm $nlm, rdma $(uaddr "$rdma") registered and taken back"

# MOUNT is registered only where a listener serves it: on the NFS port
# when the two are one, nowhere with --mount-port off. The namespace's
# network is ours alone, so a fixed port is free.
# other_run TCP_PORT MOUNT_PORT: registers, then stops; rpcinfo -p in $top/p
other_run() {
	: >"$top/err"
	"$bin" --export "$top/export" --state-dir "$top/state" \
		--address 127.0.0.1 --rdma-port 0 --tcp-port "$1" \
		--mount-port "$2" >"$top/out" 2>"$top/err" &
	nd=$!
	until_ok grep -q "registered NFS on rdma" "$top/err" ||
		fail "--mount-port $2: no rdma registration: $(cat "$top/err")"
	rpcinfo -p 127.0.0.1 >"$top/p"
	kill "$nd"
	wait "$nd" || fail "--mount-port $2: nfsrdmad exited $?"
	nd=
}
other_run 20490 20490
grep -Eq "^ +100005 +3 +tcp +20490 +" "$top/p" ||
	fail "shared port: MOUNT not on tcp 20490: $(cat "$top/p")"
other_run 20490 off
if grep -Eq "^ +100005 " "$top/p"; then
	fail "--mount-port off: MOUNT registered: $(cat "$top/p")"
fi
grep -Eq "^ +100003 +3 +tcp +20490 +" "$top/p" ||
	fail "--mount-port off: NFS not on tcp 20490: $(cat "$top/p")"
echo "ok: MOUNT on the shared port, and not registered when off"
