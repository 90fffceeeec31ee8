#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The chaos run, long: RUNS runs (default 20) of CLIENTS clients x CALLS
# calls (defaults 8 x 5000), each with a new seed, in the ASan+UBSan tree
# (LeakSanitizer included). Stops at the first failure and prints its seed:
#   RR_CHAOS_SEED=<seed> build-asan/tests/chaos/rpcrdma_chaos
#
#   scripts/chaos-long.sh [RUNS] [CALLS] [CLIENTS]
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
runs=${1:-20}
calls=${2:-5000}
clients=${3:-8}

cmake -S . -B build-asan -DRR_SANITIZE=address >/dev/null &&
	cmake --build build-asan -j"$(nproc)" --target rpcrdma_chaos || exit 1
for i in $(seq 1 "$runs"); do
	seed=$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')
	echo "== run $i of $runs: seed $seed"
	if ! RR_CHAOS_SEED=$seed RR_CHAOS_CALLS=$calls \
		RR_CHAOS_CLIENTS=$clients build-asan/tests/chaos/rpcrdma_chaos; then
		echo "chaos-long: run $i FAILED; replay with RR_CHAOS_SEED=$seed" \
			"RR_CHAOS_CALLS=$calls RR_CHAOS_CLIENTS=$clients"
		exit 1
	fi
done
echo "chaos-long: $runs runs passed ($clients clients x $calls calls each)"
