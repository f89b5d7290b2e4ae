#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# prune narrows a job's group to some of its nodes and widens it back;
# grow adds a group. Both are the job owner's, idempotent, and refused with
# a stable error otherwise; a reshaped or grown group is ready only once
# the switches' MFTs (read independently) carry its new tree; multicast
# keeps reaching the subset meanwhile; an SM restart keeps the shapes; and
# grown groups leave the MFTs with the job (release, lease expiry).

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

fabric_need
need_cmd socat socat
need_cmd setpriv util-linux
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$top_builddir/tools/ibmcastctl" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$top_builddir/sim-fabric/ibmcast-mftcorrupt" \
	"sim-fabric/ibmcast-mftcorrupt (make check builds it)"
need_file "$DP_BIN" "sim-fabric/ibmcast-dataplane"
need_file "$DP_TOOL" "tests/dataplane/dp_tool"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan 87

NOBODY=$(id -u nobody)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-gp.XXXXXX")
at_exit "rm -rf '$tmp'"
# The job belongs to nobody, who runs its own copy of ibmcastctl.
install_for_others "$top_builddir/tools/ibmcastctl" "$tmp"
CTL=$tmp/ibmcastctl

# field [JQ-OPTION...] FILTER: from the last reply (OUT).
field() {
	jq -r "$@" <<< "$OUT" 2>&1
}

status_json() {
	"$CTL" --json status "$@" 2> /dev/null
}

# reach MLID: the member nodes the switches' MFTs carry the MLID to, sorted
# and joined by ',', then whether the tree is consistent (mftwatch).
reach() {
	on_fabric "$WATCH" reach --mlid "$1" 2> /dev/null |
		jq -r '.mlids[0] | (.members | sort | join(",")) + " " +
			(.consistent | tostring)'
}

# nodes A B: "nodeA,...,nodeB" sorted as reach sorts them.
nodes() {
	printf 'node%s\n' $(seq "$1" "$2") | sort | paste -sd,
}

# snapshot: what a refusal must not change.
snapshot() {
	status_json | jq -c '{used: .mlids.used, prunes: .counters.prunes,
		grows: .counters.grows, jobs: [.jobs[] | {job, state,
		groups: [.groups[] | [.mlid, .state, .nodes]]}]}'
}

# refused WHAT CODE DETAIL-ERE [as USER] ARGS...: refused with CODE (exit
# 2, the code and detail on stderr), and nothing changes.
refused() {
	local what=$1 code=$2 re=$3 before
	shift 3
	before=$(snapshot)
	run_ctl "$@"
	is "$RC" 2 "$what: exit 2" || diag "stdout: $OUT"
	like "$ERR" "^ibmcastctl: [a-z]+: $code: .*$re" \
		"$what: $code, and the detail says why"
	is "$(snapshot)" "$before" "$what: nothing changed"
}

# no_entries MLID...: no switch holds any of the MLIDs.
no_entries() {
	[ "$(mft_entries "$@")" = 0 ]
}

sim_up --hosts 16 --radix 8 --plugin-opt max_groups=256
ok $? "fabric up (16 hosts, radix 8, max_groups=256)" ||
	bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
used0=$(status_json | jq -r .mlids.used)

run_ctl reserve 7 --nodes 'node[1-8]' --groups 2 --uid "$NOBODY"
run_ctl --json wait 7 --timeout-ms 30000
is "$(field '[.job.state, .job.pool_groups] | @tsv')" "ready	2" \
	"job 7 (nobody's, node[1-8], 2 groups) is ready" || diag "$OUT $ERR"
M0=$(field '.job.groups[0].mlid')
M1=$(field '.job.groups[1].mlid')
MGID0=$(field '.job.groups[0].mgid')
QKEY=$(field '.job.qkey')
is "$(reach "$M0")" "$(nodes 1 8) true" "group 0 ($M0) reaches node[1-8]"

# --- prune -------------------------------------------------------------------
run_ctl as nobody --json prune 7 --group 0 --nodes 'node[1-3]'
is "$(field '[.ok, .changed, .group.state, .group.nodes, .group.mlid] |
	@tsv')" "true	true	building	node[1-3]	$M0" \
	"prune 7 group 0 to node[1-3] by its owner: changed, building" ||
	diag "$OUT $ERR"
run_ctl --json wait 7 --group 0 --timeout-ms 30000
after=$(reach "$M0")
is "$(field '[.timed_out, .group.index, .group.state, .group.members] |
	@tsv')" "false	0	ready	3" \
	"wait 7 --group 0: ready with 3 members" || diag "$OUT $ERR"
