#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark (not a test): the node-leader broadcast ("shm_mcast") against
# today's layout ("mcast", every rank on the network) at several ranks per
# node on the simulated fabric: acknowledgments and bytes on the links (the
# data plane's counters) and completion time (modeled and wall).
set -uo pipefail

usage() {
	cat <<'EOF_USAGE'
Usage: tests/bench/bcast_node.sh [--quick] [--nodes N] [--reps N]
           [--out DIR] [--builddir DIR] [--keep]

Brings up a fat tree (radix 16) and, on N nodes (default 8) at 2, 4 and
8 ranks per node, broadcasts 8 B, 4 KiB, 64 KiB and 1 MiB from rank 0 with
tests/libjob/bcast_check --timing under ibmcast-run, once with "mcast" and
once with "shm_mcast". Each point is two runs, one broadcast and 1 + reps
broadcasts, with the data plane's counters reset before each: their
difference divided by reps is one broadcast's cost, without what the
program's set-up sends. Per broadcast:
  acks   unicast packets of at most 36 bytes (the data plane's uc_small:
         libibmcast's acks, NACKs, probes; a 0-byte repair would count too)
  ucast  every unicast packet (acks plus unicast repairs)
  bytes  the bytes every link carried (data, acks, repairs)
and the median over the reps of the modeled completion time (model_us:
from the common start to the last rank's return) and of the wall time.
Prints one table with the ratios shm_mcast / mcast.

  --quick          4 nodes, 2 repetitions (a few minutes)
  --nodes N        nodes (default 8; 8 at 8 per node is 64 ranks)
  --reps N         broadcasts per point beyond the first (default 4)
  --out DIR        also write results.csv there (default ./bench-bcast-node)
  --builddir DIR   the build tree (default $IBMCAST_BUILDDIR, else the
                   source tree built in place)
  --keep           keep the fabric's state directory (logs)
EOF_USAGE
}

NODES=8
REPS=4
OUT=./bench-bcast-node
# shellcheck source=tests/bench/options.sh
. "$(dirname "${BASH_SOURCE[0]}")/options.sh"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) NODES=4; REPS=2 ;;
	--nodes) NODES=${2:?--nodes needs a number}; shift ;;
	--reps) REPS=${2:?--reps needs a number}; shift ;;
	*) bench_option "$@"; shift "$BENCH_SHIFT"; continue ;;
	esac
	shift
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "--reps: a positive number" >&2; exit 64; }
[[ $NODES =~ ^[2-9]$|^1[0-6]$ ]] || { echo "--nodes: 2 to 16" >&2; exit 64; }

# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
# shellcheck source=tests/lib-libjob.sh
. "$top_srcdir/tests/lib-libjob.sh"
bench_need "$BCAST_CHECK" "make check builds bcast_check"

PERS=(2 4 8)
SIZES=(8 4096 65536 1048576)
ALGOS=(mcast shm_mcast)
HOSTS=16

bench_start "$OUT"
bench_fabric_up "$HOSTS"
export IBMCAST_BCAST_TIMEOUT_MS=60000
NODELIST="node[1-$NODES]"
JOB=700
libjob_reserve "$JOB" "$NODELIST" 2 || { echo "job not ready" >&2; exit 1; }
# One untimed broadcast first: the data plane reads a new group's MFTs
# within its staleness bound (see bcast_links.sh).
"$IBMCAST_RUN" -n "$NODES" --nodes "$NODELIST" --job "$JOB" --timeout 600 \
	-- "$BCAST_CHECK" --sizes 8 --algo mcast > /dev/null 2>&1 ||
	say "warm-up failed"
say "job ready on $NODELIST"

echo "per_node,ranks,algo,size,reps,acks,ucast,link_bytes,model_us,median_us,algo_used" > "$CSV"
FAILED=0

