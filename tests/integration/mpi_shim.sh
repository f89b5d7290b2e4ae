#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# libibmcast_mpi.so under an unmodified MPI program (tests/mpi/bcast_mpi,
# MPICH's mpiexec, one rank per simulated node) on the simulated fabric
# with OpenSM and the data plane: every root, 1 B to 1 MiB, MPI_BYTE,
# MPI_INT and MPI_DOUBLE, on MPI_COMM_WORLD, a dup, a split and a
# communicator from MPI_Comm_create, plus strided and mixed datatypes, all
# verified element by element; the broadcasts went over the job's multicast
# groups (the data plane replicated packets, the shim's summary counts
# mcast); with IBMCAST_MPI=0 the same program passes with no fabric
# traffic; without a ready pool the shim stays out of the way.
# tests/mpi/barrier_mpi checks that no rank leaves an MPI_Barrier before
# all entered (world, dup, split, one-rank splits, between broadcasts): the
# barriers went through libibmcast (auto, then the multicast release),
# those on an intercommunicator to MPI's own; the check passes MPICH's own
# barrier (IBMCAST_MPI=0) and catches a program without barriers; a
# barrier that times out in libibmcast aborts the job, saying why.
# tests/mpi/allreduce_mpi and allgather_mpi check every element of
# MPI_Allreduce (SUM..BXOR, LAND, MINLOC/MAXLOC; integer, double and pair
# types; MPI_IN_PLACE; counts 0..100000; the same bits on every rank) and
# MPI_Allgather (0 B..256 KiB blocks, MPI_IN_PLACE, strided and mixed
# types) on world, a dup and a split: the mapped calls went through
# libibmcast (the shim's counters, by multicast on world), a user-defined
# operation and MPI_C_BOOL to MPI's own, counted with their reason.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

SHIM=$top_builddir/libjob/.libs/libibmcast_mpi.so
PROG=$top_builddir/tests/mpi/bcast_mpi
BPROG=$top_builddir/tests/mpi/barrier_mpi
ARPROG=$top_builddir/tests/mpi/allreduce_mpi
AGPROG=$top_builddir/tests/mpi/allgather_mpi
SPROG=$top_builddir/tests/mpi/semantics_mpi
TPROG=$top_builddir/tests/mpi/threads_mpi
BITERS=100	# rounds of barrier_mpi (4 barriers each, on 4 communicators)
NRANKS=4

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
need_file "$SHIM" "libjob/libibmcast_mpi.so (configure found no MPI?)"
# MPICH's own launcher, by its own name: with Open MPI installed beside it
# the plain mpiexec is Open MPI's (its alternative has the higher priority).
# The Open MPI side is tests/integration/ompi_coll.sh.
ldd "$SHIM" | grep -q libmpich ||
	skip_all "libibmcast_mpi.so is not built against MPICH (configure found only Open MPI)"
MPIEXEC=$(command -v mpiexec.mpich) ||
	skip_all "no mpiexec.mpich (Debian package mpich)"
need_file "$PROG" "tests/mpi/bcast_mpi"
need_file "$BPROG" "tests/mpi/barrier_mpi"
need_file "$ARPROG" "tests/mpi/allreduce_mpi"
need_file "$AGPROG" "tests/mpi/allgather_mpi"
need_file "$SPROG" "tests/mpi/semantics_mpi"
need_file "$TPROG" "tests/mpi/threads_mpi"
PPROG=$top_builddir/tests/mpi/progress_mpi
need_file "$PPROG" "tests/mpi/progress_mpi"
CTPROG=$top_builddir/tests/mpi/threads_coll_mpi
need_file "$CTPROG" "tests/mpi/threads_coll_mpi"
# Open MPI's build of the shim, when configure made one (the reverse of
# ompi_coll.sh's mismatch case).
OSHIM=$top_builddir/libjob/.libs/libibmcast_ompi.so
need_file "$OSHIM" "libjob/libibmcast_ompi.so (configure --with-openmpi-shim)"
need_file "$IBMCASTCTL" "tools/ibmcastctl"

plan 63

# Under the sanitizer build: MPICH (UCX) leaks from modules it unloads
# before exit, which LeakSanitizer cannot name to suppress (a plain
# MPI_Init/MPI_Finalize program shows them). The ranks keep every other
# check; the shim's own allocations are freed at MPI_Finalize.
rank_asan=${ASAN_OPTIONS-}
if ldd "$SHIM" 2>/dev/null | grep -q libasan; then
	rank_asan=${rank_asan:+$rank_asan:}detect_leaks=0
	diag "sanitizer build: MPI ranks run with detect_leaks=0 (MPICH's own leaks)"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-mpi-test.XXXXXX")
