#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# OpenSM with the plugin checks for leaks when it stops: ibmcast-sim runs
# it under the AddressSanitizer runtime (IBMCAST_SANITIZE=address, as the
# sanitizer suite does, here in both builds), with leak detection on and
# only OpenSM's own leaks suppressed, one function at a time. OpenSM exits
# on SIGTERM, so the check runs; a report fails stop-sm, lands in
# DIR/sanitizer.log, and fails any test whose fabric shows one (lib.sh).
# The positive control removes the suppressions: OpenSM's own leak is then
# reported, so a leak of the plugin's would be too.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

fabric_need
plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
CTL=$top_builddir/tools/ibmcastctl
need_file "$CTL" "tools/ibmcastctl"
[ -e "$(${CC:-gcc} -print-file-name=libasan.so)" ] ||
	bail_out "libasan.so not found (gcc's AddressSanitizer runtime)"

plan 7

export IBMCAST_SANITIZE=address
sim_up --hosts 8 --radix 4 --no-dataplane
ok $? "fabric up, OpenSM under the AddressSanitizer runtime" ||
	bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
SUPP=$SIM_DIR/lsan-opensm.supp
# An active suppression names a function; never a library or our frames.
is "$(grep -vE '^(#|$)' "$SUPP" | grep -cvE '^leak:osm_[a-z_]+$')" 0 \
	"OpenSM's leak suppressions each name one OpenSM function" ||
	diag "$(cat "$SUPP")"

# The plugin at work: a job reserved, ready and released, then OpenSM
# stopped; its leak check (the plugin's, smpd's allocations) is clean.
"$CTL" reserve 7 --nodes 'node[1-4]' --groups 2 > /dev/null 2>&1
w=$("$CTL" --json wait 7 --timeout-ms 30000 2>&1)
"$CTL" release 7 > /dev/null 2>&1
is "$(jq -r .job.state <<< "$w" 2>&1)" ready "job 7 was ready" || diag "$w"
out=$("$IBMCAST_SIM" stop-sm --dir "$SIM_DIR" 2>&1)
rc=$?
is "$rc/$([ -e "$SIM_DIR/sanitizer.log" ]; echo $?)" "0/1" \
	"OpenSM exits on SIGTERM with no leak reported" ||
	diag "$out" "$(cat "$SIM_DIR/sanitizer.log" 2> /dev/null)"

# Positive control: without the suppressions OpenSM's own leak shows, and
# stop-sm fails naming it.
cp "$SUPP" "$SUPP.saved"
: > "$SUPP"
"$IBMCAST_SIM" start-sm --dir "$SIM_DIR" 2>&1 | sed 's/^/# /'
ok "${PIPESTATUS[0]}" "OpenSM started again, with no suppressions"
out=$("$IBMCAST_SIM" stop-sm --dir "$SIM_DIR" 2>&1)
rc=$?
is "$rc/$(grep -c 'ERROR: LeakSanitizer' "$SIM_DIR/sanitizer.log" 2> /dev/null)" \
	"1/1" "without them stop-sm fails and sanitizer.log holds the report" ||
	diag "$out"
like "$(cat "$SIM_DIR/sanitizer.log" 2> /dev/null)" \
	"leak of [0-9]+ byte.*osm_vendor_get" \
	"  the report is OpenSM's own leak, which the suppressions name"
# Seen; it must not fail this test at exit.
mv -f "$SIM_DIR/sanitizer.log" "$SIM_DIR/sanitizer.log.control"
mv -f "$SUPP.saved" "$SUPP"
