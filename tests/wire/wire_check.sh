#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# wire_check.sh: let Wireshark judge the bytes we put on the wire.
#
#   wire_check.sh --port P [--expect OPS] [--crc | --no-crc]
#                 [--max-packets N] [--keep FILE] -- traffic-command [args...]
#
# Captures loopback traffic on TCP port P (tshark, which runs dumpcap), runs
# the traffic command, stops the capture and has tshark's iwarp_mpa and
# iwarp_ddp_rdmap dissectors decode it. Fails when:
#   - nothing decodes as MPA/DDP/RDMAP, or the MPA Request or Reply is missing
#     (the MPA heuristic only recognises a connection from its MPA Request, so
#     the capture always starts before the traffic does);
#   - an opcode named in --expect never appears;
#   - any frame is malformed or carries an expert item of severity "error";
#   - any FPDU has a bad MPA CRC ("Bad CRC32" - tshark reports that only in
#     the text of the iwarp_mpa.crc_check field, not as an expert item), or,
#     when CRC is not in use, a nonzero CRC field;
#   - --crc and CRC was not negotiated; --no-crc and it was.
#
# OPS is a comma list of: send (any Send variant: opcodes 3-6), send_inv
# (4 or 6), write (0), read_req (1), read_resp (2), read (= read_req and
# read_resp), terminate (7).
#
# Exit status: 0 pass, 1 fail, 2 usage, 77 skip (tshark missing, or capturing
# on lo is not permitted; the reason is printed), or the traffic command's
# own 77.
#
# Synchronisation is by events, not sleeps: the traffic starts once dumpcap
# has opened lo ("Capture started"); afterwards we send a UDP datagram to
# port P as a sentinel and stop the capture once tshark has seen it (packets
# on lo reach the capture in order, so everything before it is in the file).
#
# Packet loss in the capture (a busy machine) would make the dissector lose
# FPDU alignment and report garbage. So only the frames before the first TCP
# gap tshark detects ("previous segment not captured") are judged; if that
# window is too short to judge, the whole run is repeated (3 attempts).
set -u -o pipefail

prog=wire_check
say() { printf '%s: %s\n' "$prog" "$*"; }
skip() {
	say "SKIP: $*"
	exit 77
}
usage() {
	sed -n '6,7p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

port=
expect=
crc_mode=any
max_packets=3000
max_kb=65536
keep=
attempts=3
while [ $# -gt 0 ]; do
	case "$1" in
	--port) port=${2:-}; shift 2 ;;
	--expect) expect=${2:-}; shift 2 ;;
	--crc) crc_mode=on; shift ;;
	--no-crc) crc_mode=off; shift ;;
	--max-packets) max_packets=${2:-}; shift 2 ;;
	--keep) keep=${2:-}; shift 2 ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) say "unknown option: $1" >&2; usage ;;
	esac
done
case "$port" in '' | *[!0-9]*) say "--port P is required" >&2; usage ;; esac
[ $# -gt 0 ] || { say "no traffic command given" >&2; usage; }
IFS=, read -r -a want <<<"$expect"
for w in "${want[@]}"; do
	case "$w" in
	send | send_inv | write | read_req | read_resp | read | terminate | '') ;;
	*) say "unknown --expect item: $w" >&2; exit 2 ;;
	esac
done

command -v tshark >/dev/null 2>&1 ||
	skip "tshark is not installed (scripts/bootstrap.sh installs it)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wire_check.XXXXXX") || exit 1
pcap=$tmp/capture.pcapng
cap_pid=

