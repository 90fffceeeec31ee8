#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# In the guest: rxe0 exists, is ACTIVE on eth0, and libibverbs sees it.
set -u
fail() { echo "check-rxe: $*"; exit 1; }
[ -d /sys/class/infiniband/rxe0 ] || fail "no /sys/class/infiniband/rxe0"
ibv_devices | grep -qw rxe0 || fail "ibv_devices does not list rxe0"
rdma link show | grep -E '^link rxe0/1 .*state ACTIVE.* netdev eth0' ||
	fail "rdma link does not show rxe0/1 ACTIVE on eth0"
ibv_devinfo -d rxe0 | grep -E 'transport|state|link_layer'
echo "check-rxe: ok"
