#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Readback (the third readiness condition) matters: a wrong MFT entry
# written into one switch (ibmcast-mftcorrupt) sends a ready job back to
# building on re-verification, with a reason naming the switch; it is not
# reported ready while the entry stays wrong, and is again once OpenSM
# rewrites the table (a heavy sweep). A switch that stops answering MFT
# SMPs keeps the job building with a reason naming it, and nothing hangs.
# With readback off, the plugin keeps
# reporting the job ready while the data plane shows the member behind the
# wrong entry getting nothing: the reason readback is on by default.
# A group whose entry is made wrong while it is still being built (the
# plugin's SMP reader held stopped, so it cannot have confirmed it yet) is
# not reported ready while the entry stays wrong, and is once OpenSM
# rewrites the table.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

fabric_need
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
CORRUPT=$top_builddir/sim-fabric/ibmcast-mftcorrupt
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$CORRUPT" "sim-fabric/ibmcast-mftcorrupt (make check builds it)"
need_file "$DP_BIN" "sim-fabric/ibmcast-dataplane"
need_file "$DP_TOOL" "tests/dataplane/dp_tool"

plan 24

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-corrupt.XXXXXX")
at_exit "rm -rf '$tmp'"

# The job spans node[1-8]: leaf1 (node1-4) and leaf2 (node5-8) of a radix-8
# fat tree. node6's port on its leaf loses the group's bit; node5, on the
# same leaf, keeps it, and node1 sends.
NODES='node[1-8]'
VICTIM=node6
OTHER=node5

status_of() { "$CTL" --json status "$1" 2> /dev/null; }
counter() { "$CTL" --json status 2> /dev/null | jq ".counters.$1"; }
job_state() { status_of "$1" | jq -r '.jobs[0].state'; }

# reach_members MLID: the members mftwatch finds, sorted, comma-separated.
reach_members() {
	on_fabric "$WATCH" reach --mlid "$1" 2> /dev/null |
		jq -r '.mlids[0].members | sort | join(",")'
}

# victim_port: "SWLID PORT" of VICTIM's link on its leaf switch.
victim_port() {
	fabric_topology "$SIM_DIR" |
		awk -v n="$VICTIM" '$3 == "H" && $4 == n { print $1, $2; exit }'
}

# ready_job JOB: reserves JOB on NODES with one group and waits for it;
# sets MGID MLID QKEY.
ready_job() {
	local w
	# Reserve is idempotent: retried (bounded) while a fabric that just
	# came up still resolves the node names (a slow sanitizer build).
	if ! wait_until 30 "$CTL" reserve "$1" --nodes "$NODES" --groups 1 \
		> /dev/null 2>&1; then
		diag "reserve $1: $("$CTL" reserve "$1" --nodes "$NODES" --groups 1 2>&1)"
		return 1
	fi
	w=$("$CTL" --json wait "$1" --timeout-ms 30000 2>&1)
	read -r MGID MLID QKEY <<< "$(jq -r '.job.groups[0] |
		"\(.mgid) \(.mlid) \(.qkey)"' <<< "$w" 2> /dev/null)"
	[ "$(jq -r .job.state <<< "$w" 2> /dev/null)" = ready ] ||
		{ diag "$w"; return 1; }
}

