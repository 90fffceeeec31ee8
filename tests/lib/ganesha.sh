# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# NFS-Ganesha as a peer for the shell tests and benchmarks that compare
# with it: tests/nfs3/interop/ganesha_interop.sh (FSAL_VFS),
# tests/ceph/ganesha_ceph.sh (FSAL_CEPH) and scripts/ganesha-bench.sh
# (FSAL_VFS); with nfsrdmad beside it, and the benchmark rows that
# compare the two. Sourced; the caller defines skip and fail (each prints
# and exits), and GANESHA_TMP, a directory of its own that it removes.
#
# Ganesha 4.3 exits when it cannot register with rpcbind, and binds its
# ports without SO_REUSEADDR. So: a running rpcbind is used, or (as root)
# one is started and stopped again; the ports are picked below the
# kernel's ephemeral range (32768 up), where no outgoing connection of
# anyone's can hold them, and unused by any socket now.

GANESHA_PID='' GANESHA_RPCBIND_PID='' GANESHA_NPORT='' GANESHA_MPORT=''

# pause: a tenth of a second (bounded waits poll with it)
ganesha_pause() {
	[ -p "$GANESHA_TMP/none" ] || mkfifo "$GANESHA_TMP/none"
	read -r -t 0.1 _ <>"$GANESHA_TMP/none" 2>/dev/null || true
}

