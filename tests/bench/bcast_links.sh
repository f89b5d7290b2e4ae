#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark (not a test): broadcast completion time and the bytes carried
# over all fabric links, multicast against the binomial point-to-point tree,
# on the simulated fabric (real OpenSM, the data plane's per-link counters),
# then how multicast recovers from 5% loss.
set -uo pipefail

usage() {
	cat <<'EOF'
Usage: tests/bench/bcast_links.sh [--quick | --loss-only] [--reps N]
           [--loaded N | --loaded-only N] [--out DIR] [--builddir DIR]
           [--keep]

Brings up a 64-host two-level fat tree (radix 16: 8 leaves of 8 hosts),
places each job contiguously (nodes 1..n) and scattered (n nodes dealt
round robin over the leaves, sorted, as a busy cluster allocates; up to 32),
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
  --loss-only      only the loss target's points: 32 ranks contiguous,
                   multicast, 64 KiB and 1 MiB, loss-free and under 5% loss
  --reps N         broadcasts per point (default 5; the median is reported)
  --loaded N       also measure on a busy host, as on a compute node running
                   an application: N CPU hogs (processes named
                   ibmcast-cpu-hog, each a shell busy loop, stopped by PID
                   at the end or on any exit) spin while 32 ranks broadcast
                   8 B loss-free (multicast and binomial) and 4 KiB
                   loss-free and under 5% loss (multicast); targets: loaded
                   multicast 8 B within 1.5x of binomial, 4 KiB under 5%
                   loss within 2x of its loaded loss-free time
  --loaded-only N  only those busy-host points (a few minutes)
  --out DIR        also write results.csv there (default ./bench-bcast-links)
  --builddir DIR   the build tree (default $IBMCAST_BUILDDIR, else the
                   source tree built in place)
  --keep           keep the fabric's state directory (logs)
EOF
}

QUICK=0
LOSS_ONLY=0
REPS=5
LOADED=0
LOADED_ONLY=0
OUT=./bench-bcast-links
# shellcheck source=tests/bench/options.sh
. "$(dirname "${BASH_SOURCE[0]}")/options.sh"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--loss-only) LOSS_ONLY=1 ;;
	--reps) REPS=${2:?--reps needs a number}; shift ;;
	--loaded) LOADED=${2:?--loaded needs a number}; shift ;;
	--loaded-only) LOADED=${2:?--loaded-only needs a number}
		LOADED_ONLY=1; shift ;;
	*) bench_option "$@"; shift "$BENCH_SHIFT"; continue ;;
	esac
	shift
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "--reps: a positive number" >&2; exit 64; }
[[ $LOADED =~ ^[0-9]+$ ]] || { echo "--loaded: a number" >&2; exit 64; }

# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
# shellcheck source=tests/lib-libjob.sh
. "$top_srcdir/tests/lib-libjob.sh"
bench_need "$BCAST_CHECK" "make check builds bcast_check"

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
PLACES=(contig scatter)
if [ "$LOADED_ONLY" = 1 ]; then
	RANKS=(32)
	PLACES=(contig)
fi
if [ "$LOSS_ONLY" = 1 ]; then
	RANKS=(32)
	SIZES=(65536 1048576)
	ALGOS=(mcast)
	PLACES=(contig)
fi

bench_start "$OUT"

bench_fabric_up "$HOSTS"
# Progress and timing stay deterministic enough; no broadcast may hang.
export IBMCAST_BCAST_TIMEOUT_MS=60000

