#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The benchmark reports share one JSON shape (README.md, "Benchmark
# JSON"; tools/common/bench_json.c writes it): each of rpcrdma-bench
# fabric, rpcrdma-bench rpc and nfsrdma bench runs for a second at most
# (nfsrdma's shortest) against a real peer (its own forked peers; an nfsrdmad started here),
# and jq, a parser nobody here wrote, reads what it printed. shape.jq holds
# the rules all three keep; each program's own lines below pin what its
# run must say (target, baselines, goals). Every report is then broken on
# purpose once, to show the rules still catch it.
#
# usage: json-shape.sh RPCRDMA-BENCH NFSRDMA NFSRDMAD
#        json-shape.sh --self-test README.md
#            the rules pass the README's example and catch each of a set
#            of broken copies of it, and the shapes they replaced
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SHAPE=$HERE/shape.jq
SECS=0.5

fail() {
	echo "FAIL: $*"
	exit 1
}

command -v jq >/dev/null || {
	echo "SKIP: jq is not installed (scripts/install-deps.sh installs it)"
	exit 77
}

# problems FILE PROGRAM SUBCOMMAND: the rules FILE breaks, one a line;
# fails when FILE is not exactly one JSON value.
problems() {
	local n
	n=$(jq -s length "$1" 2>&1) || {
		echo "not JSON: $n"
		return 1
	}
	[ "$n" = 1 ] || {
		echo "$n JSON values, not one"
		return 1
	}
	jq -r --arg program "$2" --arg subcommand "$3" -f "$SHAPE" "$1"
}

# keeps FILE PROGRAM SUBCOMMAND: FILE keeps every rule.
keeps() {
	local p
	p=$(problems "$@") || fail "$2 $3: $p"
	[ -z "$p" ] || fail "$2 $3 breaks the shape:"$'\n'"$p"$'\n'"$(cat "$1")"
}

# caught FILE PROGRAM SUBCOMMAND FILTER [WHAT]: the rules catch FILE
# altered by the jq FILTER (WHAT: how to call it, FILTER by default).
caught() {
	local p what=${5:-$4}
	jq -c "$4" "$1" >"$1.bad" || fail "jq '$4' did not run"
	p=$(problems "$1.bad" "$2" "$3") && [ -z "$p" ] &&
		fail "$2 $3: the rules did not catch $what"
	echo "caught: $what (${p%%$'\n'*})"
}

# says FILE WHAT FILTER: jq -e FILTER holds for FILE.
says() {
	jq -e "$3" "$1" >/dev/null || fail "$2: not so in $(cat "$1")"
	echo "ok: $2"
}

