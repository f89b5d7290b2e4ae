#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The node-leader broadcast ("shm_mcast") on the simulated fabric with real
# OpenSM and the data plane, processes started by ibmcast-run: 1, 2, 3, 4
# and 8 ranks per node, a last node part full and a cyclic placement, roots
# that lead their node and roots that do not (every root on small jobs),
# 0 B to 1 MiB verified byte for byte on every rank, several communicators
# and halves at once; its leaders really multicast (the fabric replicates)
# and every rank counts the broadcast as multicast; with 4 ranks per node
# it sends less than half the acks of today's "mcast"; then under
# 5% seeded loss with duplication and reordering.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
plan 15

sim_up --hosts 8 --radix 8 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 341 'node[1-8]' 8 || bail_out "job 341 not ready"
J=(--job 341)
libjob_warm_groups 8 'node[1-8]' 341

SIZES=0,1,1000,10000,1M
SMALL=0,1,1000,10000
# bcast_check --expect mcast: every rank counted every broadcast as
# multicast (shm_mcast counts what its leaders ran).
bcast_run "4 ranks, 1 per node (no segment), every root, $SIZES B" \
	4 'node[1-4]' "${J[@]}" -- --algo shm_mcast --sizes "$SIZES" \
	--roots all --expect mcast
bcast_run "6 ranks, 2 per node, every root, $SIZES B" \
	6 'node[1-3]' -k 2 "${J[@]}" -- --algo shm_mcast --sizes "$SIZES" \
	--roots all --expect mcast
bcast_run "9 ranks, 3 per node, roots 0 1 4 8, $SIZES B" \
	9 'node[1-3]' -k 3 "${J[@]}" -- --algo shm_mcast --sizes "$SIZES" \
	--roots 0,1,4,8 --expect mcast
bcast_run "16 ranks, 4 per node, roots 0 2 5 15, $SIZES B" \
	16 'node[1-4]' -k 4 "${J[@]}" -- --algo shm_mcast --sizes "$SIZES" \
	--roots 0,2,5,15 --expect mcast
bcast_run "16 ranks, 8 per node on 2 nodes, roots 0 7 8 13, $SIZES B" \
	16 'node[1-2]' -k 8 "${J[@]}" -- --algo shm_mcast --sizes "$SIZES" \
	--roots 0,7,8,13 --expect mcast
bcast_run "13 ranks, 4 per node (4+4+4+1), roots 0 3 12, $SIZES B" \
	13 'node[1-4]' -k 4 "${J[@]}" -- --algo shm_mcast --sizes "$SIZES" \
	--roots 0,3,12 --expect mcast
bcast_run "10 ranks cyclic over 4 nodes (3+3+2+2), every root, 2 communicators + 2 halves at once, $SMALL B" \
	10 'node[1-4]' -d cyclic "${J[@]}" -- --algo shm_mcast \
	--sizes "$SMALL" --roots all --comms 2 --halves

# The fabric replicated the leaders' multicast; one node: none at all.
dp_ctl reset > /dev/null
bcast_run "8 ranks, 2 per node, 64 KiB from ranks 0 and 3" \
	8 'node[1-4]' -k 2 "${J[@]}" -- --algo shm_mcast --sizes 64K \
	--roots 0,3 --expect mcast
ok "$([ "$(dp_ctl counters | jq '.delivered - .sends')" -gt 0 ]; echo $?)" \
	"  ... the fabric replicated multicast packets"
dp_ctl reset > /dev/null
bcast_run "4 ranks on one node: shared memory only" \
	4 'node[5]' -k 4 "${J[@]}" -- --algo shm_mcast --sizes 1,64K \
	--roots all --expect p2p
is "$(dp_ctl counters | jq '.sends')" 0 "  ... nothing went into the fabric"

# Acks: at 4 ranks per node only the 4 leaders acknowledge (today: 16).
# The data plane's control-sized unicast packets (uc_small: acks, NACKs,
# probes) per broadcast: the difference between 12 and 4 broadcasts of a
# run, without what the program's set-up sends.
acks() {	# ALGO REPS: control packets of one run
	dp_ctl reset > /dev/null
	"$IBMCAST_RUN" -n 16 --nodes 'node[1-4]' -k 4 "${J[@]}" --timeout 120 \
		-- "$BCAST_CHECK" --quiet --algo "$1" --sizes 64K --reps "$2" \
		--roots 0 > /dev/null 2>&1 || echo 0
	dp_ctl counters | jq '.uc_small'
}
# per_bcast ALGO: the least of 3 measurements: a loaded host only adds
# control packets (resends after spurious timeouts), never removes one.
per_bcast() {
	local i v least=
	for i in 1 2 3; do
		v=$(( ($(acks "$1" 12) - $(acks "$1" 4)) / 8 ))
		if [ -z "$least" ] || [ "$v" -lt "$least" ]; then least=$v; fi
	done
	echo "$least"
}
today=$(per_bcast mcast)
node=$(per_bcast shm_mcast)
ok "$([ "$node" -gt 0 ] && [ $((2 * node)) -lt "$today" ]; echo $?)" \
	"16 ranks, 4 per node, 64 KiB from rank 0: control packets (acks, NACKs, probes) per broadcast: shm_mcast $node, mcast $today (less than half)"

# --- loss, duplication, reordering -----------------------------------------
dp_ctl clear > /dev/null
dp_ctl set loss=0.05 dup=0.02 reorder=0.05 seed=13 > /dev/null ||
	bail_out "cannot set faults"
dp_ctl reset > /dev/null
bcast_run "5% loss: 9 ranks, 3 per node, roots 0 1 4, 1..1M B" \
	9 'node[1-3]' -k 3 "${J[@]}" -- --algo shm_mcast \
	--sizes 1,1000,10000,1M --roots 0,1,4
bcast_run "5% loss: 12 ranks, 2 per node, every root, 2 communicators" \
	12 'node[1-6]' -k 2 "${J[@]}" -- --algo shm_mcast \
	--sizes 1,10000,64K --roots all --comms 2
drops=$(dp_ctl counters | jq '.drops.loss')
ok "$([ "${drops:-0}" -gt 0 ] && [ "$(bcast_field retransmits)" -gt 0 ]; echo $?)" \
	"  ... the fabric dropped $drops packets, the library retransmitted $(bcast_field retransmits)"
dp_ctl clear > /dev/null
