#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark (not a test): control-plane throughput and reserve-to-ready at
# 1, 10, 100 and 200 concurrent jobs on a 648-host fat tree, and the MFT
# SMPs OpenSM sends for a burst of jobs against the fewest that could do.
# shellcheck disable=SC2154 # lib.sh sets top_builddir
set -uo pipefail

usage() {
	cat <<'EOF'
Usage: tests/bench/control_plane.sh [--duration-s S] [--levels "1 10 100 200"]
           [--builddir DIR] [--keep]

Brings up a simulated 648-host two-level fat tree with OpenSM and the
ibmcast plugin, then for each concurrency level K:

 1. throughput: K workers of tests/load/ibmcast-load reserve random jobs
    (1..64 of node[1-648], 1..4 groups), wait for ready and release at
    once, for S seconds: reservations/s and reserve-to-ready (client's
    end-to-end and the plugin's own), median and p90;
 2. SMPs: K such jobs at once, all held until ready, then all released.
    MFT Set SMPs are counted from OpenSM's log (osm_mcast_fwd_rcv.c at
    DEBUG through a per-module logging file: one "Setting MFT block" line
    per Set answered) and set against the minimum for the groups' final
    MFTs read back with ibroute -M from every switch: the distinct
    (switch, 32-MLID block, port-group position) holding any of their
    bits (blocks shared by MLIDs of one block counted once), and the same
    without sharing, per group.

  --duration-s S   length of each throughput run (default 10)
  --levels LIST    concurrency levels (default "1 10 100 200")
  --builddir DIR   the build tree (default $IBMCAST_BUILDDIR, else the
                   source tree built in place)
  --keep           keep the fabric's state directory (logs)
EOF
}

DURATION=10
LEVELS="1 10 100 200"
# shellcheck source=tests/bench/options.sh
. "$(dirname "${BASH_SOURCE[0]}")/options.sh"
while [ $# -gt 0 ]; do
	case $1 in
	--duration-s) DURATION=${2:?--duration-s needs seconds}; shift ;;
	--levels) LEVELS=${2:?--levels needs a list}; shift ;;
	*) bench_option "$@"; shift "$BENCH_SHIFT"; continue ;;
	esac
	shift
done
[[ $DURATION =~ ^[0-9]+$ ]] || { echo "--duration-s: a number" >&2; exit 64; }

# lib.sh: build location, sim_up/at_exit (the fabric is stopped on every
# exit path, Ctrl-C included).
# shellcheck source=tests/lib.sh disable=SC1091,SC2154 # sets top_builddir
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

CTL=$top_builddir/tools/ibmcastctl
LOAD=$top_builddir/tests/load/ibmcast-load
for f in "$CTL" "$LOAD" "$top_builddir/sim-fabric/ibmcast-fattree" \
	 "$top_builddir/osm-plugin/.libs/libibmcast_osm.so"; do
	[ -e "$f" ] || {
		echo "missing $f: build first (make check builds ibmcast-load)" >&2
		exit 1
	}
