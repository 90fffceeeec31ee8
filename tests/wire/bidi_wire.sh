#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Calls in both directions on one connection, as Wireshark reads them:
# wire_check.sh captures and judges the iwarp traffic of the bidi test
# (tests/rpcrdma/bidi.c, its server on port PORT) and keeps the capture;
# then tshark's rpcordma and rpc dissectors must find, from the server's
# port, RDMA_MSG headers with no chunks carrying RPC CALLs of the client's
# callback program (the xids alike in both headers), and toward it, the
# RDMA_MSG REPLYs to them. Nothing of ours decodes the bytes.
#
# usage: bidi_wire.sh PORT PROGRAM
# Exit status: 0 pass, 1 fail, 77 skip (as wire_check.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
port=${1:?usage: bidi_wire.sh PORT PROGRAM}
prog=${2:?usage: bidi_wire.sh PORT PROGRAM}
cb_prog=$((0x40000077)) # CB_PROG of bidi.c
tmp=$(mktemp -d /tmp/rr-bidi-wire.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

RR_BIDI_PORT=$port bash "$here/wire_check.sh" --port "$port" \
	--expect send --keep "$tmp/bidi.pcapng" -- "$prog"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"

# shellcheck source=tests/wire/port_owners.sh
. "$here/port_owners.sh"
tshark -n -r "$tmp/bidi.pcapng" --enable-heuristic iwarp_mpa_tcp \
	"${WS_PORT_OWNERS[@]}" \
	-o tcp.desegment_tcp_streams:TRUE --enable-heuristic rpcrdma_iwarp \
	-o rpc.dissect_unknown_programs:TRUE \
	--disable-heuristic rpc_tcp --disable-heuristic rpc_udp \
	-Y rpcordma -T fields -E occurrence=f \
	-e tcp.srcport -e rpcordma.xid -e rpcordma.msg_type \
	-e rpcordma.reads_count -e rpcordma.writes_count \
	-e rpcordma.reply_count -e rpc.xid -e rpc.msgtyp -e rpc.program \
	>"$tmp/frames.txt" 2>"$tmp/tshark.err" || {
	echo "FAIL: tshark -r: $(grep -v 'Running as user' "$tmp/tshark.err")"
	exit 1
}
# shellcheck disable=SC2016 # awk program
awk -F '\t' -v port="$port" -v prog="$cb_prog" '
	function plain() { return $4 + $5 + $6 == 0 && $2 == $7 }
	$1 == port && $3 == 0 && $8 == 0 && $9 == prog {
		if (plain()) calls[$2] = 1; else bad++
		ncalls++
	}
	$1 != port && $3 == 0 && $8 == 1 && ($2 in calls) {
		if (plain()) replies++; else bad++
	}
	END {
		printf "server calls %d, client replies to them %d, " \
		       "malformed %d\n", ncalls, replies, bad
		if (!ncalls || !replies || bad) {
			print "FAIL: no RDMA_MSG backward call and reply pair"
			exit 1
		}
		print "PASS"
	}' "$tmp/frames.txt"
