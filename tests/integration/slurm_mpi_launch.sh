#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI programs launched by Slurm itself, as a user runs them: srun
# --ibmcast --mpi=pmi2 starts an MPICH program with the PMPI shim
# preloaded, and srun --ibmcast --mpi=pmix an Open MPI program that loads
# the coll/ibmcast component; 4 nodes, 1 and 2 tasks per node. Nothing but
# what Slurm exports (the pool, IBMCAST_NODE) reaches the tasks, besides
# the simulated fabric's socket, which on a cluster is the HCA. Every
# broadcast is verified on every rank, and the summaries, and each run's
# own data-plane counters (the switches replicated its packets), show they
# went over multicast on the groups Slurm's plugin reserved. Then, with each
# MPI, every mapped collective (comm_kinds_mpi: MPI_Bcast, MPI_Allreduce,
# MPI_Allgather, MPI_Barrier on communicators of every kind) and the
# Fortran program (MPI_BCAST, MPI_ALLREDUCE), on 4 tasks.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-slurm.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

SHIM=$top_builddir/libjob/.libs/libibmcast_mpi.so
MPROG=$top_builddir/tests/mpi/bcast_mpi
COMP=$top_builddir/ompi/.libs/mca_coll_ibmcast.so
OPROG=$top_builddir/tests/mpi/bcast_ompi

slurm_need
libjob_need
need_file "$SHIM" "libjob/libibmcast_mpi.so (configure --with-mpi)"
need_file "$MPROG" "tests/mpi/bcast_mpi"
need_file "$COMP" "ompi/mca_coll_ibmcast.so (configure --with-openmpi)"
need_file "$OPROG" "tests/mpi/bcast_ompi"
MKPROG=$top_builddir/tests/mpi/comm_kinds_mpi
OKPROG=$top_builddir/tests/mpi/comm_kinds_ompi
need_file "$MKPROG" "tests/mpi/comm_kinds_mpi"
need_file "$OKPROG" "tests/mpi/comm_kinds_ompi"
need_cmd mpifort.mpich mpich
need_cmd mpifort.openmpi libopenmpi-dev
need_cmd ompi_info openmpi-bin
[ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] ||
	[ -n "$(find /usr/lib -name mpi_pmix.so 2> /dev/null | head -n 1)" ] ||
	bail_out "Slurm's mpi/pmix plugin is missing (Debian package slurm-wlm-basic-plugins)"

plan 16

# Ranks of the sanitizer build: MPICH's and Open MPI's own leaks at exit
# cannot be named to suppress (as in mpi_shim.sh and ompi_coll.sh).
rank_asan=${ASAN_OPTIONS-}
if ldd "$SHIM" 2> /dev/null | grep -q libasan; then
	rank_asan=${rank_asan:+$rank_asan:}detect_leaks=0
fi

sim_up --hosts 8 || bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
slurm_up 4 spank timeout=30 || bail_out "Slurm did not come up"
tmp=$SLURM_DIR/t
mkdir -p "$tmp/components"
# Only the component in the directory Open MPI scans (see ompi_coll.sh).
ln -s "$(cd "$(dirname "$COMP")" && pwd)/${COMP##*/}" "$tmp/components/"
ompi_path=$tmp/components:$(ompi_info --path pkglibdir --parsable |
	sed -n 's/^path:pkglibdir://p')

# launch OUT NTASKS MPI [VAR=VALUE...] -- PROG: srun --ibmcast on 4 nodes
# with --mpi=MPI, the given environment only; output in OUT. What the
# fabric did in this run alone, from the data plane's counters reset
# before it: RUN_REP, the packets it delivered beyond those sent to it
# (> 0 only when the switches replicated multicast: a unicast is delivered
# once or dropped), and RUN_BYTES, the bytes its links carried. The
# integrations' own summaries say "over multicast"; these show it.
launch() {
	local out=$1 n=$2 mpi=$3 vars=() rc=0
	shift 3
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	diag "srun --ibmcast --mpi=$mpi -N4 -n$n ${1##*/}"
	dp_ctl reset > /dev/null || bail_out "the data plane's counters cannot be reset"
	slurm_cmd env IBMCAST_SIM_DATAPLANE="$IBMCAST_SIM_DATAPLANE" \
		IBMCAST_BCAST_TIMEOUT_MS=30000 ASAN_OPTIONS="$rank_asan" \
		"${vars[@]}" timeout 240 \
		srun --ibmcast --mpi="$mpi" -N4 -n"$n" "$@" > "$out" 2>&1 || rc=$?
	RUN_REP=$(dp_ctl counters | jq '.delivered - .sends')
	RUN_BYTES=$(dp_total_link_bytes)
	diag "  the data plane: $RUN_REP packets delivered beyond those sent, $RUN_BYTES bytes over links"
	return "$rc"
}
verified() {
	grep -cE '^bcast_mpi: rank [0-9]+: [0-9]+ broadcasts verified, 0 errors$' "$1"
}

