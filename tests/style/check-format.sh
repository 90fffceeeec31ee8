#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Every C source and header the repository tracks is as .clang-format
# says. Formatting differs between clang-format releases, so the check
# runs only with the release the tree is formatted with (Debian 12's);
# another release, or none, is a skip with the reason.
set -u
top=${1:?usage: check-format.sh SOURCE-DIR}
want=14
cf=$(command -v clang-format-$want || command -v clang-format || true)
if [ -z "$cf" ]; then
	echo "SKIP: clang-format is not installed"
	exit 77
fi
major=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$major" != "$want" ]; then
	echo "SKIP: $cf is release $major; the tree is formatted with $want"
	exit 77
fi
cd "$top" || exit 1
if ! files=$(git ls-files '*.c' '*.h' 2>/dev/null) || [ -z "$files" ]; then
	files=$(find src include tests tools -name '*.c' -o -name '*.h')
fi
# One run over every file is the common case; only a failure is looked
# at file by file, to name what is wrong.
# shellcheck disable=SC2086 # $files is a word list
if "$cf" --dry-run -Werror $files >/dev/null 2>&1; then
	echo "$(echo "$files" | wc -w) files checked, 0 not formatted"
	exit 0
fi
bad=0
for f in $files; do
	if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
		echo "not formatted: $f (clang-format -i $f)"
		bad=$((bad + 1))
	fi
done
echo "$(echo "$files" | wc -w) files checked, $bad not formatted"
[ "$bad" -eq 0 ]
