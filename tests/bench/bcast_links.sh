#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark (not a test): broadcast completion time and the bytes carried
# over all fabric links, multicast against the binomial point-to-point tree,
# on the simulated fabric (real OpenSM, the data plane's per-link counters),
# then how multicast recovers from 5% loss.
set -uo pipefail

usage() {
	cat <<'EOF'
Usage: tests/bench/bcast_links.sh [--quick] [--reps N] [--out DIR]
           [--builddir DIR] [--keep]

Brings up a 64-host two-level fat tree (radix 16: 8 leaves of 8 hosts),
and for 8, 16, 32 and 64 ranks (one per node, each job reserved on its own
nodes) and sizes 8 B to 1 MiB runs tests/libjob/bcast_check --timing under
ibmcast-run, once with multicast and once with the binomial tree, resetting
the data plane's counters before each run and summing every link's bytes
after it. Then, at 32 ranks, the same multicast runs under 5% seeded loss.
Prints one table and whether the targets hold:
  - at 32 ranks and >= 4 KiB, multicast carries at most half the link
    bytes of the binomial tree;
  - multicast under 5% loss completes within 2x its loss-free time.

  --quick          8 and 32 ranks, three sizes, 2 repetitions (a minute or two)
  --reps N         broadcasts per point (default 5; the median is reported)
  --out DIR        also write results.csv there (default ./bench-bcast-links)
  --builddir DIR   the build tree (default $IBMCAST_BUILDDIR, else the
                   source tree built in place)
  --keep           keep the fabric's state directory (logs)
EOF
}

QUICK=0
REPS=5
OUT=./bench-bcast-links
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--reps) REPS=${2:?--reps needs a number}; shift ;;
	--out) OUT=${2:?--out needs a directory}; shift ;;
	--builddir) export IBMCAST_BUILDDIR=${2:?--builddir needs a directory}
		shift ;;
	--keep) export IBMCAST_KEEP_TMP=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 64 ;;
	esac
	shift
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "--reps: a positive number" >&2; exit 64; }

# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
# shellcheck source=tests/lib-libjob.sh
. "$top_srcdir/tests/lib-libjob.sh"
for f in "$IBMCAST_RUN" "$BCAST_CHECK" "$IBMCASTCTL" \
	 "$top_builddir/sim-fabric/ibmcast-dataplane" \
	 "$top_builddir/osm-plugin/.libs/libibmcast_osm.so"; do
	[ -e "$f" ] || { echo "missing $f: build first (make check builds" \
		"bcast_check), or give --builddir" >&2; exit 1; }
done
command -v jq > /dev/null || { echo "jq not installed" >&2; exit 1; }

if [ "$QUICK" = 1 ]; then
	RANKS=(8 32)
	SIZES=(8 4096 65536)
	REPS=2
else
	RANKS=(8 16 32 64)
	SIZES=(8 256 4096 65536 1048576)
fi
ALGOS=(mcast binomial)
HOSTS=64

mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
CSV=$OUT/results.csv
T_START=$SECONDS
say() { printf '[%4ds] %s\n' $((SECONDS - T_START)) "$*"; }

say "bringing up a $HOSTS-host fat tree (radix 16) with the plugin and the data plane"
sim_up --hosts "$HOSTS" --radix 16 > "$OUT/up.log" 2>&1 ||
	{ cat "$OUT/up.log" >&2; echo "ibmcast-sim up failed" >&2; exit 1; }
# shellcheck source=/dev/null
. "$SIM_DIR/env"
# Progress and timing stay deterministic enough; no broadcast may hang.
export IBMCAST_BCAST_TIMEOUT_MS=60000

# A job per rank count, on exactly its nodes, so each tree spans only them.
for n in "${RANKS[@]}"; do
	libjob_reserve $((500 + n)) "node[1-$n]" 2 ||
		{ echo "job for $n nodes not ready" >&2; exit 1; }
done
say "jobs ready: ${RANKS[*]} nodes"

echo "ranks,algo,loss,size,reps,median_us,max_us,link_bytes_per_bcast,algo_used,retransmits,timeouts" > "$CSV"
FAILED=0

