#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# srun --ibmcast on real Slurm (slurmctld + 4 slurmd) beside a simulated
# fabric with the same node names: every task gets ready groups whose MFT
# members are exactly the step's nodes; the pool is gone after the step;
# an srun without --ibmcast gets nothing; a step-only pool inside an
# allocation without --ibmcast is reserved for that step's nodes and
# released when the step ends, while the job goes on.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-slurm.sh"

slurm_need
fabric_need
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" tools/ibmcastctl
need_file "$WATCH" sim-fabric/ibmcast-mftwatch

plan 17

sim_up --hosts 8 || bail_out "the fabric did not come up"
. "$SIM_DIR/env"
slurm_up 4 spank timeout=30 || bail_out "Slurm did not come up"
tmp=$SLURM_DIR/t
mkdir -p "$tmp"

# reach_members ID: the sorted members of every group of pool ID as the
# MFTs the SM wrote say (mftwatch), one line per group.
reach_members() {
	local m args=()
	for m in $(pool_json "$1" | jq -r '.jobs[0].groups[].mlid'); do
		args+=(--mlid "$m")
	done
	on_fabric "$WATCH" reach "${args[@]}" 2> /dev/null |
		jq -r '.mlids[] | .members | sort | join(",")'
}

# run_held DIR CMD...: start CMD in the background with DIR/hold present;
# returns once every task recorded its environment (N files).
run_held() {
	local d=$1 n=$2
	shift 2
	mkdir -p "$d" && touch "$d/hold"
	slurm_cmd "$@" > "$d/out" 2>&1 &
	held_pid=$!
	wait_until 60 eval "[ \$(ls '$d'/env.* 2> /dev/null | wc -l) -ge $n ]"
}

diag "standalone srun --ibmcast -N4 -n8"
run_held "$tmp/a" 8 srun -N4 -n8 --ibmcast "$TASK" "$tmp/a"
ok $? "all 8 tasks started" || diag "$(cat "$tmp/a/out")" "$(slurm_logs)"
job=$(sed -n 's/^IBMCAST_JOB=//p' "$tmp/a/env.0")
slurmjob=$(sed -n 's/^STEP=\([0-9]*\)\..*/\1/p' "$tmp/a/env.0")
is "$job" "$slurmjob" "IBMCAST_JOB is the Slurm job id ($slurmjob)"
is "$(cat "$tmp"/a/env.* | grep -c '^IBMCAST_STATE=ready$')" 8 \
	"every task sees IBMCAST_STATE=ready" ||
	diag "$(cat "$tmp"/a/env.0)" "$(slurm_logs)"
bad=0
for f in "$tmp"/a/env.*; do
	[ "$(sed -n 's/^NODENAME=//p' "$f")" = \
	  "$(sed -n 's/^IBMCAST_NODE=//p' "$f")" ] || bad=1
done
ok $bad "IBMCAST_NODE is the task's Slurm node name on every task"
is "$(sed -n 's/^IBMCAST_GROUPS=//p' "$tmp"/a/env.* | sort -u | wc -l)/$(
	sed -n 's/^IBMCAST_NGROUPS=//p' "$tmp/a/env.0")" "1/8" \
	"all tasks see the same 8 groups (the site's default)"
like "$(sed -n 's/^IBMCAST_GROUPS=//p' "$tmp/a/env.0" | cut -d' ' -f1)" \
	'^ff12:1bca:ffff(:[0-9a-f]{4}){5}/0xc[0-9a-f]{3}/0x1bca[0-9a-f]{4}/0xffff/[0-9]+$' \
	"a group is MGID/MLID/QKEY/PKEY/MTU"
pool_is "$job" ready
is "$(pool_json "$job" | jq -r '.jobs[0] | [.state, .nodes] | @tsv')" \
	"ready	node[1-4]" "the control server holds pool $job on node[1-4]"
is "$(reach_members "$job" | sort -u)" "node1,node2,node3,node4" \
	"every group's MFT members are exactly the step's nodes (mftwatch)"
rm -f "$tmp/a/hold"
wait "$held_pid"
ok $? "srun exits 0" || diag "$(cat "$tmp/a/out")"
wait_until 30 pool_gone "$job"
ok $? "pool $job is released once the step (and job) ended" ||
	diag "$(pool_json "$job")"

diag "srun without --ibmcast"
mkdir -p "$tmp/b"
slurm_cmd srun -N2 -n2 "$TASK" "$tmp/b" > "$tmp/b/out" 2>&1
ok $? "srun -N2 runs" || diag "$(cat "$tmp/b/out")"
# Both tasks' records are there (with no record, no variable is found).
is "$(grep -l '^NODENAME=node' "$tmp"/b/env.* 2> /dev/null | wc -l)/$(
	cat "$tmp"/b/env.* 2> /dev/null | grep -c '^IBMCAST_')" 2/0 \
	"no IBMCAST_* variable in either task's record"
is "$("$CTL" --json status | jq '.jobs | length')" 0 "nothing reserved"

diag "step-only: sbatch -N4 (no --ibmcast) whose srun --ibmcast=2 -N2 uses two nodes"
mkdir -p "$tmp/c" && touch "$tmp/c/hold"
sj=$(slurm_cmd sbatch --parsable -N4 -o "$tmp/c/out" --wrap \
	"srun -N2 -n2 --ibmcast=2 '$TASK' '$tmp/c'; echo step-done > '$tmp/c/step'; while [ ! -e '$tmp/c/go' ]; do sleep 0.2; done")
wait_until 60 eval "[ \$(ls '$tmp'/c/env.* 2> /dev/null | wc -l) -ge 2 ]" ||
	diag "$(cat "$tmp/c/out" 2>&1)" "$(slurm_logs)"
sid=$(sed -n 's/^IBMCAST_JOB=//p' "$tmp/c/env.0")
is "$sid" "$(step_pool_id "$sj" 0)" \
	"the step-only pool has its own id (job $sj step 0)"
pool_is "$sid" ready
is "$(pool_json "$sid" | jq -r '.jobs[0] | [.state, .nodes, (.groups | length)] | @tsv')" \
	"ready	node[1-2]	2" "it spans the step's 2 nodes with 2 groups"
rm -f "$tmp/c/hold"
wait_until 60 test -e "$tmp/c/step"
wait_until 30 pool_gone "$sid"
rc=$?
# The batch script waits for "go", so the job must still be running here.
is "$rc/$(slurm_job_state "$sj")" 0/RUNNING \
	"released when the step ended, while job $sj still runs" ||
	diag "$(pool_json "$sid")" "$(slurm_logs)"
touch "$tmp/c/go"
slurm_wait_job "$sj" 60
is "$(slurm_job_state "$sj")" COMPLETED "the batch job completes" ||
	diag "$(cat "$tmp/c/out")"
