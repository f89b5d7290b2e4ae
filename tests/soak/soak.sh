#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The chaos soak (not a test; tests/integration/soak_short.sh runs its
# short variant): seeded runs of tests/soak/soak_mpi, a randomized mix of
# MPI_Bcast, MPI_Barrier, MPI_Allgather and MPI_Allreduce on communicators
# made and freed as it goes, every result checked on every rank, through
# the MPICH shim and the Open MPI component on the simulated fabric with
# real OpenSM, under loss with duplication and reordering, CPU hogs, skews,
# a rank minutes late, a rank killed, the SM restarted and a link taken
# down. Prints a line per run and the totals.
set -uo pipefail

usage() {
	cat <<'EOF'
Usage: tests/soak/soak.sh [--short] [--runs N] [--ops N] [--seed S]
           [--ranks N] [--per-node K] [--mpi mpich|ompi|both] [--plain]
           [--late-s S] [--max-bytes N] [--out DIR] [--builddir DIR]
           [--keep]

Brings up an 8-host fat tree with OpenSM, the plugin and the data plane,
reserves a pool for node[1-8], then runs soak_mpi N times. Run i takes its
faults from its index: the MPI (MPICH with libibmcast_mpi.so, Open MPI with
mca_coll_ibmcast, alternating), loss 0/2/5/10/20% (with a quarter of that
duplicated and half reordered), 0, 2 or 4 CPU hogs, skews up to 0.1, 10 or
200 ms, and one of (every second run, every run with --short): nothing; a
rank --late-s late at a random operation;
a rank killed (SIGKILL) at a random operation; the SM restarted during the
run; a leaf's uplink down during the run and back.

  --short        5 runs of 200 operations, one per fault, a rank 15 s
                 late, loss up to 5%, no hog (the suite runs two tests at
                 once: a hog beside starved the other's simulated fabric,
                 whose ibsim died)
  --runs N       runs (default 20)
  --from R       start at run R (to repeat one run: --from R --runs 1)
  --ops N        operations per run (default 2000)
  --seed S       first run's seed (default 1; run i uses S + i)
  --ranks N      ranks (default 16), --per-node K ranks per node (default 2)
  --mpi WHICH    mpich, ompi or both (default both)
  --plain        also run each MPI's own collectives (IBMCAST_MPI=0 /
                 coll_ibmcast_enable 0) under the same faults, for the
                 wall-time ratio
  --late-s S     how late the late rank is (default 300)
  --max-bytes N  largest message (default soak_mpi's, 4 MiB); small
                 messages compare per-call cost rather than the simulated
                 data plane's bandwidth
  --out DIR      results (default ./soak-results): runs.csv, one log per run
  --builddir DIR the build tree; --keep keeps the fabric's directory

Per run: collectives (every rank's checked calls, summed), wrong results,
hang (the run did not end within its bound), spurious failures (an error
in a run where no rank was killed), in a kill run the slowest
survivor's time to report it, and in a run with a rank late by 100 s or
more, the packets a second the waiting ranks' endpoints sent while they
waited (most/mean over the endpoints, 30-90 s into the wait). Exit 1 when
a run had a wrong result, a hang, a spurious failure, or a survivor that
reported a kill later than IBMCAST_DEAD_MS + 5 s.
EOF
}

RUNS=20
FROM=0
OPS=2000
SEED=1
RANKS=16
PERNODE=2
WHICH=both
PLAIN=0
LATE_S=300
MAX_BYTES=
FAULT_STEP=2	# runs per fault before the next (so both MPIs see each)
SHORT=0
LOSSES=(0 0.02 0.05 0.10 0.20)
HOGS=(0 2 4)
FAULTS=(none late kill sm-restart link-down)
OUT=./soak-results
# shellcheck source=tests/bench/options.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bench/options.sh"
while [ $# -gt 0 ]; do
	case $1 in
	--short) RUNS=5; OPS=200; LATE_S=15; FAULT_STEP=1; SHORT=1
		LOSSES=(0 0.02 0.05 0.02 0.02); HOGS=(0 0 0) ;;
	--runs) RUNS=${2:?}; shift ;;
	--from) FROM=${2:?}; shift ;;
	--ops) OPS=${2:?}; shift ;;
	--seed) SEED=${2:?}; shift ;;
	--ranks) RANKS=${2:?}; shift ;;
	--per-node) PERNODE=${2:?}; shift ;;
	--mpi) WHICH=${2:?}; shift ;;
	--plain) PLAIN=1 ;;
	--late-s) LATE_S=${2:?}; shift ;;
	--max-bytes) MAX_BYTES=${2:?}; shift ;;
	*) bench_option "$@"; shift "$BENCH_SHIFT"; continue ;;
	esac
	shift
