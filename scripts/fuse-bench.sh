#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Issue 18's benchmark on this host: what FUSE costs. One nfsrdmad on a
# temporary directory; on the same file, in the same run:
#   - fio through `nfsrdma mount` over iwarp (1 MiB sequential read and
#     write, depth 16, libaio; 4 KiB random read, depth 16, O_DIRECT so
#     FUSE's page cache answers nothing);
#   - `nfsrdma bench` of the same operations over iwarp, the client
#     library without FUSE (goal: the mount at least 0.7x);
#   - libnfs's nfs-cp reading a whole 64 MiB file over TCP, the reader
#     the bench times as its "libnfs" baseline (the bench copies at most
#     64 MiB), against one pass of fio through the mount over the same
#     file (goal: the mount at least 1.5x). That pass reads as cp and dd
#     do, one 1 MiB read(2) after another (psync), as nfs-cp is one
#     sequential copy; the row after it is the same pass by libaio at
#     depth 16, which for a buffered file the kernel does not make
#     asynchronous and which ran at half the speed here; the next is the
#     psync pass again, as the first reads of a fresh mount (a cp right
#     after mounting);
#   - libnfs's nfs-cp of the whole file, and nfs-cat of it to /dev/null,
#     its leanest reader (one 1 MiB READ at a time, nothing written),
#     against one psync pass of fio through the mount over the whole file;
#   - the same fio runs through a FUSE file system that does nothing
#     (tests/fuse/null_fs.c, mounted as nfsrdma mount mounts): what FUSE
#     alone allows on this machine, the ceiling of any FUSE client.
# Figures and ratios, not assertions. Run it on a quiet machine, and more
# than once before believing a ratio.
#
#   scripts/fuse-bench.sh [-B BUILD] [-s SECONDS] [-m MIB] [-r ROUNDS]
#     -B  build tree with bin/nfsrdma and bin/nfsrdmad (default build)
#     -s  seconds per run (default 5); -m  file size in MiB (default 512)
#     -r  rounds of the single passes and of libnfs's readers, each a
#         fraction of a second (default 5): their medians are printed
# The file lives under $TMPDIR (default /tmp). Where the host takes page
# cache back on its own (a balloon), a tmpfs there keeps disk reads out.
# Exit: 0 when every run ran; 77 when something it needs is missing.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build SECS=5 MIB=512 ROUNDS=5
while getopts "B:s:m:r:h" o; do
	case $o in
	B) BUILD=$(cd "$OPTARG" && pwd) || exit 2 ;;
	s) SECS=$OPTARG ;;
	m) MIB=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	*) sed -n '4,37p' "$0"; exit 2 ;;
	esac
done
NFSRDMA=$BUILD/bin/nfsrdma NFSRDMAD=$BUILD/bin/nfsrdmad
skip() { echo "fuse-bench: SKIP: $*" >&2; exit 77; }
for b in "$NFSRDMA" "$NFSRDMAD"; do [ -x "$b" ] || skip "no $b (build first)"; done
for t in fio jq; do command -v $t >/dev/null || skip "$t not found"; done
[ -c /dev/fuse ] || skip "no /dev/fuse"
"$NFSRDMA" --help | grep -q '^  mount ' || skip "nfsrdma built without libfuse3"

T=$(mktemp -d "${TMPDIR:-/tmp}/rr-fuse-bench.XXXXXX")
SERVER=
NULLFS=$BUILD/tests/fuse/null_fs NULLPID=
cleanup() {
	grep -q " $T/mnt " /proc/self/mountinfo && umount -l "$T/mnt"
	grep -q " $T/null " /proc/self/mountinfo && umount -l "$T/null"
	[ -n "$NULLPID" ] && wait "$NULLPID" 2>/dev/null
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/exp" "$T/mnt" "$T/state" "$T/null"
head -c $((MIB << 20)) /dev/urandom >"$T/exp/data" || exit 1
head -c $((64 << 20)) /dev/urandom >"$T/exp/small" || exit 1

"$NFSRDMAD" --export "$T/exp" --state-dir "$T/state" --address 127.0.0.1 \
	--rdma-port 0 --tcp-port 0 --mount-port 0 >"$T/server.out" 2>&1 &
SERVER=$!
for _ in $(seq 200); do
	grep -q ready "$T/server.out" && break
	read -r -t 0.05 _ <>"$T/server.out" 2>/dev/null || true
done
port() { sed -n "s/.*$1 on .*:\\([0-9]*\\)\$/\\1/p" "$T/server.out"; }
R=$(port "over rdma") TP=$(port "nfs3 over tcp") M=$(port "mount3 over tcp")
[ -n "$R" ] && [ -n "$TP" ] && [ -n "$M" ] || { cat "$T/server.out"; exit 1; }
URL="nfs://127.0.0.1:$R$T/exp?mountport=$M&provider=iwarp"
FILE_URL="nfs://127.0.0.1:$R$T/exp/data?mountport=$M&provider=iwarp"

# bench OP BS [FILE]: nfsrdma bench's MBps, and its libnfs baseline's
bench() {
	"$NFSRDMA" bench "${FILE_URL/data/${3:-data}}" --op "$1" --bs "$2" --depth 16 \
		--seconds "$SECS" --tcp-nfsport "$TP" --force --json 2>/dev/null |
		jq -r '[.figures.MBps, (.baselines[] | select(.name == "libnfs") |
			.figures.MBps) // null] | map(tostring) | join(" ")'
}

