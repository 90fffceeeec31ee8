#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# usage: kclient-shapes.sh NFSRDMAD DEVICE [PROVIDER]
# In an rr-vm.sh guest: the Linux kernel's NFSv3 client mounts, with
# vers=3,proto=rdma,hard, first the kernel's own nfsd over RDMA on DEVICE
# (the reference, knfsd-rdma.sh) and then our nfsrdmad (provider PROVIDER,
# iwarp by default), and on each runs the same checks, the shapes a
# file-system tester uses:
#  - O_DIRECT writes and reads of every size from 1 byte to 3x the inline
#    size (4096) in steps, every 64 bytes from 3000 to 4600, byte-compared
#    through the mount and in the export;
#  - SYMLINK and READLINK with targets of 1 to 4095 bytes in steps, every
#    length from 3500 to 4095, compared through the mount and in the export;
#  - atime and mtime set on a symlink (touch -h) and read back (stat);
#  - a directory tree whose path is longer than 3x PATH_MAX, made, listed,
#    written, read and removed through the mount;
#  - the client's counters (mountstats, xprt: rdma): no bad replies and no
#    reconnects while the checks ran.
# Each check prints its result; the script fails when nfsrdmad fails a
# check the kernel's nfsd passes (what the kernel's nfsd fails is printed,
# and not held against nfsrdmad). Each operation is bounded (timeout -s
# KILL): on a hard mount a server that never answers would hang it. Each
# kind of check runs in one perl process: a few processes per size or
# length take minutes under TCG, and a shell's cd past PATH_MAX searches
# every parent directory for its own name.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$HERE/guest-lib.sh"
DAEMON=${1:?nfsrdmad binary} DEV=${2:?RDMA device} PROV=${3:-iwarp}
KEXP=/srv/rr-knfsd REXP=/srv/rr-nfsrdmad MNT=/mnt/rr-shapes
KPORT=20049 KMPORT=20048 RPORT=20051 RMPORT=20050
W=$(mktemp -d /run/rr-shapes.XXXXXX)
DPID=
OPT=30 # seconds any one operation may take
INLINE=4096
NAME_LEN=200 DEPTH=64 # 64 levels of 201 bytes: 12864 > 3 x 4096

finish() {
	local rc=$?
	if [ $rc != 0 ] && [ -f "$W/nfsrdmad.log" ]; then
		echo "=== nfsrdmad log (tail)"
		tail -n 30 "$W/nfsrdmad.log"
	fi
	mountpoint -q "$MNT" && timeout -s KILL 30 umount -f "$MNT"
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	exit $rc
}
trap finish EXIT

# --- results: one line "CHECK pass|fail" per check, per server

SRV= # the server the checks run against: knfsd or nfsrdmad
result() {
	local check=$1 st=$2
	shift 2
	echo "$check $st" >>"$W/results.$SRV"
	if [ "$st" = pass ]; then
		[ "${QUIET:-0}" = 1 ] || echo "pass: $SRV $check"
	else
		echo "FAIL: $SRV $check${*:+: $*}"
	fi
}

# --- servers

start_knfsd() {
	"$HERE/knfsd-rdma.sh" "$DEV" "$KEXP" $KPORT $KMPORT ||
		fail "the kernel's nfsd did not start"
}

start_nfsrdmad() {
	mkdir -p "$REXP" && mount -t tmpfs -o size=256m tmpfs "$REXP" ||
		fail "tmpfs on $REXP"
	"$DAEMON" --export "$REXP" --provider "$PROV" --rdma-port $RPORT \
		--tcp-port off --mount-port $RMPORT --state-dir "$W/state" \
		>"$W/nfsrdmad.log" 2>&1 &
	DPID=$!
	await_line "$W/nfsrdmad.log" "ready" $DPID 30 ||
		fail "nfsrdmad did not get ready"
	ok "nfsrdmad ($PROV) serves $REXP on rdma $RPORT, mount $RMPORT/tcp"
}

stop_nfsrdmad() {
	kill -TERM "$DPID" && wait "$DPID"
	echo "nfsrdmad exit status $?: $(grep 'nfs calls' "$W/nfsrdmad.log")"
	DPID=
}

kmount() {
	local exp=$1 port=$2 mport=$3
	mkdir -p "$MNT"
	timeout -s KILL 60 mount -t nfs -o "vers=3,proto=rdma,hard,port=$port,mountport=$mport,mountproto=tcp,nolock" \
		"$ADDR:$exp" "$MNT" || fail "mount -o proto=rdma of $ADDR:$exp"
	xprt >/dev/null || fail "the mount's transport is not rdma"
	ok "kernel client mounted $ADDR:$exp over rdma ($SRV)"
}