# corrupt: clears VICTIM's bit of MLID on its leaf; passes when the bit
# was set before (the entry was there) and the switch now holds the new
# mask. Sets SW and PORT.
corrupt() {
	local out
	read -r SW PORT <<< "$(victim_port)"
	out=$(on_fabric "$CORRUPT" --lid "$SW" --mlid "$MLID" \
		--clear-port "$PORT" 2>&1)
	diag "ibmcast-mftcorrupt: $out"
	[ "$(jq -r '.positions[0] | [.old != .new, .new == .read_back] |
		all' <<< "$out" 2> /dev/null)" = true ]
}

# round TAG: node1 sends one packet to the group; prints what VICTIM and
# OTHER received ("VICTIM OTHER"), once the data plane has read the MFTs
# since the receivers attached.
round() {
	local n
	for n in "$VICTIM" "$OTHER"; do
		dp_recv_bg "$tmp/$1.$n" --node "$n" --mgid "$MGID" \
			--mlid "$MLID" --count 1 --timeout-ms 2000
	done
	dp_mft_fresh "$MLID"
	"$DP_TOOL" send-mc --node node1 --mgid "$MGID" --mlid "$MLID" \
		--qkey "$QKEY" > /dev/null
	echo "$(dp_got "$tmp/$1.$VICTIM") $(dp_got "$tmp/$1.$OTHER")"
}

# --- readback on (the default) ------------------------------------------------
diag "fabric: 16 hosts, radix 8, readback on, verify_ms=300"
sim_up --hosts 16 --radix 8 --plugin-opt verify_ms=300
ok $? "fabric with readback on is up" || bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
read -r OSM_PID _ < "$SIM_DIR/pids/opensm"

ready_job 5
ok $? "job 5 ($NODES, 1 group, MLID $MLID) is ready" ||
	bail_out "job 5 not ready"
rebuilds0=$(counter rebuilds)
corrupt
ok $? "ibmcast-mftcorrupt cleared $VICTIM's port $PORT of $MLID on switch LID $SW"
all=$(hostlist_expand "$NODES" | sort | paste -sd,)
is "$(reach_members "$MLID")" "$(hostlist_expand "$NODES" | grep -vx "$VICTIM" |
	sort | paste -sd,)" "mftwatch: the switches now reach every member but $VICTIM"

wait_until 30 eval '[ "$(job_state 5)" = building ]'
rc=$?
st=$(status_of 5)
is "$rc/$(jq -r '.jobs[0].state' <<< "$st")" 0/building \
	"re-verification sends the ready job back to building" || diag "$st"
like "$(jq -r '.jobs[0].groups[0].pending' <<< "$st")" \
	"^switch LID $SW MFT for $MLID is 0x[0-9a-f]{4}, want 0x[0-9a-f]{4}$" \
	"  the reason names switch LID $SW, the mask it holds and the one wanted"

# Not ready while the entry is wrong: a wait returns only at its own
# bound, still building, while the plugin kept reading the wrong block.
mm0=$(counter readback_mismatches)
w=$("$CTL" --json wait 5 --timeout-ms 3000 2> /dev/null)
is "$(jq -r '[.timed_out, .job.state] | @tsv' <<< "$w")/$(
	[ "$(counter readback_mismatches)" -gt "$mm0" ]; echo $?)/$(
	[ "$(reach_members "$MLID")" != "$all" ]; echo $?)" "true	building/0/0" \
	"while the entry stays wrong the job is not ready (wait times out; the plugin kept reading the block)" ||
	diag "$w"

# OpenSM rewrites every switch's MFT on a heavy sweep.
kill -HUP "$OSM_PID"
wait_until 30 eval '[ "$(job_state 5)" = ready ]'
ok $? "after OpenSM's heavy sweep rewrote the table, job 5 is ready again" ||
	diag "$(status_of 5)"
# (Counted since the corruption: a rebuild before it is not this one.)
rebuilds=$(counter rebuilds)
is "$(reach_members "$MLID")/$([ "$rebuilds" -gt "$rebuilds0" ]; echo $?)" "$all/0" \
	"mftwatch: every member reached again; the plugin counted the rebuild (rebuilds $rebuilds0 -> $rebuilds)"

# A switch on the tree that stops answering MFT SMPs: not ready, the
# reason names it, and nothing hangs (status answers, waits end at their
# bound); once it answers again the job is ready.
fabric_smp_errors "$SW" 100
wait_until 30 eval '[ "$(job_state 5)" = building ]'
rc=$?
is "$rc/$(status_of 5 | jq -r '.jobs[0].groups[0].pending')" \
	"0/switch LID $SW did not answer the MFT read" \
	"switch LID $SW stops answering MFT SMPs: job 5 is building, the reason names it"
w=$("$CTL" --timeout-ms 10000 --json wait 5 --timeout-ms 2000 2> /dev/null)
is "$(jq -r '[.timed_out, .job.state] | @tsv' <<< "$w")/$(
	"$CTL" --timeout-ms 10000 --json status | jq -r .ok)" "true	building/true" \
	"  nothing hangs: a wait ends at its bound, status answers" || diag "$w"
