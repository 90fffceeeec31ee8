#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nfsrdma mount, end to end: a real nfsrdmad on loopback, the export
# mounted through FUSE over RDMA (iwarp) or TCP, and programs nobody here
# wrote run on the mount point; the server's directory is the judge.
#
# usage: mount.sh NFSRDMAD NFSRDMA rdma|tcp|ganesha TEST [WRITER]
#   ganesha    the export is NFS-Ganesha's (FSAL_VFS, NFSv3 over TCP, no
#              NLM; tests/lib/ganesha.sh) in place of nfsrdmad's, for the
#              tests that need nothing of nfsrdmad's own: fio, stress
#   fio        fio writes (sequential and random, psync, two jobs) and
#              verifies every block with crc32c
#   coreutils  cp in and out with cmp, mkdir -p, mv, ln -s, ln, mkfifo,
#              a Unix socket bound, chmod, chown (as root), touch,
#              truncate, rm -r; ls -l agrees with stat of
#              the server's files; nfsrdma stat MOUNTPOINT counts the
#              calls, and its socket goes with the mount
#   users      two uids write through one allow_other mount: the server's
#              files are theirs, and the server refuses one the other's
#              file in a sticky directory (root only)
#   cache      attributes and absent names are cached for actimeo, yet an
#              open sees what changed on the server (close-to-open);
#              lookupcache=positive forgets absent names; with noac, stat does
#   nonroot    user nobody mounts (through fusermount3), writes, unmounts
#   stress     stress-ng's file stressors (hdd, seek, dir, rename, link,
#              symlink, lockf, mmap) with --verify, dbench, and fio's
#              O_DIRECT and mmap engines with crc32c verification
#   fstab      mount.fuse.nfsrdma, called as mount(8) calls it, drops
#              fstab's own options and mounts; -f mounts nothing; as
#              root, mount(8) itself mounts an fstab line through it
#   outage     nfsrdmad stopped: a soft mount's create fails with EIO; a
#              hard mount's waits out twice that, and completes once
#              the server is back; a process waiting on the stopped
#              server dies of SIGKILL, the mount's daemon exits on
#              SIGTERM with a call waiting, and after an unmount that
#              the stopped server never answers
#   fiorestart fio writes 64 MiB through a hard mount with crc32c
#              verification; nfsrdmad is stopped and started again on the
#              same ports while it writes. fio must finish with every block
#              verified, and fio's verify pass over the server's own copy
#              must pass too: write-behind lost nothing across the restart
#   jukebox    nfsrdmad restarted with a small walk budget under two open
#              files: their handles must be searched for, so its answers
#              are JUKEBOX until the budget allows; a read through each
#              descriptor (pipelined READs) and a SETATTR of one at the
#              same time must still succeed with the right bytes, and the
#              server's walks_refused says it did refuse
#   noalloc    with RPCRDMA_COUNT_ALLOCS=1, the mount's own allocations
#              (nfsrdma stat) do not grow with the O_DIRECT READs,
#              buffered READs and write-behind WRITEs it serves
#   restart    WRITER (restart_writer.c) writes half a file, nfsrdmad is
#              stopped and started again on the same ports, the rest is
#              written and close succeeds: its COMMIT saw a new write
#              verifier and the adapter's log gave the lost half again
# Every test ends with nfsrdma umount and checks that the mount is gone
# and the process serving it exited with status 0.
#
# Exit 77 (skipped, saying why) without /dev/fuse, the tools, or the
# right to mount. Waits poll for a condition with a deadline, never a
# fixed sleep standing for one.
set -u

NFSRDMAD=${1:?usage: mount.sh NFSRDMAD NFSRDMA rdma|tcp TEST}
NFSRDMA=${2:?}
PROTO=${3:?}
TEST=${4:?}
WRITER=${5:-}
DEADLINE_S=20

skip() { echo "SKIP: $*"; exit 77; }
fail() {
	echo "FAIL: $*"
	[ -f "$T/server.err" ] && sed 's/^/  nfsrdmad: /' "$T/server.err" | tail -20
	[ "$PROTO" != ganesha ] || ganesha_log
	exit 1
}

[ -c /dev/fuse ] || skip "no /dev/fuse"
[ -x "$NFSRDMAD" ] && [ -x "$NFSRDMA" ] || skip "$NFSRDMAD or $NFSRDMA not built"
if [ "$(id -u)" != 0 ] && ! command -v fusermount3 >/dev/null; then
	skip "not root and no fusermount3 (fuse3)"
fi
"$NFSRDMA" --help | grep -q '^  mount ' || skip "nfsrdma built without libfuse3"

T=$(mktemp -d /tmp/rr-fuse.XXXXXX)
chmod 755 "$T"
MNT=$T/mnt
EXP=$T/exp
mkdir -p "$MNT" "$EXP" "$T/state"
SERVER=
SERVE_PID=
SERVER_FLAGS=()

