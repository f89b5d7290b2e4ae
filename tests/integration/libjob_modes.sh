#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Seed 000's communicator modes on the simulated fabric with real OpenSM:
# basic, lazy and pool create and join their own groups through the data
# plane's SA proxy and test them by multicast before use. For each: the
# broadcasts are byte-exact, multicast is used after testing (lazy:
# point-to-point before), the SA holds the group while the communicator
# uses it and no longer after free (pool: the taken group at free, the
# others after finalize). Then testing
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
plan 25

JOB=401
# The job's own groups, by their MGIDs, which rank 0 logs at creation
# (info): ff12:1bcb:... (the plugin's are ff12:1bca:...). Each is looked up
# at the SA by MGID (saquery -g shows no more than one MAD of records on
# this fabric).
export IBMCAST_LOG_LEVEL=info

# sa_ask SAQUERY-ARGS...: saquery's answer; fails, printing why, if the SA
# did not give one in 3 tries (a busy host's SA loses a query now and
# then): a group is absent only when the SA answered without it.
sa_ask() {
	local out rc
	for _ in 1 2 3; do
		rc=0
		out=$(on_fabric timeout 60 saquery "$@" 2>&1 < /dev/null) || rc=$?
		if [ "$rc" = 0 ]; then
			printf '%s\n' "$out"
			return 0
		fi
		sleep 0.2
	done
	echo "no answer from the SA to saquery $* in 3 tries (exit $rc: $(tail -n 1 <<< "$out"))"
	return 1
}

# own_groups DIR: those of the run in DIR that the SA holds now; fails,
# printing why, if the SA did not answer.
own_groups() {
	local g out
	while read -r g; do
		out=$(sa_ask MCMR --mgid "$g") || { echo "$out"; return 1; }
		if grep -qi 'mgid' <<< "$out"; then echo "$g"; fi
	done < <(created_mgids "$1")
}

# created_mgids DIR: the MGIDs of the groups the run in DIR created, as
# rank 0 logs them (all 8 fields of 4 digits).
created_mgids() {
	grep -oE 'created through the SA group ff12:1bcb:[0-9a-f:]+' "$1/out" |
		awk '{ print $NF }' | sort -u
}

# own_count DIR: how many of them the SA holds (fails as own_groups).
own_count() {
	local held
	held=$(own_groups "$1") || { echo "$held"; return 1; }
	grep -c . <<< "$held" || true
}

none_held() {
	local held
	held=$(own_groups "$1") && [ -z "$held" ]
}

# held_count DIR N: the SA holds N of the run's groups.
held_count() {
	[ "$(own_count "$1")" = "$2" ]
}

# full_mgids: each line's first field, a GID as saquery prints it (IPv6
# text, shortened), in the form rank 0 logs: 8 fields of 4 digits.
full_mgids() {
	awk 'function pad(x) { return substr("0000" x, length(x) + 1) }
	{
		g = tolower($1); h = g; t = ""
		if ((i = index(g, "::"))) {
			h = substr(g, 1, i - 1); t = substr(g, i + 2)
		}
		nh = h == "" ? 0 : split(h, a, ":")
		nt = t == "" ? 0 : split(t, b, ":")
		s = ""
		for (i = 1; i <= nh; i++) s = s ":" pad(a[i])
		for (i = nh + nt; i < 8; i++) s = s ":0000"
		for (i = 1; i <= nt; i++) s = s ":" pad(b[i])
		print substr(s, 2)
	}'
}

