#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# pair-wrs.awk against traces written by hand: it must tell a probe hit
# the tracer recorded twice (same thread, same hit number) from a work
# request completed twice (two hits), and still catch what it exists for.
set -u
here=$(cd "$(dirname "$0")" && pwd)
fail=0
P='(55a7f0938a6a)'

# expect NAME EXIT_STATUS PATTERN < TRACE
expect() {
	local out rc
	out=$(awk -f "$here/pair-wrs.awk")
	rc=$?
	if [ "$rc" != "$2" ] || ! grep -q -- "$3" <<<"$out"; then
		echo "FAIL: $1: exit $rc, wanted $2 and /$3/ in:"
		echo "$out"
		fail=1
	else
		echo "ok: $1"
	fi
}

# One receive and one signaled Send, each completed once, device closed.
base() {
	cat <<T
7/7 sdt_rpcrdma:post_recv: $P arg1=100 arg2=11 arg3=1
7/7 sdt_rpcrdma:post_send: $P arg1=100 arg2=22 arg3=3 arg4=1 arg5=2
7/8 sdt_rpcrdma:completion: $P arg1=100 arg2=22 arg3=0 arg4=3 arg5=0 arg6=1
7/8 sdt_rpcrdma:completion: $P arg1=100 arg2=11 arg3=0 arg4=5 arg5=64 arg6=2
T
}
close_dev() { echo "7/7 sdt_rpcrdma:device_close: $P arg1=1"; }

{ base; close_dev; } | expect "a clean trace passes" 0 " 0 violations"

{
	base
	echo "7/8 sdt_rpcrdma:completion: $P arg1=100 arg2=11 arg3=0 arg4=5 arg5=64 arg6=3"
	close_dev
} | expect "a receive completed twice is a violation" 1 \
	"completion of 7:100:11 .* that is not outstanding"

{
	base | sed -n 1p
	base | sed -n 1p
	base | sed -n '2,$p'
	close_dev
} | expect "a post recorded twice by the tracer counts once" 0 \
	"1 probe hits recorded twice"

{
	base
	base | sed -n 4p
	close_dev
} | expect "a completion recorded twice by the tracer counts once" 0 \
	"1 probe hits recorded twice"

{
	base
	echo "7/7 sdt_rpcrdma:post_recv: $P arg1=100 arg2=11 arg3=3"
	echo "7/7 sdt_rpcrdma:post_recv: $P arg1=100 arg2=11 arg3=4"
	close_dev
} | expect "a receive posted again while outstanding is a violation" 1 \
	"posted again while outstanding"

{
	base
	echo "7/7 sdt_rpcrdma:post_recv: $P arg1=100 arg2=33 arg3=3"
	close_dev
} | expect "a receive never completed is a violation" 1 \
	"recv work request 7:100:33 never completed"

base | sed 's|^7/[0-9]* |7 |' |
	expect "a trace without threads is refused" 1 "names no thread"

exit $fail
