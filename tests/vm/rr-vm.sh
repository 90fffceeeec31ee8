#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Runs one command in a throw-away qemu guest that has a Soft-RoCE device.
#
# The guest boots Debian's stock kernel (fetched once with apt-get download
# into a cache dir) and uses the host's own root filesystem, read-only over
# virtio-9p under a tmpfs overlay, so binaries built on the host run as they
# are. Inside, rdma_rxe gives rxe0 on eth0 (10.0.2.15), or soft-iWARP
# siw0 with -d siw; the command runs as root, the guest powers off, and its
# exit status becomes ours.
#
# usage: rr-vm.sh [-C CACHE] [-t SECS] [-m MEM] [-c CPUS] [--] COMMAND [ARG...]
#   -C  cache dir for the kernel, modules and initramfs (reused between
#       runs; default $RR_VM_CACHE or ./vm-cache)
#   -t  hard bound for the whole run including boot (default 300 s)
#   -n  prepare the cache only, boot nothing
#   -d  the guest's RDMA device on eth0: rxe (default, rxe0), siw (siw0;
#       siw.ko is built into the cache once, see build-siw.sh) or none;
#       default $RR_VM_DEV or rxe
# exit: the command's status; 77 when no guest can run here (reason on
#   stderr); 124 when the bound was hit; 125 when the guest failed to boot.
# env: RR_VM_ACCEL=kvm|tcg forces the accelerator; RR_VM_CONSOLE=1 streams
#   the guest's serial console to stderr; RR_VM_MEM is -m's default (1G),
#   RR_VM_CPUS -c's (2).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${RR_VM_CACHE:-$PWD/vm-cache}
TMO=300 MEM=${RR_VM_MEM:-1G} CPUS=${RR_VM_CPUS:-2} PREP_ONLY=0 DEV=${RR_VM_DEV:-rxe}
while getopts "C:t:m:c:d:nh" o; do
	case $o in
	C) CACHE=$OPTARG ;;
	t) TMO=$OPTARG ;;
	m) MEM=$OPTARG ;;
	c) CPUS=$OPTARG ;;
	n) PREP_ONLY=1 ;;
	d) DEV=$OPTARG ;;
	*) sed -n '4,24p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $DEV in rxe | siw | none) ;; *) echo "rr-vm: -d rxe|siw|none" >&2; exit 2 ;; esac
