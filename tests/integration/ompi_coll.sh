#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# coll/ibmcast (mca_coll_ibmcast.so) inside Open MPI 4.1 on the simulated
# fabric with OpenSM and the data plane, loaded from the build tree through
# OMPI_MCA_mca_base_component_path: ompi_info lists its parameters; unmodified
# MPI programs built with mpicc.openmpi and run by mpirun.openmpi (one rank
# per simulated node, IBMCAST_NODE from OMPI_COMM_WORLD_RANK, IBMCAST_* by
# -x) verify every MPI_Bcast (every root, 1 B..1 MiB, BYTE/INT/DOUBLE,
# strided and mixed types, world/dup/split/create) and MPI_Barrier (no rank
# leaves before all entered), hundreds of communicators created and
# freed, MPI_Allreduce (every predefined op and type it maps, IN_PLACE,
# counts 0..100000, the same bits on every rank; a user-defined op and
# MPI_C_BOOL passed to the previous module, counted with their reason) and
# MPI_Allgather (IN_PLACE, strided and mixed types, packed), and a Fortran
# program's MPI_BCAST (mpifort.openmpi), and under MPI_THREAD_MULTIPLE
# communicators created by threads at once and collectives from 4 threads
# on 4 communicators at once;
# coll_base_verbose shows the component selected, its summary counts the
# calls over multicast, and the data plane replicated packets. With
# coll_ibmcast_enable 0, or without a ready pool, the same programs pass on
# Open MPI's own collectives with no fabric traffic.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

COMP=$top_builddir/ompi/.libs/mca_coll_ibmcast.so
BPROG=$top_builddir/tests/mpi/bcast_ompi
RPROG=$top_builddir/tests/mpi/barrier_ompi
CPROG=$top_builddir/tests/mpi/comms_ompi
ARPROG=$top_builddir/tests/mpi/allreduce_ompi
AGPROG=$top_builddir/tests/mpi/allgather_ompi
SPROG=$top_builddir/tests/mpi/semantics_ompi
CITERS=400	# rounds of comms_mpi: 3 communicators created and freed each
NRANKS=4

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
need_cmd mpirun.openmpi openmpi-bin
need_cmd ompi_info openmpi-bin
need_file "$COMP" "ompi/mca_coll_ibmcast.so (configure --with-openmpi)"
need_file "$BPROG" "tests/mpi/bcast_ompi"
need_file "$RPROG" "tests/mpi/barrier_ompi"
need_file "$CPROG" "tests/mpi/comms_ompi"
need_file "$ARPROG" "tests/mpi/allreduce_ompi"
need_file "$AGPROG" "tests/mpi/allgather_ompi"
need_file "$SPROG" "tests/mpi/semantics_ompi"
KPROG=$top_builddir/tests/mpi/comm_kinds_ompi
need_file "$KPROG" "tests/mpi/comm_kinds_ompi"
PPROG=$top_builddir/tests/mpi/progress_ompi
LPROG=$top_builddir/tests/mpi/late_ompi
need_file "$LPROG" "tests/mpi/late_ompi"
need_file "$PPROG" "tests/mpi/progress_ompi"
TPROG=$top_builddir/tests/mpi/threads_ompi
need_file "$TPROG" "tests/mpi/threads_ompi"
CTPROG=$top_builddir/tests/mpi/threads_coll_ompi
need_file "$CTPROG" "tests/mpi/threads_coll_ompi"
OSHIM=$top_builddir/libjob/.libs/libibmcast_ompi.so
MSHIM=$top_builddir/libjob/.libs/libibmcast_mpi.so
need_file "$OSHIM" "libjob/libibmcast_ompi.so (configure --with-openmpi-shim)"
need_file "$MSHIM" "libjob/libibmcast_mpi.so (configure --with-mpi, for MPICH)"
need_file "$IBMCASTCTL" "tools/ibmcastctl"

plan 70

# Under the sanitizer build: Open MPI leaks from its own components at
# MPI_Finalize, which LeakSanitizer cannot name to suppress; the ranks keep
# every other check (as mpi_shim.sh does for MPICH). A program not built
# with the sanitizer (the Fortran one) gets its runtime preloaded.
asan_preload=
if ldd "$COMP" 2>/dev/null | grep -q libasan; then
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	asan_preload=$(ldd "$COMP" | awk '/libasan|libubsan/ { print $3 }' |
		paste -sd: -)
	diag "sanitizer build: MPI ranks run with detect_leaks=0 (Open MPI's own leaks)"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-ompi-test.XXXXXX")
at_exit "rm -rf '$tmp'"

# Only the component's .so in the directory Open MPI scans: libtool's
# .libs also holds objects named mca_*, which Open MPI would try to load.
mkdir "$tmp/components"
ln -s "$(cd "$(dirname "$COMP")" && pwd)/${COMP##*/}" "$tmp/components/"
ompi_pkglibdir=$(ompi_info --path pkglibdir --parsable |
	sed -n 's/^path:pkglibdir://p')
export OMPI_MCA_mca_base_component_path=$tmp/components:$ompi_pkglibdir
# (as root in the test container; harmless otherwise)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# --- ompi_info --------------------------------------------------------------
info=$(ompi_info --param coll ibmcast 2>&1)
like "$info" 'MCA coll: ibmcast \(MCA v2\.1\.0, API v2\.0\.0' \
	"ompi_info finds the component through OMPI_MCA_mca_base_component_path"
ok "$(for p in priority enable verbose; do
	grep -q "parameter \"coll_ibmcast_$p\"" <<< "$info" || exit 1
      done; echo $?)" \
	"ompi_info --param coll ibmcast lists coll_ibmcast_priority, _enable, _verbose"
