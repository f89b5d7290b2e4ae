#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ibmcastctl as a user sees it: its tables and --json replies carry every
# group and documented field, and its exit codes say what went wrong.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
need_file "$CTL" "tools/ibmcastctl"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan 107

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-cli.XXXXXX")
at_exit "rm -rf '$tmp'"

# ctl ARGS...: runs ibmcastctl; sets OUT, ERR, RC.
ctl() {
	RC=0
	OUT=$("$CTL" "$@" 2> "$tmp/err") || RC=$?
	ERR=$(cat "$tmp/err")
}

# missing JSON KEY...: the keys JSON (an object) lacks, as a JSON array.
missing() {
	local json=$1
	shift
	jq -c --args '. as $o | [$ARGS.positional[] | select(. as $k | $o | has($k) | not)]' \
		"$@" <<< "$json" 2>&1
}

JOB_KEYS=(job uid state nodes node_count port_count qkey pkey lease_s
	lease_remaining_s reserved_mono_ns groups)
GROUP_KEYS=(index mgid mlid mtu rate state members switches)

# table_rows: the group rows of ibmcastctl's human output, as
# "INDEX MGID MLID MEMBERS SWITCHES STATE READY".
table_rows() {
	awk '$1 ~ /^[0-9]+$/ && $2 ~ /^ff12:/ { print }' <<< "$1" |
		sed 's/^ *//; s/  */ /g'
}

# json_rows JOB-JSON: the same from a job object.
json_rows() {
	jq -r '.groups[] | "\(.index) \(.mgid) \(.mlid) \(.members)"' <<< "$1"
}

# The building window: the confirmer looks again only every 0.5 s, so a
# wait right after a reserve finds the job still building.
diag "fabric: 32 hosts, 3 levels, poll_us=500000"
sim_up --hosts 32 --levels 3 --radix 8 --plugin-opt poll_us=500000 ||
	bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
GOOD=$IBMCAST_SERVER

# --- reserve ------------------------------------------------------------------
ctl reserve 42 --nodes 'node[1-16]' --groups 4 --lease 3600
is "$RC" 0 "reserve 42 succeeds"
like "$OUT" $'^reserved\njob 42: building\n' "it says reserved, job 42 building"
like "$OUT" 'nodes node\[1-16\] \(16 nodes, 16 ports\), qkey 0x1bca002a, pkey 0xffff, lease 3600 s' \
	"the header shows nodes, ports, Q_Key, P_Key and lease"
like "$OUT" 'INDEX +MGID +MLID +MEMBERS +SWITCHES +STATE +READY' "a table header names the columns"
rows=$(table_rows "$OUT")
is "$(wc -l <<< "$rows")" 4 "the table has a row for each of the 4 groups"
is "$(cut -d' ' -f1,2 <<< "$rows")" "0 ff12:1bca:ffff:0000:0000:002a:0000:0000
1 ff12:1bca:ffff:0000:0000:002a:0000:0001
2 ff12:1bca:ffff:0000:0000:002a:0000:0002
3 ff12:1bca:ffff:0000:0000:002a:0000:0003" "each row's MGID encodes the job and the group index"
is "$(cut -d' ' -f4 <<< "$rows" | sort -u)" 16 "each group has 16 members"
like "$(cut -d' ' -f3 <<< "$rows" | tr '\n' ' ')" '^(0xc[0-9a-f]{3} ){4}$' "each row has an MLID"
is "$(cut -d' ' -f3 <<< "$rows" | sort -u | wc -l)" 4 "  and the MLIDs differ"
js=$("$CTL" --json status 42)
is "$(json_rows "$(jq '.jobs[0]' <<< "$js")")" "$(cut -d' ' -f1-4 <<< "$rows")" \
	"the table agrees with the server's JSON"

