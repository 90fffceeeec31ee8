#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Quick start, step 1 (fresh Debian 12; as root, or as a user with sudo,
# which is used for the package installation alone):
#   scripts/bootstrap.sh
# Installs what is missing, builds build/ (Release) and runs the main job:
# nfsrdmad serves a temporary directory over NFSv3 on RPC-over-RDMA (our
# iwarp provider on loopback); nfsrdma puts a 256 MiB file there and gets
# it back, both --verify, then compares with libnfs over TCP. Then the
# transport's own benchmarks against libtirpc and raw TCP, with verdicts.
# Step 2 is scripts/check.sh (all tests).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/install-deps.sh
. scripts/install-deps.sh
rr_install_deps

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

# The main job: NFSv3 on RPC-over-RDMA, a file there and back, verified.
scripts/main-job.sh build 256

bench=build/tools/rpcrdma-bench
if [ ! -x "$bench" ]; then
	echo "bootstrap: $bench was not built" >&2
	exit 1
fi
echo
echo "== The transport underneath: RPC NULL round trip, 1 in flight, vs libtirpc/TCP =="
"$bench" rpc --proc null --size 0 --depth 1 --seconds 3
echo
echo "== RPC READ of 4 KiB, 16 in flight =="
"$bench" rpc --proc read --size 4096 --depth 16 --seconds 3
echo
echo "== RPC READ of 1 MiB (write chunk), 4 in flight =="
"$bench" rpc --proc read --size 1048576 --depth 4 --seconds 3
echo
echo "== The fabric underneath: RDMA Write, 1 MiB, 8 in flight vs raw TCP =="
"$bench" fabric --op write --size 1048576 --depth 8 --seconds 3
