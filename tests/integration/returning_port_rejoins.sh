#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A member node's HCA link goes down during a job and comes back: the job
# reports the port missing and is confirmed again without it; on its
# return the plugin re-adds it, the groups are confirmed again with MFTs
# (read from the switches) routing to it, and multicast reaches it again
# through the data plane.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$DP_BIN" "sim-fabric/ibmcast-dataplane"
need_file "$DP_TOOL" "tests/dataplane/dp_tool"

plan 16

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-rejoin.XXXXXX")
at_exit "rm -rf '$tmp'"

sim_up --hosts 12 --radix 8 --plugin-opt verify_ms=500 ||
	bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
ctl() { "$CTL" "$@"; }
job() { ctl --json status 51 | jq -r ".jobs[0]$1"; }
# Member ports missing, per group: "0 0" when none are.
missing() { job '.groups | map(.missing_ports // 0) | join(" ")'; }
# "members consistent" of MLID $1 as the switches' MFTs say.
reach() {
	on_fabric "$WATCH" reach --mlid "$1" |
		jq -r '.mlids[0] | (.members | sort | join(",")) + " " + (.consistent | tostring)'
}
both_reach() { [ "$(reach "$m0")" = "$1" ] && [ "$(reach "$m1")" = "$1" ]; }
# deliver TAG: node1 sends 2 packets to group 0: "N6 N2", what node6 and
# node2 (a member throughout, the control) got.
deliver() {
	dp_mc_probe "$1" node1 node6 node2 "$mgid" "$m0" "$qkey"
}
all6=$(printf 'node%s\n' $(seq 1 6) | sort | paste -sd,)
all5=$(printf 'node%s\n' $(seq 1 5) | sort | paste -sd,)

run_ok "reserve job 51 on node[1-6], 2 groups" \
	ctl reserve 51 --nodes 'node[1-6]' --groups 2
run_ok "job 51 ready" ctl wait 51 --timeout-ms 30000
# (The Q_Key is the job's, shared by its groups.)
read -r mgid m0 qkey <<< "$(job ' | "\(.groups[0].mgid) \(.groups[0].mlid) \(.qkey)"')"
m1=$(job '.groups[1].mlid')
ok "$(both_reach "$all6 true"; echo $?)" \
	"both groups' MFTs reach node1..node6 ($m0: $(reach "$m0"))"
is "$(deliver before)" "2 2" "node6 (and node2) receive the group's packets"

run_ok "take node6's HCA link down" "$IBMCAST_SIM" link down node6 1 \
	--dir "$SIM_DIR" --wait
ok "$(wait_until 30 sh -c "[ \"\$('$CTL' --json status 51 |
	jq -r '.jobs[0].groups | map(.missing_ports // 0) | join(\" \")')\" = '1 1' ]"; echo $?)" \
	"each group reports node6's port missing ($(missing))"
ok "$(wait_until 30 both_reach "$all5 true"; echo $?)" \
	"the MFTs now reach node1..node5 only ($(reach "$m0"))"
run_ok "job 51 is confirmed again without it" ctl wait 51 --timeout-ms 30000
is "$(deliver gone)" "0 2" "node6 receives nothing while its link is down (node2 gets both)"

rejoins=$(ctl --json status | jq .counters.rejoins)
run_ok "bring node6's HCA link back" "$IBMCAST_SIM" link up node6 1 \
	--dir "$SIM_DIR" --wait
ok "$(wait_until 60 sh -c "[ \"\$('$CTL' --json status | jq .counters.rejoins)\" -ge $((rejoins + 2)) ]"; echo $?)" \
	"the plugin re-added node6's port to both groups (rejoins $rejoins -> $(ctl --json status | jq .counters.rejoins))"
run_ok "job 51 is ready again" ctl wait 51 --timeout-ms 30000
is "$(job .state) $(missing)" "ready 0 0" "ready, and no port is missing"
ok "$(wait_until 30 both_reach "$all6 true"; echo $?)" \
	"both groups' MFTs reach node1..node6 again ($(reach "$m0"); $(reach "$m1"))"
# The data plane reads port states every --topo-ms: on a loaded machine
# its view of node6's link may lag the SM's.
no_link_down() {
	[ "$(dp_ctl counters | jq '[.links[] | select(.down == true)] | length')" = 0 ]
}
ok "$(wait_until 30 no_link_down; echo $?)" "the data plane sees node6's link up again"
# A port that comes up again can also need the data plane's rediscovery,
# whose retries back off up to 60 s: delivery is awaited, bounded.
back_delivered() {
	tries=$((tries + 1))
	got_back=$(deliver "back$tries")
	[ "$got_back" = "2 2" ]
}
tries=0
wait_until 120 back_delivered
is "$got_back" "2 2" "node6 receives the group's packets again (probe $tries)"
