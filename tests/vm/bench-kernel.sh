#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: bench-kernel.sh NFSRDMA NFSRDMAD DEVICE PROVIDER [client|server|fuse|all]
# In an rr-vm.sh guest, the issue's benchmark against the Linux kernel:
#   client: our nfsrdma bench (provider PROVIDER) against the kernel's nfsd
#           (RDMA listener on DEVICE) versus the kernel's NFS client, with
#           fio (libaio, O_DIRECT), against the same nfsd;
#   server: the kernel's client against nfsrdmad (PROVIDER) versus against
#           the kernel's nfsd;
#   fuse:   the same fio jobs through our FUSE mount (nfsrdma mount,
#           PROVIDER) versus through the kernel's client, both of the
#           kernel's nfsd (not part of all: run it by name); with
#           RR_NULLFS (tests/fuse/null_fs), also fio through FUSE alone
#           and nfsrdma bench of the same nfsd, and the bound they leave.
#   fuse-ab: two builds' FUSE mounts of the same nfsd (NFSRDMA, and
#           RR_NFSRDMA_B's) and the kernel's client, the three taking turns
#           in an order that rotates each round: whether a change to the
#           mount helps, judged in one guest (not part of all).
# Workloads: 1 MiB sequential read and write, 4 KiB random read at depth 16,
# over a file of RR_BENCH_MIB (64) MiB, RR_BENCH_SECONDS (8) each, and
# RR_BENCH_ROUNDS (2) rounds of each pair, in the order AB BA AB ...: the
# guest's speed drifts under TCG, and the side that always ran first would
# be favoured or penalised by the drift. Before them each side runs once
# for RR_BENCH_WARMUP (2) seconds, not counted: under TCG the first run of
# a code path pays for its translation. Prints each side's mean and the
# ratios (goals: client >= 1.0x, server >= 0.8x).
# Figures, not assertions: it fails only when a run fails. Under TCG the
# absolute numbers mean little, the ratios more, all of it noisy.
# Both servers export tmpfs and run at once on their own ports; the runs
# are one after another, ours and theirs alternating per workload.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
CLI=${1:?nfsrdma binary} DAEMON=${2:?nfsrdmad binary}
DEV=${3:?device (rxe0, siw0)} PROV=${4:?provider (verbs, iwarp)}
MODE=${5:-all}
SECS=${RR_BENCH_SECONDS:-8} MIB=${RR_BENCH_MIB:-64} ROUNDS=${RR_BENCH_ROUNDS:-2}
WARMUP=${RR_BENCH_WARMUP:-2} RUN_SECS=$SECS
KEXP=/srv/rr-bench-knfsd KPORT=20049 KMPORT=20048
DEXP=/srv/rr-bench-nfsrdmad DPORT=20051 DMPORT=20052
MNT=/mnt/rr-bench
W=$(mktemp -d /run/rr-bench.XXXXXX)
DPID=

case $MODE in client | server | fuse | fuse-ab | all) ;; *) fail "mode: client|server|fuse|fuse-ab|all" ;; esac

# name, nfsrdma bench op, fio rw, block size, depth
WORKLOADS=(
	"seqread  read     read     1M 16"
	"seqwrite write    write    1M 16"
	"randread randread randread 4K 16"
)

finish() {
	local rc=$?
	if [ $rc != 0 ]; then
		echo "=== last output"
		tail -n 20 "$W/run.out" 2>/dev/null
		[ -n "$DPID" ] && tail -n 20 "$W/nfsrdmad.log"
	fi
	local m
	for m in "$MNT"-*; do
		mountpoint -q "$m" && { timeout 30 umount -f "$m" || umount -l "$m"; }
	done
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	exit $rc
}
trap finish EXIT

# A data file both clients read, and one each overwrites, so that writes
# never extend a file for one side and overwrite for the other.
data_files() {
	local d=$1
	head -c "${MIB}M" /dev/urandom >"$d/data" || fail "fill $d/data"
	cp "$d/data" "$d/w-ours" && cp "$d/data" "$d/w-kernel" ||
		fail "copies in $d"
	# fuse-ab's second mount writes its own; nfsrdmad's tmpfs has no room
	if [ "$MODE" = fuse-ab ]; then
		cp "$d/data" "$d/w-ours-b" || fail "copies in $d"
	fi
}

