#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Mode pool's keeper tries a failed replacement again. On the simulated
# fabric with real OpenSM and the data plane, a pool of one group over 4
# nodes: communicator A takes it while the fabric drops every multicast,
# so the keeper's replacement is created at the SA and joined by every
# node but never gets its test through: it fails, its group is left at
# the SA, and the keeper tries again after a pause. Once multicast flows
# again a later attempt fills the slot, reaching every node, and
# communicator B takes it at creation and broadcasts by multicast (chosen
# by name: auto sends a broadcast among 2 ranks point-to-point).

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-pool-keep.sh"

pk_need
# The last check only in a sanitizer build (pk_no_sanitizer_report).
plan $((8 + PK_SANITIZED))

JOB=403
export IBMCAST_LOG_LEVEL=info
# A group's test gives up after 60 tries 100 ms apart: long enough for a
# loaded host's OpenSM to program the switches, short enough for the
# test under loss to fail in seconds.
export IBMCAST_MCAST_TEST_PERIOD_MS=100 IBMCAST_MCAST_TEST_TRIES=60

pk_fabric 4 4 "$JOB"
ALL="node1 node2 node3 node4"

d=$PK_DIR
IBMCAST_BCAST_ALGO=mcast pk_start 4 --first 2 --count 4

step "$d" built
# From now on no multicast gets through: A's take starts a replacement
# whose test cannot succeed.
dp_ctl set loss=1 scope=mc seed=7 > /dev/null || bail_out "cannot set faults"
touch "$d/built.go"

# --- the first replacement fails and is tried again ------------------------
wait_until 120 grep -q 'replacing slot 0: created through the SA group' "$d/out" ||
	bail_out "the keeper never started a replacement: $(tail -n 20 "$d/out")"
F1=$(logged "$d" 'replacing slot 0: created through the SA group ff12:1bcb:[0-9a-f:]+' |
	awk '{ print $9 }')
# Every node joins it (invitations are unicast): the SA holds it.
# What the SA said when the wait ended: asked again, it could find the
# failed attempt's group already left.
wait_until 10 members_are "$F1" 4
F1_HELD=$SA_SEEN
wait_until 120 grep -q 'replacing slot 0 failed: .*trying again' "$d/out"
ok "$(grep -qE 'replacing slot 0 failed: ranks .* never got the test message of group '"$F1"'.*; trying again in 1000 ms \(attempt 2 of 4\)' "$d/out"; echo $?)" \
	"the first replacement $F1 failed its test under loss, and the keeper tries again after a pause: $(grep -o 'replacing slot 0 failed.*' "$d/out" | head -n 1)"
wait_until 30 gone "$F1"
ok "$([ "$F1_HELD" = 4 ] && gone "$F1"; echo $?)" \
	"the failed attempt's group was held by all 4 nodes at the SA ($F1_HELD) and was left by them all ($(sa_members "$F1") now)"
dp_ctl clear > /dev/null

# --- once multicast flows, a later attempt fills the slot -----------------
wait_until 120 grep -q 'fills slot 0' "$d/out"
G2=$(logged "$d" 'group ff12:1bcb:[0-9a-f:]+ fills slot 0' | awk '{ print $2 }')
L2=$(logged "$d" "created through the SA group $G2 \\(MLID 0x[0-9a-f]+" |
	grep -oE '0x[0-9a-f]+$')
ok "$([ -n "$G2" ] && [ "$G2" != "$F1" ] &&
	[ "$(grep -c 'replacing slot 0: created through the SA group' "$d/out")" -ge 2 ]; echo $?)" \
	"after the loss ended a later attempt filled slot 0 with $G2 ($L2), attempts made: $(grep -c 'replacing slot 0: created through the SA group' "$d/out")"
wait_until 60 narrowed "$G2" "$L2" "$ALL"
ok "$(narrowed "$G2" "$L2" "$ALL"; echo $?)" \
	"it spans all 4 nodes: SA members $(sa_nodes "$G2"), MFT reach: $(mft_nodes "$L2")"

# --- B takes it ------------------------------------------------------------
touch "$d/taken.go"
step "$d" created
TAKEN_B=$(grep -oE 'communicator [0-9a-f]+ took group ff12:1bcb:[0-9a-f:]+' "$d/out" |
	sed -n 2p | awk '{ print $5 }')
ok "$([ -n "$TAKEN_B" ] && [ "$TAKEN_B" = "$G2" ]; echo $?)" \
	"B took the retried replacement at creation ($TAKEN_B)"
touch "$d/created.go"
step "$d" freed
diag "$(grep '^comm [ABC]' "$d/out")"
ok "$(grep -q '^comm B members=2 bad=0 mcast=2 ready=2 ' "$d/out" &&
	grep -q '^comm A members=2 bad=0 ' "$d/out" &&
	grep -q '^comm C members=2 bad=0 ' "$d/out"; echo $?)" \
	"B: every byte right, every broadcast by multicast on both members (A under loss and C: every byte right)"
touch "$d/freed.go"
wait "$RUN_PID"
RC=$?
ok "$RC" "ranks exited 0" || diag "$(tail -n 40 "$d/out")"
wait_until 30 none_held "$d"
ok "$(none_held "$d"; echo $?)" \
	"after finalize none of the job's own groups is at the SA ($(own_groups_held "$d" | paste -sd' '))" ||
	held_why "$d"
pk_no_sanitizer_report "$d"