# Placements: "contig" = nodes 1..n (whole leaves, the best case for a
# topology-aligned binomial tree); "scatter" = n nodes dealt round robin
# over the leaves and sorted, as a busy cluster's scheduler hands them out
# (ranks in node order). Each job is reserved on exactly its nodes.
LEAF_HOSTS=8
LEAVES=$((HOSTS / LEAF_HOSTS))
nodes_for() {	# PLACE N: the node list in rank order, comma-separated
	local place=$1 n=$2 i
	if [ "$place" = contig ]; then
		seq 1 "$n"
	else
		for ((i = 0; i < n; i++)); do
			echo $((1 + (i % LEAVES) * LEAF_HOSTS + i / LEAVES))
		done | sort -n
	fi | sed 's/^/node/' | paste -sd, -
}
jobid() { [ "$1" = contig ] && echo $((500 + $2)) || echo $((600 + $2)); }
for place in "${PLACES[@]}"; do
	for n in "${RANKS[@]}"; do
		[ "$place" = scatter ] && [ "$n" -ge "$HOSTS" ] && continue
		libjob_reserve "$(jobid "$place" "$n")" "$(nodes_for "$place" "$n")" 2 ||
			{ echo "job for $n $place nodes not ready" >&2; exit 1; }
	done
done
say "jobs ready: ${RANKS[*]} nodes, placements ${PLACES[*]}"
# One untimed broadcast per job first: the data plane reads a new group's
# MFTs within its staleness bound, and a first multicast sent before that
# reaches nobody (then every member is repaired by unicast). Steady state
# is what is measured.
for place in "${PLACES[@]}"; do
	for n in "${RANKS[@]}"; do
		[ "$place" = scatter ] && [ "$n" -ge "$HOSTS" ] && continue
		"$IBMCAST_RUN" -n "$n" --nodes "$(nodes_for "$place" "$n")" \
			--job "$(jobid "$place" "$n")" --timeout 600 -- \
			"$BCAST_CHECK" --sizes 8 --algo mcast > /dev/null 2>&1 ||
			say "warm-up of $place $n failed"
	done
done
say "warm-up broadcasts done"

# Each host's leaf switch, from the data plane's link list.
dp_ctl counters --all |
	jq -r '.links[] | select(.from | test("^node")) | "\(.from) \(.to)"' |
	sort -u > "$OUT/host_leaf.txt"

# floor PLACE N: the zero-overhead ratio of link traversals, multicast tree
# (root's uplink, one spine to every other member leaf, every member's
# downlink: N + L for L > 1 leaves, N for one) over the binomial tree
# (2 links per edge within a leaf, 4 across leaves), averaged over the
# roots bcast_check --timing uses (rep % n).
floor_ratio() {
	nodes_for "$1" "$2" | tr , '\n' | awk -v reps="$REPS" '
		FILENAME == ARGV[1] { leaf[$1] = $2; next }
		{ r2n[nr++] = $1 }
		END {
			n = nr
			for (i = 0; i < n; i++) used[leaf[r2n[i]]] = 1
			L = 0; for (k in used) L++
			mc = (L > 1) ? n + L : n
			nroot = reps < n ? reps : n
			for (r = 0; r < nroot; r++) {
				for (v = 1; v < n; v++) {
					lsb = 1	# v & (v - 1) without gawk
					while (v % (2 * lsb) == 0) lsb *= 2
					p = v - lsb
					a = r2n[(v + r) % n]; b = r2n[(p + r) % n]
					bh += (leaf[a] == leaf[b]) ? 2 : 4
				}
				mt += mc
			}
			printf "%.3f %d %d\n", mt / bh, mc, bh / nroot
		}' "$OUT/host_leaf.txt" -
}

echo "place,ranks,algo,loss,size,reps,median_us,max_us,link_bytes_per_bcast,algo_used,retransmits,timeouts,floor,repairs,dropped,model_us" > "$CSV"
FAILED=0