# knfsd's largest READ/WRITE defaults to a fraction of RAM (256 KiB in a
# 1 GiB guest); both servers get 1 MiB, so 1 MiB calls are single calls
# to either. It can only be set while nfsd is down, before knfsd-rdma.sh.
start_knfsd() {
	modprobe nfsd || fail "modprobe nfsd"
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		fail "mount /proc/fs/nfsd"
	echo 1048576 >/proc/fs/nfsd/max_block_size ||
		fail "knfsd max_block_size 1 MiB"
	"$HERE/knfsd-rdma.sh" "$DEV" "$KEXP" $KPORT $KMPORT >"$W/run.out" 2>&1 ||
		fail "knfsd: $(cat "$W/run.out")"
	data_files "$KEXP"
	ok "knfsd on $DEV: rdma $KPORT, mountd $KMPORT, ${MIB} MiB files"
}

start_nfsrdmad() {
	mkdir -p "$DEXP" && mount -t tmpfs -o size=256m tmpfs "$DEXP" ||
		fail "tmpfs on $DEXP"
	"$DAEMON" --export "$DEXP" --provider "$PROV" --rdma-port $DPORT \
		--tcp-port off --mount-port $DMPORT --state-dir "$W/state" \
		>"$W/nfsrdmad.log" 2>&1 &
	DPID=$!
	await_line "$W/nfsrdmad.log" "ready" $DPID 30 ||
		fail "nfsrdmad did not get ready: $(tail -5 "$W/nfsrdmad.log")"
	data_files "$DEXP"
	ok "nfsrdmad ($PROV): rdma $DPORT, mount $DMPORT/tcp"
}

# kmount NAME EXPORT PORT MOUNTPORT: the kernel client on $MNT-NAME.
kmount() {
	local m=$MNT-$1
	mkdir -p "$m"
	timeout 60 mount -t nfs -o "vers=3,proto=rdma,port=$3,mountport=$4,mountproto=tcp,nolock,soft,timeo=600,retrans=2" \
		"$ADDR:$2" "$m" || fail "mount -o proto=rdma $ADDR:$2"
	ok "kernel client: $ADDR:$2 on $m," \
		"$(awk -v m="$m" '$2 == m {print $4}' /proc/mounts |
			tr ',' '\n' | grep -E '^(rsize|wsize)=' | tr '\n' ' ')"
}

# Each run prints "MBps IOPS" from its operation count and duration (the
# tools' own rounded rates are too coarse at TCG speeds), or fails.
# MB = 10^6 bytes, as nfsrdma bench counts.
figures() { # ops seconds bytes-per-op
	awk -v n="$1" -v s="$2" -v b="$3" \
		'BEGIN { if (s > 0) printf "%.2f %.1f\n", n * b / s / 1e6, n / s; else exit 1 }'
}

bytes_of() { case $1 in *K) echo $((${1%K} * 1024)) ;; *M) echo $((${1%M} << 20)) ;; *) echo "$1" ;; esac; }

ours() { # url op bs depth
	local ops secs
	# --force: w-ours is the copy made for this bench to overwrite
	timeout $((RUN_SECS + 60)) "$CLI" bench "$1" --op "$2" --bs "$3" \
		--depth "$4" --seconds "$RUN_SECS" --json --no-baseline --force \
		>"$W/run.out" 2>&1 || return 1
	# The report is the line that starts a JSON object (README.md,
	# "Benchmark JSON"); nfsrdma's notes on stderr may surround it.
	read -r ops secs < <(grep -m1 '^{' "$W/run.out" |
		jq -r '.figures | select(.ops != null) | "\(.ops) \(.elapsed_s)"')
	[ -n "$secs" ] && figures "$ops" "$secs" "$(bytes_of "$3")"
}

