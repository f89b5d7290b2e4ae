#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# When wait says a job is ready, the switches' own MFTs (read independently by
# ibmcast-mftwatch and by ibroute) deliver every group to exactly its nodes.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd ibroute infiniband-diags
need_cmd ibnetdiscover infiniband-diags
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

CHECKS=12	# per job shape, see check_job
plan $((2 + 6 * CHECKS + 1 + 1))

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-rrm.XXXXXX")
at_exit "rm -rf '$tmp'"
# umad2sim leaves a sys-PID directory in the working directory.
cd "$tmp" || bail_out "cd $tmp"

# The fabric as ibnetdiscover and ibroute -M see it (tests/lib.sh).
topology() { fabric_topology "$SIM_DIR"; }
mft_rows() { fabric_mft_rows "$SIM_DIR" "$tmp/topo"; }

# ibroute_view MLID: from the ibroute rows and the topology, prints three
# lines: the sorted HCAs the MLID is forwarded to, the sorted switch LIDs
# with a port set, and "tree" or what is wrong with the switch-to-switch
# edges (each must be set on both ends; a tree has one edge fewer than
# switches).
ibroute_view() {
	awk -v m="$1" 'FNR == NR { if ($3 == "H") hca[$1 " " $2] = $4; next }
		$1 == m && (($2 " " $3) in hca) { print hca[$2 " " $3] }' \
		"$tmp/topo" "$tmp/mft" | sort -u | paste -sd' '
	awk -v m="$1" '$1 == m { print $2 }' "$tmp/mft" | sort -un | paste -sd' '
	awk -v m="$1" '
		FNR == NR { if ($3 == "S") peer[$1 " " $2] = $4 " " $5; next }
		$1 == m { set[$2 " " $3] = 1; sw[$2] = 1 }
		END {
			bad = ""; e = 0; n = 0
			for (k in set) if (k in peer) {
				e++
				if (!(peer[k] in set)) bad = bad " " k "->" peer[k]
			}
			for (s in sw) n++
			if (bad != "") print "one-sided:" bad
			else if (n > 0 && e / 2 != n - 1)
				print "edges " e / 2 " for " n " switches"
			else print "tree"
		}' "$tmp/topo" "$tmp/mft"
}

USED_MLIDS=

