#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# libibmcast on the simulated fabric with real OpenSM and the data plane:
# processes started by ibmcast-run broadcast from every root, 1 byte to
# 64 MiB, 2 to 32 ranks, 1 to 4 ranks per node, several communicators at
# once, data verified byte for byte; then under 1%, 5% and 20% loss with
# duplication and reordering; then over groups whose tree is not programmed
# (released, or an MLID the SM never programmed): the fabric drops the
# multicast and the library still delivers point-to-point.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
plan 23

# routes_gone MLID...: no switch has an MFT entry for any of the MLIDs.
routes_gone() {
	# shellcheck disable=SC2046
	on_fabric "$WATCH" reach $(printf -- '--mlid %s ' "$@") 2> /dev/null |
		jq -e '[.mlids[] | (.members | length) + (.switches | length)] |
			add == 0' > /dev/null
}

# dp_no_members MLID...: the data plane's view of the MLIDs it tracks (it
# may still track them from earlier jobs) carries them to no HCA.
dp_no_members() {
	local ms
	ms=$(for m in "$@"; do echo $((m)); done | paste -sd,)
	dp_ctl status | jq -e --argjson ms "[$ms]" '[.mlids[] |
		select(.mlid as $m | $ms | index($m)) | .members[]] |
		length == 0' > /dev/null
}

# 16 hosts on leaves of 4 (radix 8): multicast crosses spines.
sim_up --hosts 16 --radix 8 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 301 'node[1-16]' 8 || bail_out "job 301 not ready"
J=(--job 301)

# --- correctness ----------------------------------------------------------
SMALL=1,2,100,4095,4096,4097,65536
# (auto prefers a unicast tree for one fragment on 2 or 3 members)
bcast_run "2 ranks on 2 nodes, every root, 1 B..1 MiB, multicast forced" \
	2 'node[1-2]' "${J[@]}" -- --sizes $SMALL,1M --algo mcast --expect mcast
bcast_run "3 ranks, cyclic over 3 nodes, every root" \
	3 'node[4-6]' "${J[@]}" -d cyclic -- --sizes $SMALL,300K
bcast_run "7 ranks, 2 per node, every root" \
	7 'node[1-16]' "${J[@]}" -k 2 -- --sizes $SMALL,1M --expect mcast
bcast_run "13 ranks, 4 per node, every root" \
	13 'node[5-16]' "${J[@]}" -k 4 -- --sizes 1,4096,65537
bcast_run "32 ranks, 2 per node on all 16 nodes, every root" \
	32 'node[1-16]' "${J[@]}" -k 2 -- --sizes 1,4096,200000 --expect mcast
bcast_run "24 ranks, 3 per node, 3 communicators + 2 halves at once" \
	24 'node[1-16]' "${J[@]}" -k 3 -- --sizes 1,5000,100000 --comms 3 \
	--halves --roots 0,5,11,23
bcast_run "6 ranks, binomial, every root" \
	6 'node[1-16]' "${J[@]}" -- --sizes $SMALL --algo binomial --expect p2p
bcast_run "5 ranks, postal, every root" \
	5 'node[1-16]' "${J[@]}" -- --sizes $SMALL --algo postal --expect p2p
bcast_run "64 MiB once, 4 ranks on 4 nodes" \
	4 'node[9-12]' "${J[@]}" -- --sizes 64M --roots 2 --expect mcast
diag "without --job: no pool, point-to-point"
bcast_run "8 ranks without a job: point-to-point, every root" \
	8 'node[1-8]' -- --sizes 1,4096,65536 --expect p2p