done
for v in "$RUNS" "$FROM" "$OPS" "$SEED" "$RANKS" "$PERNODE" "$LATE_S" \
	 ${MAX_BYTES:+"$MAX_BYTES"}; do
	[[ $v =~ ^[0-9]+$ ]] || { echo "soak: numbers only" >&2; exit 64; }
done
case $WHICH in mpich|ompi|both) ;; *) usage >&2; exit 64 ;; esac
NODES=$(((RANKS + PERNODE - 1) / PERNODE))
[ "$NODES" -le 8 ] || { echo "soak: at most 8 nodes (--ranks / --per-node)" >&2; exit 64; }

# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
# shellcheck source=tests/lib-libjob.sh
. "$top_srcdir/tests/lib-libjob.sh"
SOAK_MPICH=$top_builddir/tests/soak/soak_mpi
SOAK_OMPI=$top_builddir/tests/soak/soak_ompi
SHIM=$top_builddir/libjob/.libs/libibmcast_mpi.so
COMP=$top_builddir/ompi/.libs/mca_coll_ibmcast.so
bench_need "$SOAK_MPICH" "make check builds tests/soak/soak_mpi"
MPIS=()
case $WHICH in
mpich|both) [ -x "$SOAK_MPICH" ] && [ -e "$SHIM" ] && MPIS+=(mpich) ;;&
ompi|both) [ -x "$SOAK_OMPI" ] && [ -e "$COMP" ] && MPIS+=(ompi) ;;
esac
[ "${#MPIS[@]}" -gt 0 ] || { echo "soak: neither MPI integration is built" >&2; exit 1; }
# Under the sanitizer build the MPIs leak from modules they unload
# before exit, which LeakSanitizer cannot name to suppress (as
# mpich_shim_need and ompi_coll.sh say): the ranks run without leak
# detection, every other check kept, or each run would exit non-zero.
if ldd "$SHIM" "$COMP" 2> /dev/null | grep libasan > /dev/null; then
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
DEAD_MS=${IBMCAST_DEAD_MS:-10000}
export IBMCAST_DEAD_MS=$DEAD_MS
unset IBMCAST_BCAST_TIMEOUT_MS	# no deadline: the default

bench_start "$OUT"
# Open MPI finds the component in a directory of its own (libtool's .libs
# holds other mca_* objects).
mkdir -p "$OUT/components"
ln -sf "$(cd "$(dirname "$COMP")" && pwd)/${COMP##*/}" "$OUT/components/"
ompi_pkglibdir=$(ompi_info --path pkglibdir --parsable 2> /dev/null |
	sed -n 's/^path:pkglibdir://p')
export OMPI_MCA_mca_base_component_path=$OUT/components:$ompi_pkglibdir
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Radix 8: 4 hosts a leaf, so node[1-8] span two leaves and the spines,
# and a leaf's uplink (port 5) can go down without cutting a host off.
say "bringing up an 8-host fat tree (radix 8) with the plugin and the data plane"
# shellcheck disable=SC2086 # SOAK_SIM_OPTS: words
sim_up --hosts 8 --radix 8 ${SOAK_SIM_OPTS:-} > "$OUT/up.log" 2>&1 ||
	{ cat "$OUT/up.log" >&2; echo "soak: ibmcast-sim up failed" >&2; exit 1; }