is "$(grep -c 'unable to open' <<< "$info")" 0 "ompi_info loads it without complaint"

sim_up --hosts 8 --radix 8 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 411 "node[1-$NRANKS]" 4 || bail_out "job 411 not ready"
ibmcast_env_from_wait 411 || bail_out "no wait reply for job 411"

# ompirun OUT PROG ARGS [-- VAR=VALUE...]: PROG on NRANKS ranks under
# mpirun.openmpi, rank i on node i+1 (IBMCAST_NODE), every IBMCAST_* and
# OMPI_MCA_* variable of this shell plus the given ones passed with -x;
# exit status of mpirun; stdout+stderr in OUT. Extra mpirun options in
# MPIRUN_OPTS.
ompirun() {
	local out=$1 prog=$2 args=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
	[ $# -eq 0 ] || shift
	diag "mpirun.openmpi: $NRANKS ranks of ${prog##*/} ${args[*]} $* ${MPIRUN_OPTS:-}"
	(
		xs=()
		for v in "$@"; do export "${v?}"; done
		for v in $(compgen -e | grep -E '^(IBMCAST_|OMPI_MCA_|ASAN_OPTIONS$|LD_PRELOAD$)'); do
			xs+=(-x "$v")
		done
		# shellcheck disable=SC2016,SC2086 # $OMPI_COMM_WORLD_RANK: the rank's
		exec timeout 300 mpirun.openmpi --allow-run-as-root \
			--oversubscribe --bind-to none -np "$NRANKS" "${xs[@]}" \
			${MPIRUN_OPTS:-} \
			sh -c 'IBMCAST_NODE=node$((OMPI_COMM_WORLD_RANK + 1)) exec "$0" "$@"' \
			"$prog" "${args[@]}" < /dev/null > "$out" 2>&1
	)
}

# bverified OUT: every rank verified its broadcasts with 0 errors.
bverified() {
	[ "$(grep -cE '^bcast_mpi: rank [0-9]+: [0-9]+ broadcasts verified, 0 errors$' "$1")" = "$NRANKS" ] &&
		! grep -q 'FAIL$' "$1" && grep -q '^size ' "$1"
}

# rx_minus_tx: packets the data plane delivered beyond those sent to it,
# > 0 only when the fabric replicated multicast.
rx_minus_tx() {
	dp_ctl counters | jq '.delivered - .sends'
}

# summary OUT COLL: the component's summary line of COLL on rank 0.
summary() {
	grep "^coll_ibmcast: rank 0: $2: " "$1"
}

# field LINE TEXT: the number before TEXT in LINE.
field() {
	sed -n "s/.*[ :(]\([0-9][0-9]*\) $2.*/\1/p" <<< "$1" | head -n 1
}

# through LINE: the calls of a summary LINE that went through libibmcast
# (over multicast plus point-to-point); nothing when LINE lacks either
# (a run that failed before its summary), so a check on it fails cleanly.
through() {
	local mc p2p
	mc=$(field "$1" "over multicast")
	p2p=$(field "$1" "point-to-point")
	[ -n "$mc" ] && [ -n "$p2p" ] && echo $((mc + p2p))
}

# --- MPI_Bcast over multicast ----------------------------------------------
dp_ctl reset > /dev/null
rc=0
MPIRUN_OPTS="--mca coll_base_verbose 9" ompirun "$tmp/bcast.out" "$BPROG" -- \
	OMPI_MCA_coll_ibmcast_verbose=1 || rc=$?
is "$rc" 0 "bcast_ompi with coll/ibmcast: mpirun exits 0"
ok "$(bverified "$tmp/bcast.out"; echo $?)" \
	"every rank verified every broadcast (world, dup, split, create; 1 B..1 MiB; BYTE, INT, DOUBLE, strided, mixed)"
sel=$(grep -c 'coll:base:comm_select: selecting *ibmcast, priority *90, Enabled' "$tmp/bcast.out")
ok "$([ "${sel:-0}" -ge $((NRANKS * 3)) ]; echo $?)" \
	"coll_base_verbose: ibmcast selected and enabled on $sel communicators (world, dup, split, create on every rank)"
bsum=$(summary "$tmp/bcast.out" MPI_Bcast)
diag "$bsum"
diag "$(grep '^coll_ibmcast: rank 0: communicators' "$tmp/bcast.out")"
mcast=$(field "$bsum" "over multicast")
ok "$([ "${mcast:-0}" -gt 100 ]; echo $?)" \
	"the summary: ${mcast:-no} broadcasts of rank 0 over multicast"
is "$(field "$bsum" "passed to the previous")" 0 \
	"no broadcast was passed to the previous module"
ok "$([ "$(field "$bsum" "packed")" -gt 0 ]; echo $?)" \
	"the strided broadcasts were packed by Open MPI's convertor"
extra=$(rx_minus_tx)
bytes=$(dp_total_link_bytes)
ok "$([ "${extra:-0}" -gt 1000 ]; echo $?)" \
	"the data plane replicated multicast: $extra more packets delivered than sent"
ok "$([ "${bytes:-0}" -gt $((3 * 1048576)) ]; echo $?)" \
	"fabric links carried the broadcasts ($bytes bytes)"
if [ "$rc" != 0 ] || ! bverified "$tmp/bcast.out"; then
	diag "$(grep -v -e ' ok$' -e 'coll:base' "$tmp/bcast.out" | tail -n 30)"
fi

# --- communicators created and freed ---------------------------------------
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/comms.out" "$CPROG" "$CITERS" -- \
	OMPI_MCA_coll_ibmcast_verbose=1 || rc=$?
is "$rc" 0 "comms_ompi ($CITERS rounds of dup, split, create and free): mpirun exits 0"
is "$(grep -cE '^comms_mpi: rank [0-9]+: [0-9]+ communicators, [0-9]+ broadcasts verified, 0 errors$' "$tmp/comms.out")" \
	"$NRANKS" "comms_ompi: every rank verified every broadcast on every communicator"
csum=$(grep '^coll_ibmcast: rank 0: communicators' "$tmp/comms.out")
bsum=$(summary "$tmp/comms.out" MPI_Bcast)
rsum=$(summary "$tmp/comms.out" MPI_Barrier)
diag "$csum"
diag "$bsum"
diag "$rsum"
# rank 0 is in the dup, its split and the evens' communicator each round
is "$(field "$csum" "mapped")" $((CITERS * 3 + 1)) \
	"comms_ompi: rank 0 mapped world and all $((CITERS * 3)) communicators it was in"
like "$csum" ", 0 left to the previous module" "comms_ompi: no mapping failed"
is "$(field "$bsum" "non-blocking")" $((CITERS * 3 + 1)) \
	"comms_ompi: every MPI_Ibcast passed to the previous module, counted as non-blocking"
ok "$([ "$(field "$bsum" "over multicast")" -gt "$CITERS" ]; echo $?)" \
	"comms_ompi: broadcasts on the short-lived communicators went over multicast"
is "$(through "$rsum")/$(field "$rsum" "communicator not mapped")" \
	"$((CITERS * 3 + 1))/0" \
	"comms_ompi: every MPI_Barrier of rank 0 went through libibmcast"
ok "$([ "$(rx_minus_tx)" -gt 0 ]; echo $?)" \
	"comms_ompi: the data plane replicated multicast"
if [ "$rc" != 0 ]; then
	diag "$(tail -n 30 "$tmp/comms.out")"
fi

# --- communicators of every kind --------------------------------------------
# comm_kinds_mpi (see mpi_shim.sh): a dup whose members hold different pool
# groups, MPI_Comm_dup_with_info, MPI_Comm_idup (whose module Open MPI
# enables when its request completes), MPI_Comm_create_group and
# MPI_Comm_split_type, all four collectives on each.
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/kinds.out" "$KPROG" 60 -- OMPI_MCA_coll_ibmcast_verbose=1 \
	IBMCAST_LOG_LEVEL=debug || rc=$?
kline=$(grep -E '^comm_kinds_mpi: rank 0: [0-9]+ communicators, [0-9]+ calls verified, 0 errors$' "$tmp/kinds.out")
is "$rc/$(grep -cE '^comm_kinds_mpi: rank [0-9]+: [0-9]+ communicators, [0-9]+ calls verified, 0 errors$' "$tmp/kinds.out")" \
	"0/$NRANKS" "comm_kinds_ompi: every rank verified every call on every communicator" ||
	diag "$(grep -v ' ok$' "$tmp/kinds.out" | tail -n 20)"
kmade=$(sed -n 's/^comm_kinds_mpi: rank 0: \([0-9]*\) communicators.*/\1/p' <<< "$kline")
csum=$(grep '^coll_ibmcast: rank 0: communicators' "$tmp/kinds.out")
diag "$csum"
# (MPI_Comm_split_type makes one more, internal, communicator of its own)
is "$(field "$csum" "mapped")" "$((${kmade:-0} + 1 + 60))" \
	"comm_kinds_ompi: rank 0 mapped world and all ${kmade:-no} communicators it was in, MPI_Comm_idup's too"
read -r kshared ksplit < <(pool_groups "$tmp/kinds.out")
ok "$([ "${kshared:-0}" -gt 60 ] && [ "$ksplit" = 0 ]; echo $?)" \
	"comm_kinds_ompi: the members of each of ${kshared:-no} communicators took the same pool group ($ksplit split)"

# --- MPI_THREAD_MULTIPLE ----------------------------------------------------
# threads_mpi (see mpi_shim.sh): 4 threads per rank each create a
# communicator of all ranks at once (in a different order on each rank)
# and run barriers and allreduces on it. The members agree on each one's
# id and pool group; a group offered to one thread's communicator is held
# from the others until it is taken.
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/threads.out" "$TPROG" -- OMPI_MCA_coll_ibmcast_verbose=1 \
	IBMCAST_LOG_LEVEL=debug || rc=$?
is "$rc/$(grep -cE '^threads_mpi: rank [0-9]+: [0-9]+ allreduces verified, 0 errors$' "$tmp/threads.out")" \
	"0/$NRANKS" "threads_ompi (MPI_THREAD_MULTIPLE, communicators created by 4 threads at once): every rank verified every allreduce" ||
	diag "$(grep -v ' ok$' "$tmp/threads.out" | grep -v 'libibmcast: rank' | tail -n 20)"
csum=$(grep '^coll_ibmcast: rank 0: communicators' "$tmp/threads.out")
tsum=$(summary "$tmp/threads.out" MPI_Allreduce)
rsum=$(summary "$tmp/threads.out" MPI_Barrier)
diag "$csum"
diag "$tsum"
read -r tshared tsplit < <(pool_groups "$tmp/threads.out")
read -r tgrown tgsplit < <(grown_groups "$tmp/threads.out")
# (Under MPI_THREAD_MULTIPLE a communicator is mapped at its first
# blocking collective: world and the 4 the threads made at least, the
# dups only if Open MPI ran a blocking collective of the four on them.
# 4 x 20 barriers, 4 x 20 + 1 allreduces of the program at least.)
tmapped=$(field "$csum" "mapped")
ok "$([ "${tmapped:-0}" -ge 5 ] &&
      [ "$(field "$csum" "left to the previous")" = 0 ]; echo $?)" \
	"threads_ompi: rank 0 mapped ${tmapped:-no} communicators (world and the 4 made by threads at once at least), none failed"
