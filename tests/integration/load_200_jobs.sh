#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# 200 concurrent jobs reserve, wait and release in a loop on a 648-host
# fabric while clients vanish mid-request and OpenSM resweeps: no
# reservation is lost or duplicated, no MLID leaks (the plugin, OpenSM's
# SA and the switches' MFTs agree at the end) and OpenSM keeps sweeping.

# shellcheck disable=SC1091,SC2154 # lib.sh sets top_builddir
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd munge munge
need_cmd jq jq
need_cmd saquery infiniband-diags
CTL=$top_builddir/tools/ibmcastctl
LOAD=$top_builddir/tests/load/ibmcast-load
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" "tools/ibmcastctl"
need_file "$LOAD" "tests/load/ibmcast-load (make check builds it)"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

JOBS=200
ROUNDS=${IBMCAST_LOAD_ROUNDS:-6}
SEED=${IBMCAST_LOAD_SEED:-$RANDOM}

plan 25

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-load.XXXXXX")
at_exit "rm -rf '$tmp'"

# The driver is our own child; on an early exit stop it gracefully (it
# holds no ibsim slot, so a TERM is safe) before the fabric goes down.
LOAD_PID=
stop_load() {
	[ -n "$LOAD_PID" ] || return 0
	kill "$LOAD_PID" 2> /dev/null
	wait "$LOAD_PID" 2> /dev/null
	LOAD_PID=
}

ctl() { "$CTL" --server "$IBMCAST_SERVER" --json "$@"; }

osm_alive() { kill -0 "$OSM_PID" 2> /dev/null; }

subnet_ups() { grep -c 'SUBNET UP' "$SIM_DIR/opensm.log"; }

# sim_env CMD...: CMD attached to the fabric as an SMP client, without the
# launcher's overhead per call (hundreds of saquery runs follow).
sim_env() {
	env LD_PRELOAD="$IBMCAST_SIM_PRELOAD" IBSIM_SOCKNAME="$IBSIM_SOCKNAME" \
		SIM_HOST="$IBMCAST_SIM_HOST" "$@"
}

# reach_all OUT: ibmcast-mftwatch reach over every MLID OpenSM can hand
# out (0xc001..0xc3ff, 64 a run), one JSON object per MLID in OUT.
reach_all() {
	local out=$1 m list rc=0
	: > "$out"
	for ((m = 0xc001; m <= 0xc3ff; m += 64)); do
		list=$(seq -f '%.0f' "$m" "$((m + 63 > 0xc3ff ? 0xc3ff : m + 63))" |
			paste -sd,)
		sim_env "$WATCH" reach --mlid "$list" > "$tmp/reach.json" \
			2> "$tmp/reach.err"
		# 0: consistent, 1: some MLID inconsistent (reported below).
		[ $? -le 1 ] || { rc=1; diag "reach failed: $(cat "$tmp/reach.err")"; }
		jq -c '.mlids[]' "$tmp/reach.json" >> "$out" 2> /dev/null
	done
	return "$rc"
}

# wait_sweep BEFORE: until OpenSM has logged SUBNET UP after BEFORE such
# lines, at most 60 s.
wait_sweep() {
	local before=$1 i
	for ((i = 0; i < 600; i++)); do
		[ "$(subnet_ups)" -gt "$before" ] && return 0
		osm_alive || return 1
		sleep 0.1
	done
	return 1
}

diag "fabric: 648 hosts; $JOBS concurrent jobs x $ROUNDS rounds, seed $SEED"
sim_up --hosts 648 || bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
read -r OSM_PID _ < "$SIM_DIR/pids/opensm"
at_exit stop_load

base=$(ctl status) || bail_out "status failed: $base"
BASE_USED=$(jq .mlids.used <<< "$base")
SWEEPS0=$(jq .server.sweeps <<< "$base")
UPS0=$(subnet_ups)
ERRS0=$(grep -c 'ERR ' "$SIM_DIR/opensm.log")
is "$(jq -c '[.mlids.ibmcast, (.jobs | length)]' <<< "$base")" '[0,0]' \
	"baseline: no jobs, $BASE_USED MLID(s) used by OpenSM itself"

