#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark (not a test): barrier latency of libibmcast's algorithms (n-way
# dissemination for n = 1..8, auto, the multicast release) on the simulated
# fabric, beside MPICH's own MPI_Barrier on this host, with each
# algorithm's rounds and messages on the critical path.
set -uo pipefail

usage() {
	cat <<'EOF'
Usage: tests/bench/barrier.sh [--quick] [--iters N] [--reps N]
           [--mpi-iters N] [--out DIR] [--builddir DIR] [--keep]

Brings up a 64-host two-level fat tree (radix 16) and, for 8, 16, 32 and
64 ranks at 1 and 2 ranks per node (ibmcast-run -k: ranks 0,1 on node1,
...; each placement reserved as its own job on exactly its nodes), runs
tests/libjob/barrier_check --timing with nway:1 .. nway:8, auto and mcast;
then tests/mpi/barrier_time_mpi (MPI_Barrier, no shim) under MPICH's mpiexec
with as many ranks, all on this host. Latency of one barrier = the last
rank's exit - the last rank's entry (skew taken out), median over the
barriers of a run; each point is run --reps times, the algorithms taking
turns, and the median run counts. Prints one table, the critical paths,
and the targets:
  - auto's choice is never slower than nway:1;
  - at 64 ranks the best algorithm is at least 1.4x faster than MPICH.

  --quick          3 runs of 60 barriers a point, 10 for MPICH (3 to 4
                   minutes on 2 cores)
  --iters N        barriers per run (default 300)
  --reps N         runs per point (default 5)
  --mpi-iters N    MPI_Barriers per point (default 40; MPICH busy-polls,
                   and 64 ranks on few cores take long per barrier)
  --out DIR        also write results.csv there (default ./bench-barrier)
  --builddir DIR   the build tree (default $IBMCAST_BUILDDIR, else the
                   source tree built in place)
  --keep           keep the fabric's state directory (logs)
EOF
}

ITERS=300
REPS=5
MPI_ITERS=40
OUT=./bench-barrier
# shellcheck source=tests/bench/options.sh
. "$(dirname "${BASH_SOURCE[0]}")/options.sh"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) ITERS=60; REPS=3; MPI_ITERS=10 ;;
	--iters) ITERS=${2:?--iters needs a number}; shift ;;
	--reps) REPS=${2:?--reps needs a number}; shift ;;
	--mpi-iters) MPI_ITERS=${2:?--mpi-iters needs a number}; shift ;;
	*) bench_option "$@"; shift "$BENCH_SHIFT"; continue ;;
	esac
	shift
done
for v in "$ITERS" "$REPS" "$MPI_ITERS"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "iterations: a positive number" >&2; exit 64; }
done
[ "$ITERS" -ge 2 ] || { echo "--iters: at least 2 (the first is a warm-up)" >&2; exit 64; }

# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
# shellcheck source=tests/lib-libjob.sh
. "$top_srcdir/tests/lib-libjob.sh"
BARRIER_CHECK=$top_builddir/tests/libjob/barrier_check
BARRIER_MPI=$top_builddir/tests/mpi/barrier_time_mpi
bench_need "$BARRIER_CHECK" "make check builds barrier_check"
# MPICH's launcher by its own name (the plain mpiexec may be Open MPI's).
MPIEXEC=$(command -v mpiexec.mpich || true)
MPI_WHY=
if [ -z "$MPIEXEC" ]; then
	MPI_WHY="no mpiexec.mpich (Debian package mpich)"
elif [ ! -x "$BARRIER_MPI" ]; then
	MPI_WHY="$BARRIER_MPI not built (configure found no MPI?)"
fi

RANKS=(8 16 32 64)
PERNODE=(1 2)
ALGOS=(nway:1 nway:2 nway:3 nway:4 nway:5 nway:6 nway:7 nway:8 auto mcast)
HOSTS=64

bench_start "$OUT"

bench_fabric_up "$HOSTS"
export IBMCAST_BCAST_TIMEOUT_MS=60000

jobid() { echo $((700 + 2 * $1 + $2)); }	# RANKS PER_NODE
nodes() { echo "node[1-$(($1 / $2))]"; }	# RANKS PER_NODE
for n in "${RANKS[@]}"; do
	for k in "${PERNODE[@]}"; do
		libjob_reserve "$(jobid "$n" "$k")" "$(nodes "$n" "$k")" 1 ||
			{ echo "job for $n ranks at $k per node not ready" >&2; exit 1; }
	done