# The communicators the threads made that took a group took the same one
# on all their members: of those mapped with a group (a pool group, or
# one grown once the pool's 4 were taken), all but world (its pool group
# taken at MPI_Init) and any dup mapped beside them (tmapped - 5) are the
# threads'. At least one must be, so that world's group alone, or a
# "0 split" over no thread's communicator, does not pass. (Not all 4: a
# group grown for the last may come after its last collective, as it
# did in a loaded sanitizer run, 3 of 4.)
tthreads=$(( ${tshared:-0} + ${tgrown:-0} - (${tmapped:-5} - 4) ))
ok "$([ "$(through "$rsum")" = 80 ] && [ "$(through "$tsum")" -ge 81 ] &&
      [ "$(field "$tsum" "passed to the previous")" = 0 ] &&
      [ "$tthreads" -ge 1 ] && [ "$tsplit" = 0 ] && [ "$tgsplit" = 0 ]; echo $?)" \
	"threads_ompi: every barrier and allreduce through libibmcast; of the 4 communicators the threads made, $tthreads took a group (of ${tshared:-no} communicators with a pool group and ${tgrown:-no} with a grown one, world and dups aside; at least 1), the same on all their members (${tsplit:-?} and ${tgsplit:-?} split)" ||
	diag "$(grep -E 'libibmcast: rank 0: communicator [0-9a-f]+( \(| multicasts|: grew)' "$tmp/threads.out")"

