#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# What a user gets from `cmake --install`: installs BUILD into a fresh
# prefix and checks
#  - the programs' --version;
#  - the shared libraries: soname, and exports that are exactly the
#    functions of their public headers under the version node (plus the
#    private node's rr__ names), nothing unversioned (check-libs.sh);
#  - the man pages: one for every public function, each renders with no
#    warning, each program's page names every option its --help lists
#    (check-man.sh);
#  - the systemd unit (systemd-analyze verify, where there is one);
#  - outside.c built against the prefix alone: with pkg-config against
#    the shared libraries (NEEDED checked) and with --static against the
#    archives, and by an outside CMake project with find_package, shared
#    and with RPCRDMA_STATIC; each runs against nfsrdmad started from the
#    installed sbin: it writes a file over the default transport (RDMA,
#    iwarp provider) and reads it back, and the file is checked on disk.
#
# usage: install.sh BUILD_DIR SOURCE_DIR VERSION SOVERSION LIBDIR CC [CFLAGS]
set -eu
build=$1 src=$2 version=$3 soversion=$4 libdir=$5 cc=$6 cflags=${7-}
here=$(dirname "$0")

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

# The shared libraries a program names (DT_NEEDED), one a line.
needed() {
	readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

# systemd-analyze verify prints what it finds and exits 0 all the same.
check_unit() {
	local unit=$prefix/lib/systemd/system/nfsrdmad.service out
	[ -f "$unit" ] || fail "nfsrdmad.service not installed"
	grep -qx "ExecStart=$prefix/sbin/nfsrdmad .*" "$unit" ||
		fail "nfsrdmad.service does not start the installed nfsrdmad"
	if ! command -v systemd-analyze >/dev/null 2>&1; then
		echo "skip: systemd-analyze not found (Debian: systemd); unit not verified"
		return
	fi
	# Its man: references are looked up in the prefix's pages.
	out=$(MANPATH="$prefix/share/man" systemd-analyze verify "$unit" 2>&1) ||
		fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify nfsrdmad.service: $out"
	echo "nfsrdmad.service: systemd-analyze verify is silent"
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

"$here/check-libs.sh" "$prefix/$libdir" "$src" "$version" "$soversion" "$cc" ||
	fail "the shared libraries (above)"
"$here/check-man.sh" "$prefix" "$src" "$cc" || fail "the man pages (above)"
check_unit

# Only the prefix: no -I or -L into the source or build trees.
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
shared=$(pkg-config --cflags --libs rpcrdma-nfs3 rpcrdma) ||
	fail "pkg-config rpcrdma-nfs3 (in $PKG_CONFIG_PATH)"
# --static lists what the archives need; -l:libNAME.a makes the linker
# take our archives over the shared libraries beside them (README).
static=$(pkg-config --cflags --libs --static rpcrdma-nfs3 rpcrdma |
	sed -E 's/-l(rpcrdma|rr_[a-z0-9_]+)/-l:lib\1.a/g') ||
	fail "pkg-config --static rpcrdma-nfs3"
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
	"$src/tests/install/outside.c" $shared || fail "build against pkg-config"
# shellcheck disable=SC2086
"$cc" $cflags -Wall -Wextra -Werror -o "$tmp/outside-pc-static" \
	"$src/tests/install/outside.c" $static ||
	fail "build against pkg-config --static"

for static in OFF ON; do
	cmake -S "$src/tests/install/outside" -B "$tmp/outside-cmake-$static" \
		-DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" \
		-DCMAKE_PREFIX_PATH="$prefix" -DRR_WANT_VERSION="$version" \
		-DRPCRDMA_STATIC=$static >"$tmp/cmake.log" 2>&1 ||
		fail "find_package(rpcrdma): $(tail -5 "$tmp/cmake.log")"
	cmake --build "$tmp/outside-cmake-$static" >>"$tmp/cmake.log" 2>&1 ||
		fail "outside CMake build: $(tail -5 "$tmp/cmake.log")"
done

# The shared builds need the installed libraries by soname, the static
# ones none of ours.
for prog in "$tmp/outside-pc" "$tmp/outside-cmake-OFF/outside"; do
	for lib in librpcrdma librr_nfs3_client; do
		needed "$prog" | grep -qx "$lib.so.$soversion" ||
			fail "$prog: no NEEDED $lib.so.$soversion ($(needed "$prog" | tr '\n' ' '))"
	done
done
for prog in "$tmp/outside-pc-static" "$tmp/outside-cmake-ON/outside"; do
	! needed "$prog" | grep -E '^lib(rpcrdma|rr_)' ||
		fail "$prog: linked against our shared libraries"
done

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
export LD_LIBRARY_PATH="$prefix/$libdir"
for prog in "$tmp/outside-pc" "$tmp/outside-pc-static" \
	"$tmp/outside-cmake-OFF/outside" "$tmp/outside-cmake-ON/outside"; do
	name=$(basename "$(dirname "$prog")")-${prog##*/}.txt
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