# Each run's own replication (RUN_REP): each 1 MiB broadcast on world
# alone is at least 256 fragments (of 4 KiB at most), each reaching the 3
# other nodes, 2 of them by replication; every rank is a root of one, so
# at least 4 x 256 x 2 packets only the switches' replication delivers.
REP_MIN=$((4 * 256 * 2))
# (each run's links, RUN_BYTES: at least the 1 MiB broadcasts' bytes)
run_bytes=()
for n in 4 8; do
	out=$tmp/mpich.$n
	launch "$out" "$n" pmi2 LD_PRELOAD="$SHIM" IBMCAST_MPI_VERBOSE=1 -- "$MPROG"
	rc=$?
	run_bytes+=("$RUN_BYTES")
	is "$rc/$(verified "$out")" "0/$n" \
		"MPICH + shim, srun --mpi=pmi2 -n$n: every rank verified every broadcast" ||
		diag "$(grep -v ' ok$' "$out" | tail -n 20)" "$(slurm_logs | tail -n 20)"
	s=$(grep '^ibmcast_mpi: rank 0: .* MPI_Bcast over ' "$out")
	re='over ibmcast \(mcast [1-9][0-9]+,.*\), 0 passed to MPI; 3 communicators \(0 without multicast\)'
	ok "$([[ $s =~ $re ]] &&
	      [ "${RUN_REP:-0}" -ge "$REP_MIN" ]; echo $?)" \
		"  the shim took every broadcast, most over multicast, on the job's pool: the fabric replicated $RUN_REP packets (>= $REP_MIN)" ||
		diag "$s"
done

# Open MPI's shared-memory transport (btl/vader) would pair ranks of two
# Slurm nodes, which here are one host, through the session directory of
# only one of them and crash in MPI_Init with or without our component:
# point-to-point over TCP, as between real nodes.
for n in 4 8; do
	out=$tmp/ompi.$n
	launch "$out" "$n" pmix OMPI_MCA_mca_base_component_path="$ompi_path" \
		OMPI_MCA_btl=self,tcp OMPI_MCA_coll_ibmcast_verbose=1 -- "$OPROG"
	rc=$?
	run_bytes+=("$RUN_BYTES")
	is "$rc/$(verified "$out")" "0/$n" \
		"Open MPI + coll/ibmcast, srun --mpi=pmix -n$n: every rank verified every broadcast" ||
		diag "$(grep -v ' ok$' "$out" | tail -n 20)" "$(slurm_logs | grep -i -m 10 pmix)"
	s=$(grep '^coll_ibmcast: rank 0: MPI_Bcast: ' "$out")
	re='MPI_Bcast: [1-9][0-9]+ over multicast, .* 0 passed to the previous module'
	ok "$([[ $s =~ $re ]] &&
	      [ "${RUN_REP:-0}" -ge "$REP_MIN" ]; echo $?)" \
		"  the component took every broadcast, most over multicast: the fabric replicated $RUN_REP packets (>= $REP_MIN)" ||
		diag "$s"
done

is "$(cat "$tmp"/ompi.? | grep -c '^coll_ibmcast: rank 0: communicators: 3 mapped (0 without multicast)')" 2 \
	"Open MPI: world, its dup and split mapped, each with a pool group, in both runs"
ok "$(for b in "${run_bytes[@]}"; do
	[ "${b:-0}" -gt $((8 * 1048576)) ] || exit 1
      done; [ "${#run_bytes[@]}" = 4 ]; echo $?)" \
	"the fabric's links carried each run's broadcasts (${run_bytes[*]} bytes; > 8 MiB each)"

# --- every collective, and Fortran, under srun --------------------------------
for f in mpich openmpi; do
	mpifort.$f -o "$tmp/bcast_f.$f" "$top_srcdir/tests/mpi/bcast_f.f90" \
		> "$tmp/bcast_f.$f.build" 2>&1 ||
		bail_out "mpifort.$f cannot build tests/mpi/bcast_f.f90: $(cat "$tmp/bcast_f.$f.build")"
done
# (the Fortran programs are not built with the sanitizer: its runtime first)
fpreload=$(ldd "$SHIM" | awk '/libasan|libubsan/ { printf "%s:", $3 }')
kinds='^comm_kinds_mpi: rank [0-9]+: [0-9]+ communicators, [0-9]+ calls verified, 0 errors$'
fort='^bcast_f: rank [0-9]+: [0-9]+ broadcasts verified, 0 errors$'

