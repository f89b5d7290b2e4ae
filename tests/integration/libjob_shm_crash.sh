#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A rank killed with SIGKILL in the middle of node shared-memory allgathers
# (shm_leader), then of node-leader broadcasts (shm_mcast), on the simulated
# fabric: the other ranks fail with ETIMEDOUT
# (IBMCAST_BCAST_TIMEOUT_MS) instead of hanging, whether the victim was a
# node leader or another local rank, and no /dev/shm entry of the job is
# left. That the segment existed is shown first: a live rank of the
# victim's node has it mapped, already unlinked ("(deleted)" in
# /proc/PID/maps).

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
CHECK=$top_builddir/tests/libjob/shm_crash_check
need_file "$CHECK" "tests/libjob/shm_crash_check"
plan 20

sim_up --hosts 4 --radix 8 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 332 'node[1-3]' 2 || bail_out "job 332 not ready"
export IBMCAST_BCAST_TIMEOUT_MS=2000

# all_pids DIR N: every rank wrote its pid.
all_pids() {
	[ "$(find "$1" -name '*.pid' | wc -l)" -eq "$2" ]
}

# our_segment PID: the first node segment PID has mapped.
our_segment() {
	grep -o '/dev/shm/ibmcast-[^ ]*.*' "/proc/$1/maps" 2>/dev/null | head -n 1
}

# crash_case VICTIM NEIGHBOUR WHAT [bcast]: 9 ranks, 3 per node on 3 nodes
# (the leaders exchange by a ring); VICTIM is killed, NEIGHBOUR shares its
# node.
crash_case() {
	local victim=$1 neighbour=$2 what=$3 mode=${4:-} dir runpid npid seg
	local rc=0 left calls=allgathers
	[ "$mode" = bcast ] && calls=broadcasts
	dir=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-shm.XXXXXX") ||
		bail_out "mktemp failed"
	at_exit "rm -rf '$dir'"
	"$IBMCAST_RUN" -n 9 --nodes 'node[1-3]' -k 3 --job 332 --timeout 120 \
		-- "$CHECK" "$dir" 4096 $mode > "$dir/out" 2>&1 &
	runpid=$!
	at_exit "kill $runpid 2> /dev/null"
	wait_until 60 all_pids "$dir" 9 || diag "not every rank started"
	npid=$(cat "$dir/$neighbour.pid" 2> /dev/null)
	wait_until 30 our_segment "$npid" || diag "no segment mapped"
	seg=$(our_segment "$npid")
	like "$seg" '^/dev/shm/ibmcast-[0-9]+-[0-9a-f]{8}-.* \(deleted\)$' \
		"$what: rank $neighbour, on its node, maps the node segment, already unlinked: ${seg:-none}"
	SECONDS=0
	kill -9 "$(cat "$dir/$victim.pid")"
	wait "$runpid" || rc=$?
	# Bounded by the 2 s broadcast timeout, with room for a loaded host,
	# well before liveness (IBMCAST_DEAD_MS, 10 s) or --timeout would end
	# them.
	is "$rc/$([ "$SECONDS" -le 30 ]; echo $?)" 0/0 \
		"  ... rank $victim killed: every other rank returned from its call and exited (${SECONDS}s, timeout 2s; at most 30)" ||
		diag "$(tail -n 30 "$dir/out")"
	is "$(grep -cE "^rank [0-9]+ failed after [1-9][0-9]* $calls: Connection timed out\$" "$dir/out")" 8 \
		"  ... the 8 others failed with ETIMEDOUT after verified $calls" ||
		diag "$(grep '^rank' "$dir/out")"
	is "$(grep -c "^rank $victim killed by signal 9$" "$dir/out")" 1 \
		"  ... rank $victim was killed by SIGKILL"
	seg=${seg%% *}
	seg=${seg%-*-*-*}
	left=$(find /dev/shm -maxdepth 1 -name "${seg#/dev/shm/}-*" | wc -l)
	is "$left" 0 "  ... nothing of the job in /dev/shm (${seg#/dev/shm/}-*)"
}

crash_case 4 5 "a local rank (4, not a leader)"
crash_case 3 5 "a node leader (3)"
crash_case 4 5 "shm_mcast broadcast, a local rank (4, not a leader)" bcast
crash_case 3 5 "shm_mcast broadcast, a node leader (3)" bcast
