#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# What a user gets from `cmake --install`: installs BUILD into a fresh
# prefix, checks the programs' --version, builds outside.c against the
# prefix alone (pkg-config, then an outside CMake project with
# find_package), and runs both against nfsrdmad started from the
# installed sbin: each writes a file over the default transport (RDMA,
# iwarp provider) and reads it back, and the file is checked on disk.
#
# usage: install.sh BUILD_DIR SOURCE_DIR VERSION LIBDIR CC [CFLAGS]
set -eu
build=$1 src=$2 version=$3 libdir=$4 cc=$5 cflags=${6-}

if ! command -v pkg-config >/dev/null 2>&1; then
	echo "SKIP: pkg-config not found (Debian: apt-get install pkgconf)"
	exit 77
fi

tmp=$(mktemp -d /tmp/rr-install-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	[ -f "$tmp/nfsrdmad.log" ] && sed 's/^/  nfsrdmad: /' "$tmp/nfsrdmad.log" >&2
	exit 1
}

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
	fail "cmake --install: $(tail -3 "$tmp/install.log")"

for p in sbin/nfsrdmad bin/nfsrdma bin/rpcrdma-bench; do
	[ -x "$prefix/$p" ] || fail "$p not installed"
	got=$("$prefix/$p" --version) || fail "$p --version exited $?"
	[ "$got" = "${p#*/} $version" ] ||
		fail "$p --version said '$got', want '${p#*/} $version'"
done

# Only the prefix: no -I or -L into the source or build trees.
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs --static rpcrdma-nfs3) ||
	fail "pkg-config rpcrdma-nfs3 (in $PKG_CONFIG_PATH)"
cflags_rr=$(pkg-config --cflags rpcrdma) || fail "pkg-config rpcrdma"

# Every public header is there (alloc_inject.h is the tests' own) and
# compiles alone from the prefix: what it includes was installed too.
for h in "$src"/include/rpcrdma/*.h; do
	h=${h##*/}
	[ "$h" = alloc_inject.h ] && continue
	[ -f "$prefix/include/rpcrdma/$h" ] || fail "rpcrdma/$h not installed"
	# shellcheck disable=SC2086
	echo "#include <rpcrdma/$h>" |
		"$cc" $cflags_rr -Wall -Werror -fsyntax-only -x c - ||
		fail "rpcrdma/$h does not compile alone from the prefix"
done
[ ! -e "$prefix/include/rpcrdma/alloc_inject.h" ] ||
	fail "alloc_inject.h, a test control, was installed"
# shellcheck disable=SC2086 # word splitting of flags is the point
"$cc" $cflags -Wall -Wextra -Werror -o "$tmp/outside-pc" \
	"$src/tests/install/outside.c" $flags || fail "build against pkg-config"

cmake -S "$src/tests/install/outside" -B "$tmp/outside-cmake" \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" \
	-DCMAKE_PREFIX_PATH="$prefix" -DRR_WANT_VERSION="$version" \
	>"$tmp/cmake.log" 2>&1 || fail "find_package(rpcrdma): $(tail -5 "$tmp/cmake.log")"
cmake --build "$tmp/outside-cmake" >>"$tmp/cmake.log" 2>&1 ||
	fail "outside CMake build: $(tail -5 "$tmp/cmake.log")"

mkdir "$tmp/export" "$tmp/state"
mkfifo "$tmp/out"
"$prefix/sbin/nfsrdmad" --export "$tmp/export" --state-dir "$tmp/state" \
	--address 127.0.0.1 --rdma-port 0 --tcp-port 0 --mount-port 0 \
	>"$tmp/out" 2>"$tmp/nfsrdmad.log" &
pid=$!
exec 3<"$tmp/out"
rdma= mount=
# Its banner names the ports it got; "ready" comes last.
while IFS= read -r line <&3; do
	case $line in
	*"over rdma on"*) rdma=${line##*:} ;;
	*"mount3 over tcp on"*) mount=${line##*:} ;;
	*ready*) break ;;
	esac
done
[ -n "$rdma" ] && [ -n "$mount" ] || fail "nfsrdmad did not become ready"

url="nfs://127.0.0.1$tmp/export?nfsport=$rdma&mountport=$mount"
for prog in "$tmp/outside-pc" "$tmp/outside-cmake/outside"; do
	name=${prog##*/}.txt
	out=$(timeout 60 "$prog" "$url" "$name" 2>&1) || fail "$prog: $out"
	grep -qx "written from outside the tree" "$tmp/export/$name" ||
		fail "$prog: the file on the server is not what it wrote"
	echo "$prog: $out"
done

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "nfsrdmad exited $rc on SIGTERM"
echo "PASS: installed into $prefix, built outside and ran against nfsrdmad"
