#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A member that returned early from a broadcast and then leaves, through
# ibmc_finalize, by vanishing as a crash does (no drain), or killed by
# SIGKILL under 5% loss (every broadcast algorithm, and a node leader in
# the node-leader layout), on the simulated fabric: every other member
# holds the root's data byte for byte, including the victim's own subtree
# (repaired by the root when the victim's forwards were lost), and the
# next collective, which cannot complete without the victim, fails (timed
# out, or the victim found dead) within IBMCAST_BCAST_TIMEOUT_MS, or the
# liveness bound for the SIGKILL cases, plus slack instead of hanging or
# completing. A member that vanished before the broadcast leaves its
# subtree with no forward at all, not even the broadcast's shape: they ask
# the root, get the data, and only the root (which never hears the
# victim's ack) fails, within the timeout.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

libjob_need
CHECK=$top_builddir/tests/libjob/early_exit_check
need_file "$CHECK" "tests/libjob/early_exit_check"
plan 40

sim_up --hosts 8 --radix 8 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 331 'node[1-8]' 2 || bail_out "job 331 not ready"
export IBMCAST_BCAST_TIMEOUT_MS=3000
# A barrier missing rank 4 ends when it has made no progress for the
# timeout, or when liveness finds rank 4 dead, whichever comes first; the
# slack is for a loaded host (the barriers measured fail after 3.0-3.1 s).
# (IBMCAST_DEAD_MS unset: the library's 10 s.)
BOUND_MS=$IBMCAST_BCAST_TIMEOUT_MS
DEAD_MS=${IBMCAST_DEAD_MS:-10000}
[ "$DEAD_MS" -le 0 ] || [ "$DEAD_MS" -ge "$BOUND_MS" ] ||
	BOUND_MS=$DEAD_MS
BARRIER_MS=$((BOUND_MS + 2000))
# (ESRCH: the dead member; ETIMEDOUT: no progress.)
FAILED='(Connection timed out|No such process)'

# barrier_failed OUT RANKS: how many of RANKS (a bracket expression) say
# their barrier failed as it must, within BARRIER_MS.
barrier_failed() {
	sed -nE "s/^rank $2 data ok barrier $FAILED after ([0-9]+) ms .*/\\2/p" \
		<<< "$1" | awk -v b="$BARRIER_MS" '$1 <= b { n++ } END { print n + 0 }'
}

# field OUT RANK KEY: the number after KEY on RANK's barrier line.
field() {
	sed -nE "s/^rank $2 data ok barrier .* $3 ([0-9]+)( .*|$)/\\1/p" <<< "$1"
}

# case MODE LEN ALGO [K]: 8 ranks, K a node (1), victim rank 4 (an inner
# node of the binomial tree rooted at 0: ranks 5, 6 and 7 are its
# subtree; at 2 a node, the leader of node3). Sets OUT. A killed victim
# (SIGKILL) is the launcher's first failure (exit 137); -K keeps the
# others going.
case_run() {
	local mode=$1 len=$2 algo=$3 k=${4:-1} rc=0 want=0 keep=()
	if [ "$mode" = kill ]; then
		want=137 keep=(-K)
	fi
	SECONDS=0
	OUT=$("$IBMCAST_RUN" "${keep[@]}" -n 8 -k "$k" --nodes 'node[1-8]' \
		--job 331 --timeout 60 \
		-- "$CHECK" 4 "$mode" "$len" "$algo" 2>&1) || rc=$?
	is "$rc/$(grep -c "^rank 4 data ok left by $mode\$" <<< "$OUT")" "$want/1" \
		"$algo $len B, $k a node, rank 4 leaves by $mode after returning: every other rank exits 0 (${SECONDS}s)" ||
		diag "$OUT"
	is "$(grep -c '^rank [0-9]* data ok' <<< "$OUT")" 8 \
		"  ... all 8 ranks, rank 4's subtree too, hold the data" ||
		diag "$OUT"
	is "$(barrier_failed "$OUT" '[0-9]+')" 7 \
		"  ... the others' next call failed (timed out or rank 4 dead), each within $BARRIER_MS ms" ||
		diag "$OUT"
}
case_run vanish 100000 mcast
case_run finalize 100000 mcast
case_run vanish 20000 binomial
case_run finalize 300000 mcast
# Under loss rank 4's subtree loses some of what rank 4 forwarded before it
# vanished: only the root, asked once rank 4 stayed silent, can repair it.
# The root's repairs show the loss reached the broadcast and the root
# answered it (it also repairs its own children, ranks 1, 2 and 4).
for seed in 3 5; do
	dp_ctl set loss=0.05 seed=$seed > /dev/null ||
		bail_out "the data plane refused loss=0.05"
	case_run vanish 100000 binomial
	r=$(field "$OUT" 0 repairs)
	ok "$([ "${r:-0}" -gt 0 ]; echo $?)" \
		"  ... under 5% loss (seed $seed) the root repaired ${r:-?} fragments" ||
		diag "$(grep '^rank ' <<< "$OUT")"
