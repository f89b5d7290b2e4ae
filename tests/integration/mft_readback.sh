#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# MFT blocks read by ibmcast-smpd (through the plugin's smp_client) and by
# ibmcast-mftwatch equal what infiniband-diags' ibroute -M reads, on a real
# OpenSM running over ibsim; mftwatch's watch sees a new group complete.
set -u

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
UMAD2SIM=${UMAD2SIM:-/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so}
SMPD=$top_builddir/osm-plugin/ibmcast-smpd
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
TSC=$top_builddir/tests/unit/test_smp_client

for t in ibsim opensm ibroute ibnetdiscover ibswitches; do
	command -v $t >/dev/null 2>&1 || { echo "1..0 # SKIP $t not installed"; exit 0; }
done
[ -r "$UMAD2SIM" ] || { echo "1..0 # SKIP umad2sim not installed"; exit 0; }
for f in "$SMPD" "$WATCH" "$TSC"; do
	[ -x "$f" ] || { echo "Bail out! $f not built"; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mft_readback.XXXXXX") || exit 1
pids=
stop() { # one process we started: TERM, a grace period, then KILL
	kill "$1" 2>/dev/null || return 0
	k=0
	while kill -0 "$1" 2>/dev/null && [ $k -lt 50 ]; do
		sleep 0.1
		k=$((k + 1))
	done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
cleanup() {
	# Newest first: OpenSM leaves ibsim while ibsim still answers.
	for p in $pids; do
		stop "$p"
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=1; echo "not ok $n - $*"; }
check() { if eval "$1"; then ok "$2"; else notok "$2"; fi; }

# Two leaves under one root, a redundant uplink, and node4 on port 20 so
# that a second port group (position 1) is exercised.
cat >"$tmp/net" <<'EOF'
Switch	24 "S-leaf1"
[1]	"H-1"[1]
[2]	"H-2"[1]
[3]	"H-3"[1]
[20]	"H-4"[1]
[23]	"S-root"[1]
[24]	"S-root"[3]

Switch	8 "S-leaf2"
[1]	"H-5"[1]
[2]	"H-6"[1]
[7]	"S-root"[2]

Switch	8 "S-root"
[1]	"S-leaf1"[23]
[2]	"S-leaf2"[7]
[3]	"S-leaf1"[24]

Hca	1 "H-1"	# "node1"
[1]	"S-leaf1"[1]

Hca	1 "H-2"	# "node2"
[1]	"S-leaf1"[2]

Hca	1 "H-3"	# "node3"
[1]	"S-leaf1"[3]

Hca	1 "H-4"	# "node4"
[1]	"S-leaf1"[20]

Hca	1 "H-5"	# "node5"
[1]	"S-leaf2"[1]

Hca	1 "H-6"	# "node6"
[1]	"S-leaf2"[2]
EOF

IBSIM_SOCKNAME=mftrb$$
export IBSIM_SOCKNAME
(cd "$tmp" && exec ibsim -s -n net >ibsim.log 2>&1) &
pids="$! $pids"
# waitfor TENTHS CMD...: until CMD succeeds, at most TENTHS tenths of a s.
waitfor() {
	w=$1
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$w" -gt 0 ] || return 1
		sleep 0.1
		w=$((w - 1))
	done
}
waitfor 300 grep -q 'Network simulator ready' "$tmp/ibsim.log" ||
	{ echo "Bail out! ibsim not ready: $(cat "$tmp/ibsim.log")"; exit 1; }
OSM_TMP_DIR=$tmp OSM_CACHE_DIR=$tmp LD_PRELOAD=$UMAD2SIM SIM_HOST=H-1 \
	opensm -d2 -f "$tmp/osm.log" >"$tmp/osm.out" 2>&1 &
pids="$! $pids"

# Everything below talks to the fabric as node6's HCA.
LD_PRELOAD=$UMAD2SIM
SIM_HOST=H-6
export LD_PRELOAD SIM_HOST

echo "1..8"

i=0
while [ $i -lt 100 ]; do
	ibswitches >"$tmp/sw" 2>/dev/null
	if [ "$(grep -c ' lid [1-9]' "$tmp/sw")" = 3 ] &&
	   grep -q 'SUBNET UP' "$tmp/osm.log" 2>/dev/null; then
		break
	fi
	sleep 0.2
	i=$((i + 1))
done
check '[ $i -lt 100 ]' "OpenSM brought the simulated subnet up"
lids=$(sed -n 's/.* lid \([0-9]*\) .*/\1/p' "$tmp/sw")
ibnetdiscover >"$tmp/topo" 2>/dev/null

# OpenSM creates the IPoIB broadcast group (0xc000) with no members: no
# switch has an MFT entry until somebody joins.
"$WATCH" reach --mlid 0xc000 >"$tmp/r0" 2>"$tmp/r0.err"
check 'grep -q "\"members\":\[\]" "$tmp/r0"' \
	"no members at 0xc000 before any join ($(cat "$tmp/r0"))"

guid() { # node description -> port GUID, from ibnetdiscover
	awk -v d="\"$1\"" '/^Ca/ { on = index($0, "# " d) > 0; next }
		on && /^\[/ { s = $0; sub(/^\[[0-9]+\]\(/, "", s);
			sub(/\).*/, "", s); print "0x" s; exit }' "$tmp/topo"
}
g1=$(guid node1) g2=$(guid node2) g3=$(guid node3)
g4=$(guid node4) g5=$(guid node5) g6=$(guid node6)

# Watch a new group from before it exists until its routes are complete:
# the watcher discovers the fabric first, then learns the MLID on stdin.
mkfifo "$tmp/w1.in"
"$WATCH" watch --mlids-from-stdin --nodes node1,node3,node4,node5 \
	--timeout-ms 15000 --interval-us 2000 <"$tmp/w1.in" >"$tmp/w1" \
	2>"$tmp/w1.err" &
wpid=$!
pids="$wpid $pids"
exec 3>"$tmp/w1.in"
waitfor 300 grep -q 'reading MLIDs' "$tmp/w1.err" ||
	echo "# the watcher did not finish discovery: $(cat "$tmp/w1.err")"
echo 0xc001 >&3
exec 3>&-
"$TSC" --join ff12:401b:ffff::ffff:ffff $g1 $g2 $g4 $g6 >"$tmp/j0" &&
"$TSC" --join ff12:1bca::1 $g1 $g3 $g4 $g5 >"$tmp/j1"
check '[ $? = 0 ] && [ "$(sort -u "$tmp/j0")" = 0xc000 ] &&
	[ "$(sort -u "$tmp/j1")" = 0xc001 ]' \
	"proxy joins through the SA got MLIDs 0xc000 and 0xc001"
wait $wpid
wrc=$?
pids=$(echo " $pids " | sed "s/ $wpid / /")
check '[ $wrc = 0 ] && grep -q "\"complete\":true" "$tmp/w1"' \
	"watch saw 0xc001 complete: $(cat "$tmp/w1" "$tmp/w1.err")"

# What ibroute reads, per switch.
for l in $lids; do
	ibroute -M "$l" >"$tmp/mft.$l" 2>/dev/null
done
expect() { # MLID -> sorted member node descriptions, from ibroute
	for l in $lids; do
		awk -v lid="$l" -v m="$1" '
			FNR == NR {
				if ($1 == "Switch") { sw = ($0 ~ " lid " lid " ") }
				else if (sw && /^\[/ && /"H-/) {
					p = $1; gsub(/[^0-9]/, "", p)
					d = $0; sub(/^[^#]*# "/, "", d)
					sub(/".*/, "", d); name[p] = d
				}
				next
			}
			/Ports: / { c0 = index($0, "Ports: ") + 7 }
			$1 == m {
				for (p in name)
					if (substr($0, c0 + 2 * p, 1) == "x")
						print name[p]
			}' "$tmp/topo" "$tmp/mft.$l"
	done | sort -u | tr '\n' ' '
}
got() { # mftwatch reach output -> sorted members
	tr -d '\n' <"$1" | sed 's/.*"members":\[\([^]]*\)\].*/\1/' |
		tr ',' '\n' | tr -d '"' | sed '/^$/d' | sort | tr '\n' ' '
}

"$WATCH" reach --mlid 0xc000 >"$tmp/r1" 2>"$tmp/r1.err"
rc=$?
want=$(expect 0xc000)
check '[ $rc = 0 ] && [ "$want" = "node1 node2 node4 node6 " ] &&
	[ "$(got "$tmp/r1")" = "$want" ]' \
	"0xc000 members as ibroute shows them: $want; mftwatch: $(cat "$tmp/r1" "$tmp/r1.err")"
"$WATCH" reach --mlid 0xc001 >"$tmp/r2" 2>"$tmp/r2.err"
rc=$?
want=$(expect 0xc001)
check '[ $rc = 0 ] && [ "$want" = "node1 node3 node4 node5 " ] &&
	[ "$(got "$tmp/r2")" = "$want" ] &&
	grep -q "\"consistent\":true" "$tmp/r2"' \
	"0xc001 members as ibroute shows them, consistent: $want"

# Watch reports incomplete (exit 1) when a node is not in the group.
"$WATCH" watch --mlid 0xc001 --nodes node1,node2 --timeout-ms 50 \
	>"$tmp/w2" 2>&1
check '[ $? = 1 ] && grep -q "\"complete\":false" "$tmp/w2"' \
	"watch times out on a group that misses node2"

# smp_client + ibmcast-smpd read the same blocks as ibroute.
# shellcheck disable=SC2086
"$TSC" "$SMPD" $(for l in $lids; do echo "$tmp/mft.$l"; done) >"$tmp/tsc" 2>&1
rc=$?
sed 's/^/# /' "$tmp/tsc"
check '[ $rc = 0 ] && ! grep -q "^not ok" "$tmp/tsc" &&
	grep -q "^ok 9" "$tmp/tsc"' "test_smp_client: smpd reads equal ibroute's"

exit $failed