# The guest mounts the cache by path from /, so a relative -C must be made
# absolute against the caller's directory.
case $CACHE in /*) ;; *) CACHE=$PWD/$CACHE ;; esac

say() { echo "rr-vm: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }

# A missing tool means this host cannot run a guest: that is a skip with
# its reason, never a pass.
need_tools() {
	local t
	for t in qemu-system-x86_64 cpio depmod modprobe xz apt-get apt-cache \
		dpkg-deb flock gzip; do
		command -v "$t" >/dev/null 2>&1 ||
			skip "$t not found (scripts/install-deps.sh installs it)"
	done
	[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q static ||
		skip "/bin/busybox is not a static busybox (package busybox-static)"
	[ -x "$HERE/guest-init.sh" ] || skip "$HERE/guest-init.sh missing"
}

# The stock kernel's package name carries Debian's kernel ABI number, which
# changes with every ABI bump: ask apt which one linux-image-amd64 means now.
fetch_kernel() {
	local pkg deb
	[ -s "$CACHE/kernel/KV" ] && return 0
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	[ -n "$pkg" ] || skip "apt-cache knows no linux-image-amd64 (apt-get update?)"
	rm -rf "$CACHE/kernel" && mkdir -p "$CACHE/kernel/dl" || return 1
	(cd "$CACHE/kernel/dl" && timeout 600 apt-get download -q "$pkg" >&2) ||
		skip "apt-get download $pkg failed (no network or mirror?)"
	deb=$(ls "$CACHE/kernel/dl/"*.deb 2>/dev/null | head -1)
	dpkg-deb -x "$deb" "$CACHE/kernel/root" || return 1
	dpkg-deb -f "$deb" Version >"$CACHE/kernel/VERSION"
	rm -rf "$CACHE/kernel/dl"
	echo "${pkg#linux-image-}" >"$CACHE/kernel/KV"
	say "fetched $pkg"
}

# Our own module tree (hard links into the unpacked package), so depmod
# writes its index into the cache and never into the host's /lib/modules.
prepare_modules() {
	local src=$CACHE/kernel/root/lib/modules/$KV dst=$CACHE/kroot/lib/modules
	[ -s "$dst/$KV/modules.dep" ] && return 0
	rm -rf "${dst:?}/$KV" && mkdir -p "$dst" || return 1
	cp -al "$src" "$dst/" 2>/dev/null || cp -a "$src" "$dst/" || return 1
	depmod -b "$CACHE/kroot" "$KV"
}

# An uncompressed vmlinux carries a PVH entry note, so qemu can start it
# directly; that skips real-mode setup and the xz decompression, which is
# seconds under TCG. bzImage remains the fallback.
extract_vmlinux() {
	local bz=$CACHE/kernel/root/boot/vmlinuz-$KV out=$CACHE/vmlinux-$KV off
	[ -s "$out" ] && return 0
	off=$(grep -abo -m1 $'\xfd7zXZ\x00' "$bz" | head -1 | cut -d: -f1)
	[ -n "$off" ] || return 0
	tail -c +$((off + 1)) "$bz" | xz -dc --single-stream >"$out.tmp" 2>/dev/null
	if [ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
		mv "$out.tmp" "$out"
	else
		rm -f "$out.tmp"
	fi
}

# Stage 1 in the guest: only what it takes to reach the host's root
# (virtio, 9p, overlay), then switch_root into guest-init.sh there.
build_initramfs() {
	local out=$CACHE/initramfs-$KV.cpio.gz w m ko
	[ -s "$out" ] && [ "$out" -nt "$0" ] && return 0
	w=$(mktemp -d "$CACHE/initramfs.XXXXXX") || return 1
	mkdir -p "$w"/{bin,dev,proc,sys,lower,rw,newroot,mods}
	cp /bin/busybox "$w/bin/busybox"
	for m in virtio_pci virtio_net 9pnet_virtio 9p overlay; do
		modprobe -d "$CACHE/kroot" -S "$KV" --show-depends "$m" |
			awk '$1 == "insmod" {print $2}'
	done | awk '!seen[$0]++' | while read -r ko; do
		cp "$ko" "$w/mods/" && basename "$ko" >>"$w/mods/order"
	done
	cat >"$w/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /mods/order); do insmod /mods/$m; done
die() { echo "RR-VM-STAGE1-FAILED: $*"; poweroff -f; }
job= ; init=
for a in $(cat /proc/cmdline); do
	case $a in rr.job=*) job=${a#rr.job=} ;; rr.init=*) init=${a#rr.init=} ;; esac
done
o=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o $o,ro,cache=loose hostroot /lower || die "9p host root"
mount -t tmpfs -o size=2g,mode=755 rw /rw && mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work \
	/newroot || die "overlay"
mkdir -p "/newroot$job"
mount -t 9p -o $o,cache=none job "/newroot$job" || die "9p job dir"
for d in proc sys dev; do mount --move /$d /newroot/$d; done
exec switch_root /newroot "$init"
EOF
	chmod +x "$w/init"
	(cd "$w" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp" &&
		mv "$out.tmp" "$out"
	rm -rf "$w"
	[ -s "$out" ]
}

# Debian's kernel has no soft-iWARP; build-siw.sh compiles siw.ko into
# our module tree once, or says why this host cannot (a skip).
prepare_siw() {
	local rc
	"$HERE/build-siw.sh" "$CACHE" "$KV"
	rc=$?
	[ $rc = 0 ] && return 0
	[ $rc = 77 ] && exit 77
	exit 125
}

prepare() {
	mkdir -p "$CACHE" || skip "cannot create $CACHE"
	exec 9>"$CACHE/.lock"
	flock 9 # one preparer at a time; the rest reuse its work
	fetch_kernel || { say "kernel unpack failed"; exit 125; }
	KV=$(cat "$CACHE/kernel/KV")
	prepare_modules || { say "module tree failed"; exit 125; }
	[ "$DEV" = siw ] && prepare_siw
	extract_vmlinux
	build_initramfs || { say "initramfs failed"; exit 125; }
	flock -u 9
}

# /dev/kvm may exist and still not run a stock kernel: PVM (a software
# KVM without VT-x) fails on it with "KVM internal error". So a KVM boot
# gets a watchdog and TCG is the fallback.
pick_accel() {
	ACCEL=${RR_VM_ACCEL:-} WHY="forced by RR_VM_ACCEL"
	[ -n "$ACCEL" ] && return
	ACCEL=tcg
	if [ ! -e /dev/kvm ]; then
		WHY="no /dev/kvm"
	elif [ ! -w /dev/kvm ]; then
		WHY="/dev/kvm not writable"
	elif [ -d /sys/module/kvm_pvm ]; then
		WHY="/dev/kvm is kvm_pvm, which cannot run a stock kernel"
	elif ! echo quit | timeout 20 qemu-system-x86_64 -machine none \
		-accel kvm -nodefaults -display none -monitor stdio \
		>/dev/null 2>&1; then
		WHY="qemu cannot open KVM"
	else
		ACCEL=kvm WHY="/dev/kvm usable"
	fi
}

launch() {
	local acc=$1 kernel=$CACHE/vmlinux-$KV cpu
	[ -s "$kernel" ] || kernel=$CACHE/kernel/root/boot/vmlinuz-$KV
	if [ "$acc" = kvm ]; then
		cpu=(-accel kvm -cpu host)
	else
		cpu=(-accel tcg,thread=multi -cpu max)
	fi
	: >"$JOB/console.log"
	timeout -k 5 "$TMO" qemu-system-x86_64 "${cpu[@]}" -M pc \
		-smp "$CPUS" -m "$MEM" -nodefaults -no-user-config \
		-display none -no-reboot \
		-kernel "$kernel" -initrd "$CACHE/initramfs-$KV.cpio.gz" \
		-append "console=ttyS0 quiet loglevel=4 panic=-1 no_timer_check rr.job=$JOB rr.init=$HERE/guest-init.sh rr.dev=$DEV rr.cache=$CACHE rr.tmo=$((TMO - 15))" \
		-chardev file,id=ser0,path="$JOB/console.log" -serial chardev:ser0 \
		-fsdev local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot \
		-fsdev local,id=fsjob,path="$JOB",security_model=none \
		-device virtio-9p-pci,fsdev=fsjob,mount_tag=job \
		-netdev user,id=n0,restrict=on,net=10.0.2.0/24 \
		-device virtio-net-pci,netdev=n0 \
		</dev/null >"$JOB/qemu.log" 2>&1 &
	QPID=$!
}

booted() { grep -aq RR-VM-BOOTED "$JOB/console.log"; }

# Under KVM, wait for the guest's boot mark; a KVM that cannot run it gets
# killed and the boot repeated under TCG.
kvm_or_fallback() {
	local end=$(($(date +%s) + 40))
	while kill -0 "$QPID" 2>/dev/null && ! booted &&
		[ "$(date +%s)" -lt $end ]; do
		sleep 0.2 # polling a log file written by another process
	done
	booted || [ -f "$JOB/rc" ] && return
	say "KVM guest did not boot; falling back to TCG"
	kill "$QPID" 2>/dev/null
	wait "$QPID" 2>/dev/null
	ACCEL=tcg WHY="KVM boot failed"
	launch tcg
}

# On failure the kernel's view of the RDMA stack usually says why.
rdma_dmesg() {
	[ -f "$JOB/dmesg" ] || return 0
	say "guest dmesg (rxe/siw/rdma/svcrdma/rpcrdma/nfs):"
	grep -aiE 'rxe|siw|iw_cm|rdma|infiniband|ib_|verbs|nfs' "$JOB/dmesg" |
		grep -aiv 'command line:' | tail -n 40 >&2
	# guest-init.sh's sysrq w: each task blocked in the kernel, with its stack
	grep -aq 'Show Blocked State' "$JOB/dmesg" || return 0
	say "guest tasks blocked in the kernel at the end:"
	sed -n '/Show Blocked State/,$p' "$JOB/dmesg" | head -n 80 >&2
}

run_guest() {
	local qrc rc t0
	mkdir -p "$CACHE/jobs" || exit 125
	JOB=$(mktemp -d "$CACHE/jobs/job.XXXXXX") || exit 125
	printf '%q ' "$@" >"$JOB/cmd" && echo >>"$JOB/cmd"
	# the command sees our cwd and the test knobs, nothing else of our env
	printf 'cd %q\n' "$PWD" >"$JOB/env"
	export -p | grep -E '^declare -x (RR_|CMOCKA_|ASAN_|UBSAN_|TSAN_|LSAN_)' \
		>>"$JOB/env"
	pick_accel
	say "accelerator: $ACCEL ($WHY); kernel $KV; job $JOB"
	t0=$(date +%s)
	launch "$ACCEL"
	[ "$ACCEL" = kvm ] && kvm_or_fallback
	[ "${RR_VM_CONSOLE:-0}" = 1 ] &&
		tail -n +1 -F --pid="$QPID" "$JOB/console.log" >&2 2>/dev/null &
	wait "$QPID"
	qrc=$?
	say "guest ran $(($(date +%s) - t0)) s under $ACCEL;" \
		"$(grep -ao 'RR-VM-BOOTED.*' "$JOB/console.log" | tr -d '\r')"
	if [ -f "$JOB/rc" ]; then
		rc=$(cat "$JOB/rc")
		cat "$JOB/output"
		[ "$rc" = 0 ] || [ ! -f "$JOB/diag" ] || say "guest: $(cat "$JOB/diag")"
		[ "$rc" = 0 ] || rdma_dmesg
		[ "$rc" = 0 ] && rm -rf "$JOB"
		return "$rc"
	fi
	if [ $qrc = 124 ] || [ $qrc = 137 ]; then
		say "guest hit the ${TMO}s bound; console tail:"
		tail -n 20 "$JOB/console.log" >&2
		[ -f "$JOB/output" ] && tail -n 40 "$JOB/output" >&2
		rdma_dmesg
		return 124
	fi
	say "guest ended without a result (qemu rc=$qrc); console/qemu tail:"
	tail -n 30 "$JOB/console.log" "$JOB/qemu.log" >&2
	grep -q "RR-VM-SKIP" "$JOB/console.log" && return 77
	return 125
}

need_tools
prepare
[ "$PREP_ONLY" = 1 ] && exit 0
[ $# -gt 0 ] || { say "no command"; exit 2; }
run_guest "$@"
