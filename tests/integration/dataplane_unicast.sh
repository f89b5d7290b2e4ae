#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The data plane carries unicast hop by hop along the LFTs it read: a packet
# arrives, and its bytes are counted on exactly the links of one path from
# sender to receiver; a Q_Key mismatch is dropped; malformed messages get
# ERROR without harm; a dead endpoint is cleaned up; down stops the daemon.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
need_file "$DP_BIN" "sim-fabric/ibmcast-dataplane"
need_file "$DP_TOOL" "tests/dataplane/dp_tool"

plan 15

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-dpuc.XXXXXX")
at_exit "rm -rf '$tmp'"

sim_up --hosts 16 --radix 8 --no-plugin || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
ok "$([ -S "$IBMCAST_SIM_DATAPLANE" ] && [ -S "$IBMCAST_SIM_DATAPLANE_CTL" ]; echo $?)" \
	"up exports the data plane's sockets in DIR/env"

# node1 to node16: far apart in the tree.
dp_recv_bg "$tmp/r16" --node node16 --qkey 0x77 --count 3 --timeout-ms 3000
read -r _ _ lid _ qpn _ < "$tmp/r16"
# Endpoints while one is attached (the clean-up check below needs them
# counted at all).
live=$(dp_ctl status | jq .endpoints)
dp_ctl reset > /dev/null
"$DP_TOOL" send-uc --node node1 --lid "$lid" --qpn "$qpn" --qkey 0x77 \
	--size 100 --count 3 > "$tmp/s1" 2>&1
is "$(dp_got "$tmp/r16")" 3 "three unicast packets node1 -> node16 arrive"
like "$(grep -m1 '^recv' "$tmp/r16")" "slid [0-9]+ sqpn 256 dlid $lid mcast 0 len 100 hello-1" \
	"the receiver sees source LID, QPN and payload"

# The links that carried bytes form one chain node1 -> ... -> node16,
# each with exactly 3 x 100 bytes.
dp_link_bytes > "$tmp/links"
chain=$(awk '{ split($1, e, ">"); from[e[1]] = e[2]; bytes[e[1]] = $2 }
	END {
		at = ""; for (k in from) if (k ~ /^node1\//) at = k
		n = 0; bad = 0
		while (at != "" && n < 20) {
			n++; if (bytes[at] != 300) bad++
			nxt = from[at]; delete from[at]
			if (nxt ~ /^node16\//) { at = "end"; break }
			split(nxt, q, "/"); at = ""
			for (k in from) { split(k, p, "/"); if (p[1] == q[1]) at = k }
		}
		left = 0; for (k in from) left++
		print at, n, bad, left }' "$tmp/links")
read -r end hops badbytes left <<< "$chain"
is "$end/$badbytes/$left" "end/0/0" \
	"bytes counted on exactly the links of one path node1 -> node16, 300 on each" ||
	diag "$(cat "$tmp/links")"
ok "$([ "$hops" -ge 3 ]; echo $?)" "the path crosses switches ($hops links)"

# A received payload stays readable across control requests made before
# the next recv (their answers must not overwrite it).
dp_recv_bg "$tmp/rc" --node node7 --qkey 0x77 --count 2 --timeout-ms 3000 \
	--control-between
read -r _ _ lid _ qpn _ < "$tmp/rc"
"$DP_TOOL" send-uc --node node3 --lid "$lid" --qpn "$qpn" --qkey 0x77 \
	--size 100 --count 2 > /dev/null 2>&1
dp_got "$tmp/rc" > /dev/null
is "$(grep -c 'len 100 hello-[12]x' "$tmp/rc")" 2 \
	"a payload read before a control request (a detach) is intact after it" ||
	diag "$(cat "$tmp/rc")"

# Q_Key mismatch: dropped and counted.
dp_recv_bg "$tmp/rq" --node node5 --qkey 0x1234 --count 1 --timeout-ms 1500
read -r _ _ lid _ qpn _ < "$tmp/rq"
before=$(dp_drop qkey)
"$DP_TOOL" send-uc --node node2 --lid "$lid" --qpn "$qpn" --qkey 0x999 > /dev/null
is "$(dp_got "$tmp/rq")" 0 "a packet with the wrong Q_Key is not delivered"
is "$(($(dp_drop qkey) - before))" 1 "and counted as a qkey drop"

# Over the MTU: refused by the client library, and by the daemon.
out=$("$DP_TOOL" send-uc --node node2 --lid "$lid" --qpn "$qpn" --size 4097 2>&1)
like "$out" "Message too long|size" "a payload over the MTU is refused"

# Malformed messages: each answered by ERROR, the connection still works,
# the daemon still serves others.
out=$("$DP_TOOL" junk --node node3 2>&1)
like "$out" "errors 7 of 7" "every malformed message gets ERROR" || diag "$out"
like "$out" "hello after junk: ok" "the connection still works afterwards"
bad=$(dp_ctl counters | jq -r .bad_messages)
ok "$([ "$bad" -ge 7 ]; echo $?)" "malformed messages are counted ($bad)"

# Dead endpoints are cleaned up.
wait_until 20 sh -c "[ \"\$('$IBMCAST_SIM' dataplane --dir '$SIM_DIR' status | jq .endpoints)\" = 0 ]"
is "$([ "${live:-0}" -ge 1 ]; echo $?)/$(dp_ctl status | jq .endpoints)" 0/0 \
	"endpoints that went away are cleaned up ($live while a receiver was attached, none now)"

pid=$(awk '{ print $1 }' "$SIM_DIR/pids/dataplane")
sim_down "$SIM_DIR" > /dev/null
ok "$(kill -0 "$pid" 2>/dev/null && echo 1 || echo 0)" "down stops the data plane daemon"
ok "$([ ! -e "$SIM_DIR/dataplane.sock" ]; echo $?)" "and removes its socket"
