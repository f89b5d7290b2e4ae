#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark (not a test): reserve-to-ready time of the ibmcast plugin on a
# 648-host fat tree, and how long after an independent SMP poller
# (ibmcast-mftwatch) sees every MFT complete the plugin says "ready".
set -uo pipefail

usage() {
	cat <<'EOF'
Usage: tests/bench/reserve_to_ready.sh [--quick] [--reps N] [--out DIR]
           [--builddir DIR] [--plugin-opt KEY=VAL]... [--watch-interval-us U]
           [--keep]

Brings up a simulated 648-host two-level fat tree (radix 36: 36 leaves of 18
hosts, 18 spines) with OpenSM and the ibmcast plugin, then, for job sizes
8..512 nodes and pools of 1..16 groups, placed contiguously (node[1-N]) and
scattered (round-robin over the 36 leaves), reserves a job while
ibmcast-mftwatch polls the switches' MFTs, waits, releases, and prints
reserve-to-ready, the build and OpenSM shares, and the confirmation lag.

  --quick              a small run (3 sizes x 2 pools x 2 reps), about a minute
  --reps N             repetitions per point for jobs up to 128 nodes
                       (default 10; 256 and 512 nodes get fewer, see output)
  --out DIR            write results.csv, summary.dat, reserve_to_ready.gp
                       (and reserve_to_ready.png with gnuplot) there
                       (default: ./bench-reserve-to-ready)
  --builddir DIR       the build tree (default $IBMCAST_BUILDDIR, else the
                       source tree built in place)
  --plugin-opt KEY=VAL passed to ibmcast-sim up (e.g. poll_us=200)
  --watch-interval-us U  the poller's sleep between passes (default 1000)
  --keep               keep the fabric's state directory (logs)
EOF
}

QUICK=0
REPS=10
OUT=./bench-reserve-to-ready
WATCH_INTERVAL_US=1000
PLUGIN_OPTS=()
# shellcheck source=tests/bench/options.sh
. "$(dirname "${BASH_SOURCE[0]}")/options.sh"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--reps) REPS=${2:?--reps needs a number}; shift ;;
	--plugin-opt) PLUGIN_OPTS+=(--plugin-opt "${2:?--plugin-opt needs KEY=VAL}")
		shift ;;
	--watch-interval-us) WATCH_INTERVAL_US=${2:?needs a number}; shift ;;
	*) bench_option "$@"; shift "$BENCH_SHIFT"; continue ;;
	esac
	shift
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "--reps: a positive number" >&2; exit 64; }
[[ $WATCH_INTERVAL_US =~ ^[0-9]+$ ]] ||
	{ echo "--watch-interval-us: a number" >&2; exit 64; }

# lib.sh: build location, sim_up/at_exit (the fabric is stopped on every
# exit path, Ctrl-C included).
# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
for f in "$CTL" "$WATCH" "$top_builddir/sim-fabric/ibmcast-fattree" \
	 "$top_builddir/osm-plugin/.libs/libibmcast_osm.so"; do
	[ -x "$f" ] || [ -e "$f" ] || {
		echo "missing $f: build first, or give --builddir" >&2
		exit 1
	}
done
command -v jq > /dev/null || { echo "jq not installed" >&2; exit 1; }

HOSTS=648
RADIX=36
LEAVES=36
PER_LEAF=18
if [ "$QUICK" = 1 ]; then
	SIZES=(8 64 256)
	POOLS=(1 8)
	REPS=2
else
	SIZES=(8 16 32 64 128 256 512)
	POOLS=(1 2 4 8 16)
fi
PLACEMENTS=(contiguous scattered)

# Big jobs cost more per run (poller discovery is the same, but the plugin
# and the poller check 256-512 members per group); fewer reps keep the
# default run near ten minutes on two cores.
reps_for() {
	local n=$1 r=$REPS
	if [ "$n" -ge 512 ]; then
		r=$(((REPS + 1) / 2))
	elif [ "$n" -ge 256 ]; then
		r=$(((REPS * 3 + 4) / 5))
	fi
	[ "$r" -ge 1 ] || r=1
	[ "$QUICK" = 1 ] && r=$REPS
	echo "$r"
}

mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
CSV=$OUT/results.csv
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-bench.XXXXXX") || exit 1
at_exit "rm -rf '$WORK'"

T_START=$SECONDS
say() { printf '[%4ds] %s\n' $((SECONDS - T_START)) "$*"; }

say "bringing up a $HOSTS-host fat tree (radix $RADIX) with the plugin" \
	"${PLUGIN_OPTS[*]:+(${PLUGIN_OPTS[*]})}"
if ! sim_up --hosts "$HOSTS" --radix "$RADIX" "${PLUGIN_OPTS[@]}" \
	> "$WORK/up.log" 2>&1; then
	cat "$WORK/up.log" >&2
	echo "ibmcast-sim up failed" >&2
	exit 1
fi
# shellcheck source=/dev/null
. "$SIM_DIR/env"

# The poller is an ibsim client: it must end by itself (a killed client
# never frees its slot). It always does, at the latest at its timeout; on
# any exit wait for it before the fabric goes down.
WATCH_PID=
WATCH_TIMEOUT_MS=15000
wait_watcher() {
	[ -n "$WATCH_PID" ] || return 0
	wait "$WATCH_PID" 2> /dev/null
	local rc=$?
	WATCH_PID=
	return "$rc"
}
at_exit "wait_watcher || true"

ctl() { "$CTL" --server "$IBMCAST_SERVER" --json "$@"; }

watch_start() { # MLIDS NODES
	env LD_PRELOAD="$IBMCAST_SIM_PRELOAD" IBSIM_SOCKNAME="$IBSIM_SOCKNAME" \
		SIM_HOST="$IBMCAST_SIM_HOST" \
		"$WATCH" watch --mlid "$1" --nodes "$2" \
		--timeout-ms "$WATCH_TIMEOUT_MS" \
		--interval-us "$WATCH_INTERVAL_US" \
		> "$WORK/watch.json" 2> "$WORK/watch.err" &
	WATCH_PID=$!
}

# Node names of a placement: contiguous node1..nodeN, or scattered
# round-robin over the leaves (the i-th node on leaf i mod 36), which
# puts every leaf and every spine on the tree.
node_numbers() { # PLACEMENT N
	local i
	if [ "$1" = contiguous ]; then
		seq 1 "$2"
	else
		for ((i = 0; i < $2; i++)); do
			echo $(((i % LEAVES) * PER_LEAF + i / LEAVES + 1))
		done
	fi
}

# Until the plugin holds no MLID of ours, so runs never overlap.
wait_free() {
	local i n
	for ((i = 0; i < 500; i++)); do
		n=$(ctl status | jq -r '.mlids.ibmcast') || n=x
		[ "$n" = 0 ] && return 0
		sleep 0.01
	done
	echo "MLIDs still held 5 s after release" >&2
	return 1
}

# The poller must be polling before the reservation (the plugin is often
# ready within a few ms, faster than any script could hand over MLIDs), so
# it is started on the MLIDs the job will get: OpenSM hands out the lowest
# free ones and every run starts from an empty pool. A warm-up job learns
# them (and starts the plugin's SMP reader, which the first job would
# otherwise pay for). Each run checks its MLIDs and is redone if wrong.
# The warm-up spans every leaf: OpenSM rewrites, in every multicast pass,
# the MFT blocks of every switch that ever held a multicast route (a high
# water mark, mcast_mgr_set_mftables), so without it the small jobs
# measured first would see a cheaper pass than any later one. A real
# fabric is in this state already (IPoIB's broadcast group spans it).
say "warm-up: a job on every leaf; learning the free MLIDs; timing the poller's discovery"
NEXT_JOB=1000
ctl reserve "$NEXT_JOB" --nodes "node[$(node_numbers scattered "$LEAVES" |
	paste -sd,)]" --groups 16 --lease 600 \
	> "$WORK/r.json" || { echo "warm-up reserve failed" >&2; exit 1; }
