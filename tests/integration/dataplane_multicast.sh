#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Multicast goes where the MFTs the SM wrote carry it, and only there: not
# while a group's MFTs are not programmed, to exactly the job's nodes once
# the plugin says ready (once the daemon has read them since), and nowhere after
# release. Then the SA proxy: a real join and leave through OpenSM's SA.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
# shellcheck disable=SC1091
. "$top_srcdir/tests/lib-dataplane.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
need_file "$CTL" "tools/ibmcastctl"
need_file "$DP_BIN" "sim-fabric/ibmcast-dataplane"
need_file "$DP_TOOL" "tests/dataplane/dp_tool"

plan 15

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-dpmc.XXXXXX")
at_exit "rm -rf '$tmp'"

sim_up --hosts 12 --radix 8 || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
group() { # JOB: "MGID MLID QKEY" of its group 0 once ready (the Q_Key
	  # is the job's, shared by its groups)
	"$CTL" --json wait "$1" --timeout-ms 30000 2> /dev/null |
		jq -r '.job.qkey as $q | .job.groups[0] |
			"\(.mgid) \(.mlid) \($q)"'
}

# round TAG MGID MLID QKEY: node1 sends 2 packets to the group; receivers
# on node2..node6 report how many they got: "n2 n3 n4 n5 n6".
round() {
	local tag=$1 mgid=$2 mlid=$3 qkey=$4 n res=
	# Attached first: the daemon reads only MLIDs someone uses. Their
	# wait counts from their start, and the MFT pass below may take
	# seconds on a loaded machine: 10 s (what the negative rounds cost).
	for n in 2 3 4 5 6; do
		dp_recv_bg "$tmp/$tag.$n" --node node$n --mgid "$mgid" \
			--mlid "$mlid" --count 2 --timeout-ms 10000
	done
	dp_mft_fresh "$mlid" >&2	# the daemon has read the MLID since
	# After a release: until the SM has cleared the MFTs.
	[ -z "${WAIT_EMPTY:-}" ] || wait_until 20 sh -c \
		"[ -z \"\$('$IBMCAST_SIM' dataplane --dir '$SIM_DIR' status |
		jq -r '.mlids[] | select(.mlid == $((mlid))) | .members[]')\" ]"
	"$DP_TOOL" send-mc --node node1 --mgid "$mgid" --mlid "$mlid" \
		--qkey "$qkey" --count 2 > /dev/null
	for n in 2 3 4 5 6; do
		res+="$(dp_got "$tmp/$tag.$n") "
	done
	printf '%s\n' "${res% }"
}

"$CTL" reserve 21 --nodes 'node[1-4]' --groups 1 > /dev/null 2>&1
read -r mgid mlid qkey <<< "$(group 21)"
ok "$([ -n "$mgid" ] && [ -n "$mlid" ]; echo $?)" "job 21 is ready with a group ($mlid)"
# Release: the MFTs lose the MLID; a packet to it now goes nowhere.
"$CTL" release 21 > /dev/null 2>&1
mlid_members() {
	dp_ctl status | jq -r --argjson m "$((mlid))" \
		'.mlids[] | select(.mlid == $m) | .members | sort | join(",")'
}
dp_ctl reset > /dev/null
is "$(WAIT_EMPTY=1 round before "$mgid" "$mlid" "$qkey")" "0 0 0 0 0" \
	"a group whose MFTs are not programmed: no node gets its packets"
nr=$(dp_drop no_route)
ok "$([ "$nr" -ge 2 ]; echo $?)" "the fabric dropped them (no_route $nr)"

# Reserved again: same job, same MGID (deterministic).
"$CTL" reserve 21 --nodes 'node[1-4]' --groups 1 > /dev/null 2>&1
read -r mgid2 mlid qkey <<< "$(group 21)"
is "$mgid2" "$mgid" "reserved again: the same MGID"
is "$(round ready "$mgid" "$mlid" "$qkey")" "2 2 2 0 0" \
	"ready: exactly node2..node4 (the job's other nodes) get both packets"
# The daemon tracks an MLID while an endpoint uses it: one attached for
# the look.
dp_recv_bg "$tmp/view" --node node2 --mgid "$mgid" --mlid "$mlid" \
	--count 1 --timeout-ms 60000
vpid=$!
dp_mft_fresh "$mlid" >&2
is "$(mlid_members)" "node1,node2,node3,node4" \
	"the daemon's MFT view has exactly the job's nodes"
kill "$vpid" 2> /dev/null

