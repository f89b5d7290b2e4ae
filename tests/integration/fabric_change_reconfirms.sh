#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A link or a switch on a group's tree goes down: the job leaves `ready` until OpenSM
# has rerouted it and the switches agree, then is ready again on a tree
# that avoids the dead link; a member whose link dies is reported.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd jq jq
need_cmd ibroute infiniband-diags
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"

plan 18

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-fc.XXXXXX")
at_exit "rm -rf '$tmp'"
cd "$tmp" || bail_out "cd $tmp"

# Radix 8: 4 hosts and 4 uplinks per leaf, so a job on two leaves has a
# tree through one of several spines and OpenSM can route around a link.
sim_up --hosts 32 --radix 8 --plugin-opt verify_ms=500
ok $? "fabric up (32 hosts, radix 8)" || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
ctl() { "$CTL" "$@"; }
sim() { "$IBMCAST_SIM" "$1" --dir "$SIM_DIR" "${@:2}"; }
counter() { ctl --json status | jq -r ".counters.$1"; }
# Poll CMD (a shell condition) for up to $1 seconds.
within() {
	local t=$1 i
	shift
	for ((i = 0; i < t * 10; i++)); do
		eval "$*" && return 0
		sleep 0.1
	done
	return 1
}
# The ports of leaf1 (by name) that carry MLID $1, per ibroute -M.
leaf_ports() {
	fabric_topology "$SIM_DIR" > "$tmp/topo"
	fabric_mft_rows "$SIM_DIR" "$tmp/topo" > "$tmp/mft"
	awk -v m="$1" 'FNR == NR { if ($2 == "desc" && $3 == "leaf1") l = $1; next }
		$1 == m && $2 == l { print $3 }' "$tmp/topo" "$tmp/mft" | sort -n | paste -sd' '
}
reach() {
	sim diag -- "$WATCH" reach --mlid "$1" |
		jq -r '.mlids[0] | (.members | sort | join(",")) + " " + (.consistent | tostring)'
}

run_ok "reserve job 41 on node[1-8] (leaf1 and leaf2)" ctl reserve 41 --nodes 'node[1-8]' --groups 1
run_ok "job 41 ready" ctl wait 41
mlid=$(ctl --json status 41 | jq -r '.jobs[0].groups[0].mlid')
want=$(printf 'node%s\n' $(seq 1 8) | sort | paste -sd,)
is "$(reach "$mlid")" "$want true" "the tree reaches node1..node8"

# leaf1's ports 1-4 go to hosts, 5-8 up to the spines: find the uplink the
# tree uses.
up=$(leaf_ports "$mlid" | tr ' ' '\n' | awk '$1 >= 5' | head -n 1)
like "$up" '^[5-8]$' "the tree leaves leaf1 through uplink port $up"

rebuilds=$(counter rebuilds)
run_ok "take leaf1's port $up down" sim link down leaf1 "$up" --wait
ok "$(within 30 "[ \"\$(counter rebuilds)\" -gt $rebuilds ]"; echo $?)" \
	"the plugin noticed: job 41 went back to building (rebuilds $rebuilds -> $(counter rebuilds))"
run_ok "wait blocks until job 41 is ready again" ctl wait 41 --timeout-ms 30000
is "$(ctl --json status 41 | jq -r .jobs[0].state)" ready "job 41 is ready again"
is "$(reach "$mlid")" "$want true" "the rerouted tree still reaches node1..node8"
now=$(leaf_ports "$mlid")
ok "$([[ " $now " != *" $up "* ]]; echo $?)" \
	"leaf1 no longer forwards MLID $mlid to the dead port $up (now: $now)"

# A whole switch on the tree goes away: every link of the spine the tree
# now crosses (leaf1's uplink k reaches spine k-4 in this topology).
up2=$(leaf_ports "$mlid" | tr ' ' '\n' | awk '$1 >= 5' | head -n 1)
spine=S-spine$((up2 - 4))
rebuilds=$(counter rebuilds)
run_ok "take switch $spine (on the tree) off the fabric" sim console -- "Unlink \"$spine\""
ok "$(within 30 "[ \"\$(counter rebuilds)\" -gt $rebuilds ]"; echo $?)" \
	"job 41 went back to building when $spine disappeared"
run_ok "and is ready again" ctl wait 41 --timeout-ms 30000
now=$(leaf_ports "$mlid")
ok "$([[ " $now " != *" $up2 "* ]] && [ "$(reach "$mlid")" = "$want true" ]; echo $?)" \
	"the new tree avoids $spine and still reaches node1..node8 (leaf1 ports: $now)"

# A member's own link dies: OpenSM drops its port; the job says so.
run_ok "take node8's HCA link down" sim link down node8 1 --wait
ok "$(within 30 "[ \"\$(ctl --json status 41 | jq -r '.jobs[0].groups[0].missing_ports // 0')\" = 1 ]"; echo $?)" \
	"status reports one member port gone from job 41's group"
want7=$(printf 'node%s\n' $(seq 1 7) | sort | paste -sd,)
ok "$(within 30 "[ \"\$(reach $mlid)\" = '$want7 true' ]"; echo $?)" \
	"the remaining members still reach each other: $(reach "$mlid")"
