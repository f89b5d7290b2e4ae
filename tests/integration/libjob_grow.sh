#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Mode sm with more communicators than the job's pool has groups: the
# communicator that finds the pool exhausted starts on point-to-point at
# once, its rank 0 asks the plugin for one more group (grow), and once the
# SM has confirmed that group ready every member switches to multicast at
# the same collective: broadcasts and allreduces (whose algorithm each
# member picks itself) are right before, across and after the switch. The
# grown group is the job's (status), and leaves the switches with the job.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
modes_need
plan 11

JOB=411
# job_groups: index, grown flag and state of each of the job's groups.
job_groups() {
	"$IBMCASTCTL" --json status "$JOB" |
		jq -r '.jobs[0].groups[] | "\(.index) \(.grown // false) \(.state) \(.mlid)"'
}

sim_up --hosts 4 --radix 4 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve "$JOB" 'node[1-4]' 1 || bail_out "job $JOB not ready"
ibmcast_env_from_wait "$JOB" || bail_out "no environment for job $JOB"
is "$(job_groups | wc -l)" 1 "the job has one group before"
export IBMCAST_LOG_LEVEL=info

# Two communicators over the 4 ranks: the first takes the pool's group,
# the second grows one. Broadcasts (each followed by an allreduce) go on
# until rank 0 saw 8 of them by multicast.
out=$SIM_DIR/grow.out
"$IBMCAST_RUN" -n 4 --nodes 'node[1-4]' -k 1 --timeout 240 -- "$MODES" \
	--comms 2 --count 8 --until-mcast 8 --max 20000 --allreduce \
	> "$out" 2>&1
ok $? "ranks exited 0" || diag "$(tail -n 30 "$out")"
diag "$(grep -E '^(rank|summary)' "$out")"
ok "$([ "$(modes_field bad "$out")" = 0 ]; echo $?)" \
	"every broadcast and allreduce result right"
ok "$([ "$(modes_field first_p2p "$out")" = 4 ] &&
	grep -q '^rank 0 .*first_ar=recursive_doubling' "$out"; echo $?)" \
	"creation did not wait: the first broadcast and allreduce went point-to-point"
ok "$([ "$(modes_field switched "$out")" = 4 ] && [ "$(modes_field ready "$out")" = 4 ]; echo $?)" \
	"every member switched to multicast"
ok "$([ "$(modes_field last_mcast "$out")" = 4 ] &&
	[ "$(modes_field last_ar_mcast "$out")" = 4 ]; echo $?)" \
	"after the switch broadcasts and allreduces go by multicast on every member"
ok "$(grep -qE 'grew group 1 \(MLID 0x[0-9a-f]+\): .*SM-confirmed ready' "$out"; echo $?)" \
	"rank 0 grew group 1 and waited for the SM's confirmation ($(grep -oE 'grew group.*' "$out" | head -n 1))"
ok "$(grep -qE 'multicasts from collective #[0-9]+ on' "$out" &&
	[ "$(grep -oE 'multicasts from collective #[0-9]+' "$out" | sort -u | wc -l)" = 1 ]; echo $?)" \
	"all members named the same collective for the switch ($(grep -oE 'multicasts from collective #[0-9]+' "$out" | sort -u | paste -sd' '))"

groups=$(job_groups)
diag "$groups"
grown_mlid=$(awk '$1 == 1 && $2 == "true" && $3 == "ready" { print $4 }' <<< "$groups")
ok "$([ -n "$grown_mlid" ]; echo $?)" "the job's status shows group 1 grown and ready"
ok "$([ "$(mft_entries "$grown_mlid")" -gt 0 ]; echo $?)" \
	"the switches carry the grown group while the job lives"
"$IBMCASTCTL" release "$JOB" > /dev/null
# A function, so that each try reads the MFTs again.
mft_clear() { [ "$(mft_entries "$1")" = 0 ]; }
wait_until 60 mft_clear "$grown_mlid"
ok "$([ "$(mft_entries "$grown_mlid")" = 0 ]; echo $?)" \
	"released with the job: no switch holds the grown group's MLID"