ctl wait "$NEXT_JOB" --timeout-ms 30000 > "$WORK/w.json" ||
	{ echo "warm-up job not ready: $(cat "$WORK/w.json")" >&2; exit 1; }
mapfile -t FREE_MLIDS < <(jq -r '.job.groups[].mlid' "$WORK/r.json")
ctl release "$NEXT_JOB" > /dev/null
wait_free || exit 1
NEXT_JOB=$((NEXT_JOB + 1))
# Time the poller's start-up (discovery of 704 nodes): the settle time
# after starting it is twice that, and each run checks the poller really
# started polling before the reservation.
t0=$(date +%s%N)
env LD_PRELOAD="$IBMCAST_SIM_PRELOAD" IBSIM_SOCKNAME="$IBSIM_SOCKNAME" \
	SIM_HOST="$IBMCAST_SIM_HOST" "$WATCH" reach --mlid "${FREE_MLIDS[0]}" \
	> /dev/null 2> "$WORK/reach.err"
t1=$(date +%s%N)
DISCOVER_MS=$(((t1 - t0) / 1000000))
SETTLE_MS=$((DISCOVER_MS * 2 + 50))
say "poller start-up ${DISCOVER_MS} ms; settle ${SETTLE_MS} ms; MLIDs from ${FREE_MLIDS[0]}"

echo "placement,nodes,groups,rep,job,attempts,reserve_to_ready_us,build_us,sm_done_us,mft_complete_after_us,mft_complete_us,lag_us,window_us,poll_pass_us,polls,reserved_mono_ns,ready_mono_ns,complete_after_mono_ns,complete_mono_ns,watch_start_mono_ns" > "$CSV"

RETRIES=0
FAILED=0

