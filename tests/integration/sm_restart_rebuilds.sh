#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Reservations survive an OpenSM restart: they are rebuilt from the state
# file with the same MGIDs and confirmed ready again (their MFT entries are
# wiped while OpenSM is down, since ibsim would otherwise keep the old SM's
# and a new SM that wrote nothing would pass); leases that ran out
# while the SM was down are dropped; a torn or damaged state file is
# reported and set aside, and OpenSM keeps serving.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
CORRUPT=$top_builddir/sim-fabric/ibmcast-mftcorrupt
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$CORRUPT" "sim-fabric/ibmcast-mftcorrupt (make check builds it)"

plan 30

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-rst.XXXXXX")
at_exit "rm -rf '$tmp'"
cd "$tmp" || bail_out "cd $tmp"

sim_up --hosts 32 --radix 8
ok $? "fabric up (32 hosts, radix 8)" || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
STATE=$SIM_DIR/ibmcast.state
ctl() { "$CTL" "$@"; }
sim() { "$IBMCAST_SIM" "$1" --dir "$SIM_DIR" "${@:2}"; }
mgids() { ctl --json status "$1" | jq -r '[.jobs[0].groups[].mgid] | join(",")'; }
# The nodes the first group of a job reaches, per the switches' MFTs.
reach_nodes() {
	local mlid
	mlid=$(ctl --json status "$1" | jq -r '.jobs[0].groups[0].mlid')
	sim diag -- "$WATCH" reach --mlid "$mlid" |
		jq -r '.mlids[0] | (.members | sort | join(",")) + " consistent=" + (.consistent | tostring)'
}

run_ok "reserve job 21 on node[1-12], 3 groups" ctl reserve 21 --nodes 'node[1-12]' --groups 3
run_ok "reserve job 22 on node[13-32], 2 groups" ctl reserve 22 --nodes 'node[13-32]' --groups 2
run_ok "both ready" sh -c "'$CTL' wait 21 >/dev/null && '$CTL' wait 22 >/dev/null"
m21=$(mgids 21)
m22=$(mgids 22)
is "$(jq -r '[.jobs[].job] | join(",")' "$STATE")" "21,22" \
	"the state file holds both reservations"

# --- restart: both come back, same identities, ready, right trees -------
mlids=$(ctl --json status | jq -r '[.jobs[].groups[].mlid] | join(" ")')
run_ok "stop OpenSM" sim stop-sm
# shellcheck disable=SC2086
before=$(mft_entries $mlids)
# shellcheck disable=SC2086
mft_wipe $mlids
rc=$?
# shellcheck disable=SC2086
is "$rc/$([ "$before" -gt 0 ]; echo $?)/$(mft_entries $mlids)" "0/0/0" \
	"with OpenSM down, the jobs' $before MFT entries ($mlids) are wiped from the switches"
run_ok "start OpenSM" sim start-sm
is "$(ctl --json status | jq -r '[.jobs[].job] | join(",")')" "21,22" \
	"right after the restart the plugin still knows both jobs"
run_ok "job 21 ready again" ctl wait 21 --timeout-ms 30000
run_ok "job 22 ready again" ctl wait 22 --timeout-ms 30000
is "$(mgids 21)" "$m21" "job 21 keeps its MGIDs"
is "$(mgids 22)" "$m22" "job 22 keeps its MGIDs"
want21=$(printf 'node%s\n' $(seq 1 12) | sort | paste -sd,)
is "$(reach_nodes 21)" "$want21 consistent=true" \
	"job 21's rebuilt tree reaches exactly node[1-12]"
want22=$(printf 'node%s\n' $(seq 13 32) | sort | paste -sd,)
is "$(reach_nodes 22)" "$want22 consistent=true" \
	"job 22's rebuilt tree reaches exactly node[13-32]"
is "$(ctl --json status | jq -r .server.state_load_error)" null \
	"a good state file raises no error"

# --- released jobs stay released ----------------------------------------
run_ok "release job 21" ctl release 21
run_ok "restart OpenSM again" sim restart-sm
run_ok "job 22 ready after the second restart" ctl wait 22 --timeout-ms 30000
is "$(ctl --json status | jq -r '[.jobs[].job] | join(",")')" "22" \
	"the released job does not come back"

# --- a lease that ends while the SM is down is not rebuilt --------------
run_ok "reserve job 23 with a 3 s lease" ctl reserve 23 --nodes 'node[1-4]' --groups 1 --lease 3
run_ok "stop OpenSM" sim stop-sm
sleep 4
run_ok "start OpenSM after the lease ran out" sim start-sm
ctl wait 22 --timeout-ms 30000 > /dev/null
is "$(ctl --json status | jq -r '[.jobs[].job] | join(",")')" "22" \
	"job 23's lease ended while OpenSM was down: dropped, job 22 kept"

# --- a torn state file ---------------------------------------------------
run_ok "stop OpenSM" sim stop-sm
head -c 60 "$STATE" > "$tmp/torn" && cp "$tmp/torn" "$STATE"
run_ok "OpenSM starts with a torn state file" sim start-sm
err=$(ctl --json status | jq -r .server.state_load_error)
like "$err" "not valid JSON.*kept as .*corrupt" \
	"status reports the torn file and where it was kept"
n=$(find "$SIM_DIR" -maxdepth 1 -name 'ibmcast.state.corrupt-*' | wc -l)
is "$n" 1 "the torn file is kept aside for the administrator"

# --- a file damaged in a way JSON cannot see ----------------------------
run_ok "reserve job 24 (new state written)" sh -c "'$CTL' reserve 24 --nodes 'node[5-8]' --groups 1 >/dev/null && '$CTL' wait 24 >/dev/null"
sim stop-sm > /dev/null 2>&1
sed -i 's/"groups": 1/"groups": 9/' "$STATE"
sim start-sm > /dev/null 2>&1
like "$(ctl --json status | jq -r .server.state_load_error)" "checksum mismatch" \
	"an edited state file fails its checksum and is not trusted"