self_test() {
	local t bad p
	t=$(mktemp -d)
	# shellcheck disable=SC2064 # t is local: expanded now, on purpose
	trap "rm -rf '$t'" EXIT
	# The first ```json block after the section's heading.
	awk '/^## Benchmark JSON/ { s = 1 } s && /^```json/ { p = 1; next }
	     p && /^```/ { exit } p' "$1" >"$t/good.json"
	[ -s "$t/good.json" ] || fail "no example under '## Benchmark JSON' in $1"
	keeps "$t/good.json" nfsrdma bench
	echo "ok: the README's example keeps the shape"
	for bad in 'del(.target)' '.transport = "ib"' '.provider = null' \
		'.figures.MBps = "fast"' '.figures |= del(.p99_us)' \
		'.baselines[0].ratio |= del(.MBps)' '.baselines = {}' \
		'.baselines[0].figures.MBps = null' '.goals[0].met = "yes"' \
		'.goals[0].baseline = "nobody"' '.goals = null' \
		'.ratio_MBps = 1.5' '.schema = "rr-bench/0"' \
		'.program = "nfsrdma bench"' '.details = []' '.size_bytes = -1'; do
		caught "$t/good.json" nfsrdma bench "$bad"
	done
	# The shapes rr-bench/1 replaced, one of each program.
	printf '%s\n' '{"program":"nfsrdma bench","url":"nfs://h/e/f","transport":"rdma","provider":"iwarp","units":{"MBps":"1e6 bytes/s"},"op":"read","bs":4096,"depth":16,"rdma":{"ops":1,"seconds":1.0,"MBps":1.0,"iops":1,"p50_us":1,"p99_us":1},"ratio_MBps":1.0}' >"$t/old.json"
	caught "$t/old.json" nfsrdma bench . "nfsrdma's old shape"
	printf '%s\n' '{"op":"write","size":4096,"depth":1,"provider":"iwarp","addr":"127.0.0.1","crc":false,"seconds":1,"latency":"post_to_completion","MBps":1.0,"baseline":null,"goal":null,"counters":null}' >"$t/old.json"
	caught "$t/old.json" rpcrdma-bench fabric . "fabric's old shape"
	printf '%s\n' '{"proc":"null","size":0,"depth":1,"provider":"iwarp","addr":"127.0.0.1","seconds":1,"calls_per_s":1.0,"baseline":{"transport":"tirpc-tcp"},"ratio":null,"goals":[]}' >"$t/old.json"
	caught "$t/old.json" rpcrdma-bench rpc . "rpc's old shape"
	# What is not one JSON value.
	for bad in '{"schema":' '{} {}' ''; do
		printf '%s' "$bad" >"$t/bad.json"
		p=$(problems "$t/bad.json" nfsrdma bench) &&
			fail "'$bad' passed as a report"
		echo "caught: '$bad' ($p)"
	done
	echo "json-shape self-test: ok"
}

if [ "${1:-}" = --self-test ]; then
	self_test "${2:?README.md}"
	exit 0
fi

BENCH=${1:?rpcrdma-bench} CLI=${2:?nfsrdma} DAEMON=${3:?nfsrdmad}
T=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# run FILE CMD...: CMD's stdout to FILE; its stderr shown if it fails.
run() {
	local out=$1 rc=0
	shift
	echo "--- $*"
	timeout 120 "$@" >"$out" 2>"$T/err" || rc=$?
	[ $rc = 0 ] || {
		cat "$T/err"
		fail "$*: exit status $rc"
	}
}

fabric() {
	local f=$T/fabric.json
	run "$f" "$BENCH" fabric --op write --size 1M --depth 2 \
		--seconds $SECS --json
	keeps "$f" rpcrdma-bench fabric
	says "$f" "fabric: what was measured" \
		'.operation == "write" and .size_bytes == 1048576 and
		 .depth == 2 and .seconds == 0.5'
	says "$f" "fabric: the peer's address:port, over iwarp" \
		'(.target | test("^127\\.0\\.0\\.1:[0-9]+$")) and
		 .transport == "rdma" and .provider == "iwarp"'
	says "$f" "fabric: raw TCP to its own port, with every ratio" \
		'[.baselines[].name] == ["tcp"] and
		 (.baselines[0].target | test("^127\\.0\\.0\\.1:[0-9]+$")) and
		 .baselines[0].target != .target and
		 (.baselines[0].ratio | all(.[]; type == "number"))'
	says "$f" "fabric: the 1 MiB write goal, against tcp" \
		'[.goals[] | [.metric, .baseline, .comparison]] ==
		 [["ratio.MBps", "tcp", ">="]]'
	caught "$f" rpcrdma-bench fabric '.baselines[0].ratio.MBps = "1"'
}

rpc() {
	local f=$T/rpc.json
	run "$f" "$BENCH" rpc --proc read --size 4K --depth 16 \
		--seconds $SECS --json
	keeps "$f" rpcrdma-bench rpc
	says "$f" "rpc: what was measured" \
		'.operation == "read" and .size_bytes == 4096 and .depth == 16'
	says "$f" "rpc: the server's address:port, over iwarp" \
		'(.target | test("^127\\.0\\.0\\.1:[0-9]+$")) and
		 .transport == "rdma" and .provider == "iwarp"'
	says "$f" "rpc: libtirpc over TCP, then the fabric's RDMA Write, with every ratio" \
		'[.baselines[] | [.name, .transport]] ==
		 [["libtirpc", "tcp"], ["fabric_rdma_write", "rdma"]] and
		 all(.baselines[]; .ratio | all(.[]; type == "number"))'
	says "$f" "rpc: the calls/s goal against libtirpc, then memory" \
		'[.goals[] | [.metric, .baseline]] ==
		 [["ratio.ops_per_s", "libtirpc"], ["client_rss_bytes", null],
		  ["server_connection_rss_bytes", null]]'
	caught "$f" rpcrdma-bench rpc 'del(.figures.ops_per_s)'
}

# Connections on both sides: ours spread over two, libtirpc's threads on
# one; every call of ours counted once, across both of its connections.
rpc_conns() {
	local f=$T/rpc-conns.json
	run "$f" "$BENCH" rpc --proc read --size 1M --depth 4 --conns 2 \
		--tirpc-conns 1 --seconds $SECS --json
	keeps "$f" rpcrdma-bench rpc
	says "$f" "rpc --conns 2 --tirpc-conns 1: the connections each side used" \
		'.details.connections == 2 and
		 .details.baseline_connections == 1 and
		 .details.baseline_threads == 4'
	says "$f" "rpc --conns 2: the client's counters are both connections'" \
		'.details.counters.connects == 2 and
		 .details.counters.calls == .details.server_counters.calls and
		 .details.counters.calls >= .figures.ops'
	says "$f" "rpc --conns 2: libtirpc's goal; none of one connection's" \
		'[.goals[] | .baseline] == ["libtirpc"]'
}

# shm: the host's copy limits beside ours, as baselines of transport memory.
rpc_shm() {
	local f=$T/rpc-shm.json
	run "$f" "$BENCH" rpc --provider shm --proc read --size 1M --depth 2 \
		--seconds $SECS --json
	keeps "$f" rpcrdma-bench rpc
	says "$f" "rpc over shm: the 1 MiB goals against libtirpc and the fabric" \
		'[.goals[] | select(.metric == "ratio.MBps") | .baseline] ==
		 ["libtirpc", "fabric_rdma_write"]'
	says "$f" "rpc over shm: libtirpc, the fabric, memcpy and process_vm_readv" \
		'.provider == "shm" and
		 [.baselines[] | [.name, .transport]] ==
		 [["libtirpc", "tcp"], ["fabric_rdma_write", "rdma"],
		  ["memcpy", "memory"], ["process_vm_readv", "memory"]] and
		 (.baselines[3].figures.MBps > 0)'
}

# Starts nfsrdmad on free ports (provider $1, default iwarp); sets RPORT,
# TPORT, MPORT once it is ready.
start_nfsrdmad() {
	local line
	mkdir "$T/export" "$T/state"
	mkfifo "$T/out"
	"$DAEMON" --export "$T/export" --address 127.0.0.1 --rdma-port 0 \
		--tcp-port 0 --mount-port 0 --state-dir "$T/state" \
		--provider "${1:-iwarp}" >"$T/out" 2>"$T/daemon.log" &
	pid=$!
	exec 3<"$T/out"
	RPORT='' TPORT='' MPORT=''
	while IFS= read -r -t 20 line <&3; do
		case $line in
		*"over rdma on "*) RPORT=${line##*:} ;;
		*"nfs3 over tcp on "*) TPORT=${line##*:} ;;
		*"mount3 over tcp on "*) MPORT=${line##*:} ;;
		*ready*) break ;;
		esac
	done
	if [ -z "$RPORT" ] || [ -z "$TPORT" ] || [ -z "$MPORT" ]; then
		cat "$T/daemon.log"
		fail "nfsrdmad did not start"
	fi
	# Its stdout must not fill the pipe while the benches run.
	cat <&3 >/dev/null &
}

nfs() {
	local f=$T/nfs.json url base names='["tcp"]' goals='[]' urls
	start_nfsrdmad
	# 8 MiB: read whole, so nfs-cp copies the same bytes (a libnfs
	# baseline, where libnfs-utils is installed).
	head -c $((8 << 20)) /dev/urandom >"$T/export/data"
	base="nfs://127.0.0.1$T/export/data"
	url="$base?nfsport=$RPORT&mountport=$MPORT"
	if command -v nfs-cp >/dev/null; then
		names='["tcp", "libnfs"]'
		goals='[["ratio.MBps", "libnfs", ">="]]'
	fi
	# a READ from a server on this host: one thread's limit, last
	urls=$names
	names=${names%]}', "server_read_limit"]'
	run "$f" "$CLI" bench "$url" --tcp-nfsport "$TPORT" --op read \
		--bs 1M --depth 4 --seconds 1 --json
	keeps "$f" nfsrdma bench
	says "$f" "nfsrdma: what was measured" \
		'.operation == "read" and .size_bytes == 1048576 and .depth == 4'
	says "$f" "nfsrdma: the URL, over rdma" \
		".target == \"$url\" and .transport == \"rdma\" and
		 (.provider | type == \"string\")"
	says "$f" "nfsrdma: baselines $names, $urls each to its own URL" \
		"[.baselines[].name] == $names and
		 (.baselines[:-1] | all(.[]; .transport == \"tcp\" and
		  (.target | startswith(\"$base?\")))) and
		 (.baselines[0].ratio | all(.[]; type == \"number\"))"
	says "$f" "nfsrdma: the server limit, over loopback TCP, no URL" \
		'.baselines[-1] | .transport == "tcp" and .target == null and
		 .figures.MBps > 0 and .figures.ops_per_s > 0 and
		 (.ratio.MBps | type == "number")'
	says "$f" "nfsrdma: goals $goals" \
		"[.goals[] | [.metric, .baseline, .comparison]] == $goals"
	caught "$f" nfsrdma bench '.transport = "rdma" | .provider = null'

	url="$base?proto=tcp&nfsport=$TPORT&mountport=$MPORT"
	run "$f" "$CLI" bench "$url" --op randread --bs 4K --depth 4 \
		--seconds 1 --json
	keeps "$f" nfsrdma bench
	says "$f" "nfsrdma over tcp: no provider, no baseline" \
		".target == \"$url\" and .transport == \"tcp\" and
		 .provider == null and .baselines == [] and .goals == []"
}

nfs_shm() {
	local f=$T/nfs-shm.json url
	rm -rf "$T/export" "$T/state" "$T/out"
	start_nfsrdmad shm
	head -c $((8 << 20)) /dev/urandom >"$T/export/data"
	url="nfs://127.0.0.1$T/export/data?nfsport=$RPORT&mountport=$MPORT"
	run "$f" "$CLI" bench "$url&provider=shm" --tcp-nfsport "$TPORT" \
		--op write --force --bs 1M --depth 4 --seconds 1 --json
	keeps "$f" nfsrdma bench
	says "$f" "nfsrdma over shm: copy limits, tcp, one thread's WRITEs" \
		'.provider == "shm" and
		 [.baselines[] | [.name, .transport]] ==
		 [["memcpy", "memory"], ["process_vm_writev", "memory"],
		  ["tcp", "tcp"], ["server_write_limit", "memory"]] and
		 (.baselines[1].figures.MBps > 0) and
		 (.baselines[3].figures.MBps > 0)'
}

fabric
rpc
rpc_conns
rpc_shm
nfs
kill "$pid" && wait "$pid" 2>/dev/null
pid=
nfs_shm
echo "json-shape: ok"