ctl --json reserve 43 --nodes 'node[17-32]' --groups 2 --uid 1234
is "$RC" 0 "--json reserve succeeds"
is "$(wc -l <<< "$OUT")" 1 "--json prints one line"
is "$(jq -c '[.ok, .created]' <<< "$OUT" 2>&1)" '[true,true]' "  parsing as JSON with ok and created"
is "$(missing "$(jq .job <<< "$OUT")" "${JOB_KEYS[@]}")" '[]' "  its job has every documented field"
is "$(jq -c '[.job.groups[] | (. as $g | [$ARGS.positional[] | select(. as $k | $g | has($k) | not)])] | add' \
	--args "${GROUP_KEYS[@]}" <<< "$OUT" 2>&1)" '[]' "  and each group every documented field"
is "$(jq -r '.job | "\(.job) \(.uid) \(.state) \(.nodes) \(.node_count) \(.port_count) \(.qkey) \(.lease_s)"' <<< "$OUT")" \
	"43 1234 building node[17-32] 16 16 0x1bca002b 86400" \
	"  with the job's id, owner, state, nodes, Q_Key and default lease"
like "$(jq -r '.job.groups[] | "\(.mtu) \(.rate) \(.state)"' <<< "$OUT" | sort -u)" \
	'^[0-9]+ [0-9]+ building$' "  and integer mtu and rate, each group building"

# --- wait ---------------------------------------------------------------------
ctl reserve 44 --nodes 'node[1-32]' --groups 32
is "$RC" 0 "reserve 44 (32 nodes, 32 groups)"

# wait --timeout-ms 0 right after a reserve: whether the job is still
# building is a race, so try fresh jobs until one is caught building; every
# answer must match its exit status.
# zero_wait JOB [--json]: classifies one wait 0 as building, ready or bad.
zero_wait() {
	local j=$1 json=${2:-}
	"$CTL" reserve "$j" --nodes 'node[1-32]' --groups 32 > /dev/null
	# shellcheck disable=SC2086 # no word at all without --json
	ctl $json wait "$j" --timeout-ms 0
	if [ -z "$json" ]; then
		if [ "$RC" = 1 ] &&
		   [[ $OUT == "timed out after 0 ms, state building"$'\n'"job $j: building"* ]]; then
			echo building
		elif [ "$RC" = 0 ] && [[ $OUT == *$'\n'"job $j: ready"* ]]; then
			echo ready
		else
			echo "bad: exit $RC: $OUT $ERR"
		fi
	else
		case "$RC/$(jq -c '[.ok, .timed_out, .job.state]' <<< "$OUT" 2>&1)" in
		'1/[true,true,"building"]')
			[[ $ERR == "ibmcastctl: wait: job not ready: state building (timed out)" ]] &&
				echo building || echo "bad: stderr $ERR"
			;;
		'0/[true,false,"ready"]') echo ready ;;
		*) echo "bad: exit $RC: $OUT $ERR" ;;
		esac
	fi
	"$CTL" release "$j" > /dev/null
}
for mode in human --json; do
	caught=0 bad=
	for ((j = 50; j < 55; j++)); do
		r=$(zero_wait "$j" "${mode#human}")
		case $r in
		building) caught=$((caught + 1)) ;;
		ready) ;;
		*) bad+="$r"$'\n' ;;
		esac
		[ "$caught" = 0 ] || break
	done
	ok "$([ "$caught" -gt 0 ]; echo $?)" \
		"$mode wait --timeout-ms 0 on a building job exits 1 saying timed out, building"
	is "$bad" "" "  $mode: every wait 0 exits as its state says"
done

ctl wait 44 --timeout-ms 20000
is "$RC" 0 "wait for job 44 exits 0 once ready"
like "$OUT" $'^waited [0-9.]+ (us|ms|s), state ready\njob 44: ready \\(reserve to ready [0-9.]+ (us|ms|s)\\)' \
	"it prints the wait, the state and reserve-to-ready time"
rows=$(table_rows "$OUT")
is "$(wc -l <<< "$rows")" 32 "  and a row for each of the 32 groups"
is "$(awk '$6 != "ready" || $7 == "-"' <<< "$rows")" "" "  each ready, with its time to ready"
ok "$(awk '$5 < 1 { bad = 1 } END { exit bad }' <<< "$rows"; echo $?)" \
	"  each on a tree of at least one switch"

