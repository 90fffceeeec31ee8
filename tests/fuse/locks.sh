#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# fcntl and flock locks through nfsrdma mount: a real nfsrdmad with its
# lock manager (NLM) on loopback, its export mounted twice (one mount
# over TCP, one over RDMA), and processes (lock_probe.c) contending:
#   - two processes on one mount: the second is refused while the first
#     holds, and F_GETLK names the first by its pid;
#   - a process on the other mount waits in F_SETLKW until the holder
#     closes the file, then holds it (the two mounts are two NLM
#     clients: a mount's locks are the server's conflicts);
#   - a holder killed (process exit) lets its lock go, to a process of
#     the same mount waiting in F_SETLKW;
#   - a waiter killed in F_SETLKW takes nothing (FUSE's interrupt stops
#     the mount's waiting);
#   - flock: the second mount is refused until the first closes.
#
# usage: locks.sh NFSRDMAD NFSRDMA LOCK_PROBE
# Exit 77 (skipped, saying why) without /dev/fuse or the right to mount.
# Waits poll for a condition with a deadline, never a fixed sleep.
set -u

NFSRDMAD=${1:?usage: locks.sh NFSRDMAD NFSRDMA LOCK_PROBE}
NFSRDMA=${2:?}
PROBE=${3:?}
DEADLINE_S=20
# shellcheck source=tests/lib/poll-and-probe.sh
. "$(dirname "$0")/../lib/poll-and-probe.sh"

