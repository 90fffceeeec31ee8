#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: kclient-nfsrdmad.sh NFSRDMAD [PROVIDER]
# In an rr-vm.sh guest: the Linux kernel's NFSv3 client mounts our
# nfsrdmad (provider PROVIDER, iwarp by default) with proto=rdma, and a
# file tree is worked through the mount: create, write (O_DIRECT and
# buffered), read back, a directory of 1000 files listed, rename, remove.
# Every byte is checked twice: through the mount and in the directory
# nfsrdmad exports. The kernel's own counters (mountstats) must show read,
# write and reply chunks and no bad replies, so the bulk paths were taken,
# not only inline messages. MOUNT goes over TCP to nfsrdmad's MOUNT port
# (mountproto=tcp).
#
# A file over 1 GiB (written, read back, sha256 on both ends) runs with
# RR_TEST_HUGE_FILE=1, and by default under KVM; RR_TEST_HUGE_FILE=0 skips
# it anywhere. Under TCG it takes minutes (huge_plan has the figures),
# too long for every CI run, so there it is skipped, saying so. The export
# is a tmpfs in guest RAM: with the file, the guest needs 2 GiB or more
# (rr-vm.sh -m, RR_VM_MEM), and the time bound to match (-t).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
DAEMON=${1:?nfsrdmad binary} PROV=${2:-iwarp}
EXP=/srv/rr-nfsrdmad MNT=/mnt/rr-nfsrdmad
PORT=20049 MPORT=20048
W=$(mktemp -d /run/rr-kclient.XXXXXX)
DPID=
NFILES=1000
# Over 1 GiB, with a tail that no page or block size divides.
HUGE_SIZE=$((1024 * 1024 * 1024 + 4097)) HUGE=0

# On failure: what the daemon said, and what the kernel client counted.
finish() {
	local rc=$?
	if [ $rc != 0 ]; then
		[ -f "$W/nfsrdmad.log" ] && echo "=== nfsrdmad log (tail)" &&
			tail -n 30 "$W/nfsrdmad.log"
		echo "=== kernel client's transport"
		grep -A30 "mounted on $MNT " /proc/self/mountstats |
			grep -E 'opts:|xprt:'
	fi
	mountpoint -q "$MNT" && timeout 30 umount -f "$MNT"
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	exit $rc
}
trap finish EXIT

# Whether the file over 1 GiB runs here, and why (printed either way).
# Measured under TCG on a 2-core host shared with other work, 1 GiB: to
# write (O_DIRECT, 1 MiB) and to read back through sha256, rxe/verbs 131
# and 148 s on a quiet host, 236 and 112 s on a busy one; siw/iwarp 339
# and 207 s, busy. Under KVM not measured (no KVM on that host): the 240
# s asked for there are a guess, checked against the time actually left.
huge_plan() {
	local ask=${RR_TEST_HUGE_FILE:-} need_s need_kb have_kb left why
	if under_kvm; then
		need_s=240 why="under KVM"
	else
		need_s=720 why="under TCG"
	fi
	case $ask in
	0)
		step "skip: file of $HUGE_SIZE bytes (RR_TEST_HUGE_FILE=0)"
		return ;;
	1) why="RR_TEST_HUGE_FILE=1, $why" ;;
	*)
		if ! under_kvm; then
			step "skip: file of $HUGE_SIZE bytes: under TCG it takes" \
				"5-10 min (RR_TEST_HUGE_FILE=1 runs it; give the" \
				"guest RR_VM_MEM=3G and -t 1200)"
			return
		fi ;;
	esac
	# the export's tmpfs holds it, on top of what the guest uses already
	need_kb=$(((HUGE_SIZE >> 10) + 768 * 1024))
	have_kb=$(awk '$1 == "MemTotal:" {print $2}' /proc/meminfo)
	left=$(guest_secs_left)
	if [ "$have_kb" -lt "$need_kb" ]; then
		why="guest RAM $((have_kb >> 10)) MiB, want $((need_kb >> 10))"
		why="$why (RR_VM_MEM)"
	elif [ "$left" -lt "$need_s" ]; then
		why="$left s left in the guest's bound, want $need_s (-t)"
	else
		HUGE=1
		step "file of $HUGE_SIZE bytes: runs ($why; $left s left," \
			"$((have_kb >> 10)) MiB RAM)"
		return
	fi
	[ "$ask" = 1 ] && fail "RR_TEST_HUGE_FILE=1 but $why"
	step "skip: file of $HUGE_SIZE bytes: $why"
}