# fio's terse line: KiB moved and runtime in ms at fields 6 and 9 for
# reads, 47 and 50 for writes.
kernel() { # file rw bs depth
	local w=0 kib ms
	[ "$2" = write ] && w=41
	timeout $((RUN_SECS + 60)) fio --name=bench --filename="$1" --rw="$2" \
		--bs="$3" --iodepth="$4" --ioengine=libaio --direct=1 \
		--size="${MIB}M" --time_based --runtime="$RUN_SECS" --minimal \
		>"$W/run.out" 2>&1 || return 1
	read -r kib ms < <(awk -F';' -v w=$w 'NF > 50 { print $(6 + w), $(9 + w) }' "$W/run.out")
	[ -n "$ms" ] && [ "$ms" -gt 0 ] || return 1
	figures $((kib * 1024 / $(bytes_of "$3"))) "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')" "$(bytes_of "$3")"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

row_head() {
	printf '%-9s %4s %3s | %13s %8s | %13s %8s | %6s\n' workload bs qd \
		"$1 MB/s" IOPS "$2 MB/s" IOPS ratio
}

# row NAME BS QD A B: A and B are "MBps IOPS" or empty for a failed run.
row() {
	local a=${4:-- -} b=${5:-- -}
	local r=failed
	[ -n "$4" ] && [ -n "$5" ] && r=$(ratio "${a%% *}" "${b%% *}")
	# shellcheck disable=SC2086 # a and b are two columns each
	printf '%-9s %4s %3s | %13s %8s | %13s %8s | %6s\n' "$1" "$2" "$3" \
		$a $b "$r"
}

# measure FN ARGS...: FN's figures, or nothing and why on stderr.
measure() {
	local out
	if out=$("$@"); then
		echo "$out"
	else
		echo "run failed: $*" >&2
		tail -n 5 "$W/run.out" >&2
	fi
}

# The mean of "MBps IOPS" lines; nothing if a run failed (an empty line).
mean() {
	awk 'NF != 2 { bad = 1 } NF == 2 { m += $1; i += $2; n++ }
	     END { if (!bad && n) printf "%.2f %.1f\n", m / n, i / n }'
}

# alternate: runs the commands in A_CMD and B_CMD once each to warm up, then
# ROUNDS times each, in the order AB BA AB ...; sets RA and RB to their
# means (empty: a run failed).
alternate() {
	local i ra="" rb=""
	if ((WARMUP > 0)); then
		RUN_SECS=$WARMUP
		measure "${A_CMD[@]}" >/dev/null
		measure "${B_CMD[@]}" >/dev/null
	fi
	RUN_SECS=$SECS
	for ((i = 0; i < ROUNDS; i++)); do
		if ((i % 2)); then
			rb+=$(measure "${B_CMD[@]}")$'\n'
			ra+=$(measure "${A_CMD[@]}")$'\n'
		else
			ra+=$(measure "${A_CMD[@]}")$'\n'
			rb+=$(measure "${B_CMD[@]}")$'\n'
		fi
	done
	RA=$(printf '%s' "$ra" | mean)
	RB=$(printf '%s' "$rb" | mean)
}

# table A B RATIO_LINE: a row per workload, its two commands set by
# a_cmd and b_cmd (OP RW BS QD; the caller defines a_cmd), alternated
table() {
	local name op rw bs qd
	{
		row_head "$1" "$2"
		while read -r name op rw bs qd; do
			a_cmd "$op" "$rw" "$bs" "$qd"
			b_cmd "$op" "$rw" "$bs" "$qd"
			alternate
			row "$name" "$bs" "$qd" "$RA" "$RB"
		done < <(printf '%s\n' "${WORKLOADS[@]}")
		echo "$3"
	} | tee -a "$W/tables"
}

# The other side of every table: fio through the kernel client of knfsd.
b_cmd() { B_CMD=(kernel "$MNT-knfsd/$(wfile "$1" w-kernel)" "$2" "$3" "$4"); }

client_bench() {
	step "client: nfsrdma ($PROV) vs the kernel client, both against" \
		"knfsd on $DEV, $SECS s each, $ROUNDS rounds"
	kmount knfsd "$KEXP" $KPORT $KMPORT
	a_cmd() { A_CMD=(ours "nfs://$ADDR$KEXP/$(wfile "$1" w-ours)?mountport=$KMPORT&provider=$PROV" "$1" "$3" "$4"); }
	table ours kernel "ratio = ours / kernel client, MB/s (goal >= 1.0)"
}

server_bench() {
	step "server: the kernel client against nfsrdmad ($PROV) vs knfsd," \
		"on $DEV, $SECS s each, $ROUNDS rounds"
	mountpoint -q "$MNT-knfsd" || kmount knfsd "$KEXP" $KPORT $KMPORT
	kmount nfsrdmad "$DEXP" $DPORT $DMPORT
	a_cmd() { A_CMD=(kernel "$MNT-nfsrdmad/$(wfile "$1" w-kernel)" "$2" "$3" "$4"); }
	table nfsrdmad knfsd \
		"ratio = nfsrdmad / knfsd, MB/s, same kernel client (goal >= 0.8)"
}

# fmount [SUFFIX]: our FUSE mount ($CLI) of knfsd on $MNT-fuse[SUFFIX],
# in the background.
fmount() {
	local m=$MNT-fuse${1:-}
	modprobe fuse || fail "modprobe fuse"
	mkdir -p "$m"
	"$CLI" mount "nfs://$ADDR:$KPORT$KEXP?mountport=$KMPORT&provider=$PROV" \
		"$m" 2>"$W/fuse.err" || fail "nfsrdma mount: $(cat "$W/fuse.err")"
	ok "our FUSE mount ($PROV): $ADDR:$KEXP on $m"
}

# nmount: RR_NULLFS (tests/fuse/null_fs), FUSE that does nothing, on
# $MNT-null, in the background; its "data" takes reads and writes alike.
nmount() {
	local m=$MNT-null i
	mkdir -p "$m"
	"$RR_NULLFS" "$m" "$MIB" 2>"$W/null.err" &
	for ((i = 0; i < 100; i++)); do
		mountpoint -q "$m" && break
		sleep 0.1
	done
	mountpoint -q "$m" || fail "null_fs: $(cat "$W/null.err")"
	ok "null_fs (FUSE alone) on $m"
}

# frow NAME BS QD FUSE KERNEL [NULL OURS]: MB/s of each; bound: what the
# mount could reach against the kernel client if FUSE's work (null_fs)
# and our client's (nfsrdma bench) add up on the guest's CPUs.
frow() {
	local f=${4%% *} k=${5%% *} n=${6%% *} o=${7%% *}
	printf '%-9s %4s %3s | %9s %9s %6s | %9s %9s %6s\n' "$1" "$2" "$3" \
		"${f:--}" "${k:--}" "$(ratio "${f:-0}" "${k:-0}")" "${n:--}" "${o:--}" \
		"$(awk -v n="${n:-0}" -v o="${o:-0}" -v k="${k:-0}" 'BEGIN {
			if (n > 0 && o > 0 && k > 0) printf "%.2f", 1 / (1 / n + 1 / o) / k
			else print "-" }')"
}