done
for c in jq ibroute ibswitches; do
	command -v "$c" > /dev/null || { echo "$c not installed" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-cpbench.XXXXXX") || exit 1
at_exit "rm -rf '$WORK'"
LOAD_PID=
stop_load() {
	[ -n "$LOAD_PID" ] || return 0
	kill "$LOAD_PID" 2> /dev/null
	wait "$LOAD_PID" 2> /dev/null
	LOAD_PID=
}
at_exit stop_load

T_START=$SECONDS
say() { printf '[%4ds] %s\n' $((SECONDS - T_START)) "$*" >&2; }

# One line per MFT Set OpenSM gets an answer to, and nothing else of its
# DEBUG output.
printf 'osm_mcast_fwd_rcv.c 0x08\n' > "$WORK/per-module-logging.conf"
say "bringing up a 648-host fat tree with the plugin"
if ! sim_up --hosts 648 \
	--opensm-opt "per_module_logging_file=$WORK/per-module-logging.conf" \
	> "$WORK/up.log" 2>&1; then
	cat "$WORK/up.log" >&2
	echo "ibmcast-sim up failed" >&2
	exit 1
fi
# shellcheck source=/dev/null
. "$SIM_DIR/env"

ctl() { "$CTL" --server "$IBMCAST_SERVER" --json "$@"; }
sim_env() {
	env LD_PRELOAD="$IBMCAST_SIM_PRELOAD" IBSIM_SOCKNAME="$IBSIM_SOCKNAME" \
		SIM_HOST="$IBMCAST_SIM_HOST" "$@"
}
mft_sets() { grep -c 'osm_mft_rcv_process: Setting MFT block' "$SIM_DIR/opensm.log"; }

# Until OpenSM has answered every Set it sent: the count stops moving.
mft_settle() {
	local a b
	b=$(mft_sets)
	while :; do
		sleep 0.3
		a=$(mft_sets)
		[ "$a" = "$b" ] && break
		b=$a
	done
	echo "$a"
}

sim_env ibswitches 2> /dev/null | sed -n 's/.* lid \([0-9]*\) .*/\1/p' \
	> "$WORK/switch_lids"
[ -s "$WORK/switch_lids" ] || { echo "ibswitches found no switch" >&2; exit 1; }
say "$(wc -l < "$WORK/switch_lids") switches"

# min_blocks: reads every switch's MFT (ibroute -M) and prints "SHARED
# PERGROUP": distinct (switch, block, position) with any bit of an MLID
# above 0xc000, and the sum over MLIDs of (switch, position) with a bit.
min_blocks() {
	local lid
	while read -r lid; do
		sim_env ibroute -M "$lid" 2> /dev/null | sed "s/^/$lid /"
	done < "$WORK/switch_lids" | awk '
	function hex(s,    v, i) {
		v = 0
		for (i = 3; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef",
					   tolower(substr(s, i, 1))) - 1
		return v
	}
	$2 ~ /^0x[0-9a-fA-F]+$/ {
		mlid = hex($2)
		if (mlid <= 49152)
			next
		line = substr($0, length($1) + 2)
		for (p = 0; p <= 254; p++) {
			if (substr(line, 13 + 2 * p, 1) != "x")
				continue
			pos = int(p / 16)
			shared[$1 ":" int((mlid - 49152) / 32) ":" pos] = 1
			per[$1 ":" mlid ":" pos] = 1
		}
	}
	END { print length(shared), length(per) }'
}

printf '%s\n' "K,duration_s,reservations,res_per_s,r2r_med_ms,r2r_p90_ms,srv_r2r_med_ms,srv_r2r_p90_ms,reserve_med_ms,errors,mft_sets_per_res,burst_groups,burst_sets,min_shared,min_per_group,release_sets" \
	> "$WORK/results.csv"
seed=1
for K in $LEVELS; do
	# --- throughput ---
	say "K=$K: throughput for $DURATION s"
	s0=$(mft_settle)
	"$LOAD" --server "$IBMCAST_SERVER" --jobs "$K" --duration-s "$DURATION" \
		--seed "$seed" --disconnect-prob 0 --status-prob 0 --hold-ms 0 \
		--job-base $((seed * 1000000)) --json > "$WORK/load.json" \
		2> "$WORK/load.err" &
	LOAD_PID=$!
	wait "$LOAD_PID"
	LOAD_PID=
	seed=$((seed + 1))
	s1=$(mft_settle)
	res=$(jq .reservations "$WORK/load.json")
	# --- one burst of K jobs held until ready, then released ---
	say "K=$K: a burst of $K jobs for the SMP count"
	"$LOAD" --server "$IBMCAST_SERVER" --jobs "$K" --duration-s 0 --keep \
		--seed "$seed" --disconnect-prob 0 --status-prob 0 \
		--job-base $((seed * 1000000)) --json > "$WORK/burst.json" \
		2> "$WORK/burst.err" &
	LOAD_PID=$!
	wait "$LOAD_PID"
	LOAD_PID=
	seed=$((seed + 1))
	s2=$(mft_settle)
	groups=$(ctl status | jq '.mlids.ibmcast')
	read -r min_shared min_per < <(min_blocks)
	jq -r '.held[]' "$WORK/burst.json" | while read -r job; do
		ctl release "$job" > /dev/null
	done
	s3=$(mft_settle)
	jq -r --argjson K "$K" --argjson D "$DURATION" \
		--argjson mps "$(awk -v a=$((s1 - s0)) -v r="$res" \
			'BEGIN { printf "%.1f", r ? a / r : 0 }')" \
		--argjson bg "$groups" --argjson bs $((s2 - s1)) \
		--argjson ms "$min_shared" --argjson mp "$min_per" \
		--argjson rs $((s3 - s2)) '
		[$K, $D, .reservations, (.reservations_per_s * 10 | round / 10),
		 .latency.reserve_to_ready.median_ms,
		 .latency.reserve_to_ready.p90_ms,
		 .latency.server_reserve_to_ready.median_ms,
		 .latency.server_reserve_to_ready.p90_ms,
		 .latency.reserve.median_ms, .error_total, $mps, $bg, $bs,
		 $ms, $mp, $rs] | map(tostring) | join(",")' "$WORK/load.json" \
		>> "$WORK/results.csv"
	[ "$(jq .error_total "$WORK/load.json")" = 0 ] ||
		say "K=$K: errors: $(jq -c .error_examples "$WORK/load.json")"
done

say "done"
echo
echo "Control plane on 648 hosts (2-level fat tree, radix 36); jobs of 1..64"
echo "random nodes, 1..4 groups; throughput runs of $DURATION s, no hold."
echo
printf '%4s %7s %8s | %-19s | %-19s | %8s %6s\n' K res res/s \
	"reserve-to-ready ms" "plugin's own ms" "reserve" errors
printf '%4s %7s %8s | %9s %9s | %9s %9s | %8s %6s\n' "" "" "" median p90 \
	median p90 "med ms" ""
awk -F, 'NR > 1 { printf "%4d %7d %8.1f | %9.1f %9.1f | %9.1f %9.1f | %8.1f %6d\n",
	$1, $3, $4, $5, $6, $7, $8, $9, $10 }' "$WORK/results.csv"
