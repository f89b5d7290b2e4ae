#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark (not a test): seed 001's process skew (section 7.3, Figs. 7-8).
# How long ranks spend inside ibmc_bcast when they call it at random times:
# multicast with the early return, multicast synchronizing, binomial tree.
set -uo pipefail

usage() {
	cat <<'EOF'
Usage: tests/bench/bcast_skew.sh [--quick] [--reps N] [--iters N]
           [--out DIR] [--builddir DIR] [--keep]

Brings up a 32-host two-level fat tree (radix 16) with real OpenSM, the
plugin and the data plane, reserves a job of 16 and one of 32 nodes (one
rank per node), and runs tests/libjob/bcast_skew under ibmcast-run. Per
iteration every rank enters ibmc_barrier, then every non-root rank sleeps a
skew drawn uniformly from [0, max] (seeded per rank and repetition, the same
draws in every configuration), then all call ibmc_bcast (the root rotates);
each rank times its own call. Reported: the average time inside ibmc_bcast
over every rank and iteration, and the root's alone.

The average skew is seed 001's: the expected distance between two non-root
ranks' skews, max/3. It is set per size as a multiple (0, 1, 2, 5, 10) of
the size's loss-free broadcast time T, measured first at skew 0: the root's
time inside a synchronizing multicast broadcast (until every member holds
the data).

Three configurations, each run on the same skews:
  early     multicast, early return (the default)
  sync      multicast, IBMCAST_BCAST_SYNC=1 (the root waits for everyone)
  binomial  the binomial point-to-point tree, early return

Prints one table per rank count and the target's verdict: with the early
return, the time inside the multicast broadcast stays within 1.5x of its
skew-free value at every skew (the worst ratio per size, as a range over
repetitions).

  --quick          16 ranks, 2 B and 8 KiB, skews 0, 2 and 10 T (about a minute)
  --reps N         repetitions of every run, each with its own draws and its
                   own skew-free value (default 1)
  --iters N        broadcasts per point and run (default 60)
  --out DIR        also write results.csv and the runs' output there
                   (default ./bench-bcast-skew)
  --builddir DIR   the build tree (default $IBMCAST_BUILDDIR, else the
                   source tree built in place)
  --keep           keep the fabric's state directory (logs)
EOF
}

QUICK=0
REPS=1
ITERS=60
OUT=./bench-bcast-skew
# shellcheck source=tests/bench/options.sh
. "$(dirname "${BASH_SOURCE[0]}")/options.sh"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--reps) REPS=${2:?--reps needs a number}; shift ;;
	--iters) ITERS=${2:?--iters needs a number}; shift ;;
	*) bench_option "$@"; shift "$BENCH_SHIFT"; continue ;;
	esac
	shift
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "--reps: a positive number" >&2; exit 64; }
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || { echo "--iters: a positive number" >&2; exit 64; }

# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
# shellcheck source=tests/lib-libjob.sh
. "$top_srcdir/tests/lib-libjob.sh"
BCAST_SKEW=$top_builddir/tests/libjob/bcast_skew
bench_need "$BCAST_SKEW" "make check builds bcast_skew"

if [ "$QUICK" = 1 ]; then
	RANKS=(16)
	SIZES=(2 8192)
	SKEWS=(0 2 10)
else
	RANKS=(16 32)
	SIZES=(2 64 1024 8192)
	SKEWS=(0 1 2 5 10)
fi
# sync first: its skew-0 point is the loss-free time the skews scale with.
CONFIGS=(sync early binomial)
HOSTS=32

bench_start "$OUT"
mkdir -p "$OUT/runs" || exit 1
list() { local IFS=,; echo "$*"; }

# The launcher of the run in progress: stopped (it stops its ranks) on any
# exit, before the fabric goes down (at_exit runs last registered first).
RUN_PID=
stop_run() {
	[ -n "$RUN_PID" ] || return 0
	kill -TERM "$RUN_PID" 2> /dev/null
	wait "$RUN_PID" 2> /dev/null
	RUN_PID=
}

bench_fabric_up "$HOSTS"
at_exit stop_run
# No broadcast may hang, and none may time out under the longest skew.
export IBMCAST_BCAST_TIMEOUT_MS=60000

nodes_for() { seq 1 "$1" | sed 's/^/node/' | paste -sd, -; }
jobid() { echo $((700 + $1)); }
for n in "${RANKS[@]}"; do
	libjob_reserve "$(jobid "$n")" "$(nodes_for "$n")" 1 ||
		{ echo "job for $n nodes not ready" >&2; exit 1; }
done
say "jobs ready: ${RANKS[*]} nodes"