# One measured run; appends a CSV line. Returns 1 if it never validated.
run_one() { # PLACEMENT N G REP
	local pl=$1 n=$2 g=$3 rep=$4 nums names hostlist mlids attempt
	local job why line rc
	nums=$(node_numbers "$pl" "$n")
	names=$(sed 's/^/node/' <<< "$nums" | paste -sd,)
	hostlist="node[$(paste -sd, <<< "$nums")]"
	mlids=$(printf '%s\n' "${FREE_MLIDS[@]:0:g}" | paste -sd,)
	for ((attempt = 1; attempt <= 3; attempt++)); do
		job=$NEXT_JOB
		NEXT_JOB=$((NEXT_JOB + 1))
		watch_start "$mlids" "$names"
		sleep "$(printf '%d.%03d' $((SETTLE_MS / 1000)) \
			$((SETTLE_MS % 1000)))"
		if ! ctl reserve "$job" --nodes "$hostlist" --groups "$g" \
			--lease 600 > "$WORK/r.json" 2> "$WORK/r.err"; then
			why="reserve failed: $(cat "$WORK/r.err")"
			wait_watcher
			FAILED=$((FAILED + 1))
			say "$pl $n x $g rep $rep: $why"
			return 1
		fi
		ctl wait "$job" --timeout-ms 20000 > "$WORK/w.json" 2>&1
		wait_watcher
		rc=$?
		ctl release "$job" > /dev/null
		wait_free || return 1
		# One jq pass checks the run and prints the CSV line, or
		# "retry: why".
		line=$(jq -rn --slurpfile r "$WORK/r.json" \
			--slurpfile w "$WORK/w.json" \
			--slurpfile m "$WORK/watch.json" \
			--arg mlids "$mlids" --argjson rc "$rc" \
			--arg pre "$pl,$n,$g,$rep,$job,$attempt" '
			($r[0].job) as $rj | ($w[0].job) as $j | ($m[0]) as $p |
			if $j.state != "ready" then "fail: job \($j.state) \($j.reason // "")"
			elif $rc != 0 or ($p.complete | not) then "fail: poller did not see the MFTs complete (exit \($rc))"
			elif ([$rj.groups[].mlid] | join(",")) != $mlids then "retry: MLIDs \([$rj.groups[].mlid] | join(",")) not the predicted \($mlids)"
			elif $p.start_mono_ns >= $j.reserved_mono_ns then "retry: poller started polling after the reservation"
			elif $p.complete_after_mono_ns < $p.start_mono_ns then "retry: poller never saw the MFTs incomplete"
			else [$pre, $j.reserve_to_ready_us, $j.build_us, $j.sm_done_us,
			      (($p.complete_after_mono_ns - $j.reserved_mono_ns) / 1000 | floor),
			      (($p.complete_mono_ns - $j.reserved_mono_ns) / 1000 | floor),
			      (($j.ready_mono_ns - $p.complete_mono_ns) / 1000 | floor),
			      (($p.complete_mono_ns - $p.complete_after_mono_ns) / 1000 | floor),
			      $p.last_poll_us, $p.polls, $j.reserved_mono_ns,
			      $j.ready_mono_ns, $p.complete_after_mono_ns,
			      $p.complete_mono_ns, $p.start_mono_ns]
			     | map(tostring) | join(",") end' 2>&1) ||
			line="fail: unreadable replies: $line"
		case $line in
		retry:*)
			RETRIES=$((RETRIES + 1))
			say "$pl $n x $g rep $rep: ${line#retry: }; again"
			case $line in
			*after*) SETTLE_MS=$((SETTLE_MS * 2)) ;;
			*MLIDs*) mapfile -t FREE_MLIDS < <(
				jq -r '.job.groups[].mlid' "$WORK/r.json")
				mlids=$(printf '%s\n' "${FREE_MLIDS[@]:0:g}" |
					paste -sd,) ;;
			esac
			;;
		fail:*)
			FAILED=$((FAILED + 1))
			say "$pl $n x $g rep $rep: ${line#fail: }"
			cat "$WORK/watch.err" >&2
			return 1
			;;
		*)
			echo "$line" >> "$CSV"
			return 0
			;;
		esac
	done
	FAILED=$((FAILED + 1))
	say "$pl $n x $g rep $rep: no valid run in 3 attempts"
	return 1
}

# Median and p90 (nearest rank) of a column for one point, in ms.
point_stats() { # PLACEMENT N G COLUMN [CSV]
	awk -F, -v pl="$1" -v n="$2" -v g="$3" -v col="$4" '
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$1 == pl && $2 == n && $3 == g { v[k++] = $c[col] / 1000 }
	END {
		if (!k) { print "- -"; exit }
		for (i = 1; i < k; i++)
			for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
				t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
			}
		med = k % 2 ? v[int(k / 2)] : (v[k / 2 - 1] + v[k / 2]) / 2
		r = int(0.9 * k + 0.999999); if (r < 1) r = 1
		printf "%.1f %.1f\n", med, v[r - 1]
	}' "${5:-$CSV}"
}

