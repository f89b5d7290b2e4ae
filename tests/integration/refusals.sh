#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Every refused request (unknown node, no MLID, quotas, malformed, conflicting
# job) creates nothing, consumes no MLID, and leaves the server serving.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
need_cmd socat socat
CTL=$top_builddir/tools/ibmcastctl
need_file "$CTL" "tools/ibmcastctl"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan 110

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-refusals.XXXXXX")
at_exit "rm -rf '$tmp'"

# ctl ARGS...: runs ibmcastctl against the current fabric; sets OUT, ERR, RC.
ctl() {
	RC=0
	OUT=$("$CTL" "$@" 2> "$tmp/err") || RC=$?
	ERR=$(cat "$tmp/err")
}

# raw JSON: sends one request line on the Unix socket, prints the reply.
raw() {
	printf '%s\n' "$1" | socat -t 5 - "UNIX-CONNECT:$SOCK"
}

# status_json [JOB]: the status reply.  A full status of a fabric holding
# hundreds of groups is long, so most checks look at one small job.
status_json() {
	"$CTL" --json status "$@" 2> "$tmp/status.err" ||
		diag "status $*: $(cat "$tmp/status.err")"
}

# snapshot: what a refusal must not change: MLID use and every job with its
# nodes and MLIDs.
snapshot() {
	status_json "$@" | jq -c '{used: .mlids.used, ibmcast: .mlids.ibmcast,
		jobs: [.jobs[] | {job, nodes, mlids: [.groups[].mlid]}]}'
}

# refused WHAT CODE DETAIL-ERE ARGS...: ibmcastctl ARGS is refused by the
# server with CODE: exit 2, "ibmcastctl: OP: CODE: DETAIL" on stderr, and
# nothing in the snapshot changes.  SNAP_ARGS narrows the snapshot.
SNAP_ARGS=()
refused() {
	local what=$1 code=$2 re=$3 before
	shift 3
	before=$(snapshot "${SNAP_ARGS[@]}")
	ctl "$@"
	is "$RC" 2 "$what: ibmcastctl exits 2" || diag "stdout: $OUT"
	like "$ERR" "^ibmcastctl: [a-z]+: $code: .*$re" \
		"$what: stderr shows $code and the detail"
	is "$(snapshot "${SNAP_ARGS[@]}")" "$before" \
		"$what: nothing created, MLID use unchanged"
}

# raw_refused WHAT DETAIL-ERE JSON: the request line is bad_request with a
# detail matching DETAIL-ERE, and nothing changes.
raw_refused() {
	local what=$1 re=$2 before reply
	before=$(snapshot)
	reply=$(raw "$3")
	is "$(jq -r '[.ok, .error] | @tsv' <<< "$reply" 2>&1)" \
		"false	bad_request" "$what: bad_request" || diag "reply: $reply"
	like "$(jq -r .detail <<< "$reply" 2>&1)" "$re" "$what: detail names the problem"
	is "$(snapshot)" "$before" "$what: nothing created"
}

# mlids JOB: the job's MLIDs, one line.
mlids() {
	status_json "$1" | jq -c '[.jobs[0].groups[].mlid]'
}

# wait_ready JOB MSG: wait reports the job ready.
wait_ready() {
	ctl --json wait "$1" --timeout-ms 20000
	is "$RC/$(jq -r '.job.state' <<< "$OUT" 2>&1)" "0/ready" "$2" ||
		diag "$ERR"
}

osm_alive() {
	local pid
	read -r pid _ < "$SIM_DIR/pids/opensm"
	kill -0 "$pid" 2> /dev/null
}

# --- fabric A: the MLID space and most refusals --------------------------
diag "fabric A: 16 hosts, max_groups=1024, max_lease_s=3600"
sim_up --hosts 16 --plugin-opt max_groups=1024 --plugin-opt max_lease_s=3600 \
	--plugin-opt default_lease_s=600 ||
	bail_out "fabric A did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