# counts PER ALGO SIZE NB: one run of NB broadcasts; "acks ucast bytes
# model_us median_us used", or nothing on failure.
counts() {
	local per=$1 algo=$2 size=$3 nb=$4 out rc=0 c
	dp_ctl reset > /dev/null
	out=$("$IBMCAST_RUN" -n $((per * NODES)) --nodes "$NODELIST" -k "$per" \
		--job "$JOB" --timeout 600 -- "$BCAST_CHECK" --timing \
		--sizes "$size" --reps "$nb" --roots 0 --algo "$algo" 2>&1) ||
		rc=$?
	if [ "$rc" != 0 ]; then
		say "FAILED: $per per node $algo $size B x $nb (exit $rc)"
		tail -n 5 <<< "$out" >&2
		return 1
	fi
	c=$(dp_ctl counters | jq -r '"\(.uc_small) \(.sends - .mc_sends) \([.links[].bytes] | add // 0)"')
	echo "$c $(grep -oE ' model_us=[0-9.]+' <<< "$out" | cut -d= -f2) $(grep -oE ' median_us=[0-9.]+' <<< "$out" | cut -d= -f2) $(grep -oE 'algo=[a-z_]+' <<< "$out" | tail -n 1 | cut -d= -f2)"
}

for per in "${PERS[@]}"; do
	for size in "${SIZES[@]}"; do
		for algo in "${ALGOS[@]}"; do
			if ! one=$(counts "$per" "$algo" "$size" 1) ||
			   ! many=$(counts "$per" "$algo" "$size" $((REPS + 1))); then
				FAILED=$((FAILED + 1))
				continue
			fi
			read -r a1 u1 b1 _ _ _ <<< "$one"
			read -r a2 u2 b2 model med used <<< "$many"
			echo "$per,$((per * NODES)),$algo,$size,$REPS,$(( (a2 - a1) / REPS )),$(( (u2 - u1) / REPS )),$(( (b2 - b1) / REPS )),$model,$med,$used" >> "$CSV"
			say "$(printf '%d per node %-9s %8d B: %5d acks %5d unicast %10d link bytes per broadcast, %9s us modeled, %9s us wall (%s)' \
				"$per" "$algo" "$size" $(( (a2 - a1) / REPS )) \
				$(( (u2 - u1) / REPS )) $(( (b2 - b1) / REPS )) \
				"$model" "$med" "$used")"
		done
	done
done

echo
echo "broadcast from rank 0 on $NODES nodes of a $HOSTS-host fat tree (radix 16), mcast (every rank on the network) against shm_mcast (node leaders on the network, the rest from shared memory), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "per broadcast (difference of runs of 1 + $REPS and 1 broadcasts, / $REPS): acks = control-sized unicast packets, bytes = all links' bytes;"
echo "time = median of $REPS, modeled (model_us) and wall (median_us), from the common start to the last rank's return"
echo
awk -F, '
NR == 1 { next }
{ k = $1 SUBSEP $4; a[k, $3] = $6; u[k, $3] = $7; b[k, $3] = $8
  m[k, $3] = $9; w[k, $3] = $10; r[k] = $2
  if (!(k in seen)) { seen[k] = 1; key[nk++] = k } }
function q(x, y) { return y > 0 ? sprintf("%.2f", x / y) : "-" }
END {
	printf "%4s %5s %8s | %6s %6s %5s | %11s %11s %5s | %9s %9s %5s | %9s %9s %5s\n",
		"per", "ranks", "size", "acks", "acks", "ratio", "bytes", "bytes",
		"ratio", "model us", "model us", "ratio", "wall us", "wall us", "ratio"
	printf "%4s %5s %8s | %6s %6s %5s | %11s %11s %5s | %9s %9s %5s | %9s %9s %5s\n",
		"node", "", "", "mcast", "node", "", "mcast", "node", "", "mcast",
		"node", "", "mcast", "node", ""
	for (i = 0; i < nk; i++) {
		k = key[i]; split(k, f, SUBSEP)
		printf "%4d %5d %8d | %6d %6d %5s | %11d %11d %5s | %9.1f %9.1f %5s | %9.1f %9.1f %5s\n",
			f[1], r[k], f[2], a[k, "mcast"], a[k, "shm_mcast"],
			q(a[k, "shm_mcast"], a[k, "mcast"]),
			b[k, "mcast"], b[k, "shm_mcast"],
			q(b[k, "shm_mcast"], b[k, "mcast"]),
			m[k, "mcast"], m[k, "shm_mcast"],
			q(m[k, "shm_mcast"], m[k, "mcast"]),
			w[k, "mcast"], w[k, "shm_mcast"],
			q(w[k, "shm_mcast"], w[k, "mcast"])
	}
}' "$CSV"
echo
echo "$(($(wc -l < "$CSV") - 1)) points in $((SECONDS - T_START)) s ($FAILED failed); raw: $CSV"
[ "$FAILED" = 0 ]
