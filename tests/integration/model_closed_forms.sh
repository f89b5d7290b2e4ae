#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Modeled time on the simulated fabric equals the model's closed forms
# (ibmcast-dataplane(8), MODELED TIME) within 2%: a one-fragment and a
# two-fragment broadcast between two ranks under one leaf switch (a
# one-way message, then the receiver's two acks, as libjob sends them),
# with the default model and after changing it while the fabric runs.
#
#   ser(b)  = ceil((b + 36 libjob header + 34 UD headers) * 8 / Gb/s)
#   one hop = 2 link_ns + switch_ns
#   1 B:    end(rank 1) = o_s + hop + ser(1) + o_r + 2 o_s
#   4000 B: two fragments of 2012 and 1988 B (MTU 2048):
#           a0 = o_s + hop + ser(2012), a1 = 2 o_s + hop + ser(1988),
#           end(rank 1) = max(a0 + o_r, a1) + o_r + 2 o_s

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

libjob_need
plan 8
# 16 hosts, radix 16: node1..node8 hang off one leaf.
sim_up --hosts 16 --radix 16 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 301 'node[1-16]' 4 || bail_out "job 301 not ready"

# model KEY: a parameter of the running model.
model() { dp_ctl status | jq -r ".model.$1"; }

# expect NAME: the closed form for a broadcast of NAME (1 or 4000), ns.
expect() {
	local os or ln sw gb
	os=$(model o_s_ns) or=$(model o_r_ns) ln=$(model link_ns)
	sw=$(model switch_ns) gb=$(model link_gbps)
	awk -v os="$os" -v or="$or" -v ln="$ln" -v sw="$sw" -v gb="$gb" \
	    -v what="$1" 'function ser(b,  t) { t = (b + 70) * 8 / gb;
			return t == int(t) ? t : int(t) + 1 }
		BEGIN { hop = 2 * ln + sw
			if (what == 1) { print os + hop + ser(1) + or + 2 * os
					 exit }
			a0 = os + hop + ser(2012); a1 = 2 * os + hop + ser(1988)
			c = (a0 + or > a1 ? a0 + or : a1) + or
			print c + 2 * os }'
}

# within MEASURED_US EXPECTED_NS: within 2%.
within() {
	awk -v m="$1" -v e="$2" 'BEGIN { d = m * 1000 - e; if (d < 0) d = -d
		exit !(d <= 0.02 * e) }'
}

check_forms() {
	local label=$1 size m e
	bcast_run "$label: 2 ranks under one leaf, binomial, 1 B and 4000 B" \
		2 'node[1-2]' --job 301 -- --timing --reps 5 --roots 0 \
		--sizes 1,4000 --algo binomial
	diag "$(grep 'time size' <<< "$BCAST_OUT")"
	for size in 1 4000; do
		# the least of the repetitions: one whose packets met no
		# retransmission (on a busy host a real-time timer may add
		# packets to a run, which moves its modeled time; see README)
		m=$(grep "time size=$size " <<< "$BCAST_OUT" |
			grep -oE ' model_min_us=[0-9.]+' | cut -d= -f2)
		e=$(expect "$size")
		within "${m:-0}" "$e"
		ok $? "$label: $size B: modeled ${m:-?} us, closed form $e ns"
	done
}

check_forms "default model ($(model name))"
out=$(dp_ctl set o_s_ns=1000 o_r_ns=200 switch_ns=300 link_gbps=50)
jq -e '.ok and .model.switch_ns == 300' <<< "$out" > /dev/null
ok $? "the model changes while the fabric runs"
# The first broadcast after a change may start with the old overheads
# (see the man page): one untimed run first.
"$IBMCAST_RUN" -n 2 --nodes 'node[1-2]' --job 301 --timeout 120 -- \
	"$BCAST_CHECK" --sizes 1 --algo binomial > /dev/null 2>&1
check_forms "o_s 1000, o_r 200, switch 300 ns, 50 Gb/s"
dp_ctl set model=edr > /dev/null
[ "$(model link_gbps)" = 100 ]
ok $? "a preset restores every parameter (edr: 100 Gb/s)"
