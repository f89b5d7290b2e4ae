#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ibmcast-run and the bootstraps, no fabric needed: ranks placed block,
# cyclic and per node; any number of allgather rounds through the socket
# bootstrap, verified; a failing or killed rank stops the others and names
# itself in the exit status; a rank that leaves early makes the others'
# rounds fail instead of hang; --timeout; --job without a server still runs
# the job without multicast; bootstraps outside any launcher fail clearly.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

RUN=$top_builddir/tools/ibmcast-run
BSC=$top_builddir/tests/libjob/bootstrap_check
need_file "$RUN" "tools/ibmcast-run"
need_file "$BSC" "tests/libjob/bootstrap_check"

plan 22

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-run-test.XXXXXX")
at_exit "rm -rf '$tmp'"
export TMPDIR=$tmp

# placement OPTIONS...: "rank:node" of every rank, sorted by rank.
placement() {
	"$RUN" "$@" -- sh -c 'echo "$IBMCAST_RANK:$IBMCAST_NODE:$IBMCAST_SIZE"' |
		sort -t: -k1,1n | cut -d: -f1,2 | paste -sd' '
}
is "$(placement -n 5 --nodes 'n[1-3]')" "0:n1 1:n1 2:n2 3:n2 4:n3" \
	"block: contiguous, the first nodes take one more"
is "$(placement -n 5 --nodes 'n[1-3]' -d cyclic)" "0:n1 1:n2 2:n3 3:n1 4:n2" \
	"cyclic: round robin"
is "$(placement -n 5 --nodes 'n[1-8]' -k 2)" "0:n1 1:n1 2:n2 3:n2 4:n3" \
	"--per-node 2"
is "$(placement -n 2 --nodes 'a,b[07-09]')" "0:a 1:b07" \
	"fewer ranks than nodes: one each on the first nodes"
is "$("$RUN" -n 3 --nodes n1 -- sh -c 'echo $IBMCAST_SIZE' | sort -u)" 3 \
	"IBMCAST_SIZE is the number of ranks"

out=$("$RUN" -n 13 --nodes 'node[1-4]' -- "$BSC" 12 2>&1)
rc=$?
is "$rc" 0 "13 ranks, 12 allgather rounds of 1 B to 100 kB: exit 0" ||
	diag "$out"
is "$(grep -c ' rounds 12 ok$' <<< "$out")" 13 "  ... every rank verified every block"
like "$(grep '^rank 12 ' <<< "$out")" 'node node4 ' "  ... rank 12 ran on node4"
out=$("$RUN" -n 1 --nodes n1 -- "$BSC" 3 2>&1)
like "$out" '^rank 0 of 1 node n1 rounds 3 ok$' "a single rank gathers its own blocks"

# Failures.
SECONDS=0
out=$("$RUN" -n 4 --nodes 'n[1-4]' -- sh -c \
	'[ "$IBMCAST_RANK" = 2 ] && exit 7; sleep 60' 2>&1)
rc=$?
is "$rc" 7 "a rank exits 7: ibmcast-run exits 7"
like "$out" 'rank 2 \(node n3, pid [0-9]+\) exited with status 7' \
	"  ... and names the rank, node and status"
ok "$([ "$SECONDS" -lt 30 ]; echo $?)" "  ... the other ranks were stopped (${SECONDS}s, not 60)"
out=$("$RUN" -n 3 --nodes 'n[1-3]' -- sh -c \
	'[ "$IBMCAST_RANK" = 1 ] && kill -9 $$; exec "$0" 4' "$BSC" 2>&1)
rc=$?
is "$rc" 137 "a rank killed by SIGKILL: exit 128+9"
like "$out" 'rank 1 .* was killed by signal 9' "  ... named on stderr"
SECONDS=0
out=$("$RUN" -n 4 --nodes 'n[1-2]' -- sh -c \
	'[ "$IBMCAST_RANK" = 3 ] && exit 0; exec "$0" 4' "$BSC" 2>&1)
rc=$?
ok "$([ "$rc" = 2 ] && [ "$SECONDS" -lt 30 ]; echo $?)" \
	"a rank that exits 0 without joining: the others' rounds fail at once (exit $rc, ${SECONDS}s)" ||
	diag "$out"
like "$out" 'Broken pipe' "  ... with EPIPE"

"$RUN" -n 2 --nodes n1 --timeout 1 -- sleep 30 > /dev/null 2>&1
is "$?" 124 "--timeout: exit 124"
"$RUN" -n 5 --nodes 'n[1-2]' -k 2 -- true > /dev/null 2>&1
is "$?" 64 "5 ranks at 2 per node on 2 nodes: usage error"
"$RUN" -n 2 --nodes 'n[1-' -- true > /dev/null 2>&1
is "$?" 64 "a malformed hostlist: usage error"

# --job without a reachable server: the ranks run, told why there is no
# multicast, as under Slurm.
out=$("$RUN" -n 2 --nodes 'n[1-2]' --job 77 --server "unix:$tmp/none.sock" \
	-- sh -c 'echo "$IBMCAST_JOB $IBMCAST_STATE $IBMCAST_NGROUPS [$IBMCAST_REASON]"' 2> /dev/null |
	sort -u)
like "$out" '^77 unavailable 0 \[wait: .*none.sock.*\]$' \
	"--job with no server: IBMCAST_STATE=unavailable and the reason"

# Outside any launcher.
out=$(env -u IBMCAST_BOOTSTRAP -u PMI_FD -u SLURM_STEP_ID "$BSC" 2>&1)
like "$out" 'ibmc_bootstrap_default: .*' \
	"no launcher: the bootstrap fails and says so ($out)"
out=$(env -u IBMCAST_BOOTSTRAP -u PMI_FD SLURM_STEP_ID=0 "$BSC" 2>&1)
like "$out" 'PMI' "under srun without --mpi=pmi2: PMI2 is named as the cause ($out)"
