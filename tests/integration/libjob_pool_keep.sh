#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Mode pool's own pool and its keeper (world rank 0) on the simulated
# fabric with real OpenSM and the data plane: a pool of one group reaches
# every node (SA members, switches' MFTs); a communicator over half the
# nodes takes it at once, the other nodes leave it, so that the SA and
# the MFTs narrow to the communicator's nodes, and its broadcasts are
# exact and multicast; the keeper replaces the group in the background
# (created at the SA, reaching every node again); a communicator over the
# other nodes created after that takes the replacement, with multicast;
# one created while the next replacement cannot be tested (multicast
# dropped for a moment) finds the pool empty and goes lazy, with every
# byte right; after finalize none of the job's groups is left at the SA.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-pool-keep.sh"

pk_need
# The last check only in a sanitizer build (pk_no_sanitizer_report).
plan $((13 + PK_SANITIZED))

JOB=402
export IBMCAST_LOG_LEVEL=info

pk_fabric 8 4 "$JOB"
# A loaded 2-core host: OpenSM may take seconds to program the switches.
export IBMCAST_MCAST_TEST_TRIES=2000
ALL="node1 node2 node3 node4 node5 node6 node7 node8"

d=$PK_DIR
pk_start 8 --first 4 --count 30

# --- the pool's group reaches every node ----------------------------------
step "$d" built
G0=$(logged "$d" 'created through the SA group ff12:1bcb:[0-9a-f:]+' |
	awk '{ print $6 }')
L0=$(logged "$d" "created through the SA group $G0 \\(MLID 0x[0-9a-f]+" |
	grep -oE '0x[0-9a-f]+$')
wait_until 60 narrowed "$G0" "$L0" "$ALL"
ok "$(narrowed "$G0" "$L0" "$ALL"; echo $?)" \
	"the pool's group $G0 ($L0) spans all 8 nodes: SA members $(sa_nodes "$G0"), MFT reach: $(mft_nodes "$L0")"
touch "$d/built.go"

# --- A over ranks 0-3 (node1-4) takes it; nodes 5-8 leave it ---------------
step "$d" taken
diag "$(grep '^comm A' "$d/out")"
TAKEN=$(logged "$d" 'communicator [0-9a-f]+ took group ff12:1bcb:[0-9a-f:]+' | awk '{ print $5 }')
ok "$([ -n "$G0" ] && [ "$TAKEN" = "$G0" ]; echo $?)" \
	"A took the pool's group at creation ($TAKEN)"
A="node1 node2 node3 node4"
wait_until 60 narrowed "$G0" "$L0" "$A"
ok "$(narrowed "$G0" "$L0" "$A"; echo $?)" \
	"after the take only A's nodes are members at the SA ($(sa_nodes "$G0")) and the MFTs reach only them ($(mft_nodes "$L0"))"
ok "$(grep -q '^comm A members=4 bad=0 mcast=4 ready=4 ' "$d/out"; echo $?)" \
	"A: every byte right, every broadcast by multicast on all 4 members"
# The keeper's replacement: created, then tested on every rank.
wait_until 120 grep -q 'group ff12:1bcb:[0-9a-f:]* fills slot 0' "$d/out"
G1=$(logged "$d" 'replacing slot 0: created through the SA group ff12:1bcb:[0-9a-f:]+' |
	awk '{ print $9 }')
L1=$(logged "$d" "created through the SA group $G1 \\(MLID 0x[0-9a-f]+" |
	grep -oE '0x[0-9a-f]+$')
ok "$(grep -q "group $G1 fills slot 0" "$d/out"; echo $?)" \
	"the keeper replaced slot 0 in the background: $G1 ($L1) created, tested, filled"
wait_until 60 narrowed "$G1" "$L1" "$ALL"
ok "$([ "$G1" != "$G0" ] && narrowed "$G1" "$L1" "$ALL"; echo $?)" \
	"the replacement spans all 8 nodes: SA members $(sa_nodes "$G1"), MFT reach: $(mft_nodes "$L1")"

# --- B over node5-8 takes the replacement; C, while the next replacement
# cannot be tested, finds the pool empty ---------------------------------------
dp_ctl set loss=1 scope=mc seed=5 > /dev/null || bail_out "cannot set faults"
touch "$d/taken.go"
step "$d" created
dp_ctl clear > /dev/null
TAKEN_B=$(grep -oE 'communicator [0-9a-f]+ took group ff12:1bcb:[0-9a-f:]+' "$d/out" |
	sed -n 2p | awk '{ print $5 }')
ok "$([ "$TAKEN_B" = "$G1" ]; echo $?)" \
	"B took the replacement at creation ($TAKEN_B), a pool of one"
ok "$(grep -q 'no free slot for communicator' "$d/out" &&
	grep -q "the job's own pool is empty.*testing a new group lazily" "$d/out"; echo $?)" \
	"C found the pool empty (the next replacement under test) and went lazy"
touch "$d/created.go"

step "$d" freed
diag "$(grep '^comm [BC]' "$d/out")"
ok "$(grep -q '^comm B members=4 bad=0 mcast=4 ready=4 ' "$d/out"; echo $?)" \
	"B: every byte right, every broadcast by multicast on all 4 members"
ok "$(grep -q '^comm C members=4 bad=0 ' "$d/out"; echo $?)" \
	"C: every byte right (lazy: point-to-point until tested)"
# A's and B's groups are theirs: left at their free, never back to the pool.
wait_until 30 gone "$G0"
ok "$([ "$(sa_members "$G0")" = 0 ] && [ "$(sa_members "$G1")" = 0 ]; echo $?)" \
	"A's and B's groups left the SA at their free"
touch "$d/freed.go"
wait "$RUN_PID"
RC=$?
ok "$RC" "ranks exited 0" || diag "$(tail -n 40 "$d/out")"
wait_until 30 none_held "$d"
ok "$(none_held "$d"; echo $?)" \
	"after finalize none of the job's own groups is at the SA ($(own_groups_held "$d" | paste -sd' '))" ||
	held_why "$d"
pk_no_sanitizer_report "$d"