done
say "jobs ready: ${RANKS[*]} ranks at ${PERNODE[*]} per node"
# A few multicast releases per job first: the data plane reads a new
# group's MFTs within its refresh bound, and a release sent before that
# reaches nobody (then repaired by repeated reports). Steady state is what
# is measured.
for n in "${RANKS[@]}"; do
	for k in "${PERNODE[@]}"; do
		"$IBMCAST_RUN" -n "$n" -k "$k" --nodes "$(nodes "$n" "$k")" \
			--job "$(jobid "$n" "$k")" --timeout 300 -- \
			"$BARRIER_CHECK" --algo mcast --iters 5 --quiet \
			> /dev/null 2>&1 || say "warm-up of $n x $k failed"
	done
done
say "warm-up done; $REPS runs of $ITERS barriers a point (the first barrier, where auto measures, not timed)"

echo "ranks,per_node,algo,rep,used,iters,median_us,min_us,p90_us,loop_us,rounds,msgs_per_rank,critical,packets_per_barrier,pulls,model_us" > "$CSV"
FAILED=0

# kv KEY TEXT: the value of KEY=VALUE in TEXT.
kv() { grep -oE "(^|[ ])$1=[^ ]+" <<< "$2" | tail -n 1 | cut -d= -f2; }

# point N K ALGO REP: one barrier_check run; appends a CSV line.
point() {
	local n=$1 k=$2 algo=$3 rep=$4 out rc=0 t
	out=$("$IBMCAST_RUN" -n "$n" -k "$k" --nodes "$(nodes "$n" "$k")" \
		--job "$(jobid "$n" "$k")" --timeout 600 -- "$BARRIER_CHECK" \
		--timing --quiet --iters "$ITERS" --algo "$algo" 2>&1) || rc=$?
	t=$(grep '^time ' <<< "$out")
	if [ "$rc" != 0 ] || [ -z "$t" ]; then
		FAILED=$((FAILED + 1))
		say "FAILED: $n ranks x $k $algo (exit $rc)"
		tail -n 5 <<< "$out" >&2
		return 1
	fi
	echo "$n,$k,$algo,$rep,$(kv used "$t"),$(kv iters "$t"),$(kv median_us "$t"),$(kv min_us "$t"),$(kv p90_us "$t"),$(kv loop_us "$t"),$(kv rounds "$t"),$(kv msgs_per_rank "$t"),$(kv critical "$t"),$(kv packets_per_barrier "$out"),$(kv pulls "$out"),$(kv model_us "$t")" >> "$CSV"
	say "$(printf '%2d ranks x%d %-7s run %d: median %8s us  min %8s us  modeled %7s us  (used %s, %s rounds, %s msgs/rank, %s packets/barrier)' \
		"$n" "$k" "$algo" "$rep" "$(kv median_us "$t")" "$(kv min_us "$t")" \
		"$(kv model_us "$t")" \
		"$(kv used "$t")" "$(kv rounds "$t")" "$(kv msgs_per_rank "$t")" \
		"$(kv packets_per_barrier "$out")")"
}

# mpi_point N: MPICH's MPI_Barrier on N ranks of this host.
mpi_point() {
	local n=$1 out rc=0 t
	out=$(env -u LD_PRELOAD timeout 1800 "$MPIEXEC" -n "$n" "$BARRIER_MPI" \
		--iters "$MPI_ITERS" --warmup 2 < /dev/null 2>&1) || rc=$?
	t=$(grep '^time ' <<< "$out")
	if [ "$rc" != 0 ] || [ -z "$t" ]; then
		FAILED=$((FAILED + 1))
		say "FAILED: MPICH $n ranks (exit $rc)"
		tail -n 5 <<< "$out" >&2
		return 1
	fi
	echo "$n,0,mpich,1,mpi,$(kv iters "$t"),$(kv median_us "$t"),$(kv min_us "$t"),$(kv p90_us "$t"),$(kv loop_us "$t"),,,,,," >> "$CSV"
	say "$(printf '%2d ranks    MPICH   median %8s us  min %8s us  (%s barriers)' \
		"$n" "$(kv median_us "$t")" "$(kv min_us "$t")" "$MPI_ITERS")"
}

