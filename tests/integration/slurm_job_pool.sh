#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# sbatch --ibmcast=4 with three srun steps: one pool, reserved when the job
# starts, reused by every step (same id and groups), released at job end.
# Then the same job cancelled in the middle of a step, and a job-wide job
# whose task crashes: their pools are released all the same, as is a
# step-only pool whose step is cancelled. Last, salloc --ibmcast: its
# steps share one pool, released when the allocation ends. Every
# "released" check first saw the pool reserved on the control server
# (pool_is), and every task names the pool it was given (IBMCAST_JOB).

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-slurm.sh"

slurm_need
fabric_need
need_file "$top_builddir/tools/ibmcastctl" tools/ibmcastctl

plan 23

sim_up --hosts 8 || bail_out "the fabric did not come up"
. "$SIM_DIR/env"
slurm_up 4 spank timeout=30 || bail_out "Slurm did not come up"
tmp=$SLURM_DIR/t
mkdir -p "$tmp/a"

# jobs_in DIR ID: how many of DIR's task records name pool ID.
jobs_in() {
	cat "$1"/env.* 2> /dev/null | grep -c "^IBMCAST_JOB=$2\$"
}

run_fails "pool_gone fails for a pool never seen reserved" pool_gone 4242

diag "sbatch --ibmcast=4 -N4: three steps, then the job waits for go"
cat > "$tmp/a/job.sh" <<JOB
#!/bin/sh
for s in 1 2 3; do
	mkdir -p '$tmp/a/s'\$s
	srun -N4 -n4 '$TASK' '$tmp/a/s'\$s || exit 1
done
touch '$tmp/a/steps-done'
while [ ! -e '$tmp/a/go' ]; do sleep 0.2; done
JOB
j=$(slurm_cmd sbatch --parsable --ibmcast=4 -N4 -o "$tmp/a/out" "$tmp/a/job.sh")
wait_until 90 test -e "$tmp/a/steps-done" &&
	wait_until 10 pool_is "$j" ready
ok $? "after its 3 steps job $j still holds its pool, ready" ||
	diag "$(cat "$tmp/a/out")" "$(pool_json "$j")" "$(slurm_logs)"
touch "$tmp/a/go"
slurm_wait_job "$j" 60
is "$(slurm_job_state "$j")" COMPLETED "job $j completes" ||
	diag "$(cat "$tmp/a/out")" "$(slurm_logs)"
is "$(cat "$tmp"/a/s*/env.* | grep -c '^IBMCAST_STATE=ready$')" 12 \
	"all 12 tasks of the 3 steps see ready groups"
is "$(jobs_in "$tmp/a/s1" "$j")/$(jobs_in "$tmp/a/s2" "$j")/$(
	jobs_in "$tmp/a/s3" "$j")" 4/4/4 \
	"every task of every step has IBMCAST_JOB=$j, the job's pool"
is "$(sed -n 's/^IBMCAST_GROUPS=//p' "$tmp"/a/s*/env.* | sort -u | wc -l)/$(
	sed -n 's/^IBMCAST_NGROUPS=//p' "$tmp"/a/s*/env.* | sort -u)" "1/4" \
	"one set of 4 groups, the same in every step"
is "$("$top_builddir/tools/ibmcastctl" --json status | jq '.counters.reserves')" 1 \
	"the control server saw the pool created once"
wait_until 30 pool_gone "$j"
ok $? "pool $j released at job end" || diag "$(pool_json "$j")"

diag "scancel in the middle of a step of a job-wide pool"
mkdir -p "$tmp/b" && touch "$tmp/b/hold"
j=$(slurm_cmd sbatch --parsable --ibmcast -N2 -o "$tmp/b/out" --wrap \
	"srun -N2 -n2 '$TASK' '$tmp/b'")
wait_until 60 eval "[ \$(ls '$tmp'/b/env.* 2> /dev/null | wc -l) -ge 2 ]" &&
	wait_until 10 pool_is "$j" ready
ok $? "job $j's pool is ready while its step runs" ||
	diag "$(pool_json "$j")" "$(slurm_logs)"
is "$(jobs_in "$tmp/b" "$j")" 2 "both tasks have IBMCAST_JOB=$j"
slurm_cmd scancel "$j"
wait_until 30 pool_gone "$j"
ok $? "scancel releases pool $j" || diag "$(pool_json "$j")"

