#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Plain programs under real Slurm (srun --mpi=pmi2, no MPI): the PMI2
# bootstrap gathers blocks of 1 B to 100 kB (many KVS chunks) correctly on
# 8 tasks over 4 nodes; then with the SPANK plugin (--ibmcast) beside a
# simulated fabric, bcast_check broadcasts over the job's SM-prepared groups
# with nothing but what Slurm exported, data verified.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-slurm.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

slurm_need
libjob_need
BSC=$top_builddir/tests/libjob/bootstrap_check
need_file "$BSC" tests/libjob/bootstrap_check
grep -q '^#define IBMC_HAVE_PMI2 1' "$top_builddir/config.h" ||
	skip_all "libibmcast built without PMI2 (libpmi2-0-dev)"

plan 6

sim_up --hosts 8 || bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
slurm_up 4 spank timeout=30 || bail_out "Slurm did not come up"

out=$(slurm_cmd timeout 120 srun --mpi=pmi2 -N4 -n8 "$BSC" 6 2>&1)
rc=$?
is "$rc" 0 "srun --mpi=pmi2 -N4 -n8: 6 PMI2 allgather rounds, exit 0" ||
	diag "$out" "$(slurm_logs)"
is "$(grep -c '^rank [0-7] of 8 node .* rounds 6 ok$' <<< "$out")" 8 \
	"  ... every task verified every block (1 B to 100 kB, up to 196 KVS chunks each)"

# The whole path: Slurm's plugin exports the pool, PMI2 bootstraps, the
# sim transport carries it (its socket is the only thing passed by hand:
# on a real cluster the verbs transport needs nothing).
dp_ctl reset > /dev/null
out=$(slurm_cmd env IBMCAST_SIM_DATAPLANE="$IBMCAST_SIM_DATAPLANE" \
	IBMCAST_BCAST_TIMEOUT_MS=30000 timeout 180 \
	srun --mpi=pmi2 -N4 -n8 --ibmcast "$BCAST_CHECK" --tap \
	--sizes 1,4096,65536,1M --roots 0,3,7 --expect mcast 2>&1)
rc=$?
is "$rc" 0 "srun --ibmcast --mpi=pmi2 -N4 -n8 bcast_check: exit 0" ||
	diag "$out"
like "$(grep '^ok - 8 ranks' <<< "$out")" 'broadcasts correct on every rank' \
	"  ... every broadcast correct on every task"
like "$(grep 'algorithm mcast' <<< "$out")" '^ok ' \
	"  ... the library counted every broadcast as multicast"
# What the fabric did, not what the library counted: each 1 MiB broadcast
# alone is at least 256 fragments (of 4 KiB at most), each reaching the 3
# other nodes, 2 of them by replication; the 3 roots' make at least
# 3 x 256 x 2 packets that only the switches' replication delivers.
rep=$(dp_ctl counters | jq '.delivered - .sends')
ok "$([ "${rep:-0}" -ge $((3 * 256 * 2)) ]; echo $?)" \
	"  ... over multicast, on the groups Slurm's plugin reserved: the fabric replicated $rep packets (>= $((3 * 256 * 2)))"
