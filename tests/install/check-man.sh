#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The installed man pages: every public function (every header but the
# tests' alloc_inject.h) has a page in man3, every section 3 page that is
# not a link has a RETURN VALUE, every page renders with no warning
# (groff -ww and man -l), and the page of each program names every
# option its --help lists.
#
# usage: check-man.sh PREFIX SOURCE_DIR CC
set -u
prefix=$1 src=$2 cc=$3
here=$(dirname "$0")
man=$prefix/share/man
bad=0

for tool in groff man; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "man: $tool not found (Debian: groff-base, man-db)"
		exit 1
	fi
done

for h in "$src"/include/rpcrdma/*.h; do
	[ "${h##*/}" = alloc_inject.h ] && continue
	for f in $("$here/public-functions.sh" "$cc" "$src/include" "$h"); do
		if [ ! -f "$man/man3/$f.3" ]; then
			echo "man: $f (${h##*/}) has no man page"
			bad=1
		fi
	done
done

# .so links resolve from the top of the man tree, as man(1) does.
cd "$man" || exit 1
n=0
for page in man*/*; do
	n=$((n + 1))
	out=$(groff -ww -z -man "$page" 2>&1;
		MANWIDTH=80 man --warnings=w -l "$page" 2>&1 >/dev/null)
	if [ -n "$out" ]; then
		echo "man: $page:"
		sed 's/^/  /' <<<"$out"
		bad=1
	fi
	case $page in
	man3/*)
		grep -q '^\.so ' "$page" && continue
		if ! grep -q '^\.SH "\?RETURN VALUE' "$page"; then
			echo "man: $page has no RETURN VALUE"
			bad=1
		fi
		;;
	esac
done
echo "man: $n pages rendered with groff -ww and man -l"

# The programs: every option --help names is on the page.
for p in "nfsrdmad 8" "nfsrdma 1" "rpcrdma-bench 1"; do
	set -- $p
	bin=$prefix/bin/$1
	[ -x "$bin" ] || bin=$prefix/sbin/$1
	text=$(MANWIDTH=200 man -l "man$2/$1.$2" 2>/dev/null)
	help=$("$bin" --help 2>&1)
	if [ "$1" = rpcrdma-bench ]; then
		help+=$("$bin" fabric --help 2>&1; "$bin" rpc --help 2>&1)
	fi
	for opt in $(grep -oE -- '--[a-z][a-z-]+' <<<"$help" | sort -u); do
		if ! grep -qE -- "(^|[^a-z-])$opt([^a-z-]|\$)" <<<"$text"; then
			echo "man: $1($2) does not describe $opt (its --help does)"
			bad=1
		fi
	done
done
exit $bad
