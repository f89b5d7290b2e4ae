#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Modeled time does not depend on this machine: the same broadcasts run
# idle and under a CPU hog (one busy loop per core, stopped by PID) give
# modeled times within 2% of each other, while wall times differ (they
# are reported; on a shared machine they need not differ every time).

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
plan 5
sim_up --hosts 16 --radix 16 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 301 'node[1-16]' 4 || bail_out "job 301 not ready"

SIZES=1,4000,100K
run() {
	bcast_run "$1: 8 ranks, binomial, $SIZES" 8 'node[1-8]' --job 301 -- \
		--timing --reps 3 --roots 0 --sizes $SIZES --algo binomial
	diag "$(grep 'time size' <<< "$BCAST_OUT")"
}

run idle
idle=$BCAST_OUT
cpu_hogs_start
run "under a CPU hog"
busy=$BCAST_OUT
cpu_hogs_stop

# field OUT SIZE KEY
field() {
	grep "time size=$2 " <<< "$1" | grep -oE " $3=[0-9.]+" | cut -d= -f2
}
for size in 1 4000 102400; do
	a=$(field "$idle" $size model_us) b=$(field "$busy" $size model_us)
	within_2pct "$b" "$a"
	ok $? "$size B: modeled ${a:-?} us idle, ${b:-?} us busy (wall" \
		"$(field "$idle" $size median_us) us idle," \
		"$(field "$busy" $size median_us) us busy)"
done
