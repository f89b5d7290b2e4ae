#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Modeled time on the simulated fabric equals the LogGP-style closed forms
# of the model (ibmcast-dataplane(8), MODELED TIME) within 2%, computed
# here by hand from the running model's parameters: a ping-pong of 1 B
# and 1 MiB, a one-fragment binomial broadcast on 8 ranks under one
# switch, a multi-fragment pipelined broadcast, and a multicast broadcast
# across a 2-level tree; then again after the model changed while the
# fabric runs.
#
#   ser(b)   = ceil(b * 8 / min(link_gbps, inj_gbps))  wire bytes b
#   L(h)     = h links of link_ns + (h - 1) switches of switch_ns
#   one hop  = L(2) under one leaf switch, L(4) across the spine
#   wire bytes: payload + 34 (UD headers) [+ 36 libjob header] [+ 40 GRH]
#
#   ping-pong, k packets of at most the MTU each way:
#     rtt = 2 (o_s + (k - 1) max(o_s, o_r, ser(MTU)) + L(2) + ser(last) + o_r)
#   binomial, 2^m ranks, one fragment (the chain of first children is
#   the longest; a member returns after its two acks):
#     T = m (o_s + L(2) + ser(b + 70) + o_r) + 2 o_s
#   pipelined, 2 ranks, n fragments of f bytes, o_r >= o_s (the receiver
#   is the bottleneck; two acks per window / 4 = 16 fragments and at the
#   end):
#     T = o_s + L(2) + ser(f + 70) + n o_r + 2 o_s ceil(n / 16)
#   multicast, the farthest member on the other leaf:
#     T = o_s + L(4) + ser(b + 110) + o_r + 2 o_s

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-libjob.sh"

PINGPONG=$top_builddir/tests/dataplane/dp_pingpong
libjob_need
need_file "$PINGPONG" "tests/dataplane/dp_pingpong"
plan 16
# 16 hosts, radix 16: node1..node8 on one leaf, node9..node16 on another.
sim_up --hosts 16 --radix 16 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
libjob_reserve 301 'node[1-16]' 4 || bail_out "job 301 not ready"

# The running model's parameters as awk variables.
model_vars() {
	dp_ctl status | jq -r '.model | "-v os=\(.o_s_ns) -v or=\(.o_r_ns)
		-v ln=\(.link_ns) -v sw=\(.switch_ns) -v lg=\(.link_gbps)
		-v ig=\(.inj_gbps) -v gap=\(.gap_ns)"'
}

# form WHAT ARG...: the closed form of WHAT, in ns.
form() {
	local what=$1
	shift
	# shellcheck disable=SC2046
	awk $(model_vars) -v what="$what" -v a1="${1:-0}" -v a2="${2:-0}" '
	function ceil(x) { return x == int(x) ? x : int(x) + 1 }
	function ser(b) { return ceil(b * 8 / (lg < ig ? lg : ig)) }
	function L(h) { return h * ln + (h - 1) * sw }
	function max(a, b) { return a > b ? a : b }
	BEGIN {
		if (what == "pingpong") {	# a1 bytes, a2 MTU
			k = a1 ? ceil(a1 / a2) : 1
			last = a1 - (k - 1) * a2
			per = max(max(os, or), ser(a2 + 34))
			print 2 * (os + (k - 1) * per + L(2) + ser(last + 34) + or)
		} else if (what == "binomial") {	# a1 bytes, a2 ranks
			m = log(a2) / log(2)
			print m * (os + L(2) + ser(a1 + 70) + or) + 2 * os
		} else if (what == "pipelined") {	# a1 bytes, a2 MTU
			f = a2 - 36; n = ceil(a1 / f)
			print os + L(2) + ser(f + 70) + n * or + 2 * os * ceil(n / 16)
		} else if (what == "mcast") {	# a1 bytes
			print os + L(4) + ser(a1 + 110) + or + 2 * os
		}
	}'
}

# check LABEL MEASURED_NS EXPECTED_NS
check() {
	within_2pct "$2" "$3"
	ok $? "$1: modeled ${2:-?} ns, closed form $3 ns"
}

# The median of the repetitions, in ns, for SIZE from the last bcast_run.
model_ns() {
	grep "time size=$1 " <<< "$BCAST_OUT" | grep -oE ' model_us=[0-9.]+' |
		cut -d= -f2 | awk '{ printf "%.0f", $1 * 1000 }'
}

pingpong() {
	local label=$1 size=$2 out rtt mtu
	out=$("$PINGPONG" --size "$size" --reps 3 2>&1)
	diag "$out"
	# every repetition the same: the ping-pong is deterministic
	rtt=$(grep -oE 'rtt_ns=[0-9]+' <<< "$out" | cut -d= -f2 | sort -u)
	mtu=$(grep -oE 'mtu=[0-9]+' <<< "$out" | head -n 1 | cut -d= -f2)
	check "$label: ping-pong of $size B" "$(wc -w <<< "$rtt" |
		awk -v r="$rtt" '$1 == 1 { print r }')" \
		"$(form pingpong "$size" "${mtu:-1}")"
}

forms() {
	local label=$1 pipelined=$2
	pingpong "$label" 1
	pingpong "$label" 1048576
	bcast_run "$label: 8 ranks under one leaf, binomial, 1 B" \
		8 'node[1-8]' --job 301 -- --timing --reps 3 --roots 0 \
		--sizes 1 --algo binomial
	check "$label: binomial, 8 ranks, 1 B" "$(model_ns 1)" \
		"$(form binomial 1 8)"
	if [ "$pipelined" = yes ]; then
		bcast_run "$label: 2 ranks, binomial, 100 KiB" 2 'node[1-2]' \
			--job 301 -- --timing --reps 3 --roots 0 --sizes 100K \
			--algo binomial
		check "$label: pipelined, 51 fragments" "$(model_ns 102400)" \
			"$(form pipelined 102400 2048)"
	fi
	bcast_run "$label: 16 ranks on two leaves, multicast, 1000 B" \
		16 'node[1-16]' --job 301 -- --timing --reps 3 --roots 0 \
		--sizes 1000 --algo mcast
	check "$label: multicast across the spine, 1000 B" \
		"$(model_ns 1000)" "$(form mcast 1000)"
}

forms "default model ($(dp_ctl status | jq -r .model.name))" yes
out=$(dp_ctl set o_s_ns=1000 o_r_ns=200 switch_ns=300 link_gbps=50)
jq -e '.ok and .model.switch_ns == 300' <<< "$out" > /dev/null
ok $? "the model changes while the fabric runs"
forms "o_s 1000, o_r 200, switch 300 ns, 50 Gb/s" no
dp_ctl set model=edr > /dev/null
[ "$(dp_ctl status | jq -r .model.link_gbps)" = 100 ]
ok $? "a preset restores every parameter (edr: 100 Gb/s)"
