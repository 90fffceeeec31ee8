#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Quick start, step 1 (fresh Debian 12; as root or with sudo available):
#   sudo scripts/bootstrap.sh
# Installs what is missing, builds build/ (Release) and runs the benchmark:
# our iwarp provider over loopback against a raw-TCP baseline.
# Step 2 is scripts/check.sh (all tests).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/install-deps.sh
. scripts/install-deps.sh
rr_install_deps

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

bench=build/tools/rpcrdma-bench
if [ ! -x "$bench" ]; then
	echo "bootstrap: $bench was not built" >&2
	exit 1
fi
echo
echo "== RDMA Write, 1 MiB, 8 in flight =="
"$bench" fabric --op write --size 1048576 --depth 8 --seconds 3
echo
echo "== Send answered by a Send, 64 B, 1 in flight (latency) =="
"$bench" fabric --op send --size 64 --depth 1 --seconds 3
