#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Releasing a job, or letting its lease run out, removes its routes from
# every switch's MFT within seconds and frees its MLIDs; renew keeps a lease.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd ibroute infiniband-diags
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan 23

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-rel.XXXXXX")
at_exit "rm -rf '$tmp'"
cd "$tmp" || bail_out "cd $tmp"

on_fabric() {
	LD_PRELOAD=$IBMCAST_SIM_PRELOAD SIM_HOST=$IBMCAST_SIM_HOST \
		IBSIM_SOCKNAME=$IBSIM_SOCKNAME "$@"
}

status_json() {
	"$CTL" --json status "$@" 2> "$tmp/status.err"
}

used() {
	status_json | jq -r .mlids.used
}

# reach_members MLID...: how many member HCAs mftwatch finds over all the
# MLIDs ("err" if the read failed).
reach_members() {
	# shellcheck disable=SC2046
	on_fabric "$WATCH" reach $(printf -- '--mlid %s ' "$@") \
		2> "$tmp/reach.err" |
		jq -r '[.mlids[].members[]] | length' 2> /dev/null | grep . ||
		echo err
}

# reach_switches MLID...: the switch LIDs holding any of the MLIDs.
reach_switches() {
	# shellcheck disable=SC2046
	on_fabric "$WATCH" reach $(printf -- '--mlid %s ' "$@") \
		2> /dev/null | jq -r '[.mlids[].switches[]] | unique | .[]'
}

# reach_entries MLID...: member HCAs plus switches with any port set, over
# all the MLIDs ("err" if the read failed). A route left on a spine switch,
# which forwards to no HCA, still counts.
reach_entries() {
	# shellcheck disable=SC2046
	on_fabric "$WATCH" reach $(printf -- '--mlid %s ' "$@") \
		2> "$tmp/reach.err" |
		jq -r '[.mlids[] | (.members | length) + (.switches | length)] |
			add // 0' 2> /dev/null | grep . || echo err
}

# cleared_within S MLID...: polls until no switch has an MFT entry for any
# of the MLIDs; prints the seconds it took, or "never".
cleared_within() {
	local s=$1 t0=$SECONDS
	shift
	while [ $((SECONDS - t0)) -le "$s" ]; do
		if [ "$(reach_entries "$@")" = 0 ]; then
			echo $((SECONDS - t0))
			return 0
		fi
		sleep 0.2
	done
	echo never
	return 1
}

# ibroute_rows MLID... -- LID...: ibroute -M lines of the MLIDs on the LIDs.
ibroute_rows() {
	local m=() l
	while [ "$1" != -- ]; do m+=("$1"); shift; done
	shift
	for l in "$@"; do
		sim_diag "$SIM_DIR" ibroute -M "$l" 2> /dev/null
	done | awk -v ms="${m[*]}" 'BEGIN { n = split(ms, a, " ")
		for (i = 1; i <= n; i++) want[a[i]] = 1 }
		tolower($1) in want'
}

diag "fabric: 64 hosts, radix 8, max_groups=1024"
sim_up --hosts 64 --radix 8 --plugin-opt max_groups=1024
ok $? "fabric (64 hosts, radix 8) is up" || bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
used0=$(used)
total=$(status_json | jq -r .mlids.total)
diag "MLIDs: $used0 of $total used before any job"

# --- release ----------------------------------------------------------------
"$CTL" reserve 1 --nodes 'node[1-40]' --groups 8 > /dev/null 2>&1
w=$("$CTL" --json wait 1 --timeout-ms 20000 2>&1)
is "$(jq -r .job.state <<< "$w" 2>&1)" ready "job 1 (node[1-40], 8 groups) is ready" ||
	diag "$w"
mapfile -t M1 < <(jq -r '.job.groups[].mlid' <<< "$w" 2> /dev/null)
is "$(reach_members "${M1[@]}")" $((8 * 40)) \
	"mftwatch: its 8 MLIDs reach 40 HCAs each" || diag "$(cat "$tmp/reach.err")"