# ganesha_need FSAL: skips unless ganesha.nfsd with that FSAL (VFS, CEPH),
# root and rpcinfo are here
ganesha_need() {
	command -v ganesha.nfsd >/dev/null 2>&1 ||
		skip "ganesha.nfsd not found (Debian package nfs-ganesha)"
	ls /usr/lib/*/ganesha/libfsal"${1,,}".so >/dev/null 2>&1 ||
		skip "no FSAL_$1 (Debian package nfs-ganesha-${1,,})"
	[ "$(id -u)" = 0 ] || skip "NFS-Ganesha needs root here"
	command -v rpcinfo >/dev/null 2>&1 || skip "rpcinfo not found (package rpcbind)"
}

# ganesha_rpcbind: a running rpcbind, or one started here; skips when
# another NFS server is registered (Ganesha would displace it)
ganesha_rpcbind() {
	if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
		command -v rpcbind >/dev/null 2>&1 || skip "no rpcbind running or installed"
		rpcbind -f &
		GANESHA_RPCBIND_PID=$!
		for _ in $(seq 50); do
			rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
			ganesha_pause # rpcbind has no readiness signal
		done
		rpcinfo -p 127.0.0.1 >/dev/null 2>&1 || skip "rpcbind did not start"
	fi
	if rpcinfo -p 127.0.0.1 2>/dev/null | awk '$1 == 100003' | grep -q .; then
		skip "an NFS server is registered with rpcbind already"
	fi
}

# ganesha_free_port: a port below the ephemeral range, unused now
ganesha_free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		ss -tan 2>/dev/null | grep -q ":$p " || {
			echo "$p"
			return
		}
	done
}

# ganesha_core NFS_PORT MNT_PORT: the NFS_CORE_PARAM block (NFSv3 over
# TCP on 127.0.0.1, no NLM, RQUOTA or UDP)
ganesha_core() {
	cat <<CONF
NFS_CORE_PARAM {
	NFS_Port = $1;
	MNT_Port = $2;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
	Protocols = 3;
	Bind_addr = 127.0.0.1;
	Mount_Path_Pseudo = true;
}
NFSV4 { Graceless = true; }
CONF
}

# ganesha_start CONF NFS_PORT: runs it (log in GANESHA_TMP/log) and waits
# for its NFS service to answer a NULL call
ganesha_start() {
	local probe=(rpcinfo -n "$2" -t 127.0.0.1 100003 3)
	ganesha.nfsd -F -f "$1" -L "$GANESHA_TMP/log" -p "$GANESHA_TMP/pid" \
		-N NIV_EVENT &
	GANESHA_PID=$!
	for _ in $(seq 300); do
		"${probe[@]}" >/dev/null 2>&1 && return 0
		kill -0 "$GANESHA_PID" 2>/dev/null || fail "NFS-Ganesha exited"
		ganesha_pause
	done
	fail "NFS-Ganesha did not start"
}

# ganesha_vfs DIR: Ganesha exporting DIR (its path also the pseudo path)
# through FSAL_VFS over NFSv3 and TCP, rpcbind found or started and ports
# picked (GANESHA_NPORT, GANESHA_MPORT), running once this returns
ganesha_vfs() {
	ganesha_rpcbind
	GANESHA_NPORT=$(ganesha_free_port)
	GANESHA_MPORT=$(ganesha_free_port)
	[ "$GANESHA_NPORT" != "$GANESHA_MPORT" ] || GANESHA_MPORT=$((GANESHA_NPORT + 1))
	{
		ganesha_core "$GANESHA_NPORT" "$GANESHA_MPORT"
		cat <<CONF
EXPORT {
	Export_Id = 1;
	Path = $1;
	Pseudo = $1;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3;
	Transports = TCP;
	SecType = sys;
	FSAL { Name = VFS; }
}
CONF
	} >"$GANESHA_TMP/ganesha.conf"
	ganesha_start "$GANESHA_TMP/ganesha.conf" "$GANESHA_NPORT"
}

# ganesha_log: the end of its log, for a failure's message
ganesha_log() {
	[ -f "$GANESHA_TMP/log" ] &&
		grep -v DBUS "$GANESHA_TMP/log" | tail -20 | sed 's/^/  ganesha: /'
}

# ganesha_stop: it, and the rpcbind started for it
ganesha_stop() {
	[ -n "$GANESHA_PID" ] && kill "$GANESHA_PID" 2>/dev/null && wait "$GANESHA_PID" 2>/dev/null
	[ -n "$GANESHA_RPCBIND_PID" ] && kill "$GANESHA_RPCBIND_PID" 2>/dev/null &&
		wait "$GANESHA_RPCBIND_PID" 2>/dev/null
	GANESHA_PID='' GANESHA_RPCBIND_PID=''
}

# ------------------------------------------------- nfsrdmad beside it

NFSRDMAD_PID='' NFSRDMAD_RDMA='' NFSRDMAD_TCP='' NFSRDMAD_MOUNT=''

# nfsrdmad_start NFSRDMAD ARG...: nfsrdmad on 127.0.0.1, every port
# ephemeral, NLM off (Ganesha's rpcbind entries stay: ours then fail,
# saying so, and the clients here name every port); its ports in
# NFSRDMAD_RDMA, _TCP and _MOUNT. A call stuck in its storage holds its
# exit 5 s at most (--stop-timeout).
nfsrdmad_start() {
	local bin=$1 out=$GANESHA_TMP/nfsrdmad.out
	shift
	"$bin" "$@" --address 127.0.0.1 --rdma-port 0 --tcp-port 0 \
		--mount-port 0 --nlm-port off --nsm-port off --stop-timeout 5 \
		>"$out" 2>"$GANESHA_TMP/nfsrdmad.err" &
	NFSRDMAD_PID=$!
	for _ in $(seq 300); do
		grep -q ready "$out" && break
		kill -0 "$NFSRDMAD_PID" 2>/dev/null || fail "nfsrdmad exited"
		ganesha_pause
	done
	grep -q ready "$out" || fail "nfsrdmad did not say ready"
	NFSRDMAD_RDMA=$(sed -n 's/.*over rdma on .*:\([0-9]*\)$/\1/p' "$out")
	NFSRDMAD_TCP=$(sed -n 's/.*nfs3 over tcp on .*:\([0-9]*\)$/\1/p' "$out")
	NFSRDMAD_MOUNT=$(sed -n 's/.*mount3 over tcp on .*:\([0-9]*\)$/\1/p' "$out")
	[ -n "$NFSRDMAD_RDMA" ] && [ -n "$NFSRDMAD_TCP" ] && [ -n "$NFSRDMAD_MOUNT" ] ||
		fail "no ports in nfsrdmad's banner"
}

# nfsrdmad_stop: SIGTERM; SIGKILL after 10 s, saying so
nfsrdmad_stop() {
	[ -n "$NFSRDMAD_PID" ] && kill "$NFSRDMAD_PID" 2>/dev/null || return 0
	for _ in $(seq 100); do
		kill -0 "$NFSRDMAD_PID" 2>/dev/null || break
		ganesha_pause
	done
	if kill -9 "$NFSRDMAD_PID" 2>/dev/null; then
		echo "nfsrdmad did not stop in 10 s of SIGTERM: killed"
	fi
	wait "$NFSRDMAD_PID" 2>/dev/null
	NFSRDMAD_PID=''
}

# ------------------------------------------------------ benchmark rows

# The caller sets BENCH_NFSRDMA (the client), BENCH_BASE (nfs://host/export),
# BENCH_SECONDS, and the URL queries BENCH_GQ (Ganesha, TCP), BENCH_TQ
# (nfsrdmad, TCP) and BENCH_RQ (nfsrdmad, RDMA); BENCH_LIMIT=1 to print
# the host's READ or WRITE limit under a row (a local directory only).

# bench_one QUERY FILE OP BS DEPTH [OPTION...]: the rate, MB/s or calls/s.
# A run over RDMA of this host also measures one thread's READ or WRITE
# limit (nfsrdma(1), row server): its rate is added to $GANESHA_TMP/limit.
bench_one() {
	local j key=MBps
	[ "$3" != randread ] || key=ops_per_s
	j=$("$BENCH_NFSRDMA" bench "$BENCH_BASE/$2$1" --op "$3" --bs "$4" \
		--depth "$5" --seconds "$BENCH_SECONDS" --json "${@:6}" \
		2>"$GANESHA_TMP/bench.err") ||
		fail "nfsrdma bench $3 $2: $(tail -2 "$GANESHA_TMP/bench.err")"
	jq -r --arg k "$key" '.baselines[] |
		select(.name | test("^server_(read|write)_limit$")) |
		.figures[$k]' \
		<<<"$j" >>"$GANESHA_TMP/limit"
	jq -r --arg k "$key" '.figures[$k]' <<<"$j"
}

# bench_header: the columns bench_row prints
bench_header() {
	printf '%-28s %10s %10s %7s %10s %7s\n' "" "ganesha" "ours tcp" "ratio" \
		"ours rdma" "ratio"
}

# median NUMBER...: the middle one (the lower middle of an even count)
median() {
	printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"
}

# bench_row OP BS DEPTH UNIT FILE [OPTION...]: Ganesha on FILE.g, nfsrdmad
# over TCP and over RDMA on FILE.n (the second of them writes over the
# first's); OPTIONs go to every nfsrdma bench, and into the row's name.
# BENCH_ROUNDS (default 1) rounds of the three, one after another, so
# that a slow spell of the machine falls on all three alike; each column
# is its median. Each round starts one later in the turn (Ganesha, TCP,
# RDMA; then TCP, RDMA, Ganesha; ...): on a cluster the run after a
# writer's pays for what that writer left the OSD to do, and no server
# should always be the one after Ganesha. With more than one round, the
# rounds' own figures follow the row.
bench_row() {
	local op=$1 bs=$2 depth=$3 unit=$4 file=$5 i k who g t r
	local extra=("${@:6}")
	local -A q=([g]=$BENCH_GQ [t]=$BENCH_TQ [r]=$BENCH_RQ)
	local -A f=([g]=$file.g [t]=$file.n [r]=$file.n) figs=() used=()
	local turn=(g t r) force=()
	: >"$GANESHA_TMP/limit"
	for ((i = 0; i < ${BENCH_ROUNDS:-1}; i++)); do
		for ((k = 0; k < 3; k++)); do
			who=${turn[(i + k) % 3]}
			# a write after the first on a file writes over it
			force=()
			[ -z "${used[${f[$who]}]:-}" ] || force=(--force)
			used[${f[$who]}]=1
			figs[$who]+="$(bench_one "${q[$who]}" "${f[$who]}" "$op" \
				"$bs" "$depth" "${force[@]}" "${extra[@]}") "
		done
	done
	# bench_one's fail ran in a subshell: what it said is the figure
	for i in ${figs[g]} ${figs[t]} ${figs[r]}; do
		[[ $i =~ ^[0-9.]+$ ]] || { printf '%s\n' "${figs[*]}"; exit 1; }
	done
	# shellcheck disable=SC2086 # one figure a word
	g=$(median ${figs[g]}) t=$(median ${figs[t]}) r=$(median ${figs[r]})
	printf '%-28s %10.0f %10.0f %6.2fx %10.0f %6.2fx  %s\n' \
		"$op $bs depth $depth${extra[*]:+ ${extra[*]}}" "$g" "$t" "$(echo "$t / $g" | bc -l)" \
		"$r" "$(echo "$r / $g" | bc -l)" "$unit"
	[ "${BENCH_ROUNDS:-1}" -le 1 ] ||
		printf '  rounds: ganesha %s| tcp %s| rdma %s\n' "${figs[g]}" \
			"${figs[t]}" "${figs[r]}"
	[ -z "${BENCH_LIMIT:-}" ] || bench_limit "$r" "$g" "$unit" "$op"
}

# bench_limit RDMA GANESHA UNIT OP: the median of the limits bench_one
# kept, if any, with what RDMA and 2x Ganesha are of it. Only for a local
# directory (BENCH_LIMIT set): those are the local backend's calls.
bench_limit() {
	local l
	[ -s "$GANESHA_TMP/limit" ] || return 0
	# shellcheck disable=SC2046 # one figure a word
	l=$(median $(cat "$GANESHA_TMP/limit"))
	case $4 in
	*write) printf '  this host, one thread serving WRITEs (receive on '
		printf 'loopback TCP, statx, pwritev, statx; no RPC): ' ;;
	*) printf '  this host, one thread serving READs (statx, preadv2, '
		printf 'send on loopback TCP; no RPC): ' ;;
	esac
	printf '%.0f %s;' "$l" "$3"
	printf ' ours rdma %.2fx of it, 2x ganesha %.2fx of it\n' \
		"$(echo "$1 / $l" | bc -l)" "$(echo "2 * $2 / $l" | bc -l)"
}