is "$after" "$(nodes 1 3) true" \
	"when it says ready, the MFTs carry group 0 to node[1-3] only"
is "$(reach "$M1")" "$(nodes 1 8) true" "group 1 still reaches node[1-8]"
is "$(status_json 7 | jq -c '[.jobs[0].state, [.jobs[0].groups[] |
	[.index, .state, .nodes]]]')" \
	'["ready",[[0,"ready","node[1-3]"],[1,"ready",null]]]' \
	"status: the job is ready, group 0 pruned to node[1-3]"

prunes=$(status_json | jq .counters.prunes)
run_ctl as nobody --json prune 7 --group 0 --nodes 'node[3,1-2]'
is "$(field '[.ok, .changed, .group.state, .group.nodes] | @tsv')" \
	"true	false	ready	node[1-3]" \
	"the same prune again (written otherwise): no change, still ready"
is "$(status_json | jq .counters.prunes)" "$prunes" \
	"  and the prunes counter did not move"

# --- multicast during a switch-over ------------------------------------------
# node1 sends to group 1 every 2 ms from before a prune to node[1-4] until
# after the narrowed tree is confirmed: node2..4 get every packet, whichever
# tree carried it.
MGID1=$(status_json 7 | jq -r .jobs[0].groups[1].mgid)
dp_mft_fresh "$M1"
# Each receiver ends after 5 s without a packet: started just before the
# sender, they only stop once it has.
for n in 2 3 4; do
	dp_recv_bg "$tmp/r.$n" --node node$n --mgid "$MGID1" --mlid "$M1" \
		--count 0 --timeout-ms 5000
done
"$DP_TOOL" send-mc --node node1 --mgid "$MGID1" --mlid "$M1" --qkey "$QKEY" \
	--count 0 --interval-us 2000 --until-file "$tmp/stop" \
	> "$tmp/sender" 2>&1 &
sender=$!
at_exit "touch '$tmp/stop'; kill $sender 2> /dev/null || true"
# received: packets node2 has got so far.
received() { count_matches "$tmp/r.2" '^recv '; }
at_least() { [ "$(received)" -ge "$1" ]; }
wait_until 20 at_least 3
run_ctl as nobody --json prune 7 --group 1 --nodes 'node[1-4]'
at_prune=$(received)
is "$(field '[.changed, .group.state] | @tsv')" "true	building" \
	"prune 7 group 1 to node[1-4] while node1 sends: building"
run_ctl --json wait 7 --group 1 --timeout-ms 30000
at_ready=$(received)
after=$(reach "$M1")
is "$(field .group.state)/$after" "ready/$(nodes 1 4) true" \
	"group 1 ready, its MFTs carry it to node[1-4] only"
wait_until 20 at_least $((at_ready + 3))
touch "$tmp/stop"
wait "$sender"
total_sent=$(sed -n 's/^sent //p' "$tmp/sender")
diag "node2 had $at_prune packets at the prune, $((at_ready - at_prune))" \
	"more by the time it was confirmed; $total_sent sent in all"
is "$(dp_got "$tmp/r.2") $(dp_got "$tmp/r.3") $(dp_got "$tmp/r.4")" \
	"$total_sent $total_sent $total_sent" \
	"node2..4 each got all $total_sent packets sent across the switch-over"

# --- widen -------------------------------------------------------------------
run_ctl as nobody --json prune 7 --group 0
is "$(field '[.changed, .group.state, .group.nodes // "all"] | @tsv')" \
	"true	building	all" "prune 7 group 0 with no nodes widens it"
run_ctl --json wait 7 --group 0 --timeout-ms 30000
after=$(reach "$M0")
is "$(field .group.state)/$after" "ready/$(nodes 1 8) true" \
	"widened group 0 ready, its MFTs reach node[1-8] again"
run_ctl as nobody --json prune 7 --group 0 --nodes 'node[1-8]'
is "$(field '[.changed, .group.state] | @tsv')" "false	ready" \
	"pruning to all the job's nodes is the same: no change"
run_ctl as nobody prune 7 --group 1 --nodes 'node[1-8]'
run_ctl --json wait 7 --timeout-ms 30000
is "$(field '[.job.state, ([.job.groups[].members | tostring] |
	join(","))] | @tsv')" \
	"ready	8,8" "group 1 widened by its full node list: the job is whole"

