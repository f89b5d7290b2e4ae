#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The chaos soak's short variant (tests/soak/soak.sh --short) through the
# MPICH shim and through the Open MPI component: five seeded runs of
# soak_mpi on 8 ranks each, each with another
# fault (none; a rank 15 s late; a rank killed; the SM restarted; a leaf's
# uplink down and back), under loss with duplication and reordering (no
# CPU hog: the suite's other test is the load): no wrong result, no hang,
# no spurious failure, every survivor of the kill within IBMCAST_DEAD_MS +
# 5 s. First, the check itself: a run whose rank 1 alters one broadcast
# result must be counted wrong.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

SOAK=$top_srcdir/tests/soak/soak.sh
mpich_shim_need
need_file "$top_builddir/tests/soak/soak_mpi" "tests/soak/soak_mpi"
need_file "$top_builddir/tests/soak/soak_ompi" "tests/soak/soak_ompi (configure --with-openmpi)"
need_file "$top_builddir/ompi/.libs/mca_coll_ibmcast.so" "ompi/mca_coll_ibmcast.so"
need_cmd mpirun.openmpi openmpi-bin
plan 11

# The library's default, stated: the kill checks are against it.
export IBMCAST_DEAD_MS=10000
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-soak-test.XXXXXX")
at_exit "rm -rf '$tmp'"
# The soak makes and stops its own fabric; only its results stay here.

rc=0
SOAK_MPI_BREAK=3 "$SOAK" --runs 1 --ops 100 --mpi mpich --out "$tmp/broken" \
	> "$tmp/broken.txt" 2>&1 || rc=$?
like "$rc/$(grep '^totals' "$tmp/broken.txt")" \
	'^1/totals \(ibmcast runs\): [0-9]+ checked collectives .*, [1-9][0-9]* wrong, 0 hangs' \
	"control: a run where rank 1 alters a broadcast result is caught (soak exits 1, wrong > 0)" ||
	diag "$(tail -n 20 "$tmp/broken.txt")"

# short MPI NAME: the short soak through one integration, 8 ranks, 2 a
# node (the suite runs two tests at once, and 16 ranks beside
# libjob_shm_crash.sh made its ranks time out before their first
# allgather in a clean-clone sanitizer run).
short() {
	local mpi=$1 name=$2 rc=0 totals
	"$SOAK" --short --mpi "$mpi" --ranks 8 --out "$tmp/$mpi" \
		> "$tmp/$mpi.txt" 2>&1 || rc=$?
	diag "$(grep -E '^(run|[0-9]+ )' "$tmp/$mpi.txt")"
	totals=$(grep '^totals' "$tmp/$mpi.txt")
	is "$rc" 0 "soak --short through $name: 5 runs, every fault: the soak passes ($totals)" ||
		diag "$(tail -n 30 "$tmp/$mpi.txt")"
	like "$totals" ' [1-9][0-9]{3,} checked collectives' \
		"  ... thousands of checked collectives" || true
	like "$totals" ', 0 wrong, 0 hangs, 0 spurious failures;' \
		"  ... none wrong, none hung, no spurious failure" || true
	like "$totals" 'kill runs: 1, 0 with a survivor' \
		"  ... the kill run: every survivor reported it within IBMCAST_DEAD_MS + 5 s" || true
	like "$(awk -F, '$8 == "late" { print $13 "/" $14 "/" $12 }' "$tmp/$mpi/results.csv")" \
		'^0/0/0$' "  ... the run with a rank 15 s late (beyond IBMCAST_DEAD_MS) neither hung nor failed" ||
		diag "$(cat "$tmp/$mpi/results.csv")"
}

short mpich "the MPICH shim"
short ompi "the Open MPI component"