fuse_bench() {
	local name op rw bs qd rf rk rn ro
	step "fuse: fio through our FUSE mount ($PROV) vs the kernel client," \
		"both of knfsd on $DEV, $SECS s each, $ROUNDS rounds"
	mountpoint -q "$MNT-knfsd" || kmount knfsd "$KEXP" $KPORT $KMPORT
	fmount
	[ -x "${RR_NULLFS:-}" ] && nmount
	{
		printf '%-9s %4s %3s | %9s %9s %6s | %9s %9s %6s\n' workload bs qd \
			fuse kernel ratio null ours bound
		while read -r name op rw bs qd; do
			A_CMD=(kernel "$MNT-fuse/$(wfile "$op" w-ours)" "$rw" "$bs" "$qd")
			B_CMD=(kernel "$MNT-knfsd/$(wfile "$op" w-kernel)" "$rw" "$bs" "$qd")
			alternate
			rf=$RA rk=$RB rn='' ro=''
			if mountpoint -q "$MNT-null"; then
				A_CMD=(kernel "$MNT-null/data" "$rw" "$bs" "$qd")
				B_CMD=(ours "nfs://$ADDR$KEXP/$(wfile "$op" w-ours)?mountport=$KMPORT&provider=$PROV" "$op" "$bs" "$qd")
				alternate
				rn=$RA ro=$RB
			fi
			frow "$name" "$bs" "$qd" "$rf" "$rk" "$rn" "$ro"
		done < <(printf '%s\n' "${WORKLOADS[@]}")
		echo "ratio = FUSE mount / kernel client, MB/s (goal >= 0.8); null:"
		echo "  FUSE alone (null_fs); ours: nfsrdma bench of knfsd, no FUSE;"
		echo "  bound = 1 / (1/null + 1/ours) / kernel, the ratio if the two add up"
	} | tee -a "$W/tables"
}

# The median of the numbers on stdin, one a line ("-" when none).
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (!NR) print "-"
		else if (NR % 2) print v[(NR + 1) / 2]
		else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ab_round OP RW BS QD ROUND: one run of each side, in an order that rotates