# shellcheck source=/dev/null
. "$SIM_DIR/env"
JOB=451
libjob_reserve "$JOB" "node[1-8]" 4 || { echo "soak: job not ready" >&2; exit 1; }
ibmcast_env_from_wait "$JOB" || { echo "soak: no wait reply" >&2; exit 1; }
say "pool ready; $RUNS runs of $OPS operations on $RANKS ranks ($PERNODE per node), MPIs: ${MPIS[*]}, IBMCAST_DEAD_MS=$DEAD_MS"

# launch MPI PLAIN LOG TIMEOUT SOAK-ARGS...: soak_mpi under MPI (mpich or
# ompi), with ibmcast or (PLAIN=1) the MPI's own collectives; every rank
# may die without the launcher ending the others (a kill run). Returns
# the launcher's status (124: the bound ran out).
launch() {
	local mpi=$1 plain=$2 log=$3 bound=$4 i args=()
	shift 4
	if [ "$mpi" = mpich ]; then
		for ((i = 0; i < RANKS; i++)); do
			[ "$i" = 0 ] || args+=(:)
			args+=(-n 1 env IBMCAST_NODE=node$((i / PERNODE + 1))
			       LD_PRELOAD="$SHIM" IBMCAST_MPI=$((1 - plain))
			       IBMCAST_MPI_VERBOSE=1
			       "$SOAK_MPICH" "$@")
		done
		timeout -k 5 "$bound" mpiexec.mpich -disable-auto-cleanup \
			"${args[@]}" < /dev/null > "$log" 2>&1
	else
		local xs=()
		for v in $(compgen -e | grep -E '^(IBMCAST_|OMPI_MCA_|ASAN_OPTIONS$)'); do
			xs+=(-x "$v")
		done
		# shellcheck disable=SC2016 # expanded by the rank's sh
		timeout -k 5 "$bound" mpirun.openmpi --allow-run-as-root \
			--oversubscribe --bind-to none -np "$RANKS" "${xs[@]}" \
			--mca coll_ibmcast_enable $((1 - plain)) \
			--mca coll_ibmcast_verbose 1 \
			--mca orte_allowed_exit_without_sync 1 \
			--mca orte_enable_recovery 1 \
			sh -c "IBMCAST_NODE=node\$((OMPI_COMM_WORLD_RANK / $PERNODE + 1)) exec \"\$0\" \"\$@\"" \
			"$SOAK_OMPI" "$@" < /dev/null > "$log" 2>&1
	fi
}

# A uplink of leaf 1 (its first port past the hosts), down for a while
# during a run and back.
link_flap() {
	sleep 3
	"$IBMCAST_SIM" link --dir "$SIM_DIR" down S-leaf1 5 --wait > /dev/null 2>&1
	sleep 4
	"$IBMCAST_SIM" link --dir "$SIM_DIR" up S-leaf1 5 --wait > /dev/null 2>&1
}

# quiet_rate LOG OUT: what the waiting ranks send while a rank is late.
# From 30 s after the late rank's line (the waits have settled) for 60 s,
# each endpoint's packets a second; writes "MAX MEAN" over the endpoints to
# OUT. Only for a rank late by 100 s or more (the window must fit).
quiet_rate() {
	local log=$1 out=$2 i a b q
	q='[.endpoints[] | {key: "\(.node)/\(.qpn)", value: .tx_packets}] | from_entries'
	for ((i = 0; i < 900; i++)); do
		grep -q ': late by ' "$log" 2> /dev/null && break
		sleep 1
	done
	grep -q ': late by ' "$log" 2> /dev/null || return 0
	sleep 30
	a=$(dp_ctl counters | jq -c "$q") || return 0
	sleep 60
	b=$(dp_ctl counters | jq -c "$q") || return 0
	jq -rn --argjson a "$a" --argjson b "$b" \
		'[$b | to_entries[] | select($a[.key] != null) |
		  (.value - $a[.key]) / 60] | "\(max) \(add / length)"' |
		awk '{ printf "%.1f/%.1f\n", $1, $2 }' > "$out"
}