# --- the load -------------------------------------------------------------
# Unix and TCP+MUNGE clients mixed; one job in five loses its client mid-
# reserve, mid-wait or right after connecting. OpenSM is made to resweep
# (SIGHUP) while the load runs. --keep leaves each worker's last job held.
t0=$SECONDS
"$LOAD" --server "$IBMCAST_SERVER" --server "$IBMCAST_SERVER_TCP" \
	--munge-socket "$IBMCAST_MUNGE_SOCKET" --jobs "$JOBS" \
	--iterations "$ROUNDS" --seed "$SEED" --disconnect-prob 0.2 \
	--status-prob 0.1 --hold-ms 50 --hosts 648 --max-nodes 64 \
	--max-groups 4 --wait-ms 60000 --keep --json \
	> "$tmp/load.json" 2> "$tmp/load.err" &
LOAD_PID=$!
sleep 2
ups=$(subnet_ups)
kill -HUP "$OSM_PID"
wait_sweep "$ups"
ok $? "a heavy sweep forced under load (SIGHUP) completes: SUBNET UP again"
wait "$LOAD_PID"
load_rc=$?
LOAD_PID=
sum=$(cat "$tmp/load.json")
diag "load: $((SECONDS - t0)) s: $(jq -c '{reservations, reservations_per_s,
	disconnects, errors}' <<< "$sum" 2>&1)"
diag "latency (ms): $(jq -c '.latency | map_values([.median_ms, .p90_ms,
	.max_ms])' <<< "$sum" 2>&1)"
[ -s "$tmp/load.err" ] && diag "driver stderr: $(head -c 2000 "$tmp/load.err")"
is "$load_rc" 0 "the driver finished with exit 0"
is "$(jq -c .errors <<< "$sum")" '{}' "no request failed, no lost or duplicated reservation" ||
	diag "$(jq -c .error_examples <<< "$sum")"
ok "$([ "$(jq '.disconnects | add' <<< "$sum")" -gt 0 ]; echo $?)" \
	"clients really vanished mid-request ($(jq -c .disconnects <<< "$sum"))"
ok "$(osm_alive; echo $?)" "OpenSM (pid $OSM_PID) survived the load"

# --- what the driver holds is what the server holds -------------------------
st=$(ctl status)
jq -r '.held[]' <<< "$sum" | sort -n > "$tmp/held"
jq -r '.jobs[].job' <<< "$st" | sort -n > "$tmp/status"
is "$(wc -l < "$tmp/held")" "$JOBS" "the driver holds $JOBS jobs at the end"
is "$(diff "$tmp/held" "$tmp/status" > "$tmp/held.diff"; echo $?)" 0 \
	"status lists exactly the jobs the driver holds" ||
	diag "$(head -20 "$tmp/held.diff")"
is "$(sort -n "$tmp/status" | uniq -d | wc -l)" 0 "no job is listed twice"
is "$(jq '[.jobs[] | select(.state != "ready")] | length' <<< "$st")" 0 \
	"every held job is ready"
jq -r '.jobs[].groups[].mlid' <<< "$st" | sort > "$tmp/mlids"
is "$(uniq -d "$tmp/mlids" | wc -l)" 0 "no MLID belongs to two groups"
is "$(jq '[.mlids.ibmcast, .mlids.used]' -c <<< "$st")" \
	"[$(wc -l < "$tmp/mlids"),$((BASE_USED + $(wc -l < "$tmp/mlids")))]" \
	"MLID counts: ours are the held groups, OpenSM's are baseline + ours"

# The switches agree with what the driver asked for: each held MLID
# reaches exactly the nodes the driver gave its job (not what the server
# says its members are), every other MLID reaches nobody. (A one-node
# group needs no forwarding: OpenSM writes it into no switch, so it
# reaches nobody either.)
reach_all "$tmp/reach.held"
ok $? "the MFTs of all 1023 MLIDs were read"
jq -r '.held_nodes | to_entries[] | "\(.key) \(.value)"' <<< "$sum" \
	> "$tmp/held.nodes"
jq -r '.jobs[] | .job as $j | .groups[] | "\($j) \(.mlid)"' <<< "$st" \
	> "$tmp/job.mlids"
while read -r job hl; do
	mem=$(hostlist_expand "$hl" | LC_ALL=C sort | paste -sd,)
	[[ $mem == *,* ]] || continue
	awk -v j="$job" -v m="$mem" '$1 == j { print $2, m }' "$tmp/job.mlids"
done < "$tmp/held.nodes" | LC_ALL=C sort > "$tmp/want"
jq -r 'select((.members | length) > 0) |
	"\(.mlid) \(.members | sort | join(","))"' "$tmp/reach.held" |
	LC_ALL=C sort > "$tmp/got"
jq -r 'select(.consistent | not) | "\(.mlid) inconsistent"' \
	"$tmp/reach.held" >> "$tmp/got"