# threads_coll_mpi (see mpi_shim.sh): 4 threads per rank run broadcasts,
# allreduces, allgathers and barriers on their own duplicate of
# MPI_COMM_WORLD, all at the same time.
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/threads_coll.out" "$CTPROG" -- \
	OMPI_MCA_coll_ibmcast_verbose=1 IBMCAST_LOG_LEVEL=debug || rc=$?
is "$rc/$(grep -cE '^threads_coll_mpi: rank [0-9]+: 2400 calls, 0 errors$' "$tmp/threads_coll.out")" \
	"0/$NRANKS" "threads_coll_ompi: 4 threads at once on 4 communicators, every result right" ||
	diag "$(grep -v ' ok$' "$tmp/threads_coll.out" | grep -v 'libibmcast: rank' | tail -n 20)"
read -r cshared csplit < <(pool_groups "$tmp/threads_coll.out")
read -r cgrown cgsplit < <(grown_groups "$tmp/threads_coll.out")
ok "$(for c in MPI_Bcast MPI_Barrier MPI_Allreduce MPI_Allgather; do
	l=$(summary "$tmp/threads_coll.out" "$c")
	[ "$(field "$l" "passed to the previous")" = 0 ] &&
	[ "$(through "$l")" -ge 600 ] || exit 1
      done; echo $?)" \
	"  all 600 calls of each collective on rank 0 through libibmcast, none passed to the previous module" ||
	diag "$(grep '^coll_ibmcast: rank 0' "$tmp/threads_coll.out")"
# (the duplicates are mapped at their first collective, by the 4 threads
# at once: those that hold each other's groups on different members agree
# again, each offering one group of those free on every member, up to 10
# rounds. The job's 4 groups usually all end up taken: world's and 3 of
# the 4 duplicates'; under the sanitizer on a loaded host the 10 rounds
# once left a duplicate without one (point-to-point, still right). Before
# the rounds offered one group each, a thread offered every free group,
# the first on each rank held them all, and 0 to 2 duplicates got one.
# What must always hold: every group taken is the same on all members,
# a grown one too, which a duplicate left without a pool group takes.)
ok "$([ "${cshared:-0}" -ge 3 ] && [ "$csplit" = 0 ] && [ "$cgsplit" = 0 ] &&
      [ "$(rx_minus_tx)" -gt 0 ]; echo $?)" \
	"  world and ${cshared:+$((cshared - 1))} of the duplicates took a pool group (of the job's 4; at least 2 duplicates), ${cgrown:-no} a grown one, the same on all members (${csplit:-?} and ${cgsplit:-?} split); the data plane replicated multicast"

# --- MPI_Barrier -------------------------------------------------------------
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/barrier.out" "$RPROG" 100 -- OMPI_MCA_coll_ibmcast_verbose=1 ||
	rc=$?
is "$rc" 0 "barrier_ompi: mpirun exits 0"
is "$(grep -cE '^barrier_mpi: rank [0-9]+: [0-9]+ barriers verified \([0-9]+ on an intercommunicator\), 0 errors$' "$tmp/barrier.out")" \
	"$NRANKS" "barrier_ompi: no rank left a barrier before all entered (world, dup, split, solo, intercomm)"
rsum=$(summary "$tmp/barrier.out" MPI_Barrier)
diag "$rsum"
ok "$([ $(( $(field "$rsum" "over multicast") + $(field "$rsum" "point-to-point") )) -ge 200 ]; echo $?)" \
	"barrier_ompi: rank 0's barriers on its mapped communicators went through libibmcast"
if [ "$rc" != 0 ]; then
	diag "$(grep -v ' ok$' "$tmp/barrier.out" | tail -n 30)"
fi

# --- MPI_Allreduce, MPI_Allgather ------------------------------------------
# (Open MPI returns from calls of count 0 before any component sees them,
# and its own MPI_Comm_split runs an allgather on the parent: the
# component counts the program's calls less those, plus these.)
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/allreduce.out" "$ARPROG" -- OMPI_MCA_coll_ibmcast_verbose=1 ||
	rc=$?
is "$rc" 0 "allreduce_ompi: mpirun exits 0"
ok "$([ "$(grep -cE '^allreduce_mpi: rank [0-9]+: [0-9]+ allreduces verified \([0-9]+ user-defined op, [0-9]+ MPI_C_BOOL\), 0 errors$' "$tmp/allreduce.out")" = "$NRANKS" ] &&
      ! grep -q 'FAIL$' "$tmp/allreduce.out"; echo $?)" \
	"allreduce_ompi: every rank verified every result and rank 0's bits (SUM, PROD, MIN, MAX, BXOR, LAND, MINLOC, MAXLOC; IN_PLACE; counts 0..100000; world, dup, split)"