# A run's point lines as progress: the times, the longest call, and what
# the protocol had to recover.
show_points() {
	awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	       printf "  %5d B  skew %4s T: avg %9.1f us, root %9.1f us, longest %9.1f us; retransmits %s, repairs %s, timeouts %s, pulls %s\n",
		v["size"], v["skew_x"], v["all_us"], v["root_us"], v["longest_us"],
		v["retransmits"], v["repairs"], v["timeouts"], v["pulls"] }'
}

# run N LOG ENV... -- bcast_skew options: one launcher in the background
# (so that a signal stops it at once), its point lines shown as they come.
run() {
	local n=$1 log=$2 rc seen=0 lines envs=()
	shift 2
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	env "${envs[@]}" "$IBMCAST_RUN" -n "$n" --nodes "$(nodes_for "$n")" \
		--job "$(jobid "$n")" --timeout 900 -- "$BCAST_SKEW" "$@" \
		> "$log" 2>&1 &
	RUN_PID=$!
	while kill -0 "$RUN_PID" 2> /dev/null; do
		sleep 1
		lines=$(grep -c '^point ' "$log")
		if [ "$lines" -gt "$seen" ]; then
			grep '^point ' "$log" | sed -n "$((seen + 1)),${lines}p" |
				show_points
			seen=$lines
		fi
	done
	wait "$RUN_PID"
	rc=$?
	RUN_PID=
	grep '^point ' "$log" | sed -n "$((seen + 1)),\$p" |
		show_points
	return "$rc"
}

# One untimed run per job first: the data plane reads a new group's MFTs
# within its staleness bound, and a multicast sent before that reaches
# nobody (every member is then repaired by unicast).
for n in "${RANKS[@]}"; do
	run "$n" "$OUT/runs/warmup-$n.log" IBMCAST_BCAST_SYNC=0 -- \
		--sizes 2 --iters 3 --algo mcast > /dev/null ||
		say "warm-up of $n ranks failed"
done
say "warm-up broadcasts done"

echo "ranks,rep,config,size,skew_x,avg_skew_us,all_us,root_us,member_us,delay_us,algo,mcast,calls,bad,longest_us,retransmits,repairs,timeouts,pulls,model_all_us" > "$CSV"
FAILED=0
for n in "${RANKS[@]}"; do
	BASE=auto
	for ((rep = 1; rep <= REPS; rep++)); do
		for cfg in "${CONFIGS[@]}"; do
			case $cfg in
			early) env=(IBMCAST_BCAST_SYNC=0); algo=mcast ;;
			sync) env=(IBMCAST_BCAST_SYNC=1); algo=mcast ;;
			binomial) env=(IBMCAST_BCAST_SYNC=0); algo=binomial ;;
			esac
			log=$OUT/runs/$n-$rep-$cfg.log
			say "$n ranks, repetition $rep/$REPS, $cfg (skews $(list "${SKEWS[@]}") x T)"
			if ! run "$n" "$log" "${env[@]}" -- \
				--sizes "$(list "${SIZES[@]}")" \
				--skew-x "$(list "${SKEWS[@]}")" --base-us "$BASE" \
				--iters "$ITERS" --algo "$algo" --seed "$rep"; then
				FAILED=$((FAILED + 1))
				say "FAILED: $n ranks, $cfg, repetition $rep (output: $log)"
				tail -n 5 "$log" >&2
			fi
			if [ "$BASE" = auto ]; then
				BASE=$(sed -n 's/^base size=[0-9]* us=//p' "$log" |
					paste -sd, -)
				[ -n "$BASE" ] ||
					{ echo "no skew-free time measured" >&2; exit 1; }
				say "loss-free time T per size ($(list "${SIZES[@]}") B): $BASE us"
			fi
			grep '^point ' "$log" | awk -v n="$n" -v rep="$rep" \
				-v cfg="$cfg" '
				{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
				  printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", n,
					rep, cfg, v["size"], v["skew_x"], v["avg_skew_us"],
					v["all_us"], v["root_us"], v["member_us"],
					v["delay_us"], v["algo"], v["mcast"], v["calls"],
					v["bad"], v["longest_us"], v["retransmits"],
					v["repairs"], v["timeouts"], v["pulls"],
					v["model_all_us"] }' >> "$CSV"
		done
	done
done

