# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# Sourced by the shell tests that wait for a condition and drive
# lock_probe (tests/fuse/lock_probe.c) processes: tests/fuse/mount.sh,
# tests/fuse/locks.sh, tests/vm/kclient-locks.sh, tests/vm/fuse-knfsd.sh.
# A wait polls its condition with a deadline, never a fixed sleep
# standing for one.
#
# The caller sets DEADLINE_S (seconds a poll waits), and for probe:
# PROBE (lock_probe's path), PROBE_DIR (where its fifo and output go) and
# an array PIDS (its pid is added, for the caller's cleanup).

# poll CMD...: until CMD succeeds (0) or DEADLINE_S passes (1)
poll() {
	local end=$((SECONDS + DEADLINE_S))
	until "$@"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.05
	done
}

# probe NAME MODE PATH [ARGS]: lock_probe with its stdin a fifo held open
# here; its pid in PID_NAME, the fifo's descriptor in FD_NAME
probe() {
	local name=$1 fd
	shift
	mkfifo "$PROBE_DIR/$name.in"
	"$PROBE" "$@" <"$PROBE_DIR/$name.in" >"$PROBE_DIR/$name.out" 2>&1 &
	eval "PID_$name=$!"
	PIDS+=($!)
	exec {fd}>"$PROBE_DIR/$name.in"
	eval "FD_$name=$fd"
}

# says NAME WORD: probe NAME has printed a line starting with WORD
says() { grep -q "^$2" "$PROBE_DIR/$1.out"; }

# in_syscall PID NR: process PID is inside system call NR (F_SETLKW waiting)
in_syscall() { [ "$(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null)" = "$2" ]; }

# waiter NAME PATH [ARGS]: probe NAME in F_SETLKW on PATH, polled until it
# is inside that system call; else 1, and WAITER_WHY says which step
waiter() {
	local name=$1 nr pid
	shift
	probe "$name" wait "$@"
	WAITER_WHY="the waiter $name did not start"
	poll says "$name" waiting || return 1
	nr=$(cut -d' ' -f2 "$PROBE_DIR/$name.out")
	eval "pid=\$PID_$name"
	WAITER_WHY="the waiter $name is not in fcntl"
	poll in_syscall "$pid" "$nr"
}