ctl --json wait 42 --timeout-ms 20000
is "$RC" 0 "--json wait for job 42 exits 0"
is "$(jq -c '[.ok, .timed_out, (.waited_us | type), .job.state]' <<< "$OUT" 2>&1)" \
	'[true,false,"number","ready"]' "  ok, not timed out, waited_us, state ready"
is "$(missing "$(jq .job <<< "$OUT")" "${JOB_KEYS[@]}" ready_mono_ns reserve_to_ready_us)" '[]' \
	"  the ready job has every field, with ready_mono_ns and reserve_to_ready_us"
is "$(jq '[.job.groups[] | select(.state != "ready" or (.ready_us | type) != "number")] | length' <<< "$OUT")" 0 \
	"  every group ready with ready_us"
ok "$(jq -e '.job.ready_mono_ns >= .job.reserved_mono_ns' <<< "$OUT" > /dev/null; echo $?)" \
	"  ready_mono_ns is not before reserved_mono_ns"
run_ok "wait for job 43" "$CTL" wait 43 --timeout-ms 20000

# --- status, renew, release ----------------------------------------------------
ctl status
is "$RC" 0 "status exits 0"
like "$OUT" '^server [0-9.]+, SM master, subnet up, MFT read-back on' \
	"status shows the server version and SM state"
like "$OUT" $'\nMLIDs: [0-9]+ used of 1024, 38 by ibmcast\n' "  MLID use (38 groups ours)"
c=$("$CTL" --json status | jq -r '.counters | "reserves \(.reserves) releases \(.releases) ready \(.ready) failed \(.failed)"')
like "$OUT" $'\ncounters: requests [0-9]+ errors [0-9]+ '"$c smp_reads" \
	"  and the counters ($c)"
for j in 42 43 44; do
	like "$OUT" $'\n'"job $j: ready" "  and job $j, ready"
done
ctl --json status
is "$(missing "$OUT" ok server mlids counters jobs)" '[]' "--json status has ok, server, mlids, counters, jobs"
is "$(missing "$(jq .server <<< "$OUT")" version sm_state subnet_up readback)" '[]' \
	"  server has version, sm_state, subnet_up, readback"
is "$(missing "$(jq .mlids <<< "$OUT")" total used ibmcast)" '[]' "  mlids has total, used, ibmcast"
is "$(missing "$(jq .counters <<< "$OUT")" requests errors reserves releases ready failed smp_reads)" '[]' \
	"  counters has requests, errors, reserves, releases, ready, failed, smp_reads"
is "$(jq -c '[.jobs[].job] | sort' <<< "$OUT")" '[42,43,44]' "  jobs lists 42, 43, 44"
ctl status 43
like "$OUT" $'\njob 43: ready' "status 43 shows job 43"
ok "$([[ $OUT != *"job 42:"* ]]; echo $?)" "  and not job 42"

ctl renew 42 --lease 7200
is "$RC/$OUT" "0/job 42: lease renewed to 7200 s" "renew prints the new lease"
ctl --json renew 42
is "$(jq -c . <<< "$OUT")" '{"ok":true,"job":42,"lease_s":7200}' "--json renew keeps the lease it has"

ctl release 42
is "$RC/$OUT" "0/job 42: released" "release prints released"
ctl --json release 43
is "$(jq -c . <<< "$OUT")" '{"ok":true,"released":true,"job":43}' "--json release"
ctl status
ok "$([[ $OUT != *"job 42:"* && $OUT != *"job 43:"* && $OUT == *"job 44: ready"* ]]; echo $?)" \
	"after release, status lists job 44 only"
like "$OUT" $'\nMLIDs: [0-9]+ used of 1024, 32 by ibmcast\n' "  and their MLIDs are back"
ctl status 42
is "$RC" 2 "status of the released job exits 2"
is "$ERR" "ibmcastctl: status: unknown_job: job 42 holds no reservation" \
	"  with the server's code and detail on stderr"
"$CTL" release 44 > /dev/null
ctl status
like "$OUT" $'\n\nno jobs$' "with every job released, status says no jobs"

