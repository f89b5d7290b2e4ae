#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Mode sm: a communicator over 2 of the job's 8 nodes narrows its pool
# group to its own nodes (rank 0 prunes in the background at creation,
# never waiting; the group is usable all along), so its broadcasts by
# multicast cross fewer links: the data plane's link bytes for the same
# broadcasts drop against a run with IBMCAST_PRUNE=0, every byte right in
# both. Freeing the communicator widens the group back to the job.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
modes_need
plan 10

JOB=412
# group0: the nodes group 0 is narrowed to ("all": none) and its state.
group0() {
	"$IBMCASTCTL" --json status "$JOB" |
		jq -r '.jobs[0].groups[0] | "\(.nodes // "all") \(.state)"'
}
# group0_is WHAT: group0 says WHAT (a command for wait_until, which then
# asks the server again on each try).
group0_is() {
	[ "$(group0)" = "$1" ]
}

# sub_run NAME: 8 ranks, one per node; ranks 0 and 1 (node1, node2) make
# a communicator and broadcast 1 KiB 60 times once the caller lets them
# (after it reset the counters); the link bytes then in $BYTES.
sub_run() {
	local name=$1 d pid
	d=$(mktemp -d "$SIM_DIR/$name.XXXX")
	"$IBMCAST_RUN" -n 8 --nodes 'node[1-8]' -k 1 --timeout 240 -- \
		"$MODES" --size 2 --count 60 --pause "$d" > "$d/out" 2>&1 &
	pid=$!
	at_exit "kill $pid 2> /dev/null"
	wait_until 120 test -e "$d/created" ||
		{ diag "$(tail -n 20 "$d/out")"; bail_out "$name: no communicator"; }
	if [ "$name" = pruned ]; then
		wait_until 60 group0_is "node[1-2] ready"
		is "$(group0)" "node[1-2] ready" \
			"pruned: group 0 narrowed to the communicator's nodes and SM-confirmed before the broadcasts"
	fi
	dp_ctl reset > /dev/null || bail_out "cannot reset the counters"
	touch "$d/start"
	wait "$pid"
	ok $? "$name: ranks exited 0" || diag "$(tail -n 30 "$d/out")"
	BYTES=$(dp_total_link_bytes)
	OUTF=$d/out
	diag "$name: $(grep '^summary' "$d/out"), link bytes $BYTES"
}

sim_up --hosts 8 --radix 4 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve "$JOB" 'node[1-8]' 1 || bail_out "job $JOB not ready"
ibmcast_env_from_wait "$JOB" || bail_out "no environment for job $JOB"
export IBMCAST_LOG_LEVEL=info
# Two ranks would take the postal tree for 1 KiB by default.
export IBMCAST_BCAST_ALGO=mcast
is "$(group0)" "all ready" "group 0 spans the whole job before"

IBMCAST_PRUNE=0 sub_run wide
wide=$BYTES
ok "$([ "$(modes_field bad "$OUTF")" = 0 ] && [ "$(modes_field last_mcast "$OUTF")" = 2 ]; echo $?)" \
	"IBMCAST_PRUNE=0: every byte right, broadcasts by multicast"
is "$(group0)" "all ready" "IBMCAST_PRUNE=0: group 0 was not narrowed"

sub_run pruned
pruned=$BYTES
ok "$([ "$(modes_field bad "$OUTF")" = 0 ] && [ "$(modes_field last_mcast "$OUTF")" = 2 ]; echo $?)" \
	"pruned: every byte right, broadcasts by multicast"
ok "$(grep -qE 'pruned group 0 \(MLID 0x[0-9a-f]+\) to its 2 member port\(s\): SM-confirmed' "$OUTF"; echo $?)" \
	"pruned: rank 0 logged the SM's confirmation ($(grep -oE 'pruned group 0.*' "$OUTF" | head -n 1))"
ok "$([ "$wide" -gt 0 ] && [ $((pruned * 2)) -lt "$wide" ]; echo $?)" \
	"the same broadcasts cross less than half the link bytes once pruned ($pruned against $wide)"
wait_until 60 group0_is "all ready"
is "$(group0)" "all ready" "freed: group 0 widened back to the whole job and SM-confirmed"