echo
echo "MFT Set SMPs (counted in OpenSM's log) against the minimum"
printf '%4s | %11s | %6s %9s %9s %9s %6s | %9s\n' K "SMPs/res" groups \
	"burst SMP" "min" "min/grp" ratio "release"
awk -F, 'NR > 1 { printf "%4d | %11.1f | %6d %9d %9d %9d %6.1f | %9d\n",
	$1, $11, $12, $13, $14, $15, ($14 ? $13 / $14 : 0), $16 }' \
	"$WORK/results.csv"
cat <<'EOF'

SMPs/res: MFT Sets during the throughput run per reservation (setting up
and tearing down). burst SMP: Sets for K jobs reserved at once, until all
were ready; min: distinct (switch, 32-MLID block, position) holding any of
their bits afterwards (ibroute -M), the fewest Sets that could build them
from empty tables; min/grp: the same per group without sharing blocks;
release: Sets for releasing the burst (clearing needs about "min" again).
OpenSM rewrites, in every multicast pass, every block up to the highest
in use at every position of every switch that ever held a route, so the
ratio grows with what the fabric held before, not with the burst.
The SMP count comes from OpenSM's DEBUG log, not from a counter: OpenSM's
own qp0_mads_sent (every SMP, sweeps included) awaits the plugin exporting
it in status.
EOF
if [ -n "${IBMCAST_KEEP_TMP:-}" ]; then
	cp "$WORK/results.csv" "$SIM_DIR/" && echo "results: $SIM_DIR/results.csv"
fi
