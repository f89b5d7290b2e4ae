# SPDX-License-Identifier: BSD-3-Clause
# Shell helpers for the data plane tests (sourced after tests/lib.sh):
# endpoints in the background, counters and fault injection.
# shellcheck shell=bash

DP_TOOL=$top_builddir/tests/dataplane/dp_tool
DP_BIN=$top_builddir/sim-fabric/ibmcast-dataplane

# dp_ctl ARGS...: one control request to the fabric in SIM_DIR.
dp_ctl() {
	"$IBMCAST_SIM" dataplane --dir "$SIM_DIR" "$@"
}

# dp_recv_bg OUT ARGS...: a receiving endpoint in the background, its
# output in OUT; returns once it is attached (its "ready" line).
dp_recv_bg() {
	local out=$1
	shift
	"$DP_TOOL" recv "$@" > "$out" 2>&1 &
	at_exit "kill $! 2>/dev/null || true"
	wait_until 20 grep -q '^ready' "$out" || diag "receiver: $(cat "$out")"
}

# dp_got OUT: how many packets the receiver of OUT got (after it ended).
dp_got() {
	local f=$1 i
	for ((i = 0; i < 300; i++)); do
		grep -q '^got ' "$f" && break
		sleep 0.1
	done
	sed -n 's/^got //p' "$f"
}

# dp_mft_fresh MLID: waits (20 s at most) until the daemon has completed an
# MFT pass that began after this call and covered MLID (someone uses it):
# its view of MLID is then no older than the call. This is the condition
# the tests need before sending, where a fixed sleep only made it likely.
dp_mft_fresh() {
	local p0
	p0=$(dp_ctl counters | jq -e .tables.mft_passes) || return 1
	wait_until 20 _dp_mft_passed "$1" $((p0 + 2)) ||
		{ diag "the data plane did not read MLID $1 afresh"; return 1; }
}

# (The pass running when dp_mft_fresh started may have begun before it;
# the one after that began after it.)
_dp_mft_passed() {
	[ "$(dp_ctl counters | jq .tables.mft_passes)" -ge "$2" ] &&
		dp_ctl status | jq -e --argjson m "$(($1))" \
			'.mlids[] | select(.mlid == $m) | .read' > /dev/null
}

# dp_link_bytes: "link bytes" of every link that carried something.
dp_link_bytes() {
	dp_ctl counters | jq -r '.links[] | select(.packets > 0) |
		"\(.from)/\(.from_port)>\(.to)/\(.to_port) \(.bytes)"'
}

# dp_drop CAUSE: the daemon-wide drop counter of CAUSE.
dp_drop() {
	dp_ctl counters | jq -r ".drops.$1"
}

# dp_mc_probe TAG SRC DST CTRL MGID MLID QKEY: counters reset, receivers on
# DST and CTRL (another member), SRC sends 2 packets to the group once the
# daemon has read the MLID afresh. Prints "D C": the packets DST's endpoint
# got (the daemon's counter, read once CTRL has both, which shows the
# sends were carried) and those CTRL got. Neither receiver's own timeout
# decides anything, so a slow machine cannot turn a loss into a pass.
# Their output goes to $tmp/TAG.* (the test's temporary directory).
dp_mc_probe() {
	local tag=$1 src=$2 dst=$3 ctrl=$4 mgid=$5 mlid=$6 qkey=$7 d c pid try
	# A probe whose control receiver got nothing proves nothing (on a
	# loaded machine the MFT pass or the receivers may lag): it is
	# repeated, three times at most.
	for try in 1 2 3; do
		dp_ctl reset > /dev/null
		# It waits for a third packet, so it is still attached (and
		# counted) when the counters are read.
		dp_recv_bg "$tmp/$tag.$try.dst" --node "$dst" --mgid "$mgid" \
			--mlid "$mlid" --count 3 --timeout-ms 60000
		pid=$!
		dp_recv_bg "$tmp/$tag.$try.ctrl" --node "$ctrl" --mgid "$mgid" \
			--mlid "$mlid" --count 2 --timeout-ms 60000
		dp_mft_fresh "$mlid"
		"$DP_TOOL" send-mc --node "$src" --mgid "$mgid" --mlid "$mlid" \
			--qkey "$qkey" --count 2 > /dev/null
		c=$(dp_got "$tmp/$tag.$try.ctrl")
		d=$(dp_ctl counters | jq --arg n "$dst" \
			'[.endpoints[] | select(.node == $n) | .rx_packets] | add // 0')
		kill "$pid" 2> /dev/null || true
		[ -z "$c" ] || break
		diag "dp_mc_probe $tag: the control receiver got nothing (try $try)"
	done
	printf '%s %s\n' "$d" "${c:-none}"
}