kumount() {
	timeout -s KILL 60 umount "$MNT" || timeout -s KILL 30 umount -f "$MNT" ||
		fail "umount $MNT"
}

# The mount's "xprt: rdma" line, fields after "rdma" (see
# kclient-nfsrdmad.sh): 3 connect count, 20 bad replies.
xprt() {
	grep -A30 "mounted on $MNT " /proc/self/mountstats |
		awk '$1 == "xprt:" && $2 == "rdma" {$1 = $2 = ""; print; f = 1; exit}
			END {exit !f}'
}

# --- checks

# Sizes 1 .. 3 x INLINE: coarse steps, every 64 bytes from 3000 to 4600,
# and the page and inline boundaries.
io_sizes() {
	local s
	for ((s = 1; s < 3000; s += 197)); do echo $s; done
	for ((s = 3000; s <= 4600; s += 64)); do echo $s; done
	for ((s = 4600; s <= 3 * INLINE; s += 509)); do echo $s; done
	printf '%s\n' 2999 4095 4096 4097 8191 8192 8193 $((3 * INLINE - 1)) \
		$((3 * INLINE))
}

# One process for all sizes (a few per size take minutes under TCG):
# for each SIZE, SIZE bytes of SRC written to MNT/direct.SIZE with
# O_DIRECT and compared in the export (EXP/direct.SIZE), then the same
# bytes put in EXP/direct.SIZE.r and read through the mount with O_DIRECT.
# The kernel's client does O_DIRECT at any alignment. After 8 failures
# in a row the rest are not tried, and fail.
direct_pass() {
	# shellcheck disable=SC2016 # perl's variables, not the shell's
	timeout -s KILL 900 perl -MFcntl -e '
		my ($src, $mnt, $exp, @sizes) = @ARGV;
		my $row = 0;
		$| = 1;
		open(my $s, "<", $src) or die "$src: $!";
		binmode $s;
		local $/;
		my $all = <$s>;
		sub slurp { open(my $f, "<", $_[0]) or return; binmode $f; local $/; <$f> }
		sub spill { open(my $f, ">", $_[0]) or die "$_[0]: $!"; binmode $f; print $f $_[1]; close $f }
		for my $n (@sizes) {
			my $want = substr($all, 0, $n);
			my ($w, $r);
			if ($row >= 8) {
				print "odirect-write-$n fail not tried\n";
				print "odirect-read-$n fail not tried\n";
				next;
			}
			if (!sysopen(my $f, "$mnt/direct.$n", O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT)) {
				$w = "open: $!";
			} else {
				my $got = syswrite($f, $want);
				$w = defined $got ? ($got == $n ? undef : "wrote $got") : "write: $!";
				close($f) or $w //= "close: $!";
			}
			if (!defined $w) {
				my $there = slurp("$exp/direct.$n");
				$w = "the export holds other bytes"
					unless defined $there && $there eq $want;
			}
			spill("$exp/direct.$n.r", $want);
			if (!sysopen(my $f, "$mnt/direct.$n.r", O_RDONLY | O_DIRECT)) {
				$r = "open: $!";
			} else {
				# exactly SIZE: the READ the kernel sends is that size
				my $buf = "";
				my $got = sysread($f, $buf, $n);
				$r = !defined $got ? "read: $!"
				   : $buf ne $want ? "$got bytes, not the ones written" : undef;
				close($f);
			}
			unlink("$mnt/direct.$n", "$mnt/direct.$n.r");
			$row = defined $w || defined $r ? $row + 1 : 0;
			print "odirect-write-$n ", defined $w ? "fail $w" : "pass", "\n";
			print "odirect-read-$n ", defined $r ? "fail $r" : "pass", "\n";
		}' "$@"
}

direct_io() {
	local exp=$1 sizes check st why
	step "$SRV: O_DIRECT writes and reads, 1 .. $((3 * INLINE)) bytes"
	randfile "$W/src" $((3 * INLINE))
	mapfile -t sizes < <(io_sizes | sort -n -u)
	direct_pass "$W/src" "$MNT" "$exp" "${sizes[@]}" >"$W/direct"
	while read -r check st why; do
		result "$check" "$st" "$why"
	done <"$W/direct"
}

# Lengths 1 .. 4095: coarse steps, then every length from 3500.
link_lens() {
	local n
	for ((n = 1; n < 3500; n += 97)); do echo $n; done
	for ((n = 3500; n <= 4095; n++)); do echo $n; done
}