# point PLACE N ALGO LOSS SIZE: one run; appends a CSV line.
point() {
	local place=$1 n=$2 algo=$3 loss=$4 size=$5 out rc=0 bytes med max used
	local retx tmo fl rep drops
	dp_ctl clear > /dev/null
	if [ "$loss" != 0 ]; then
		dp_ctl set loss="$loss" seed=5 > /dev/null
	fi
	dp_ctl reset > /dev/null
	out=$("$IBMCAST_RUN" -n "$n" --nodes "$(nodes_for "$place" "$n")" \
		--job "$(jobid "$place" "$n")" \
		--timeout 600 -- "$BCAST_CHECK" --timing --sizes "$size" \
		--reps "$REPS" --algo "$algo" 2>&1) || rc=$?
	bytes=$(dp_total_link_bytes)
	# Every datagram copy the injected loss dropped (data and control).
	drops=$(dp_ctl counters | jq '.drops.loss // 0')
	dp_ctl clear > /dev/null
	if [ "$rc" != 0 ]; then
		FAILED=$((FAILED + 1))
		say "FAILED: $place $n ranks $algo loss $loss size $size (exit $rc)"
		tail -n 5 <<< "$out" >&2
		return 1
	fi
	med=$(grep -oE ' median_us=[0-9.]+' <<< "$out" | cut -d= -f2)
	max=$(grep -oE ' max_us=[0-9.]+' <<< "$out" | cut -d= -f2)
	# modeled time (ibmcast-dataplane(8), MODELED TIME): median of the
	# repetitions, from the common start to the last rank's return
	model=$(grep -oE ' model_us=[0-9.]+' <<< "$out" | cut -d= -f2)
	used=$(grep -oE 'algo=[a-z]+' <<< "$out" | tail -n 1 | cut -d= -f2)
	retx=$(grep -oE 'retransmits=[0-9]+' <<< "$out" | cut -d= -f2)
	tmo=$(grep -oE 'timeouts=[0-9]+' <<< "$out" | cut -d= -f2)
	rep=$(grep -oE 'repairs=[0-9]+' <<< "$out" | cut -d= -f2)
	fl=$(floor_ratio "$place" "$n" | cut -d' ' -f1)
	echo "$place,$n,$algo,$loss,$size,$REPS,$med,$max,$((bytes / REPS)),$used,$retx,$tmo,$fl,$rep,$drops,$model" >> "$CSV"
	say "$(printf '%-7s %3d ranks %-8s loss %-4s %8d B: %10s us median wall, %9s us modeled, %12d link bytes/bcast (%s) retx %s repairs %s timeouts %s dropped %s' \
		"$place" "$n" "$algo" "$loss" "$size" "$med" "${model:--}" $((bytes / REPS)) "$used" "$retx" "$rep" "$tmo" "$drops")"
}

[ "$LOADED_ONLY" = 1 ] && SIZES=()
for place in "${PLACES[@]}"; do
	for n in "${RANKS[@]}"; do
		[ "$place" = scatter ] && [ "$n" -ge "$HOSTS" ] && continue
		for size in "${SIZES[@]}"; do
			for algo in "${ALGOS[@]}"; do
				point "$place" "$n" "$algo" 0 "$size"
			done
		done
	done
done
LOSS_N=32
say "5% loss, multicast, $LOSS_N ranks, contiguous"
for size in "${SIZES[@]}"; do
	[ "$size" -ge 4096 ] || continue
	point contig "$LOSS_N" mcast 0.05 "$size"
done

# ---- the busy host ----------------------------------------------------------
LCSV=$OUT/results-loaded.csv
if [ "$LOADED" -gt 0 ]; then
	cpu_hogs_start "$LOADED"
	say "busy host: $LOADED CPU hogs (PIDs ${CPU_HOGS[*]}) on $(nproc) cores"
	MAIN_CSV=$CSV
	CSV=$LCSV
	head -n 1 "$MAIN_CSV" > "$CSV"
	point contig "$LOSS_N" mcast 0 8
	point contig "$LOSS_N" binomial 0 8
	point contig "$LOSS_N" mcast 0 4096
	point contig "$LOSS_N" mcast 0.05 4096
	cpu_hogs_stop
	CSV=$MAIN_CSV
	say "hogs stopped"
fi