read -r ar_all ar_user ar_bool < <(sed -n 's/^allreduce_mpi: rank 0: \([0-9]*\) allreduces verified (\([0-9]*\) user-defined op, \([0-9]*\) MPI_C_BOOL).*/\1 \2 \3/p' "$tmp/allreduce.out")
read -r z_all z_user z_bool < <(sed -n 's/^allreduce_mpi: rank 0: of count 0: \([0-9]*\) allreduces (\([0-9]*\) user-defined op, \([0-9]*\) MPI_C_BOOL).*/\1 \2 \3/p' "$tmp/allreduce.out")
ar_all=$((ar_all - z_all)) ar_user=$((ar_user - z_user)) ar_bool=$((ar_bool - z_bool))
arsum=$(summary "$tmp/allreduce.out" MPI_Allreduce)
diag "$arsum"
armc=$(field "$arsum" "over multicast")
arp2p=$(field "$arsum" "point-to-point")
ok "$([ $((armc + arp2p)) -ge $((ar_all - ar_user - ar_bool)) ] &&
      [ "$(field "$arsum" "passed to the previous")" = $((ar_user + ar_bool)) ]; echo $?)" \
	"allreduce_ompi: rank 0's allreduces on predefined ops and types through libibmcast ($((armc + arp2p)) of $((ar_all - ar_user - ar_bool))), the rest passed to the previous module"
is "$(field "$arsum" "user-defined op")/$(field "$arsum" "datatype not mapped")" \
	"$ar_user/$ar_bool" \
	"allreduce_ompi: passed through as a user-defined op ($ar_user) and a datatype not mapped (MPI_C_BOOL: $ar_bool)"
ok "$([ "${armc:-0}" -gt 0 ] && [ "${arp2p:-0}" -gt 0 ]; echo $?)" \
	"allreduce_ompi: by multicast (4 ranks) and point-to-point (the 2-rank split)"
ok "$([ "$(rx_minus_tx)" -gt 1000 ]; echo $?)" \
	"allreduce_ompi: the data plane replicated multicast"
[ "$rc" = 0 ] || diag "$(grep -v -e ' ok$' "$tmp/allreduce.out" | tail -n 30)"

dp_ctl reset > /dev/null
rc=0
# The multicast allgather by name: auto takes recursive doubling or the
# ring (ibmc_allgather(3)).
ompirun "$tmp/allgather.out" "$AGPROG" -- OMPI_MCA_coll_ibmcast_verbose=1 \
	IBMCAST_ALLGATHER_ALGO=mcast || rc=$?
is "$rc" 0 "allgather_ompi: mpirun exits 0"
ok "$([ "$(grep -cE '^allgather_mpi: rank [0-9]+: [0-9]+ allgathers verified \([0-9]+ of derived types\), 0 errors$' "$tmp/allgather.out")" = "$NRANKS" ] &&
      ! grep -q 'FAIL$' "$tmp/allgather.out"; echo $?)" \
	"allgather_ompi: every rank verified every block (BYTE, INT, DOUBLE, 0 B..256 KiB, IN_PLACE, strided and mixed types; world, dup, split)"
ag_all=$(sed -n 's/^allgather_mpi: rank 0: \([0-9]*\) allgathers.*/\1/p' "$tmp/allgather.out")
ag_all=$((ag_all - $(sed -n 's/^allgather_mpi: rank 0: of 0 B: \([0-9]*\) allgathers$/\1/p' "$tmp/allgather.out")))
agsum=$(summary "$tmp/allgather.out" MPI_Allgather)
diag "$agsum"
agmc=$(field "$agsum" "over multicast")
ok "$([ $((agmc + $(field "$agsum" "point-to-point"))) -ge "$ag_all" ] &&
      [ "$(field "$agsum" "passed to the previous")" = 0 ]; echo $?)" \
	"allgather_ompi: all of rank 0's allgathers through libibmcast, none passed to the previous module"
ok "$([ "$(field "$agsum" "packed")" -gt 0 ] && [ "${agmc:-0}" -gt 0 ]; echo $?)" \
	"allgather_ompi: the strided types were packed by Open MPI's convertor; world's went by multicast (IBMCAST_ALLGATHER_ALGO=mcast)"
[ "$rc" = 0 ] || diag "$(grep -v -e ' ok$' "$tmp/allgather.out" | tail -n 30)"