# check_job JOB HOSTLIST GROUPS: reserve, wait, and CHECKS assertions.
check_job() {
	local job=$1 hl=$2 ng=$3 want n r w reach bad mlids g mlid i mg
	want=$(hostlist_expand "$hl" | sort | paste -sd' ')
	n=$(hostlist_expand "$hl" | wc -l)
	diag "job $job: $hl ($n nodes), $ng groups"
	# OpenSM builds no tree for a single member port: no switch holds
	# the MLID, its packets never leave the HCA.
	[ "$n" -gt 1 ] || want=

	r=$("$CTL" --json reserve "$job" --nodes "$hl" --groups "$ng" \
		2> "$tmp/err")
	is "$(jq -r '[.ok, .created] | @tsv' <<< "$r" 2>&1)" "true	true" \
		"job $job: reserve creates the reservation" ||
		diag "$r $(cat "$tmp/err")"
	w=$("$CTL" --json wait "$job" --timeout-ms 20000 2> "$tmp/err")
	is "$(jq -r .job.state <<< "$w" 2>&1)" ready "job $job: wait says ready" ||
		diag "$w $(cat "$tmp/err")"
	[ -n "$w" ] || w=$("$CTL" --json status "$job" | jq -c '{job: .jobs[0]}')
	diag "job $job: reserve_to_ready_us $(jq -r .job.reserve_to_ready_us <<< "$w")"
	echo "$w" > "$tmp/wait.$job"

	is "$(jq -r '[(.job.groups | length), .job.node_count, .job.port_count,
		([.job.groups[] | select(.state == "ready" and .members == '"$n"')]
		 | length)] | @tsv' <<< "$w" 2>&1)" "$ng	$n	$n	$ng" \
		"job $job: $ng groups, $n nodes, each group ready with $n members"

	mlids=$(jq -r '.job.groups[].mlid' <<< "$w" 2>/dev/null)
	bad=$(printf '%s\n' $mlids $USED_MLIDS | sort | uniq -d | paste -sd' ')
	ok "$([ -n "$mlids" ] && [ -z "$bad" ]; echo $?)" \
		"job $job: MLIDs distinct from each other and other jobs' ($(echo $mlids))" ||
		diag "repeated: $bad"
	USED_MLIDS="$USED_MLIDS $mlids"

	bad=
	for ((i = 0; i < ng; i++)); do
		mg=$(printf 'ff12:1bca:ffff:0000:%04x:%04x:0000:%04x' \
			$((job >> 16)) $((job & 0xffff)) "$i")
		g=$(jq -r ".job.groups[] | select(.index == $i) | .mgid" <<< "$w")
		[ "$g" = "$mg" ] || bad+=" index $i: $g != $mg;"
	done
	is "$bad" "" "job $job: MGIDs are ff12:1bca:ffff:0:<job>:0:<index>"
	is "$(jq -r '[.job.qkey, .job.groups[].qkey // empty] | unique | join(" ")' \
		<<< "$w")" "$(printf '0x1bca%04x' $((job & 0xffff)))" \
		"job $job: one per-job Q_Key 0x1bca<job>"

	# mftwatch: one read of every group's MLID.
	# shellcheck disable=SC2046
	reach=$(on_fabric "$WATCH" reach $(printf -- '--mlid %s ' $mlids) \
		2> "$tmp/err")
	[ -n "$reach" ] || diag "mftwatch reach: $(cat "$tmp/err")"
	echo "$reach" > "$tmp/reach.$job"
	bad=
	for mlid in $mlids; do
		g=$(jq -r --arg m "$mlid" '.mlids[] | select(.mlid == $m) |
			.members | sort | join(" ")' <<< "$reach" 2>&1)
		[ "$g" = "$want" ] || bad+=" $mlid: [$g];"
	done
	is "$bad" "" "job $job: mftwatch: every group reaches exactly the job's HCAs" ||
		diag "want [$want]"
	is "$(jq -r '[.mlids[] | select(.consistent | not) | .mlid] |
		join(" ")' <<< "$reach" 2>&1)/$(jq '.mlids | length' <<< "$reach" \
		2>&1)" "/$ng" \
		"job $job: mftwatch: every member's packets reach all others once" ||
		diag "$reach"
	bad=
	for mlid in $mlids; do
		g=$(jq -r --arg m "$mlid" '.mlids[] | select(.mlid == $m) |
			.switches | length' <<< "$reach" 2>&1)
		i=$(jq -r --arg m "$mlid" '.job.groups[] | select(.mlid == $m) |
			.switches' <<< "$w")
		[ "$g" = "$i" ] || bad+=" $mlid: mftwatch $g, plugin $i;"
	done
	is "$bad" "" "job $job: switches on each tree: mftwatch count == plugin's"

	# ibroute on every switch; every group's MLID checked against the
	# cabling ibnetdiscover reports.
	mft_rows > "$tmp/mft"
	local hb= sb= tb= view
	for mlid in $mlids; do
		view=$(ibroute_view "$mlid")
		[ "$(sed -n 1p <<< "$view")" = "$want" ] ||
			hb+=" $mlid: [$(sed -n 1p <<< "$view")];"
		g=$(jq -r --arg m "$mlid" '.mlids[] | select(.mlid == $m) |
			.switches | sort | map(tostring) | join(" ")' <<< "$reach")
		[ "$(sed -n 2p <<< "$view")" = "$g" ] ||
			sb+=" $mlid: ibroute [$(sed -n 2p <<< "$view")] mftwatch [$g];"
		[ "$(sed -n 3p <<< "$view")" = tree ] ||
			tb+=" $mlid: $(sed -n 3p <<< "$view");"
	done
	is "$hb" "" "job $job: ibroute: each MLID is forwarded to exactly the job's HCA ports" ||
		diag "want [$want]"
	is "$sb" "" "job $job: ibroute: the switches holding each MLID are mftwatch's"
	is "$tb" "" "job $job: ibroute: each MLID's switch links form one tree, set on both ends"
}

# --- 2 levels, radix 8: 4 hosts per leaf, 16 leaves, 4 spines ------------
diag "fabric A: 64 hosts, 2 levels, radix 8"
sim_up --hosts 64 --radix 8
ok $? "fabric A (64 hosts, 2 levels, radix 8) is up" ||
	bail_out "fabric A did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
topology > "$tmp/topo"
[ "$(awk '$3 == "H"' "$tmp/topo" | wc -l)" -ge 65 ] ||
	bail_out "ibnetdiscover saw too little of fabric A"

check_job 101 node17 1
check_job 102 'node[5-6]' 4
check_job 103 'node[21-36]' 8
check_job 104 'node[1,9,17,33-35,64]' 4
check_job 105 'node[1-64]' 8

run_ok "fabric A: every job releases" \
	bash -c "for j in 101 102 103 104 105; do '$CTL' release \$j || exit; done"

# --- 3 levels, radix 8: pods of 4 leaves (16 hosts) ----------------------
diag "fabric B: 64 hosts, 3 levels, radix 8"
sim_up --hosts 64 --levels 3 --radix 8
ok $? "fabric B (64 hosts, 3 levels, radix 8) is up" ||
	bail_out "fabric B did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
topology > "$tmp/topo"
USED_MLIDS=
check_job 201 'node[1-2,17,40,63]' 4

# The job spans four pods: its trees must climb to a core switch.
cores=$(awk 'FNR == NR { if ($2 == "desc" && $3 ~ /^core/) c[$1] = 1; next }
	($2 in c) { print $2 }' "$tmp/topo" "$tmp/mft" | sort -u | paste -sd' ')
ok "$([ -n "$cores" ]; echo $?)" \
	"job 201 spans pods: its trees go through core switch(es) ${cores:-none}"
