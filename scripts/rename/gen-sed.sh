#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 16: prints a sed -E line that gives every global symbol starting
# with PREFIX, defined in the given libraries or objects, the internal
# prefix rr__ (PREFIX_x -> rr__PREFIX_x), matching whole words only.
# usage: gen-sed.sh PREFIX LIBRARY_OR_OBJECT...
# e.g.   scripts/rename/gen-sed.sh svc_ build/src/librpcrdma.a > svc.sed
#        sed -E -i -f svc.sed $(git grep -lwE 'svc_[a-z_]+' -- src tests)
set -eu
prefix=$1
shift
names=$(nm -g --defined-only "$@" | awk 'NF == 3 { print $3 }' |
	grep "^$prefix" | sed "s/^$prefix//" | sort -u | paste -sd'|')
if [ -z "$names" ]; then
	echo "gen-sed.sh: no global symbol starts with $prefix" >&2
	exit 1
fi
printf 's/\\b%s(%s)\\b/rr__%s\\1/g\n' "$prefix" "$names" "$prefix"
