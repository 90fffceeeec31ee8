#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# tcp_bidi_check.sh PORT TCP_BIDI: has tshark's "rpc" dissector judge a
# callback over TCP. Runs "TCP_BIDI --wire PORT" (a forward call whose
# handler calls its client back, the server on PORT) under a capture of
# tcp port PORT and fails unless:
#   - a forward CALL goes to PORT and its REPLY comes from PORT;
#   - a CALL of the callback program comes FROM PORT (the server's side of
#     the client's own connection, no second connection), and the client's
#     REPLY to it goes to PORT, matched to it by tshark (rpc.repframe);
#   - no frame is malformed.
# Exit 0 pass, 1 fail, 77 skip (no tshark, or no capture on lo).
set -u

port=${1:?port}
bin=${2:?tcp_bidi binary}
cbprog=536871064 # 0x20000098, tcp_bidi.c's CBPROG
fprog=536871065  # 0x20000099, TPROG

say() { printf 'tcp_bidi_check: %s\n' "$*"; }
skip() { say "SKIP: $*"; exit 77; }

command -v tshark >/dev/null || skip "tshark is not installed"
tmp=$(mktemp -d) || exit 1
cap_pid=
cleanup() {
	[ -n "$cap_pid" ] && kill "$cap_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
pcap=$tmp/cap.pcapng

# The capture is live once dumpcap says so ("Capture started" or the
# file's name); packets before that would be lost.
tshark -n -i lo -f "tcp port $port or udp port $port" -w "$pcap" \
	-P -l -T fields -e udp.dstport >"$tmp/live.out" 2>"$tmp/live.err" &
cap_pid=$!
deadline=$((SECONDS + 30))
until grep -qE 'Capture started|File: ' "$tmp/live.err"; do
	if ! kill -0 "$cap_pid" 2>/dev/null; then
		cap_pid=
		grep -qiE 'permission|not permitted|privilege' "$tmp/live.err" &&
			skip "cannot capture on lo: $(head -3 "$tmp/live.err")"
		say "FAIL: tshark could not capture: $(head -3 "$tmp/live.err")"
		exit 1
	fi
	[ "$SECONDS" -ge "$deadline" ] && { say "FAIL: no capture in 30 s"; exit 1; }
	sleep 0.05 # polling for an event, not waiting out a race
done

"$bin" --wire "$port" >"$tmp/run.out" 2>&1
rc=$?

# A sentinel datagram: once the capture shows it, everything the run
# sent is in the file (lo delivers in order).
deadline=$((SECONDS + 30))
while kill -0 "$cap_pid" 2>/dev/null && ! grep -qx "$port" "$tmp/live.out"; do
	printf 'sentinel' >"/dev/udp/127.0.0.1/$port" 2>/dev/null || true
	[ "$SECONDS" -ge "$deadline" ] && break
	sleep 0.05
done
kill -INT "$cap_pid" 2>/dev/null
wait "$cap_pid" 2>/dev/null
cap_pid=

if [ "$rc" -ne 0 ]; then
	cat "$tmp/run.out"
	say "FAIL: the traffic run failed ($rc)"
	exit 1
fi

# shellcheck source=tests/wire/port_owners.sh
. "$(dirname "$0")/port_owners.sh"
# One line per RPC message: frame, msgtyp, program (calls), source and
# destination port, the frame a reply answers.
tshark -n -r "$pcap" -d "tcp.port==$port,rpc" "${WS_PORT_OWNERS[@]}" \
	-o rpc.dissect_unknown_programs:TRUE -Y rpc \
	-T fields -E separator=' ' -e frame.number -e rpc.msgtyp \
	-e rpc.program -e tcp.srcport -e tcp.dstport -e rpc.repframe \
	>"$tmp/rpc.txt" 2>"$tmp/rpc.err"
malformed=$(tshark -n -r "$pcap" -d "tcp.port==$port,rpc" "${WS_PORT_OWNERS[@]}" \
	-Y _ws.malformed \
	2>/dev/null | wc -l)

fail=0
check() { # description, awk condition over the lines
	if awk -v p="$port" -v cb="$cbprog" -v fp="$fprog" "$2" "$tmp/rpc.txt"; then
		say "ok: $1"
	else
		say "FAIL: $1"
		fail=1
	fi
}
check "a forward call to port $port" \
	'$2==0 && $3==fp && $5==p {f=1} END {exit !f}'
check "a callback call from port $port" \
	'$2==0 && $3==cb && $4==p {f=1} END {exit !f}'
check "the callback's reply to port $port, matched to its call" \
	'$2==0 && $3==cb && $4==p {c[$1]=1}
	 $2==1 && $5==p && ($6 in c) {f=1} END {exit !f}'
check "the forward reply from port $port" \
	'$2==1 && $4==p {f=1} END {exit !f}'
if [ "$malformed" -ne 0 ]; then
	say "FAIL: $malformed malformed frame(s)"
	fail=1
fi
[ "$fail" -eq 0 ] || { cat "$tmp/rpc.txt"; exit 1; }
say "PASS"
