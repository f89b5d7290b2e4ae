#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Fault injection in the data plane, changed while it runs: a deterministic
# drop pattern, seeded random loss (counted), loss on one link, duplication,
# reordering and delay, each observable at the receivers.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
need_file "$DP_BIN" "sim-fabric/ibmcast-dataplane"
need_file "$DP_TOOL" "tests/dataplane/dp_tool"

plan 9

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-dpf.XXXXXX")
at_exit "rm -rf '$tmp'"
sim_up --hosts 8 --no-plugin || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"

# uc TAG COUNT [recv options]: COUNT packets node1 -> node3; the
# receiver's output in $tmp/TAG.
uc() {
	local tag=$1 count=$2 lid qpn
	shift 2
	dp_recv_bg "$tmp/$tag" --node node3 --count 0 --timeout-ms 1500 "$@"
	read -r _ _ lid _ qpn _ < "$tmp/$tag"
	"$DP_TOOL" send-uc --node node1 --lid "$lid" --qpn "$qpn" \
		--text p --count "$count" > /dev/null
	dp_got "$tmp/$tag" > /dev/null
}
order() { awk '/^recv/ { printf "%s ", $NF }' "$tmp/$1"; }

dp_ctl set drop_range=2-3 > /dev/null
uc range 5
is "$(order range)" "p-1 p-4 p-5 " "drop_range=2-3 drops exactly the 2nd and 3rd packet"
dp_ctl clear > /dev/null
dp_ctl set drop_every=2 > /dev/null
uc every 6
is "$(order every)" "p-1 p-3 p-5 " "drop_every=2 drops every second packet"
dp_ctl clear > /dev/null

dp_ctl reset > /dev/null
dp_ctl set loss=0.5 seed=7 > /dev/null
uc loss 200
got=$(dp_got "$tmp/loss")
lost=$(dp_drop loss)
is "$((got + lost))" 200 "random loss: received + counted losses = sent ($got + $lost)"
ok "$([ "$got" -gt 40 ] && [ "$got" -lt 160 ]; echo $?)" "about half are lost"
dp_ctl clear > /dev/null

dp_ctl set link_loss.leaf1/3=1 > /dev/null
uc link 3
is "$(dp_got "$tmp/link")" 0 "loss on the link leaf1/3 -> node3 stops everything to node3"
lid=$(dp_ctl counters | jq '[.links[] | select(.from == "leaf1" and .from_port == 3) | .drops.link_loss] | add')
is "$lid" 3 "and is counted on that link"
dp_ctl clear > /dev/null

dp_ctl set dup=1 > /dev/null
uc dup 2
is "$(order dup)" "p-1 p-1 p-2 p-2 " "dup=1 delivers every packet twice"
dp_ctl clear > /dev/null

dp_ctl set reorder=1 > /dev/null
uc reorder 2
is "$(order reorder)" "p-2 p-1 " "reorder=1 swaps a packet with the next one"
dp_ctl clear > /dev/null

dp_ctl set delay_ms=700 > /dev/null
uc delay 1 --timeout-ms 3000
at=$(awk '/^recv/ { print $3; exit }' "$tmp/delay")
ok "$([ -n "$at" ] && [ "$at" -ge 700 ]; echo $?)" "delay_ms=700 holds a packet at least 700 ms (arrived after ${at:-never} ms)"
dp_ctl clear > /dev/null