# sa_survey FILE: every group the SA holds, "MLID MGID" a line in FILE,
# where saquery -g would show one MAD of records at most: one MCMR query
# per MLID from the first of OpenSM's range, until as many MLIDs had a
# group as OpenSM has in use (the plugin's status): then no group is left
# unseen. SA_MLIDS: how many it found; SA_USED: how many OpenSM has in use
# after the survey (the two agree when it saw every group, and nothing
# changed meanwhile). Fails, the reason in FILE, if the SA did not answer
# a query or the plugin its status.
sa_survey() {
	local file=$1 total used m out g found=0
	: > "$file"
	SA_MLIDS='?' SA_USED='?'
	read -r total used < <("$IBMCASTCTL" --json status 2> /dev/null |
		jq -r '"\(.mlids.total) \(.mlids.used)"')
	if ! [[ $total =~ ^[1-9][0-9]*$ && $used =~ ^[0-9]+$ ]]; then
		echo "no MLID usage in ibmcastctl status" > "$file"
		return 1
	fi
	for ((m = 0xc000; found < used && m < 0xc000 + total; m++)); do
		if ! out=$(sa_ask MCMR --mlid "$m"); then
			echo "$out" > "$file"
			return 1
		fi
		out=$(sed -n 's/^[[:space:]]*MGID\.*//p' <<< "$out" |
			full_mgids | sort -u)
		[ -n "$out" ] || continue
		found=$((found + 1))
		while read -r g; do
			printf '0x%x %s\n' "$m" "$g"
		done <<< "$out" >> "$file"
	done
	SA_MLIDS=$found
	SA_USED=$("$IBMCASTCTL" --json status 2> /dev/null | jq -r .mlids.used)
}

# created DIR: how many groups the run in DIR created.
created() {
	created_mgids "$1" | wc -l
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

# modes_check_held NAME DIR: the SA holds the groups the run created
# while in use, not after free (pool: the taken group goes at free, the
# pool's other groups stay until finalize: FREED_EXPECT=held).
modes_check_held() {
	local name=$1 dir=$2 held freed n rc missing
	wait_until 120 test -e "$dir/in_use" ||
		{ diag "$(tail -n 20 "$dir/out")"; bail_out "$name: ranks never got the communicator going"; }
	n=$(created "$dir")
	held=$(own_count "$dir")
	ok "$([ "$n" -ge 1 ] && [ "$held" = "$n" ]; echo $?)" \
		"$name: the SA holds the $n group(s) the job created while in use ($held: $(own_groups "$dir" | paste -sd' '))"
	if [ -n "${SURVEY_HELD:-}" ]; then
		# The survey that finds no group of the job before it runs
		# finds these while they are held.
		sa_survey "$SIM_DIR/sa.held"
		rc=$?
		missing=$(created_mgids "$dir" | while read -r g; do
			grep -q " $g\$" "$SIM_DIR/sa.held" || echo "$g"; done)
		ok "$([ "$rc" = 0 ] && [ "$n" -ge 1 ] && [ -z "$missing" ] &&
			[ "$SA_MLIDS" = "$SA_USED" ]; echo $?)" \
			"$name: the survey of every MLID's MCMRs finds the $n group(s) held (missing: ${missing:-none}; $SA_MLIDS MLIDs with a group, OpenSM has $SA_USED in use)" ||
			diag "$(head -n 20 "$SIM_DIR/sa.held")"
	fi
	touch "$dir/go"
	wait_until 120 test -e "$dir/freed" ||
		bail_out "$name: ranks never freed the communicator"
	if [ "${FREED_EXPECT:-gone}" = gone ]; then
		# Leaves reach OpenSM, which deletes a group once its last
		# full member left.
		wait_until 30 none_held "$dir"
		freed=$(own_count "$dir")
		ok "$([ "$freed" = 0 ]; echo $?)" \
			"$name: none of them at the SA after free ($freed left)"
	else
		# The taken group was the communicator's: its members left
		# it at free. The pool's others, and the keeper's
		# replacement for the taken one, stay until finalize.
		n=$(created "$dir")
		wait_until 30 held_count "$dir" $((n - 1))
		freed=$(own_count "$dir")
		ok "$([ "$n" -ge 2 ] && [ "$freed" = $((n - 1)) ]; echo $?)" \
			"$name: the taken group left the SA at free, the pool's other $((n - 1)) stay ($freed of $n created)"
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
# Every record the SA holds (saquery -g would show one MAD of them): none
# is the job's, the survey saw as many MLIDs as OpenSM has in use, and
# the same survey finds the basic run's groups while held (below), so
# that "none" is not what a survey blind to them says.
sa_survey "$SIM_DIR/sa.before"
rc=$?
ok "$([ "$rc" = 0 ] && ! grep -qi ' ff12:1bcb:' "$SIM_DIR/sa.before" &&
	[ "$SA_MLIDS" = "$SA_USED" ]; echo $?)" \
	"no own group at the SA before ($SA_MLIDS MLIDs with a group, OpenSM has $SA_USED in use)" ||
	diag "$(head -n 20 "$SIM_DIR/sa.before")"

