#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Runs a command in private network and mount namespaces with a real
# rpcbind of its own (127.0.0.1:111 and /run/rpcbind.sock), as
# nfsrdmad-rpcbind.sh does: for a test whose peers find each other
# through rpcbind, without the host's rpcbind, or another test's, seeing
# or disturbing them.
#
# usage: in-rpcbind-ns.sh COMMAND [ARG...]
# Needs root, unshare and rpcbind; else a skip (77) with the reason.
set -u
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ $# -ge 1 ] || fail "usage: in-rpcbind-ns.sh COMMAND [ARG...]"

if [ "${RR_IN_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || skip "needs root for a private network namespace"
	command -v unshare >/dev/null || skip "no unshare"
	command -v rpcbind >/dev/null || skip "no rpcbind (Debian package rpcbind)"
	command -v rpcinfo >/dev/null || skip "no rpcinfo"
	unshare -n -m --propagation private true 2>/dev/null ||
		skip "cannot make network and mount namespaces here"
	RR_IN_NS=1 exec unshare -n -m --propagation private "$0" "$@"
fi

rb=
cleanup() {
	[ -n "$rb" ] && kill "$rb" 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT
ip link set lo up || fail "cannot bring lo up"
mount -t tmpfs tmpfs /run || fail "cannot mount a private /run"
mkdir -p /run/rpcbind

rpcbind -f -w &
rb=$!
for _ in $(seq 1 500); do
	rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
	sleep 0.02
done
rpcinfo -p 127.0.0.1 >/dev/null 2>&1 || fail "rpcbind did not come up"
"$@"
