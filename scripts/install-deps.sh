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
	nfs-ganesha-ceph                    # FSAL_CEPH: nfsrdmad's peer on CephFS
	clang libclang-rt-14-dev            # libFuzzer harnesses
	clang-format                        # tests/style: the tree stays formatted
	systemtap-sdt-dev linux-perf        # USDT probes, and perf to read them
	qemu-system-x86 cpio kmod xz-utils  # vm tests: the guest (tests/vm)
	busybox-static iproute2 file        # vm tests: initramfs, rdma link
	rdma-core ibverbs-providers         # vm tests: rxe in the guest
	ibverbs-utils rdmacm-utils          # vm tests: ibv_devices, rping
	libibverbs-dev librdmacm-dev        # the verbs provider
	scdoc man-db groff-base             # man pages: built (docs/man), checked
	# vm tests with soft-iWARP: siw.ko built for the guest's kernel from
	# Debian's source (Debian builds none). The headers must be those of
	# the kernel linux-image-amd64 names, which tests/vm fetches.
	linux-headers-amd64 linux-source-6.1
	nfs-kernel-server # vm tests: the kernel's nfsd in the guest, never here
	fio # vm bench: the kernel NFS client's I/O in the guest (vm-bench.sh)
	jq  # reads the benchmarks' --json (tests/bench), as scripts would
	libfuse3-dev fuse3 # nfsrdma mount (src/fuse); fusermount3 for users
	stress-ng dbench   # judges of the FUSE mount (tests/fuse: stress)
	libcephfs-dev      # the CephFS backend of nfsrdmad (ceph_ll_* API)
	ceph-mon ceph-osd ceph-mds ceph-common # ceph tests: a cluster on loopback
)

# Packages whose scripts would start a service on this host that the tests
# only want inside the vm guest: the kernel nfsd would take port 2049,
# which the NFS-Ganesha tests need. The ceph daemons' packages would start a
# cluster-less ceph.target; the ceph tests start their own daemons.
RR_NO_HOST_SERVICE=(nfs-kernel-server ceph-mon ceph-osd ceph-mds)
RR_POLICY_RC=/usr/sbin/policy-rc.d

# While packages install, a policy-rc.d that exits 101 makes invoke-rc.d and
# deb-systemd-invoke refuse every start. One already in place (a container
# image's) is left alone; ours is removed afterwards.
rr_block_service_starts() {
	[ -e "$RR_POLICY_RC" ] && return 1
	printf '#!/bin/sh\n# rpcrdma install-deps: no service starts\nexit 101\n' |
		"${sudo[@]}" tee "$RR_POLICY_RC" >/dev/null &&
		"${sudo[@]}" chmod 755 "$RR_POLICY_RC"
}

rr_unblock_service_starts() {
	"${sudo[@]}" rm -f "$RR_POLICY_RC"
}

# systemd would still start them at the next boot.
rr_disable_host_services() {
	local pkg
	[ -d /run/systemd/system ] || return 0
	for pkg in "$@"; do
		case $pkg in
		nfs-kernel-server)
			"${sudo[@]}" systemctl disable --quiet nfs-server.service ||
				true
			;;
		ceph-mon | ceph-osd | ceph-mds)
			"${sudo[@]}" systemctl disable --quiet ceph.target ||
				true
			;;
		esac
	done
}

rr_install_deps() {
	local missing=() pkg sudo=() blocked=0 quiet=() rc=0

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
	for pkg in "${RR_NO_HOST_SERVICE[@]}"; do
		[[ " ${missing[*]} " == *" $pkg "* ]] && quiet+=("$pkg")
	done
	if [ ${#quiet[@]} -gt 0 ] && rr_block_service_starts; then
		blocked=1
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}" \
		</dev/null || rc=$?
	[ $blocked = 1 ] && rr_unblock_service_starts
	[ $rc = 0 ] || return $rc
	rr_disable_host_services "${quiet[@]}"
}

# Run directly, or source it and call rr_install_deps.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	rr_install_deps
fi