at_exit "rm -rf '$tmp'"

sim_up --hosts 8 --radix 8 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 401 "node[1-$NRANKS]" 4 || bail_out "job 401 not ready"
ibmcast_env_from_wait 401 || bail_out "no wait reply for job 401"

# mpirun OUT [VAR=VALUE...]: $PROG (or the program in RUN_PROG, with the
# arguments in RUN_ARGS) on NRANKS ranks in MPMD form, rank i on node i+1
# (its IBMCAST_NODE), with the given environment; exit status of mpiexec;
# stdout+stderr in OUT. With RUN_STDERR set, rank i's stderr goes straight
# to $RUN_STDERR.i instead: mpiexec may drop what it had not forwarded yet
# when a rank aborts.
mpirun() {
	local out=$1 i args=() prog=${RUN_PROG:-$PROG} wrap
	shift
	for ((i = 0; i < NRANKS; i++)); do
		[ "$i" = 0 ] || args+=(:)
		wrap=()
		# shellcheck disable=SC2016 # expanded by the rank's sh
		[ -z "${RUN_STDERR:-}" ] ||
			wrap=(RANK_STDERR="$RUN_STDERR.$i"
			      sh -c 'exec "$0" "$@" 2> "$RANK_STDERR"')
		# shellcheck disable=SC2206 # RUN_ARGS: words
		args+=(-n 1 env IBMCAST_NODE=node$((i + 1)) "$@" "${wrap[@]}"
			"$prog" ${RUN_ARGS:-})
	done
	diag "mpiexec: $NRANKS ranks of ${prog##*/} $*"
	ASAN_OPTIONS=$rank_asan timeout 120 "$MPIEXEC" "${args[@]}" \
		< /dev/null > "$out" 2>&1
}

# verified OUT: every rank printed its verdict with 0 errors, and no
# size line failed.
verified() {
	[ "$(grep -cE '^bcast_mpi: rank [0-9]+: [0-9]+ broadcasts verified, 0 errors$' "$1")" = "$NRANKS" ] &&
		! grep -q 'FAIL$' "$1" && grep -q '^size ' "$1"
}

# rx_minus_tx: packets the data plane delivered to QPs beyond those sent
# to it: > 0 only when the fabric replicated multicast (a unicast send is
# delivered once or dropped). Global counters: the endpoints of the job's
# ranks are gone once mpiexec returns.
rx_minus_tx() {
	dp_ctl counters | jq '.delivered - .sends'
}

# --- with the shim ---------------------------------------------------------
dp_ctl reset > /dev/null
rc=0
mpirun "$tmp/shim.out" LD_PRELOAD="$SHIM" IBMCAST_MPI_VERBOSE=1 || rc=$?
is "$rc" 0 "with libibmcast_mpi.so preloaded: mpiexec exits 0"
ok "$(verified "$tmp/shim.out"; echo $?)" \
	"every rank verified every broadcast (world, dup, split, create; 1 B..1 MiB; BYTE, INT, DOUBLE, strided, mixed)"
grep -E '^size comm=(world|create).*bytes=1048576' "$tmp/shim.out" |
	sed 's/^/# /'
summary=$(grep '^ibmcast_mpi: rank 0: .* MPI_Bcast over ' "$tmp/shim.out")
diag "$summary"
mcast=$(sed -n 's/.* over ibmcast (mcast \([0-9]*\),.*/\1/p' <<< "$summary")
passed=$(sed -n 's/.*), \([0-9]*\) passed to MPI;.*/\1/p' <<< "$summary")
ok "$([ "${mcast:-0}" -gt 100 ]; echo $?)" \
	"the shim's summary: ${mcast:-no} broadcasts of rank 0 over multicast"
is "$passed" 0 "no broadcast was handed to MPI's own"
like "$summary" "3 communicators \(0 without multicast\)" \
	"rank 0 mapped world, the dup and its split (not in the odd ranks' comm), each with a pool group"
bytes=$(dp_total_link_bytes)
extra=$(rx_minus_tx)
ok "$([ "${extra:-0}" -gt 1000 ]; echo $?)" \
	"the data plane replicated multicast: $extra more packets delivered than sent"
