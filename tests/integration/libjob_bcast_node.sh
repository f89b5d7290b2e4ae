#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The node-leader broadcast ("shm_mcast") on the simulated fabric with real
# OpenSM and the data plane, processes started by ibmcast-run: 1, 2, 3, 4
# and 8 ranks per node, a last node part full and a cyclic placement, roots
# that lead their node and roots that do not (every root on small jobs),
# 0 B to 1 MiB verified byte for byte on every rank, several communicators
# and halves at once; its leaders really multicast (the fabric replicates)
# and every rank counts the broadcast as multicast; with 4 ranks per node
# only the node leaders send packets (today's "mcast": every rank), and
# fewer control packets; then under
# 5% seeded loss with duplication and reordering.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
plan 16

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
# Each 64 KiB broadcast is at least 16 fragments (of 4 KiB at most, the
# largest MTU) and reaches the leaders of the 3 other nodes, 2 of them by
# replication: at least 2 x 16 x 2 packets (421 in a loss-free run).
# Merely more than none would not do: the communicator's set-up and any
# small broadcast multicast too (this run with 1 B instead: 48).
dp_ctl reset > /dev/null
bcast_run "8 ranks, 2 per node, 64 KiB from ranks 0 and 3" \
	8 'node[1-4]' -k 2 "${J[@]}" -- --algo shm_mcast --sizes 64K \
	--roots 0,3 --expect mcast
rep=$(dp_ctl counters | jq '.delivered - .sends')
ok "$([ "${rep:-0}" -ge $((2 * 16 * 2)) ]; echo $?)" \
	"  ... the fabric replicated the two broadcasts' fragments: $rep packets (>= $((2 * 16 * 2)))"
dp_ctl reset > /dev/null
bcast_run "4 ranks on one node: shared memory only" \
	4 'node[5]' -k 4 "${J[@]}" -- --algo shm_mcast --sizes 1,64K \
	--roots all --expect p2p
is "$(dp_ctl counters | jq '.sends')" 0 "  ... nothing went into the fabric"

# Acks: at 4 ranks per node only the 4 node leaders take part in the
# network protocol (today: all 16 ranks acknowledge). Which members sent
# any packet during the broadcasts is exact (bcast_check's senders=). The
# number of control packets is not: the data plane's control-sized
# unicast packets (uc_small: acks, NACKs, probes) per broadcast, the
# difference between 12 and 4 broadcasts of a run (without what the
# program's set-up sends), depends on the host's load both ways: a loaded
# host resends after spurious timeouts, and a member that falls behind
# acknowledges several fragments with one cumulative ack. Typical here:
# shm_mcast 18-21, mcast 94-127; under the sanitizer in CI beside other
# tests, 35 against 70 and 47 against 81. So the count is only required
# to be lower, the least of 3 measurements each.
ack_run() {	# ALGO REPS: "CONTROL_PACKETS SENDERS" of one run
	local out
	dp_ctl reset > /dev/null
	out=$("$IBMCAST_RUN" -n 16 --nodes 'node[1-4]' -k 4 "${J[@]}" \
		--timeout 120 -- "$BCAST_CHECK" --quiet --algo "$1" \
		--sizes 64K --reps "$2" --roots 0 2> /dev/null) ||
		{ echo "0 0"; return; }
	BCAST_OUT=$out
	echo "$(dp_ctl counters | jq '.uc_small') $(bcast_field senders)"
}
# per_bcast ALGO: "LEAST_CONTROL_PACKETS_PER_BROADCAST SENDERS"
per_bcast() {
	local i many few senders v least=
	for i in 1 2 3; do
		read -r many senders < <(ack_run "$1" 12)
		read -r few _ < <(ack_run "$1" 4)
		v=$(( (many - few) / 8 ))
		if [ -z "$least" ] || [ "$v" -lt "$least" ]; then least=$v; fi
	done
	echo "$least ${senders:-0}"
}
read -r today today_senders < <(per_bcast mcast)
read -r node node_senders < <(per_bcast shm_mcast)
is "$node_senders $today_senders" "4 16" \
	"16 ranks, 4 per node, 64 KiB from rank 0: members that sent packets: shm_mcast $node_senders (the node leaders), mcast $today_senders"
ok "$([ "$node" -gt 0 ] && [ "$node" -lt "$today" ]; echo $?)" \
	"  ... control packets (acks, NACKs, probes) per broadcast: shm_mcast $node, mcast $today (fewer)"

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
