#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# wire_check.sh: let Wireshark judge the bytes we put on the wire.
#
#   wire_check.sh --port P [--expect OPS] [--crc | --no-crc] [--rpc]
#                 [--chunks LIST] [--max-packets N] [--keep FILE]
#                 -- traffic-command [args...]
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
# With --rpc (RPC-over-RDMA v1 traffic, RFC 8166, whose server listens on
# port P) the Send payloads must also be understood by tshark's "rpcordma"
# dissector (packet-rpcrdma.c; heuristic "rpcrdma_iwarp" on iwarp_ddp_rdmap,
# enabled explicitly) and the ONC RPC messages inside by its "rpc" dissector
# (with rpc.dissect_unknown_programs on: our test program is unknown to
# Wireshark, and without it every call decodes as "Continuation"). Fails also
# when:
#   - no RDMA_MSG call and RDMA_MSG reply pair exists whose RPC-over-RDMA XID
#     and decoded RPC call / reply XID agree (calls toward port P, replies
#     from it);
#   - an RDMA_MSG without a Read list does not carry a decoded RPC message
#     (call toward P, reply from P) with the header's XID in the same frame;
#   - a decoded RPC call or reply has no RPC-over-RDMA header with its XID
#     in the same direction, or a reply is not matched to its call (no
#     rpc.repframe, which is what tshark calls "reply to a request in frame");
#   - a header is RDMA_ERROR, or of an unknown type;
#   - a chunk kind named in --chunks is never used, or RDMA Read Requests
#     (Writes) appear but no call advertises a Read (Write or Reply) chunk;
#   - Read chunks are used but no call's RPC message was reassembled by the
#     rpcordma dissector from the call's Send and its RDMA Read Responses;
#   - an RDMA Read Request's source (STag, offset, length), or an RDMA Write's
#     sink (STag, offset), lies outside every segment the calls advertised.
# (Wireshark cannot put Write-chunk data back into replies of a program it
# does not know, so Write chunks are judged by their lists and segments only.)
# LIST (implies --rpc) is a comma list of: read, write, reply.
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
	sed -n '6,8p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

port=
expect=
crc_mode=any
max_packets=3000
max_kb=65536
keep=
rpc=0
chunks=
attempts=3
while [ $# -gt 0 ]; do
	case "$1" in
	--port) port=${2:-}; shift 2 ;;
	--expect) expect=${2:-}; shift 2 ;;
	--crc) crc_mode=on; shift ;;
	--no-crc) crc_mode=off; shift ;;
	--rpc) rpc=1; shift ;;
	--chunks) chunks=${2:-}; rpc=1; shift 2 ;;
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
IFS=, read -r -a want_chunks <<<"$chunks"
for w in "${want_chunks[@]}"; do
	case "$w" in
	read | write | reply | '') ;;
	*) say "unknown --chunks item: $w" >&2; exit 2 ;;
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
#
# With --rpc, RPC-over-RDMA is found in the RDMAP Send payloads by the
# heuristic "rpcrdma_iwarp" (on by default; enabled explicitly here), which
# hands the RPC messages to the rpc dissector. That one gives up on calls of
# programs it does not know unless rpc.dissect_unknown_programs is set; its
# own TCP/UDP heuristics are turned off then, so that only rpcordma feeds it.
ts_opts=()
if [ "$rpc" -eq 1 ]; then
	ts_opts=(--enable-heuristic rpcrdma_iwarp
		-o rpc.dissect_unknown_programs:TRUE
		--disable-heuristic rpc_tcp --disable-heuristic rpc_udp)
