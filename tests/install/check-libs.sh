#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The installed shared libraries: each is lib<name>.so.SOVERSION by
# soname, and exports exactly the functions its public headers declare
# (tests/install/public-functions.sh), each under its version node, and
# nothing else: no unversioned name, no internal rr_ name, and rr__ ones
# only in librpcrdma's private node (cmake/shared.cmake says why).
#
# usage: check-libs.sh LIBDIR SOURCE_DIR VERSION SOVERSION CC
set -u
libdir=$1 src=$2 version=$3 sov=$4 cc=$5
here=$(dirname "$0")
inc=$src/include/rpcrdma
bad=0
node_v=${version%.*} # MAJOR.MINOR

# name, version node, headers
check_lib() {
	local name=$1 node=$2 so want got extra h
	shift 2
	so=$libdir/$name.so.$sov
	if [ ! -f "$so" ]; then
		echo "libs: $so not installed"
		return 1
	fi
	got=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	if [ "$got" != "$name.so.$sov" ]; then
		echo "libs: $name: soname '$got', want $name.so.$sov"
		return 1
	fi
	want=$(for h in "$@"; do "$here/public-functions.sh" "$cc" "$src/include" "$h"; done | sort -u)
	# "ADDR T name@@NODE"; the nodes themselves are absolute symbols.
	got=$(nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sort)
	extra=$(grep -vxF -f <(sed "s/\$/@@$node/" <<<"$want") <<<"$got" |
		grep -vE '^rr__[a-z0-9_]+@@RPCRDMA_PRIVATE_[0-9.]+$')
	if [ -n "$extra" ]; then
		echo "libs: $name exports what no public header declares under $node:"
		sed 's/^/  /' <<<"$extra"
		return 1
	fi
	extra=$(grep -vxF -f <(sed 's/@@.*//' <<<"$got") <<<"$want")
	if [ -n "$extra" ]; then
		echo "libs: $name does not export, declared in its headers:"
		sed 's/^/  /' <<<"$extra"
		return 1
	fi
	echo "libs: $name.so.$sov exports its $(wc -l <<<"$want") functions under $node, nothing else"
}

rpcrdma_headers=()
for h in "$inc"/*.h; do
	case ${h##*/} in
	alloc_inject.h | nfs3.h | nfs3_server.h) ;;
	*) rpcrdma_headers+=("$h") ;;
	esac
done
check_lib librpcrdma "RPCRDMA_$node_v" "${rpcrdma_headers[@]}" || bad=1
check_lib librr_nfs3_client "RR_NFS3_CLIENT_$node_v" "$inc/nfs3.h" || bad=1
check_lib librr_nfs3_server "RR_NFS3_SERVER_$node_v" "$inc/nfs3_server.h" || bad=1
exit $bad
