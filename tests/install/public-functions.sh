#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Prints the functions HEADER declares, one a line, as the compiler sees
# them (gcc -aux-info lists every prototype with the file it came from),
# not by the pattern cmake/shared.cmake reads the headers with: the
# checks built on this then also check that pattern. A compiler without
# -aux-info (clang) falls back to a pattern of its own.
#
# usage: public-functions.sh CC INCLUDE_DIR HEADER
set -eu
cc=$1 inc=$2 h=$3
aux=$(mktemp)
trap 'rm -f "$aux"' EXIT
if "$cc" -I"$inc" -aux-info "$aux" -fsyntax-only -x c "$h" 2>/dev/null; then
	grep -F "/* $h:" "$aux" |
		sed -nE 's/.*[ *](rr_[a-z0-9_]+) \(.*/\1/p' | sort -u
else
	grep -E '^[a-z][^(#]*[ *]rr_[a-z0-9_]+\(' "$h" | grep -v '^typedef' |
		sed -E 's/^[^(]*[ *](rr_[a-z0-9_]+)\(.*/\1/' | sort -u
fi