fi
# shellcheck source=tests/wire/port_owners.sh
. "$(dirname "$0")/port_owners.sh"
ts() {
	tshark -n -r "$pcap" --enable-heuristic iwarp_mpa_tcp \
		"${WS_PORT_OWNERS[@]}" -o tcp.desegment_tcp_streams:TRUE \
		-o tcp.analyze_sequence_numbers:TRUE "${ts_opts[@]}" "$@" \
		2>"$tmp/ts.err"
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

# --rpc: RPC-over-RDMA headers and the RPC messages in them (see the top).
judge_rpc() {
	local -a f=(frame.number tcp.dstport
		rpcordma.xid rpcordma.msg_type rpcordma.reads_count
		rpcordma.writes_count rpcordma.reply_count
		rpc.xid rpc.msgtyp rpc.repframe rpcordma.reassembled.length
		rpcordma.rdma_handle rpcordma.rdma_offset rpcordma.rdma_length
		iwarp_rdma.opcode iwarp_ddp.stag iwarp_ddp.tagged_offset
		iwarp_rdma.srcstag iwarp_rdma.srcto iwarp_rdma.rdmardsz
		iwarp_rdma.sinkstag iwarp_rdma.sinkto rpcordma.segment_count)
	local -a e=()
	local x w need_read=0 need_wr=0 k v

	for x in "${f[@]}"; do e+=(-e "$x"); done
	ts -Y "$(W 'rpcordma || rpc || iwarp_rdma.opcode <= 2')" \
		-T fields -E occurrence=a \
		-E aggregator=, "${e[@]}" >"$tmp/rpc.txt" || exit 1

	# One line per frame, tab-separated, a comma list per field. Within a
	# frame the fields of one RPC-over-RDMA header (xid, msg_type and the
	# three list counts), of one RPC message (xid, msgtyp) and of one FPDU
	# (opcode) line up by index; the STag fields by tagged FPDU (opcodes 0
	# and 2) and Read Request; the segments are collected per direction.
	# shellcheck disable=SC2016 # awk program
	awk -F '\t' -v port="$port" '
	function hex(s,   n, i) {
		s = tolower(s); sub(/^0x/, "", s); n = 0
		for (i = 1; i <= length(s); i++)
			n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return n
	}
	function h(s) { s = tolower(s); sub(/^0x0*/, "", s); return s }
	function bad(msg) { nbad++; if (nbad <= 20) print "bad " msg }
	{
		fr = $1; split($2, dp, ","); call = (dp[1] == port)
		dir = call ? "call" : "reply"
		nh = split($3, hx, ","); split($4, ht, ",")
		split($5, hr, ","); split($6, hw, ","); split($7, hp, ",")
		nr = split($8, rx, ","); split($9, rt, ",")
		nq = ($10 == "") ? 0 : split($10, rq, ",")
		reasm = ($11 != "")
		delete inrpc; nrep = 0
		for (i = 1; i <= nr; i++) {
			inrpc[rx[i] "/" rt[i]] = 1
			if (rt[i] == 1) nrep++
			if (rt[i] == 0 && call) {
				rpc_call[rx[i]] = 1
				if (reasm) reasm_call[rx[i]] = 1
			} else if (rt[i] == 1 && !call) rpc_reply[rx[i]] = 1
			else bad("frame " fr ": RPC " \
				(rt[i] == 0 ? "call" : "reply") " xid " rx[i] \
				" travels the wrong way (tcp.dstport " dp[1] ")")
		}
		if (nrep > nq)
			for (i = 1; i <= nr; i++)
				if (rt[i] == 1) { nunm++; unm_fr[nunm] = fr
						  unm_x[nunm] = rx[i] }
		typed = 1
		for (i = 1; i <= nh; i++) {
			mt[ht[i]]++
			if (ht[i] != 0 && ht[i] != 1 && ht[i] != 2) typed = 0
			if (ht[i] == 4)
				bad("frame " fr ": RDMA_ERROR xid " hx[i])
			else if (ht[i] > 4)
				bad("frame " fr ": RPC-over-RDMA message type " \
				    ht[i] " xid " hx[i])
		}
		for (i = 1; typed && i <= nh; i++) {
			if (ht[i] != 0) continue
			if (call) { hdr_call[hx[i]] = 1; ncallhdr++ }
			else hdr_reply[hx[i]] = 1
			if (call && hr[i] > 0) { rchunk++; reduced[hx[i]] = 1 }
			if (call && hw[i] > 0) wchunk++
			if (call && hp[i] > 0) pchunk++
			if (!call && hw[i] > 0) wchunk_reply++
			if (call && hr[i] > 0) continue
			if (!((hx[i] "/" (call ? 0 : 1)) in inrpc))
				bad("frame " fr ": RDMA_MSG " dir " xid " hx[i] \
				    " does not carry a decoded RPC " dir \
				    " with that xid")
		}
		for (i = 1; typed && i <= nh; i++)
			if (ht[i] == 1 && call && hp[i] > 0) pchunk++
		if (call) {
			ns = split($12, sh, ","); split($13, so, ",")
			split($14, sl, ","); split($23, sc, ",")
			for (i = 1; i <= ns; i++) {
				nseg++; sgh[nseg] = h(sh[i])
				sgo[nseg] = hex(so[i]); sgl[nseg] = sl[i] + 0
			}
			# Which call a Read segment belongs to: a header has
			# its Read list segments first, then the segments
			# of its Write chunks and of its Reply chunk (counted
			# by rpcordma.segment_count).
			sp = 1; cp = 1
			for (i = 1; typed && i <= nh; i++) {
				for (j = 0; j < hr[i]; j++)
					rdxid[h(sh[sp + j])] = hx[i]
				n = hr[i] + 0
				for (j = 0; j < hw[i]; j++) n += sc[cp++]
				if (hp[i] > 0) n += sc[cp++]
				sp += n
			}
		}
		no = split($15, op, ","); split($16, ts_, ",")
		split($17, to_, ","); split($18, ss, ",")
		split($19, so2, ","); split($20, sz, ",")
		split($21, ks, ","); split($22, ko, ",")
		t = 0; r = 0
		for (i = 1; i <= no; i++) {
			o = op[i] + 0
			if (o == 0 || o == 2) t++
			if (o == 0) {
				nw++; wf[nw] = fr; ws[nw] = h(ts_[t])
				wo[nw] = hex(to_[t])
			} else if (o == 1) {
				r++; nrr++; rf[nrr] = fr; rs[nrr] = h(ss[r])
				ro[nrr] = hex(so2[r]); rl[nrr] = sz[r] + 0
				qs[nrr] = h(ks[r]); qo[nrr] = hex(ko[r])
				qx[nrr] = rdxid[rs[nrr]]; latest[qs[nrr]] = nrr
			} else if (o == 2) {
				# packet-rpcrdma.c maps a Read Response to its
				# Read Request by the sink STag alone: the one
				# it finds is the latest Request with that STag.
				# When that is not the Request whose sink range
				# holds this Response, the dissector puts the
				# data into the wrong chunk and the call is
				# never reassembled.
				k = h(ts_[t]); x = hex(to_[t]); own = 0
				for (q = nrr; q >= 1; q--)
					if (qs[q] == k && x >= qo[q] &&
					    x < qo[q] + rl[q]) { own = q; break }
				if (!own)
					bad("frame " fr ": RDMA Read Response" \
					    " to STag 0x" k " offset " \
					    sprintf("0x%x", x) " answers no" \
					    " Read Request")
				else if (latest[k] != own && qx[own] != "") {
					if (!(qx[own] in alias)) {
						nalias++; alias[qx[own]] = 1
						alias_ex = alias_ex " " qx[own] \
						    " (frame " fr ", Read" \
						    " Request in frame " rf[own] \
						    ", later one with the same" \
						    " sink STag 0x" k " in frame " \
						    rf[latest[k]] ")"
					}
				}
			}
		}
	}
	function inseg(st, off, len,   j) {
		for (j = 1; j <= nseg; j++)
			if (sgh[j] == st && off >= sgo[j] &&
			    off + len <= sgo[j] + sgl[j])
				return 1
		return 0
	}
	END {
		for (x in rpc_call) if (!(x in hdr_call))
			bad("RPC call xid " x " has no RDMA_MSG call header" \
			    " with that xid")
		for (x in rpc_reply) if (!(x in hdr_reply))
			bad("RPC reply xid " x " has no RDMA_MSG reply header" \
			    " with that xid")
		for (x in hdr_call)
			if ((x in rpc_call) && (x in hdr_reply) && \
			    (x in rpc_reply)) pairs++
		for (x in reduced) {
			nred++
			if (x in reasm_call) nreasm++
			else if (x in alias) nexpl++
			else if (x in hdr_reply)
				bad("call xid " x " (Read chunks) was answered," \
				    " but its RPC call was never reassembled")
		}
		for (i = 1; i <= nunm; i++) if (!(unm_x[i] in alias))
			bad("frame " unm_fr[i] ": RPC reply xid " unm_x[i] \
			    " not matched to a call (no rpc.repframe)")
		for (i = 1; i <= nrr; i++) if (!inseg(rs[i], ro[i], rl[i]))
			bad(sprintf("frame %s: RDMA Read Request source STag" \
			    " 0x%s offset 0x%x length %d is in no advertised" \
			    " segment", rf[i], rs[i], ro[i], rl[i]))
		for (i = 1; i <= nw; i++) if (!inseg(ws[i], wo[i], 1))
			bad(sprintf("frame %s: RDMA Write to STag 0x%s offset" \
			    " 0x%x is in no advertised segment", wf[i], ws[i],
			    wo[i]))
		printf "stat pairs %d\nstat callhdr %d\n", pairs, ncallhdr
		printf "stat calls %d\nstat replies %d\n", length(rpc_call),
			length(rpc_reply)
		printf "stat rchunk %d\nstat wchunk %d\nstat pchunk %d\n",
			rchunk, wchunk, pchunk
		printf "stat wchunk_reply %d\nstat reduced %d\nstat reasm %d\n",
			wchunk_reply, nred, nreasm
		printf "stat segs %d\nstat rreq %d\nstat writes %d\n",
			nseg, nrr, nw
		printf "stat types"
		for (x in mt) printf " %s=%d", x, mt[x]
		printf "\nstat nbad %d\nstat nalias %d\n", nbad, nalias
		printf "stat alias_ex%s\n", alias_ex
	}' "$tmp/rpc.txt" >"$tmp/rpc.out" || { fail "awk failed"; return; }

	declare -A st=()
	while read -r k x v; do
		[ "$k" = stat ] && st[$x]=$v
	done <"$tmp/rpc.out"
	say "RPC-over-RDMA: message types (0=MSG 1=NOMSG 2=MSGP):" \
		"${st[types]:-none}; RPC calls ${st[calls]}, replies" \
		"${st[replies]}; ${st[pairs]} RDMA_MSG call/reply pair(s) with" \
		"matching XIDs"
	say "RPC-over-RDMA chunks: calls with a Read list ${st[rchunk]}" \
		"(RPC reassembled from Read chunks: ${st[reasm]} of" \
		"${st[reduced]}), with a Write list ${st[wchunk]} (replies:" \
		"${st[wchunk_reply]}), with a Reply chunk ${st[pchunk]};" \
		"${st[segs]} segments advertised, ${st[rreq]} Read Requests" \
		"and ${st[writes]} Writes checked against them"
	if [ "${st[nalias]}" -gt 0 ]; then
		say "note: ${st[nalias]} call(s) with Read chunks not" \
			"reassembled by Wireshark because packet-rpcrdma.c" \
			"maps RDMA Read Responses to Read Requests by sink STag" \
			"only (RFC 5040 allows several outstanding Read Requests" \
			"into one STag at different offsets, as our server" \
			"does); their replies are not held against us. First:" \
			"$(cut -d')' -f1 <<<"${st[alias_ex]}"))"
	fi
	if [ "${st[nbad]}" -gt 0 ]; then
		fail "${st[nbad]} RPC-over-RDMA problem(s):"
		sed -n 's/^bad /    /p' "$tmp/rpc.out"
	fi
	[ "${st[pairs]}" -gt 0 ] ||
		fail "no RDMA_MSG call and reply decoded with matching XIDs"

	has 1 && need_read=1
	has 0 && need_wr=1
	for w in "${want_chunks[@]}"; do
		case "$w" in
		read) need_read=1 ;;
		write) [ "${st[wchunk]}" -gt 0 ] ||
			fail "no call with a Write list" ;;
		reply) [ "${st[pchunk]}" -gt 0 ] ||
			fail "no call with a Reply chunk" ;;
		esac
	done
	if [ "$need_read" -eq 1 ]; then
		[ "${st[rchunk]}" -gt 0 ] ||
			fail "no call with a Read list${opn[1]:+ (but ${opn[1]} RDMA Read Requests)}"
		[ "${st[reasm]}" -gt 0 ] ||
			fail "no RPC call reassembled from its Read chunks"
	fi
	if [ "$need_wr" -eq 1 ] &&
		[ $((st[wchunk] + st[pchunk])) -eq 0 ]; then
		fail "${opn[0]} RDMA Writes but no call with a Write list or" \
			"Reply chunk"
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
if [ -s "$pcap" ]; then
	judge
	[ "$rpc" -eq 0 ] || judge_rpc
fi

if [ "$failed" -ne 0 ]; then
	dest=${keep:-$PWD/wire-$port.pcapng}
	[ ! -s "$pcap" ] || { cp "$pcap" "$dest" && say "capture kept in $dest"; }
	say "FAIL"
	exit 1
fi
[ -z "$keep" ] || cp "$pcap" "$keep"
say "PASS"
exit 0
