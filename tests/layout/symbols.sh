#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The libraries' global symbols all carry our prefix (issue 16): rr_ for
# the public API, rr__ for what the library's own files share. A program
# linking librpcrdma.a (and libtirpc, as nfsrdmad does) then cannot collide
# with it by accident.
#
# usage: symbols.sh NM LIBRARY...       check the built libraries
#        symbols.sh --self-test NM CC AR
#                                      check that the check fails on an
#                                      archive with one unprefixed symbol
set -u

# Prints each defined global symbol of LIBRARY that lacks the prefix.
unprefixed()
{
	local nm=$1 lib=$2 sym
	"$nm" -g --defined-only "$lib" | while read -r _ _ sym; do
		[ -n "$sym" ] || continue
		# ASan's marker for a global names the global after the dot.
		sym=${sym#__odr_asan.}
		# <sys/sdt.h> emits this (weak, hidden) for the USDT probes.
		[ "$sym" = _.stapsdt.base ] && continue
		[[ $sym == rr_* ]] && continue
		echo "$sym"
	done
}

check_libs()
{
	local nm=$1 bad=0 lib out
	shift
	for lib in "$@"; do
		if [ ! -f "$lib" ]; then
			echo "symbols: $lib: not built"
			bad=1
			continue
		fi
		out=$(unprefixed "$nm" "$lib")
		if [ -n "$out" ]; then
			echo "symbols: $(basename "$lib") defines, without rr_:"
			sed 's/^/  /' <<<"$out"
			bad=1
		else
			echo "symbols: $(basename "$lib"): every global is rr_"
		fi
	done
	return "$bad"
}

# An archive named like librpcrdma.a with SOURCE in it; prints its path.
make_archive()
{
	local cc=$1 ar=$2 dir=$3 name=$4 source=$5
	mkdir -p "$dir/$name"
	printf '%s\n' "$source" >"$dir/$name/t.c"
	"$cc" -c -o "$dir/$name/t.o" "$dir/$name/t.c" &&
		"$ar" rcs "$dir/$name/librpcrdma.a" "$dir/$name/t.o" &&
		echo "$dir/$name/librpcrdma.a"
}

self_test()
{
	local nm=$1 cc=$2 ar=$3 tmp good leak bad=0
	tmp=$(mktemp -d)
	good=$(make_archive "$cc" "$ar" "$tmp" good \
		'int rr_api(void) { return 0; } int rr__internal; static int local; int rr_y(void) { return local; }')
	leak=$(make_archive "$cc" "$ar" "$tmp" leak \
		'int rr_api(void) { return 0; } int iw_leaked(void) { return 1; }')
	if [ -z "$good" ] || [ -z "$leak" ]; then
		echo "self-test: could not build the archives"
		rm -rf "$tmp"
		return 1
	fi
	if ! check_libs "$nm" "$good" >/dev/null; then
		echo "self-test: rr_, rr__ or static symbols were refused"
		bad=1
	fi
	if check_libs "$nm" "$leak" >/dev/null; then
		echo "self-test: iw_leaked was not caught"
		bad=1
	else
		echo "self-test: caught iw_leaked"
	fi
	rm -rf "$tmp"
	return "$bad"
}

if [ "${1:-}" = "--self-test" ]; then
	self_test "${2:?nm}" "${3:?cc}" "${4:?ar}"
else
	check_libs "${1:?usage: symbols.sh NM LIBRARY...}" "${@:2}"
fi
