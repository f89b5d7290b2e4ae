#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What the data plane does with packets for an endpoint that does not read:
# they wait in its queue in the daemon; one that waited past the packet
# lifetime is dropped (counted as lifetime, and per endpoint as expired), as
# a switch drops a packet held past its head-of-queue lifetime; with no
# lifetime the queue keeps all of them; beyond --rq-bytes they are dropped
# as rq_overflow. And the daemon runs in the real-time class, so that the
# hosts' CPUs never stop the fabric.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
need_cmd chrt util-linux
need_file "$DP_BIN" "sim-fabric/ibmcast-dataplane"
need_file "$DP_TOOL" "tests/dataplane/dp_tool"

plan 15

SENT=800	# 2 KiB packets (the MTU here): 1.6 MB, many times what the socket holds

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-dpq.XXXXXX")
at_exit "rm -rf '$tmp'"

sim_up --hosts 8 --radix 8 --no-plugin || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"

pid=$(awk '{ print $1 }' "$SIM_DIR/pids/dataplane")
if [ "$(id -u)" = 0 ]; then
	like "$(head -5 "$SIM_DIR/dataplane.log")" \
		"real-time \(SCHED_RR priority 1\) while endpoints are connected" \
		"the data plane says it runs real-time while endpoints are connected"
	like "$(chrt -p "$pid")" "policy: SCHED_OTHER" \
		"with none connected it is time-shared (it only reads tables)"
	dp_recv_bg "$tmp/sched" --node node3 --count 0 --timeout-ms 1000 \
		--stall-ms 3000
	wait_until 10 sh -c "chrt -p $pid | grep -q SCHED_RR"
	like "$(chrt -p "$pid")" "policy: SCHED_RR" \
		"with an endpoint connected it runs SCHED_RR"
	wait_until 20 sh -c "chrt -p $pid | grep -q SCHED_OTHER"
	like "$(chrt -p "$pid")" "policy: SCHED_OTHER" \
		"and time-shared again once the endpoint is gone"
else
	skip "not root: the data plane may not take SCHED_RR here"
	skip "not root: it stays time-shared"
	skip "not root: it stays time-shared"
	skip "not root: it stays time-shared"
fi

# stalled TAG SET...: the daemon set so, counters reset, a receiver on
# node2 that reads nothing for 3 s, SENT packets from node1 to it, and 0.6 s
# later one more (which finds the queue as the first left it). Prints "GOT
# LIFETIME OVERFLOW EXPIRED": what the receiver got (all it was given, then
# 1.5 s of silence), the daemon's two drop counters, and its endpoint's
# expired counter read before it began to read.
stalled() {
	local tag=$1 lid qpn
	shift
	dp_ctl set "$@" > /dev/null || diag "set $* refused" >&2
	dp_ctl reset > /dev/null
	dp_recv_bg "$tmp/$tag" --node node2 --count 0 --timeout-ms 1500 \
		--stall-ms 3000
	read -r _ _ lid _ qpn _ < "$tmp/$tag"
	"$DP_TOOL" send-uc --node node1 --lid "$lid" --qpn "$qpn" \
		--size 2048 --count "$SENT" > "$tmp/$tag.send" 2>&1 ||
		diag "send: $(cat "$tmp/$tag.send")" >&2
	sleep 0.6
	"$DP_TOOL" send-uc --node node1 --lid "$lid" --qpn "$qpn" \
		--size 2048 --count 1 --text late > /dev/null 2>&1
	dp_ctl counters | jq -r '[.endpoints[] | select(.node == "node2") |
		.expired] | add // 0' > "$tmp/$tag.expired"
	echo "$(dp_got "$tmp/$tag") $(dp_drop lifetime) $(dp_drop rq_overflow)" \
		"$(cat "$tmp/$tag.expired")"
}
ALL=$((SENT + 1))

is "$(dp_ctl status | jq -r '"\(.lifetime_ms) \(.rq_bytes)"')" "1000 16777216" \
	"started without options, the daemon reports a 1000 ms lifetime and a 16 MiB queue"

# No lifetime, a deep queue: every packet waits and arrives.
read -r got life over exp <<< "$(stalled nolife lifetime_ms=0 rq_bytes=16777216)"
is "$got/$life/$over/$exp" "$ALL/0/0/0" \
	"no lifetime: all $ALL packets to a stalled endpoint wait for it and arrive"

# A 300 ms lifetime: what waited in the daemon longer is dropped; what the
# socket already held arrives.
read -r got life over exp <<< "$(stalled life lifetime_ms=300)"
ok "$([ "$got" -gt 1 ] && [ "$got" -lt "$SENT" ]; echo $?)" \
	"a 300 ms lifetime: some arrive (those in the socket), not all ($got of $ALL)"
is "$((got + life))/$over" "$ALL/0" \
	"every packet either arrived or was dropped as lifetime ($got + $life), none overflowed"
is "$exp" "$((SENT - got))" \
	"when the late packet came, the stalled endpoint had counted as expired all the first $SENT but those its socket held ($exp)"
is "$life/$(grep -c 'late-1' "$tmp/life")" "$((exp + 1))/0" \
	"the late packet, which then waited 2.4 s too, expired as well rather than arrive late" ||
	diag "$(tail -3 "$tmp/life")"

# A small queue and no lifetime: the excess is an overflow.
read -r got life over exp <<< "$(stalled rq lifetime_ms=0 rq_bytes=65536)"
ok "$([ "$got" -gt 1 ] && [ "$got" -lt "$SENT" ]; echo $?)" \
	"a 64 KiB queue: some arrive, not all ($got of $ALL)"
is "$((got + over))/$life" "$ALL/0" \
	"every packet either arrived or overflowed the queue ($got + $over), none expired"

# Bad values are refused and change nothing.
run_fails "lifetime_ms out of range is refused" dp_ctl set lifetime_ms=-1
run_fails "rq_bytes under 4096 is refused" dp_ctl set rq_bytes=100
is "$(dp_ctl status | jq -r '"\(.lifetime_ms) \(.rq_bytes)"')" "0 65536" \
	"and left the values as they were"
