#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ibmcast-sim brings fabrics up side by side, reports and diagnoses them,
# and leaves no process behind after down or after a failed up.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd ibroute infiniband-diags
need_cmd ibnetdiscover infiniband-diags
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan 42

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-life.XXXXXX")
at_exit "rm -rf '$tmp'"

# no_procs DIR MSG: nothing of the fabric in DIR is running any more.
no_procs() {
	local left
	left=$(fabric_procs "$1")
	is "$left" "" "$2"
}

# hosts_seen DIR: how many node* HCAs ibnetdiscover finds in DIR's fabric.
hosts_seen() {
	sim_diag "$1" ibnetdiscover 2> /dev/null |
		grep -c '^Ca.*# "node[0-9]*"' || true
}

# --- one fabric without the plugin ---------------------------------------
diag "fabric A: 32 hosts, 2 levels, no plugin"
sim_up --hosts 32 --no-plugin
ok $? "up --no-plugin --hosts 32"
A=$SIM_DIR

out=$("$IBMCAST_SIM" status --dir "$A" 2>&1)
ok $? "status succeeds while everything runs" || diag "$out"
like "$out" 'ibsim: +running, pid [0-9]+' "status: ibsim running with its pid"
like "$out" 'opensm: +running, pid [0-9]+' "status: opensm running with its pid"
like "$out" 'SM state: MASTER' "status: OpenSM is MASTER"

out=$(sim_diag "$A" ibroute 2 2>&1)
like "$out" "Unicast lids .*\\(leaf1\\)" "diag ibroute reads leaf1's unicast table" ||
	diag "$out"
out=$(sim_diag "$A" ibroute -M 2 2>&1)
like "$out" "Multicast mlids" "diag ibroute -M reads leaf1's multicast table" ||
	diag "$out"
is "$(hosts_seen "$A")" 32 "diag ibnetdiscover sees all 32 hosts"
out=$("$IBMCAST_SIM" diag --dir "$A" --host node7 -- smpquery nodedesc -D 0 2>&1)
like "$out" 'node7' "diag --host node7 attaches to node7's HCA" || diag "$out"

env_a=$(cat "$A/env" 2>/dev/null)
like "$env_a" "export IBSIM_SOCKNAME=" "env has IBSIM_SOCKNAME"
like "$env_a" "export IBMCAST_SIM_PRELOAD=.*umad2sim" "env has the umad2sim preload"
like "$env_a" "export IBMCAST_SIM_DIR=" "env has IBMCAST_SIM_DIR"
ok "$(grep -q IBMCAST_SERVER= "$A/env"; [ $? = 1 ]; echo $?)" \
	"env names no control server without the plugin"
run_fails "up refuses a directory whose fabric is running" \
	"$IBMCAST_SIM" up --dir "$A" --hosts 8 --no-plugin

# --- a second fabric side by side --------------------------------------------
diag "fabric B: 16 hosts, 3 levels, radix 8, no plugin, beside A"
sim_up --hosts 16 --levels 3 --radix 8 --no-plugin
ok $? "a second fabric comes up beside the first"
B=$SIM_DIR
sock_a=$(sed -n 's/^export IBSIM_SOCKNAME=//p' "$A/env")
sock_b=$(sed -n 's/^export IBSIM_SOCKNAME=//p' "$B/env")
ok "$([ -n "$sock_a" ] && [ "$sock_a" != "$sock_b" ]; echo $?)" \
	"the two fabrics use different ibsim sockets ($sock_a, $sock_b)"
is "$(hosts_seen "$B")" 16 "diag on B sees B's 16 hosts"
is "$(hosts_seen "$A")" 32 "diag on A still sees A's 32 hosts"

procs_a=$(fabric_procs "$A")
ok "$([ "$(printf '%s\n' "$procs_a" | grep -cE 'ibsim|opensm|munged')" -ge 2 ]; echo $?)" \
	"fabric_procs finds A's daemons" || diag "$procs_a"
pids_a=$(cat "$A"/pids/* 2>/dev/null | awk '{ print $1 }')

run_ok "down A" "$IBMCAST_SIM" down --dir "$A"
no_procs "$A" "after down, nothing of A runs"
alive=
for p in $pids_a; do
	kill -0 "$p" 2>/dev/null && alive+=" $p"
done
is "$alive" "" "none of A's recorded pids is alive"
run_ok "down A again succeeds (idempotent)" "$IBMCAST_SIM" down --dir "$A"
run_fails "status reports A down with a failing exit" \
	"$IBMCAST_SIM" status --dir "$A"
run_ok "B still runs after A went down" "$IBMCAST_SIM" status --dir "$B"
is "$(hosts_seen "$B")" 16 "B still answers diag"
run_ok "down B" "$IBMCAST_SIM" down --dir "$B"
no_procs "$B" "after down, nothing of B runs"

# --- failing ups leave nothing -----------------------------------------------
run_fails "up --hosts 0 fails" "$IBMCAST_SIM" up --dir "$tmp/zero" --hosts 0 --no-plugin
run_fails "up --hosts 1000000 fails (the generator refuses it)" \
	"$IBMCAST_SIM" up --dir "$tmp/huge" --hosts 1000000 --no-plugin
no_procs "$tmp/huge" "the refused fabric left nothing running"

diag "an up whose OpenSM cannot bind (bogus guid option)"
sim_up --hosts 8 --no-plugin --opensm-opt guid=0xdeadbeef --timeout 30
rc=$?
ok "$([ "$rc" != 0 ]; echo $?)" "up with a bogus OpenSM option fails"
no_procs "$SIM_DIR" "the failed up left nothing running"
ok "$([ ! -e "$SIM_DIR/env" ]; echo $?)" "the failed up wrote no env"

# --- with the OpenSM plugin --------------------------------------------------
if ! plugin_built; then
	for _ in 1 2 3 4 5 6 7 8; do
		skip "osm-plugin/.libs/libibmcast_osm.so not built"
	done
	exit 0
fi

diag "fabric C: 16 hosts with the ibmcast plugin"
sim_up --hosts 16
ok $? "up with the plugin"
C=$SIM_DIR
server=$(sed -n 's/^export IBMCAST_SERVER=//p' "$C/env" 2>/dev/null)
like "$server" "^unix:$C/ibmcast.sock\$" "env has IBMCAST_SERVER on the Unix socket"
ok "$([ -S "${server#unix:}" ]; echo $?)" "the control socket exists"
like "$(cat "$C/env")" "export IBMCAST_SERVER_TCP=tcp:127.0.0.1:[0-9]+" \
	"env has IBMCAST_SERVER_TCP with the port the plugin chose"
run_ok "down C" "$IBMCAST_SIM" down --dir "$C"
no_procs "$C" "after down, nothing of C runs (nor anything OpenSM spawned)"

diag "an up whose plugin refuses its options"
sim_up --hosts 8 --plugin-opt no_such_option=1 --timeout 60
rc=$?
ok "$([ "$rc" != 0 ]; echo $?)" "up with a bogus plugin option fails"
no_procs "$SIM_DIR" "the failed up left nothing running"
