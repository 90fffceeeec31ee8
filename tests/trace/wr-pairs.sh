#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Invariant 4 seen from outside: perf attaches to the rpcrdma USDT probes
# (src/fabric/trace.h) of a test program while it runs, and
# pair-wrs.awk pairs every post with its completion. perf is the judge;
# nothing of ours reads the probes.
#
# usage: wr-pairs.sh PROGRAM [ARGS...]
# RR_TRACE_ALSO names more programs PROGRAM runs (a daemon, a CLI) whose
# probes are attached too.
# Needs perf, root (uprobes) and a build with <sys/sdt.h>; else a skip
# with the reason. The probes are system-wide (tracefs), so runs take a
# lock; they are removed at exit. A second program's probes get numbered
# names (post_send_1), which pair-wrs.awk reads as the same probe.
set -u
here=$(cd "$(dirname "$0")" && pwd)
prog=${1:?usage: wr-pairs.sh PROGRAM [ARGS...]}
shift
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

command -v perf >/dev/null || skip "perf is not installed (Debian: linux-perf)"
command -v readelf >/dev/null || skip "readelf is not installed (binutils)"
[ "$(id -u)" = 0 ] || skip "attaching uprobes needs root"
traced="$prog ${RR_TRACE_ALSO:-}"
for bin in $traced; do
	readelf -n "$bin" | grep -q 'Provider: rpcrdma' ||
		skip "$bin has no rpcrdma probes (built without <sys/sdt.h>)"
done

work=$(mktemp -d /tmp/rr-trace.XXXXXX)
exec 9>/tmp/rpcrdma-trace.lock
flock -w 600 9 || fail "another trace run holds /tmp/rpcrdma-trace.lock"
cleanup() {
	HOME=$work perf probe -q -d 'sdt_rpcrdma:*' >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work # perf's build-id cache, kept out of the user's home
perf probe -q -d 'sdt_rpcrdma:*' >/dev/null 2>&1 # a run that was killed
events="post_send post_recv post_error post_drain completion qp_reset
	qp_destroy device_close"
for bin in $traced; do
	perf buildid-cache --add "$bin" >"$work/probe.log" 2>&1 ||
		skip "perf cannot index $bin: $(tail -1 "$work/probe.log")"
	for ev in $events; do
		perf probe -q -f -x "$bin" -a "%sdt_rpcrdma:$ev" \
			>>"$work/probe.log" 2>&1 ||
			skip "perf cannot add uprobes here: $(tail -1 "$work/probe.log")"
	done
done

echo "tracing: $prog $*"
# One clock for all CPUs: perf's default clock is per CPU, and a skew
# between two of them could order a completion before its post.
perf record -q -k CLOCK_MONOTONIC -e 'sdt_rpcrdma:*' -o "$work/perf.data" \
	-- "$prog" "$@" \
	>"$work/run.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
	tail -40 "$work/run.log"
	fail "the traced program exited $rc"
fi
perf report -i "$work/perf.data" --stats 2>/dev/null | grep -i 'lost' &&
	fail "perf lost events: the pairing would be wrong"
perf script -i "$work/perf.data" -F pid,tid,event,trace >"$work/trace.txt" \
	2>/dev/null || fail "perf script failed"
awk -f "$here/pair-wrs.awk" "$work/trace.txt"
