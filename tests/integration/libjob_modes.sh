#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Seed 000's communicator modes on the simulated fabric with real OpenSM:
# basic, lazy and pool create and join their own groups through the data
# plane's SA proxy and test them by multicast before use. For each: the
# broadcasts are byte-exact, multicast is used after testing (lazy:
# point-to-point before), the SA holds the group while the communicator
# uses it and no longer after free (pool: after finalize). Then testing
# that cannot succeed (the fabric drops all multicast, few tries) leaves
# the communicator on point-to-point with its reason and correct results.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
MODES=$top_builddir/tests/libjob/modes_check
need_file "$MODES" "tests/libjob/modes_check"
need_cmd saquery infiniband-diags
plan 23

JOB=401
# Our own groups' MGIDs: ff12:1bcb:pkey:job:job:nonce:serial:serial (the
# plugin's are ff12:1bca:...); saquery prints them compressed, but never
# these first three fields. This fabric runs only this job.
OWN_RE="ff12:1bcb:ffff:"

# own_groups: the MGIDs of this job's own groups the SA holds now.
own_groups() {
	on_fabric timeout 60 saquery -g 2> /dev/null |
		grep -oiE "${OWN_RE}[0-9a-f:]+" | sort -u
}

# modes_run MSG NRANKS PERNODE DIR [modes_check options]: starts the ranks
# in the background (holding twice, see modes_check), output in DIR/out.
modes_run() {
	local n=$1 k=$2 dir=$3
	shift 3
	"$IBMCAST_RUN" -n "$n" --nodes 'node[1-8]' -k "$k" --timeout 240 \
		-- "$MODES" --hold "$dir" "$@" > "$dir/out" 2>&1 &
	RUN_PID=$!
	at_exit "kill $RUN_PID 2> /dev/null"
}

# modes_check_held NAME DIR: the SA holds our group while in use, not
# after free (pool groups stay until finalize: FREED_EXPECT=held).
modes_check_held() {
	local name=$1 dir=$2 held freed
	wait_until 120 test -e "$dir/in_use" ||
		{ diag "$(tail -n 20 "$dir/out")"; bail_out "$name: ranks never got the communicator going"; }
	held=$(own_groups | wc -l)
	ok "$([ "$held" -ge 1 ]; echo $?)" \
		"$name: the SA holds the job's own group while in use ($held: $(own_groups | paste -sd' '))"
	touch "$dir/go"
	wait_until 120 test -e "$dir/freed" ||
		bail_out "$name: ranks never freed the communicator"
	freed=$(own_groups | wc -l)
	if [ "${FREED_EXPECT:-gone}" = gone ]; then
		# Leaves reach OpenSM, which deletes the group once its
		# last full member left.
		wait_until 30 sh -c "[ \$(on_fabric saquery -g 2>/dev/null | grep -ciE '$OWN_RE') = 0 ]" &&
			freed=0
		ok "$([ "$freed" = 0 ]; echo $?)" \
			"$name: no own group at the SA after free ($freed left)"
	else
		ok "$([ "$freed" -ge 1 ]; echo $?)" \
			"$name: the pool's groups stay at the SA after free ($freed)"
	fi
	touch "$dir/go2"
	wait "$RUN_PID"
	RUN_RC=$?
}

field() {
	grep -oE "(^|[ ])$1=[^ ]+" "$2" | head -n 1 | cut -d= -f2
}

sim_up --hosts 8 --radix 4 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
export IBMCAST_JOB=$JOB
# A loaded 2-core host: OpenSM may take seconds to program the switches;
# success cases allow for it (20 s of tries), the failure case does not.
export IBMCAST_MCAST_TEST_TRIES=2000
ok "$([ "$(own_groups | wc -l)" = 0 ]; echo $?)" "no own group at the SA before"

# --- basic: 8 ranks, 2 per node (one join per node) ---------------------
d=$(mktemp -d "$SIM_DIR/basic.XXXX")
modes_run 8 2 "$d" --mode basic --count 40
modes_check_held basic "$d"
ok "$RUN_RC" "basic: ranks exited 0" || diag "$(tail -n 30 "$d/out")"
s=$(grep '^summary' "$d/out")
diag "$s"
ok "$([ "$(field bad "$d/out")" = 0 ] && [ "$(field ready "$d/out")" = 8 ] &&
	[ "$(field last_mcast "$d/out")" = 8 ]; echo $?)" \
	"basic: every byte right, all 8 tested ready, broadcasts by multicast"