# every_coll WHO MPI PROG SUMMARY MCAST [VAR=VALUE...]: PROG (comm_kinds_mpi)
# under srun --mpi=MPI on 4 tasks verifies every collective on every
# communicator, and rank 0's summary has a line matching SUMMARY (@C@: the
# collective) for each of the four and one matching MCAST (broadcasts over
# multicast).
every_coll() {
	local who=$1 mpi=$2 prog=$3 each=$4 mc=$5 out=$tmp/$2.kinds c
	shift 5
	launch "$out" 4 "$mpi" "$@" -- "$prog" 5
	is "$?/$(grep -cE "$kinds" "$out")" 0/4 \
		"$who under srun: every MPI_Bcast, MPI_Allreduce, MPI_Allgather and MPI_Barrier verified on every communicator" ||
		diag "$(grep -v ' ok$' "$out" | tail -n 20)"
	# (some communicators span 2 nodes, where multicast replicates
	# nothing: of this run's replication only that there was some)
	ok "$(for c in MPI_Bcast MPI_Barrier MPI_Allgather MPI_Allreduce; do
		grep -qE "${each//@C@/$c}" "$out" || exit 1
	      done
	      grep -qE "$mc" "$out" && [ "${RUN_REP:-0}" -gt 0 ]; echo $?)" \
		"  $who took each of the four collectives, none passed on, broadcasts over multicast (the fabric replicated $RUN_REP packets)" ||
		diag "$(grep -E '^(ibmcast_mpi|coll_ibmcast): rank 0' "$out")"
}

# fortran WHO MPI PROG MCAST [VAR=VALUE...]: PROG (bcast_f built by that
# MPI's mpifort) verifies every MPI_BCAST on 4 tasks, and rank 0's summary
# matches MCAST. Of the run's replication: its 8 broadcasts of 100000
# integers (every root, world and a dup) are at least 98 fragments (of
# 4 KiB at most) each, reaching the 3 other nodes, 2 by replication.
FREP_MIN=$((8 * 98 * 2))
fortran() {
	local who=$1 mpi=$2 prog=$3 mc=$4 out=$tmp/$2.fortran
	shift 4
	launch "$out" 4 "$mpi" "$@" -- "$prog"
	is "$?/$(grep -cE "$fort" "$out")/$(grep -cE "$mc" "$out")/$([ "${RUN_REP:-0}" -ge "$FREP_MIN" ]; echo $?)" 0/4/1/0 \
		"$who Fortran under srun: every MPI_BCAST verified, over multicast (the fabric replicated $RUN_REP packets, >= $FREP_MIN)" ||
		diag "$(grep -v ' ok$' "$out" | tail -n 20)"
}

every_coll "MPICH + shim" pmi2 "$MKPROG" \
	'^ibmcast_mpi: rank 0: [1-9][0-9]* @C@ over ibmcast .*, 0 passed to MPI' \
	'^ibmcast_mpi: rank 0: [0-9]+ MPI_Bcast over ibmcast \(mcast [1-9]' \
	LD_PRELOAD="$SHIM" IBMCAST_MPI_VERBOSE=1
fortran MPICH pmi2 "$tmp/bcast_f.mpich" \
	'^ibmcast_mpi: rank 0: [1-9][0-9]* MPI_Bcast over ibmcast \(mcast [1-9]' \
	LD_PRELOAD="$fpreload$SHIM" IBMCAST_MPI_VERBOSE=1

oenv=(OMPI_MCA_mca_base_component_path="$ompi_path" OMPI_MCA_btl=self,tcp
      OMPI_MCA_coll_ibmcast_verbose=1)
# (the component prints a line for each collective whatever it took: the
# calls through libibmcast, over multicast plus point-to-point, must not
# be 0, as the shim's total above)
every_coll "Open MPI + coll/ibmcast" pmix "$OKPROG" \
	'^coll_ibmcast: rank 0: @C@: ([1-9][0-9]* over multicast, [0-9]+|[0-9]+ over multicast, [1-9][0-9]*) point-to-point by libibmcast.*, 0 passed to the previous module' \
	'^coll_ibmcast: rank 0: MPI_Bcast: [1-9][0-9]* over multicast' "${oenv[@]}"
fortran "Open MPI" pmix "$tmp/bcast_f.openmpi" \
	'^coll_ibmcast: rank 0: MPI_Bcast: [1-9][0-9]* over multicast' \
	"${oenv[@]}" LD_PRELOAD="$fpreload"
