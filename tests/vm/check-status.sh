#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# usage: check-status.sh RR-VM CACHE
# A command failing in the guest must fail the run with its own status,
# and its output must reach us.
set -u
out=$("$1" -C "$2" -t 180 -- sh -c 'echo rr-vm-marker; exit 7')
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 7 ] || { echo "check-status: status $rc, expected 7"; exit 1; }
[ "$out" = rr-vm-marker ] || { echo "check-status: output '$out'"; exit 1; }
echo "check-status: ok"
