#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Mode sm under MPI (the MPICH shim, an unmodified program, one rank per
# simulated node): the communicators of an MPI_Comm_split over part of the
# job get their pool groups narrowed to their own nodes by the prune
# keeper, SM-confirmed while they live, and widened back to the job once
# they are freed. With 3 pool groups the two colors (node[1-2], node[3-4])
# take two groups, each narrowed to its color's nodes; with 2 they share
# one (colors agree on what is free among their own members), which ends
# narrowed to both colors' nodes (the first claim to arrive may narrow it
# to its own for a moment; unicast repairs what that tree misses). Every
# broadcast is checked element by element.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

PROG=$top_builddir/tests/mpi/prune_mpi
NRANKS=8

mpich_shim_need
need_file "$PROG" "tests/mpi/prune_mpi"
need_file "$IBMCASTCTL" "tools/ibmcastctl"

plan 12

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-mpi-prune.XXXXXX")
at_exit "rm -rf '$tmp'"

sim_up --hosts 8 --radix 4 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
export IBMCAST_LOG_LEVEL=info
# Two-rank communicators would take the postal tree for 1 KiB by default.
export IBMCAST_BCAST_ALGO=mcast

# shapes JOB: each group's nodes ("all": the whole job) and state, one
# line, in group order.
shapes() {
	"$IBMCASTCTL" --json status "$1" |
		jq -r '[.jobs[0].groups[] | "\(.nodes // "all"):\(.state)"] | join(" ")'
}
# shapes_are JOB SHAPES: a command for wait_until, which then asks the
# server again on each try.
shapes_are() {
	[ "$(shapes "$1")" = "$2" ]
}

# paused DIR MARK JOB SHAPES MSG: once prune_mpi is at its pause MARK
# (DIR/MARK exists), JOB's groups reach SHAPES (see shapes), checked as
# MSG.
paused() {
	wait_until 120 test -e "$1/$2" ||
		{ diag "$(tail -n 20 "$1/out")"; bail_out "prune_mpi never reached $2"; }
	wait_until 60 shapes_are "$3" "$4"
	is "$(shapes "$3")" "$4" "$5"
}

# run_split JOB GROUPS WANT NAME: prune_mpi with 2 colors on job JOB (its
# GROUPS pool groups over node[1-8]); WANT: the shapes expected while
# the colors live. Checks the shapes before, during and after, and the
# ranks' verdicts.
run_split() {
	local job=$1 ngroups=$2 want=$3 name=$4 d=$tmp/$4 args=() i pid rc=0
	local all
	all=$(printf 'all:ready %.0s' $(seq "$ngroups") | sed 's/ $//')
	libjob_reserve "$job" 'node[1-8]' "$ngroups" || bail_out "job $job not ready"
	ibmcast_env_from_wait "$job" || bail_out "no environment for job $job"
	is "$(shapes "$job")" "$all" "$name: every group spans the whole job before"
	mkdir -p "$d"
	for ((i = 0; i < NRANKS; i++)); do
		[ "$i" = 0 ] || args+=(:)
		args+=(-n 1 env IBMCAST_NODE=node$((i + 1)) LD_PRELOAD="$SHIM"
		       "$PROG" --colors 2 --dir "$d")
	done
	ASAN_OPTIONS=$rank_asan timeout 300 "$MPIEXEC" "${args[@]}" \
		< /dev/null > "$d/out" 2>&1 &
	pid=$!
	at_exit "kill $pid 2> /dev/null"
	paused "$d" split "$job" "$want" \
		"$name: while the colors live, their groups are narrowed to their nodes and SM-confirmed"
	touch "$d/go"
	paused "$d" freed "$job" "$all" \
		"$name: the colors freed, every group widened back to the job and SM-confirmed"
	touch "$d/end"
	wait "$pid" || rc=$?
	is "$rc" 0 "$name: mpiexec exits 0" || diag "$(tail -n 30 "$d/out")"
	is "$(grep -cE '^prune_mpi: rank [0-9]+: color -?[0-9]+, [0-9]+ broadcasts verified, 0 errors$' "$d/out")" "$NRANKS" \
		"$name: every rank verified every broadcast"
	OUT=$d/out
	"$IBMCASTCTL" release "$job" > /dev/null
}

run_split 421 3 "all:ready node[1-2]:ready node[3-4]:ready" distinct
ok "$(grep -qE 'rank 0: pruned group 1 \(MLID 0x[0-9a-f]+\) to its 2 member port\(s\): SM-confirmed' "$OUT" &&
      grep -qE 'rank 0: pruned group 2 \(MLID 0x[0-9a-f]+\) to its 2 member port\(s\): SM-confirmed' "$OUT"; echo $?)" \
	"distinct: the keeper (world rank 0) logged both narrowings: $(grep -oE 'pruned group [12] .*' "$OUT" | cut -c1-60 | tr '\n' ' ')"

run_split 422 2 "all:ready node[1-4]:ready" shared
ok "$(grep -qE 'rank 0: pruned group 1 \(MLID 0x[0-9a-f]+\) to its 4 member port\(s\): SM-confirmed .*the 2 communicator\(s\) holding it' "$OUT"; echo $?)" \
	"shared: the one group both colors hold was narrowed to the nodes of both: $(grep -oE 'pruned group 1 .*' "$OUT" | head -n 1)"