cleanup() {
	if grep -q " $MNT " /proc/self/mountinfo 2>/dev/null; then
		umount -l "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
	fi
	# a daemon that will not stop would keep its callers (and ctest) waiting
	if [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; then
		DEADLINE_S=5 poll gone "$SERVE_PID" || kill -KILL "$SERVE_PID" 2>/dev/null
	fi
	# a stopped server (umount_while_stopped) takes SIGTERM only once going
	[ -n "$SERVER" ] && kill -CONT "$SERVER" 2>/dev/null
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	[ "$PROTO" != ganesha ] || ganesha_stop
	rm -rf "$T"
}
trap cleanup EXIT

# shellcheck source=tests/lib/poll-and-probe.sh
. "$(dirname "$0")/../lib/poll-and-probe.sh"
# shellcheck source=tests/lib/ganesha.sh
. "$(dirname "$0")/../lib/ganesha.sh"
GANESHA_TMP=$T/ganesha

mounted() { grep -q " $MNT [^ ]* - fuse.nfsrdma " /proc/self/mountinfo; }
unmounted() { ! grep -q " $MNT " /proc/self/mountinfo; }
# exited: gone, or a zombie nobody has reaped yet (a daemon's parent is
# init, which in some containers reaps late)
gone() {
	local st
	st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}
server_ready() { grep -qs ready "$T/server.out"; }

# ports: "RDMA TCP MOUNT NLM" to start again where it was, else any free
start_server() {
	local p=(${1:-0 0 0 0})
	# A restart must not read the last server's "ready": the shell opens
	# (and truncates) the file only after the poll below may have begun.
	# The server must not inherit a test's files on the mount (7 and 8):
	# they would hold it busy at unmount.
	rm -f "$T/server.out"
	"$NFSRDMAD" --export "$EXP" --state-dir "$T/state" --address 127.0.0.1 \
		--rdma-port "${p[0]}" --tcp-port "${p[1]}" --mount-port "${p[2]}" \
		--nlm-port "${p[3]}" --grace 0 "${SERVER_FLAGS[@]}" \
		>"$T/server.out" 2>"$T/server.err" 7<&- 8<&- &
	SERVER=$!
	poll server_ready || fail "nfsrdmad did not say ready"
	RDMA_PORT=$(sed -n 's/.*over rdma on .*:\([0-9]*\)$/\1/p' "$T/server.out")
	TCP_PORT=$(sed -n 's/.*nfs3 over tcp on .*:\([0-9]*\)$/\1/p' "$T/server.out")
	MOUNT_PORT=$(sed -n 's/.*mount3 over tcp on .*:\([0-9]*\)$/\1/p' "$T/server.out")
	NLM_PORT=$(sed -n 's/.*nlm4 over tcp on .*:\([0-9]*\)$/\1/p' "$T/server.out")
	[ -n "$RDMA_PORT" ] && [ -n "$TCP_PORT" ] && [ -n "$MOUNT_PORT" ] && [ -n "$NLM_PORT" ] ||
		fail "no ports in nfsrdmad's banner"
}

# Ganesha exporting EXP, for PROTO ganesha: skipped where it cannot run
start_ganesha() {
	ganesha_need VFS
	mkdir -p "$GANESHA_TMP"
	ganesha_vfs "$EXP"
}

url() {
	case $PROTO in
	ganesha) echo "nfs://127.0.0.1$EXP?proto=tcp&nfsport=$GANESHA_NPORT&mountport=$GANESHA_MPORT" ;;
	rdma) echo "nfs://127.0.0.1:$RDMA_PORT$EXP?mountport=$MOUNT_PORT&nlmport=$NLM_PORT&provider=iwarp" ;;
	tcp) echo "nfs://127.0.0.1:$TCP_PORT$EXP?proto=tcp&mountport=$MOUNT_PORT&nlmport=$NLM_PORT" ;;
	*) fail "proto $PROTO: want rdma, tcp or ganesha" ;;
	esac
}

# RDMA mounts as a daemon, TCP in the foreground: both modes are run.
foreground() { [ "$PROTO" != rdma ]; }
do_mount() {
	local opts=$1 err=$T/mount.err
	if foreground; then
		"$NFSRDMA" mount "$(url)" "$MNT" -f -o "$opts" 2>"$err" &
		SERVE_PID=$!
		poll mounted || { gone "$SERVE_PID" && grep -q "FUSE could not mount" "$err" &&
			skip "FUSE cannot mount here: $(cat "$err")"; fail "not mounted: $(cat "$err")"; }
	else
		if ! "$NFSRDMA" mount "$(url)" "$MNT" -o "$opts" 2>"$err"; then
			grep -q "FUSE could not mount" "$err" &&
				skip "FUSE cannot mount here: $(cat "$err")"
			fail "nfsrdma mount: $(cat "$err")"
		fi
		# returned: the mount must be there already, not soon
		mounted || fail "nfsrdma mount returned before the mount was up"
		SERVE_PID=$(pgrep -f -x ".*nfsrdma mount .* $MNT -o .*" | head -1)
		[ -n "$SERVE_PID" ] || fail "no daemon serving $MNT"
	fi
}

# The mount's control socket (mount_ctl.c), named after its device
# number in root's runtime directory; nothing when not root
ctl_sock() {
	local d
	[ "$(id -u)" = 0 ] || return 0
	d=$(awk -v m="$MNT" '$5 == m { d = $3 } END { print d }' /proc/self/mountinfo)
	[ -n "$d" ] && echo "/run/nfsrdma/mount-$d.sock"
}

# The kernel gives the next FUSE mount the device number of the last one
# unmounted, so nfsrdma umount returns once its daemon has let go of the
# socket named after it: a mount made right after must get its own.
do_umount() {
	local sock
	sock=$(ctl_sock)
	[ -z "$sock" ] || [ -S "$sock" ] || fail "no control socket $sock while mounted"
	"$NFSRDMA" umount "$MNT" || fail "nfsrdma umount failed"
	[ -z "$sock" ] || [ ! -e "$sock" ] ||
		fail "nfsrdma umount returned with its daemon still holding $sock"
	poll unmounted || fail "$MNT still mounted after umount"
	if foreground; then
		wait "$SERVE_PID"
		local st=$?
		[ "$st" = 0 ] || fail "nfsrdma mount -f exited with $st"
	else
		poll gone "$SERVE_PID" || fail "the mount daemon did not exit"
	fi
	SERVE_PID=
}

# ------------------------------------------------------------------ tests

# noalloc: the mount's own allocations (RPCRDMA_COUNT_ALLOCS=1, read with
# nfsrdma stat) do not grow with the requests it serves. Each workload
# runs on one file once to warm up, then twice, the second time with more
# I/O; what the second run allocates beyond the first must stay within
# one per 64 of its extra requests, and 2 more: a TCP connection's queue
# may still add to the entries it keeps (at most OUTQ_SPARES, tcp_io.h)
# when a run fills the socket further than the warm-up did. Opening the
# file allocates the same in both runs. An allocation per COMMIT (one per
# 32 WRITEs) exceeds that.
allocs() { "$NFSRDMA" stat "$MNT" --json | jq -e '.allocations.attempts'; }
alloc_sites() { "$NFSRDMA" stat "$MNT" --json | jq -r '.allocations.sites[] | "\(.site) \(.attempts)"'; }
# NAME EXTRA_REQUESTS SMALL_ARGS -- LARGE_ARGS: the fio runs, and the check
no_growth() {
	local name=$1 extra=$2 a0 a1 a2 small=() large=()
	shift 2
	while [ "$1" != -- ]; do small+=("$1"); shift; done
	shift
	large=("$@")
	# once first, unmeasured: what a connection keeps for the most it ever
	# queues (tcp_io.h) is sized by then
	fio --name="$name" --filename="$MNT/noalloc" "${large[@]}" >"$T/fio.warm" 2>&1 ||
		fail "$name, warm-up run: $(tail -3 "$T/fio.warm")"
	a0=$(allocs) || fail "nfsrdma stat gave no allocation count"
	fio --name="$name" --filename="$MNT/noalloc" "${small[@]}" >"$T/fio.small" 2>&1 ||
		fail "$name, small run: $(tail -3 "$T/fio.small")"
	a1=$(allocs)
	alloc_sites >"$T/sites.1"
	fio --name="$name" --filename="$MNT/noalloc" "${large[@]}" >"$T/fio.large" 2>&1 ||
		fail "$name, large run: $(tail -3 "$T/fio.large")"
	a2=$(allocs)
	alloc_sites >"$T/sites.2"
	echo "noalloc: $name allocated $((a1 - a0)), then $((a2 - a1)) with $extra more requests"
	if [ $((a2 - a1 - (a1 - a0))) -gt $((extra / 64 + 2)) ]; then
		diff "$T/sites.1" "$T/sites.2"
		fail "$name: allocations grow with the requests served"
	fi
}