# One process for all lengths (a few per length would take minutes under
# TCG): "make" creates l<N> through the mount and checks the export's
# target, "read" reads them back through the mount. A target of N bytes is
# path-like, components of up to 100 bytes. After 8 failures in a row the
# rest are not tried (each can cost the client reconnects) and fail.
link_pass() {
	# shellcheck disable=SC2016 # perl's variables, not the shell's
	timeout -s KILL 600 perl -e '
		my ($phase, $mnt, $exp, @lens) = @ARGV;
		my $row = 0;
		$| = 1;
		for my $n (@lens) {
			my $what = $phase eq "make" ? "symlink-$n" : "readlink-$n";
			my $t = "";
			$t .= ("x" x 99) . "/" while length($t) < $n;
			$t = substr($t, 0, $n - 1) . "z";
			if ($row >= 8) {
				print "$what fail not tried: 8 failures in a row\n";
				next;
			}
			my $why;
			if ($phase eq "make") {
				if (!symlink($t, "$mnt/l$n")) {
					$why = "symlink: $!";
				} else {
					my $e = readlink("$exp/l$n");
					$why = "the export holds another target"
						unless defined $e && $e eq $t;
				}
			} else {
				my $g = readlink("$mnt/l$n");
				$why = defined $g ? length($g) . " bytes back" : "$!"
					unless defined $g && $g eq $t;
			}
			$row = defined $why ? $row + 1 : 0;
			print "$what ", defined $why ? "fail $why" : "pass", "\n";
		}' "$@"
}

symlinks() {
	local exp=$1 check st why ok bad lens
	step "$SRV: SYMLINK and READLINK, targets of 1 .. 4095 bytes"
	timeout -s KILL $OPT mkdir "$MNT/links" || {
		result symlink-dir fail "mkdir $MNT/links"
		return
	}
	mapfile -t lens < <(link_lens)
	link_pass make "$MNT/links" "$exp/links" "${lens[@]}" >"$W/links"
	drop_caches # READLINK from the server, not the client's cache
	link_pass read "$MNT/links" "$exp/links" "${lens[@]}" >>"$W/links"
	while read -r check st why; do
		QUIET=1 result "$check" "$st" "$why"
	done <"$W/links"
	ok=$(grep -cE '^(sym|read)link-[0-9]+ pass' "$W/results.$SRV")
	bad=$(grep -cE '^(sym|read)link-[0-9]+ fail' "$W/results.$SRV")
	echo "$SRV: symlink and readlink: $ok passed, $bad failed"
	timeout -s KILL 120 rm -rf "$MNT/links"
}

link_times() {
	local exp=$1 when='2001-02-03 04:05:06' want got
	step "$SRV: times on a symlink"
	want=$(date -d "$when" +%s)
	timeout -s KILL $OPT ln -s no/such/target "$MNT/timed" || {
		result symlink-times fail "ln -s"
		return
	}
	timeout -s KILL $OPT touch -h -d "$when" "$MNT/timed" 2>"$W/err" || {
		result symlink-times fail "touch -h: $(cat "$W/err")"
		return
	}
	drop_caches
	got=$(timeout -s KILL $OPT stat -c '%X %Y' "$MNT/timed")
	if [ "$got" != "$want $want" ]; then
		result symlink-times fail "the client reads '$got', want '$want $want'"
	elif [ "$(stat -c '%X %Y' "$exp/timed")" != "$want $want" ]; then
		result symlink-times fail "the export has" \
			"'$(stat -c '%X %Y' "$exp/timed")'"
	else
		result symlink-times pass
	fi
	timeout -s KILL $OPT rm -f "$MNT/timed"
}

# One process walks the tree (a shell's cd past PATH_MAX makes it search
# every parent for its own name, getcwd's fallback): PHASE make (mkdir
# and chdir DEPTH levels of NAME_LEN-byte names below TOP, write SRC at
# the bottom as "file"), list (readdir of the bottom), read (compare
# "file" with SRC), remove (unlink it, then rmdir each level from below,
# climbing with ".."). A path that long is only reached a name at a time.
deep_pass() {
	# shellcheck disable=SC2016 # perl's variables, not the shell's
	timeout -s KILL 600 perl -e '
		my ($phase, $top, $src, $depth, $len) = @ARGV;
		open(my $s, "<", $src) or die "$src: $!";
		binmode $s;
		local $/;
		my $want = <$s>;
		sub name { sprintf("%03d-", $_[0]) . ("d" x ($len - 4)) }
		chdir($top) or die "chdir $top: $!\n";
		for my $i (0 .. $depth - 1) {
			if ($phase eq "make") {
				mkdir(name($i)) or die "mkdir at level $i: $!\n";
			}
			chdir(name($i)) or die "chdir to level $i: $!\n";
		}
		if ($phase eq "make") {
			open(my $f, ">", "file") or die "create file: $!\n";
			binmode $f;
			print $f $want or die "write: $!\n";
			close($f) or die "close: $!\n";
		} elsif ($phase eq "list") {
			opendir(my $d, ".") or die "opendir: $!\n";
			my @names = sort grep { !/^\.\.?$/ } readdir($d);
			die "the bottom lists @names\n" unless "@names" eq "file";
		} elsif ($phase eq "read") {
			open(my $f, "<", "file") or die "open file: $!\n";
			binmode $f;
			my $got = <$f>;
			die "file differs\n" unless defined $got && $got eq $want;
		} else {
			unlink("file") or die "unlink file: $!\n";
			for (my $i = $depth - 1; $i >= 0; $i--) {
				chdir("..") or die "chdir .. from level $i: $!\n";
				rmdir(name($i)) or die "rmdir at level $i: $!\n";
			}
		}' "$@"
}

