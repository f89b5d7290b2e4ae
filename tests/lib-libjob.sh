# SPDX-License-Identifier: BSD-3-Clause
# Shell helpers for the libjob tests and benchmark on the simulated fabric
# (sourced after tests/lib.sh): jobs, their IBMCAST_* environment, ranks
# started by ibmcast-run, and the data plane's faults and counters.
#
# Needs:    libjob_need                     (skips or bails out as lib.sh does)
# Jobs:     libjob_reserve JOB HOSTLIST GROUPS   (reserve + wait until ready)
#           libjob_warm_groups NRANKS HOSTLIST JOB (a multicast on each group)
#           ibmcast_env_from_wait JOB       (export IBMCAST_JOB/STATE/GROUPS/
#                                            NGROUPS/REASON as spank would)
# Ranks:    bcast_run MSG NRANKS HOSTLIST [ibmcast-run options] -- [bcast_check
#           options]: one TAP result; the output is in $BCAST_OUT
#           bcast_field KEY: KEY=VALUE of bcast_check's result/stats lines
#           modes_need                 (tests/libjob/modes_check in $MODES)
#           modes_field KEY FILE: the first KEY=VALUE of modes_check's output
# Fabric:   dp_ctl ARGS... (ibmcast-sim dataplane on $SIM_DIR)
#           dp_total_link_bytes: bytes carried over every link since reset
# Benches:  bench_need PROGRAM DESC  (the benchmark's program and what it
#                                     needs built; exits 1 if missing)
#           bench_start DIR          (results directory -> $OUT, $CSV; say)
#           bench_fabric_up HOSTS    (a radix-16 fat tree, its env sourced)
# shellcheck shell=bash

IBMCAST_RUN=$top_builddir/tools/ibmcast-run
BCAST_CHECK=$top_builddir/tests/libjob/bcast_check
IBMCASTCTL=$top_builddir/tools/ibmcastctl
BCAST_OUT=
# Every broadcast that sees no progress for this long fails (ETIMEDOUT):
# a bug shows as a failure, never as a hung test. Liveness (live.h) runs
# at the library's default bound (IBMCAST_DEAD_MS, 10 s), so that every
# test of the suite, on a host its other tests load, also checks that no
# live rank is taken for dead; the tests of late and dead members
# (libjob_liveness.sh, the late_mpi cases, soak_short.sh) set their own.
export IBMCAST_BCAST_TIMEOUT_MS=${IBMCAST_BCAST_TIMEOUT_MS:-30000}

libjob_need() {
	fabric_need
	need_file "$IBMCAST_RUN" "tools/ibmcast-run"
	need_file "$BCAST_CHECK" "tests/libjob/bcast_check"
	need_file "$IBMCASTCTL" "tools/ibmcastctl"
	need_file "$top_builddir/sim-fabric/ibmcast-dataplane" \
		"sim-fabric/ibmcast-dataplane"
}

dp_ctl() {
	"$IBMCAST_SIM" dataplane --dir "$SIM_DIR" "$@"
}

# The sum of the bytes every link carried since the last reset.
dp_total_link_bytes() {
	dp_ctl counters | jq '[.links[].bytes] | add // 0'
}

libjob_reserve() {
	local job=$1 nodes=$2 groups=$3 state
	"$IBMCASTCTL" reserve "$job" --nodes "$nodes" --groups "$groups" \
		> /dev/null || return 1
	state=$("$IBMCASTCTL" --json wait "$job" --timeout-ms 30000 |
		jq -r .job.state)
	[ "$state" = ready ] || { diag "job $job is $state"; return 1; }
}

# libjob_warm_groups NRANKS HOSTLIST JOB: multicast once on each of the
# job's groups (4 communicators and their halves). The data plane reads a
# new group's MFTs within its refresh bound, and a multicast sent before
# that reaches nobody (then repaired by unicast): checks of replication
# want the steady state.
libjob_warm_groups() {
	"$IBMCAST_RUN" -n "$1" --nodes "$2" --job "$3" --timeout 60 -- \
		"$BCAST_CHECK" --quiet --comms 4 --halves --algo mcast \
		--sizes 8 --reps 1 > /dev/null 2>&1 || diag "warm-up failed"
}