# Over TCP the uid is the MUNGE credential's.
run_ctl as nobody --server "$IBMCAST_SERVER_TCP" --json prune 7 --group 1 \
	--nodes 'node[5-8]'
is "$(field '[.ok, .changed, .group.nodes] | @tsv')" "true	true	node[5-8]" \
	"over TCP, nobody's credential prunes nobody's job" || diag "$ERR"
refused "prune over TCP by another user" unauthorized \
	"uid $(id -u daemon) is none" \
	as daemon --server "$IBMCAST_SERVER_TCP" prune 7 --group 1
run_ctl as nobody --server "$IBMCAST_SERVER_TCP" prune 7 --group 1
run_ctl --json wait 7 --timeout-ms 30000
is "$(field '[.job.state, .job.groups[1].nodes // "all"] | @tsv')" \
	"ready	all" "widened back over TCP, the job is ready"

# --- refusals ----------------------------------------------------------------
refused "prune by another user" unauthorized "needs its owner \\(uid $NOBODY\\)" \
	as daemon prune 7 --group 0 --nodes node1
refused "grow by another user" unauthorized "uid $(id -u daemon) is none" \
	as daemon grow 7
refused "prune of an unknown job" unknown_job "job 99 holds no reservation" \
	as nobody prune 99 --group 0 --nodes node1
refused "grow of an unknown job" unknown_job "job 99 holds no reservation" \
	as nobody grow 99
refused "prune to a node outside the job" unknown_node \
	"node9 is not one of job 7's nodes" \
	as nobody prune 7 --group 0 --nodes 'node[1,9]'
refused "prune to a node nowhere on the fabric" unknown_node \
	"nosuch1 is not one of job 7's nodes" \
	as nobody prune 7 --group 0 --nodes nosuch1
refused "prune of a group the job does not have" bad_request \
	"job 7 has groups 0..1; no group 2" \
	as nobody prune 7 --group 2 --nodes node1
refused "wait on a group the job does not have" bad_request "no group 5" \
	wait 7 --group 5
refused "grow naming a reserved group" bad_request \
	"0 is one of job 7's reserved groups" as nobody grow 7 --group 0
refused "grow naming an index past the next" bad_request \
	"next group would be 2, not 3" as nobody grow 7 --group 3
run_ctl prune 7 --nodes node1
is "$RC" 64 "ibmcastctl prune without --group: a usage error"
like "$ERR" "prune: --group is required" "  saying so"
run_ctl reserve 9 --nodes node1 --group 1
like "$RC $ERR" "^64 .*option '--group' does not apply to reserve" \
	"ibmcastctl reserve --group: a usage error"
before=$(snapshot)
reply=$(printf '%s\n' '{"op":"prune","job":7,"group":0,"nodes":"node[3-1]"}' |
	socat -t 5 - "UNIX-CONNECT:${IBMCAST_SERVER#unix:}")
is "$(jq -r '[.error, .detail] | @tsv' <<< "$reply" 2>&1)" \
	"bad_request	nodes: \"node[3-1]\" is not a valid hostlist expression" \
	"a bad hostlist (past ibmcastctl's own check) is bad_request"
is "$(snapshot)" "$before" "  and changes nothing"
reply=$(printf '%s\n' '{"op":"prune","job":7,"nodes":"node1"}' |
	socat -t 5 - "UNIX-CONNECT:${IBMCAST_SERVER#unix:}")
is "$(jq -r '[.error, .detail] | @tsv' <<< "$reply" 2>&1)" \
	"bad_request	group: missing for op prune" "prune without a group is refused"

# --- grow --------------------------------------------------------------------
run_ctl as nobody --json grow 7 --group 2
is "$(field '[.ok, .created, .group.index, .group.state, .group.grown,
	.job.qkey] | @tsv')" "true	true	2	building	true	$QKEY" \
	"grow 7 --group 2: group 2 created, building, the job's Q_Key" ||
	diag "$OUT $ERR"
M2=$(field .group.mlid)
is "$(field .group.mgid)" "${MGID0%:*}:0002" \
	"its MGID is the job's with index 2"
used=$(status_json | jq .mlids.used)
run_ctl as nobody --json grow 7 --group 2
is "$(field '[.created, .group.mlid] | @tsv')" "false	$M2" \
	"grow 7 --group 2 again: the same group, nothing created"
is "$(status_json | jq '[.mlids.used, .counters.grows] | @tsv' -r)" \
	"$used	1" "  one MLID and one grow, not two"