mapfile -t SW1 < <(reach_switches "${M1[@]}")
rows=$(ibroute_rows "${M1[@]}" -- "${SW1[@]}" | wc -l)
ok "$([ "${#SW1[@]}" -gt 1 ] && [ "$rows" -ge $((8 * ${#SW1[@]})) ]; echo $?)" \
	"ibroute: ${#SW1[@]} switches hold rows for them ($rows rows)"
is "$(used)" $((used0 + 8)) "status: 8 more MLIDs in use"

w=$("$CTL" --json release 1 2>&1)
is "$(jq -r '[.ok, .released] | @tsv' <<< "$w" 2>&1)" "true	true" \
	"release 1: ok, released" || diag "$w"
t=$(cleared_within 10 "${M1[@]}")
ok $? "mftwatch: no switch has an MFT entry for job 1's MLIDs any more (after ${t} s)" ||
	diag "$(on_fabric "$WATCH" reach $(printf -- '--mlid %s ' "${M1[@]}") 2>&1 | head -c 1500)"
rows=$(ibroute_rows "${M1[@]}" -- "${SW1[@]}")
is "$rows" "" "ibroute: the switches that held them have no rows for them"
is "$(used)" "$used0" "status: MLID use is back to $used0"
"$CTL" status 1 > /dev/null 2> "$tmp/err"
rc=$?
is "$rc/$(status_json | jq '[.jobs[] | select(.job == 1)] | length')" "2/0" \
	"status no longer lists job 1 (status 1: exit 2, $(cat "$tmp/err"))"
w=$("$CTL" --json release 1 2>&1)
is "$(jq -r '[.ok, .released] | @tsv' <<< "$w" 2>&1)" "true	false" \
	"release 1 again: ok, released false" || diag "$w"

# Every free MLID, in jobs of at most 256 groups (a reply line must stay
# under 64 KiB): possible only if job 1's came back.
free=$((total - used0))
left=$free
M2=()
J2=()
err2=
for ((j = 21; left > 0; j++)); do
	n=$((left > 256 ? 256 : left))
	"$CTL" --json reserve "$j" --nodes 'node[1-2]' --groups "$n" \
		> "$tmp/r$j" 2> "$tmp/err"
	[ "$(jq -r .ok "$tmp/r$j" 2>&1)" = true ] ||
		err2+=" job $j ($n groups): $(cat "$tmp/err");"
	mapfile -t -O "${#M2[@]}" M2 < <(jq -r '.job.groups[].mlid' "$tmp/r$j" \
		2> /dev/null)
	J2+=("$j")
	left=$((left - n))
done
is "$err2/${#M2[@]}" "/$free" "jobs ${J2[*]} take all $free free MLIDs"
missing=$(printf '%s\n' "${M1[@]}" "${M2[@]}" "${M2[@]}" | sort | uniq -u |
	paste -sd' ')
is "$missing" "" "they reuse every MLID job 1 had"
bad=
for j in "${J2[@]}"; do
	w=$("$CTL" --json wait "$j" --timeout-ms 60000 2>&1)
	[ "$(jq -r .job.state <<< "$w" 2>&1)" = ready ] ||
		bad+=" $j: $(head -c 300 <<< "$w");"
done
is "$bad" "" "jobs ${J2[*]} become ready"
for j in "${J2[@]}"; do
	"$CTL" release "$j" > /dev/null 2>&1
done
t=$(cleared_within 10 "${M1[@]}")
ok $? "jobs ${J2[*]} released: no switch has an entry on job 1's old MLIDs (after ${t} s)"

# --- lease expiry ------------------------------------------------------------
"$CTL" reserve 3 --nodes 'node[1-24]' --groups 4 --lease 2 > /dev/null 2>&1
w=$("$CTL" --json wait 3 --timeout-ms 20000 2>&1)
is "$(jq -r '[.job.state, .job.lease_s] | @tsv' <<< "$w" 2>&1)" "ready	2" \
	"job 3 (lease 2 s) is ready" || diag "$w"
mapfile -t M3 < <(jq -r '.job.groups[].mlid' <<< "$w" 2> /dev/null)
is "$(reach_members "${M3[@]}")" $((4 * 24)) \
	"mftwatch: its 4 MLIDs reach 24 HCAs each" || diag "$(cat "$tmp/reach.err")"
t0=$SECONDS
while [ $((SECONDS - t0)) -le 8 ] && "$CTL" status 3 > /dev/null 2>&1; do
	sleep 0.2
done
ok "$( ! "$CTL" status 3 > /dev/null 2>&1; echo $?)" \
	"job 3's lease ran out: status no longer lists it (within $((SECONDS - t0)) s)"
t=$(cleared_within 10 "${M3[@]}")
ok $? "job 3's routes are gone from every switch's MFT (after ${t} s more)"
is "$(used)" "$used0" "status: MLID use is back to $used0 after the expiry"

# --- renew -------------------------------------------------------------------
"$CTL" reserve 4 --nodes 'node[1-24]' --groups 4 --lease 3 > /dev/null 2>&1
t0=$SECONDS
w=$("$CTL" --json wait 4 --timeout-ms 20000 2>&1)
mapfile -t M4 < <(jq -r '.job.groups[].mlid' <<< "$w" 2> /dev/null)
sleep 1
w=$("$CTL" --json renew 4 --lease 60 2>&1)
is "$(jq -r '[.ok, .lease_s] | @tsv' <<< "$w" 2>&1)" "true	60" \
	"renew 4 --lease 60 after 1 s: ok" || diag "$w"
# Past the original 3 s lease, with margin.
while [ $((SECONDS - t0)) -lt 5 ]; do sleep 0.2; done
is "$(status_json 4 | jq -r '.jobs[0].state' 2>&1)" ready \
	"job 4 is still reserved and ready 5 s after a 3 s lease was renewed"
is "$(reach_members "${M4[@]}")" $((4 * 24)) \
	"job 4's routes are still in the MFTs"
"$CTL" release 4 > /dev/null 2>&1
