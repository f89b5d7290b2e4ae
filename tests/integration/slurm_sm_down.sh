#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The SM side is down (nothing listens at the plugin's server address): a
# job with --ibmcast still runs and its tasks are told why multicast is
# off; with required=1 the step, or the batch job, fails at start and says
# why; a job without --ibmcast is untouched either way. A bad plugstack.conf
# argument stops srun with a message naming it.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-slurm.sh"

slurm_need

plan 12

# A port nobody listens on: the SM side is down.
unset IBMCAST_MUNGE_SOCKET
IBMCAST_SERVER_TCP=tcp:127.0.0.1:$(_slurm_free_port)
slurm_up 2 spank timeout=3 || bail_out "Slurm did not come up"
tmp=$SLURM_DIR/t
mkdir -p "$tmp/a" "$tmp/b" "$tmp/c"

slurm_cmd srun -N2 -n2 --ibmcast "$TASK" "$tmp/a" > "$tmp/a/out" 2>&1
ok $? "srun --ibmcast runs with the SM side down" ||
	diag "$(cat "$tmp/a/out")" "$(slurm_logs)"
is "$(cat "$tmp"/a/env.* | grep -c '^IBMCAST_STATE=unavailable$')" 2 \
	"both tasks see IBMCAST_STATE=unavailable"
like "$(sed -n 's/^IBMCAST_REASON=//p' "$tmp/a/env.0")" \
	"unreachable.*(refused|Connection)" "IBMCAST_REASON says why" ||
	diag "$(cat "$tmp/a/env.0")"
is "$(cat "$tmp"/a/env.* | grep -c '^IBMCAST_GROUPS=')" 0 "no groups"

slurm_plugstack "$(spank_line timeout=3 required=1)"
slurm_cmd srun -N2 -n2 --ibmcast "$TASK" "$tmp/b" > "$tmp/b/out" 2>&1
rc=$?
ok "$([ "$rc" != 0 ] && ! ls "$tmp"/b/env.* > /dev/null 2>&1; echo $?)" \
	"required=1: srun --ibmcast fails (exit $rc) before any task runs" ||
	diag "$(cat "$tmp/b/out")"
like "$(cat "$tmp/b/out")" \
	"ibmcast: job [0-9]+ step 0 on node[12]: multicast unavailable: .*unreachable.*required=1" \
	"srun's output says why the step failed" || diag "$(cat "$tmp/b/out")"

j=$(slurm_cmd sbatch --parsable --ibmcast -N2 -o "$tmp/c/out" \
	--wrap "'$TASK' '$tmp/c'")
slurm_wait_job "$j" 60
is "$(slurm_job_state "$j")" FAILED "required=1: sbatch --ibmcast job $j fails" ||
	diag "$(cat "$tmp/c/out")" "$(slurm_logs)"
ok "$(ls "$tmp"/c/env.* > /dev/null 2>&1; [ $? != 0 ]; echo $?)" \
	"its batch script never ran"
like "$(cat "$tmp/c/out" 2>&1)" "ibmcast: job $j step [0-9]+ on node1: multicast unavailable" \
	"the job's output file says why"
is "$(sinfo -h -o %T | sort -u | paste -sd,)" idle "no node was drained"

slurm_cmd srun -N2 -n2 "$TASK" "$tmp/a" > "$tmp/a/out2" 2>&1
ok $? "required=1: a job without --ibmcast runs" || diag "$(cat "$tmp/a/out2")"

slurm_plugstack "$(spank_line timeout=3 bogus=1)"
out=$(slurm_cmd srun -N1 true 2>&1)
like "$out" "ibmcast: srun: plugstack.conf: unknown argument 'bogus=1'" \
	"a bad argument stops srun, naming it"
