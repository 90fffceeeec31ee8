#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: siw-terminate.sh SIW_TERM_PROBE
# In an rr-vm.sh guest with siw0: siw_term_probe provokes the kernel's
# soft-iWARP into Terminates on connections to the kernel nfsd's RDMA
# listener, and checks that our codec reads them right (its status is
# ours). Then the kernel log shows how siw read a Terminate of ours.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
PROBE=${1:?siw_term_probe binary}

"$HERE/knfsd-rdma.sh" siw0 /srv/rr-term 20049 20048 || exit 1
dmesg -c >/dev/null
timeout 120 "$PROBE" "$ADDR" 20049
rc=$?
echo "--- what siw logged"
dmesg | grep -E 'siw' | grep -iE 'terminate|term|qn|stag' | head -n 20
got=$(dmesg | grep -o 'got TERMINATE. layer [0-9]*, type [0-9]*, code [0-9]*' | tail -n 1)
case $got in
*"layer 1, type 2, code 3") echo "siw read our Terminate as sent (RFC 5040 layout)" ;;
*"layer 2, type 1, code 3") echo "siw read our RFC 5040 Terminate with layer and type swapped (its bitfield)" ;;
"") echo "siw logged no Terminate of ours" ;;
*) echo "siw read our Terminate as: $got" ;;
esac
exit $rc