# fio_mount NAME RW BS DIRECT [FILE [ENGINE]]: fio's MB/s through the
# mount, by libaio at depth 16 unless ENGINE is psync; with FILE, one
# pass over it rather than SECS seconds
fio_mount() {
	local how=(--size=$((MIB << 20)) --time_based --runtime="$SECS")
	local eng=(--ioengine=libaio --iodepth=16)
	[ -n "${5:-}" ] && how=(--size="$(stat -c %s "$T/exp/$5")")
	[ "${6:-}" = psync ] && eng=(--ioengine=psync)
	fio --name="$1" --filename="${MNT:-$T/mnt}/${5:-data}" --rw="$2" --bs="$3" \
		--direct="$4" "${eng[@]}" --invalidate=1 \
		"${how[@]}" \
		--output-format=json 2>/dev/null |
		jq -r "(.jobs[0].read.bw_bytes + .jobs[0].write.bw_bytes) / 1e6"
}

# libnfs TOOL FILE: MB/s of libnfs's TOOL (nfs-cat: to /dev/null; nfs-cp:
# into a new file in memory, as nfsrdma bench's copy) reading the whole
# file over TCP, its start and MOUNT included, or n/a
libnfs() {
	local t0 t1 rc u="nfs://127.0.0.1$T/exp/$2?nfsport=$TP&mountport=$M"
	local copy=$T/copy

	[ -w /dev/shm ] && copy=/dev/shm/rr-fuse-bench-copy.$$

	command -v "$1" >/dev/null || { echo n/a; return; }
	t0=$(date +%s%N)
	if [ "$1" = nfs-cp ]; then
		nfs-cp "$u" "$copy" >/dev/null 2>&1
	else
		"$1" "$u" >/dev/null 2>&1
	fi
	rc=$?
	t1=$(date +%s%N)
	rm -f "$copy"
	[ $rc = 0 ] || { echo n/a; return; }
	awk -v b="$(stat -c %s "$T/exp/$2")" -v ns=$((t1 - t0)) \
		'BEGIN { printf "%.1f", b / ns * 1e3 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "n/a" }'; }

"$NFSRDMA" mount "$URL" "$T/mnt" || exit 1
if [ -x "$NULLFS" ]; then
	"$NULLFS" "$T/null" "$MIB" 2>"$T/null.err" &
	NULLPID=$!
	for _ in $(seq 100); do
		grep -q " $T/null " /proc/self/mountinfo && break
		read -r -t 0.05 _ <>"$T/null.err" 2>/dev/null || true
	done
	grep -q " $T/null " /proc/self/mountinfo || { cat "$T/null.err"; exit 1; }
fi
echo "fuse-bench: ${MIB} MiB file, ${SECS} s a run, nfsrdmad over iwarp on 127.0.0.1"
echo "null: the same fio through a FUSE file system that does nothing (FUSE alone)"
echo "bound: null / (null + bench), the mount's ratio to bench if FUSE's work and the"
echo "  NFS client's each keep this host's $(nproc) CPUs busy and the two add up"
printf '%-28s %10s %10s %6s %10s %6s %10s %6s\n' run mount_MBps bench_MBps ratio \
	null_MBps bound libnfs_MBps ratio