diag "scancel of a step with a step-only pool"
mkdir -p "$tmp/c" && touch "$tmp/c/hold"
j=$(slurm_cmd sbatch --parsable -N2 -o "$tmp/c/out" --wrap \
	"srun -N2 -n2 --ibmcast=2 '$TASK' '$tmp/c'; sleep 300")
sid=$(step_pool_id "$j" 0)
wait_until 60 eval "[ \$(ls '$tmp'/c/env.* 2> /dev/null | wc -l) -ge 2 ]" &&
	wait_until 10 pool_is "$sid" ready
ok $? "step $j.0's pool $sid is ready while the step runs" ||
	diag "$(pool_json "$sid")" "$(slurm_logs)"
is "$(jobs_in "$tmp/c" "$sid")" 2 "both tasks have IBMCAST_JOB=$sid"
slurm_cmd scancel "$j.0"
wait_until 30 pool_gone "$sid"
ok $? "scancel $j.0 releases step pool $sid" || diag "$(pool_json "$sid")"
slurm_cmd scancel "$j"

diag "a task that crashes (SIGSEGV) in a step with a step-only pool"
mkdir -p "$tmp/d" && touch "$tmp/d/hold"
j=$(slurm_cmd sbatch --parsable -N2 -o "$tmp/d/out" --wrap \
	"srun -N2 -n2 --ibmcast '$TASK' '$tmp/d' crash")
sid=$(step_pool_id "$j" 0)
wait_until 60 eval "[ \$(ls '$tmp'/d/env.* 2> /dev/null | wc -l) -ge 2 ]" &&
	wait_until 10 pool_is "$sid" ready
ok $? "step $j.0's pool $sid is ready before the crash" ||
	diag "$(pool_json "$sid")" "$(slurm_logs)"
rm -f "$tmp/d/hold"
slurm_wait_job "$j" 60
is "$(slurm_job_state "$j")" FAILED "job $j fails (its task crashed)" ||
	diag "$(cat "$tmp/d/out")"
wait_until 30 pool_gone "$sid"
rc=$?
is "$(cat "$tmp"/d/env.* | grep -c '^IBMCAST_STATE=ready$')/$(
	jobs_in "$tmp/d" "$sid")" 2/2 \
	"both tasks had the step pool $sid, ready, before the crash"
ok $rc "step pool $sid is released all the same" || diag "$(pool_json "$sid")"

diag "salloc --ibmcast=3 -N2: two steps share the allocation's pool"
mkdir -p "$tmp/e/s1" "$tmp/e/s2" && touch "$tmp/e/s2/hold"
slurm_cmd salloc --ibmcast=3 -N2 sh -c \
	"srun -N2 -n2 '$TASK' '$tmp/e/s1' && srun -N2 -n2 '$TASK' '$tmp/e/s2'" \
	> "$tmp/e/out" 2>&1 < /dev/null &
spid=$!
at_exit "kill $spid 2> /dev/null"
wait_until 90 eval "[ \$(ls '$tmp'/e/s2/env.* 2> /dev/null | wc -l) -ge 2 ]"
j=$(sed -n 's/^STEP=\([0-9]*\)\..*/\1/p' "$tmp/e/s1/env.0" 2> /dev/null)
wait_until 10 pool_is "${j:-0}" ready
ok $? "salloc job ${j:-?}'s pool is ready while its second step runs" ||
	diag "$(cat "$tmp/e/out")" "$(pool_json "${j:-0}")" "$(slurm_logs)"
is "$(jobs_in "$tmp/e/s1" "$j")/$(jobs_in "$tmp/e/s2" "$j")/$(
	cat "$tmp"/e/s*/env.* | grep -c '^IBMCAST_STATE=ready$')" 2/2/4 \
	"every task of both steps has IBMCAST_JOB=$j, ready"
is "$(sed -n 's/^IBMCAST_GROUPS=//p' "$tmp"/e/s*/env.* | sort -u | wc -l)/$(
	sed -n 's/^IBMCAST_NGROUPS=//p' "$tmp"/e/s*/env.* | sort -u)" "1/3" \
	"one set of 3 groups, the same in both steps"
rm -f "$tmp/e/s2/hold"
wait_until 60 eval "! kill -0 $spid 2> /dev/null"
wait "$spid"
is "$?" 0 "salloc ends with its command" || diag "$(cat "$tmp/e/out")"
wait_until 30 pool_gone "$j"
ok $? "salloc job $j's pool is released when the allocation ends" ||
	diag "$(pool_json "$j")" "$(slurm_logs)"
