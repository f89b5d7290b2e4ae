#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# With a master and a standby OpenSM, each running the plugin, the standby
# mirrors the master's reservations (grown groups and pruned subsets
# included); when the master dies the standby's plugin rebuilds them,
# confirms them ready and serves them.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"

CORRUPT=$top_builddir/sim-fabric/ibmcast-mftcorrupt
need_file "$CORRUPT" "sim-fabric/ibmcast-mftcorrupt (make check builds it)"

plan 24

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-sb.XXXXXX")
at_exit "rm -rf '$tmp'"
cd "$tmp" || bail_out "cd $tmp"

# A master OpenSM queries the standby's SMInfo; under load the standby
# may leave a query unanswered. umad2sim never times such a MAD out, so the
# master's state manager used to wait for it for good and never sweep
# again; ibmcast-sim now preloads libibmcast_umadtimeout.so, which returns
# it as timed out, like the kernel. Prove the master still sweeps
# (SIGHUP -> a new SUBNET UP); its sweep may wait out such timeouts.
sweeps() { count_matches "$SIM_DIR/opensm.log" 'SUBNET UP'; }
master_sweeps() {
	local before pid
	before=$(sweeps)
	read -r pid _ < "$SIM_DIR/pids/opensm" || return 1
	kill -HUP "$pid" || return 1
	wait_until 60 eval '[ "$(sweeps)" -gt "$before" ]'
}
# The standby takes over after 10 missed polls (10 s), not 3: the check
# that the wiped entries stay wiped until then must not race a master that
# takes seconds to exit (the sanitizer build checks it for leaks first).
sim_up --hosts 32 --radix 8 --sms 2 --opensm-opt polling_retry_number=10 ||
	bail_out "fabric with two SMs did not come up"
master_sweeps
ok $? "the master keeps sweeping after the standby joined" ||
	bail_out "the master stopped sweeping: $(tail -3 "$SIM_DIR/opensm.out")"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
sm1() { "$CTL" --server "$IBMCAST_SERVER_SM1" "$@"; }
sm2() { "$CTL" --server "$IBMCAST_SERVER_SM2" "$@"; }
sm2_jobs() {
	sm2 --json status | jq -c '[.jobs[] | {job, restoring,
		shape: [.groups[] | [.nodes, .grown]]}]'
}
reach() {
	"$IBMCAST_SIM" diag --dir "$SIM_DIR" -- "$WATCH" reach --mlid "$1" |
		jq -r '.mlids[0] | (.members | sort | join(",")) + " " + (.consistent | tostring)'
}

is "$(sm2 --json status | jq -r .server.sm_state)" standby "SM 2 is standby"
run_ok "reserve job 61 on the master" sm1 reserve 61 --nodes 'node[1-12]' --groups 2
run_ok "reserve job 62 on the master" sm1 reserve 62 --nodes 'node[20-27]' --groups 1
run_ok "job 61 ready on the master" sm1 wait 61
run_ok "job 62 ready on the master" sm1 wait 62
run_ok "reserve job 64 on the master" sm1 reserve 64 --nodes 'node[13-19]' --groups 2
run_ok "prune job 64's group 1 to node[13-16] on the master" \
	sm1 prune 64 --group 1 --nodes 'node[13-16]'
run_ok "grow job 64 by group 2 on the master" sm1 grow 64 --group 2
run_ok "job 64 ready on the master" sm1 wait 64
run_ok "release job 62 on the master" sm1 release 62
# The standby copies the master's list every 2 s.
want='[{"job":61,"restoring":true,"shape":[[null,null],[null,null]]},'
want+='{"job":64,"restoring":true,"shape":[[null,null],["node[13-16]",null],[null,true]]}]'
ok "$(wait_until 15 eval "[ \"\$(sm2_jobs)\" = '$want' ]"; echo $?)" \
	"the standby mirrors exactly the master's reservations: $(sm2_jobs)"
run_ok "SM 2 refuses reservations while standby" sh -c "! '$CTL' --server '$IBMCAST_SERVER_SM2' reserve 63 --nodes 'node1' 2>/dev/null"

# ibsim keeps the switches' MFTs when the master dies: wipe job 61's
# entries first, so that only the new master's writes can pass the tree
# check below, and see that nothing rewrote them before it took over.
m61=$(sm1 --json status 61 | jq -r '[.jobs[0].groups[].mlid] | join(" ")')
# shellcheck disable=SC2086
before=$(mft_entries $m61)
# shellcheck disable=SC2086
mft_wipe $m61
rc=$?
# shellcheck disable=SC2086
is "$rc/$([ "$before" -gt 0 ]; echo $?)/$(mft_entries $m61)" "0/0/0" \
	"job 61's $before MFT entries ($m61) are wiped from the switches"
m64=$(sm1 --json status 64 | jq -r '[.jobs[0].groups[].mlid] | join(" ")')
# shellcheck disable=SC2086
before=$(mft_entries $m64)
# shellcheck disable=SC2086
mft_wipe $m64
rc=$?
# shellcheck disable=SC2086
is "$rc/$([ "$before" -gt 0 ]; echo $?)/$(mft_entries $m64)" "0/0/0" \
	"job 64's $before MFT entries ($m64) are wiped too"
run_ok "the master dies" "$IBMCAST_SIM" stop-sm --dir "$SIM_DIR" --sm 1
# shellcheck disable=SC2086
is "$(mft_entries $m61)/$(sm2 --json status | jq -r .server.sm_state)" \
	"0/standby" "  and are still wiped when it is gone, before SM 2 takes over"
ok "$(wait_until 30 eval "[ \"\$(sm2 --json status 2>/dev/null | jq -r .server.sm_state)\" = master ]"; echo $?)" \
	"SM 2 becomes master"
run_ok "job 61 is ready on the new master" sm2 wait 61 --timeout-ms 30000
mlid=$(sm2 --json status 61 | jq -r '.jobs[0].groups[0].mlid')
want=$(printf 'node%s\n' $(seq 1 12) | sort | paste -sd,)
is "$(reach "$mlid")" "$want true" "the new master's tree for job 61 reaches exactly node[1-12]"
run_ok "job 64 is ready on the new master" sm2 wait 64 --timeout-ms 30000
mlid=$(sm2 --json status 64 | jq -r '.jobs[0].groups[1].mlid')
is "$(reach "$mlid")" "$(printf 'node%s\n' 13 14 15 16 | paste -sd,) true" \
	"  its rebuilt pruned group 1 reaches exactly node[13-16]"
mlid=$(sm2 --json status 64 | jq -r '.jobs[0].groups[2].mlid')
is "$(reach "$mlid")" "$(printf 'node%s\n' $(seq 13 19) | paste -sd,) true" \
	"  its rebuilt grown group 2 reaches node[13-19]"
run_ok "the new master serves release" sm2 release 61