skip() { echo "SKIP: $*"; exit 77; }
fail() {
	echo "FAIL: $*"
	for f in "$T"/*.out "$T"/*.err; do
		[ -s "$f" ] && tail -5 "$f" | sed "s|^|  $(basename "$f"): |"
	done
	exit 1
}

[ -c /dev/fuse ] || skip "no /dev/fuse"
[ -x "$NFSRDMAD" ] && [ -x "$NFSRDMA" ] && [ -x "$PROBE" ] || skip "not built"
[ "$(id -u)" = 0 ] || skip "not root"
"$NFSRDMA" --help | grep -q '^  mount ' || skip "nfsrdma built without libfuse3"

T=$(mktemp -d /tmp/rr-fuse-locks.XXXXXX)
chmod 755 "$T"
EXP=$T/exp
M1=$T/m1
M2=$T/m2
mkdir -p "$M1" "$M2" "$EXP" "$T/state"
SERVER=
PIDS=()
PROBE_DIR=$T

cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	for m in "$M1" "$M2"; do
		grep -q " $m " /proc/self/mountinfo && umount -l "$m" 2>/dev/null
	done
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

port_of() { sed -n "s/.*$1 on .*:\([0-9]*\)$/\1/p" "$T/server.out"; }

"$NFSRDMAD" --export "$EXP" --state-dir "$T/state" --address 127.0.0.1 \
	--rdma-port 0 --tcp-port 0 --mount-port 0 --nlm-port 0 --grace 0 \
	>"$T/server.out" 2>"$T/server.err" &
SERVER=$!
poll grep -q ready "$T/server.out" || fail "nfsrdmad did not say ready"
RDMA=$(port_of "nfs3+mount3 over rdma")
TCP=$(port_of "nfs3 over tcp")
MNTP=$(port_of "mount3 over tcp")
NLM=$(port_of "nlm4 over tcp")
[ -n "$RDMA" ] && [ -n "$TCP" ] && [ -n "$MNTP" ] && [ -n "$NLM" ] ||
	fail "no ports in nfsrdmad's banner"

mounted() { grep -q " $1 [^ ]* - fuse.nfsrdma " /proc/self/mountinfo; }

# mount URL DIR NAME, in the foreground, its process in PIDS
mount_at() {
	"$NFSRDMA" mount "$1" "$2" -f -o noac 2>"$T/$3.err" &
	PIDS+=($!)
	poll mounted "$2" || {
		grep -q "FUSE could not mount" "$T/$3.err" &&
			skip "FUSE cannot mount here: $(cat "$T/$3.err")"
		fail "$2 not mounted: $(cat "$T/$3.err")"
	}
}
mount_at "nfs://127.0.0.1:$TCP$EXP?proto=tcp&mountport=$MNTP&nlmport=$NLM" "$M1" m1
mount_at "nfs://127.0.0.1:$RDMA$EXP?mountport=$MNTP&provider=iwarp&nlmport=$NLM" \
	"$M2" m2
echo data >"$EXP/f"

# a process that exited (a zombie of ours, or gone)
exited() {
	[ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ] || ! kill -0 "$1" 2>/dev/null
}

# --- two processes on one mount
probe h1 hold "$M1/f" w 0 0
poll says h1 locked || fail "the first lock was not granted"
out=$("$PROBE" hold "$M1/f" w 10 1 </dev/null)
[ "$out" = "busy 11" ] || fail "a second process on the mount: '$out', want EAGAIN"
out=$("$PROBE" test "$M1/f" r 5 1)
[ "$out" = "w $PID_h1 0 0" ] ||
	fail "F_GETLK on the mount: '$out', want 'w $PID_h1 0 0'"
echo "one mount: the second process refused, F_GETLK names the holder"

# --- the other mount waits until the holder closes
out=$("$PROBE" test "$M2/f" w 0 0)
[ "$out" = "w $PID_h1 0 0" ] ||
	fail "F_GETLK on the other mount: '$out', want 'w $PID_h1 0 0'"
waiter w2 "$M2/f" w 0 0 || fail "$WAITER_WHY"
says w2 locked && fail "the waiter got the lock while it was held"
echo close >&"$FD_h1"
poll says h1 closed || fail "the holder did not close"
poll says w2 locked || fail "the waiter was not granted after the close"
out=$("$PROBE" hold "$M1/f" r 0 1 </dev/null)
[ "$out" = "busy 11" ] || fail "the waiter's lock is not seen from m1: '$out'"
echo "two mounts: F_SETLKW waited for the holder's close, then held"

# --- a holder's exit lets go; a waiter on the same mount gets it
kill -9 "$PID_w2"
wait "$PID_w2" 2>/dev/null
probe h3 hold "$M1/f" w 0 0
poll says h3 locked || fail "a killed holder's lock stayed: $(cat "$T/h3.out")"
waiter w4 "$M1/f" r 0 1 || fail "$WAITER_WHY"
says w4 locked && fail "the same mount's waiter got the lock while it was held"
kill -9 "$PID_h3"
wait "$PID_h3" 2>/dev/null
poll says w4 locked || fail "the same mount's waiter was not granted after the exit"
eval "exec $FD_h1>&- $FD_w4>&-"
wait "$PID_h1" "$PID_w4" 2>/dev/null
echo "exit: a killed holder's lock went with it, to a waiter on its mount"

# --- a waiter killed while it waits takes nothing, then or later
probe h5 hold "$M1/f" w 0 0
poll says h5 locked || fail "h5: $(cat "$T/h5.out")"
waiter w5 "$M2/f" w 0 0 || fail "$WAITER_WHY"
kill -9 "$PID_w5"
# it dies once the mount answered its interrupted request
poll exited "$PID_w5" || fail "a killed waiter did not exit"
wait "$PID_w5" 2>/dev/null
eval "exec $FD_h5>&-"
wait "$PID_h5" 2>/dev/null
out=$("$PROBE" hold "$M1/f" w 0 0 </dev/null)
[ "$out" = "locked" ] || fail "a killed waiter took the lock: '$out'"
echo "interrupt: a waiter killed in F_SETLKW took nothing"

# --- flock across the mounts
probe f1 flock "$M1/f"
poll says f1 locked || fail "flock was not granted: $(cat "$T/f1.out")"
out=$("$PROBE" flock "$M2/f" </dev/null)
[ "$out" = "busy 11" ] || fail "flock on the other mount: '$out', want EWOULDBLOCK"
eval "exec $FD_f1>&-"
wait "$PID_f1" 2>/dev/null
out=$("$PROBE" flock "$M2/f" </dev/null)
[ "$out" = "locked" ] || fail "flock after the holder exited: '$out'"
echo "flock: refused across the mounts until the holder closed"

for m in "$M1" "$M2"; do
	"$NFSRDMA" umount "$m" || fail "umount $m"
done
for p in "${PIDS[@]:0:2}"; do
	wait "$p" || fail "nfsrdma mount exited with $?"
done
PIDS=()
echo "locks: passed"