deep_tree() {
	local exp=$1 len=$((DEPTH * (NAME_LEN + 1))) phase
	step "$SRV: a tree $DEPTH deep, $len bytes of path"
	randfile "$W/deep" 100000
	timeout -s KILL $OPT mkdir "$MNT/deep" || {
		result deep-make fail "mkdir $MNT/deep"
		return
	}
	for phase in make list read remove; do
		[ $phase = list ] && drop_caches # every name looked up again
		if ! deep_pass $phase "$MNT/deep" "$W/deep" $DEPTH $NAME_LEN \
			2>"$W/err"; then
			result deep-$phase fail "$(head -c 300 "$W/err")"
		# and as the server stored it
		elif [ $phase = read ] && ! deep_pass read "$exp/deep" "$W/deep" \
			$DEPTH $NAME_LEN 2>"$W/err"; then
			result deep-$phase fail "in the export: $(head -c 300 "$W/err")"
		else
			result deep-$phase pass
		fi
	done
	timeout -s KILL 120 rm -rf "$MNT/deep"
	if [ -e "$exp/deep" ]; then
		result deep-gone fail "$exp/deep is still there"
	else
		result deep-gone pass
	fi
}

# Bad replies and reconnects while the checks ran: none.
counters() {
	local before=$1 after b a
	after=$(xprt)
	echo "$SRV: xprt before: $before"
	echo "$SRV: xprt after:  $after"
	read -r -a b <<<"$before"
	read -r -a a <<<"$after"
	if [ "${a[19]}" != "${b[19]}" ]; then
		result counters-bad-replies fail "${b[19]} -> ${a[19]}"
	else
		result counters-bad-replies pass
	fi
	if [ "${a[2]}" != "${b[2]}" ]; then
		result counters-reconnects fail "connect count ${b[2]} -> ${a[2]}"
	else
		result counters-reconnects pass
	fi
}

run_checks() {
	local exp=$1 before t0 c
	before=$(xprt)
	for c in direct_io symlinks link_times deep_tree; do
		t0=$SECONDS
		$c "$exp"
		echo "$SRV: $c took $((SECONDS - t0)) s"
	done
	counters "$before"
}

# nfsrdmad fails what the kernel's nfsd passes: that is the failure.
compare() {
	local check st worse=0 kfail
	declare -A kn
	while read -r check st; do kn[$check]=$st; done <"$W/results.knfsd"
	kfail=$(grep -c ' fail$' "$W/results.knfsd")
	[ "$kfail" = 0 ] || echo "note: the kernel's nfsd failed $kfail checks:" \
		"$(grep ' fail$' "$W/results.knfsd" | cut -d' ' -f1 | tr '\n' ' ')"
	declare -A ours
	while read -r check st; do ours[$check]=$st; done <"$W/results.nfsrdmad"
	# a check nfsrdmad never got to counts as failed
	for check in "${!kn[@]}"; do
		if [ "${kn[$check]}" = pass ] && [ "${ours[$check]:-}" != pass ]; then
			echo "worse than the kernel's nfsd: $check"
			worse=$((worse + 1))
		fi
	done
	echo "knfsd: $(grep -c ' pass$' "$W/results.knfsd") passed," \
		"$kfail failed; nfsrdmad: $(grep -c ' pass$' "$W/results.nfsrdmad")" \
		"passed, $(grep -c ' fail$' "$W/results.nfsrdmad") failed"
	[ $worse = 0 ] || fail "nfsrdmad fails $worse checks the kernel's nfsd passes"
}

for m in rpcrdma nfs nfsv3; do modprobe "$m" || fail "modprobe $m"; done
SRV=knfsd
start_knfsd
kmount "$KEXP" $KPORT $KMPORT
run_checks "$KEXP"
kumount
SRV=nfsrdmad
start_nfsrdmad
kmount "$REXP" $RPORT $RMPORT
run_checks "$REXP"
kumount
stop_nfsrdmad
compare
echo "kclient-shapes: ok"