# --- servers ---------------------------------------------------------------------
IBMCAST_SERVER=unix:/nonexistent/ibmcast.sock
ctl --server "$GOOD" status
is "$RC" 0 "--server overrides a wrong IBMCAST_SERVER" || diag "$ERR"
ctl -s "$GOOD" status
is "$RC" 0 "-s does too"
ctl status --server "$GOOD"
is "$RC" 0 "--server is accepted after the command"
ctl --server "${GOOD#unix:}" status
is "$RC" 0 "a bare absolute path is a Unix socket"
ctl --server "$IBMCAST_SERVER_TCP" status
is "$RC" 0 "--server tcp:HOST:PORT reaches the TCP port (MUNGE-wrapped)" || diag "$ERR"
ctl --server "${IBMCAST_SERVER_TCP#tcp:}" status
is "$RC" 0 "HOST:PORT without tcp: works too" || diag "$ERR"

ctl status
is "$RC" 3 "the wrong IBMCAST_SERVER alone: exit 3"
like "$ERR" 'unix:/nonexistent/ibmcast.sock' "  naming the address"
IBMCAST_SERVER=$GOOD
ctl --server unix:/nonexistent/ibmcast.sock status
is "$RC" 3 "--server naming a missing socket: exit 3"
like "$ERR" '^ibmcastctl: status: .*unix:/nonexistent/ibmcast.sock' "  naming the address"
ctl --server "$SIM_DIR/env" reserve 5 --nodes node1
is "$RC" 3 "--server naming a file that is no socket: exit 3"
like "$ERR" "$SIM_DIR/env" "  naming it"
ctl --server tcp:127.0.0.1:1 status
is "$RC" 3 "--server naming a closed TCP port: exit 3"
like "$ERR" '127\.0\.0\.1:1' "  naming it"

# --- usage errors --------------------------------------------------------------
usage() {
	local what=$1
	shift
	ctl "$@"
	is "$RC" 64 "usage error, exit 64: $what" || diag "stdout: $OUT" "stderr: $ERR"
	like "$ERR" "Try 'ibmcastctl --help'" "  $what: points to --help"
}
usage "no command"
usage "an unknown command" frobnicate
usage "an unknown option" --frobnicate status
usage "reserve without --nodes" reserve 5
usage "reserve without a job" reserve --nodes node1
usage "a job that is no number" status 12x
usage "job 0" wait 0
usage "--groups 0" reserve 5 --nodes node1 --groups 0
usage "--groups 1025" reserve 5 --nodes node1 --groups 1025
usage "an invalid hostlist" reserve 5 --nodes 'node[3-1]'
usage "--timeout-ms abc" wait 5 --timeout-ms abc
usage "--nodes on status" status --nodes node1
usage "a second job" release 5 6
usage "an option without its argument" reserve 5 --nodes
ctl -s nohost status
is "$RC" 64 "usage error, exit 64: a malformed server address" || diag "$ERR"
(unset IBMCAST_SERVER; "$CTL" status > /dev/null 2> "$tmp/err")
is "$?" 64 "usage error, exit 64: no server at all"
like "$(cat "$tmp/err")" 'IBMCAST_SERVER' "  saying how to give one"
ctl status 5 --json
is "$RC" 2 "a usable command line whose job is unknown is a server error (2), not usage"

# --- help and version ------------------------------------------------------------
ctl --help
is "$RC" 0 "--help exits 0"
like "$OUT" '^Usage: ibmcastctl ' "  prints usage on stdout"
miss=
for c in 'reserve JOB --nodes HOSTLIST' 'wait JOB' 'release JOB' 'renew JOB' \
	'status [JOB]' '--server' '--json' '--timeout-ms' 'Exit status'; do
	[[ $OUT == *"$c"* ]] || miss+=" '$c'"
done
is "$miss" "" "  naming every command, the main options and the exit codes"
ctl --version
like "$OUT" '^ibmcastctl \(ibmcast\) [0-9.]+' "--version prints the version"
is "${OUT##* }" "$("$CTL" --json status | jq -r .server.version)" "  the same as the server's"
