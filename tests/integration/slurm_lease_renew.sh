#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The SPANK plugin renews a running job's lease: with lease=30 the
# reserving slurmstepd renews every 10 s, so 15 s into the job the
# reservation still has nearly its whole lease left, where an unrenewed one
# would be down to about 15 s. Afterwards the pool is released as usual.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-slurm.sh"

slurm_need
fabric_need
CTL=$top_builddir/tools/ibmcastctl
need_file "$CTL" tools/ibmcastctl

plan 5

sim_up --hosts 4 || bail_out "the fabric did not come up"
. "$SIM_DIR/env"
slurm_up 2 spank timeout=30 lease=30 || bail_out "Slurm did not come up"
tmp=$SLURM_DIR/t
mkdir -p "$tmp/a"
touch "$tmp/a/hold"

job=$(slurm_cmd sbatch --parsable --ibmcast=2 -N2 -o "$tmp/a/out" \
	--wrap "srun -N2 -n2 '$TASK' '$tmp/a'")
wait_until 60 eval "[ -e '$tmp/a/env.0' ] && [ -e '$tmp/a/env.1' ]" &&
	wait_until 10 pool_is "$job" ready
ok $? "job $job runs with its pool" || diag "$(slurm_logs)"
remaining() { pool_json "$job" | jq -r '.jobs[0].lease_remaining_s // -1'; }
first=$(remaining)
ok "$([ "$first" -ge 20 ] && [ "$first" -le 30 ]; echo $?)" \
	"the pool starts with its 30 s lease ($first s left)"

# Past the first renewal (10 s) and well before an unrenewed lease ends.
sleep 15
later=$(remaining)
ok "$([ "$later" -ge 20 ]; echo $?)" \
	"15 s later the lease was renewed: $later s left (unrenewed: about $((first - 15)))"
like "$(cat "$SLURM_DIR"/log/*.log)" "renewed reservation $job for 30 s" \
	"slurmstepd logged the renewal"

rm -f "$tmp/a/hold"
slurm_wait_job "$job" 60
ok "$(wait_until 30 pool_gone "$job"; echo $?)" "released when the job ended"