ok "$([ "${bytes:-0}" -gt $((3 * 1048576)) ]; echo $?)" \
	"fabric links carried the broadcasts ($bytes bytes)"
if [ "$rc" != 0 ] || ! verified "$tmp/shim.out"; then
	diag "$(grep -v ' ok$' "$tmp/shim.out" | tail -n 30)"
fi

# --- IBMCAST_MPI=0: pure pass-through -------------------------------------
dp_ctl reset > /dev/null
rc=0
mpirun "$tmp/off.out" LD_PRELOAD="$SHIM" IBMCAST_MPI=0 IBMCAST_MPI_VERBOSE=1 ||
	rc=$?
is "$rc" 0 "IBMCAST_MPI=0: mpiexec exits 0"
ok "$(verified "$tmp/off.out"; echo $?)" \
	"IBMCAST_MPI=0: every rank verified every broadcast"
is "$(dp_total_link_bytes)/$(rx_minus_tx)" "0/0" \
	"IBMCAST_MPI=0: no traffic on the fabric at all"
is "$(grep -c '^ibmcast' "$tmp/off.out")" 0 "IBMCAST_MPI=0: the shim says nothing"

# --- no ready pool: the shim steps aside with one line --------------------
dp_ctl reset > /dev/null
rc=0
mpirun "$tmp/nopool.out" LD_PRELOAD="$SHIM" IBMCAST_STATE=unavailable \
	IBMCAST_REASON="test says so" || rc=$?
is "$rc" 0 "IBMCAST_STATE=unavailable: mpiexec exits 0"
ok "$(verified "$tmp/nopool.out"; echo $?)" \
	"IBMCAST_STATE=unavailable: every rank verified every broadcast"
is "$(grep -c '^ibmcast' "$tmp/nopool.out")/$(dp_total_link_bytes)" \
	"1/0" "IBMCAST_STATE=unavailable: one line from rank 0, no fabric traffic"
diag "$(grep '^ibmcast' "$tmp/nopool.out")"

# --- MPI_Allreduce, MPI_Allgather ------------------------------------------
# csum OUT COLL: the shim's summary line of COLL (MPI_Allreduce,
# MPI_Allgather) on rank 0. cfield LINE TEXT: the number before TEXT.
csum() {
	grep "^ibmcast_mpi: rank 0: [0-9]* $2 over " "$1"
}
cfield() {
	sed -n "s/.*[ :(]\([0-9][0-9]*\) $2.*/\1/p" <<< "$1" | head -n 1
}

dp_ctl reset > /dev/null
rc=0
RUN_PROG=$ARPROG mpirun "$tmp/allreduce.out" LD_PRELOAD="$SHIM" \
	IBMCAST_MPI_VERBOSE=1 || rc=$?
is "$rc" 0 "allreduce_mpi with the shim: mpiexec exits 0"
arline='^allreduce_mpi: rank [0-9]+: [0-9]+ allreduces verified \([0-9]+ user-defined op, [0-9]+ MPI_C_BOOL\), 0 errors$'
ok "$([ "$(grep -cE "$arline" "$tmp/allreduce.out")" = "$NRANKS" ] &&
      ! grep -q 'FAIL$' "$tmp/allreduce.out"; echo $?)" \
	"allreduce_mpi: every rank verified every result and rank 0's bits (SUM, PROD, MIN, MAX, BXOR, LAND, MINLOC, MAXLOC; IN_PLACE; counts 0..100000; world, dup, split)"
grep '^allreduce comm=' "$tmp/allreduce.out" | sed 's/^/# /'
read -r ar_all ar_user ar_bool < <(sed -n 's/^allreduce_mpi: rank 0: \([0-9]*\) allreduces verified (\([0-9]*\) user-defined op, \([0-9]*\) MPI_C_BOOL).*/\1 \2 \3/p' "$tmp/allreduce.out")
arsum=$(csum "$tmp/allreduce.out" MPI_Allreduce)
diag "$arsum"
is "$(cfield "$arsum" "MPI_Allreduce over")/$(cfield "$arsum" "passed to MPI")" \
	"$((ar_all - ar_user - ar_bool))/$((ar_user + ar_bool))" \
	"allreduce_mpi: rank 0's allreduces on predefined ops and types over ibmcast, the rest passed to MPI"
