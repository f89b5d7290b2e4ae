#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ibmcast-fattree writes proper, symmetric 2- and 3-level fat trees that
# ibsim accepts and OpenSM brings up with every host seen by name.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

# check_net FILE HOSTS SM_HOSTS RADIX LEVELS: prints one line per defect,
# nothing for a good file.
check_net() {
	awk -v N="$2" -v K="$3" -v R="$4" -v L="$5" '
	function err(m) { if (nerr++ < 10) print m }
	function q(s,   a) { split(s, a, "\""); return a[2] }
	/^(Switch|Hca)\t/ {
		cur = q($0); nn++
		if (cur in type) err("node " cur " defined twice")
		type[cur] = $1; nports[cur] = $2 + 0; order[nn] = cur
		d = $0; sub(/^[^#]*# "/, "", d); sub(/".*/, "", d)
		desc[cur] = d; bydesc[d]++
		if ($2 + 0 > 254) err(cur " has " $2 " ports")
		next
	}
	/^\[/ {
		lp = substr($1, 2) + 0
		rid = q($0)
		rp = $0; sub(/^[^"]*"[^"]*"\[/, "", rp); rp += 0
		if (lp < 1 || lp > nports[cur]) err(cur " port " lp " out of range")
		if ((cur, lp) in peer) err(cur " port " lp " used twice")
		peer[cur, lp] = rid SUBSEP rp
		deg[cur]++; adj[cur] = adj[cur] " " rid
		next
	}
	END {
		if (order[1] != "H-ibmcast-sm1" || desc[order[1]] != "ibmcast-sm1")
			err("first record is " order[1] ", not H-ibmcast-sm1")
		for (i = 1; i <= N; i++)
			if (bydesc["node" i] != 1)
				err("node" i " described " bydesc["node" i] + 0 " times")
		for (i = 1; i <= K; i++)
			if (bydesc["ibmcast-sm" i] != 1)
				err("ibmcast-sm" i " described " bydesc["ibmcast-sm" i] + 0 " times")
		for (k in peer) {
			split(k, a, SUBSEP); split(peer[k], b, SUBSEP)
			if (!(b[1] in type)) { err(a[1] " links to unknown " b[1]); continue }
			if (peer[b[1], b[2]] != a[1] SUBSEP a[2])
				err(a[1] "[" a[2] "] -> " b[1] "[" b[2] "] is not listed back")
			links++
		}
		h = R / 2
		for (n in type) {
			if (type[n] == "Hca") {
				hcas++
				if (deg[n] != 1) err(n " has " deg[n] + 0 " links")
			} else {
				switches++
				if (n ~ /^S-leaf/) {
					leaves++; up = 0
					for (p = h + 1; p <= R; p++) if ((n, p) in peer) up++
					if (up != h) err(n " has " up " uplinks, not " h)
				}
			}
		}
		# Hosts stay in node order, half a radix per leaf.
		for (i = 1; i <= N; i++) {
			want = "S-leaf" int((i - 1) / h) + 1 SUBSEP (i - 1) % h + 1
			if (peer["H-node" i, 1] != want) err("node" i " is not on its leaf port")
		}
		if (hcas != N + K) err(hcas " HCAs, want " N + K)
		if (links % 2) err("odd number of link ends")
		# Every leaf reaches every other within 2*(L-1) switch hops.
		for (s = 1; s <= 2; s++) {
			src = s == 1 ? "S-leaf1" : "S-leaf" leaves
			delete dist; dist[src] = 0; head = 1; tail = 1; qq[1] = src
			while (head <= tail) {
				u = qq[head++]; nnb = split(adj[u], nb, " ")
				for (j = 1; j <= nnb; j++)
					if (!(nb[j] in dist)) {
						dist[nb[j]] = dist[u] + 1
						if (type[nb[j]] == "Switch") qq[++tail] = nb[j]
					}
			}
			for (n in type) {
				if (!(n in dist)) { err(n " unreachable from " src); continue }
				if (n ~ /^S-leaf/ && dist[n] > 2 * (L - 1))
					err(n " is " dist[n] " hops from " src)
			}
		}
	}' "$1"
}

sizes="1 17 648 2000 4000"
plan $((2 * 5 * 3 + 16 + 4 * 4))

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-fattree.XXXXXX")
at_exit "rm -rf '$tmp'"

for levels in 2 3; do
	for n in $sizes; do
		f=$tmp/ft-$n-$levels.net
		rc=0
		"$IBMCAST_FATTREE" --hosts "$n" --levels "$levels" > "$f" 2> "$tmp/err" || rc=$?
		ok "$rc" "$levels levels, $n hosts: generated" || diag "$(cat "$tmp/err")"
		is "$(head -c 1 "$tmp/err")" "" "$levels levels, $n hosts: nothing on stderr"
		defects=$(check_net "$f" "$n" 1 36 "$levels")
		is "$defects" "" "$levels levels, $n hosts: $(sed -n 2p "$f" | cut -c3-)"
	done
done

# Options and their validation.
"$IBMCAST_FATTREE" --hosts 40 --levels 3 --radix 8 --sm-hosts 3 -o "$tmp/o.net"
ok $? "-o writes a file"
"$IBMCAST_FATTREE" --hosts 40 --levels 3 --radix 8 --sm-hosts 3 > "$tmp/s.net"
cmp -s "$tmp/o.net" "$tmp/s.net"
ok $? "-o writes what standard output gets"
is "$(check_net "$tmp/o.net" 40 3 8 3)" "" "radix 8, 3 SM HCAs, 3 levels: proper fat tree"
is "$(grep -c '^Hca' "$tmp/o.net")" 43 "3 SM HCAs come on top of the hosts"
# The checker itself must notice a link listed on one end only.
sed '/^\[1\]\t"S-leaf1"\[3\]/d' "$tmp/o.net" > "$tmp/broken.net"
like "$(check_net "$tmp/broken.net" 40 3 8 3)" 'not listed back' \
	"the checker catches a one-sided link"

# One level: a single switch, host k on its port k, the SM HCA after them.
"$IBMCAST_FATTREE" --hosts 12 --levels 1 --radix 16 > "$tmp/one.net"
placed=$(for i in $(seq 1 12) sm1; do
	h=H-node$i
	[ "$i" = sm1 ] && { h=H-ibmcast-sm1; i=13; }
	grep -A1 "^Hca.*\"$h\"" "$tmp/one.net" | grep -c "\"S-leaf1\"\[$i\]"
done | awk '{ s += $1 } END { print s + 0 }')
ok "$([ "$(grep -c '^Switch' "$tmp/one.net")" = 1 ] && [ "$placed" = 13 ]; echo $?)" \
	"1 level: one switch, host k on its port k, the SM HCA after them ($placed of 13 placed)"

bad() {
	local want=$1 out rc=0
	shift
	out=$("$IBMCAST_FATTREE" "$@" 2> "$tmp/err") || rc=$?
	if [ "$rc" != 0 ] && [ -z "$out" ] && grep -qiE "$want" "$tmp/err"; then
		ok 0 "rejects $*: $(head -n 1 "$tmp/err")"
	else
		ok 1 "rejects $* (exit $rc, stderr matching '$want', empty stdout)" || true
		diag "stdout: $(printf '%s' "$out" | head -c 200)" "stderr: $(cat "$tmp/err")"
	fi
}
bad 'required' --levels 2
bad 'out of range' --hosts 0
bad 'not a number' --hosts 12x
bad 'out of range' --hosts 1000000
bad 'out of range' --levels 4 --hosts 8
bad 'odd' --radix 7 --hosts 8
bad 'out of range' --sm-hosts 0 --hosts 8
bad 'levels 3' --hosts 5000 --levels 2
bad 'do not fit one switch' --hosts 16 --levels 1 --radix 16
bad 'unexpected argument' --hosts 8 extra

# ibsim and OpenSM accept the files, and every host is discovered by name.
if ! command -v ibsim > /dev/null 2>&1 || ! command -v opensm > /dev/null 2>&1; then
	for _ in $(seq 1 16); do
		skip "ibsim or opensm not installed (ibsim-utils, opensm)"
	done
	exit 0
fi

for spec in "12 1 16" "17 2 36" "200 3 8" "2000 3 36"; do
	# shellcheck disable=SC2086 # three words on purpose
	set -- $spec
	n=$1 levels=$2 radix=$3
	diag "bringing up $n hosts, $levels levels, radix $radix"
	sim_up --hosts "$n" --levels "$levels" --radix "$radix" --no-plugin
	ok $? "$n hosts, $levels levels, radix $radix: ibsim parses it and OpenSM brings it up"
	dir=$SIM_DIR
	disc=$(sim_diag "$dir" ibnetdiscover 2> "$tmp/err")
	ok $? "$n hosts: ibnetdiscover runs" || diag "$(tail -n 5 "$tmp/err")"
	got=$(printf '%s\n' "$disc" | sed -n 's/^Ca.*# "\(node[0-9]*\)".*/\1/p' | sort -u | wc -l)
	is "$got" "$n" "$n hosts: ibnetdiscover sees node1..node$n"
	want=$(grep -c '^Switch' "$dir/fabric.net")
	got=$(printf '%s\n' "$disc" | grep -c '^Switch')
	is "$got" "$want" "$n hosts: ibnetdiscover sees all $want switches"
	sim_down "$dir"
done
