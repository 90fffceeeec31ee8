#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: build-siw.sh CACHE KV
# Puts siw.ko (soft-iWARP) for the guest kernel KV into rr-vm.sh's module
# tree in CACHE, once. Debian builds its kernel without it
# (CONFIG_RDMA_SIW is not set), so it is compiled out of tree from Debian's
# own linux-source-X.Y with linux-headers-KV, the headers of exactly the
# guest's kernel ABI (the module's vermagic and symbol CRCs must match it).
# exit: 0 when siw.ko is in the tree; 77 when this host lacks what it takes
#   (the reason on stderr); 1 when the build failed (its log on stderr).
# Caller holds the cache lock.
set -uo pipefail

CACHE=$1 KV=$2
MODS=$CACHE/kroot/lib/modules/$KV
OUT=$MODS/extra/siw.ko

say() { echo "rr-vm: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }

installed() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }

# The guest kernel's Debian version: recorded at download, else the one
# in its banner ("... Debian 6.1.192-3 ...").
image_version() {
	local v
	v=$(cat "$CACHE/kernel/VERSION" 2>/dev/null) && [ -n "$v" ] &&
		{ echo "$v"; return; }
	grep -aom1 'PREEMPT_DYNAMIC Debian [^ ]*' "$CACHE/vmlinux-$KV" 2>/dev/null |
		awk '{print $3}'
}

# Headers of another ABI cannot build a module this kernel loads: that is
# a skip naming the package. Another source release of the same ABI can,
# but it is said, since siw's code may differ between the two.
check_sources() {
	local img hdr src
	MAJ=${KV%%-*} && MAJ=${MAJ%.*} # 6.1.0-57-amd64 -> 6.1
	SRC=/usr/src/linux-source-$MAJ.tar.xz
	HDR=/usr/src/linux-headers-$KV
	hdr=$(installed "linux-headers-$KV")
	src=$(installed "linux-source-$MAJ")
	img=$(image_version)
	[ -f "$SRC" ] && [ -n "$src" ] ||
		skip "siw needs linux-source-$MAJ (scripts/install-deps.sh)"
	[ -f "$HDR/Makefile" ] && [ -n "$hdr" ] ||
		skip "siw needs linux-headers-$KV, the headers of the guest's" \
			"kernel (apt-get install linux-headers-$KV; the" \
			"metapackage linux-headers-amd64 brings them while" \
			"Debian's current kernel is $KV)"
	command -v make >/dev/null && command -v modinfo >/dev/null ||
		skip "siw needs make and modinfo"
	[ "$src" = "${img:-?}" ] ||
		say "note: building siw from linux-source-$MAJ $src for the" \
			"guest kernel $KV ${img:-(version unknown)}: not the same" \
			"release (the same ABI, so it loads)"
	VERS="linux-source $src, headers $hdr, kernel ${img:-?}"
}

# Only siw's own directory is unpacked from the source tarball.
build() {
	local w dir log
	w=$(mktemp -d "$CACHE/siw-build.XXXXXX") || return 1
	dir=$w/linux-source-$MAJ/drivers/infiniband/sw/siw
	log=$w/build.log
	if tar -xJf "$SRC" -C "$w" --wildcards \
		"linux-source-$MAJ/drivers/infiniband/sw/siw/*" >"$log" 2>&1 &&
		make -C "$HDR" M="$dir" CONFIG_RDMA_SIW=m modules -j2 \
			>>"$log" 2>&1 &&
		modinfo -F vermagic "$dir/siw.ko" | grep -q "^$KV " &&
		mkdir -p "$MODS/extra" && cp "$dir/siw.ko" "$OUT.tmp" &&
		mv "$OUT.tmp" "$OUT" && depmod -b "$CACHE/kroot" "$KV"; then
		rm -rf "$w"
		return 0
	fi
	say "siw.ko build failed; log tail:"
	tail -n 30 "$log" >&2
	rm -rf "$w" "$OUT.tmp"
	return 1
}

if [ -s "$OUT" ] && grep -q '^extra/siw.ko:' "$MODS/modules.dep" 2>/dev/null
then
	exit 0
fi
check_sources
build || exit 1
say "siw.ko built for $KV ($VERS)"