SOCK=${IBMCAST_SERVER#unix:}

st=$(status_json)
total=$(jq -r .mlids.total <<< "$st")
used0=$(jq -r .mlids.used <<< "$st")
is "$total" 1024 "the MLID space holds 1024 MLIDs"
diag "MLIDs used before any job: $used0 (OpenSM's own groups)"

ctl reserve 1 --nodes 'node[1-8]' --groups 4
is "$RC" 0 "job 1 (node[1-8], 4 groups) is reserved" || diag "$ERR"
wait_ready 1 "job 1 is ready"
job1=$(mlids 1)

# Unknown nodes.
refused "a node the fabric lacks" unknown_node 'no active HCA port found for nosuch7' \
	reserve 2 --nodes 'node[1-4],nosuch7'
refused "nodes past the fabric's 16" unknown_node 'found for node17 node18$' \
	reserve 2 --nodes 'node[15-18]'
ctl status 2
is "$RC" 2 "the refused job 2 does not exist (status exits 2)"
like "$ERR" 'unknown_job' "status of job 2 says unknown_job"

# More groups than free MLIDs.
free=$((total - $(status_json | jq -r .mlids.used)))
refused "1024 groups with $free MLIDs free" no_mlid \
	"1024 groups requested but only $free of 1024 MLIDs are free" \
	reserve 3 --nodes 'node[1-16]' --groups 1024
ctl status 3
is "$RC" 2 "the refused job 3 does not exist"

# Leases.
refused "a lease over max_lease_s" quota 'lease 7200 s exceeds max_lease_s 3600' \
	reserve 4 --nodes node1 --lease 7200
refused "a renewal over max_lease_s" quota 'lease 7200 s exceeds max_lease_s 3600' \
	renew 1 --lease 7200
is "$(status_json 1 | jq -r .jobs[0].lease_s)" 600 "job 1 keeps its 600 s lease"

# Malformed requests, sent as raw lines (ibmcastctl refuses them itself).
ctl reserve 5 --nodes 'node[3-1]'
is "$RC" 64 "ibmcastctl refuses the hostlist node[3-1] as a usage error"
raw_refused "hostlist node[3-1]" 'nodes: "node\[3-1\]" is not a valid hostlist' \
	'{"op":"reserve","job":5,"nodes":"node[3-1]"}'
raw_refused "reserve without nodes" 'nodes: missing' '{"op":"reserve","job":5}'
raw_refused "groups 0" 'groups: expected an integer in 1\.\.1024' \
	'{"op":"reserve","job":5,"nodes":"node1","groups":0}'
raw_refused "groups 1025" 'groups: expected an integer in 1\.\.1024' \
	'{"op":"reserve","job":5,"nodes":"node1","groups":1025}'
raw_refused "job 0" 'job: expected an integer' \
	'{"op":"reserve","job":0,"nodes":"node1"}'
raw_refused "job as a string" 'job: expected an integer' \
	'{"op":"reserve","job":"5","nodes":"node1"}'
raw_refused "nodes as a number" 'nodes: expected a hostlist string' \
	'{"op":"reserve","job":5,"nodes":7}'

# The same job again.
refused "job 1 again with other nodes" bad_request \
	'job 1 is already reserved for other nodes \(node\[1-8\]\)' \
	reserve 1 --nodes 'node[1-9]'
is "$(status_json 1 | jq -r '.jobs[0] | "\(.state) \(.nodes)"')" "ready node[1-8]" \
	"job 1 is still ready on its own nodes"
reserves=$(status_json | jq -r .counters.reserves)
ctl --json reserve 1 --nodes 'node[1-8]' --groups 4
is "$RC/$(jq -r .created <<< "$OUT")" "0/false" "job 1 again with the same nodes: ok, created false"
is "$(jq -c '[.job.groups[].mlid]' <<< "$OUT")" "$job1" "  and the same MLIDs"
ctl --json reserve 1 --nodes 'node[5-8],node1,node2,node[3-4]'
is "$RC/$(jq -r .created <<< "$OUT")" "0/false" \
	"the same node set written otherwise is the same reservation"
ctl reserve 1 --nodes 'node[1-8]'
like "$OUT" '^existing reservation' "ibmcastctl says 'existing reservation'"
is "$(status_json | jq -r .counters.reserves)" "$reserves" \
	"idempotent reserves create nothing (reserves counter unchanged)"

# Unknown jobs.
ctl --json release 77
is "$RC/$(jq -c '[.ok, .released]' <<< "$OUT")" '0/[true,false]' \
	"release of an unknown job: ok, released false"
ctl release 77
like "$OUT" 'not reserved' "ibmcastctl says the job was not reserved"
for op in renew wait status; do
	before=$(snapshot)
	ctl "$op" 77
	is "$RC" 2 "$op of an unknown job exits 2"
	like "$ERR" "^ibmcastctl: $op: unknown_job: job 77 holds no reservation" \
		"$op of an unknown job: unknown_job on stderr"
	is "$(snapshot)" "$before" "$op of an unknown job changes nothing"
done

# Fill the MLID space with jobs of at most 250 groups, leaving one free.
used=$(status_json 1 | jq -r .mlids.used)
left=$((total - used - 1))
diag "filling: $left groups in jobs of <= 250, leaving 1 MLID free"
fill_jobs=()
j=11
fill_ok=0
while ((left > 0)); do
	n=$((left > 250 ? 250 : left))
	ctl reserve "$j" --nodes 'node[1-16]' --groups "$n"
	[ "$RC" = 0 ] || { fill_ok=1; diag "reserve $j ($n groups): $ERR"; }
	fill_jobs+=("$j")
	left=$((left - n))
	j=$((j + 1))
done
ok "$fill_ok" "${#fill_jobs[@]} jobs reserve all but one free MLID"
declare -A fill_mlids
for j in "${fill_jobs[@]}"; do
	wait_ready "$j" "fill job $j is ready"
	fill_mlids[$j]=$(mlids "$j")
done
SNAP_ARGS=(1)
is "$(status_json 1 | jq -r .mlids.used)" $((total - 1)) "one MLID is left"
refused "2 groups with 1 MLID free" no_mlid \
	'2 groups requested but only 1 of 1024 MLIDs are free' \
	reserve 20 --nodes 'node[1-2]' --groups 2
ctl reserve 20 --nodes 'node[1-2]' --groups 1
is "$RC" 0 "1 group with 1 MLID free is reserved" || diag "$ERR"
wait_ready 20 "it is ready"
is "$(status_json 1 | jq -r .mlids.used)" "$total" "every MLID is in use"
refused "a job on a full MLID space" no_mlid \
	'1 groups requested but only 0 of 1024 MLIDs are free' \
	reserve 21 --nodes node3 --groups 1
SNAP_ARGS=()
for j in 1 "${fill_jobs[@]}"; do
	want=$job1
	[ "$j" = 1 ] || want=${fill_mlids[$j]}
	st=$(status_json "$j" | jq -r '.jobs[0].state')
	is "$st $(mlids "$j")" "ready $want" "job $j stays ready with its MLIDs"
done
dups=$(for j in 1 20 "${fill_jobs[@]}"; do mlids "$j"; done |
	jq -r '.[]' | sort | uniq -d)
is "$dups" "" "no MLID is held by two groups"
ctl status
is "$RC" 0 "status answers with all $total MLIDs reserved" ||
	diag "$ERR" "(status can no longer be read once the jobs' groups make its reply longer than the 64 KiB a client accepts)"

for j in "${fill_jobs[@]}" 20; do
	"$CTL" release "$j" > /dev/null
done
is "$(status_json | jq -r .mlids.used)" "$used" \
	"releasing the fill jobs frees their MLIDs"
ctl reserve 22 --nodes 'node[1-16]' --groups 600
is "$RC" 0 "a 600-group job (under max_groups) gets its reserve reply" ||
	diag "$ERR"
ctl release 22
is "$RC" 0 "and is released"
ok "$(osm_alive; echo $?)" "OpenSM is still running"

# --- fabric B: max_jobs, max_groups, max_nodes ---------------------------
diag "fabric B: 16 hosts, max_jobs=2, max_nodes=8 (max_groups 64 by default)"
sim_up --hosts 16 --plugin-opt max_jobs=2 --plugin-opt max_nodes=8 ||
	bail_out "fabric B did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
SOCK=${IBMCAST_SERVER#unix:}

refused "65 groups over max_groups 64" quota '65 groups requested; at most 64 per job' \
	reserve 1 --nodes 'node[1-4]' --groups 65
refused "9 nodes over max_nodes 8" quota 'more than 8 nodes \(max_nodes\)' \
	reserve 1 --nodes 'node[1-9]'
ctl reserve 1 --nodes 'node[1-4]' --groups 64
is "$RC" 0 "64 groups (max_groups) on 4 nodes are reserved" || diag "$ERR"
ctl reserve 2 --nodes 'node[5-12]'
is "$RC" 0 "a second job on 8 nodes (max_nodes) is reserved" || diag "$ERR"
refused "a third job over max_jobs 2" quota '2 jobs already hold reservations \(max_jobs\)' \
	reserve 3 --nodes 'node[13-14]'
ctl --json reserve 2 --nodes 'node[5-12]'
is "$RC/$(jq -r .created <<< "$OUT")" "0/false" \
	"at max_jobs, re-reserving a held job is still idempotent"
wait_ready 1 "job 1 is ready"
wait_ready 2 "job 2 is ready"
ctl release 2
is "$RC" 0 "release job 2"
ctl reserve 3 --nodes 'node[13-14]'
is "$RC" 0 "after a release, a new job fits under max_jobs" || diag "$ERR"
wait_ready 3 "and becomes ready"
ok "$(osm_alive; echo $?)" "OpenSM is still running"