# --- basic: 8 ranks, 2 per node (one join per node) ---------------------
d=$(mktemp -d "$SIM_DIR/basic.XXXX")
modes_run 8 2 "$d" --mode basic --count 40
SURVEY_HELD=1 modes_check_held basic "$d"
ok "$RUN_RC" "basic: ranks exited 0" || diag "$(tail -n 30 "$d/out")"
s=$(grep '^summary' "$d/out")
diag "$s"
ok "$([ "$(field bad "$d/out")" = 0 ] && [ "$(field ready "$d/out")" = 8 ] &&
	[ "$(field last_mcast "$d/out")" = 8 ]; echo $?)" \
	"basic: every byte right, all 8 tested ready, broadcasts by multicast"
ok "$(grep -q '^rank 0 .*tries=[1-9]' "$d/out"; echo $?)" \
	"basic: rank 0 counted its test messages ($(grep -o '^rank 0 .*mtest_us=[0-9]*' "$d/out" | grep -o 'tries=.*'))"
ok "$(none_held "$d"; echo $?)" "basic: none of its groups at the SA after finalize ($(own_groups "$d" | paste -sd' '))"

# --- lazy: testing advances inside the broadcasts (no progress thread, as
# in seed 000), so the first ones go point-to-point ----------------------
d=$(mktemp -d "$SIM_DIR/lazy.XXXX")
IBMCAST_PROGRESS_THREAD=0 modes_run 6 1 "$d" --mode lazy --count 1 \
	--until-mcast 8 --max 20000 --allreduce
modes_check_held lazy "$d"
ok "$RUN_RC" "lazy: ranks exited 0" || diag "$(tail -n 30 "$d/out")"
diag "$(grep '^summary' "$d/out")"
ok "$([ "$(field bad "$d/out")" = 0 ] && [ "$(field first_p2p "$d/out")" = 6 ]; echo $?)" \
	"lazy: every byte right, the first broadcast went point-to-point"
m0=$(field mcast_bcasts0 "$d/out")
ok "$([ "${m0:-0}" -ge 8 ] && [ "$(field ready "$d/out")" = 6 ]; echo $?)" \
	"lazy: after testing, broadcasts went by multicast ($m0 at rank 0) and all 6 are ready"
ok "$(grep -q '^rank 0 .*first_ar=recursive_doubling' "$d/out" &&
	[ "$(field switched "$d/out")" = 6 ] &&
	[ "$(field last_ar_mcast "$d/out")" = 6 ]; echo $?)" \
	"lazy: allreduces went point-to-point first, by multicast once all 6 switched"
ok "$(none_held "$d"; echo $?)" "lazy: none of its groups at the SA after finalize ($(own_groups "$d" | paste -sd' '))"

# --- pool: the job's own pool built at init; a sub-communicator of 4 of
# the 8 ranks takes a tested group at once (the keeper's narrowing and
# replacement step by step: libjob_pool_keep.sh) --------------------------
d=$(mktemp -d "$SIM_DIR/pool.XXXX")
IBMCAST_COMM_MODE=pool IBMCAST_MODE_POOL_GROUPS=2 FREED_EXPECT=held \
	modes_run 8 1 "$d" --size 4 --count 30
FREED_EXPECT=held modes_check_held pool "$d"
ok "$RUN_RC" "pool: ranks exited 0" || diag "$(tail -n 30 "$d/out")"
diag "$(grep '^summary' "$d/out")"
ok "$([ "$(field bad "$d/out")" = 0 ] && [ "$(field ready "$d/out")" = 4 ] &&
	[ "$(field first_p2p "$d/out")" = 0 ] && [ "$(field last_mcast "$d/out")" = 4 ]; echo $?)" \
	"pool: every byte right, multicast from the first broadcast on"
ok "$(none_held "$d"; echo $?)" "pool: none of its groups at the SA after finalize ($(own_groups "$d" | paste -sd' '))"

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
