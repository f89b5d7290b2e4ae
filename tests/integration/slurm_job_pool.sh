#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# sbatch --ibmcast=4 with three srun steps: one pool, reserved when the job
# starts, reused by every step (same id and groups), released at job end.
# Then the same job cancelled in the middle of a step, and a job-wide job
# whose task crashes: their pools are released all the same, as is a
# step-only pool whose step is cancelled.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-slurm.sh"

slurm_need
fabric_need
need_file "$top_builddir/tools/ibmcastctl" tools/ibmcastctl

plan 12

sim_up --hosts 8 || bail_out "the fabric did not come up"
. "$SIM_DIR/env"
slurm_up 4 spank timeout=30 || bail_out "Slurm did not come up"
tmp=$SLURM_DIR/t
mkdir -p "$tmp/a"

diag "sbatch --ibmcast=4 -N4: three steps"
cat > "$tmp/a/job.sh" <<JOB
#!/bin/sh
for s in 1 2 3; do
	mkdir -p '$tmp/a/s'\$s
	srun -N4 -n4 '$TASK' '$tmp/a/s'\$s || exit 1
done
JOB
j=$(slurm_cmd sbatch --parsable --ibmcast=4 -N4 -o "$tmp/a/out" "$tmp/a/job.sh")
slurm_wait_job "$j" 90
is "$(slurm_job_state "$j")" COMPLETED "job $j completes" ||
	diag "$(cat "$tmp/a/out")" "$(slurm_logs)"
is "$(cat "$tmp"/a/s*/env.* | grep -c '^IBMCAST_STATE=ready$')" 12 \
	"all 12 tasks of the 3 steps see ready groups"
is "$(sed -n 's/^IBMCAST_JOB=//p' "$tmp"/a/s*/env.* | sort -u)" "$j" \
	"every step uses the job's pool ($j)"
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
	[ "$(pool_json "$j" | jq -r '.jobs[0].state')" = ready ]
ok $? "job $j's pool is ready while its step runs" || diag "$(slurm_logs)"
slurm_cmd scancel "$j"
wait_until 30 pool_gone "$j"
ok $? "scancel releases pool $j" || diag "$(pool_json "$j")"

diag "scancel of a step with a step-only pool"
mkdir -p "$tmp/c" && touch "$tmp/c/hold"
j=$(slurm_cmd sbatch --parsable -N2 -o "$tmp/c/out" --wrap \
	"srun -N2 -n2 --ibmcast=2 '$TASK' '$tmp/c'; sleep 300")
wait_until 60 eval "[ \$(ls '$tmp'/c/env.* 2> /dev/null | wc -l) -ge 2 ]"
sid=$(step_pool_id "$j" 0)
slurm_cmd scancel "$j.0"
wait_until 30 pool_gone "$sid"
ok $? "scancel $j.0 releases step pool $sid" || diag "$(pool_json "$sid")"
slurm_cmd scancel "$j"

diag "a task that crashes (SIGSEGV) in a step with a step-only pool"
mkdir -p "$tmp/d"
j=$(slurm_cmd sbatch --parsable -N2 -o "$tmp/d/out" --wrap \
	"srun -N2 -n2 --ibmcast '$TASK' '$tmp/d' crash")
slurm_wait_job "$j" 60
is "$(slurm_job_state "$j")" FAILED "job $j fails (its task crashed)" ||
	diag "$(cat "$tmp/d/out")"
sid=$(step_pool_id "$j" 0)
wait_until 30 pool_gone "$sid"
rc=$?
is "$(cat "$tmp"/d/env.* | grep -c '^IBMCAST_STATE=ready$')" 2 \
	"both tasks had the step pool before the crash"
ok $rc "step pool $sid is released all the same" || diag "$(pool_json "$sid")"
