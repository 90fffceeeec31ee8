#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Invariant 4 seen from outside: perf attaches to the rpcrdma USDT probes
# (src/fabric/trace.h) of a test program while it runs, and
# pair-wrs.awk pairs every post with its completion. perf is the judge;
# nothing of ours reads the probes.
#
# usage: wr-pairs.sh PROGRAM [ARGS...]
# Needs perf, root (uprobes) and a build with <sys/sdt.h>; else a skip
# with the reason. The probes are system-wide (tracefs), so runs take a
# lock; they are removed at exit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
prog=${1:?usage: wr-pairs.sh PROGRAM [ARGS...]}
shift
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

command -v perf >/dev/null || skip "perf is not installed (Debian: linux-perf)"
command -v readelf >/dev/null || skip "readelf is not installed (binutils)"
[ "$(id -u)" = 0 ] || skip "attaching uprobes needs root"
readelf -n "$prog" | grep -q 'Provider: rpcrdma' ||
	skip "$prog has no rpcrdma probes (built without <sys/sdt.h>)"

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
perf buildid-cache --add "$prog" >"$work/probe.log" 2>&1 ||
	skip "perf cannot index $prog: $(tail -1 "$work/probe.log")"
events="post_send post_recv post_error post_drain completion qp_reset
	qp_destroy device_close"
for ev in $events; do
	perf probe -q -x "$prog" -a "%sdt_rpcrdma:$ev" >>"$work/probe.log" 2>&1 ||
		skip "perf cannot add uprobes here: $(tail -1 "$work/probe.log")"
done

echo "tracing: $prog $*"
perf record -q -e 'sdt_rpcrdma:*' -o "$work/perf.data" -- "$prog" "$@" \
	>"$work/run.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
	tail -40 "$work/run.log"
	fail "the traced program exited $rc"
fi
perf report -i "$work/perf.data" --stats 2>/dev/null | grep -i 'lost' &&
	fail "perf lost events: the pairing would be wrong"
perf script -i "$work/perf.data" -F pid,event,trace >"$work/trace.txt" \
	2>/dev/null || fail "perf script failed"
awk -f "$here/pair-wrs.awk" "$work/trace.txt"