TOTAL=0
for pl in "${PLACEMENTS[@]}"; do
	for n in "${SIZES[@]}"; do
		TOTAL=$((TOTAL + ${#POOLS[@]} * $(reps_for "$n")))
	done
done
say "$TOTAL runs: sizes ${SIZES[*]} x pools ${POOLS[*]} x ${PLACEMENTS[*]};" \
	"reps: $(for n in "${SIZES[@]}"; do printf '%s:%s ' "$n" "$(reps_for "$n")"; done)"

DONE=0
for pl in "${PLACEMENTS[@]}"; do
	for n in "${SIZES[@]}"; do
		for g in "${POOLS[@]}"; do
			r=$(reps_for "$n")
			for ((rep = 1; rep <= r; rep++)); do
				run_one "$pl" "$n" "$g" "$rep"
				DONE=$((DONE + 1))
			done
			read -r rmed _ <<< "$(point_stats "$pl" "$n" "$g" reserve_to_ready_us)"
			read -r lmed _ <<< "$(point_stats "$pl" "$n" "$g" lag_us)"
			say "$(printf '%3d/%d %-10s %3d nodes x %2d groups: reserve-to-ready %6s ms, lag %6s ms (medians of %d)' \
				"$DONE" "$TOTAL" "$pl" "$n" "$g" "$rmed" "$lmed" "$r")"
		done
	done
done

# Control: the same points without the poller. Its SMPs share ibsim's one
# thread with OpenSM and the plugin's reader, so it slows what it watches;
# this shows by how much (reserve-to-ready only, no lag).
CONTROL_POINTS=("contiguous 64 8" "scattered 64 8" "scattered 512 16")
[ "$QUICK" = 1 ] && CONTROL_POINTS=("contiguous 64 8" "scattered 64 8")
echo "placement,nodes,groups,rep,job,reserve_to_ready_us,build_us,sm_done_us" \
	> "$OUT/control.csv"
for pt in "${CONTROL_POINTS[@]}"; do
	read -r pl n g <<< "$pt"
	nums=$(node_numbers "$pl" "$n")
	hostlist="node[$(paste -sd, <<< "$nums")]"
	for ((rep = 1; rep <= REPS; rep++)); do
		job=$NEXT_JOB
		NEXT_JOB=$((NEXT_JOB + 1))
		ctl reserve "$job" --nodes "$hostlist" --groups "$g" \
			--lease 600 > /dev/null &&
		ctl wait "$job" --timeout-ms 20000 > "$WORK/w.json" &&
		jq -r --arg pre "$pl,$n,$g,$rep,$job" \
			'.job | [$pre, .reserve_to_ready_us, .build_us,
			 .sm_done_us] | map(tostring) | join(",")' \
			"$WORK/w.json" >> "$OUT/control.csv"
		ctl release "$job" > /dev/null
		wait_free || exit 1
		sleep 0.1
	done
	read -r rmed _ <<< "$(point_stats "$pl" "$n" "$g" \
		reserve_to_ready_us "$OUT/control.csv")"
	say "$(printf 'control %-10s %3d nodes x %2d groups, no poller: reserve-to-ready %6s ms (median of %d)' \
		"$pl" "$n" "$g" "$rmed" "$REPS")"
done
ELAPSED=$((SECONDS - T_START))

# ---- tables --------------------------------------------------------------

# Per point: medians of per-run values; shares are per-run ratios
# (build_us / reserve_to_ready_us, sm_done_us / reserve_to_ready_us).
awk -F, '
function sortv(a, k,   i, j, t) {
	for (i = 1; i < k; i++)
		for (j = i; j > 0 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
}
function med(a, k) { sortv(a, k); return k % 2 ? a[int(k / 2)] : (a[k / 2 - 1] + a[k / 2]) / 2 }
function p90(a, k,   r) { sortv(a, k); r = int(0.9 * k + 0.999999); return a[r - 1] }
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
	key = $1 SUBSEP $2 SUBSEP $3
	if (!(key in n)) { order[nk++] = key; n[key] = 0 }
	i = n[key]++
	R[key, i] = $c["reserve_to_ready_us"] / 1000
	B[key, i] = $c["build_us"] / $c["reserve_to_ready_us"]
	S[key, i] = $c["sm_done_us"] / $c["reserve_to_ready_us"]
	M[key, i] = $c["mft_complete_us"] / 1000
	L[key, i] = $c["lag_us"] / 1000
	W[key, i] = $c["window_us"] / 1000
	P[key, i] = $c["poll_pass_us"] / 1000
}
END {
	last = ""
	for (o = 0; o < nk; o++) {
		key = order[o]; split(key, f, SUBSEP); k = n[key]
		if (f[1] != last) {
			if (last != "") print ""
			last = f[1]
			printf "%s placement%s\n", f[1], f[1] == "contiguous" ? \
				" (node[1-N])" : " (round-robin over the 36 leaves)"
			printf "%5s %6s %4s | %8s %8s | %6s %6s | %9s | %8s %8s | %7s %6s\n",
				"nodes", "groups", "runs", "r2r med", "r2r p90",
				"build", "OpenSM", "MFTs done", "lag med", "lag p90",
				"window", "pass"
			printf "%5s %6s %4s | %8s %8s | %6s %6s | %9s | %8s %8s | %7s %6s\n",
				"", "", "", "ms", "ms", "share", "share",
				"ms", "ms", "ms", "ms", "ms"
		}
		for (i = 0; i < k; i++) {
			a1[i] = R[key, i]; a2[i] = R[key, i]; a3[i] = B[key, i]
			a4[i] = S[key, i]; a5[i] = M[key, i]; a6[i] = L[key, i]
			a7[i] = L[key, i]; a8[i] = W[key, i]; a9[i] = P[key, i]
		}
		printf "%5d %6d %4d | %8.1f %8.1f | %5.0f%% %5.0f%% | %9.1f | %8.1f %8.1f | %7.1f %6.1f\n",
			f[2], f[3], k, med(a1, k), p90(a2, k), 100 * med(a3, k),
			100 * med(a4, k), med(a5, k), med(a6, k), p90(a7, k),
			med(a8, k), med(a9, k)
	}
}' "$CSV" > "$OUT/tables.txt"

# Overall: median lag of every run, and the 64 x 8 point.
awk -F, '
function sortv(a, k,   i, j, t) {
	for (i = 1; i < k; i++)
		for (j = i; j > 0 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
}
function med(a, k) { sortv(a, k); return k % 2 ? a[int(k / 2)] : (a[k / 2 - 1] + a[k / 2]) / 2 }
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
	lag[nl++] = $c["lag_us"] / 1000
	win[nw++] = $c["window_us"] / 1000
	rr[nr++] = $c["reserve_to_ready_us"] / $c["sm_done_us"]
	if ($2 == 64 && $3 == 8) {
		if ($1 == "contiguous") t1[n1++] = $c["reserve_to_ready_us"] / 1000
		else t2[n2++] = $c["reserve_to_ready_us"] / 1000
	}
}
END {
	print "targets"
	if (!nl) { print "  no valid runs"; exit }
	m = med(lag, nl)
	printf "  median confirmation lag, all %d runs:   %7.1f ms  (target <= 5 ms)   %s\n",
		nl, m, m <= 5 ? "met" : "NOT met"
	printf "    (poller resolution: median window %.1f ms between its last incomplete and first complete pass)\n",
		med(win, nw)
	if (n1) {
		m = med(t1, n1)
		printf "  reserve-to-ready, 64 nodes x 8 groups, contiguous (%d runs): %6.1f ms  (target <= 100 ms)  %s\n",
			n1, m, m <= 100 ? "met" : "NOT met"
	} else
		print "  reserve-to-ready, 64 nodes x 8 groups: not measured in this run"
	if (n2) {
		m = med(t2, n2)
		printf "  reserve-to-ready, 64 nodes x 8 groups, scattered  (%d runs): %6.1f ms  (target <= 100 ms)  %s\n",
			n2, m, m <= 100 ? "met" : "NOT met"
	}
}' "$CSV" > "$OUT/targets.txt"
{
	echo "  without the poller (control, same fabric, $REPS runs each):"
	for pt in "${CONTROL_POINTS[@]}"; do
		read -r pl n g <<< "$pt"
		read -r cmed cp90 <<< "$(point_stats "$pl" "$n" "$g" \
			reserve_to_ready_us "$OUT/control.csv")"
		read -r wmed _ <<< "$(point_stats "$pl" "$n" "$g" \
			reserve_to_ready_us)"
		printf '    %-10s %3d nodes x %2d groups: reserve-to-ready median %6s ms, p90 %6s ms (with the poller: %s ms)\n' \
			"$pl" "$n" "$g" "$cmed" "$cp90" "$wmed"
	done
} >> "$OUT/targets.txt"

# ---- plot ----------------------------------------------------------------

# summary.dat: one gnuplot index per (placement, pool): nodes r2r_med.
: > "$OUT/summary.dat"
for pl in "${PLACEMENTS[@]}"; do
	for g in "${POOLS[@]}"; do
		echo "# $pl $g groups: nodes r2r_median_ms r2r_p90_ms" >> "$OUT/summary.dat"
		for n in "${SIZES[@]}"; do
			echo "$n $(point_stats "$pl" "$n" "$g" reserve_to_ready_us)"
		done >> "$OUT/summary.dat"
		printf '\n\n' >> "$OUT/summary.dat"
	done
done
{
	echo "# gnuplot $OUT/reserve_to_ready.gp (writes reserve_to_ready.png)"
	echo "set terminal pngcairo size 1000,650 noenhanced"
	echo "set output '$OUT/reserve_to_ready.png'"
	echo "set title 'ibmcast reserve-to-ready, ${HOSTS}-host fat tree (median)'"
	echo "set xlabel 'job size (nodes)'; set ylabel 'reserve-to-ready (ms)'"
	echo "set logscale x 2; set grid; set key top left"
	printf 'plot '
	i=0
	sep=
	for pl in "${PLACEMENTS[@]}"; do
		lt=1
		[ "$pl" = scattered ] && lt=2
		for g in "${POOLS[@]}"; do
			printf "%s'%s' index %d using 1:2 with linespoints dt %d lc %d title '%s, %d groups'" \
				"$sep" "$OUT/summary.dat" "$i" "$lt" \
				"$((i % ${#POOLS[@]} + 1))" "$pl" "$g"
			sep=', '
			i=$((i + 1))
		done
	done
	echo
} > "$OUT/reserve_to_ready.gp"
if command -v gnuplot > /dev/null; then
	if gnuplot "$OUT/reserve_to_ready.gp" 2> "$WORK/gnuplot.err"; then
		PLOT="plot: $OUT/reserve_to_ready.png"
	else
		PLOT="gnuplot failed: $(head -3 "$WORK/gnuplot.err")"
	fi
else
	PLOT="no plot: gnuplot not installed (Debian package gnuplot-nox); run gnuplot $OUT/reserve_to_ready.gp later"
fi

echo
echo "reserve-to-ready on a $HOSTS-host 2-level fat tree (radix $RADIX), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "plugin options: ${PLUGIN_OPTS[*]:-defaults}; poller: ibmcast-mftwatch watch, ${WATCH_INTERVAL_US} us between passes"
echo "reps per point: $(for n in "${SIZES[@]}"; do printf '%s nodes %s, ' "$n" "$(reps_for "$n")"; done | sed 's/, $//') (fewer for big jobs to keep the run short)"
echo "r2r = reserve_to_ready_us; build share = build_us/r2r; OpenSM share = sm_done_us/r2r (OpenSM processed"
echo "every MLID, its QP0 MADs completed, as the plugin saw it); the rest is the plugin's MFT readback."
echo "MFTs done = when the poller first saw every MFT complete, from the reservation. lag = ready_mono_ns -"
echo "complete_mono_ns; negative when the plugin said ready before the poller's pass ended. window = time"
echo "between the poller's last incomplete and first complete pass (its resolution); pass = one pass's SMP"
echo "reads. Shares and lags are per-run values (from one run), then the median over the runs."
echo "A warm-up job on every leaf first puts every switch's MFT block in use, as IPoIB would on a real fabric."
echo
cat "$OUT/tables.txt"
echo
cat "$OUT/targets.txt"
echo
echo "$DONE runs in ${ELAPSED} s ($RETRIES redone, $FAILED failed); raw: $CSV"
echo "$PLOT"
[ "$FAILED" = 0 ]
