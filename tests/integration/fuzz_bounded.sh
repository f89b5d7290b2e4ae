#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Bounded libFuzzer runs of the request decoder and the hostlist code,
# started from a copy of the kept corpus; any crash, leak, timeout or
# broken invariant fails the test and leaves the input in the log (base64).
#
# Environment: IBMCAST_FUZZ_SECONDS  time for fuzz_request (default 60);
#              fuzz_hostlist gets half of it.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

# Only when configure found a clang that links libFuzzer does the Makefile
# define the targets (BUILD_FUZZ), and make check build them.
if ! grep -q '^fuzz_targets = ' "$top_builddir/Makefile"; then
	skip_all "clang/libFuzzer not installed (clang-14, libclang-rt-14-dev)"
fi

seconds=${IBMCAST_FUZZ_SECONDS:-60}
targets=(request hostlist)
plan ${#targets[@]}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-fuzz.XXXXXX")
at_exit "rm -rf '$tmp'"

for t in "${targets[@]}"; do
	bin=$top_builddir/tests/fuzz/fuzz_$t
	need_file "$bin" "the libFuzzer target fuzz_$t"
	secs=$seconds
	[ "$t" = request ] || secs=$(((seconds + 1) / 2))

	# libFuzzer adds what it finds to the first directory: a copy, so
	# the source tree stays as it is.
	mkdir -p "$tmp/$t/corpus" "$tmp/$t/crash"
	cp "$top_srcdir/tests/fuzz/corpus/$t/"* "$tmp/$t/corpus/"
	before=$(find "$tmp/$t/corpus" -type f | wc -l)
	dict=()
	[ -f "$top_srcdir/tests/fuzz/$t.dict" ] &&
		dict=(-dict="$top_srcdir/tests/fuzz/$t.dict")

	# -timeout: one input taking seconds would stall the plugin's
	# single server thread just the same.
	rc=0
	"$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
		-print_final_stats=1 "${dict[@]}" \
		-artifact_prefix="$tmp/$t/crash/" "$tmp/$t/corpus" \
		>"$tmp/$t/log" 2>&1 || rc=$?
	after=$(find "$tmp/$t/corpus" -type f | wc -l)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$t/log")
	if ok "$rc" "fuzz_$t: ${secs}s, ${runs:-?} inputs, no failure" \
		"($((after - before)) new corpus inputs)"; then
		continue
	fi
	diag "fuzz_$t exited $rc; the end of its log:"
	diag "$(tail -n 60 "$tmp/$t/log")"
	for f in "$tmp/$t/crash/"*; do
		[ -f "$f" ] || continue
		diag "input $(basename "$f") ($(stat -c %s "$f") bytes)," \
			"replay with: base64 -d >in && $bin in"
		diag "$(head -c 262144 "$f" | base64)"
	done
done