is "$(cfield "$arsum" "user-defined op")/$(cfield "$arsum" "datatype not mapped")" \
	"$ar_user/$ar_bool" \
	"allreduce_mpi: passed through as a user-defined op ($ar_user) and a datatype not mapped (MPI_C_BOOL: $ar_bool)"
ok "$([ "$(sed -n 's/.*, p2p \([0-9]*\);.*/\1/p' <<< "$arsum")" -gt 0 ] &&
      [ "$(sed -n 's/.*(mcast \([0-9]*\),.*/\1/p' <<< "$arsum")" -gt 0 ]; echo $?)" \
	"allreduce_mpi: by multicast (4 ranks) and point-to-point (the 2-rank split)"
like "$arsum" "; allreduces=$((ar_all - ar_user - ar_bool))\$" \
	"allreduce_mpi: libibmcast's own counters saw as many allreduces"
extra=$(rx_minus_tx)
ok "$([ "${extra:-0}" -gt 1000 ]; echo $?)" \
	"allreduce_mpi: the data plane replicated multicast ($extra more packets delivered than sent)"
if [ "$rc" != 0 ]; then
	diag "$(grep -v ' ok$' "$tmp/allreduce.out" | tail -n 30)"
fi

dp_ctl reset > /dev/null
rc=0
# The multicast allgather by name: auto takes recursive doubling or the
# ring (ibmc_allgather(3)).
RUN_PROG=$AGPROG mpirun "$tmp/allgather.out" LD_PRELOAD="$SHIM" \
	IBMCAST_MPI_VERBOSE=1 IBMCAST_ALLGATHER_ALGO=mcast || rc=$?
is "$rc" 0 "allgather_mpi with the shim: mpiexec exits 0"
agline='^allgather_mpi: rank [0-9]+: [0-9]+ allgathers verified \([0-9]+ of derived types\), 0 errors$'
ok "$([ "$(grep -cE "$agline" "$tmp/allgather.out")" = "$NRANKS" ] &&
      ! grep -q 'FAIL$' "$tmp/allgather.out"; echo $?)" \
	"allgather_mpi: every rank verified every block (BYTE, INT, DOUBLE, 0 B..256 KiB, IN_PLACE, strided and mixed types; world, dup, split)"
grep '^allgather comm=' "$tmp/allgather.out" | sed 's/^/# /'
ag_all=$(sed -n 's/^allgather_mpi: rank 0: \([0-9]*\) allgathers.*/\1/p' "$tmp/allgather.out")
agsum=$(csum "$tmp/allgather.out" MPI_Allgather)
diag "$agsum"
is "$(cfield "$agsum" "MPI_Allgather over")/$(cfield "$agsum" "passed to MPI")" \
	"$ag_all/0" "allgather_mpi: all of rank 0's allgathers over ibmcast, none passed to MPI"
ok "$([ "$(cfield "$agsum" "packed")" -gt 0 ] &&
      [ "$(sed -n 's/.*(mcast \([0-9]*\),.*/\1/p' <<< "$agsum")" -gt 0 ]; echo $?)" \
	"allgather_mpi: the strided types were packed; world's went by multicast (IBMCAST_ALLGATHER_ALGO=mcast)"
like "$agsum" "; allgathers=$ag_all\$" \
	"allgather_mpi: libibmcast's own counters saw as many allgathers"
if [ "$rc" != 0 ]; then
	diag "$(grep -v ' ok$' "$tmp/allgather.out" | tail -n 30)"
fi

# The checks pass MPICH's own collectives.
rc=0
RUN_PROG=$ARPROG mpirun "$tmp/allreduce-off.out" LD_PRELOAD="$SHIM" \
	IBMCAST_MPI=0 || rc=$?
is "$rc/$(grep -cE "$arline" "$tmp/allreduce-off.out")" "0/$NRANKS" \
	"allreduce_mpi, IBMCAST_MPI=0: MPICH's own allreduce passes the check"
rc=0
RUN_PROG=$AGPROG mpirun "$tmp/allgather-off.out" LD_PRELOAD="$SHIM" \
	IBMCAST_MPI=0 || rc=$?
is "$rc/$(grep -cE "$agline" "$tmp/allgather-off.out")" "0/$NRANKS" \
	"allgather_mpi, IBMCAST_MPI=0: MPICH's own allgather passes the check"