# --- type signatures, MPI_BOTTOM, count 0 ----------------------------------
# semantics_ompi: permuted and negative-stride types against plain MPI_INT,
# an absolute-address type at MPI_BOTTOM, calls of count 0 with no buffers,
# on world, a dup, a Cartesian and a merged communicator; a broadcast of
# mismatched lengths on world under MPI_ERRORS_RETURN (an error, then the
# communicator works); on every communicator an inner rank of the broadcast
# tree receiving half the root's count: it alone gets MPI_ERR_TRUNCATE, the
# others MPI_SUCCESS and the data, no abort (issue 11), with auto's choice
# and again on the point-to-point binomial tree; an allreduce and an
# allgather where that rank passes half the count fail on every rank.
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/semantics.out" "$SPROG" trunc -- \
	OMPI_MCA_coll_ibmcast_verbose=1 || rc=$?
ok "$([ "$rc" = 0 ] &&
      [ "$(grep -cE '^semantics_mpi: rank [0-9]+: [0-9]+ cases verified, 0 errors$' "$tmp/semantics.out")" = "$NRANKS" ] &&
      [ "$(grep -c 'case=truncated-inner-rank errors=0 ok$' "$tmp/semantics.out")" = 4 ] &&
      ! grep -q 'FAIL$' "$tmp/semantics.out"; echo $?)" \
	"semantics_ompi: every case verified (bytes in type-map order, MPI_BOTTOM, count 0, an inner rank truncated on 4 communicators)"
ssum=$(summary "$tmp/semantics.out" MPI_Bcast)
diag "$ssum"
# (Open MPI's own communicator constructors run MPI_Ibcast: counted
# non-blocking, not the program's)
ok "$([ "$(field "$ssum" "over multicast")" -gt 0 ] &&
      [ "$(field "$ssum" "packed")" -gt 0 ] &&
      grep -q '(0 communicator not mapped, 0 over 4 GiB, ' <<< "$ssum"; echo $?)" \
	"semantics_ompi: its broadcasts went over multicast, those of permuted types packed, none passed to the previous module"
[ "$rc" = 0 ] || diag "$(grep -v ' ok$' "$tmp/semantics.out" | tail -n 30)"
rc=0
ompirun "$tmp/semantics-bin.out" "$SPROG" trunc -- \
	IBMCAST_BCAST_ALGO=binomial || rc=$?
ok "$([ "$rc" = 0 ] &&
      [ "$(grep -cE '^semantics_mpi: rank [0-9]+: [0-9]+ cases verified, 0 errors$' "$tmp/semantics-bin.out")" = "$NRANKS" ] &&
      [ "$(grep -c 'case=truncated-inner-rank errors=0 ok$' "$tmp/semantics-bin.out")" = 4 ] &&
      ! grep -q 'FAIL$' "$tmp/semantics-bin.out"; echo $?)" \
	"semantics_ompi, IBMCAST_BCAST_ALGO=binomial: the truncated inner rank alone gets MPI_ERR_TRUNCATE, its subtree its data, no abort"
[ "$rc" = 0 ] || diag "$(grep -v ' ok$' "$tmp/semantics-bin.out" | tail -n 30)"

# --- Fortran ---------------------------------------------------------------
# Fortran's MPI_BCAST reaches the component inside Open MPI, nothing
# interposed. Built here with mpifort.openmpi (gfortran), which configure
# does not require.
if command -v mpifort.openmpi > /dev/null &&
   mpifort.openmpi -o "$tmp/bcast_f" "$top_srcdir/tests/mpi/bcast_f.f90" \
	> "$tmp/bcast_f.build" 2>&1; then
	dp_ctl reset > /dev/null
	rc=0
	ompirun "$tmp/fortran.out" "$tmp/bcast_f" -- \
		OMPI_MCA_coll_ibmcast_verbose=1 \
		${asan_preload:+LD_PRELOAD=$asan_preload} || rc=$?
	is "$rc/$(grep -cE '^bcast_f: rank [0-9]+: 32 broadcasts verified, 0 errors$' "$tmp/fortran.out")" \
		"0/$NRANKS" "Fortran (use mpi): mpirun exits 0, every rank verified every MPI_BCAST"
	bsum=$(summary "$tmp/fortran.out" MPI_Bcast)
	diag "$bsum"
	ok "$([ "$(field "$bsum" "over multicast")" -gt 0 ] &&
	      [ "$(field "$bsum" "passed to the previous")" = 0 ] &&
	      [ "$(rx_minus_tx)" -gt 0 ]; echo $?)" \
		"Fortran: MPI_BCAST went over multicast (the component's summary, the data plane's counters)"
	[ "$rc" = 0 ] || diag "$(tail -n 20 "$tmp/fortran.out")"
else
	skip "no mpifort.openmpi (gfortran) to build tests/mpi/bcast_f.f90"
	skip "no mpifort.openmpi (gfortran) to build tests/mpi/bcast_f.f90"