# with ROUND; prints "A B K" MB/s ("-" for a failed run).
ab_round() {
	local rw=$2 bs=$3 qd=$4 i=$5 side f out k=- a=- b=-
	for side in $(case $((i % 3)) in 0) echo k a b ;; 1) echo a b k ;;
		*) echo b k a ;; esac); do
		case $side in
		k) f=$MNT-knfsd/$(wfile "$1" w-kernel) ;;
		a) f=$MNT-fuse/$(wfile "$1" w-ours) ;;
		b) f=$MNT-fuseb/$(wfile "$1" w-ours-b) ;;
		esac
		out=$(measure kernel "$f" "$rw" "$bs" "$qd")
		eval "$side=\${out%% *}"
		[ -n "${!side}" ] || eval "$side=-"
	done
	echo "$a $b $k"
}

# fuse-ab: mount A is $CLI, mount B is $RR_NFSRDMA_B, both of knfsd.
fuse_ab_bench() {
	local name op rw bs qd i line a b k r
	[ -x "${RR_NFSRDMA_B:-}" ] || fail "fuse-ab: RR_NFSRDMA_B names no program"
	step "fuse-ab: two FUSE mounts ($PROV) and the kernel client, all of" \
		"knfsd on $DEV, $SECS s each, $ROUNDS rounds, the order rotating"
	mountpoint -q "$MNT-knfsd" || kmount knfsd "$KEXP" $KPORT $KMPORT
	fmount
	CLI=$RR_NFSRDMA_B fmount b
	{
		printf '%-9s %4s %3s | %8s %8s %8s | %5s %5s %5s %6s\n' workload bs qd \
			A B kernel A/k B/k B/A "B won"
		while read -r name op rw bs qd; do
			RUN_SECS=$WARMUP
			((WARMUP > 0)) && ab_round "$op" "$rw" "$bs" "$qd" 0 >/dev/null
			RUN_SECS=$SECS
			: >"$W/ab"
			for ((i = 0; i < ROUNDS; i++)); do
				ab_round "$op" "$rw" "$bs" "$qd" "$i" >>"$W/ab"
			done
			a=$(awk '$1 != "-" { print $1 }' "$W/ab" | median)
			b=$(awk '$2 != "-" { print $2 }' "$W/ab" | median)
			k=$(awk '$3 != "-" { print $3 }' "$W/ab" | median)
			r=()
			# shellcheck disable=SC2016 # awk expressions, not ours
			for line in '$1 / $3' '$2 / $3' '$2 / $1'; do
				r+=("$(awk "\$1 != \"-\" && \$2 != \"-\" && \$3 != \"-\" { print $line }" "$W/ab" | median)")
			done
			printf '%-9s %4s %3s | %8s %8s %8s | %5.2f %5.2f %5.2f %6s\n' \
				"$name" "$bs" "$qd" "$a" "$b" "$k" "${r[0]/-/0}" "${r[1]/-/0}" \
				"${r[2]/-/0}" "$(awk '$1 != "-" && $2 != "-" { n++; w += $2 > $1 }
					END { printf "%d/%d", w, n }' "$W/ab")"
			grep -q -- - "$W/ab" && echo "$name: some runs failed"
		done < <(printf '%s\n' "${WORKLOADS[@]}")
		echo "MB/s, medians of $ROUNDS rounds; A: $CLI, B: $RR_NFSRDMA_B;"
		echo "  ratios: medians of each round's; B won: rounds B beat A"
	} | tee -a "$W/tables"
}

# Reads use the shared data file; writes each side's own copy.
wfile() { case $1 in *write) echo "$2" ;; *) echo data ;; esac; }

modprobe rpcrdma && modprobe nfs && modprobe nfsv3 || fail "modprobe nfs"
start_knfsd
case $MODE in
fuse) fuse_bench ;;
fuse-ab) fuse_ab_bench ;;
*)
	[ "$MODE" = client ] || start_nfsrdmad
	[ "$MODE" = server ] || client_bench
	[ "$MODE" = client ] || server_bench
	;;
esac
echo
echo "=== bench-kernel: $DEV, provider $PROV, ${MIB} MiB files, $SECS s per run, $ROUNDS rounds"
cat "$W/tables"
# The tables are built in pipelines' subshells: failures are read back
# from them, not from a variable.
if grep -q ' failed$' "$W/tables"; then
	echo "bench-kernel: some runs failed"
	exit 1
fi
echo "bench-kernel: ok"
