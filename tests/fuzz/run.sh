#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Grows the kept corpus by hand: fuzzes one target for a while starting
# from tests/fuzz/corpus/TARGET, then merges back only the inputs that add
# coverage (libFuzzer -merge=1). CI's bounded run is
# tests/integration/fuzz_bounded.sh; this is for longer sessions.
#
# Usage: tests/fuzz/run.sh TARGET [SECONDS] [LIBFUZZER-ARGS...]
#   TARGET   request or hostlist; SECONDS defaults to 600
# Environment: IBMCAST_BUILDDIR, a build configured with clang found
#   (default ./build); the target is built there with make first.
# A crash is kept under the scratch directory printed at the end; fix it,
# then copy the input into the corpus so that make check replays it.

set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
target=${1:?usage: tests/fuzz/run.sh request|hostlist [SECONDS]}
seconds=${2:-600}
shift $(($# < 2 ? $# : 2))
builddir=${IBMCAST_BUILDDIR:-$root/build}
corpus=$root/tests/fuzz/corpus/$target
bin=$builddir/tests/fuzz/fuzz_$target

[ -d "$corpus" ] || { echo "run.sh: no corpus $corpus" >&2; exit 2; }
make -C "$builddir" "tests/fuzz/fuzz_$target" >/dev/null

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-fuzz-$target.XXXXXX")
mkdir -p "$scratch/new" "$scratch/crash"
dict=()
[ -f "$root/tests/fuzz/$target.dict" ] &&
	dict=(-dict="$root/tests/fuzz/$target.dict")

rc=0
"$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
	"${dict[@]}" -artifact_prefix="$scratch/crash/" "$@" \
	"$scratch/new" "$corpus" || rc=$?
before=$(find "$corpus" -type f | wc -l)
"$bin" -merge=1 -rss_limit_mb=2048 -timeout=10 "$corpus" "$scratch/new" \
	2>"$scratch/merge.log" || {
	echo "run.sh: merge failed, see $scratch/merge.log" >&2
	exit 1
}
after=$(find "$corpus" -type f | wc -l)
echo "run.sh: $target: corpus $before -> $after inputs" \
	"($(du -sb "$corpus" | cut -f1) bytes)"
if [ "$rc" -ne 0 ]; then
	echo "run.sh: fuzz_$target failed (exit $rc); inputs in $scratch/crash" >&2
	exit 1
fi
rm -rf "$scratch"