# ibmcast_env_from_wait JOB: what the SPANK plugin exports, from the
# control server's wait reply (docs/environment.md), into this shell.
ibmcast_env_from_wait() {
	local job=$1 reply
	reply=$("$IBMCASTCTL" --json wait "$job" --timeout-ms 30000) || return 1
	export IBMCAST_JOB=$job
	IBMCAST_STATE=$(jq -r '.job.state | if . == "ready" then . else
		"unavailable" end' <<< "$reply")
	IBMCAST_GROUPS=$(jq -r '.job as $j | [$j.groups[] |
		"\(.mgid)/\(.mlid)/\($j.qkey)/\($j.pkey)/\(pow(2; .mtu + 7))"]
		| join(" ")' <<< "$reply")
	IBMCAST_NGROUPS=$(jq -r '.job.groups | length' <<< "$reply")
	export IBMCAST_STATE IBMCAST_GROUPS IBMCAST_NGROUPS
}

# mpich_shim_need: what an MPI program under the MPICH shim on the
# simulated fabric needs (the plugin, the fabric's tools, the shim built
# against MPICH); sets SHIM and MPIEXEC, MPICH's own launcher by its own
# name: with Open MPI installed beside it the plain mpiexec is Open MPI's
# (its alternative has the higher priority; the Open MPI side is
# tests/integration/ompi_coll.sh).
mpich_shim_need() {
	SHIM=$top_builddir/libjob/.libs/libibmcast_mpi.so
	plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
	need_cmd ibsim ibsim-utils
	need_cmd opensm opensm
	need_cmd jq jq
	need_file "$SHIM" "libjob/libibmcast_mpi.so (configure found no MPI?)"
	ldd "$SHIM" | grep -q libmpich ||
		skip_all "libibmcast_mpi.so is not built against MPICH (configure found only Open MPI)"
	MPIEXEC=$(command -v mpiexec.mpich) ||
		skip_all "no mpiexec.mpich (Debian package mpich)"
	# Under the sanitizer build: MPICH (UCX) leaks from modules it
	# unloads before exit, which LeakSanitizer cannot name to suppress
	# (a plain MPI_Init/MPI_Finalize program shows them). The ranks keep
	# every other check (ASAN_OPTIONS=$rank_asan); the shim's own
	# allocations are freed at MPI_Finalize.
	rank_asan=${ASAN_OPTIONS-}
	if ldd "$SHIM" 2>/dev/null | grep -q libasan; then
		rank_asan=${rank_asan:+$rank_asan:}detect_leaks=0
		diag "sanitizer build: MPI ranks run with detect_leaks=0 (MPICH's own leaks)"
	fi
}

# bcast_run MSG NRANKS HOSTLIST [run options] -- [bcast_check options]
bcast_run() {
	local msg=$1 n=$2 nodes=$3 rc=0 runopts=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		runopts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	BCAST_OUT=$("$IBMCAST_RUN" -n "$n" --nodes "$nodes" --timeout 120 \
		"${runopts[@]}" -- "$BCAST_CHECK" "$@" 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then
		ok 0 "$msg"
		diag "$(grep -E '^(# )?(result|stats) ' <<< "$BCAST_OUT")"
	else
		ok 1 "$msg" || true
		diag "exit $rc: ibmcast-run -n $n --nodes $nodes ${runopts[*]}" \
			"-- bcast_check $*" "$(tail -n 30 <<< "$BCAST_OUT")"
		return 1
	fi
}

# within_2pct MEASURED EXPECTED: MEASURED is positive and within 2% of
# EXPECTED (modeled times against their closed forms).
within_2pct() {
	awk -v m="${1:-0}" -v e="${2:-0}" 'BEGIN { d = m - e; if (d < 0) d = -d
		exit !(m > 0 && d <= 0.02 * e) }'
}

# bcast_field KEY: the value of KEY=VALUE in the last bcast_run's output.
bcast_field() {
	grep -oE "(^|[ ])$1=[^ ]+" <<< "$BCAST_OUT" | tail -n 1 | cut -d= -f2
}

modes_need() {
	MODES=$top_builddir/tests/libjob/modes_check
	need_file "$MODES" "tests/libjob/modes_check"
}

modes_field() {
	grep -oE "(^|[ ])$1=[^ ]+" "$2" | head -n 1 | cut -d= -f2
}

# ---- benchmarks (tests/bench/*.sh): not tests, so no TAP here ------------

# bench_need PROGRAM DESC: the parts every benchmark runs, and its own
# program, are built (DESC says how), and jq is there; else exit 1.
bench_need() {
	local f
	for f in "$IBMCAST_RUN" "$1" "$IBMCASTCTL" \
		 "$top_builddir/sim-fabric/ibmcast-dataplane" \
		 "$top_builddir/osm-plugin/.libs/libibmcast_osm.so"; do
		[ -e "$f" ] || { echo "missing $f: build first ($2)," \
			"or give --builddir" >&2; exit 1; }
	done
	command -v jq > /dev/null || { echo "jq not installed" >&2; exit 1; }
}

# bench_start DIR: DIR (made, absolute) in $OUT, $CSV its results.csv, and
# say MSG printing progress with the seconds since now.
bench_start() {
	mkdir -p "$1" || exit 1
	OUT=$(cd "$1" && pwd)
	CSV=$OUT/results.csv
	T_START=$SECONDS
}
say() { printf '[%4ds] %s\n' $((SECONDS - T_START)) "$*"; }

# bench_fabric_up HOSTS: a HOSTS-host radix-16 fat tree with the plugin and
# the data plane (log in $OUT/up.log), its environment sourced; exit 1 if
# it does not come up.
bench_fabric_up() {
	say "bringing up a $1-host fat tree (radix 16) with the plugin and the data plane"
	sim_up --hosts "$1" --radix 16 > "$OUT/up.log" 2>&1 ||
		{ cat "$OUT/up.log" >&2; echo "ibmcast-sim up failed" >&2; exit 1; }
	# shellcheck source=/dev/null
	. "$SIM_DIR/env"
}

# pool_groups OUT: from libibmcast's debug lines in OUT (IBMCAST_LOG_LEVEL=
# debug), "SHARED SPLIT": how many communicators two or more ranks
# reported taking a pool group for, and how many of those the ranks took
# different groups for (members must all take the same one).
pool_groups() {
	sed -n 's/.*libibmcast: rank \([0-9]*\): communicator \([0-9a-f]*\) ([0-9]* members): pool group \([0-9]*\)$/\2 \1 \3/p' "$1" |
		awk '{ n[$1]++; if (!($1 in g)) g[$1] = $3; else if (g[$1] != $3) bad[$1] = 1 }
		     END { s = 0; b = 0
			   for (c in n) if (n[c] > 1) s++
			   for (c in bad) b++
			   print s, b }'
}

# grown_groups OUT: from libibmcast's lines in OUT (IBMCAST_LOG_LEVEL=info
# or debug), "SWITCHED SPLIT" for the communicators that took a grown
# group (none of the pool's was free): how many two or more ranks reported
# switching to the group rank 0 grew and offered, and how many of those
# switched at different collectives (rank 0 decides one collective for all
# members, once each answered that it attached).
grown_groups() {
	sed -n 's/.*libibmcast: rank \([0-9]*\): communicator \([0-9a-f]*\) multicasts from collective #\([0-9]*\) on .*/\2 \1 \3/p' "$1" |
		awk '{ n[$1]++; if (!($1 in k)) k[$1] = $3; else if (k[$1] != $3) bad[$1] = 1 }
		     END { s = 0; b = 0
			   for (c in n) if (n[c] > 1) s++
			   for (c in bad) b++
			   print s, b }'
}

# late_mpi_waited OUT: the seconds late_mpi's rank 0 waited in its four
# collectives (tests/mpi/late_mpi.c).
late_mpi_waited() {
	sed -n 's/^late_mpi: rank 0: .* waited \([0-9.]*\) s$/\1/p' "$1"
}

# late_mpi_dead OUT CLASS: "BARRIERS/BCASTS", how many of late_mpi's
# survivors got error class CLASS from MPI_Barrier within 6 s and then
# from MPI_Bcast within half a second (LATE_MPI_DIE=1).
late_mpi_dead() {
	echo "$(grep -cE "^late_mpi: rank [0-9]+: barrier error $2 after [0-5]\\." "$1")/$(grep -cE "^late_mpi: rank [0-9]+: bcast error $2 after 0\\.[0-4]" "$1")"
}
