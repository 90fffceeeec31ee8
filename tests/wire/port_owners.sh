# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# Sourced by the wire checks before they read a capture with tshark.
#
# Wireshark gives some TCP ports in Linux's ephemeral range to protocols of
# its own (34980 EtherCAT, 44818 EtherNet/IP, 57000 IRC, ...; 7 of them in
# 32768-60999 with Debian 12's). A test client whose port happens to be one
# has its whole stream decoded as that protocol, before any heuristic and
# before a Decode As of the server's port: the iwarp checks then saw 402
# "malformed" EtherCAT frames in a run that was fine. WS_PORT_OWNERS holds
# "--disable-protocol NAME" for each such protocol, to give to tshark -r.
WS_PORT_OWNERS=()
ws_port_owners() {
	local lo=32768 hi=60999 name
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	while read -r name; do
		case $name in
		tcp | rpc | rpcordma | iwarp_* | nfs | mount) ;; # what we read
		*) WS_PORT_OWNERS+=(--disable-protocol "$name") ;;
		esac
	done < <(tshark -G decodes 2>/dev/null | awk -F '\t' -v lo="$lo" \
		-v hi="$hi" '$1 == "tcp.port" && $2 >= lo && $2 <= hi { print $3 }' |
		sort -u)
}
ws_port_owners
