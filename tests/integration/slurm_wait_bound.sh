#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The bounded wait, end to end: the SM side is reachable but cannot make
# the job's groups ready (the leaf switch of the job's nodes stops
# answering MFT SMPs, so no table on it can be written or read back). srun
# --ibmcast still runs its tasks once the configured wait (timeout=5) is
# over, and they get IBMCAST_STATE=timeout with the SM's own reason (the
# switch, or OpenSM's writes to it still outstanding); with required=1 the
# step fails with that reason. The same step on the same fabric first gets
# ready groups, so the timeout is the switch's doing; and once the switch
# answers again, so does the next.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-slurm.sh"

slurm_need
fabric_need

plan 12

sim_up --hosts 8 || bail_out "the fabric did not come up"
. "$SIM_DIR/env"
slurm_up 2 spank timeout=5 || bail_out "Slurm did not come up"
tmp=$SLURM_DIR/t
mkdir -p "$tmp/a" "$tmp/b" "$tmp/c" "$tmp/d"

# step DIR: srun --ibmcast on both nodes, bounded from outside so that a
# hang fails the test instead of stalling it; its output in DIR/out, how
# long it took in STEP_MS.
STEP_MS=
step() {
	local t0 rc
	t0=$(date +%s%N)
	timeout 180 env -i PATH="$PATH" HOME="${HOME:-/root}" \
		SLURM_CONF="$SLURM_CONF" TMPDIR="${TMPDIR:-/tmp}" \
		srun -N2 -n2 --ibmcast "$TASK" "$1" > "$1/out" 2>&1
	rc=$?
	STEP_MS=$((($(date +%s%N) - t0) / 1000000))
	diag "srun took $STEP_MS ms (wait bound 5 s), exit $rc"
	return "$rc"
}
# waited MS: the step's srun lasted at least the configured wait (5 s: its
# tasks did not start, or it did not fail, before the wait was over) and
# not longer than the wait plus SLACK_MS of launching and ending a step
# on a loaded host (not, say, the default wait of 30 s).
SLACK_MS=5000
waited() {
	[ "$1" -ge 5000 ] && [ "$1" -lt $((5000 + SLACK_MS)) ]
}
states() { cat "$1"/env.* 2> /dev/null | sed -n 's/^IBMCAST_STATE=//p' | sort | uniq -c | xargs; }

step "$tmp/a"
is "$?/$(states "$tmp/a")" "0/2 ready" \
	"control: with every switch answering, both tasks get ready groups" ||
	diag "$(cat "$tmp/a/out")" "$(slurm_logs)"

leaf=$(fabric_leaf_of node1)
[ "$leaf" = "$(fabric_leaf_of node2)" ] ||
	bail_out "node1 and node2 are not on one leaf ($leaf)"
fabric_smp_errors "$leaf" 100 || bail_out "could not silence switch $leaf"
diag "leaf switch LID $leaf of node1 and node2 stops answering MFT SMPs"
# What the SM says a group waits for: the switch that does not answer the
# plugin's readback, or OpenSM's own writes to it, which it keeps retrying.
why="(switch LID $leaf did not answer|OpenSM still has QP0 MADs outstanding)"

step "$tmp/b"
is "$?/$(states "$tmp/b")" "0/2 timeout" \
	"srun --ibmcast runs its tasks after the bounded wait: IBMCAST_STATE=timeout" ||
	diag "$(cat "$tmp/b/out")" "$(slurm_logs)"
waited "$STEP_MS"
ok $? "  ... once the wait was over: the step took $STEP_MS ms, from 5000 to $((5000 + SLACK_MS))"
like "$(sed -n 's/^IBMCAST_REASON=//p' "$tmp/b/env.0")" \
	"still building when the wait timed out: $why" \
	"IBMCAST_REASON gives the SM's own reason" ||
	diag "$(cat "$tmp/b/env.0")"
is "$(cat "$tmp"/b/env.* | grep -c '^IBMCAST_GROUPS=')" 0 "no groups handed out"
like "$(slurm_logs | grep -m1 'multicast timeout')" \
	"job [0-9]+ step 0 on node[12]: multicast timeout: .*$why.*\\(the job runs without multicast\\)" \
	"slurmd's log says why multicast is off"

slurm_plugstack "$(spank_line timeout=5 required=1)"
step "$tmp/c"
rc=$?
ok "$([ "$rc" != 0 ] && [ "$rc" != 124 ] && ! ls "$tmp"/c/env.* > /dev/null 2>&1; echo $?)" \
	"required=1: the step fails (exit $rc, not a hang) before any task runs" ||
	diag "$(cat "$tmp/c/out")"
waited "$STEP_MS"
ok $? "  ... once the wait was over: the step took $STEP_MS ms, from 5000 to $((5000 + SLACK_MS))"
like "$(cat "$tmp/c/out")" \
	"ibmcast: job [0-9]+ step 0 on node[12]: multicast timeout: .*$why.*\\(required=1\\)" \
	"  and srun's output gives the reason" || diag "$(cat "$tmp/c/out")"
node_states() { sinfo -h -o %T | sort -u | paste -sd,; }
wait_until 30 eval '[ "$(node_states)" = idle ]'
is "$(node_states)" idle "no node was drained (both back to idle)"

fabric_smp_errors "$leaf" 0 || bail_out "could not restore switch $leaf"
# OpenSM needs a sweep to write the tables it could not: a probe pool on
# the same nodes tells when the fabric serves them again (bounded).
CTL=$top_builddir/tools/ibmcastctl
"$CTL" reserve 4242 --nodes 'node[1-2]' --groups 1 > /dev/null 2>&1
wait_until 90 eval '[ "$("$CTL" --json wait 4242 --timeout-ms 5000 2> /dev/null |
	jq -r .job.state)" = ready ]' ||
	diag "probe: $("$CTL" --json status 4242 2>&1)"
"$CTL" release 4242 > /dev/null 2>&1
step "$tmp/d"
is "$?/$(states "$tmp/d")" "0/2 ready" \
	"once the switch answers again, the same step (still required=1) gets ready groups" ||
	diag "$(cat "$tmp/d/out")" "$(slurm_logs)"
ok "$(ls "$tmp"/*/env.* | wc -l | grep -qx 6; echo $?)" \
	"6 task records in all (2 + 2 + 0 + 2)"