start_daemon() {
	local m size=128m
	[ $HUGE = 1 ] && size=$(((HUGE_SIZE >> 20) + 128))m
	for m in rpcrdma nfs nfsv3; do modprobe "$m" || fail "modprobe $m"; done
	mkdir -p "$EXP" "$MNT" && mount -t tmpfs -o size=$size tmpfs "$EXP" ||
		fail "tmpfs of $size on $EXP"
	"$DAEMON" --export "$EXP" --provider "$PROV" --rdma-port $PORT \
		--tcp-port off --mount-port $MPORT --state-dir "$W/state" \
		>"$W/nfsrdmad.log" 2>&1 &
	DPID=$!
	await_line "$W/nfsrdmad.log" "ready" $DPID 30 ||
		fail "nfsrdmad did not get ready"
	ok "nfsrdmad ($PROV) serves $EXP on rdma $PORT, mount $MPORT/tcp"
}

# soft: a call our server never answers fails the step instead of hanging
# the guest until its time bound.
kmount() {
	timeout 60 mount -t nfs -o "vers=3,proto=rdma,port=$PORT,mountport=$MPORT,mountproto=tcp,nolock,soft,timeo=100,retrans=2" \
		"$ADDR:$EXP" "$MNT" || fail "mount -o proto=rdma of $ADDR:$EXP"
	grep -A30 "mounted on $MNT " /proc/self/mountstats |
		grep -qE '^[[:space:]]*xprt:[[:space:]]+rdma ' ||
		fail "the mount's transport is not rdma"
	ok "kernel client mounted $ADDR:$EXP over rdma"
}

small_file() {
	step "small file (inline)"
	printf 'written by the kernel client over %s\n' "$PROV" >"$W/small"
	cp "$W/small" "$MNT/small" || fail "create and write $MNT/small"
	same "$W/small" "$EXP/small" "small file as the server stored it"
	drop_caches
	same "$W/small" "$MNT/small" "small file read back"
	ok "small file written, stored and read back"
}

# 4 MiB + 4097 bytes: 1 MiB WRITEs and READs, and a tail that is not a
# multiple of any page or block size.
big_files() {
	local size=$((4 * 1024 * 1024 + 4097))
	step "big files ($size bytes)"
	randfile "$W/big" $size
	timeout 120 dd if="$W/big" of="$MNT/big.direct" bs=1M oflag=direct \
		status=none || fail "dd oflag=direct to $MNT/big.direct"
	same "$W/big" "$EXP/big.direct" "O_DIRECT write as the server stored it"
	timeout 120 dd if="$W/big" of="$MNT/big.64k" bs=64k oflag=direct \
		status=none || fail "dd bs=64k oflag=direct"
	same "$W/big" "$EXP/big.64k" "64 KiB O_DIRECT writes as stored"
	timeout 120 cp "$W/big" "$MNT/big.buffered" && sync ||
		fail "buffered write of $MNT/big.buffered"
	same "$W/big" "$EXP/big.buffered" "buffered write as the server stored it"
	drop_caches
	timeout 120 dd if="$MNT/big.direct" of="$W/big.back" bs=1M iflag=direct \
		status=none || fail "dd iflag=direct from $MNT/big.direct"
	same "$W/big" "$W/big.back" "O_DIRECT read back"
	same "$W/big" "$MNT/big.buffered" "buffered read back"
	[ "$(sum_of "$W/big")" = "$(sum_of "$MNT/big.64k")" ] ||
		fail "checksum of $MNT/big.64k"
	ok "big files: sha256 $(sum_of "$W/big")... on both ends"
}