test_noalloc() {
	command -v fio >/dev/null || skip "no fio"
	command -v jq >/dev/null || skip "no jq"
	RPCRDMA_COUNT_ALLOCS=1 do_mount actimeo=3
	# the file at its full size first: fio would lay it out otherwise, and
	# no run goes past its end (fio would open it again to wrap around)
	head -c $((480 << 20)) /dev/zero >"$MNT/noalloc" || fail "writing the file"
	local fio=(--ioengine=libaio --iodepth=16 --size=480m)
	no_growth randread4k 1600 --rw=randread --bs=4k --direct=1 \
		--number_ios=400 "${fio[@]}" -- \
		--rw=randread --bs=4k --direct=1 --number_ios=2000 "${fio[@]}"
	no_growth read1m 96 --rw=read --bs=1m --invalidate=1 --io_size=24m \
		"${fio[@]}" -- --rw=read --bs=1m --invalidate=1 --io_size=120m "${fio[@]}"
	# both past the write log's two generations of 32 MiB (fpriv.h), so
	# that each run fills both: any more memory is then per request
	no_growth write1m 390 --rw=write --bs=1m --io_size=80m "${fio[@]}" -- \
		--rw=write --bs=1m --io_size=470m "${fio[@]}"
	echo "noalloc: READs, write-behind WRITEs and their COMMITs allocate nothing per request over $PROTO"
	do_umount
}

test_fio() {
	command -v fio >/dev/null || skip "no fio"
	do_mount actimeo=3
	local common=(--directory="$MNT" --ioengine=psync --numjobs=2
		--verify=crc32c --verify_state_save=0 --do_verify=1 --verify_fatal=1 --group_reporting
		--output-format=terse)
	fio --name=seq --rw=write --bs=64k --size=8m "${common[@]}" >"$T/fio1" ||
		fail "fio sequential write+verify: $(cat "$T/fio1")"
	fio --name=rand --rw=randwrite --bs=4k --size=2m "${common[@]}" >"$T/fio2" ||
		fail "fio random write+verify: $(cat "$T/fio2")"
	# the server holds what fio wrote: each job's file, whole
	for f in seq.0.0 seq.1.0 rand.0.0 rand.1.0; do
		[ -f "$EXP/$f" ] || fail "$f not on the server"
		cmp -s "$EXP/$f" "$MNT/$f" || fail "$f differs from the server's"
	done
	[ "$(stat -c %s "$EXP/seq.0.0")" = $((8 << 20)) ] || fail "seq.0.0 size"
	echo "fio: sequential and random write+verify (crc32c) passed over $PROTO"
	# the COMMITs are counted by nfsrdmad
	[ "$PROTO" = ganesha ] || direct_is_stable
	do_umount
}

# The server's count of COMMITs (its control socket, in the state dir)
commits() {
	"$NFSRDMA" stat "$T/state/control" --json |
		jq -e '.procedures[] | select(.program == "nfs3" and
			.procedure == "COMMIT") | .calls'
}

# O_DIRECT writes are FILE_SYNC, on the server's disk when write(2)
# returns, as the kernel client's are: no COMMIT follows them, at close
# or at fsync. A buffered file's close does commit (the count moves).
direct_is_stable() {
	local c0 c1 c2
	c0=$(commits) || fail "no COMMIT count from nfsrdmad"
	dd if=/dev/urandom of="$T/direct" bs=1M count=8 2>/dev/null
	dd if="$T/direct" of="$MNT/direct" bs=1M oflag=direct conv=fsync \
		2>"$T/dd" || fail "dd oflag=direct: $(cat "$T/dd")"
	c1=$(commits)
	[ "$c1" = "$c0" ] || fail "O_DIRECT writes were followed by $((c1 - c0)) COMMIT(s)"
	cmp -s "$T/direct" "$EXP/direct" || fail "the server's copy of direct differs"
	dd if="$T/direct" of="$MNT/buffered" bs=1M 2>/dev/null ||
		fail "dd of a buffered file"
	c2=$(commits)
	[ "$c2" -gt "$c1" ] || fail "a buffered file's close sent no COMMIT"
	echo "O_DIRECT writes are FILE_SYNC, no COMMIT after them; a buffered close commits"
}

# Programs nobody here wrote, with their own verification: stress-ng's
# file stressors, dbench, and fio's O_DIRECT and mmap engines
test_stress() {
	local ran="" locks=(--lockf 1)
	# Ganesha runs here without NLM: no locks to stress
	[ "$PROTO" != ganesha ] || locks=()
	do_mount actimeo=3
	if command -v stress-ng >/dev/null; then
		mkdir "$MNT/s" || fail "mkdir s"
		stress-ng --temp-path "$MNT/s" --timeout 3 --verify --metrics-brief \
			--hdd 1 --hdd-bytes 4m --seek 1 --seek-size 4m --dir 1 \
			--rename 1 --link 1 --symlink 1 "${locks[@]}" \
			--mmap 1 --mmap-bytes 256k --mmap-file >"$T/stress" 2>&1 ||
			fail "stress-ng: $(grep -E 'fail|error' "$T/stress" | head -5)"
		! grep -qE "fail:|error:" "$T/stress" ||
			fail "stress-ng: $(grep -E 'fail:|error:' "$T/stress" | head -5)"
		ran+=" stress-ng"
	fi
	if command -v dbench >/dev/null; then
		dbench -D "$MNT" -t 3 2 >"$T/dbench" 2>&1 || fail "dbench: $(tail -5 "$T/dbench")"
		! grep -qi "error" "$T/dbench" || fail "dbench: $(grep -i error "$T/dbench" | head -3)"
		grep -q "^Throughput" "$T/dbench" || fail "dbench: no throughput line"
		ran+=" dbench"
	fi
	if command -v fio >/dev/null; then
		local common=(--directory="$MNT" --size=4m --bs=4k --rw=randwrite
			--verify=crc32c --verify_state_save=0 --do_verify=1 --verify_fatal=1 --output-format=terse)
		fio --name=direct --direct=1 "${common[@]}" >"$T/fio1" ||
			fail "fio O_DIRECT write+verify: $(cat "$T/fio1")"
		fio --name=mmap --ioengine=mmap "${common[@]}" >"$T/fio2" ||
			fail "fio mmap write+verify: $(cat "$T/fio2")"
		ran+=" fio-direct fio-mmap"
	fi
	[ -n "$ran" ] || skip "none of stress-ng, dbench, fio"
	echo "stress:$ran passed over $PROTO"
	do_umount
}