sm_restart() {
	sleep 3
	"$IBMCAST_SIM" restart-sm --dir "$SIM_DIR" > /dev/null 2>&1
}


SKEWS=(100 10000 200000)
echo "run,mpi,integration,seed,loss,hogs,skew_us,fault,fault_rank,fault_at,collectives,wrong,hang,spurious,failed_ranks,kill_report_s,wall_s,quiet_pps" > "$CSV"
printf '%-4s %-6s %-8s %-5s %-4s %-7s %-10s %7s %5s %4s %8s %8s %7s %9s\n' \
	run mpi with loss hogs skew fault colls wrong hang spurious kill_s wall_s quiet_pps
T_COLLS=0; T_WRONG=0; T_HANG=0; T_SPUR=0; T_KILLRUNS=0; T_KILLBAD=0
declare -A WALL

for ((r = FROM; r < FROM + RUNS; r++)); do
	mpi=${MPIS[r % ${#MPIS[@]}]}
	seed=$((SEED + r))
	loss=${LOSSES[r % 5]}
	hogs=${HOGS[(r / 2) % 3]}
	skew=${SKEWS[(r / 3) % 3]}
	fault=${FAULTS[(r / FAULT_STEP) % 5]}
	frank=$(((seed * 7 + 3) % RANKS))
	[ "$frank" != 0 ] || frank=1
	fat=$(((seed * 131) % (OPS / 2) + OPS / 4))
	extra=(${MAX_BYTES:+--max-bytes "$MAX_BYTES"})
	case $fault in
	late) extra+=(--late-rank "$frank" --late-s "$LATE_S" --late-at "$fat") ;;
	kill)
		extra+=(--kill-rank "$frank" --kill-at "$fat")
		# MPICH 4.0's mpiexec ends the job when a rank dies by a
		# signal, even with -disable-auto-cleanup: there the rank
		# vanishes with _exit(0), the same on the wire.
		[ "$mpi" = ompi ] || extra+=(--kill-exit) ;;
	esac
	# The bound that makes a run a hang: generous for the load, plus
	# the lateness.
	bound=$((OPS * 3 / 2 + 120))
	[ "$fault" != late ] || bound=$((bound + LATE_S))
	# (MPI's own collectives have no answer to a dead rank: not run
	# under a kill)
	for plain in 0 $( [ "$PLAIN" = 1 ] && [ "$fault" != kill ] && echo 1 ); do
		with=ibmcast
		[ "$plain" = 1 ] && with=plain
		log=$OUT/run$r-$mpi-$with.log
		dp_ctl set loss="$loss" dup="$(awk -v l="$loss" 'BEGIN { print l / 4 }')" \
			reorder="$(awk -v l="$loss" 'BEGIN { print l / 2 }')" \
			seed="$seed" > /dev/null ||
			{ echo "soak: the data plane refused loss=$loss" >&2; exit 1; }
		[ "$hogs" = 0 ] || cpu_hogs_start "$hogs"
		bg=
		case $fault in
		sm-restart) sm_restart & bg=$! ;;
		link-down) link_flap & bg=$! ;;
		esac
		qbg=
		rm -f "$OUT/run$r-$mpi-$with.quiet"
		if [ "$fault" = late ] && [ "$plain" = 0 ] &&
		   [ "${LATE_S%.*}" -ge 100 ]; then
			quiet_rate "$log" "$OUT/run$r-$mpi-$with.quiet" &
			qbg=$!
		fi
		start=${EPOCHREALTIME/./}
		launch "$mpi" "$plain" "$log" "$bound" --seed "$seed" --ops "$OPS" \
			--skew-us "$skew" "${extra[@]}"
		rc=$?
		if [ -n "$qbg" ]; then
			kill "$qbg" 2> /dev/null
			wait "$qbg" 2> /dev/null
		fi
		quiet=-
		[ ! -s "$OUT/run$r-$mpi-$with.quiet" ] ||
			quiet=$(cat "$OUT/run$r-$mpi-$with.quiet")
		wall_ms=$(((${EPOCHREALTIME/./} - start) / 1000))
		wall=$((wall_ms / 1000))
		wall_s=$(printf '%d.%d' "$wall" $((wall_ms % 1000 / 100)))
		[ -z "$bg" ] || wait "$bg"
		cpu_hogs_stop
		dp_ctl set loss=0 dup=0 reorder=0 > /dev/null
		colls=$(awk '/^soak: rank [0-9]+: [0-9]+ collectives/ { s += $4 }
			END { print s + 0 }' "$log")
		wrong=$(awk '/^soak: rank [0-9]+: [0-9]+ collectives/ { s += $6 }
			END { print s + 0 }' "$log")
		wrong=$((wrong + $(grep -c 'elements wrong' "$log")))
		failed=$(grep -c 'failed: class' "$log")
		done_ranks=$(grep -cE '^soak: rank [0-9]+: [0-9]+ collectives' "$log")
		hang=0
		[ "$wall" -lt "$bound" ] || hang=1
		spurious=0
		kill_s=-
		if [ "$fault" = kill ]; then
			# Every survivor reported the death, in time.
			kill_s=$(awk '/failed: class/ { t = $(NF - 1); if (t > m) m = t }
				END { print m + 0 }' "$log")
			T_KILLRUNS=$((T_KILLRUNS + 1))
			if [ "$plain" = 0 ] && { [ "$failed" != $((RANKS - 1)) ] ||
			   awk -v t="$kill_s" -v d="$DEAD_MS" 'BEGIN { exit !(t > d / 1000 + 5) }'; }; then
				T_KILLBAD=$((T_KILLBAD + 1))
			fi
		elif [ "$hang" = 0 ] && { [ "$failed" != 0 ] || [ "$rc" != 0 ] ||
		     [ "$done_ranks" != "$RANKS" ]; }; then
			# (a rank that aborted, through MPI_ERRORS_ARE_FATAL,
			# prints no totals; mpirun may still exit 0)
			spurious=1
		fi
		if [ "$plain" = 0 ]; then
			T_COLLS=$((T_COLLS + colls)); T_WRONG=$((T_WRONG + wrong))
			T_HANG=$((T_HANG + hang)); T_SPUR=$((T_SPUR + spurious))
		fi
		WALL[$mpi,$with]=$(( ${WALL[$mpi,$with]:-0} + wall_ms ))
		printf '%-4s %-6s %-8s %-5s %-4s %-7s %-10s %7s %5s %4s %8s %8s %7s %9s\n' \
			"$r" "$mpi" "$with" "$loss" "$hogs" "$skew" "$fault" \
			"$colls" "$wrong" "$hang" "$spurious" "$kill_s" "$wall_s" \
			"$quiet"
		echo "$r,$mpi,$with,$seed,$loss,$hogs,$skew,$fault,$frank,$fat,$colls,$wrong,$hang,$spurious,$failed,$kill_s,$wall_s,$quiet" >> "$CSV"
	done
done

echo
echo "totals (ibmcast runs): $T_COLLS checked collectives (every rank's calls), $T_WRONG wrong, $T_HANG hangs, $T_SPUR spurious failures; kill runs: $T_KILLRUNS, $T_KILLBAD with a survivor that did not report within IBMCAST_DEAD_MS + 5 s"
if [ "$PLAIN" = 1 ]; then
	for mpi in "${MPIS[@]}"; do
		awk -v a="${WALL[$mpi,ibmcast]:-0}" -v b="${WALL[$mpi,plain]:-0}" -v m="$mpi" \
			'BEGIN { if (b > 0) printf "wall time, %s: ibmcast %.1f s, plain %.1f s, ratio %.2f\n", m, a / 1000, b / 1000, a / b }'
	done
fi
say "results in $OUT"
[ "$T_WRONG" = 0 ] && [ "$T_HANG" = 0 ] && [ "$T_SPUR" = 0 ] && [ "$T_KILLBAD" = 0 ]