# --- type signatures, MPI_BOTTOM, count 0 ----------------------------------
# semantics_mpi: a permuted indexed type and a negative-stride vector (no
# holes, bytes out of memory order) against plain MPI_INT, an
# absolute-address type at MPI_BOTTOM, calls of count 0 with no buffers,
# on world, a dup, a Cartesian and a merged communicator; a broadcast of
# mismatched lengths on world under MPI_ERRORS_RETURN (an error, then the
# communicator works); with "alias", an allreduce and an allgather whose
# send buffer overlaps the receive buffer (MPI_ERR_BUFFER from MPICH, the
# shim passing them to it).
# sverified OUT: every rank's verdict says 0 errors, no case failed.
sverified() {
	[ "$(grep -cE '^semantics_mpi: rank [0-9]+: [0-9]+ cases verified, 0 errors$' "$1")" = "$NRANKS" ] &&
		! grep -q 'FAIL$' "$1" && grep -q '^semantics comm=' "$1"
}
rc=0
RUN_PROG=$SPROG RUN_ARGS=alias mpirun "$tmp/semantics.out" \
	LD_PRELOAD="$SHIM" IBMCAST_MPI_VERBOSE=1 || rc=$?
ok "$([ "$rc" = 0 ] && sverified "$tmp/semantics.out"; echo $?)" \
	"semantics_mpi with the shim: every case verified (bytes in type-map order, MPI_BOTTOM, count 0, mismatched lengths, aliased buffers)"
grep -e '^semantics comm=' "$tmp/semantics.out" | grep -v ' ok$' | sed 's/^/# /'
ssum=$(grep '^ibmcast_mpi: rank 0: .* MPI_Bcast over ' "$tmp/semantics.out")
diag "$ssum"
ok "$([ "$(sed -n 's/.*; \([0-9]*\) packed), 0 passed to MPI;.*/\1/p' <<< "$ssum")" -gt 0 ] &&
      [ "$(sed -n 's/.*(mcast \([0-9]*\),.*/\1/p' <<< "$ssum")" -gt 0 ] &&
      grep -q '; 5 communicators (' <<< "$ssum"; echo $?)" \
	"semantics_mpi: its broadcasts went through libibmcast on world, the dup, the Cartesian ring, the split and the merged intercommunicator (5 mapped), those of permuted types packed, none passed to MPI"
[ "$rc" = 0 ] || diag "$(tail -n 30 "$tmp/semantics.out")"
rc=0
RUN_PROG=$SPROG RUN_ARGS=alias mpirun "$tmp/semantics-off.out" \
	LD_PRELOAD="$SHIM" IBMCAST_MPI=0 || rc=$?
ok "$([ "$rc" = 0 ] && sverified "$tmp/semantics-off.out"; echo $?)" \
	"semantics_mpi, IBMCAST_MPI=0: MPICH's own collectives pass the same checks"

# --- MPI_THREAD_MULTIPLE: collectives from several threads at once --------
# 4 threads per rank, each with its own duplicate of MPI_COMM_WORLD (made
# by the main thread), run broadcasts, allreduces, allgathers and barriers
# at the same time. Under MPI_THREAD_MULTIPLE the shim maps only
# MPI_COMM_WORLD (threads_mpi above), so these stay MPICH's: every result
# right, every call passed to MPI.
dp_ctl reset > /dev/null
rc=0
RUN_PROG=$CTPROG mpirun "$tmp/threads_coll.out" LD_PRELOAD="$SHIM" \
	IBMCAST_MPI_VERBOSE=1 || rc=$?
is "$rc/$(grep -cE '^threads_coll_mpi: rank [0-9]+: 2400 calls, 0 errors$' "$tmp/threads_coll.out")" \
	"0/$NRANKS" "MPI_THREAD_MULTIPLE: 4 threads at once on 4 communicators, every result right" ||
	diag "$(grep -v ' ok$' "$tmp/threads_coll.out" | tail -n 20)"
ok "$(for c in MPI_Bcast MPI_Barrier MPI_Allreduce MPI_Allgather; do
	grep -q "^ibmcast_mpi: rank 0: 0 $c over ibmcast .*, 600 passed to MPI" \
		"$tmp/threads_coll.out" || exit 1
      done; echo $?)" \
	"  the duplicates stayed MPICH's: every call passed to MPI" ||
	diag "$(grep '^ibmcast_mpi: rank 0' "$tmp/threads_coll.out")"
