#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: bench-rpc.sh RPCRDMA-BENCH [PROVIDER] [SECONDS]
# In an rr-vm.sh guest: rpcrdma-bench rpc on PROVIDER (verbs by default)
# against libtirpc, both on the guest's address (RoCE cannot route
# 127.0.0.1): NULL at depth 1, 4 KiB READs at depth 16 and 1 MiB WRITEs at
# depth 2, SECONDS (default 2) per phase. Figures, not assertions: under
# TCG only the ratios mean anything, and only roughly. It reads the --json
# report (README.md, "Benchmark JSON") with jq, and fails when a run fails,
# the report does not name the address and provider, or it has no ratio
# (one phase produced nothing to compare).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
BENCH=${1:?rpcrdma-bench binary} PROV=${2:-verbs} SECS=${3:-2}
OUT=$(mktemp /run/rr-bench-rpc.XXXXXX)
command -v jq >/dev/null || fail "jq is not installed (scripts/install-deps.sh)"

# One line a person can read: the rates, the ratios, the goals.
SUMMARY='"calls/s \(.figures.ops_per_s), MB/s \(.figures.MBps), p50 \(.figures.p50_us) us; ratio to \(.baselines[0].name): \(.baselines[0].ratio | tojson)" +
	([.goals[] | "; goal \(.metric) \(.comparison) \(.target): \(.value) \(if .met then "met" else "MISSED" end)"] | add // "")'

# One run, bounded; its report goes to our output either way.
run() {
	local what=$1
	shift
	step "rpc $what over $PROV at $ADDR"
	timeout 120 "$BENCH" rpc --provider "$PROV" --addr "$ADDR" \
		--seconds "$SECS" --json "$@" >"$OUT" 2>"$OUT.err"
	local rc=$?
	cat "$OUT.err" "$OUT"
	[ $rc = 0 ] || fail "rpcrdma-bench rpc $*: exit status $rc"
	jq -e --arg a "$ADDR" --arg p "$PROV" \
		'(.target | startswith($a + ":")) and .provider == $p' \
		"$OUT" >/dev/null ||
		fail "rpcrdma-bench rpc $*: the report does not name $ADDR and $PROV"
	jq -e '.baselines[0].ratio.ops_per_s | type == "number"' "$OUT" \
		>/dev/null || fail "rpcrdma-bench rpc $*: no ratio"
	ok "rpc $what: $(jq -r "$SUMMARY" "$OUT")"
}

run "NULL, depth 1" --proc null --size 0 --depth 1
run "4 KiB READ, depth 16" --proc read --size 4K --depth 16
run "1 MiB WRITE, depth 2" --proc write --size 1M --depth 2
echo "bench-rpc: ok"
