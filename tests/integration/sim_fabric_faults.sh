#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ibmcast-sim injects the control plane's faults for real: links taken down
# and back through ibsim's console (OpenSM resweeps), OpenSM stopped and
# restarted with its plugin, and a standby SM taking over from the master.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd ibnetdiscover infiniband-diags
need_cmd iblinkinfo infiniband-diags
need_cmd smpquery infiniband-diags
need_cmd sminfo infiniband-diags
need_cmd flock util-linux
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan 56

# shellcheck disable=SC2154 # lib.sh sets top_builddir
CTL=$top_builddir/tools/ibmcastctl
PLUGIN=1
plugin_built && [ -x "$CTL" ] || PLUGIN=0

sim() { "$IBMCAST_SIM" "$@"; }

# leaf1_ports DIR: the ports of leaf1 that ibnetdiscover finds cabled, and
# to what, one "PORT NAME" a line.
leaf1_ports() {
	sim_diag "$1" ibnetdiscover 2> /dev/null | awk '
		/^Switch/ { on = ($0 ~ /# "leaf1"/); next }
		on && /^\[/ { p = $1; gsub(/[][]/, "", p)
			      n = $0; sub(/.*# "/, "", n); sub(/".*/, "", n)
			      print p, n }
		on && /^$/ { on = 0 }'
}

# lid_of DIR NAME: the LID ibnetdiscover reports for switch NAME.
lid_of() {
	sim_diag "$1" ibnetdiscover 2> /dev/null |
		sed -n "s/^Switch.*# \"$2\" .* lid \\([0-9]*\\) .*/\\1/p"
}

# link_state DIR LID PORT: PortInfo's LinkState read with smpquery.
link_state() {
	sim_diag "$1" smpquery portinfo "$2" "$3" 2> /dev/null |
		sed -n 's/^LinkState:\.*//p'
}

# The conditions the test waits for, as commands: wait_until then reads
# the port or the log again on each try.
# link_is DIR LID PORT STATE: LinkState is STATE.
link_is() {
	[ "$(link_state "$1" "$2" "$3")" = "$4" ]
}
# ups_above LOG N: OpenSM logged SUBNET UP more than N times.
ups_above() {
	[ "$(count_matches "$1" 'SUBNET UP')" -gt "$2" ]
}

hosts_seen() {
	sim_diag "$1" ibnetdiscover 2> /dev/null |
		grep -c '^Ca.*# "node[0-9]*"' || true
}

# ctl_state SERVER: the sm_state a plugin reports in its status reply.
ctl_state() {
	"$CTL" -s "$1" -t 3000 --json status 2> /dev/null |
		sed -n 's/.*"sm_state": *"\([a-z-]*\)".*/\1/p'
}

ctl_is() { [ "$(ctl_state "$1")" = "$2" ]; }

env_get() { sed -n "s/^export $2=//p" "$1/env" 2> /dev/null; }

# --- links, on a 32-host radix-8 fabric ---------------------------------------
opts=(--hosts 32 --radix 8)
[ "$PLUGIN" = 1 ] || opts+=(--no-plugin)
diag "fabric A: 32 hosts, radix 8$([ "$PLUGIN" = 1 ] || echo ', no plugin (not built)')"
sim_up "${opts[@]}"
ok $? "up --hosts 32 --radix 8" || bail_out "fabric A did not come up"
A=$SIM_DIR
log=$A/opensm.log

ok "$([ -p "$A/ibsim.console" ]; echo $?)" "ibsim's console is the FIFO DIR/ibsim.console"
out=$(sim console --dir "$A" -- Attached 2>&1)
like "$out" 'Client 0: pid [0-9]+ connected at "H-ibmcast-sm1".* SM' \
	"console Attached lists OpenSM as ibsim's SM client" || diag "$out"
out=$(sim console --dir "$A" -- Help 2>&1)
like "$out" 'Unlink "nodeid"\[port\]' "console Help returns ibsim's help"
run_fails "console reports a command ibsim does not know" \
	sim console --dir "$A" -- NoSuchCommand
run_fails "link refuses a node not in fabric.net" \
	sim link --dir "$A" down S-leaf99 1
run_fails "link refuses a port the node does not have" \
	sim link --dir "$A" down S-leaf1 9

like "$(leaf1_ports "$A" | grep '^5 ')" '^5 spine1$' \
	"ibnetdiscover: leaf1 port 5 is cabled to spine1"
out=$(sim link --dir "$A" show S-leaf1 5 2>&1)
like "$out" 'S-leaf1\[5\] <-> S-spine1\[1\]: Active LinkUp' "link show: Active" ||
	diag "$out"
traps0=$(count_matches "$log" 'num:128')
ups0=$(count_matches "$log" 'SUBNET UP')

run_ok "link down S-leaf1 5 --wait" sim link --dir "$A" down S-leaf1 5 --wait
is "$(leaf1_ports "$A" | grep -c '^5 ')" 0 \
	"ibnetdiscover no longer finds leaf1 port 5 cabled"
out=$(sim link --dir "$A" show leaf1 5 2>&1)
like "$out" ': Down Polling$' "link show: Down Polling" || diag "$out"
# OpenSM hears the switches' trap 128 and sweeps the subnet again.
wait_until 30 ups_above "$log" "$ups0"
ok $? "OpenSM resweeps after the link went down (SUBNET UP again)"
ok "$([ "$(count_matches "$log" 'num:128')" -gt "$traps0" ]; echo $?)" \
	"OpenSM logs the link-state-change trap 128"
lid1=$(lid_of "$A" leaf1)
wait_until 10 link_is "$A" "$lid1" 5 Down
ok $? "smpquery portinfo on leaf1 (lid $lid1) port 5: LinkState Down" ||
	diag "LinkState: '$(link_state "$A" "$lid1" 5)'"
run_fails "link down on a port already down fails" \
	sim link --dir "$A" down S-leaf1 5

ups1=$(count_matches "$log" 'SUBNET UP')
run_ok "link up S-leaf1 5 --wait (Active again)" \
	sim link --dir "$A" up S-leaf1 5 --wait
like "$(leaf1_ports "$A" | grep '^5 ')" '^5 spine1$' \
	"ibnetdiscover finds leaf1 port 5 cabled to spine1 again"
is "$(link_state "$A" "$lid1" 5)" Active "smpquery portinfo: LinkState Active"
wait_until 30 ups_above "$log" "$ups1"
ok $? "OpenSM resweeps after the link came back"
run_fails "link up on a port already up fails (no link to restore)" \
	sim link --dir "$A" up S-leaf1 5

run_ok "link down H-node3 1 (a host's cable, given by name)" \
	sim link --dir "$A" down node3 1 --wait
is "$(hosts_seen "$A")" 31 "ibnetdiscover sees 31 hosts"
run_ok "link up H-node3 1" sim link --dir "$A" up H-node3 1 --wait
is "$(hosts_seen "$A")" 32 "ibnetdiscover sees all 32 hosts again"

# --- OpenSM restart ---------------------------------------------------------
if [ "$PLUGIN" = 1 ]; then
	server=$(env_get "$A" IBMCAST_SERVER)
	conf0=$(cat "$A/opensm.conf")
	pid0=$(awk '{ print $1 }' "$A/pids/opensm")
	clients0=$(sim console --dir "$A" -- Attached | grep -c '^Client ')
	out=$(sim restart-sm --dir "$A" 2>&1)
	ok $? "restart-sm" || diag "$out"
	pid1=$(awk '{ print $1 }' "$A/pids/opensm" 2>/dev/null)
	ok "$([ -n "$pid1" ] && [ "$pid1" != "$pid0" ]; echo $?)" \
		"OpenSM runs again under a new pid ($pid0 -> $pid1)"
	is "$(cat "$A/opensm.conf")" "$conf0" \
		"with the same opensm.conf (plugin options, state file)"
	like "$conf0" "state=$A/ibmcast.state" "whose plugin keeps DIR/ibmcast.state"
	is "$(ctl_state "$server")" master \
		"the restarted plugin answers ibmcastctl status: sm_state master"
	tcp=$(env_get "$A" IBMCAST_SERVER_TCP)
	is "$tcp" "$(sed -n 's/^IBMCAST_SERVER_TCP=//p' "$A/plugin.addr")" \
		"env follows the restarted plugin's new TCP port"
	is "$(sim console --dir "$A" -- Attached | grep -c '^Client ')" \
		"$clients0" "no ibsim client slot leaked by the restart"
	run_ok "stop-sm" sim stop-sm --dir "$A"
	run_fails "status fails while OpenSM is stopped" sim status --dir "$A"
	run_fails "ibmcastctl gets no answer from the stopped SM" \
		"$CTL" -s "$server" -t 2000 status
	run_ok "start-sm" sim start-sm --dir "$A"
	is "$(ctl_state "$server")" master "the plugin answers again after start-sm"
	# A client killed with SIGKILL never detaches from ibsim and keeps
	# one of its ten slots; stop-sm gives such slots back.
	read -r pid1 _ < "$A/pids/opensm"
	kill -KILL -- "-$pid1"
	wait_until 5 test ! -d "/proc/$pid1/fd/0"
	run_ok "stop-sm after OpenSM was killed with SIGKILL" sim stop-sm --dir "$A"
	# What stays attached is the data plane daemon, which is not the SM's.
	read -r dp_pid _ < "$A/pids/dataplane"
	is "$(sim console --dir "$A" -- Attached | grep '^Client ' |
		grep -vc "pid $dp_pid ")" 0 \
		"the killed OpenSM's ibsim slots were disconnected (only the data plane's remains)"
else
	for _ in $(seq 14); do skip "plugin or ibmcastctl not built"; done
fi

run_ok "down A" sim down --dir "$A"
is "$(fabric_procs "$A")" "" "nothing of A runs after down (ibsim and its console included)"
ok "$([ ! -e "$A/ibsim.console" ]; echo $?)" "down removed the console FIFO"
run_fails "console fails when ibsim is not running" \
	sim console --dir "$A" -- Attached

# --- a standby SM takes over ----------------------------------------------------
if [ "$PLUGIN" != 1 ]; then
	for _ in $(seq 13); do skip "plugin or ibmcastctl not built"; done
	exit 0
fi
diag "fabric B: 16 hosts, two SMs"
sim_up --hosts 16 --sms 2
ok $? "up --sms 2" || bail_out "fabric B did not come up"
B=$SIM_DIR
out=$(sim status --dir "$B" 2>&1)
like "$out" 'SM 1: +running, pid [0-9]+, MASTER' "status: SM 1 is MASTER" || diag "$out"
like "$out" 'SM 2: +running, pid [0-9]+, STANDBY' "status: SM 2 is STANDBY"
s1=$(env_get "$B" IBMCAST_SERVER_SM1)
s2=$(env_get "$B" IBMCAST_SERVER_SM2)
ok "$([ "$s1" = "unix:$B/ibmcast.sock" ] && [ "$s2" = "unix:$B/ibmcast-sm2.sock" ] &&
      [ "$(env_get "$B" IBMCAST_SERVER)" = "$s1" ]; echo $?)" \
	"env: IBMCAST_SERVER_SM1 and _SM2; IBMCAST_SERVER is SM 1"
is "$(ctl_state "$s2")" standby "SM 2's plugin answers: sm_state standby"

run_ok "stop-sm --sm 1 (the master)" sim stop-sm --dir "$B" --sm 1
wait_until 30 grep -q 'Entering MASTER state' "$B/opensm-sm2.log"
ok $? "the standby logs 'Entering MASTER state'"
out=$(sim_diag "$B" sminfo 2>&1)
like "$out" 'sm lid [0-9]+ sm guid .* priority 14 state 3 SMINFO_MASTER' \
	"sminfo: the master is now SM 2 (priority 14)" || diag "$out"
wait_until 10 ctl_is "$s2" master
ok $? "SM 2's plugin answers ibmcastctl status with sm_state master" ||
	diag "sm_state: '$(ctl_state "$s2")'"
out=$(sim status --dir "$B" 2>&1)
like "$out" 'SM 2: +running, pid [0-9]+, MASTER' "status: SM 2 is MASTER" || diag "$out"
like "$out" 'SM 1: +stopped' "status: SM 1 stopped"
run_ok "down B" sim down --dir "$B"
is "$(fabric_procs "$B")" "" "nothing of B runs after down (both SMs, ibsim, munged)"