for n in "${RANKS[@]}"; do
	for k in "${PERNODE[@]}"; do
		# The algorithms take turns, each run starting at another one,
		# so a slow spell of the shared host does not fall on one alone.
		for ((rep = 1; rep <= REPS; rep++)); do
			for ((a = 0; a < ${#ALGOS[@]}; a++)); do
				algo=${ALGOS[(a + 3 * (rep - 1)) % ${#ALGOS[@]}]}
				point "$n" "$k" "$algo" "$rep"
			done
		done
	done
done
if [ -z "$MPI_WHY" ]; then
	say "MPICH's MPI_Barrier, no shim, $MPI_ITERS barriers a point ($MPIEXEC)"
	# 2 ranks: MPICH's barrier when the cores are not oversubscribed.
	for n in 2 "${RANKS[@]}"; do
		mpi_point "$n"
	done
else
	say "MPICH skipped: $MPI_WHY"
fi

# ---- table and targets ----------------------------------------------------
# agg.csv: per point the median run (by its median latency; the lower of
# the middle two for an even count), with every choice auto made.
AGG=$OUT/agg.csv
awk -F, '
NR == 1 { next }
{	k = $1 SUBSEP $2 SUBSEP $3
	if (!(k in n)) { keys[nk++] = k; n[k] = 0 }
	row[k, n[k]] = $0; val[k, n[k]] = $7 + 0; n[k]++
	u = $5; sub(/^nway:/, "n", u)
	if (index("/" ch[k] "/", "/" u "/") == 0) ch[k] = ch[k] (ch[k] == "" ? "" : "/") u
}
END {
	for (i = 0; i < nk; i++) {
		k = keys[i]; c = n[k]
		for (a = 0; a < c; a++) idx[a] = a
		for (a = 1; a < c; a++)	# insertion sort of the runs by latency
			for (b = a; b > 0 && val[k, idx[b - 1]] > val[k, idx[b]]; b--) {
				t = idx[b]; idx[b] = idx[b - 1]; idx[b - 1] = t
			}
		split(row[k, idx[int((c - 1) / 2)]], f, ",")
		# ranks,per_node,algo,median_us,used,rounds,msgs,runs,choices,
		# model_us (of the same run: modeled time hardly varies)
		print f[1] "," f[2] "," f[3] "," f[7] "," f[5] "," f[11] "," f[12] "," c "," ch[k] "," f[16]
	}
}' "$CSV" > "$AGG"

# grid_table COL FORMAT PATHS ALGOS...: one row per algorithm, one column
# per ranks x ranks per node, of agg.csv's column COL printed with FORMAT;
# PATHS=1 adds each algorithm's path per rank count and auto's choices.
grid_table() {
	local col=$1 fmt=$2 paths=$3
	shift 3
	awk -F, -v ranks="${RANKS[*]}" -v pernode="${PERNODE[*]}" \
		-v algos="$*" -v col="$col" -v fmt="$fmt" -v paths="$paths" '
{ v[$1, $2, $3] = $col; used[$1, $2, $3] = $5; r[$1, $2, $3] = $6
  m[$1, $2, $3] = $7; ch[$1, $2, $3] = $9 }
END {
	nr = split(ranks, R, " "); nk = split(pernode, K, " ")
	na = split(algos, A, " ")
	printf "%-8s |", "algo"
	for (i = 1; i <= nr; i++) for (j = 1; j <= nk; j++)
		printf " %8s", R[i] "x" K[j]
	if (paths) {
		printf " |"
		for (i = 1; i <= nr; i++) printf " %9s", "path@" R[i]
	}
	printf "\n"
	for (a = 1; a <= na; a++) {
		al = A[a]
		printf "%-8s |", al == "mpich" ? "MPICH" : al
		for (i = 1; i <= nr; i++) for (j = 1; j <= nk; j++) {
			kk = al == "mpich" ? 0 : K[j]
			x = v[R[i], kk, al]
			printf " %8s", x == "" ? "-" : sprintf(fmt, x)
		}
		if (paths) {
			printf " |"
			for (i = 1; i <= nr; i++) {
				u = used[R[i], 1, al]
				if (al == "mpich" || u == "") p = "-"
				else if (u == "mcast") p = (r[R[i], 1, al] - 1) "+1mc"
				else p = r[R[i], 1, al] "/" m[R[i], 1, al]
				if (al != "mpich" && u != al && u != "" && al != "auto")
					p = p "(" u ")"
				printf " %9s", p
			}
		}
		printf "\n"
		if (paths && al == "auto") {
			printf "%-8s |", " chose"
			for (i = 1; i <= nr; i++) for (j = 1; j <= nk; j++) {
				u = ch[R[i], K[j], "auto"]
				printf " %8s", u == "" ? "-" : u
			}
			printf " |\n"
		}
	}
}' "$AGG"
}

NCORES=$(nproc 2> /dev/null || echo '?')
echo
echo "barrier latency on a $HOSTS-host 2-level fat tree (radix 16), $(date -u '+%Y-%m-%d %H:%M UTC'), $NCORES cores"
echo "latency = last rank's exit - last rank's entry, us: median over $((ITERS - 1)) barriers, median of"
echo "$REPS runs (MPICH: $MPI_ITERS barriers, 1 run); columns: ranks x ranks per node;"
echo "path = rounds/messages per rank (nway), levels of arrivals + 1 multicast (mcast)"
echo
grid_table 4 "%.0f" 1 "${ALGOS[@]}" mpich
echo
echo "auto: the choices of its runs (n3 = nway:3; auto measures again in every run)."
echo "nway:N with N >= P-1 runs as nway:(P-1) (in brackets)."
echo "MPICH: one run per rank count, all ranks on this host (ch4, shared memory), so"
echo "the same figure stands under both placements; it busy-polls, and $NCORES cores"
echo "carry every rank: $(awk -F, '$3 == "mpich" && $1 == 2 { printf "at 2 ranks (no oversubscription) its barrier takes %.1f us", $4 }' "$AGG")"
echo
echo "NOTE: the simulated data plane forwards one packet at a time, so the n"
echo "messages of a dissemination round are carried one after another: the network"
echo "parallelism that is the point of n-way dissemination cannot show in wall time,"
echo "and a larger n only adds messages. Modeled time follows (ibmcast-dataplane(8))."
echo
echo "modeled time per barrier, us (the slowest rank, timed barriers back to back;"
echo "the model's o_s is paid once per message, so n messages of a round queue at the"
echo "sender as on a real HCA; MPICH runs on no fabric and has none)"
grid_table 10 "%.2f" 0 "${ALGOS[@]}"
echo
echo "targets"
awk -F, -v ranks="${RANKS[*]}" -v pernode="${PERNODE[*]}" '
{ med[$1, $2, $3] = $4; used[$1, $2, $3] = $5; ch[$1, $2, $3] = $9
  mod[$1, $2, $3] = $10 }
END {
	nr = split(ranks, R, " "); nk = split(pernode, K, " ")
	ok1 = 1; seen1 = 0
	# auto against nway:1 on modeled time, which the host does not move
	for (i = 1; i <= nr; i++) for (j = 1; j <= nk; j++) {
		a = mod[R[i], K[j], "auto"]; b = mod[R[i], K[j], "nway:1"]
		if (a == "" || b == "") continue
		seen1 = 1
		printf "  %2d ranks x%d: modeled auto (chose %s) %.2f us / nway:1 %.2f us = %.2f (target <= 1.00)  %s\n",
			R[i], K[j], ch[R[i], K[j], "auto"], a, b, a / b,
			(a + 0 <= b + 0 ? "met" : "NOT met")
		if (a + 0 > b + 0) ok1 = 0
	}
	for (i = 1; i <= nr; i++) for (j = 1; j <= nk; j++) {
		a = med[R[i], K[j], "auto"]; b = med[R[i], K[j], "nway:1"]
		if (a == "" || b == "") continue
		# wall time: reported, judged only where no model ran
		printf "  %2d ranks x%d: wall auto (chose %s) %.0f us / nway:1 %.0f us = %.2f%s\n",
			R[i], K[j], ch[R[i], K[j], "auto"], a, b, a / b,
			mod[R[i], K[j], "auto"] == "" ? (a + 0 <= b + 0 ? "  met" : "  NOT met") : ""
		if (mod[R[i], K[j], "auto"] == "") { seen1 = 1; if (a + 0 > b + 0) ok1 = 0 }
	}
	ok2 = 1; seen2 = 0
	mp = med[64, 0, "mpich"]
	for (j = 1; j <= nk; j++) {
		best = ""; ba = ""
		for (key in med) {
			split(key, q, SUBSEP)
			if (q[1] != 64 || q[2] != K[j] || q[3] == "mpich") continue
			if (best == "" || med[key] + 0 < best + 0) { best = med[key]; ba = q[3] }
		}
		if (best == "" || mp == "") continue
		seen2 = 1
		printf "  64 ranks x%d: MPICH %.0f us / best (%s) %.0f us = %.1fx (target >= 1.4)  %s\n",
			K[j], mp, ba, best, mp / best, (mp / best >= 1.4 ? "met" : "NOT met")
		if (mp / best < 1.4) ok2 = 0
	}
	if (!seen1) print "  auto vs nway:1: not measured in this run"
	if (!seen2) print "  64 ranks vs MPICH: not measured in this run"
	printf "  overall: %s\n", ok1 && ok2 && seen1 && seen2 ? "all targets met" : "some target NOT met or not measured"
}' "$AGG"
echo "  (MPICH figures are its barrier on $NCORES oversubscribed cores, not on a fabric:"
echo "  the second verdict says little about the algorithms)"
echo
echo "$(($(wc -l < "$CSV") - 1)) runs in $((SECONDS - T_START)) s ($FAILED failed); raw: $CSV, medians: $AGG"
[ "$FAILED" = 0 ]
