#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ibmcastctl gc against real Slurm: reservations whose Slurm job no longer
# exists (never did, or ended) are released; those of running jobs,
# job-wide or step-only, are kept; --dry-run and a failing squeue release
# nothing.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-slurm.sh"

slurm_need
fabric_need
CTL=$top_builddir/tools/ibmcastctl
need_file "$CTL" tools/ibmcastctl

plan 9

sim_up --hosts 4 || bail_out "the fabric did not come up"
. "$SIM_DIR/env"
slurm_up 2 spank timeout=30 || bail_out "Slurm did not come up"
tmp=$SLURM_DIR/t
mkdir -p "$tmp/a" "$tmp/b"

# A running job with a job-wide pool, and one with a step-only pool.
touch "$tmp/a/hold" "$tmp/b/hold"
run=$(slurm_cmd sbatch --parsable --ibmcast=2 -N1 -w node1 -o "$tmp/a/out" \
	--wrap "srun -N1 -n1 '$TASK' '$tmp/a'")
step=$(slurm_cmd sbatch --parsable -N1 -w node2 -o "$tmp/b/out" \
	--wrap "srun -N1 -n1 --ibmcast=2 '$TASK' '$tmp/b'")
wait_until 60 eval "[ -e '$tmp/a/env.0' ] && [ -e '$tmp/b/env.0' ]"
ok $? "jobs $run (job-wide pool) and $step (step-only pool) run" ||
	diag "$(slurm_logs)"
sid=$(step_pool_id "$step" 0)

# A finished job whose pool leaked, and an id Slurm never had.
done_job=$(slurm_cmd sbatch --parsable -N1 -o /dev/null --wrap true)
slurm_wait_job "$done_job" 60
"$CTL" reserve "$done_job" --nodes node1 --groups 1 > /dev/null
"$CTL" reserve 999999 --nodes node2 --groups 1 > /dev/null
is "$("$CTL" --json status | jq -c '[.jobs[].job] | sort')" \
	"$(jq -nc --argjson a "[$run,$sid,$done_job,999999]" '$a | sort')" \
	"four reservations before gc"

out=$("$CTL" gc --squeue /bin/false 2>&1)
rc=$?
ok "$([ "$rc" != 0 ] && [ "$("$CTL" --json status | jq '.jobs | length')" = 4 ]; echo $?)" \
	"a failing squeue: gc exits $rc and releases nothing" || diag "$out"
out=$("$CTL" gc --dry-run 2>&1)
like "$out" "would release $done_job \(Slurm job $done_job COMPLETED\)" \
	"--dry-run names the finished job's pool" || diag "$out"
is "$("$CTL" --json status | jq '.jobs | length')" 4 "--dry-run releases nothing"

out=$("$CTL" gc 2>&1)
ok $? "gc succeeds" || diag "$out"
diag "$out"
is "$("$CTL" --json status | jq -c '[.jobs[].job] | sort')" \
	"$(jq -nc --argjson a "[$run,$sid]" '$a | sort')" \
	"gc released the pools of the finished job and of id 999999, kept the running ones"
like "$out" "released 999999 \(Slurm job 999999 gone\)" "it says what it released"
like "$out" "kept $sid \(Slurm job $step RUNNING\)" \
	"a step-only pool maps back to its Slurm job"
rm -f "$tmp/a/hold" "$tmp/b/hold"
slurm_wait_job "$run" 60
slurm_wait_job "$step" 60
