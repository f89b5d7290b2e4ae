# SPDX-License-Identifier: BSD-3-Clause
# Shell helpers for the tests of mode pool's keeper (sourced after
# tests/lib.sh and tests/lib-libjob.sh; pk_fabric sources the fabric's
# env, which the others need):
# where the SA and the switches' MFTs say a group reaches, and the steps
# of tests/libjob/pool_keep_check.
#
# Set-up:   pk_need            (what every keeper test needs; PK: the program;
#                              PK_SANITIZED: 1 in a sanitizer build)
#           pk_fabric N RADIX JOB  (N hosts up, their env, the job,
#                              HCA_GIDS; PK_DIR: the run's directory)
#           pk_start N ARG...  (pool_keep_check on node1..N in mode pool
#                              with a pool of one group; RUN_PID)
# Fabric:   pk_hca_gids N      (HCA_GIDS: "NAME GID" of the N nodes' ports)
#           sa_nodes MGID      (the nodes the SA holds as members, sorted;
#                              fails if the SA did not answer)
#           sa_members MGID, gone MGID
#           nodes_are MGID NODES, members_are MGID N  (for wait_until;
#                              what the SA said in SA_SEEN)
#           mft_nodes MLID     (the HCAs the MFTs deliver the MLID to)
#           narrowed MGID MLID NODES  (SA members and MFT reach both NODES)
# Run:      logged DIR REGEX   (the first match in DIR/out)
#           step DIR NAME      (waits until the ranks stop at NAME)
#           own_groups_held DIR, none_held DIR (the job's own groups the
#                              run created that the SA still holds)
#           held_why DIR       (diagnostics: who holds them, what was said)
#           pk_no_sanitizer_report DIR  (a check, only where PK_SANITIZED
#                              is 1: plan 1 + PK_SANITIZED for it)
# shellcheck shell=bash

