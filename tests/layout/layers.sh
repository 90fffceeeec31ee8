#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The layer rule (issue 16), checked on the sources as they are:
#
#   base <- fabric, base <- rpc, base+fabric+rpc <- rpcrdma, all <- nfs3,
#   all <- fuse (the FUSE adapter over the NFS client)
#
# Each folder under src/ is a layer, and each public header belongs to the
# layer that implements it. An #include is an edge from the including
# file's layer to the included file's; only the edges in ALLOWED may exist,
# and the edges between folders must form no cycle. The RDMA system headers
# (rdma-core) are a layer of their own that only src/fabric may use, so
# ONC RPC over TCP (src/rpc, rpc_tcp.h, oncrpc.h) builds without them.
#
# usage: layers.sh SOURCE_DIR         check the tree
#        layers.sh --self-test SOURCE_DIR
#                                    check that the check fails on a copy of
#                                    the tree with one bad include added
set -u

# What each layer may include besides itself.
declare -A ALLOWED=(
	[base]=""
	[fabric]="base rdma-core"
	[rpc]="base"
	[rpcrdma]="base fabric rpc"
	[nfs3]="base fabric rpc rpcrdma"
	[fuse]="base fabric rpc rpcrdma nfs3"
)

# The layer of each public header. A new header must be added here.
declare -A PUBLIC=(
	[alloc_inject.h]=base
	[fabric.h]=fabric
	[faults.h]=fabric
	[oncrpc.h]=rpc
	[rpc_tcp.h]=rpc
	[rpc_udp.h]=rpc
	[rpc.h]=rpcrdma
	[nfs3.h]=nfs3
	[nfs3_server.h]=nfs3
)

# Sets LAYER to the layer of a file of the tree (path relative to
# SOURCE_DIR), or "". (Variables, not $(...): no fork per include.)
file_layer()
{
	LAYER=
	case $1 in
	src/*/*)
		LAYER=${1#src/}
		LAYER=${LAYER%%/*}
		;;
	include/rpcrdma/*) LAYER=${PUBLIC[${1#include/rpcrdma/}]:-} ;;
	esac
}

# Sets LAYER to the layer an include line names: "" for a system header of
# no concern, "?" for a header no layer owns. $2: the includer's layer.
INCLUDE_RE='^[[:space:]]*#[[:space:]]*include[[:space:]]*([<"])([^>"]*)[>"]'
include_layer()
{
	LAYER=
	[[ $1 =~ $INCLUDE_RE ]] || return 0
	local quote=${BASH_REMATCH[1]} name=${BASH_REMATCH[2]}
	if [ "$quote" = "<" ]; then
		case $name in
		rpcrdma/*) LAYER=${PUBLIC[${name#rpcrdma/}]:-?} ;;
		infiniband/* | rdma/*) LAYER=rdma-core ;;
		esac
	elif [[ $name == */* ]]; then
		LAYER=${name%%/*}
		[ -n "${ALLOWED[$LAYER]+x}" ] || LAYER="?"
	else
		LAYER=$2 # "x.h": next to the file, same layer
	fi
}

allowed()
{
	local from=$1 to=$2 a
	[ "$from" = "$to" ] && return 0
	for a in ${ALLOWED[$from]}; do
		[ "$a" = "$to" ] && return 0
	done
	return 1
}

check_tree()
{
	local root=$1 bad=0 f line from to edges
	edges=$(mktemp)
	cd "$root" || return 2
	while IFS= read -r f; do
		file_layer "$f"
		from=$LAYER
		if [ -z "$from" ] || [ -z "${ALLOWED[$from]+x}" ]; then
			echo "layers: $f: in no known layer (add it to layers.sh)"
			bad=1
			continue
		fi
		while IFS= read -r line; do
			include_layer "${line#*:}" "$from"
			to=$LAYER
			[ -z "$to" ] && continue
			if [ "$to" = "?" ]; then
				echo "layers: $f:$line: names no known layer"
				bad=1
			elif ! allowed "$from" "$to"; then
				echo "layers: $f:$line: $from may not include $to"
				bad=1
			fi
			[ "$to" != "$from" ] && [ "$to" != "?" ] &&
				echo "$from $to" >>"$edges"
		done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$f")
	done < <(find src include/rpcrdma -name '*.[ch]' | sort)
	# tsort reports a loop in the folder graph, whatever ALLOWED says.
	if ! sort -u "$edges" | tsort >/dev/null 2>"$edges.err"; then
		echo "layers: include cycle between folders:"
		cat "$edges.err"
		bad=1
	fi
	rm -f "$edges" "$edges.err"
	[ "$bad" -eq 0 ] && echo "layers: $(find src include/rpcrdma -name '*.[ch]' | wc -l) files keep the layer rule"
	return "$bad"
}

# Copies the tree, adds LINE at the top of FILE, and expects the check to
# fail: the check is worth something only if it can.
expect_caught()
{
	local root=$1 file=$2 line=$3 tmp rc
	tmp=$(mktemp -d)
	cp -r "$root/src" "$root/include" "$tmp/"
	sed -i "1i $line" "$tmp/$file"
	(check_tree "$tmp") >/dev/null
	rc=$?
	rm -rf "$tmp"
	if [ "$rc" -ne 1 ]; then
		echo "self-test: '$line' in $file was not caught (rc $rc)"
		return 1
	fi
	echo "self-test: caught '$line' in $file"
}

self_test()
{
	local root=$1 bad=0
	(check_tree "$root") >/dev/null || {
		echo "self-test: the tree itself fails; run without --self-test"
		return 1
	}
	expect_caught "$root" src/rpc/msg.c '#include <rpcrdma/fabric.h>' || bad=1
	expect_caught "$root" src/rpc/tcp_io.h '#include <rpcrdma/rpc.h>' || bad=1
	expect_caught "$root" src/rpc/drc.c '#include "rpcrdma/hdr.h"' || bad=1
	expect_caught "$root" src/rpc/drc.c '#include <infiniband/verbs.h>' || bad=1
	expect_caught "$root" include/rpcrdma/oncrpc.h '#include <rpcrdma/faults.h>' || bad=1
	expect_caught "$root" src/base/log.c '#include "rpc/msg.h"' || bad=1
	expect_caught "$root" src/fabric/fabric.c '#include "rpcrdma/xprt.h"' || bad=1
	expect_caught "$root" src/nfs3/client/nfs.c '#include "fuse/nfs_fuse.h"' || bad=1
	return "$bad"
}

if [ "${1:-}" = "--self-test" ]; then
	self_test "${2:?usage: layers.sh --self-test SOURCE_DIR}"
else
	check_tree "${1:?usage: layers.sh SOURCE_DIR}"
fi
