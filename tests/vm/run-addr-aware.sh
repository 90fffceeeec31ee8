#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# usage: run-addr-aware.sh TEST-BINARY [ARG...]
# Runs a test that must reach its peer over rxe0: a binary that does not
# read RR_TEST_ADDR would dial 127.0.0.1, which RoCE cannot route, so it
# is skipped with the reason instead of failing for the wrong one.
set -u
if ! grep -q RR_TEST_ADDR "$1"; then
	echo "SKIP: $(basename "$1") does not read RR_TEST_ADDR yet" \
		"(RoCE cannot connect to 127.0.0.1)"
	exit 77
fi
exec "$@"