# ---- table and targets ----------------------------------------------------
echo
echo "broadcast on a $HOSTS-host 2-level fat tree (radix 16), one rank per node, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "time = from the first rank's start to the last rank's return (median of $REPS);"
echo "link bytes = every link's bytes in the data plane per broadcast (data, acks, repairs)"
echo
awk -F, '
NR == 1 { next }
$4 == 0 { k = $1 SUBSEP $2 SUBSEP $5
	  t[k, $3] = $7; b[k, $3] = $9; u[k, $3] = $10; fl[k] = $13
	  if (!(k in seen)) { seen[k] = 1; key[nk++] = k } }
END {
	printf "%-7s %5s %8s | %11s %11s | %12s %12s | %6s %6s %6s\n", "place",
		"ranks", "size", "mcast us", "binom us", "mcast bytes",
		"binom bytes", "time", "bytes", "floor"
	printf "%-7s %5s %8s | %11s %11s | %12s %12s | %6s %6s %6s\n", "", "",
		"", "", "", "", "", "ratio", "ratio", ""
	for (i = 0; i < nk; i++) {
		k = key[i]; split(k, f, SUBSEP)
		printf "%-7s %5d %8d | %11.1f %11.1f | %12d %12d | %6.2f %6.2f %6.2f%s\n",
			f[1], f[2], f[3], t[k, "mcast"], t[k, "binomial"],
			b[k, "mcast"], b[k, "binomial"],
			(t[k, "binomial"] > 0 ? t[k, "mcast"] / t[k, "binomial"] : 0),
			(b[k, "binomial"] > 0 ? b[k, "mcast"] / b[k, "binomial"] : 0),
			fl[k], u[k, "mcast"] != "mcast" ? "  (mcast run used " u[k, "mcast"] ")" : ""
	}
}' "$CSV"
echo
echo "multicast, $LOSS_N ranks contiguous, loss-free and under 5% loss (totals over $REPS broadcasts:"
echo "dropped = datagram copies the data plane dropped, data and control; retransmits ="
echo "data fragments sent again, by the root or by parents as repairs)"
awk -F, '
NR == 1 { next }
$3 == "mcast" && $1 == "contig" { k = $2 SUBSEP $5; t[k, $4 != 0] = $7; r[k, $4 != 0] = $11
	  o[k, $4 != 0] = $12; d[k, $4 != 0] = $15; if ($4 != 0) { lk[nl++] = k } }
END {
	printf "%5s %8s | %10s %10s %6s | %8s %8s %8s | %8s %8s\n", "ranks", "size",
		"free us", "loss us", "ratio", "dropped", "retx", "timeouts", "free", "free"
	printf "%5s %8s | %10s %10s %6s | %8s %8s %8s | %8s %8s\n", "", "", "", "", "",
		"(loss)", "(loss)", "(loss)", "retx", "timeouts"
	for (i = 0; i < nl; i++) {
		k = lk[i]; split(k, f, SUBSEP)
		printf "%5d %8d | %10.1f %10.1f %6.2f | %8d %8d %8d | %8d %8d\n", f[1], f[2],
			t[k, 0], t[k, 1], (t[k, 0] > 0 ? t[k, 1] / t[k, 0] : 0),
			d[k, 1], r[k, 1], o[k, 1], r[k, 0], o[k, 0]
	}
}' "$CSV"
echo
echo "floor = link traversals of the multicast tree / of the binomial tree for this"
echo "placement and these roots: the best bytes ratio with zero protocol overhead"
echo
echo "targets"
awk -F, -v n="$LOSS_N" '
NR == 1 { next }
$4 == 0 { t[$1, $2, $5, $3] = $7; b[$1, $2, $5, $3] = $9; fl[$1, $2, $5] = $13
	  m[$1, $2, $5, $3] = $16 }