# point N ALGO LOSS SIZE: one run; appends a CSV line.
point() {
	local n=$1 algo=$2 loss=$3 size=$4 out rc=0 bytes med max used retx tmo
	dp_ctl clear > /dev/null
	if [ "$loss" != 0 ]; then
		dp_ctl set loss="$loss" seed=5 > /dev/null
	fi
	dp_ctl reset > /dev/null
	out=$("$IBMCAST_RUN" -n "$n" --nodes "node[1-$n]" --job $((500 + n)) \
		--timeout 600 -- "$BCAST_CHECK" --timing --sizes "$size" \
		--reps "$REPS" --algo "$algo" 2>&1) || rc=$?
	bytes=$(dp_total_link_bytes)
	dp_ctl clear > /dev/null
	if [ "$rc" != 0 ]; then
		FAILED=$((FAILED + 1))
		say "FAILED: $n ranks $algo loss $loss size $size (exit $rc)"
		tail -n 5 <<< "$out" >&2
		return 1
	fi
	med=$(grep -oE 'median_us=[0-9.]+' <<< "$out" | cut -d= -f2)
	max=$(grep -oE 'max_us=[0-9.]+' <<< "$out" | cut -d= -f2)
	used=$(grep -oE 'algo=[a-z]+' <<< "$out" | tail -n 1 | cut -d= -f2)
	retx=$(grep -oE 'retransmits=[0-9]+' <<< "$out" | cut -d= -f2)
	tmo=$(grep -oE 'timeouts=[0-9]+' <<< "$out" | cut -d= -f2)
	echo "$n,$algo,$loss,$size,$REPS,$med,$max,$((bytes / REPS)),$used,$retx,$tmo" >> "$CSV"
	say "$(printf '%3d ranks %-8s loss %-4s %8d B: %10s us median, %12d link bytes/bcast (%s) retx %s timeouts %s' \
		"$n" "$algo" "$loss" "$size" "$med" $((bytes / REPS)) "$used" "$retx" "$tmo")"
}

for n in "${RANKS[@]}"; do
	for size in "${SIZES[@]}"; do
		for algo in "${ALGOS[@]}"; do
			point "$n" "$algo" 0 "$size"
		done
	done
done
LOSS_N=32
say "5% loss, multicast, $LOSS_N ranks"
for size in "${SIZES[@]}"; do
	[ "$size" -ge 4096 ] || continue
	point "$LOSS_N" mcast 0.05 "$size"
done

# ---- table and targets ----------------------------------------------------
echo
echo "broadcast on a $HOSTS-host 2-level fat tree (radix 16), one rank per node, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "time = from the first rank's start to the last rank's return (median of $REPS);"
echo "link bytes = every link's bytes in the data plane per broadcast (data, acks, repairs)"
echo
awk -F, '
NR == 1 { next }
$3 == 0 { t[$1, $4, $2] = $6; b[$1, $4, $2] = $8; u[$1, $4, $2] = $9
	  if (!(($1, $4) in seen)) { seen[$1, $4] = 1; key[nk++] = $1 SUBSEP $4 } }
END {
	printf "%5s %8s | %11s %11s | %12s %12s | %6s %6s\n", "ranks", "size",
		"mcast us", "binom us", "mcast bytes", "binom bytes",
		"time", "bytes"
	printf "%5s %8s | %11s %11s | %12s %12s | %6s %6s\n", "", "", "", "",
		"", "", "ratio", "ratio"
	for (i = 0; i < nk; i++) {
		split(key[i], f, SUBSEP)
		m = (f[1] SUBSEP f[2] SUBSEP "mcast"); p = (f[1] SUBSEP f[2] SUBSEP "binomial")
		printf "%5d %8d | %11.1f %11.1f | %12d %12d | %6.2f %6.2f%s\n",
			f[1], f[2], t[m], t[p], b[m], b[p],
			(t[p] > 0 ? t[m] / t[p] : 0), (b[p] > 0 ? b[m] / b[p] : 0),
			u[m] != "mcast" ? "  (mcast run used " u[m] ")" : ""
	}
}' "$CSV"
echo
echo "targets"
awk -F, -v n="$LOSS_N" '
NR == 1 { next }
$3 == 0 { t[$1, $4, $2] = $6; b[$1, $4, $2] = $8 }
$3 != 0 { l[$1, $4] = $6 }
END {
	ok1 = 1; seen1 = 0
	for (k in b) {
		split(k, f, SUBSEP)
		if (f[1] != n || f[2] < 4096 || f[3] != "mcast") continue
		r = (b[f[1], f[2], "binomial"] > 0) ? b[k] / b[f[1], f[2], "binomial"] : 9
		seen1 = 1
		printf "  %d ranks, %7d B: multicast link bytes / binomial = %.2f (target <= 0.50)  %s\n",
			f[1], f[2], r, r <= 0.5 ? "met" : "NOT met"
		if (r > 0.5) ok1 = 0
	}
	ok2 = 1; seen2 = 0
	for (k in l) {
		split(k, f, SUBSEP)
		base = t[f[1], f[2], "mcast"]
		if (base <= 0) continue
		seen2 = 1
		r = l[k] / base
		printf "  %d ranks, %7d B: multicast time under 5%% loss / loss-free = %.2f (target <= 2.00)  %s\n",
			f[1], f[2], r, r <= 2 ? "met" : "NOT met"
		if (r > 2) ok2 = 0
	}
	if (!seen1) print "  link bytes target: not measured in this run"
	if (!seen2) print "  loss recovery target: not measured in this run"
	printf "  overall: %s\n", ok1 && ok2 && seen1 && seen2 ? "all targets met" : "some target NOT met or not measured"
}' "$CSV"
echo
echo "$(($(wc -l < "$CSV") - 1)) points in $((SECONDS - T_START)) s ($FAILED failed); raw: $CSV"
[ "$FAILED" = 0 ]