run_ctl --json wait 7 --group 2 --timeout-ms 30000
after=$(reach "$M2")
is "$(field .group.state)/$after" "ready/$(nodes 1 8) true" \
	"grown group 2 ready, its MFTs reach node[1-8]"

# Quota: a job at max_groups grows no more.
run_ctl reserve 20 --nodes 'node[9-10]' --groups 256 --uid "$NOBODY"
is "$RC" 0 "job 20 holds 256 groups (max_groups)" || diag "$ERR"
refused "grow beyond max_groups" quota \
	"job 20 already holds 256 groups; at most 256 per job" \
	as nobody grow 20
# MLIDs: fill every free one, then grow.
total=$(status_json | jq .mlids.total)
left=$((total - $(status_json | jq .mlids.used)))
fill=()
for ((j = 21; left > 0; j++)); do
	n=$((left > 256 ? 256 : left))
	"$CTL" reserve "$j" --nodes 'node[9-10]' --groups "$n" > /dev/null 2>&1
	fill+=("$j")
	left=$((left - n))
done
is "$(status_json | jq .mlids.used)" "$total" "jobs ${fill[*]} take every MLID"
refused "grow with no MLID free" no_mlid "only 0 of $total MLIDs are free" \
	as nobody grow 7
for j in 20 "${fill[@]}"; do
	"$CTL" release "$j" > /dev/null 2>&1
done

# --- an SM restart keeps the shapes ------------------------------------------
run_ctl as nobody grow 7 --group 3
run_ctl as nobody prune 7 --group 0 --nodes 'node[2-4]'
run_ctl --json wait 7 --timeout-ms 60000
is "$(field .job.state)" ready "job 7 with group 3 grown and group 0 pruned is ready"
shape=$(field -c '[.job.groups[] | [.index, .mgid, .nodes, .grown]]')
is "$(jq -c '.jobs[] | select(.job == 7) | [.groups, .pool_groups, .pruned]' \
	"$IBMCAST_STATE_SM1")" '[4,2,{"0":"node[2-4]"}]' \
	"the state file holds 4 groups, 2 of them the pool, group 0's subset"
mapfile -t M < <(field '.job.groups[].mlid')
run_ok "stop OpenSM" "$IBMCAST_SIM" stop-sm --dir "$SIM_DIR"
# The entries are there first: a wipe (or a count) that found nothing
# would leave the old SM's entries to pass the checks of the rebuild.
before=$(mft_entries "${M[@]}")
mft_wipe "${M[@]}"
rc=$?
is "$rc/$([ "$before" -gt 0 ]; echo $?)/$(mft_entries "${M[@]}")" "0/0/0" \
	"with OpenSM down, job 7's $before MFT entries are wiped from the switches"
run_ok "start OpenSM" "$IBMCAST_SIM" start-sm --dir "$SIM_DIR"
run_ctl --json wait 7 --timeout-ms 60000
is "$(field .job.state)" ready "job 7 is ready again after the restart" ||
	diag "$OUT $ERR"
is "$(field -c '[.job.groups[] | [.index, .mgid, .nodes, .grown]]')" \
	"$shape" "same groups, MGIDs, subset and grown groups as before"
mapfile -t M < <(field '.job.groups[].mlid')
is "$(reach "${M[0]}")" "$(nodes 2 4) true" \
	"the rebuilt group 0 reaches node[2-4] only"
is "$(reach "${M[3]}")" "$(nodes 1 8) true" \
	"the rebuilt grown group 3 reaches node[1-8]"

# --- grown groups go with the job --------------------------------------------
run_ctl --json release 7
is "$(field .released)" true "release 7"
wait_until 20 no_entries "${M[@]}"
ok $? "no switch holds any of job 7's MLIDs (${M[*]}), grown ones included"
is "$(status_json | jq .mlids.used)" "$used0" "MLID use is back to $used0"

run_ctl reserve 8 --nodes 'node[9-12]' --groups 1 --lease 6 --uid "$NOBODY"
run_ctl as nobody --json grow 8
G=$(field .group.mlid)
run_ctl --json wait 8 --group 1 --timeout-ms 20000
after=$(reach "$G")
is "$(field .group.state)/$after" "ready/$(nodes 9 12) true" \
	"job 8 (lease 6 s) grew group 1 ($G), ready on node[9-12]"
wait_until 20 sh -c "! '$CTL' status 8"
ok $? "job 8's lease ran out"
wait_until 20 no_entries "$G"
ok $? "its grown group is gone from every MFT"
is "$(status_json | jq .mlids.used)" "$used0" "MLID use is back to $used0"
