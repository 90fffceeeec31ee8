#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Installs the Debian 12 (bookworm) packages rpcrdma needs, and only those
# that are missing. Shared by scripts/bootstrap.sh and .ci/run.
# Runs as root, or through sudo when that is available.
# README.md ("Dependencies and why") says what each package is for.
set -euo pipefail

RR_DEBS=(
	cmake make gcc libc6-dev pkg-config # build
	libcmocka-dev                       # unit tests
	tshark                              # independent judge of wire bytes
	libtirpc-dev                        # ONC RPC over TCP baseline, XDR streams
	rpcsvc-proto                        # rpcgen: the benchmark program's XDR
	libnfs-utils                        # nfs-ls/nfs-cp: judges of nfsrdmad
	nfs-ganesha nfs-ganesha-vfs rpcbind # NFS-Ganesha: judge of our client
	clang libclang-rt-14-dev            # libFuzzer harnesses (later)
	qemu-system-x86 cpio kmod xz-utils  # vm tests: the guest (tests/vm)
	busybox-static iproute2 file        # vm tests: initramfs, rdma link
	rdma-core ibverbs-providers         # vm tests: rxe in the guest
	ibverbs-utils rdmacm-utils          # vm tests: ibv_devices, rping
	libibverbs-dev librdmacm-dev        # the verbs provider
)

rr_install_deps() {
	local missing=() pkg sudo=()

	for pkg in "${RR_DEBS[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
			grep -q 'install ok installed'; then
			missing+=("$pkg")
		fi
	done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "install-deps: all packages present"
		return 0
	fi

	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			sudo=(sudo)
		else
			echo "install-deps: missing ${missing[*]}; run as root" \
				"(or install sudo)" >&2
			return 1
		fi
	fi

	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# tshark's wireshark-common asks whether non-root users may capture;
	# answer "no" up front so the install never waits for a question.
	echo 'wireshark-common wireshark-common/install-setuid boolean false' |
		"${sudo[@]}" debconf-set-selections
	"${sudo[@]}" apt-get update -q
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}" \
		</dev/null
}

# Run directly, or source it and call rr_install_deps.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	rr_install_deps
fi