done
dp_ctl set loss=0 > /dev/null

# before_run LEN ALGO: rank 4 vanishes before the broadcast.
before_run() {
	local len=$1 algo=$2 out rc=0
	SECONDS=0
	out=$("$IBMCAST_RUN" -n 8 --nodes 'node[1-8]' --job 331 --timeout 60 \
		-- "$CHECK" 4 before "$len" "$algo" 2>&1) || rc=$?
	is "$rc/$(grep -c '^rank 4 left before the broadcast$' <<< "$out")" 0/1 \
		"$algo $len B, rank 4 gone before it: every other rank exits 0 (${SECONDS}s)" ||
		diag "$out"
	is "$(barrier_failed "$out" '[0-35-7]')" 7 \
		"  ... the 7 others hold the data (ranks 5, 6, 7 from the root) and their next call failed within $BARRIER_MS ms" ||
		diag "$out"
}
before_run 20000 binomial
before_run 100000 mcast

# SIGKILL of rank 4 right after it returned, under 5% loss, for every
# broadcast algorithm, and for the node-leader layout, where rank 4 leads
# its node (rank 5 took the data from the node's segment before rank 4
# could return, and the other leaders' subtree is repaired by the root).
# The loss must land: the data plane's own loss counter, reset before the
# run, and the survivors sent something again (mcast resends without loss
# too, to the dead rank, so the counter is what shows the fault landed).
# Liveness instead of a deadline here (the library's default, with a
# shorter bound): no broadcast fails for load alone (with the 3 s
# deadline above, one node-leader run beside a loaded host timed out
# before rank 4 was killed), and the barrier ends when rank 4 is found
# dead: after a second of silence and then the bound.
export IBMCAST_BCAST_TIMEOUT_MS=0 IBMCAST_DEAD_MS=3000
BARRIER_MS=$((1000 + IBMCAST_DEAD_MS + 2000))
dp_ctl set loss=0.05 seed=7 > /dev/null ||
	bail_out "the data plane refused loss=0.05"
for run in "binomial 1" "postal 1" "mcast 1" "shm_mcast 2"; do
	read -r algo k <<< "$run"
	dp_ctl reset > /dev/null || bail_out "the data plane refused reset"
	case_run kill 100000 "$algo" "$k"
	like "$(grep -c 'rank 4 (.*) was killed by signal 9' <<< "$OUT")/$(dp_drop loss)/$(awk \
		'/^rank [0-9]+ data ok barrier/ { n += $(NF - 2) + $NF }
		END { print n + 0 }' <<< "$OUT")" '^1/[1-9][0-9]*/[1-9]' \
		"  ... rank 4 died by SIGKILL, the fabric dropped packets by loss, and the survivors repaired or resent (killed/loss drops/repairs+resends)" ||
		diag "$OUT"
done
dp_ctl set loss=0 > /dev/null