# ---- tables and target ----------------------------------------------------
echo
echo "process skew (seed 001, Figs. 7-8): time inside ibmc_bcast, one rank per node,"
echo "$HOSTS-host 2-level fat tree, $(date -u '+%Y-%m-%d %H:%M UTC'); $ITERS broadcasts per point,"
echo "mean of $REPS repetition(s). T = the size's loss-free broadcast time; avg skew ="
echo "expected distance between two ranks' skews (max/3). Columns: average over every"
echo "rank and broadcast (us) and its ratio to the same configuration at skew 0;"
echo "root = the root's own time (us)."
for n in "${RANKS[@]}"; do
	echo
	echo "$n ranks"
	awk -F, -v n="$n" '
	NR == 1 || $1 != n { next }
	{ k = $4 SUBSEP $5
	  if (!(k in seen)) { seen[k] = 1; key[nk++] = k; sk[k] = $6 }
	  all[k, $3] += $7; root[k, $3] += $8; cnt[k, $3]++
	  if ($5 == 0) { z[$4, $3] += $7; zc[$4, $3]++ }
	  if ($12 + 0 < $13 + 0 && $3 != "binomial") nomc[k, $3] = 1 }
	function avg(k, c) { return cnt[k, c] ? all[k, c] / cnt[k, c] : 0 }
	function ratio(k, c, s) {
		return zc[s, c] && z[s, c] > 0 ? avg(k, c) / (z[s, c] / zc[s, c]) : 0
	}
	END {
		printf "%6s %6s %9s | %10s %6s | %10s %6s | %10s %6s | %9s %9s %9s\n",
			"size", "skew", "avg skew", "early", "ratio", "sync",
			"ratio", "binomial", "ratio", "root", "root", "root"
		printf "%6s %6s %9s | %10s %6s | %10s %6s | %10s %6s | %9s %9s %9s\n",
			"B", "x T", "us", "us", "", "us", "", "us", "", "early",
			"sync", "binomial"
		for (i = 0; i < nk; i++) {
			k = key[i]; split(k, f, SUBSEP)
			printf "%6d %6g %9.1f | %10.1f %6.2f | %10.1f %6.2f | %10.1f %6.2f | %9.1f %9.1f %9.1f%s\n",
				f[1], f[2], sk[k],
				avg(k, "early"), ratio(k, "early", f[1]),
				avg(k, "sync"), ratio(k, "sync", f[1]),
				avg(k, "binomial"), ratio(k, "binomial", f[1]),
				cnt[k, "early"] ? root[k, "early"] / cnt[k, "early"] : 0,
				cnt[k, "sync"] ? root[k, "sync"] / cnt[k, "sync"] : 0,
				cnt[k, "binomial"] ? root[k, "binomial"] / cnt[k, "binomial"] : 0,
				((k, "early") in nomc || (k, "sync") in nomc) ? "  (not all multicast)" : ""
		}
	}' "$CSV"
done

echo
echo "target: with the early return, time inside the multicast broadcast <= 1.5x its"
echo "skew-free value at every skew (worst ratio over the skews per size; the range"
echo "over repetitions, each against its own skew-free value)"
awk -F, '
NR == 1 { next }
{ t[$1, $2, $3, $4, $5] = $7
  if (!(($1, $4) in seen)) { seen[$1, $4] = 1; key[nk++] = $1 SUBSEP $4 }
  if ($2 > reps) reps = $2 }
END {
	ok = 1
	for (i = 0; i < nk; i++) {
		split(key[i], f, SUBSEP)
		line = sprintf("  %2d ranks %5d B:", f[1], f[2])
		split("early sync binomial", cf, " ")
		for (c = 1; c <= 3; c++) {
			lo = -1; hi = -1
			for (r = 1; r <= reps; r++) {
				base = t[f[1], r, cf[c], f[2], 0]
				if (base <= 0) continue
				w = 0
				for (kk in t) {
					split(kk, g, SUBSEP)
					if (g[1] != f[1] || g[2] != r || g[3] != cf[c] || g[4] != f[2] || g[5] == 0)
						continue
					if (t[kk] / base > w) w = t[kk] / base
				}
				if (lo < 0 || w < lo) lo = w
				if (w > hi) hi = w
			}
			if (hi < 0) { rng = "n/a"; if (c == 1) ok = 0 }
			else if (sprintf("%.2f", lo) == sprintf("%.2f", hi)) rng = sprintf("%.2f", hi)
			else rng = sprintf("%.2f-%.2f", lo, hi)
			line = line sprintf("  %s %-9s", cf[c], rng)
			if (c == 1) { verdict = (hi >= 0 && hi <= 1.5) ? "met" : "NOT met"; if (verdict != "met") ok = 0 }
		}
		printf "%s  early: %s\n", line, verdict
	}
	printf "  overall: %s\n", ok && nk ? "target met at every size and rank count" : "target NOT met"
}' "$CSV"
echo
echo "$(($(wc -l < "$CSV") - 1)) points in $((SECONDS - T_START)) s ($FAILED runs failed); raw: $CSV, $OUT/runs"
[ "$FAILED" = 0 ]