# "mode nlink uid gid size mtime name" of each entry in dir $1, by ls -l
ls_fields() {
	ls -ln --time-style=+%s "$1" | awk 'NR > 1 { print $1, $2, $3, $4, $5, $6, $7 }' |
		sed 's/\([-dlps][-rwxsStT]\{9\}\)[.+]/\1/'
}

# the same by stat of the server's directory $1
stat_fields() {
	(cd "$1" && for f in $(ls -A | sort); do
		stat -c '%A %h %u %g %s %Y %n' "$f"
	done) | awk '{ if ($1 ~ /^[cb]/) $5 = "?"; print }'
}

test_coreutils() {
	do_mount actimeo=3
	head -c $((5 << 20)) /dev/urandom >"$T/big"
	cp "$T/big" "$MNT/big" || fail "cp in"
	cmp "$T/big" "$EXP/big" || fail "cp in: the server's copy differs"
	cp "$MNT/big" "$T/back" || fail "cp out"
	cmp "$T/big" "$T/back" || fail "cp out: the copy differs"

	mkdir -p "$MNT/a/b/c" || fail "mkdir -p"
	[ -d "$EXP/a/b/c" ] || fail "mkdir -p: not on the server"
	echo deep >"$MNT/a/b/c/f"
	mv "$MNT/a/b/c" "$MNT/a/moved" || fail "mv"
	[ -f "$EXP/a/moved/f" ] && [ ! -e "$EXP/a/b/c" ] || fail "mv: server disagrees"
	[ "$(cat "$MNT/a/moved/f")" = deep ] || fail "mv: content"
	ln -s moved/f "$MNT/a/sym" || fail "ln -s"
	[ "$(readlink "$EXP/a/sym")" = moved/f ] || fail "ln -s: server's target"
	[ "$(cat "$MNT/a/sym")" = deep ] || fail "ln -s: reading through it"
	ln "$MNT/a/moved/f" "$MNT/a/hard" || fail "ln"
	[ "$(stat -c %i "$EXP/a/hard")" = "$(stat -c %i "$EXP/a/moved/f")" ] ||
		fail "ln: not the same file on the server"
	[ "$(stat -c %h "$MNT/a/hard")" = 2 ] || fail "ln: link count"
	[ "$(stat -c %i "$MNT/a/hard")" = "$(stat -c %i "$MNT/a/moved/f")" ] ||
		fail "ln: not the same inode through the mount"
	mkfifo "$MNT/a/fifo" || fail "mkfifo"
	[ -p "$EXP/a/fifo" ] || fail "mkfifo: not a FIFO on the server"
	local entries=5 made=""
	# bind(2) of a Unix socket is a mknod of one (coreutils makes none)
	if command -v python3 >/dev/null; then
		python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
			"$MNT/a/sock" || fail "bind of a Unix socket"
		[ -S "$EXP/a/sock" ] || fail "bind: not a socket on the server"
		entries=6 made+=" a socket,"
	else
		echo "coreutils: no socket bound (no python3 here)"
	fi
	chmod 640 "$MNT/a/hard" || fail chmod
	[ "$(stat -c %a "$EXP/a/moved/f")" = 640 ] || fail "chmod: server's mode"
	if [ "$(id -u)" = 0 ]; then
		chown 1234:4321 "$MNT/a/hard" || fail chown
		[ "$(stat -c %u:%g "$EXP/a/hard")" = 1234:4321 ] || fail "chown: server's owner"
		made+=" chown,"
	else
		echo "coreutils: no chown (it needs root)"
	fi
	touch -d @1000000000 "$MNT/a/hard" || fail touch
	[ "$(stat -c %Y "$EXP/a/hard")" = 1000000000 ] || fail "touch: server's mtime"
	truncate -s 2 "$MNT/a/hard" || fail truncate
	[ "$(stat -c %s "$EXP/a/hard")" = 2 ] || fail "truncate: server's size"
	echo more >>"$MNT/a/hard"
	[ "$(cat "$EXP/a/moved/f")" = "demore" ] || fail "append: server's bytes"

	# ls -l through the mount says what stat says on the server
	ls_fields "$MNT/a" >"$T/ls.mnt"
	stat_fields "$EXP/a" >"$T/ls.exp"
	diff "$T/ls.exp" "$T/ls.mnt" >"$T/ls.diff" ||
		fail "ls -l differs from the server's stat: $(cat "$T/ls.diff")"
	[ "$(wc -l <"$T/ls.mnt")" = "$entries" ] ||
		fail "ls -l: want $entries entries, $(cat "$T/ls.mnt")"

	rm -r "$MNT/a" || fail "rm -r"
	[ ! -e "$EXP/a" ] || fail "rm -r: still on the server"
	open_unlinked
	df "$MNT" >/dev/null || fail "df (statfs)"
	echo "coreutils: cp/cmp, mkdir -p, mv, ln -s, ln, mkfifo,$made chmod, touch, truncate, ls -l, rm -r passed over $PROTO"
	mount_stat
	do_umount
	[ -z "$SOCK" ] || [ ! -e "$SOCK" ] || fail "the control socket $SOCK outlived the mount"
}

no_silly() { ! ls -A "$EXP" | grep -q '^\.nfs'; }

# A file removed while open stays usable through the open (the kernel
# client's silly rename), and goes from the server at the last close.
open_unlinked() {
	exec 3>"$MNT/ou" || fail "open ou"
	printf before >&3
	rm "$MNT/ou" || fail "rm of an open file"
	[ ! -e "$MNT/ou" ] || fail "ou still has its name after rm"
	printf after >&3 || fail "write after rm: the open lost its file"
	[ "$(cat /proc/$$/fd/3)" = beforeafter ] || fail "read after rm: '$(cat /proc/$$/fd/3)'"
	no_silly && fail "no hidden .nfs name on the server while open"
	exec 3>&-
	poll no_silly || fail "the hidden name outlived the last close: $(ls -A "$EXP")"
}