fi
# coll_f (include 'mpif.h'): every result of MPI_ALLGATHER and
# MPI_ALLREDUCE on MPI_COMM_WORLD and a split; LOGICAL, which libibmcast
# does not have, goes to the previous module and must be right too.
if command -v mpifort.openmpi > /dev/null &&
   mpifort.openmpi -fallow-argument-mismatch -o "$tmp/coll_f" \
	"$top_srcdir/tests/mpi/coll_f.f90" > "$tmp/coll_f.build" 2>&1; then
	rc=0
	ompirun "$tmp/coll_f.out" "$tmp/coll_f" -- \
		OMPI_MCA_coll_ibmcast_verbose=1 \
		${asan_preload:+LD_PRELOAD=$asan_preload} || rc=$?
	is "$rc/$(grep -cE '^coll_f: rank [0-9]+: 22 collectives verified, 0 errors$' "$tmp/coll_f.out")" \
		"0/$NRANKS" "Fortran (mpif.h): every MPI_ALLGATHER and MPI_ALLREDUCE result right"
	gsum=$(summary "$tmp/coll_f.out" MPI_Allgather)
	rsum=$(summary "$tmp/coll_f.out" MPI_Allreduce)
	diag "$gsum"
	diag "$rsum"
	# (>= 6: Open MPI's MPI_Comm_split gathers the colours with its own
	# MPI_Allgather, which reaches the component too.)
	ok "$([ $(($(field "$gsum" "over multicast") + $(field "$gsum" "point-to-point"))) -ge 6 ] &&
	      [ $(($(field "$rsum" "over multicast") + $(field "$rsum" "point-to-point"))) = 13 ] &&
	      [ "$(field "$rsum" "passed to the previous")" = 4 ] &&
	      [ "$(field "$rsum" "datatype not mapped")" = 4 ]; echo $?)" \
		"Fortran: every MPI_ALLGATHER and every INTEGER/REAL/DOUBLE PRECISION/2INTEGER MPI_ALLREDUCE by libibmcast, the 4 LOGICAL ones passed on"
	[ "$rc" = 0 ] || diag "$(tail -n 20 "$tmp/coll_f.out")"
else
	skip "no mpifort.openmpi (gfortran) to build tests/mpi/coll_f.f90"
	skip "no mpifort.openmpi (gfortran) to build tests/mpi/coll_f.f90"
fi

# --- coll_ibmcast_enable 0 ---------------------------------------------------
dp_ctl reset > /dev/null
rc=0
MPIRUN_OPTS="--mca coll_base_verbose 9 --mca coll_ibmcast_enable 0" \
	ompirun "$tmp/off.out" "$BPROG" -- OMPI_MCA_coll_ibmcast_verbose=1 ||
	rc=$?
is "$rc" 0 "--mca coll_ibmcast_enable 0: mpirun exits 0"
ok "$(bverified "$tmp/off.out"; echo $?)" \
	"--mca coll_ibmcast_enable 0: every rank verified every broadcast"
is "$(grep -c 'selecting *ibmcast' "$tmp/off.out")/$(grep -c '^coll_ibmcast' "$tmp/off.out")" \
	"0/0" "--mca coll_ibmcast_enable 0: never selected, says nothing"
is "$(dp_total_link_bytes)/$(rx_minus_tx)" "0/0" \
	"--mca coll_ibmcast_enable 0: no traffic on the fabric at all"

# --- no ready pool ---------------------------------------------------------
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/nopool.out" "$BPROG" -- IBMCAST_STATE=unavailable \
	IBMCAST_REASON="test says so" || rc=$?
is "$rc" 0 "IBMCAST_STATE=unavailable: mpirun exits 0"
ok "$(bverified "$tmp/nopool.out"; echo $?)" \
	"IBMCAST_STATE=unavailable: every rank verified every broadcast"
is "$(grep -c '^coll_ibmcast' "$tmp/nopool.out")/$(dp_total_link_bytes)" \
	"1/0" "IBMCAST_STATE=unavailable: one line from rank 0, no fabric traffic"
diag "$(grep '^coll_ibmcast' "$tmp/nopool.out")"

# A job that never asked for ibmcast: silent unless asked.
rc=0
(unset IBMCAST_STATE; ompirun "$tmp/none.out" "$BPROG") || rc=$?
is "$rc/$(grep -c '^coll_ibmcast' "$tmp/none.out")" "0/0" \
	"no IBMCAST_STATE: mpirun exits 0, the component says nothing"
ok "$(bverified "$tmp/none.out"; echo $?)" \
	"no IBMCAST_STATE: every rank verified every broadcast"

# --- the PMPI shim built for Open MPI, instead of the component -------------
# libibmcast_ompi: the same shim as MPICH's, against Open MPI's mpi.h, for
# a site that does not want the component (turned off here by --mca coll).
dp_ctl reset > /dev/null
rc=0
MPIRUN_OPTS="--mca coll ^ibmcast" ompirun "$tmp/oshim.out" "$BPROG" -- \
	LD_PRELOAD="$OSHIM" IBMCAST_MPI_VERBOSE=1 || rc=$?
is "$rc/$(grep -c '^coll_ibmcast' "$tmp/oshim.out")" "0/0" \
	"libibmcast_ompi preloaded, the component off: mpirun exits 0, the component says nothing"
ok "$(bverified "$tmp/oshim.out"; echo $?)" \
	"libibmcast_ompi: every rank verified every broadcast"