# shellcheck disable=SC2317 # invoked through the EXIT trap
cleanup() {
	if [ -n "$cap_pid" ] && kill -0 "$cap_pid" 2>/dev/null; then
		kill -INT "$cap_pid" 2>/dev/null
		wait "$cap_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ------------------------------------------------------------ capture

# Runs the capture around the traffic command. Sets traffic_rc and
# cap_dropped. Returns 0, or exits (skip/fail) when capturing is impossible.
capture_run() {
	local deadline reason

	rm -f "$pcap"
	# -P -l -T fields -e udp.dstport: one line per packet as it is
	# captured, empty for TCP, "$port" for the sentinel. TCP dissection is
	# off in this live pass only (it is CPU we want dumpcap to have); the
	# file gets the raw packets either way.
	tshark -n -i lo -f "tcp port $port or udp port $port" -B 32 \
		-c "$max_packets" -a "filesize:$max_kb" -w "$pcap" \
		--disable-protocol tcp -P -l -T fields -e udp.dstport \
		>"$tmp/live.out" 2>"$tmp/live.err" &
	cap_pid=$!

	# tshark prints "Capturing on ..." BEFORE dumpcap has opened the
	# interface: packets sent right after it are lost. "Capture started."
	# and "File: ..." come once dumpcap has opened lo with its filter.
	deadline=$((SECONDS + 30))
	until grep -qE 'Capture started|File: ' "$tmp/live.err"; do
		if ! kill -0 "$cap_pid" 2>/dev/null; then
			wait "$cap_pid" 2>/dev/null
			cap_pid=
			reason=$(grep -vE 'Running as user|Capturing on' \
				"$tmp/live.err" | head -5)
			if grep -qiE 'permission|not permitted|privilege' \
				"$tmp/live.err"; then
				skip "cannot capture on lo: $reason"
			fi
			say "FAIL: tshark could not capture on lo: $reason"
			exit 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			say "FAIL: tshark did not start capturing within 30 s"
			exit 1
		fi
		sleep 0.05 # polling for an event, not waiting out a race
	done

	say "capturing tcp port $port; running: $*"
	"$@"
	traffic_rc=$?

	# Sentinel; then wait until the capture has seen it, or has stopped
	# by itself (--max-packets or the size limit reached). A capture that
	# shows nothing for a while is nudged with a burst of large datagrams:
	# on a quiet lo, libpcap's TPACKET_V3 ring has been seen to sit on a
	# partly filled block.
	printf 'rpcrdma-wire-sentinel' \
		>"/dev/udp/127.0.0.1/$port" 2>/dev/null || true
	deadline=$((SECONDS + 30))
	local nudge=$((SECONDS + 2))
	while kill -0 "$cap_pid" 2>/dev/null &&
		! grep -qx "$port" "$tmp/live.out"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			say "warning: capture did not show the sentinel in 30 s"
			break
		fi
		if [ "$SECONDS" -ge "$nudge" ]; then
			nudge=$((SECONDS + 2))
			{ dd if=/dev/zero bs=60000 count=32 2>/dev/null \
				>"/dev/udp/127.0.0.1/$port"; } 2>/dev/null || true
		fi
		sleep 0.05
	done
	kill -INT "$cap_pid" 2>/dev/null
	wait "$cap_pid" 2>/dev/null
	cap_pid=
	cap_dropped=$(grep -i 'dropped' "$tmp/live.err" | head -1)
	return 0
}

# ----------------------------------------------------------- analysis

# The MPA dissector finds MPA on any TCP port heuristically (heuristic
# "iwarp_mpa_tcp", on by default; enabled explicitly here): it must see the
# MPA Request frame, then the Reply, then decodes FPDUs with TCP reassembly
# (several FPDUs per segment, and FPDUs across segments, are both fine).
ts() {
	tshark -n -r "$pcap" --enable-heuristic iwarp_mpa_tcp \
		-o tcp.desegment_tcp_streams:TRUE \
		-o tcp.analyze_sequence_numbers:TRUE "$@" 2>"$tmp/ts.err"
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		say "tshark -r failed ($rc): $(grep -v 'Running as user' \
			"$tmp/ts.err" | head -3)" >&2
	fi
	return "$rc"
}

window= # display filter restricting analysis to the gap-free prefix
W() { if [ -n "$window" ]; then echo "$window && ($1)"; else echo "$1"; fi; }
count() { ts -Y "$(W "$1")" | wc -l; }

failed=0
fail() {
	say "FAIL: $*"
	failed=1
}

# Sets window. Returns 1 when the gap-free prefix is too short to judge.
find_window() {
	local gap

	window=
	gap=$(ts -Y 'tcp.analysis.lost_segment' -T fields -e frame.number |
		head -1) || return 0
	if [ -n "$gap" ]; then
		window="frame.number < $gap"
		say "warning: capture lost packets before frame $gap" \
			"${cap_dropped:+($cap_dropped)}; judging frames 1-$((gap - 1))"
	fi
	[ "$(count 'iwarp_mpa.req')" -gt 0 ] || return 1
	[ "$(count 'iwarp_mpa.rep')" -gt 0 ] || return 1
	return 0
}

declare -A opn=()
has() { # has OPCODE... : any of them seen?
	local o
	for o in "$@"; do [ "${opn[$o]:-0}" -gt 0 ] && return 0; done
	return 1
}

# Returns 1 when the expected opcodes are missing from the window.
check_expected() {
	local op line='' w rc=0
	local -a name=([0]=Write [1]="Read Request" [2]="Read Response"
		[3]=Send [4]="Send with Invalidate" [5]="Send with SE"
		[6]="Send with SE and Invalidate" [7]=Terminate)

	# RDMAP opcodes, every occurrence (a frame may carry several FPDUs).
	opn=()
	ts -Y "$(W iwarp_rdma)" -T fields -E occurrence=a -E aggregator=, \
		-e iwarp_rdma.opcode >"$tmp/ops" || exit 1
	for op in $(tr ',' '\n' <"$tmp/ops"); do
		op=$((op))
		opn[$op]=$((${opn[$op]:-0} + 1))
	done
	for op in "${!opn[@]}"; do
		line="$line ${name[$op]:-opcode $op}=${opn[$op]}"
	done
	say "RDMAP messages:${line:- none}"
	for w in "${want[@]}"; do
		case "$w" in
		send) has 3 4 5 6 || { say "no RDMAP Send"; rc=1; } ;;
		send_inv) has 4 6 || { say "no Send with Invalidate"; rc=1; } ;;
		write) has 0 || { say "no RDMA Write"; rc=1; } ;;
		read_req) has 1 || { say "no RDMA Read Request"; rc=1; } ;;
		read_resp) has 2 || { say "no RDMA Read Response"; rc=1; } ;;
		read)
			has 1 || { say "no RDMA Read Request"; rc=1; }
			has 2 || { say "no RDMA Read Response"; rc=1; }
			;;
		terminate) has 7 || { say "no RDMAP Terminate"; rc=1; } ;;
		esac
	done
	return "$rc"
}