# --- loss, duplication, reordering --------------------------------------
# Seeded, so a failure reproduces; bounded by the broadcast timeout and
# ibmcast-run's --timeout.
for loss in 0.01 0.05 0.20; do
	dp_ctl clear > /dev/null
	dp_ctl set loss=$loss dup=0.02 reorder=0.05 seed=11 > /dev/null ||
		bail_out "cannot set faults"
	dp_ctl reset > /dev/null
	bcast_run "loss $loss, dup 2%, reorder 5%: 12 ranks, 2 per node, data intact" \
		12 'node[1-16]' "${J[@]}" -k 2 -- --sizes 1,4096,65536,1M \
		--roots 0,7 --comms 2 --expect mcast
	drops=$(dp_ctl counters | jq '.drops.loss')
	ok "$([ "${drops:-0}" -gt 0 ] && [ "$(bcast_field retransmits)" -gt 0 ]; echo $?)" \
		"loss $loss: the fabric dropped $drops packets, the library retransmitted $(bcast_field retransmits)"
	# The links tell the recovery (sent unmodeled) from the rest, and
	# the hosts' uplinks what entered the fabric: a part of all sends
	# (2 ranks a node: some loop back in the HCA), never more.
	read -r rec pk up sends < <(dp_ctl counters | jq -r '[([.links[].recovery_packets] | add),
		([.links[].packets] | add),
		([.links[] | select(.from_hca) | .packets] | add), .sends] | @tsv')
	ok "$([ "${rec:-0}" -gt 0 ] && [ "$rec" -lt "${pk:-0}" ] &&
	      [ "${up:-0}" -gt 0 ] && [ "$up" -le "${sends:-0}" ]; echo $?)" \
		"loss $loss: links carried $rec recovery packets of $pk; $up of $sends sends entered the fabric"
done
dp_ctl clear > /dev/null

# --- groups the fabric does not carry ---------------------------------------
# A job's groups after release: the SM removed their trees, so multicast
# reaches nobody; the environment still names them (stale, or racing).
libjob_reserve 302 'node[1-16]' 2 || bail_out "job 302 not ready"
ibmcast_env_from_wait 302
"$IBMCASTCTL" release 302 > /dev/null
wait_until 20 sh -c "! '$IBMCASTCTL' status 302" ||
	diag "job 302 still reserved after release"
# Its routes were there (it was ready): wait until OpenSM has removed them
# from every switch, then until the data plane's view has caught up.
mapfile -t M302 < <(tr ' ' '\n' <<< "$IBMCAST_GROUPS" | cut -d/ -f2)
wait_until 20 routes_gone "${M302[@]}" ||
	diag "job 302's MLIDs ${M302[*]} still in the MFTs after 20 s"
wait_until 20 dp_no_members "${M302[@]}" ||
	diag "the data plane still routes job 302's MLIDs ${M302[*]}"
dp_ctl reset > /dev/null
bcast_run "released job's groups (state says ready): 6 ranks still get every byte" \
	6 'node[1-16]' -- --sizes 1,4096,65536,300000 --roots 0,4 --reps 3
nomcast=$(dp_ctl counters | jq '.drops.no_route + .drops.mft_unread')
ok "$([ "${nomcast:-0}" -gt 0 ]; echo $?)" \
	"the fabric dropped multicast it no longer routes ($nomcast packets)"

# An MLID the SM never programmed, with a made-up MGID of this job's shape.
export IBMCAST_STATE=ready IBMCAST_NGROUPS=1 \
	IBMCAST_GROUPS="ff12:1bca:ffff:0000:0000:0bad:0000:0000/0xc3f0/0x1bca0bad/0xffff/2048"
export IBMCAST_JOB=2989
dp_ctl reset > /dev/null
bcast_run "an unprogrammed MLID: 5 ranks fall back and deliver" \
	5 'node[1-16]' -- --sizes 1,4096,65536,200000 --reps 3
# The ranks did try the group: the fabric dropped what they multicast for
# want of a route (the MLID in no MFT, or one it never read), and only then
# did point-to-point deliver.
nomcast=$(dp_ctl counters | jq '.drops.no_route + .drops.mft_unread')
ok "$([ "${nomcast:-0}" -gt 0 ]; echo $?)" \
	"  ... the fabric dropped their multicast for want of a route ($nomcast packets)"
unset IBMCAST_STATE IBMCAST_NGROUPS IBMCAST_GROUPS IBMCAST_JOB