ok "$(grep -q '^rank 0 .*tries=[1-9]' "$d/out"; echo $?)" \
	"basic: rank 0 counted its test messages ($(grep -o '^rank 0 .*mtest_us=[0-9]*' "$d/out" | grep -o 'tries=.*'))"
ok "$([ "$(own_groups | wc -l)" = 0 ]; echo $?)" "basic: nothing left at the SA after finalize"

# --- lazy: testing advances inside the broadcasts (no progress thread, as
# in seed 000), so the first ones go point-to-point ----------------------
d=$(mktemp -d "$SIM_DIR/lazy.XXXX")
IBMCAST_PROGRESS_THREAD=0 modes_run 6 1 "$d" --mode lazy --count 1 \
	--until-mcast 8 --max 20000
modes_check_held lazy "$d"
ok "$RUN_RC" "lazy: ranks exited 0" || diag "$(tail -n 30 "$d/out")"
diag "$(grep '^summary' "$d/out")"
ok "$([ "$(field bad "$d/out")" = 0 ] && [ "$(field first_p2p "$d/out")" = 6 ]; echo $?)" \
	"lazy: every byte right, the first broadcast went point-to-point"
m0=$(field mcast_bcasts0 "$d/out")
ok "$([ "${m0:-0}" -ge 8 ] && [ "$(field ready "$d/out")" = 6 ]; echo $?)" \
	"lazy: after testing, broadcasts went by multicast ($m0 at rank 0) and all 6 are ready"
ok "$([ "$(own_groups | wc -l)" = 0 ]; echo $?)" "lazy: nothing left at the SA after finalize"

# --- pool: the job's own pool built at init; a sub-communicator of 4 of
# the 8 ranks takes a tested group at once --------------------------------
d=$(mktemp -d "$SIM_DIR/pool.XXXX")
IBMCAST_COMM_MODE=pool IBMCAST_MODE_POOL_GROUPS=2 FREED_EXPECT=held \
	modes_run 8 1 "$d" --size 4 --count 30
FREED_EXPECT=held modes_check_held pool "$d"
ok "$RUN_RC" "pool: ranks exited 0" || diag "$(tail -n 30 "$d/out")"
diag "$(grep '^summary' "$d/out")"
ok "$([ "$(field bad "$d/out")" = 0 ] && [ "$(field ready "$d/out")" = 4 ] &&
	[ "$(field first_p2p "$d/out")" = 0 ] && [ "$(field last_mcast "$d/out")" = 4 ]; echo $?)" \
	"pool: every byte right, multicast from the first broadcast on"
ok "$([ "$(own_groups | wc -l)" = 0 ]; echo $?)" "pool: nothing left at the SA after finalize"

# --- testing that cannot succeed ------------------------------------------
dp_ctl set loss=1 scope=mc seed=3 > /dev/null || bail_out "cannot set faults"
d=$(mktemp -d "$SIM_DIR/fail.XXXX")
IBMCAST_MCAST_TEST_TRIES=3 modes_run 4 1 "$d" --mode basic --count 12
modes_check_held "basic, multicast dropped" "$d"
dp_ctl clear > /dev/null
ok "$RUN_RC" "multicast dropped: ranks exited 0" || diag "$(tail -n 30 "$d/out")"
diag "$(grep '^summary' "$d/out")"
ok "$([ "$(field bad "$d/out")" = 0 ] && [ "$(field ready "$d/out")" = 0 ] &&
	[ "$(field last_mcast "$d/out")" = 0 ]; echo $?)" \
	"multicast dropped: every byte right over point-to-point, no rank ready"
ok "$(grep -q 'why0="multicast testing gave up after 3 tries' "$d/out"; echo $?)" \
	"multicast dropped: the reason is given ($(grep -o 'why0=.*' "$d/out"))"
