#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The data plane follows the fabric while it runs, as the SM does: a link
# taken down carries nothing (even where a switch's MFT still points at it)
# until it is back; after OpenSM has routed around it, delivery works over
# the new path; a link that did not exist when the daemon started is
# discovered when it comes up and then carries the group's packets.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
need_file "$CTL" "tools/ibmcastctl"
need_file "$DP_BIN" "sim-fabric/ibmcast-dataplane"
need_file "$DP_TOOL" "tests/dataplane/dp_tool"

plan 18

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-dpfollow.XXXXXX")
at_exit "rm -rf '$tmp'"

# Radix 8: node1..node4 on leaf1, node5..node8 on leaf2; leaf1's ports 5-8
# go up to the spines, so a group on both leaves crosses one of them.
sim_up --hosts 12 --radix 8 --dataplane-opt --topo-ms=200 ||
	bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
sim() { "$IBMCAST_SIM" "$1" --dir "$SIM_DIR" "${@:2}"; }
topo() { dp_ctl counters | jq -r ".topology.$1"; }
# The data plane's view of leaf1's uplink $1: "down" true or false.
link_down() {
	dp_ctl counters --all | jq -r --argjson p "$1" \
		'.links[] | select(.from == "leaf1" and .from_port == $p) | .down'
}
link_is_down() { [ "$(link_down "$1")" = true ]; }
knows_links() { [ "$(topo link_directions)" = "$1" ]; }
# leaf1's uplinks that carried packets since the last reset.
used_uplinks() {
	dp_ctl counters | jq -r '[.links[] | select(.from == "leaf1" and
		.from_port >= 5 and .packets > 0) | .from_port] | sort | join(" ")'
}
group() {
	"$CTL" --json wait 61 --timeout-ms 60000 2> /dev/null |
		jq -r '.job | "\(.groups[0].mgid) \(.groups[0].mlid) \(.qkey)"'
}
# deliver TAG: node1 sends 2 packets to the group: "N6 N2", what node6
# (the other leaf) and node2 (the same leaf, the control) got.
deliver() {
	dp_mc_probe "$1" node1 node6 node2 "$mgid" "$mlid" "$qkey"
}
tries=0
delivers_both() { [ "$(deliver "try$((++tries))")" = "2 2" ]; }

# A daemon started while leaf1's port 8 is down knows no link there.
full=$(topo link_directions)
run_ok "take leaf1's uplink 8 down" sim link down leaf1 8 --wait
run_ok "restart the data plane" sim restart-dataplane
is "$(topo link_directions)" "$((full - 2))" \
	"it discovered the fabric without that link ($full -> $((full - 2)) link directions)"

"$CTL" reserve 61 --nodes 'node[1-8]' --groups 1 > /dev/null 2>&1
read -r mgid mlid qkey <<< "$(group)"
ok "$([ -n "$mlid" ]; echo $?)" "job 61 is ready with group $mlid"
is "$(deliver first)" "2 2" "node6 (and node2) receive the group's packets"
up=$(used_uplinks)
like "$up" '^[5-7]$' "they left leaf1 by uplink $up"

# With OpenSM stopped nothing reroutes: the switches still forward over
# the link, which no longer carries anything.
run_ok "stop OpenSM" sim stop-sm
run_ok "take leaf1's uplink $up down" sim link down leaf1 "$up" --wait
ok "$(wait_until 20 link_is_down "$up"; echo $?)" \
	"the data plane sees leaf1's port $up down"
is "$(deliver dead)" "0 2" "node6 receives nothing over the dead link (node2 gets both)"
drops=$(dp_ctl counters | jq --argjson p "$up" \
	'[.links[] | select(.from == "leaf1" and .from_port == $p) | .drops.link_down] | add // 0')
is "$drops" 2 "both packets were dropped at leaf1's port $up (link_down)"

# OpenSM back: it routes the group around the link; the plugin rebuilds
# the job from its state file.
run_ok "start OpenSM again" sim start-sm
read -r mgid mlid qkey <<< "$(group)"
is "$(deliver rerouted)" "2 2" "after the SM rerouted, node6 receives them again"
now=$(used_uplinks)
ok "$([ -n "$now" ] && [[ " $now " != *" $up "* ]]; echo $?)" \
	"over another uplink ($now, not $up)"

# Leaf1's port 8 comes up: the daemon discovers the new link; with the
# other uplinks down, OpenSM must route the group over it.
run_ok "bring leaf1's uplink 8 up" sim link up leaf1 8 --wait
ok "$(wait_until 30 knows_links "$full"; echo $?)" \
	"the data plane discovered it (link directions $(topo link_directions), rediscoveries $(topo rediscoveries))"
for p in 5 6 7; do
	[ "$p" = "$up" ] || sim link down leaf1 "$p" --wait > /dev/null 2>&1
done
ok "$(wait_until 90 delivers_both; echo $?)" \
	"with leaf1's uplinks 5-7 down, node6 receives the packets again"
is "$(used_uplinks)" 8 "they crossed the link discovered while running (leaf1 port 8)"