$4 != 0 { l[$1, $2, $5] = $7 }
END {
	ok1 = 1; seen1 = 0
	for (k in b) {
		split(k, f, SUBSEP)
		if (f[2] != n || f[3] < 4096 || f[4] != "mcast") continue
		if (!((f[1], f[2], f[3], "binomial") in b)) continue
		r = (b[f[1], f[2], f[3], "binomial"] > 0) ? b[k] / b[f[1], f[2], f[3], "binomial"] : 9
		seen1 = 1
		printf "  %-7s %d ranks, %7d B: multicast link bytes / binomial = %.2f (target <= 0.50; zero-overhead floor %.2f)  %s\n",
			f[1], f[2], f[3], r, fl[f[1], f[2], f[3]], r <= 0.5 ? "met" : "NOT met"
		if (r > 0.5) ok1 = 0
	}
	ok2 = 1; seen2 = 0
	for (k in l) {
		split(k, f, SUBSEP)
		base = t[f[1], f[2], f[3], "mcast"]
		if (base <= 0) continue
		seen2 = 1
		r = l[k] / base
		printf "  %-7s %d ranks, %7d B: multicast time under 5%% loss / loss-free = %.2f (target <= 2.00)  %s\n",
			f[1], f[2], f[3], r, r <= 2 ? "met" : "NOT met"
		if (r > 2) ok2 = 0
	}
	# Time, in modeled time (ibmcast-dataplane(8)): the physics says
	# multicast beats the binomial tree from about 8 ranks at a few KiB.
	# Loss recovery is not modeled, so the loss target stays on wall time.
	ok3 = 1; seen3 = 0
	for (k in m) {
		split(k, f, SUBSEP)
		if (f[2] < 8 || f[3] < 4096 || f[4] != "mcast" || m[k] == "") continue
		mb = m[f[1], f[2], f[3], "binomial"]
		if (mb == "" || mb <= 0) continue
		seen3 = 1; r = m[k] / mb
		printf "  %-7s %d ranks, %7d B: multicast modeled time / binomial = %.2f (target < 1.00)  %s\n",
			f[1], f[2], f[3], r, r < 1 ? "met" : "NOT met"
		if (r >= 1) ok3 = 0
	}
	if (!seen3) print "  modeled time target: not measured in this run"
	if (!seen1) print "  link bytes target: not measured in this run"
	if (!seen2) print "  loss recovery target: not measured in this run"
	printf "  overall: %s\n", ok1 && ok2 && ok3 && seen1 && seen2 && seen3 ? "all targets met" : "some target NOT met or not measured"
}' "$CSV"
if [ "$LOADED" -gt 0 ]; then
	echo
	echo "busy host: $LOADED CPU hogs beside $LOSS_N ranks and the data plane on $(nproc) cores"
	awk -F, '
	NR == 1 { next }
	{ t[$3, $4, $5] = $7; o[$3, $4, $5] = $12; r[$3, $4, $5] = $11
	  printf "  %-8s loss %-4s %6d B: %10.1f us median, retx %s, timeouts %s\n",
		$3, $4, $5, $7, $11, $12 }
	END {
		if (t["binomial", 0, 8] > 0) {
			q = t["mcast", 0, 8] / t["binomial", 0, 8]
			printf "  8 B loss-free, multicast / binomial = %.2f (target <= 1.50)  %s\n",
				q, q <= 1.5 ? "met" : "NOT met"
		}
		if (t["mcast", 0, 4096] > 0 && t["mcast", 0.05, 4096] > 0) {
			q = t["mcast", 0.05, 4096] / t["mcast", 0, 4096]
			printf "  4 KiB multicast, 5%% loss / loss-free = %.2f (target <= 2.00)  %s\n",
				q, q <= 2 ? "met" : "NOT met"
		}
	}' "$LCSV"
fi
echo
echo "$(($(wc -l < "$CSV") - 1)) points in $((SECONDS - T_START)) s ($FAILED failed); raw: $CSV"
[ "$FAILED" = 0 ]