# rx56 TAG MGID MLID QKEY CTRL: counters reset; receivers on node5 and
# node6 that wait for a third packet, so they are still attached (and
# counted) when the counters are read, and one on CTRL, another node of
# the group; node1 sends 2 packets once the daemon has read the MLID
# afresh. Prints "N5 N6 C": the packets the daemon handed node5's and
# node6's endpoints ("none": no endpoint attached there), read once CTRL
# has both (so the sends were carried), and those CTRL got.
rx56() {
	local tag=$1 mgid=$2 mlid=$3 qkey=$4 ctrl=$5 n c r pids=()
	dp_ctl reset > /dev/null
	for n in 5 6; do
		dp_recv_bg "$tmp/$tag.$n" --node node$n --mgid "$mgid" \
			--mlid "$mlid" --count 3 --timeout-ms 60000
		pids+=($!)
	done
	dp_recv_bg "$tmp/$tag.ctrl" --node "$ctrl" --mgid "$mgid" \
		--mlid "$mlid" --count 2 --timeout-ms 20000
	dp_mft_fresh "$mlid" >&2
	"$DP_TOOL" send-mc --node node1 --mgid "$mgid" --mlid "$mlid" \
		--qkey "$qkey" --count 2 > /dev/null
	c=$(dp_got "$tmp/$tag.ctrl")
	r=$(dp_ctl counters | jq -r '[("node5", "node6") as $n |
		[.endpoints[] | select(.node == $n and .attached > 0) |
		 .rx_packets] | if length == 0 then "none" else add end] |
		map(tostring) | join(" ")')
	kill "${pids[@]}" 2> /dev/null
	printf '%s %s\n' "$r" "${c:-none}"
}
is "$(rx56 out "$mgid" "$mlid" "$qkey" node2)" "0 0 2" \
	"node5 and node6, attached but not in the job, received nothing while node2 got both"
# The same receivers in a group that has them: they do receive.
"$CTL" reserve 22 --nodes 'node[1,5-7]' --groups 1 > /dev/null 2>&1
read -r mgid22 mlid22 qkey22 <<< "$(group 22)"
is "$(rx56 in "$mgid22" "$mlid22" "$qkey22" node7)" "2 2 2" \
	"  ... while in job 22's group (node[1,5-7]) the same receivers get both"
"$CTL" release 22 > /dev/null 2>&1

# Q_Key: the receivers took any; a sender's wrong Q_Key still reaches them,
# but not a QP with its own Q_Key.
dp_recv_bg "$tmp/qk" --node node3 --qkey 0x5555 --mgid "$mgid" --mlid "$mlid" \
	--count 1 --timeout-ms 10000
dp_mft_fresh "$mlid"
dp_ctl reset > /dev/null
"$DP_TOOL" send-mc --node node1 --mgid "$mgid" --mlid "$mlid" --qkey 0x4444 > /dev/null
# (The fabric's own count shows the packet reached the QP and was refused
# there, not lost on the way.)
is "$(dp_got "$tmp/qk") $(dp_drop qkey)" "0 1" \
	"multicast with a Q_Key the QP does not have is dropped (got, Q_Key drops)"

# Released: nowhere again, once the daemon has re-read the MFTs.
"$CTL" release 21 > /dev/null 2>&1
wait_until 20 sh -c "[ -z \"\$('$IBMCAST_SIM' dataplane --dir '$SIM_DIR' status |
	jq -r '.mlids[] | select(.mlid == $((mlid))) | .members[]')\" ]"
dp_ctl reset > /dev/null
is "$(round after "$mgid" "$mlid" "$qkey")" "0 0 0 0 0" \
	"released: no node gets the group's packets"
nr=$(dp_drop no_route)
ok "$([ "$nr" -ge 2 ]; echo $?)" "  ... the fabric dropped them (no_route $nr)"

# SA proxy: node7 joins a new group through the daemon (OpenSM creates
# it), node8 joins it too; the MFTs then carry node7's packets to node8.
# Not an IPoIB MGID (signature 0x401b/0x601b): OpenSM would check it
# against the IPoIB broadcast group's Q_Key.
pm=ff12:1234:ffff:0000:0000:0000:0000:4242
j7=$("$DP_TOOL" join --node node7 --mgid "$pm" --qkey 0x4242 2>&1)
like "$j7" "^joined mlid 0xc[0-9a-f]{3} qkey 0x4242 pkey 0xffff" \
	"a proxy join creates the group in OpenSM's SA" || diag "$j7"
pmlid=$(awk '{ print $3 }' <<< "$j7")
j8=$("$DP_TOOL" join --node node8 --mgid "$pm" 2>&1)
is "$(awk '{ print $3 }' <<< "$j8")" "$pmlid" "a second proxy join gets the same MLID"
dp_recv_bg "$tmp/sa8" --node node8 --mgid "$pm" --mlid "$pmlid" --count 1 --timeout-ms 10000
wait_until 20 sh -c "'$IBMCAST_SIM' dataplane --dir '$SIM_DIR' status |
	jq -e '.mlids[] | select(.mlid == $((pmlid))) | .members | index(\"node8\")'"
"$DP_TOOL" send-mc --node node7 --mgid "$pm" --mlid "$pmlid" --qkey 0x4242 > /dev/null
is "$(dp_got "$tmp/sa8")" 1 "the SM programmed the proxy-joined group: node7 reaches node8"
out=$("$DP_TOOL" join-leave --node node8 --mgid "$pm" 2>&1)
like "$out" "left" "a proxy leave is accepted by the SA" || diag "$out"