is "$(wc -l < "$tmp/held.nodes")/$([ -s "$tmp/want" ]; echo $?)/$(
	diff "$tmp/want" "$tmp/got" > "$tmp/mft.diff"; echo $?)" "$JOBS/0/0" \
	"the MFTs give every held group exactly the driver's nodes of its job, and no other MLID any" ||
	diag "$(head -c 3000 "$tmp/mft.diff")"

# OpenSM's SA while the jobs are held: the SA checks after the release
# below mean something only if saquery answers and sees our groups here.
m0=$(awk '{ print $1; exit }' "$tmp/want")
sim_env timeout 60 saquery -g > "$tmp/sa.g.held" 2>&1
rc=$?
n=$(sim_env timeout 30 saquery MCMR --mlid "$m0" 2> /dev/null | grep -ci 'mlid')
ok "$([ "$rc" = 0 ] && [ "$n" -gt 0 ]; echo $?)" \
	"while held, saquery -g answers and MCMR --mlid $m0 finds its group" ||
	diag "saquery -g: exit $rc, $(head -c 500 "$tmp/sa.g.held")" \
		"MCMR --mlid $m0: $n records"

# --- release everything -----------------------------------------------------
nrel=0
while read -r job; do
	r=$(ctl release "$job") && [ "$(jq .released <<< "$r")" = true ] &&
		nrel=$((nrel + 1))
done < "$tmp/held"
is "$nrel" "$JOBS" "each of the $JOBS held jobs is released once"
st=$(ctl status)
is "$(jq -c '[.mlids.used, .mlids.ibmcast, (.jobs | length)]' <<< "$st")" \
	"[$BASE_USED,0,0]" "afterwards: MLIDs used back to the baseline, none ours, no job"

# A heavy sweep at rest: OpenSM still sweeps to the end, and rewrites the
# MFTs from its own state, which must hold nothing of ours.
ups=$(subnet_ups)
kill -HUP "$OSM_PID"
wait_sweep "$ups"
ok $? "an idle heavy sweep completes (SUBNET UP logged again)"
st=$(ctl status)
ok "$([ "$(jq .server.sweeps <<< "$st")" -gt "$SWEEPS0" ] &&
	[ "$(jq -r .server.subnet_up <<< "$st")" = true ]; echo $?)" \
	"the plugin saw the sweeps ($SWEEPS0 -> $(jq .server.sweeps <<< "$st")), subnet up"

reach_all "$tmp/reach.after"
ok $? "the MFTs of all 1023 MLIDs were read again"
is "$(jq -r 'select((.members | length) + (.switches | length) > 0) |
	.mlid' "$tmp/reach.after" | paste -sd' ')" "" \
	"no switch has an MFT entry for any MLID: no route leaked"

# OpenSM's SA: saquery -g is cut at one MAD under ibsim (umad2sim has no
# RMPP), so ask for each MLID on its own.
sim_env timeout 60 saquery -g > "$tmp/sa.g" 2>&1
rc=$?
is "$rc/$([ "$(grep -ci 'ff12:401b' "$tmp/sa.g")" -gt 0 ]; echo $?)/$(
	grep -ci 'ff12:1bca' "$tmp/sa.g")" 0/0/0 \
	"saquery -g answers, lists OpenSM's own groups and none of ours" ||
	diag "$(head -c 500 "$tmp/sa.g")"
: > "$tmp/sa.left"
nfail=0
for ((m = 0xc001; m <= 0xc3ff; m++)); do
	if ! out=$(sim_env timeout 30 saquery MCMR --mlid "$m" 2> /dev/null); then
		nfail=$((nfail + 1))
		continue
	fi
	grep -qi 'mlid' <<< "$out" && printf '0x%x\n' "$m" >> "$tmp/sa.left"
done
is "$nfail/$(paste -sd' ' "$tmp/sa.left")" "0/" \
	"the SA answers for each of the 1023 MLIDs and knows no group on any (per-MLID MCMR queries)"

is "$(($(grep -c 'ERR ' "$SIM_DIR/opensm.log") - ERRS0))" 0 \
	"OpenSM logged no error during the run" ||
	diag "$(grep 'ERR ' "$SIM_DIR/opensm.log" | tail -5)"
ok "$(osm_alive && [ "$(subnet_ups)" -ge $((UPS0 + 2)) ]; echo $?)" \
	"OpenSM is alive at the end ($(subnet_ups) SUBNET UP in its log)"