fabric_smp_errors "$SW" 0
wait_until 60 eval '[ "$(job_state 5)" = ready ]'
ok $? "  once the switch answers again, job 5 is ready" || diag "$(status_of 5)"
"$CTL" release 5 > /dev/null 2>&1

# --- a group corrupted before it was ever ready ------------------------------
# The plugin's SMP reader (ibmcast-smpd, OpenSM's child) is stopped, so
# the new job cannot pass readback; OpenSM still writes the tables, and
# the entry is cleared right after. (A reader that does not answer within
# the plugin's 2 s budget is replaced, which would let a new one read the
# entry: the check below that the job is still building would then fail.)
SMPD=$(ps -o pid=,comm= --ppid "$OSM_PID" | awk '$2 == "ibmcast-smpd" { print $1; exit }')
ok "$([ -n "$SMPD" ] && kill -STOP "$SMPD"; echo $?)" \
	"the plugin's SMP reader (pid ${SMPD:-none}) is stopped"
at_exit "kill -CONT ${SMPD:-0} 2> /dev/null"
"$CTL" reserve 7 --nodes "$NODES" --groups 1 > /dev/null 2>&1
MLID=$(status_of 7 | jq -r '.jobs[0].groups[0].mlid')
# Cleared once OpenSM has written it (corrupt passes when the bit was set).
wait_until 30 corrupt
ok $? "job 7 ($MLID): OpenSM wrote the entry and mftcorrupt cleared $VICTIM's bit on switch LID $SW"
is "$(job_state 7)/$(reach_members "$MLID")" "building/$(hostlist_expand "$NODES" |
	grep -vx "$VICTIM" | sort | paste -sd,)" \
	"the entry is wrong (mftwatch: $VICTIM unreached) while the plugin says building"
# (The stopped reader may have been replaced by now; it is let go either
# way.)
kill -CONT "$SMPD" 2> /dev/null
wait_until 30 eval '[[ "$(status_of 7 | jq -r ".jobs[0].groups[0].pending")" == "switch LID $SW MFT for $MLID is "* ]]'
rc=$?
st=$(status_of 7)
is "$rc/$(jq -r '.jobs[0].state' <<< "$st")" "0/building" \
	"its reader running again, readback finds the entry wrong: building, naming switch LID $SW" ||
	diag "$st"
w=$("$CTL" --json wait 7 --timeout-ms 3000 2> /dev/null)
is "$(jq -r '[.timed_out, .job.state] | @tsv' <<< "$w")/$(
	[ "$(reach_members "$MLID")" != "$all" ]; echo $?)" "true	building/0" \
	"  never ready while the entry stays wrong (a wait times out)" || diag "$w"
kill -HUP "$OSM_PID"
wait_until 30 eval '[ "$(job_state 7)" = ready ]'
is "$?/$(reach_members "$MLID")" "0/$all" \
	"  after OpenSM's heavy sweep rewrote it, job 7 is ready and reaches every member" ||
	diag "$(status_of 7)"
"$CTL" release 7 > /dev/null 2>&1
sim_down "$SIM_DIR"

# --- readback off ---------------------------------------------------------------
diag "fabric: 16 hosts, radix 8, readback=0, verify_ms=300"
sim_up --hosts 16 --radix 8 --plugin-opt readback=0 --plugin-opt verify_ms=300
ok $? "fabric with readback off is up" || bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"

ready_job 6
ok $? "job 6 ($NODES, 1 group, MLID $MLID) is ready" ||
	bail_out "job 6 not ready"
dp_ctl reset > /dev/null
is "$(round before)" "1 1" "before: $VICTIM and $OTHER both get node1's packet"
corrupt
ok $? "ibmcast-mftcorrupt cleared $VICTIM's port $PORT of $MLID on switch LID $SW"
v0=$(counter verifications)
wait_until 30 eval '[ "$(counter verifications)" -ge $((v0 + 3)) ]'
rc=$?
w=$("$CTL" --json wait 6 --timeout-ms 3000 2> /dev/null)
is "$rc/$(jq -r '[.timed_out, .job.state] | @tsv' <<< "$w")" "0/false	ready" \
	"without readback, three re-verifications later the plugin still reports job 6 ready" ||
	diag "$w"
is "$(round after)" "0 1" \
	"and the data plane shows the broken delivery: $VICTIM gets nothing, $OTHER still does"