judge() {
	local n_frames n_good n_bad n_nz crc_on

	n_frames=$(count 'iwarp_mpa || iwarp_ddp_rdmap') || exit 1
	say "$n_frames frames decoded as MPA/DDP/RDMAP" \
		"(MPA Request: $(count iwarp_mpa.req)," \
		"MPA Reply: $(count iwarp_mpa.rep))"

	# Malformed frames and expert errors.
	ts -Y "$(W '_ws.malformed || _ws.expert.severity == error')" \
		-T fields -E occurrence=a -E aggregator=' / ' \
		-e frame.number -e _ws.col.Protocol -e _ws.expert.message \
		>"$tmp/bad" || exit 1
	if [ -s "$tmp/bad" ]; then
		fail "$(wc -l <"$tmp/bad") malformed frame(s) or expert error(s):"
		head -20 "$tmp/bad" | sed 's/^/    frame /'
	fi

	# MPA CRC: in use if either side's Request/Reply has the C flag.
	ts -Y "$(W 'iwarp_mpa.req || iwarp_mpa.rep')" -T fields \
		-e iwarp_mpa.crc_flag >"$tmp/crcflag" || exit 1
	if grep -qE '^(1|True)$' "$tmp/crcflag"; then crc_on=1; else crc_on=0; fi
	ts -Y "$(W iwarp_mpa.crc_check)" -O iwarp_mpa -V >"$tmp/crc.txt" ||
		exit 1
	n_good=$(grep -c 'Good CRC32' "$tmp/crc.txt")
	n_bad=$(grep -c 'Bad CRC32' "$tmp/crc.txt")
	if [ "$crc_on" -eq 1 ]; then
		say "MPA CRC in use: $n_good good, $n_bad bad"
		[ "$n_good" -gt 0 ] || fail "CRC negotiated but no CRC checked"
		if [ "$n_bad" -gt 0 ]; then
			fail "$n_bad FPDU(s) with a bad MPA CRC:"
			awk '/^Frame [0-9]+:/ { f = $2 }
			     /Bad CRC32/ { sub(/^ +/, "")
					   print "    frame " f " " $0 }' \
				"$tmp/crc.txt" | head -10
		fi
		[ "$crc_mode" != off ] || fail "MPA CRC negotiated, expected off"
	else
		n_nz=$(count 'iwarp_mpa.crc && iwarp_mpa.crc != 0')
		say "MPA CRC not in use ($n_nz FPDU(s) with a nonzero CRC field)"
		[ "$n_nz" -eq 0 ] ||
			fail "$n_nz FPDU(s) carry a nonzero CRC field without CRC"
		[ "$crc_mode" != on ] || fail "MPA CRC not negotiated, expected on"
	fi
}

# --------------------------------------------------------------- main

attempt=1
while :; do
	capture_run "$@"
	if [ "$traffic_rc" -eq 77 ]; then
		skip "the traffic command skipped (exit 77)"
	fi
	[ -z "$cap_dropped" ] || say "capture: $cap_dropped"
	if [ "$traffic_rc" -ne 0 ]; then
		fail "traffic command exited with status $traffic_rc"
		break
	fi
	if [ ! -s "$pcap" ]; then
		fail "no capture file was written"
		break
	fi
	if find_window && check_expected; then
		break
	fi
	# Not enough to judge: a gap came early, or the traffic really lacks
	# what we expect. Only the former is worth another try.
	if [ -n "$window" ] && [ "$attempt" -lt "$attempts" ]; then
		attempt=$((attempt + 1))
		say "capture window too short to judge; attempt $attempt" \
			"of $attempts"
		continue
	fi
	fail "the capture lacks expected MPA/RDMAP messages${window:+ (in $window)}"
	break
done
[ ! -s "$pcap" ] || judge

if [ "$failed" -ne 0 ]; then
	dest=${keep:-$PWD/wire-$port.pcapng}
	[ ! -s "$pcap" ] || { cp "$pcap" "$dest" && say "capture kept in $dest"; }
	say "FAIL"
	exit 1
fi
[ -z "$keep" ] || cp "$pcap" "$keep"
say "PASS"
exit 0