# Enough long names that READDIRPLUS needs a reply chunk, and many of
# them (several READDIRPLUS calls, each continuing from a cookie).
listing() {
	local n=$NFILES t0
	step "directory of $n entries"
	t0=$SECONDS
	kclient_list "$MNT/dir" $n "$W"
	ls -A "$EXP/dir" | sort >"$W/names.server"
	same "$W/names.want" "$W/names.server" "names the server stored"
	ok "$n entries created and listed"
	(cd "$MNT/dir" && many_names $n | xargs rm --) || fail "remove $n files"
	[ -z "$(ls -A "$EXP/dir")" ] ||
		fail "$(ls -A "$EXP/dir" | wc -l) entries left on the server"
	drop_caches
	[ -z "$(ls -A "$MNT/dir")" ] ||
		fail "$(ls -A "$MNT/dir" | wc -l) entries still listed"
	rmdir "$MNT/dir" || fail "rmdir $MNT/dir"
	ok "$n entries removed, on both sides ($((SECONDS - t0)) s in all)"
}

rename_remove() {
	step "rename and remove"
	mv "$MNT/big.direct" "$MNT/big.renamed" || fail "rename"
	[ -f "$EXP/big.renamed" ] && [ ! -e "$EXP/big.direct" ] ||
		fail "the server does not show the rename"
	same "$W/big" "$MNT/big.renamed" "renamed file"
	rm "$MNT/big.renamed" "$MNT/big.64k" "$MNT/big.buffered" \
		"$MNT/small" || fail "rm"
	[ -z "$(ls -A "$EXP")" ] || fail "left on the server: $(ls -A "$EXP")"
	[ -z "$(ls -A "$MNT")" ] || fail "left in the mount: $(ls -A "$MNT")"
	ok "renamed and removed, on both sides"
}

# Streams HUGE_SIZE random bytes to the mount with O_DIRECT (nothing of it
# is kept in the guest but the server's copy), then reads it back; the
# sha256 of what was written, of the server's file and of what came back
# must agree. Each phase is bounded by what is left of the guest's time.
huge_file() {
	local t0 rc
	step "file of $HUGE_SIZE bytes"
	mkfifo "$W/huge.fifo" || fail "mkfifo"
	sum_of "$W/huge.fifo" >"$W/huge.sum" &
	t0=$SECONDS
	head -c $HUGE_SIZE /dev/urandom | tee "$W/huge.fifo" |
		timeout $(($(guest_secs_left) - 30)) dd of="$MNT/huge" bs=1M \
			iflag=fullblock oflag=direct status=none
	rc=$?
	wait $! || fail "sha256 of the bytes written"
	[ $rc = 0 ] || fail "dd oflag=direct of $HUGE_SIZE bytes (rc $rc)"
	ok "written in $((SECONDS - t0)) s"
	[ "$(stat -c %s "$EXP/huge")" = $HUGE_SIZE ] ||
		fail "the server's file has $(stat -c %s "$EXP/huge") bytes"
	drop_caches
	t0=$SECONDS
	timeout $(($(guest_secs_left) - 30)) dd if="$MNT/huge" bs=1M \
		iflag=direct status=none | sha256sum | cut -c1-16 >"$W/huge.back"
	rc=${PIPESTATUS[0]}
	[ "$rc" = 0 ] || fail "dd iflag=direct of $MNT/huge (rc $rc)"
	ok "read back through sha256 in $((SECONDS - t0)) s"
	[ "$(cat "$W/huge.sum")" = "$(cat "$W/huge.back")" ] ||
		fail "sha256: wrote $(cat "$W/huge.sum")..., read back" \
			"$(cat "$W/huge.back")..."
	[ "$(sum_of "$EXP/huge")" = "$(cat "$W/huge.sum")" ] ||
		fail "sha256 of the server's copy: $(sum_of "$EXP/huge")...," \
			"wrote $(cat "$W/huge.sum")..."
	rm "$MNT/huge" || fail "rm $MNT/huge"
	[ -z "$(ls -A "$EXP")" ] || fail "left on the server: $(ls -A "$EXP")"
	ok "sha256 $(cat "$W/huge.sum")... written, stored and read back"
}

huge_plan
start_daemon
kmount
small_file
big_files
listing
rename_remove
[ $HUGE = 1 ] && huge_file
kclient_chunks "$MNT"
stop_nfsrdmad "$MNT" "$DPID" "$W/nfsrdmad.log"
DPID=
echo "kclient-nfsrdmad: ok"