s=$(grep '^ibmcast_mpi: rank 0: .* MPI_Bcast over ' "$tmp/oshim.out")
diag "$s"
ok "$([ "$(sed -n 's/.* over ibmcast (mcast \([0-9]*\),.*/\1/p' <<< "$s")" -gt 100 ] &&
      grep -q '), 0 passed to MPI;' <<< "$s" && [ "$(rx_minus_tx)" -gt 1000 ]; echo $?)" \
	"libibmcast_ompi: the shim took every broadcast, over multicast (its summary, the data plane's counters)"
[ "$rc" = 0 ] || diag "$(grep -v ' ok$' "$tmp/oshim.out" | tail -n 20)"

# --- a shim built for the other MPI steps aside -------------------------------
# MPICH's shim preloaded into this Open MPI program: its entry points bind
# to Open MPI's own functions (mpi_shim_abi.h); one line says so. It used
# to crash in MPI_Init.
dp_ctl reset > /dev/null
rc=0
MPIRUN_OPTS="--mca coll ^ibmcast" ompirun "$tmp/mismatch.out" "$BPROG" -- \
	LD_PRELOAD="$MSHIM" IBMCAST_MPI_VERBOSE=1 || rc=$?
is "$rc/$(grep -c '^ibmcast_mpi: this shim is built for MPICH, but the program runs on another MPI (.*libmpi\.so.*): stepping aside' "$tmp/mismatch.out")" \
	"0/1" "MPICH's shim in an Open MPI program: mpirun exits 0, one line says it steps aside" ||
	diag "$(grep -v ' ok$' "$tmp/mismatch.out" | tail -n 20)"
ok "$(bverified "$tmp/mismatch.out"; echo $?)" \
	"  every rank verified every broadcast, by Open MPI's own"
is "$(dp_total_link_bytes)/$(rx_minus_tx)" "0/0" "  no traffic on the fabric at all"

# --- MPI's progress rule inside the component's collectives -----------------
# As in mpi_shim.sh: an 8 MiB MPI_Isend left pending by rank 0 across each
# collective, received by rank 1 before it enters; the component runs
# opal_progress while libibmcast waits (ibmc_set_wait_hook(3)).
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/progress.out" "$PPROG" -- OMPI_MCA_coll_ibmcast_verbose=1 \
	IBMCAST_BCAST_TIMEOUT_MS=20000 || rc=$?
is "$rc/$(grep -cE '^progress_mpi: rank [0-9]+: 12 rounds, 0 errors$' "$tmp/progress.out")" \
	"0/$NRANKS" "progress_ompi: an MPI_Isend pending across each collective completes, every result right" ||
	diag "$(grep -v ' ok$' "$tmp/progress.out" | tail -n 20)"
ok "$(for c in MPI_Bcast MPI_Barrier MPI_Allgather MPI_Allreduce; do
	l=$(summary "$tmp/progress.out" "$c")
	[ "$(field "$l" "passed to the previous")" = 0 ] &&
	[ $(( $(field "$l" "over multicast") + $(field "$l" "point-to-point by libibmcast") )) -ge 3 ] || exit 1
      done; echo $?)" \
	"  each of the four collectives went through the component, none passed to the previous module" ||
	diag "$(grep '^coll_ibmcast: rank 0' "$tmp/progress.out")"


# --- a late rank and a dead one (libjob/live.h) -----------------------------
# As in mpi_shim.sh: rank 1 3 s (three times IBMCAST_DEAD_MS) late before
# each of the four collectives, no deadline: every rank passes. (Before
# liveness, a rank late by more than IBMCAST_BCAST_TIMEOUT_MS failed the
# job with MPI_ERR_OTHER.)
dp_ctl reset > /dev/null
rc=0
ompirun "$tmp/late.out" "$LPROG" -- OMPI_MCA_coll_ibmcast_verbose=1 \
	IBMCAST_BCAST_TIMEOUT_MS=0 IBMCAST_DEAD_MS=1000 LATE_MPI_SECONDS=3 ||
	rc=$?
is "$rc/$(grep -cE '^late_mpi: rank [0-9]+: 4 collectives verified, 0 errors' "$tmp/late.out")" \
	"0/$NRANKS" "late_ompi: rank 1 3 s late before each collective: every rank verified all four" ||
	diag "$(tail -n 20 "$tmp/late.out")"
like "$(late_mpi_waited "$tmp/late.out")" \
	'^1[0-9]\.' "  ... rank 0 waited for it in them (10 s or more)" ||
	diag "$(tail -n 20 "$tmp/late.out")"
ok "$(for c in MPI_Bcast MPI_Barrier MPI_Allgather MPI_Allreduce; do
	l=$(summary "$tmp/late.out" "$c")
	[ "$(field "$l" "passed to the previous")" = 0 ] &&
	[ $(( $(field "$l" "over multicast") + $(field "$l" "point-to-point by libibmcast") )) = 1 ] || exit 1
      done; echo $?)" \
	"  ... each of the four went through the component, none passed to the previous module" ||
	diag "$(grep '^coll_ibmcast: rank 0' "$tmp/late.out")"

# Rank 1 leaves (_exit) before the barrier, MPI_ERRORS_RETURN on world;
# mpirun keeps the others (orte_allowed_exit_without_sync,
# orte_enable_recovery). Each survivor's MPI_Barrier returns an error
# (MPI_ERR_OTHER: Open MPI 4 has no ULFM class) within IBMCAST_DEAD_MS
# plus a few seconds, the next MPI_Bcast at once.
dp_ctl reset > /dev/null
rc=0
MPIRUN_OPTS="--mca orte_allowed_exit_without_sync 1 --mca orte_enable_recovery 1" \
	ompirun "$tmp/dead.out" "$LPROG" -- IBMCAST_BCAST_TIMEOUT_MS=0 \
	IBMCAST_DEAD_MS=1000 LATE_MPI_DIE=1 || rc=$?
is "$(late_mpi_dead "$tmp/dead.out" 16)" \
	"$((NRANKS - 1))/$((NRANKS - 1))" \
	"late_ompi: rank 1 dies: each survivor's MPI_Barrier returns MPI_ERR_OTHER within 6 s, the next MPI_Bcast at once (mpirun exits $rc)" ||
	diag "$(tail -n 30 "$tmp/dead.out")"
like "$(grep -m1 'error: .*answered no liveness probe' "$tmp/dead.out")" \
	'rank 1 \(node node2\)' "  ... and the error names the dead rank and its node" ||
	diag "$(tail -n 30 "$tmp/dead.out")"
