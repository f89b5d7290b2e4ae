#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two jobs at once, on disjoint and on overlapping nodes, get separate groups
# that reach only their own nodes; releasing one leaves the other untouched.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan $((1 + 2 * 9))

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-two.XXXXXX")
at_exit "rm -rf '$tmp'"
cd "$tmp" || bail_out "cd $tmp"

wait_json() {
	"$CTL" --json wait "$1" --timeout-ms "${2:-20000}" 2> "$tmp/err"
}

mlids() {
	"$CTL" --json status "$1" 2> /dev/null | jq -r '.jobs[0].groups[].mlid'
}

# reach_of JOB: mftwatch's reach of every group of JOB, one line per MLID:
# "MLID consistent members-sorted switches-sorted".
reach_of() {
	local m
	# shellcheck disable=SC2046
	on_fabric "$WATCH" reach $(for m in $(mlids "$1"); do
		printf -- '--mlid %s ' "$m"; done) 2> "$tmp/reach.err" |
		jq -r '.mlids[] | [.mlid, .consistent, (.members | sort |
			join(",")), (.switches | sort | map(tostring) |
			join(","))] | @tsv'
}

# pair A HOSTS-A B HOSTS-B WHAT: two jobs reserved back to back, then A
# released.  Nine assertions.
pair() {
	local a=$1 ha=$2 b=$3 hb=$4 what=$5 wa wb j h bad before after w ma k
	diag "$what: job $a on $ha, job $b on $hb"
	"$CTL" --json reserve "$a" --nodes "$ha" --groups 4 > /dev/null 2>&1
	"$CTL" --json reserve "$b" --nodes "$hb" --groups 4 > /dev/null 2>&1
	wa=$(wait_json "$a")
	is "$(jq -r .job.state <<< "$wa" 2>&1)" ready "$what: job $a is ready" ||
		diag "$wa $(cat "$tmp/err")"
	wb=$(wait_json "$b")
	is "$(jq -r .job.state <<< "$wb" 2>&1)" ready "$what: job $b is ready" ||
		diag "$wb $(cat "$tmp/err")"

	bad=$( (jq -r '.job.groups[] | .mlid, .mgid' <<< "$wa"
		jq -r '.job.groups[] | .mlid, .mgid' <<< "$wb") 2>&1 |
		sort | uniq -d | paste -sd' ')
	is "$bad/$( (jq -r '.job.groups[].mlid' <<< "$wa"
		jq -r '.job.groups[].mlid' <<< "$wb") 2>/dev/null | wc -l)" "/8" \
		"$what: the two jobs' 8 groups have distinct MLIDs and MGIDs"

	for j in "$a:$ha" "$b:$hb"; do
		h=$(hostlist_expand "${j#*:}" | sort | paste -sd,)
		reach_of "${j%%:*}" > "$tmp/reach.${j%%:*}"
		bad=$(awk -F'\t' -v h="$h" '$2 != "true" || $3 != h' \
			"$tmp/reach.${j%%:*}")
		is "$bad/$(wc -l < "$tmp/reach.${j%%:*}")" "/4" \
			"$what: each group of job ${j%%:*} reaches exactly its nodes (mftwatch)" ||
			diag "want members $h" "$(cat "$tmp/reach.err")"
	done

	before=$(cat "$tmp/reach.$b")
	ma=$(mlids "$a")
	w=$("$CTL" --json release "$a" 2>&1)
	is "$(jq -r '[.ok, .released] | @tsv' <<< "$w" 2>&1)" "true	true" \
		"$what: job $a is released" || diag "$w"
	# Compare once OpenSM has processed the release: job A's entries gone.
	for ((k = 0; k < 100; k++)); do
		# shellcheck disable=SC2046
		on_fabric "$WATCH" reach $(printf -- '--mlid %s ' $ma) \
			2> /dev/null | jq -e '[.mlids[].members[]] | length == 0' \
			> /dev/null && break
		sleep 0.1
	done
	[ "$k" -lt 100 ] || diag "job $a's MFT entries still there after 10 s"
	after=$(reach_of "$b")
	is "$after" "$before" \
		"$what: job $b's MFT entries are unchanged after job $a's release"
	is "$("$CTL" --json status "$b" | jq -c '[.jobs[0].state,
		[.jobs[0].groups[] | .state, .mlid, .mgid]]')" \
		"$(jq -c '[.job.state, [.job.groups[] | .state, .mlid, .mgid]]' \
		<<< "$wb")" "$what: job $b's state and groups are unchanged"
	# waited_us is 0 exactly when the server answered the wait on
	# arrival, without parking it (docs/protocol.md): no clock involved.
	w=$(wait_json "$b" 5000)
	is "$(jq -r '[.job.state, .timed_out, .waited_us] | @tsv' <<< "$w")" \
		"ready	false	0" \
		"$what: wait on job $b is answered ready on arrival, never parked" ||
		diag "$w"
	"$CTL" release "$b" > /dev/null 2>&1
}

diag "fabric: 64 hosts, 2 levels, radix 8 (4 hosts per leaf)"
sim_up --hosts 64 --radix 8
ok $? "fabric (64 hosts, radix 8) is up" || bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"

pair 1 'node[1-16]' 2 'node[33-48]' "disjoint"
# Overlap on node[17-24], and jobs sharing leaves with partial overlap.
pair 3 'node[9-24]' 4 'node[17-40]' "overlapping"
