#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Mode pool's keeper with a rank that goes silent during a replacement, as
# a dead or hung rank does. On the simulated fabric with real OpenSM and
# the data plane, a pool of one group over 4 nodes: rank 3 stops itself
# (SIGSTOP, its progress thread too) just before communicator A (ranks 0
# and 1) takes the group. The keeper's replacement is created at the SA
# and joined by the 3 live nodes, but rank 3 never answers the
# invitation: every attempt fails naming rank 3, its group is left at the
# SA by the nodes that joined it, and after the 4th failure in a row the
# keeper gives up (the pool stays a group smaller) within the bounded
# pauses, without ever blocking A, whose broadcasts finish meanwhile.
# Then rank 3 continues: B (ranks 2 and 3) and C (ranks 0 and 1) find the
# pool empty and run as mode lazy does, every byte right, and after
# finalize none of the groups the job created is still at the SA.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-pool-keep.sh"

pk_need
# The last check only in a sanitizer build (pk_no_sanitizer_report).
plan $((8 + PK_SANITIZED))

JOB=404
export IBMCAST_LOG_LEVEL=info
# An invitation is resent every 100 ms, 60 times (6 s) before an attempt
# fails: long enough for a loaded host's SA to take the live nodes' joins.
export IBMCAST_MCAST_TEST_PERIOD_MS=100 IBMCAST_MCAST_TEST_TRIES=60

pk_fabric 4 4 "$JOB"

d=$PK_DIR
IBMCAST_BCAST_ALGO=mcast pk_start 4 --first 2 --count 4 --stop-rank 3

# rank_pid R: the pid of rank R (ibmcast-run's child told IBMCAST_RANK=R).
rank_pid() {
	local p
	for p in $(pgrep -P "$RUN_PID"); do
		if tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null |
			grep -qx "IBMCAST_RANK=$1"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}
# stopped PID: the process is stopped (state T).
stopped() {
	[ "$(awk '{ print $3 }' "/proc/$1/stat" 2> /dev/null)" = T ]
}

step "$d" built
R3=$(rank_pid 3) || bail_out "no rank 3 among ibmcast-run's children"
at_exit "kill -CONT $R3 2> /dev/null"
touch "$d/built.go"
wait_until 30 stopped "$R3"
# Only now may the others go on to A (and the keeper to invite rank 3).
touch "$d/stopped.go"

# --- every attempt fails on the silent rank, then the keeper gives up -----
# The first attempt's group: held at the SA by the 3 live nodes, not node4.
wait_until 120 grep -q 'replacing slot 0: created through the SA group' "$d/out" ||
	bail_out "the keeper never started a replacement: $(tail -n 20 "$d/out")"
F1=$(logged "$d" 'replacing slot 0: created through the SA group ff12:1bcb:[0-9a-f:]+' |
	awk '{ print $9 }')
LIVE="node1 node2 node3"
# The attempt lasts 6 s: what the SA said when the wait ended, not a
# later question, which could find the group already left.
wait_until 20 nodes_are "$F1" "$LIVE"
F1_NODES=$SA_SEEN

wait_until 120 grep -q 'pool stays a group smaller' "$d/out"
ATTEMPTS=$(grep -c 'replacing slot 0: created through the SA group' "$d/out")
BLAMED=$(grep -cE 'replacing slot 0 failed: ranks 3 never answered the invitation' "$d/out")
ok "$([ "$ATTEMPTS" = 4 ] && [ "$BLAMED" = 4 ] &&
	grep -qE 'failed: ranks 3 never answered .*\(attempt 2 of 4\)' "$d/out" &&
	grep -qE 'failed: ranks 3 never answered .*the pool stays a group smaller \(4 attempts\)' "$d/out"; echo $?)" \
	"with rank 3 stopped, all 4 replacement attempts failed naming rank 3 ($BLAMED of $ATTEMPTS), and the keeper gave up: $(grep -o 'replacing slot 0 failed.*' "$d/out" | tail -n 1)"
ok "$(stopped "$R3"; echo $?)" "  ... rank 3 was still stopped when the keeper gave up"

# Each attempt's group is left by the nodes that joined it.
FAILED=$(grep -oE 'replacing slot 0: created through the SA group ff12:1bcb:[0-9a-f:]+' "$d/out" |
	awk '{ print $NF }' | sort -u)
all_gone() {
	local g
	for g in $FAILED; do gone "$g" || return 1; done
}
wait_until 30 all_gone
ok "$([ "$F1_NODES" = "$LIVE" ] && [ "$(echo "$FAILED" | wc -l)" = 4 ] &&
	all_gone; echo $?)" \
	"the first attempt's group $F1 was held at the SA by $F1_NODES (not the silent node4); all 4 attempts' groups are left ($F1: $(sa_members "$F1") ports now)"

# A was never held up: its broadcasts were done while rank 3 was stopped.
ok "$([ "$(grep -cE "rank [01]: A's broadcasts done, 0 wrong" "$d/out")" = 2 ] &&
	stopped "$R3"; echo $?)" \
	"A's broadcasts finished with every byte right on both members while rank 3 was still stopped"

# --- rank 3 comes back; B and C find the pool empty -------------------------
kill -CONT "$R3"
step "$d" taken
touch "$d/taken.go"
step "$d" created
touch "$d/created.go"
step "$d" freed
diag "$(grep '^comm [ABC]' "$d/out")"
ok "$(grep -q '^comm B members=2 bad=0 ' "$d/out" &&
	grep -q '^comm C members=2 bad=0 ' "$d/out"; echo $?)" \
	"after rank 3 continued, B and C (pool empty) broadcast every byte right"
ok "$(grep -qE 'rank 3: continued' "$d/out"; echo $?)" "  ... rank 3 ran on after SIGCONT"
touch "$d/freed.go"
wait "$RUN_PID"
RC=$?
ok "$RC" "ranks exited 0" || diag "$(tail -n 40 "$d/out")"
wait_until 30 none_held "$d"
ok "$(none_held "$d"; echo $?)" \
	"after finalize none of the job's own groups is at the SA ($(own_groups_held "$d" | paste -sd' '))" ||
	held_why "$d"
pk_no_sanitizer_report "$d"