# nfsrdma stat MOUNTPOINT: the mount's own counters, while mounted
mount_stat() {
	local calls
	"$NFSRDMA" stat "$MNT" >"$T/stat" 2>&1 || fail "nfsrdma stat $MNT: $(cat "$T/stat")"
	grep -q "^mount $MNT: nfs://" "$T/stat" || fail "stat: no mount line: $(head -3 "$T/stat")"
	grep -q "^rsize [0-9]* wsize [0-9]* hard" "$T/stat" || fail "stat: no sizes: $(head -3 "$T/stat")"
	calls=$(sed -n 's/^calls //p' "$T/stat")
	[ "${calls:-0}" -gt 20 ] || fail "stat: $calls calls after all that"
	if command -v jq >/dev/null; then
		"$NFSRDMA" stat --json "$MNT" >"$T/stat.json" || fail "stat --json"
		jq -e '.hard == true and .transport.calls > 20 and .rsize_bytes > 0' \
			"$T/stat.json" >/dev/null || fail "stat --json: $(cat "$T/stat.json")"
	fi
	SOCK=
	[ "$(id -u)" = 0 ] && SOCK=/run/nfsrdma/mount-$(mountpoint -d "$MNT").sock
	[ -z "$SOCK" ] || [ -S "$SOCK" ] || fail "no control socket at $SOCK"
	echo "stat: $calls calls counted by the mount's transport over $PROTO"
	thread_names
}

# The mount's threads say what they are, for top -H, ps -L and perf.
thread_names() {
	local names n want="rr-fuse-tend rr-fuse-worker rr-iwarp rr-clnt"
	[ "$PROTO" = tcp ] && want="rr-fuse-tend rr-fuse-worker rr-tcp-clnt"
	names=" $(cat /proc/"$SERVE_PID"/task/*/comm 2>/dev/null | sort -u | tr '\n' ' ')"
	for n in $want; do
		case $names in *" $n "*) ;; *) fail "no thread named $n in the mount:$names" ;; esac
	done
	echo "threads:$names"
}

test_users() {
	[ "$(id -u)" = 0 ] || skip "two uids need root"
	command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
	do_mount allow_other,noac
	mkdir "$MNT/shared" && chmod 1777 "$MNT/shared" || fail "shared dir"
	local u
	for u in 4242 4343; do
		setpriv --reuid=$u --regid=$u --clear-groups \
			sh -c "head -c 100000 /dev/urandom >'$MNT/shared/by-$u' && \
				mkdir '$MNT/shared/dir-$u'" ||
			fail "uid $u could not write through the mount"
	done
	for u in 4242 4343; do
		[ "$(stat -c %u:%g "$EXP/shared/by-$u")" = "$u:$u" ] ||
			fail "by-$u is $(stat -c %u:%g "$EXP/shared/by-$u") on the server"
		[ "$(stat -c %u:%g "$EXP/shared/dir-$u")" = "$u:$u" ] ||
			fail "dir-$u is $(stat -c %u:%g "$EXP/shared/dir-$u") on the server"
		[ "$(stat -c %u "$MNT/shared/by-$u")" = "$u" ] ||
			fail "by-$u: the mount shows another owner"
	done
	# the server, not the adapter, refuses: 4343 is not 4242
	if setpriv --reuid=4343 --regid=4343 --clear-groups \
		rm -f "$MNT/shared/by-4242" 2>/dev/null; then
		fail "uid 4343 removed uid 4242's file in a sticky directory"
	fi
	[ -f "$EXP/shared/by-4242" ] || fail "by-4242 is gone"
	if setpriv --reuid=4343 --regid=4343 --clear-groups \
		sh -c "echo x >'$MNT/shared/dir-4242/intruder'" 2>/dev/null; then
		fail "uid 4343 wrote into uid 4242's directory"
	fi
	# access(2) says what the server would do
	setpriv --reuid=4242 --regid=4242 --clear-groups \
		test -w "$MNT/shared/by-4242" || fail "access: 4242 may not write its own file"
	if setpriv --reuid=4343 --regid=4343 --clear-groups \
		test -w "$MNT/shared/by-4242"; then
		fail "access: 4343 is told it may write 4242's file"
	fi
	if setpriv --reuid=4343 --regid=4343 --clear-groups \
		test -w "$MNT/shared/dir-4242"; then
		fail "access: 4343 is told it may write in 4242's directory"
	fi
	echo "users: uids 4242 and 4343 own what they wrote, and are kept apart, over $PROTO"
	do_umount
}