# show NAME MOUNT BENCH NULL LIBNFS: a row of figures and their ratios
# (NULL or LIBNFS n/a where there is none)
show() {
	local rn=n/a
	[ "$4" = n/a ] ||
		rn=$(awk -v n="$4" -v b="$3" 'BEGIN { printf "%.2f", n / (n + b) }')
	printf '%-28s %10.1f %10.1f %6s %10s %6s %10s %6s\n' "$1" "$2" "$3" \
		"$(ratio "$2" "$3")" "$4" "$rn" "$5" "$(ratio "$2" "$5")"
}
# nullfs FIO_ARGS...: fio's MB/s through the null file system, or n/a
nullfs() {
	[ -n "$NULLPID" ] || { echo n/a; return; }
	printf '%.1f' "$(MNT=$T/null fio_mount "$@")"
}
# row NAME BENCH FIO_ARGS...: fio through the mount and the null file
# system, against nfsrdma bench's figure
row() {
	local name=$1 b=$2
	shift 2
	show "$name" "$(fio_mount "$@")" "$b" "$(nullfs "$@")" n/a
}
# bound TEXT NULL BENCH LIBNFS: the ratio to libnfs the mount could reach
# if FUSE's work and the client's add up
bound() {
	[ "$2" = n/a ] || awk -v t="$1" -v n="$2" -v b="$3" -v l="$4" 'BEGIN {
		if (l ~ /^[0-9.]+$/ && l > 0)
			printf "  %s: 1 / (1/null + 1/bench) / libnfs = %.2f\n",
				t, 1 / (1 / n + 1 / b) / l }'
}
median() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }
read -r b _ < <(bench read 1M)
BENCH_1M=$b
row "1 MiB sequential read" "$b" seqread read 1M 0

# Against libnfs: one pass over 64 MiB each with libnfs's copy of it, then
# one over the whole file with nfs-cp's and nfs-cat's of it, a fraction of
# a second apiece here, so ROUNDS rounds of every pass and the medians; a
# round's passes run one after another, so a slow spell of the machine
# falls on all of them alike. The last pass is a cp right after mounting:
# the mount's READ buffers untouched.
declare -A MNT_F=() NUL_F=()
BS=() LIBS=() PER=() CAT=() CP=()
for ((i = 0; i < ROUNDS; i++)); do
	read -r b lib < <(bench read 1M small)
	BS+=("$b") LIBS+=("$lib")
	m=$(fio_mount once read 1M 0 small psync)
	MNT_F[once]+="$m " PER+=("$(ratio "$m" "$lib")")
	NUL_F[once]+="$(nullfs once read 1M 0 small psync) "
	MNT_F[once16]+="$(fio_mount once16 read 1M 0 small) "
	NUL_F[once16]+="$(nullfs once16 read 1M 0 small) "
	MNT_F[whole]+="$(fio_mount whole read 1M 0 data psync) "
	NUL_F[whole]+="$(nullfs whole read 1M 0 data psync) "
	CAT+=("$(libnfs nfs-cat data)") CP+=("$(libnfs nfs-cp data)")
	"$NFSRDMA" umount "$T/mnt" && "$NFSRDMA" mount "$URL" "$T/mnt" || exit 1
	MNT_F[first]+="$(fio_mount first read 1M 0 small psync) "
	NUL_F[first]+="$(nullfs first read 1M 0 small psync) "
done
b=$(median "${BS[@]}") lib=$(median "${LIBS[@]}")
# shellcheck disable=SC2086 # one figure a word
{
	show "1 MiB read, 64 MiB once" "$(median ${MNT_F[once]})" "$b" "$(median ${NUL_F[once]})" "$lib"
	show "  the same, libaio depth 16" "$(median ${MNT_F[once16]})" "$b" "$(median ${NUL_F[once16]})" "$lib"
	show "  the same, first after mount" "$(median ${MNT_F[first]})" "$b" "$(median ${NUL_F[first]})" "$lib"
}
[ "$ROUNDS" -le 1 ] || echo "  medians of $ROUNDS rounds; the first row's mount/libnfs by round: ${PER[*]}"
# shellcheck disable=SC2086 # one figure a word
bound "the first row's bound against libnfs" "$(median ${NUL_F[once]})" "$b" "$lib"
# shellcheck disable=SC2086 # one figure a word
{
	n=$(median ${NUL_F[whole]}) c=$(median "${CAT[@]}") p=$(median "${CP[@]}")
	w=$(median ${MNT_F[whole]})
	show "1 MiB read, ${MIB} MiB once" "$w" "$BENCH_1M" "$n" "$p"
	show "  the same against nfs-cat" "$w" "$BENCH_1M" "$n" "$c"
}
echo "  libnfs: nfs-cp of the 64 MiB file (nfsrdma bench's baseline) in the three"
echo "  rows above; of the whole file, into a file, then nfs-cat of it to /dev/null"
bound "the last two rows' bounds against libnfs" "$n" "$BENCH_1M" "$p"
bound "  and against nfs-cat" "$n" "$BENCH_1M" "$c"
read -r b _ < <(bench write 1M)
row "1 MiB sequential write" "$b" seqwrite write 1M 0
read -r b _ < <(bench randread 4K)
row "4 KiB random read (direct)" "$b" randread randread 4k 1
echo "goals: mount/bench >= 0.7; 1 MiB read mount/libnfs >= 1.5"
"$NFSRDMA" umount "$T/mnt"
[ -n "$NULLPID" ] && fusermount3 -u "$T/null"