# hca_gids: "NAME GID" of every HCA's port (ibnetdiscover; the fabric's
# env sourced).
hca_gids() {
	local name guid g
	sim_diag "$SIM_DIR" ibnetdiscover 2> /dev/null | awk '
		/^Ca/ { d = $0; sub(/^[^#]*# "/, "", d); sub(/".*/, "", d)
			ca = 1; next }
		ca && /^\[/ { g = $1; sub(/.*\(/, "", g); sub(/\).*/, "", g)
			print d, g; ca = 0 }' | while read -r name guid; do
		g=$(printf '%016x' "0x$guid")
		echo "$name fe80::${g:0:4}:${g:4:4}:${g:8:4}:${g:12:4}"
	done
}

# sa_nodes MGID: the nodes whose port the SA holds as a member of the
# group, sorted, one trusted query per port (OpenSM's SM_Key, 1 by
# default: others see one record without its port; and a whole table
# does not fit the one MAD the simulated SA answers with). A port is not
# a member only when the SA answered without its record (saquery exits 0
# with none): a query that fails 3 times (no SA; a busy host's SA loses
# one now and then, "Connection timed out") makes sa_nodes fail, printing
# why, which no list of nodes equals.
sa_nodes() {
	local name gid out rc nodes=()
	while read -r name gid; do
		for _ in 1 2 3; do
			rc=0
			out=$(on_fabric timeout 30 saquery --smkey 1 MCMR \
				--mgid "$1" --gid "$gid" 2>&1 < /dev/null) || rc=$?
			[ "$rc" != 0 ] || break
			sleep 0.2
		done
		if [ "$rc" != 0 ]; then
			echo "no answer from the SA about $name's port in 3 tries (saquery exit $rc: $(tail -n 1 <<< "$out"))"
			return 1
		fi
		if grep -qiE 'portgid\.+fe80:' <<< "$out"; then
			nodes+=("$name")
		fi
	done <<< "$HCA_GIDS"
	[ "${#nodes[@]}" = 0 ] || printf '%s\n' "${nodes[@]}" | sort | paste -sd' '
}

# sa_members MGID: how many ports the SA holds; fails, printing why, as
# sa_nodes does.
sa_members() {
	local nodes
	nodes=$(sa_nodes "$1") || { echo "$nodes"; return 1; }
	wc -w <<< "$nodes"
}

# gone MGID: the SA answered, and holds no port of the group.
gone() {
	local n
	n=$(sa_members "$1") && [ "$n" = 0 ]
}

# nodes_are MGID NODES, members_are MGID N: what sa_nodes and sa_members
# say, as commands for wait_until (which then asks the SA again on each
# try); the last answer stays in SA_SEEN, for a check of a group that
# may be left soon after (asking again could see it already gone).
SA_SEEN=
nodes_are() {
	SA_SEEN=$(sa_nodes "$1")
	[ "$SA_SEEN" = "$2" ]
}

members_are() {
	SA_SEEN=$(sa_members "$1")
	[ "$SA_SEEN" = "$2" ]
}

# mft_nodes MLID: the HCAs the switches' MFTs deliver the MLID to, sorted.
mft_nodes() {
	on_fabric "$top_builddir/sim-fabric/ibmcast-mftwatch" reach \
		--mlid "$1" 2> /dev/null | jq -r '.mlids[0].members[]' |
		sort | paste -sd' '
}

# narrowed MGID MLID NODES: the SA's members and the MFTs' reach are both
# exactly NODES.
narrowed() {
	[ "$(sa_nodes "$1")" = "$3" ] && [ "$(mft_nodes "$2")" = "$3" ]
}

# logged DIR REGEX: the first match of the run's log.
logged() {
	grep -oE "$2" "$1/out" | head -n 1
}

# step DIR NAME: waits until the ranks stop at NAME.
step() {
	wait_until 120 test -e "$1/$2" ||
		{ diag "$(tail -n 30 "$1/out")"; bail_out "ranks never reached step $2"; }
}

# own_groups_held DIR: the groups the run created that the SA still
# holds, or of which it did not tell (a failed query is no proof of a
# group's absence).
own_groups_held() {
	local g n
	grep -oE 'created through the SA group ff12:1bcb:[0-9a-f:]+' "$1/out" |
		awk '{ print $NF }' | sort -u | while read -r g; do
		if ! n=$(sa_members "$g") || [ "$n" -gt 0 ]; then echo "$g"; fi
	done
}

none_held() {
	[ -z "$(own_groups_held "$1")" ]
}

# held_why DIR: for a failed check, which nodes still hold each group and
# what the ranks said about groups (joins, leaves, failures).
held_why() {
	local g nodes
	for g in $(own_groups_held "$1"); do
		if nodes=$(sa_nodes "$g"); then
			diag "$g: still held by $nodes"
		else
			diag "$g: $nodes"
		fi
		diag "$(grep -F "$g" "$1/out" | tail -n 20)"
	done
	diag "$(grep -E 'failed|left group|leave' "$1/out" | tail -n 20)"
}

# pk_hca_gids N: sets HCA_GIDS for the fabric's N nodes, or bails out.
pk_hca_gids() {
	HCA_GIDS=$(hca_gids | grep '^node')
	[ "$(echo "$HCA_GIDS" | wc -l)" = "$1" ] ||
		bail_out "ibnetdiscover did not show the $1 nodes' ports: $HCA_GIDS"
}

pk_need() {
	local lib=$top_builddir/libjob/.libs/libibmcast.so libs
	libjob_need
	PK=$top_builddir/tests/libjob/pool_keep_check
	need_file "$PK" "tests/libjob/pool_keep_check"
	need_cmd saquery infiniband-diags
	need_cmd jq jq
	# The ranks run the library PK links: built with a sanitizer, its
	# runtime is among its libraries (as lib-libjob.sh tells the MPI
	# shim's). Only then can a sanitizer report appear at all.
	need_file "$lib" libibmcast.so
	libs=$(ldd "$lib" 2> /dev/null) || bail_out "ldd $lib failed"
	PK_SANITIZED=0
	if [[ $libs == *libasan* || $libs == *libubsan* ]]; then
		PK_SANITIZED=1
	fi
}

# pk_no_sanitizer_report DIR: in a sanitizer build, checks that the
# ranks' output holds no sanitizer report; in a plain build it checks
# nothing (and counts nothing): no report can appear there, and a check
# that cannot fail would claim what was never looked at.
pk_no_sanitizer_report() {
	local re='AddressSanitizer|LeakSanitizer|runtime error'
	[ "$PK_SANITIZED" = 1 ] || return 0
	ok "$(! grep -qiE "$re" "$1/out"; echo $?)" \
		"no sanitizer report (the ranks ran the sanitizer build)" ||
		diag "$(grep -iE -A 8 "$re" "$1/out" | head -n 40)"
}

# In the test's shell, not a subshell: the fabric, its env and the job
# stay set for the checks that follow.
pk_fabric() {
	sim_up --hosts "$1" --radix "$2" || bail_out "fabric did not come up"
	# shellcheck disable=SC1091
	. "$SIM_DIR/env"
	export IBMCAST_JOB=$3
	pk_hca_gids "$1"
	PK_DIR=$(mktemp -d "$SIM_DIR/pk.XXXX")
}

pk_start() {
	local n=$1
	shift
	IBMCAST_COMM_MODE=pool IBMCAST_MODE_POOL_GROUPS=1 \
		"$IBMCAST_RUN" -n "$n" --nodes "node[1-$n]" -k 1 --timeout 300 \
		-- "$PK" --hold "$PK_DIR" "$@" > "$PK_DIR/out" 2>&1 &
	RUN_PID=$!
	at_exit "kill $RUN_PID 2> /dev/null"
}