test_cache() {
	do_mount actimeo=3600
	printf aaaa >"$MNT/f"
	[ "$(cat "$MNT/f")" = aaaa ] || fail "first read"
	[ "$(stat -c %s "$MNT/f")" = 4 ] || fail "first size"
	# changed on the server, behind the mount's back, in place; an
	# mtime of its own, since a coarse clock may give the same tick
	printf bbbb >"$EXP/f" && touch -d @1000000000 "$EXP/f"
	# close-to-open: a read within the cached size comes from the
	# server, not from the pages the first read left in the kernel
	[ "$(dd if="$MNT/f" bs=2 count=1 status=none)" = bb ] ||
		fail "close-to-open: an open read the old pages after the server's change"
	# and when the server's file grew, the read goes past the old size
	printf bbbbbbbbbb >"$EXP/f"
	[ "$(stat -c %s "$MNT/f")" = 4 ] ||
		fail "actimeo=3600: stat asked the server (not cached)"
	[ "$(cat "$MNT/f")" = bbbbbbbbbb ] ||
		fail "close-to-open: read '$(cat "$MNT/f")' after the server's change"
	[ "$(stat -c %s "$MNT/f")" = 10 ] || fail "size after the open"
	# a name not found is remembered too (lookupcache=all, for acdirmin)
	[ ! -e "$MNT/ghost" ] || fail "ghost exists before it was made"
	echo boo >"$EXP/ghost"
	[ ! -e "$MNT/ghost" ] || fail "lookupcache=all: the absent name was asked again"
	# yet what this mount creates is seen at once
	[ ! -e "$MNT/made" ] || fail "made exists before it was made"
	echo made >"$MNT/made" && [ "$(cat "$MNT/made")" = made ] ||
		fail "a create after a negative lookup is not seen"
	do_umount

	do_mount actimeo=3600,lookupcache=positive
	[ ! -e "$MNT/ghost2" ] || fail "ghost2 exists before it was made"
	echo boo >"$EXP/ghost2"
	[ -e "$MNT/ghost2" ] || fail "lookupcache=positive: the absent name was remembered"
	do_umount

	do_mount noac
	[ "$(stat -c %s "$MNT/f")" = 10 ] || fail "noac: first size"
	printf cc >"$EXP/f"
	[ "$(stat -c %s "$MNT/f")" = 2 ] || fail "noac: stat did not ask the server"
	# write-behind: the writes were answered before the server had them,
	# yet fstat (a GETATTR, under noac) after them, before any close,
	# gives the size they made, not the server's of a moment before
	local size
	size=$(perl -e 'open(my $f, ">", $ARGV[0]) or die "$!"; binmode $f;
		my $b = "w" x 1048576; syswrite($f, $b) == 1048576 or die "$!" for 1 .. 24;
		print((stat $f)[7])' "$MNT/wb") || fail "noac: perl could not write $MNT/wb"
	[ "$size" = $((24 << 20)) ] || fail "noac: fstat after write-behind gave $size"
	do_umount

	# ro: the kernel refuses writes, reads go on
	do_mount ro
	if (echo x 2>"$T/ro.err" >"$MNT/f"); then fail "ro: a write succeeded"; fi
	grep -q "Read-only file system" "$T/ro.err" || fail "ro: $(cat "$T/ro.err")"
	[ "$(cat "$MNT/f")" = cc ] || fail "ro: read '$(cat "$MNT/f")'"
	echo "cache: actimeo holds attributes and absent names, open sees the server's change, noac asks each time (and sees writes behind), ro refuses writes, over $PROTO"
	do_umount
}

test_nonroot() {
	[ "$(id -u)" = 0 ] || skip "becoming another uid needs root"
	command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
	[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid root"
	# fusermount3 wants the user named in the password database
	local u g as pid
	u=$(id -u nobody 2>/dev/null) && g=$(id -g nobody) || skip "no user nobody"
	as=(setpriv --reuid="$u" --regid="$g" --clear-groups)
	chmod 777 "$EXP"
	chown "$u:$g" "$MNT"
	"${as[@]}" "$NFSRDMA" mount "$(url)" "$MNT" 2>"$T/mount.err" ||
		fail "$u could not mount: $(cat "$T/mount.err")"
	mounted || fail "nfsrdma mount returned before the mount was up"
	grep " $MNT " /proc/self/mountinfo | grep -q "user_id=$u," ||
		fail "the mount is not uid $u's: $(grep " $MNT " /proc/self/mountinfo)"
	pid=$(pgrep -f -x ".*nfsrdma mount .* $MNT" | head -1)
	[ -n "$pid" ] || fail "no daemon serving $MNT"
	"${as[@]}" sh -c "echo hi >'$MNT/mine' && [ \"\$(cat '$MNT/mine')\" = hi ]" ||
		fail "uid $u could not write and read on its mount"
	[ "$(stat -c %u "$EXP/mine")" = "$u" ] || fail "the server's file is not $u's"
	"${as[@]}" "$NFSRDMA" umount "$MNT" || fail "uid $u could not unmount"
	poll unmounted || fail "$MNT still mounted after umount"
	poll gone "$pid" || fail "the mount daemon did not exit"
	echo "nonroot: uid $u mounted, wrote and unmounted through fusermount3 over $PROTO"
}

wrote_half() { grep -q half "$T/writer.out"; }

test_restart() {
	[ -x "$WRITER" ] || skip "no restart_writer"
	do_mount actimeo=3
	head -c $((3 << 20)) /dev/urandom >"$T/src"
	"$WRITER" "$T/src" "$MNT/f" "$T/go" >"$T/writer.out" 2>"$T/writer.err" &
	local wp=$! st
	poll wrote_half || fail "the writer did not write its first half"
	stop_server
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
	touch "$T/go"
	wait "$wp"
	st=$?
	[ "$st" = 0 ] || fail "writer across the restart: $(cat "$T/writer.err")"
	cmp "$T/src" "$EXP/f" || fail "the server's file differs after the restart"
	cmp "$T/src" "$MNT/f" || fail "the mount's file differs after the restart"
	echo "restart: a file written across a server restart arrived whole over $PROTO"
	do_umount
}

# nfsrdmad's walks_refused counter is above zero (SIGUSR1: it prints them)
refused_walks() {
	kill -USR1 "$SERVER" && grep -q 'walks_refused=[1-9]' "$T/server.err"
}

test_jukebox() {
	local i rp st
	# Breadth first, a's search reads the root and every directory in it
	# (x00..x23, d1, e1), then d2, and never e3's entries: b stays unknown
	# and is refused while a's search has spent the budget (see
	# tests/nfs3/client/nfs3_client_jukebox.c, the same shape)
	mkdir -p "$EXP/d1/d2" "$EXP/e1/e2/e3"
	for i in $(seq -w 0 23); do mkdir "$EXP/x$i"; done
	head -c $((3 << 20)) /dev/urandom >"$T/a"
	head -c $((3 << 20)) /dev/urandom >"$T/b"
	cp "$T/a" "$EXP/d1/d2/a" && cp "$T/b" "$EXP/e1/e2/e3/b" || fail "files"
	# attributes kept a minute: a read goes out as READs with no GETATTR
	# first, so the READs themselves meet JUKEBOX (the calls parked by
	# src/fuse/acall.c), and a SETATTR the synchronous way
	do_mount "hard,actimeo=60"
	exec 7<"$MNT/d1/d2/a" 8<"$MNT/e1/e2/e3/b" || fail "open through the mount"
	# a first open drops the kernel's attributes (src/fuse/fileops.c): get
	# them again now, so that no GETATTR goes ahead of the READs below
	stat "$MNT/d1/d2/a" "$MNT/e1/e2/e3/b" >/dev/null || fail "stat through the mount"
	# 16 directories a second for all, 4 for one address, each costing
	# a second however fast it is read: a debt of seconds
	SERVER_FLAGS=(--walk-dirs-per-sec 16 --walk-dir-us 1000000)
	stop_server
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
	cmp "$T/a" - <&7 || fail "a read through its descriptor after the restart differs"
	cmp "$T/b" - <&8 >"$T/b.cmp" 2>&1 &
	rp=$!
	# b's READs are out and refused: now a SETATTR, the synchronous way
	DEADLINE_S=60 poll refused_walks || fail "the server refused no walk: JUKEBOX was not tested"
	touch -c -m -d @1000000000 "$MNT/e1/e2/e3/b" || fail "setting b's mtime after the restart"
	wait "$rp"
	st=$?
	[ "$st" = 0 ] || fail "b read through its descriptor after the restart: $(cat "$T/b.cmp")"
	[ "$(stat -c %Y "$EXP/e1/e2/e3/b")" = 1000000000 ] || fail "b's mtime did not reach the server"
	exec 7<&- 8<&-
	echo "jukebox: READs and a SETATTR answered JUKEBOX after a restart were waited out over $PROTO"
	do_umount
}

# the server's copy of fio's file has at least $1 MiB
server_has() { [ "$(stat -c %s "$EXP/big.0.0" 2>/dev/null || echo 0)" -ge $(($1 << 20)) ]; }

test_fiorestart() {
	command -v fio >/dev/null || skip "no fio"
	do_mount "hard,timeo=10,retrans=2,actimeo=3"
	local job=(--name=big --rw=write --bs=1M --size=64m --ioengine=psync
		--verify=crc32c --verify_state_save=0 --verify_fatal=1 --output-format=terse) fp st
	# paced, so that the restart falls while it writes: 4 s or more
	fio --directory="$MNT" "${job[@]}" --do_verify=1 --fsync_on_close=1 \
		--rate=16m >"$T/fio" 2>&1 &
	fp=$!
	# past the first log generation (16 MiB): its COMMIT is under way
	DEADLINE_S=60 poll server_has 20 || fail "fio did not write 20 MiB: $(cat "$T/fio")"
	stop_server
	! server_has 64 || fail "fio wrote everything before the restart: nothing tested"
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
	DEADLINE_S=120 poll gone "$fp" || fail "fio did not finish after the restart"
	wait "$fp"
	st=$?
	[ "$st" = 0 ] || fail "fio across the restart: $(cat "$T/fio")"
	[ "$(stat -c %s "$EXP/big.0.0")" = $((64 << 20)) ] || fail "the server's file is not 64 MiB"
	# fio itself judges the server's copy, without the mount's cache
	fio --directory="$EXP" "${job[@]}" --verify_only >"$T/fio-server" 2>&1 ||
		fail "the server's copy fails fio's verification: $(cat "$T/fio-server")"
	cmp -s "$EXP/big.0.0" "$MNT/big.0.0" || fail "the mount's file differs from the server's"
	echo "fiorestart: fio wrote and verified 64 MiB across a server restart over $PROTO"
	do_umount
}

stop_server() {
	kill "$SERVER" && wait "$SERVER"
	SERVER=
}

# soft,timeo=10,retrans=1: a call fails after 1 s and one more of it
SOFT_S=2

test_outage() {
	local t0 hp st
	do_mount "soft,timeo=10,retrans=1,noac"
	stop_server
	t0=$SECONDS
	if echo soft 2>"$T/soft.err" >"$MNT/soft"; then
		fail "soft: a create succeeded with the server down"
	fi
	grep -q "Input/output error" "$T/soft.err" ||
		fail "soft: want EIO, as nfs(5) says: $(cat "$T/soft.err")"
	local soft_took=$((SECONDS - t0))
	[ "$soft_took" -lt $DEADLINE_S ] || fail "soft: failed only after $soft_took s"
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
	do_umount

	do_mount "hard,timeo=10,retrans=1,noac"
	stop_server
	(echo hard 2>"$T/hard.err" >"$MNT/hard") &
	hp=$!
	# the outage is what is tested: twice what fails the soft mount
	sleep $((2 * SOFT_S))
	kill -0 "$hp" 2>/dev/null ||
		fail "hard: the create ended during the outage: $(cat "$T/hard.err")"
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
	wait "$hp"
	st=$?
	[ "$st" = 0 ] || fail "hard: the create failed after the server came back: $(cat "$T/hard.err")"
	[ "$(cat "$EXP/hard")" = hard ] || fail "hard: the server's file holds '$(cat "$EXP/hard")'"
	[ ! -e "$EXP/soft" ] || fail "soft: the failed create left a file"
	killed_while_waiting
	stopped_while_waiting
	read_killed_while_waiting
	stopped_while_writing
	umount_while_stopped
	echo "outage: soft failed with EIO after ${soft_took} s, hard waited out $((2 * SOFT_S)) s and completed, a process waiting on the stopped server was killed (in a GETATTR, and in a READ), the daemon stopped with a call waiting and with WRITEs out, and exited after an unmount with the server stopped, over $PROTO"
}

# pid is asleep in the kernel, waiting for the mount's answer (its stack
# is root's to read; its wait channel anyone's)
waits_on_fuse() { grep -qsE 'fuse|request_wait_answer' "/proc/$1/stack" "/proc/$1/wchan"; }

# The server stopped, and a stat of the mount waiting for it: its pid in SP
stat_waiting() {
	stop_server
	stat "$MNT/hard" >/dev/null 2>&1 &
	SP=$!
	poll waits_on_fuse "$SP" || fail "hard: stat did not wait on the stopped server"
}

# As on the kernel client's hard mounts, a fatal signal ends a call that
# waits on a stopped server: FUSE alone would keep the process, killed,
# waiting for the daemon's answer until the server came back.
killed_while_waiting() {
	stat_waiting
	kill -KILL "$SP"
	poll gone "$SP" || fail "hard: a process waiting on the stopped server survived SIGKILL"
	wait "$SP" 2>/dev/null
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
	[ "$(cat "$MNT/hard")" = hard ] || fail "hard: the mount does not read after the kill"
}

# As killed_while_waiting, for a READ, which the daemon answers from
# the call's completion rather than from a thread waiting for it
# (acall.c): the reader dies, and once the server is back the READ it
# left behind completes into nothing and the mount reads on. Its own
# mount: attributes cached (the open's are refreshed by a stat, or cat's
# fstat would wait in a GETATTR), read-ahead off (root only). Debian
# 12's kernel (6.1) reads the page in a FUSE request that our cancel
# ends on the INTERRUPT; 6.18's waits on the page, which SIGKILL ends.
reads_on_fuse() { grep -qsE 'fuse_read|filemap_read' "/proc/$1/stack"; }
read_killed_while_waiting() {
	local rp
	if [ "$(id -u)" != 0 ]; then
		echo "outage: not root, read-ahead stays on: a READ killed while waiting is not tested"
		return
	fi
	do_mount "hard,timeo=10,retrans=1,readahead=0"
	printf fresh >"$EXP/fresh"
	exec 4<"$MNT/fresh"
	stat "$MNT/fresh" >/dev/null || fail "stat $MNT/fresh"
	stop_server
	cat <&4 >/dev/null 2>&1 &
	rp=$!
	exec 4<&-
	poll reads_on_fuse "$rp" || fail "hard: a read did not wait on the stopped server: $(cat "/proc/$rp/stack")"
	kill -KILL "$rp"
	poll gone "$rp" || fail "hard: a process waiting for a READ survived SIGKILL"
	wait "$rp" 2>/dev/null
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
	[ "$(cat "$MNT/fresh")" = fresh ] || fail "hard: the mount does not read after the killed READ"
	do_umount
}

# The mount's daemon told to stop (SIGTERM) while a call waits on a
# stopped server exits, unmounting, and the waiting process goes on
# (with an error): neither waits for a server that may never return.
stopped_while_waiting() {
	stat_waiting
	kill -TERM "$SERVE_PID"
	poll gone "$SERVE_PID" ||
		fail "hard: the mount's daemon did not exit on SIGTERM with a call waiting"
	[ "$PROTO" = tcp ] && wait "$SERVE_PID"
	poll gone "$SP" || fail "hard: stat still waits after the daemon exited"
	wait "$SP" 2>/dev/null
	poll unmounted || fail "$MNT still mounted after the daemon exited"
	SERVE_PID=
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
}

# The daemon told to stop while write-behind WRITEs, answered and sent
# from their completions (acall.c), wait for a stopped server, and an
# fsync waits for them: the WRITEs end with the session, the fsync fails,
# the daemon exits. The file is opened while the server is up (the open
# asks it), by the writer alone: every process holding it open would
# wait for the server when it closed it, as on the kernel's hard mounts.
# The writer opens it, then waits on a FIFO the test opens once it has.
stopped_while_writing() {
	local wp
	do_mount "hard,timeo=10,retrans=1"
	: >"$MNT/wstop" || fail "create wstop"
	mkfifo "$T/go" || fail "mkfifo"
	(
		exec 5>>"$MNT/wstop" 6<"$T/go"
		read -r _ <&6
		exec dd if=/dev/zero bs=64k count=4 conv=fsync >&5 2>/dev/null 6<&-
	) &
	wp=$!
	exec 6>"$T/go"
	stop_server
	echo go >&6
	exec 6>&-
	poll waits_on_fuse "$wp" || fail "hard: dd's fsync did not wait on the stopped server"
	kill -TERM "$SERVE_PID"
	poll gone "$SERVE_PID" ||
		fail "hard: the mount's daemon did not exit on SIGTERM with WRITEs out"
	[ "$PROTO" = tcp ] && wait "$SERVE_PID"
	poll gone "$wp" || fail "hard: dd still waits after the daemon exited"
	wait "$wp" && fail "hard: dd's fsync succeeded with the server stopped"
	poll unmounted || fail "$MNT still mounted after the daemon exited"
	SERVE_PID=
	start_server "$RDMA_PORT $TCP_PORT $MOUNT_PORT $NLM_PORT"
}

# An unmount with the server stopped (SIGSTOP: its sockets still accept,
# it answers nothing): the daemon's UMNT is advisory, so even a hard
# mount's daemon must not wait for a server that may never answer.
stopped() { [ "$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)" = T ]; }
umount_while_stopped() {
	do_mount "hard,timeo=10,retrans=1"
	kill -STOP "$SERVER" && poll stopped "$SERVER" || fail "could not stop nfsrdmad"
	"$NFSRDMA" umount "$MNT" || fail "nfsrdma umount failed with the server stopped"
	poll unmounted || fail "$MNT still mounted after umount with the server stopped"
	poll gone "$SERVE_PID" ||
		fail "hard: the mount's daemon did not exit after an unmount with the server stopped"
	kill -CONT "$SERVER"
	if [ "$PROTO" = tcp ]; then
		wait "$SERVE_PID" || fail "nfsrdma mount -f exited with $? after an unmount with the server stopped"
	fi
	SERVE_PID=
}

# mount.fuse.nfsrdma's daemon for $MNT: pid, or nothing
helper_pid() { pgrep -f "mount.fuse.nfsrdma .* $MNT( |$)" | head -1; }

helper_umount() {
	local pid=$1
	"$NFSRDMA" umount "$MNT" || fail "nfsrdma umount failed"
	poll unmounted || fail "$MNT still mounted after umount"
	poll gone "$pid" || fail "the helper's daemon did not exit"
}

# mount(8) in a private mount namespace whose /usr/sbin holds only the
# helper: an fstab line of type fuse.nfsrdma, mounted and unmounted
fstab_in_namespace() {
	mkdir "$T/sbin" && ln -s "$HELPER" "$T/sbin/mount.fuse.nfsrdma"
	printf '%s %s fuse.nfsrdma noauto,_netdev,actimeo=3 0 0\n' "$(url)" "$MNT" >"$T/fstab"
	unshare -m --propagation private bash -c '
		mount --bind "$0/sbin" /usr/sbin || exit 3
		mount --fstab "$0/fstab" "$1" 2>"$0/fstab.err" || exit 4
		echo via-fstab >"$1/fs" || exit 5
		umount "$1" || exit 6' "$T" "$MNT"
}

test_fstab() {
	local pid rc
	HELPER=$(dirname "$NFSRDMA")/mount.fuse.nfsrdma
	[ -x "$HELPER" ] || skip "no mount.fuse.nfsrdma next to nfsrdma"
	# as mount(8) runs it, fstab's own options among the file system's
	"$HELPER" "$(url)" "$MNT" -o rw,noauto,_netdev,nofail,x-systemd.automount,actimeo=3 \
		2>"$T/mount.err" || fail "mount.fuse.nfsrdma: $(cat "$T/mount.err")"
	mounted || fail "the helper returned before the mount was up"
	pid=$(helper_pid)
	[ -n "$pid" ] || fail "no daemon serving $MNT"
	echo via-helper >"$MNT/h" && [ "$(cat "$EXP/h")" = via-helper ] ||
		fail "writing through the helper's mount"
	helper_umount "$pid"
	# -f is mount(8)'s fake mount: nothing is mounted
	"$HELPER" "$(url)" "$MNT" -f -o actimeo=3 || fail "helper -f failed"
	unmounted || fail "helper -f mounted"

	if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
		echo "fstab: the helper mounted; mount(8) from fstab not tried (needs root and unshare)"
		return
	fi
	fstab_in_namespace
	rc=$?
	[ "$rc" = 0 ] || fail "mount(8) with an fstab line, step $rc: $(cat "$T/fstab.err" 2>/dev/null)"
	[ "$(cat "$EXP/fs")" = via-fstab ] || fail "the fstab mount's file is not on the server"
	poll_gone_helper() { [ -z "$(helper_pid)" ]; }
	poll poll_gone_helper || fail "the fstab mount's daemon did not exit"
	echo "fstab: mount.fuse.nfsrdma and mount(8) from an fstab line mounted and unmounted over $PROTO"
}

case $PROTO:$TEST in
ganesha:fio | ganesha:stress) start_ganesha ;;
ganesha:*) fail "$TEST needs nfsrdmad: over ganesha only fio and stress" ;;
*) start_server ;;
esac
case $TEST in
stress) test_stress ;;
fstab) test_fstab ;;
outage) test_outage ;;
noalloc) test_noalloc ;;
fio) test_fio ;;
coreutils) test_coreutils ;;
users) test_users ;;
restart) test_restart ;;
jukebox) test_jukebox ;;
fiorestart) test_fiorestart ;;
cache) test_cache ;;
nonroot) test_nonroot ;;
*) fail "unknown test $TEST" ;;
esac
