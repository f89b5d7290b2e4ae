#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Malformed, oversized, idle, stalled and crowding clients each get a clear
# error or a closed connection; OpenSM keeps running and keeps serving.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd munge munge
need_cmd jq jq
need_cmd socat socat
CTL=$top_builddir/tools/ibmcastctl
need_file "$CTL" "tools/ibmcastctl"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan 64

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-hostile.XXXXXX")
at_exit "rm -rf '$tmp'"

TIMEOUT_MS=1000 # request_timeout_ms
MAX_CLIENTS=200

now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}

# osm_fds: how many file descriptors OpenSM holds.
osm_fds() {
	local f n=0
	for f in "/proc/$OSM_PID/fd/"*; do
		n=$((n + 1))
	done
	echo "$n"
}

osm_alive() {
	kill -0 "$OSM_PID" 2> /dev/null
}

# status_answers: a status over the Unix socket is answered (the client's
# own 10 s limit bounds the wait); its reply is in $tmp/status.json.
# Whether it was quick is for benchmarks: under a loaded make -j it varies.
status_answers() {
	local rc=0
	"$CTL" --timeout-ms 10000 --json status > "$tmp/status.json" \
		2> "$tmp/status.err" || rc=$?
	[ "$rc" = 0 ] && return 0
	diag "status failed (exit $rc): $(cat "$tmp/status.err")"
	return 1
}

# serving MSG: OpenSM is alive and status is answered.
serving() {
	ok "$(osm_alive && status_answers; echo $?)" "$1: OpenSM alive, status answered"
}

# unix_send FILE: sends FILE's bytes on one Unix connection and prints
# the replies.
unix_send() {
	socat -t 5 - "UNIX-CONNECT:$SOCK" < "$1"
}

# tcp_open: opens a TCP connection to the plugin on fd $FD.
tcp_open() {
	exec {FD}<> "/dev/tcp/$TCP_HOST/$TCP_PORT"
}

# read_reply FD [SECONDS]: one reply line into REPLY; READ_RC is read's
# status (0 a line, 1 end of file, > 128 timed out).
read_reply() {
	REPLY=
	READ_RC=0
	# A reset (the server closed with our bytes unread) counts as closed.
	IFS= read -r -t "${2:-5}" REPLY <&"$1" 2> /dev/null || READ_RC=$?
}

error_of() {
	jq -r 'if .ok then "ok" else .error end' <<< "$1" 2>&1
}

diag "fabric: 16 hosts, request_timeout_ms=$TIMEOUT_MS, max_clients=$MAX_CLIENTS"
sim_up --hosts 16 --plugin-opt request_timeout_ms=$TIMEOUT_MS \
	--plugin-opt max_clients=$MAX_CLIENTS || bail_out "the fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
SOCK=${IBMCAST_SERVER#unix:}
hp=${IBMCAST_SERVER_TCP#tcp:}
TCP_HOST=${hp%:*}
TCP_PORT=${hp##*:}
read -r OSM_PID _ < "$SIM_DIR/pids/opensm"
serving "at the start"
run_ok "job 1 is reserved before the onslaught" "$CTL" reserve 1 --nodes 'node[1-4]' --groups 2
run_ok "  and is ready" "$CTL" wait 1 --timeout-ms 20000
fds_before=$(osm_fds)

# --- each kind of malformed line, once ----------------------------------
# LINE (a printf format)|what the detail must say
cat > "$tmp/kinds.txt" << 'EOF'
not json at all|invalid JSON
{"op":"status"|invalid JSON
[1,2,3]|a request must be an object
|invalid JSON
{"op":42}|op: expected a string
{"op":"frobnicate"}|op: unknown operation "frobnicate"
{"job":1}|op: missing
{"op":"status","bogus":1}|bogus: unknown key for op status
{"op":"release","job":1,"nodes":"node1"}|nodes: unknown key for op release
{"op":"reserve","job":"1","nodes":"node1"}|job: expected an integer
{"op":"wait","job":1,"timeout_ms":1.5}|timeout_ms: expected an integer
{"op":"reserve","job":4294967296,"nodes":"node1"}|job: expected an integer
{"op":"reserve","job":1,"nodes":["node1"]}|nodes: expected a hostlist string
{"op":"reserve","job":1,"nodes":"node1","groups":true}|groups: expected an integer
{"op":"status","op":"status"}|invalid JSON
{"op":"sta\\u0000tus"}|invalid JSON
\377\376{"op":"status"}|invalid JSON
{"op":"status"}\000{"op":"status"}|invalid JSON
EOF
: > "$tmp/kinds"
res=()
while IFS= read -r kind; do
	fmt=${kind%|*}
	re=${kind##*|}
	# shellcheck disable=SC2059 # the line is a printf format on purpose
	printf "$fmt\n" >> "$tmp/kinds"
	res+=("$re")
done < "$tmp/kinds.txt"
# A nesting deeper than the parser accepts.
{ printf '%.0s[' {1..5000}; printf '%.0s]' {1..5000}; echo; } >> "$tmp/kinds"
res+=("invalid JSON")
nkinds=${#res[@]}

# The server drops a client after 16 bad lines in a row: 10 a connection.
split -l 10 -d -a 1 "$tmp/kinds" "$tmp/kinds."
for f in "$tmp"/kinds.[0-9]; do
	unix_send "$f"
done > "$tmp/kinds.out"
is "$(wc -l < "$tmp/kinds.out")" "$nkinds" "$nkinds malformed lines get $nkinds replies"
for ((i = 0; i < nkinds; i++)); do
	r=$(sed -n "$((i + 1))p" "$tmp/kinds.out")
	like "$(jq -r '"\(.error): \(.detail)"' <<< "$r" 2>&1)" "^bad_request: .*${res[i]}" \
		"malformed line $((i + 1)): bad_request, ${res[i]}" ||
		diag "line: $(sed -n "$((i + 1))p" "$tmp/kinds" | head -c 100 | cat -v)"
done
is "$("$CTL" --json status | jq -c '[.jobs[].job]')" '[1]' \
	"none of them created a job"

# --- 1,000 malformed requests, 10 to a connection -------------------------
errors0=$("$CTL" --json status | jq .counters.errors)
for ((i = 0; i < 1000; i++)); do
	sed -n "$((i % nkinds + 1))p" "$tmp/kinds"
done > "$tmp/bulk"
split -l 10 -d -a 3 "$tmp/bulk" "$tmp/bulk."
t0=$(now_ms)
n=0 bad=0 other=0 probes=0 unanswered=0
for f in "$tmp"/bulk.[0-9]*; do
	unix_send "$f" > "$f.out"
	n=$((n + 1))
	bad=$((bad + $(grep -c '"error":"bad_request"' "$f.out")))
	other=$((other + $(grep -vc '"error":"bad_request"' "$f.out")))
	if ((n % 20 == 0)); then
		probes=$((probes + 1))
		status_answers || unanswered=$((unanswered + 1))
		osm_alive || diag "OpenSM died after $n connections"
	fi
done
diag "1000 malformed requests on $n connections in $(($(now_ms) - t0)) ms"
is "$bad/$other" "1000/0" "all 1000 malformed requests are answered bad_request"
is "$probes/$unanswered" "$((n / 20))/0" "each status request sent in between was answered"
is "$(("$("$CTL" --json status | jq .counters.errors)" - errors0))" 1000 \
	"the server counted 1000 errors"
serving "after 1000 malformed requests"

# --- line length -------------------------------------------------------
pad=$(printf '%65536s' '')
req='{"op":"status","job":1}'
printf '%s%s\n' "$req" "${pad:0:$((65535 - ${#req}))}" > "$tmp/max"
r=$(unix_send "$tmp/max")
is "$(error_of "$r")" ok "a request line of exactly 64 KiB (newline included) is answered" ||
	diag "$(head -c 200 <<< "$r")"

# 64 KiB without the newline: the line cannot end within the limit.  (No
# byte follows, so the client is not writing when the server closes.)
printf '%s%s' "$req" "${pad:0:$((65536 - ${#req}))}" > "$tmp/over"
coproc OVER { socat - "UNIX-CONNECT:$SOCK"; }
# shellcheck disable=SC2153 # OVER_PID is set by coproc
over_pid=$OVER_PID
cat "$tmp/over" >&"${OVER[1]}"
read_reply "${OVER[0]}"
like "$REPLY" '"error":"bad_request","detail":"request line exceeds 65536 bytes"' \
	"64 KiB with no newline yet (Unix socket): bad_request"
read_reply "${OVER[0]}"
is "$READ_RC" 1 "  and the server closes the connection"
wait "$over_pid" 2> /dev/null

for size in 70000 1048576; do
	tcp_open
	# The server closes mid-line: the writer may die of SIGPIPE, not us.
	(printf '%*s' "$size" '' | tr ' ' x >&"$FD") 2> /dev/null
	read_reply "$FD"
	like "$REPLY" '"error":"bad_request","detail":"request line exceeds 65536 bytes"' \
		"a $size-byte line over TCP: bad_request"
	read_reply "$FD"
	is "$READ_RC" 1 "  and the server closes the connection"
	exec {FD}>&-
done
serving "after oversized lines"

# --- idle and stalled clients ----------------------------------------------
errors0=$("$CTL" --json status | jq .counters.errors)
t0=$(now_ms)
tcp_open
idle=$FD
coproc IDLE { socat - "UNIX-CONNECT:$SOCK"; }
# shellcheck disable=SC2153 # IDLE_PID is set by coproc
idle_pid=$IDLE_PID
at_exit "kill $idle_pid 2> /dev/null"
tcp_open
half=$FD
printf '{"op":"sta' >&"$half"
# A trickler: one byte every 300 ms of a line that would take a minute,
# until the server closes on it. The clock runs from its first byte: were
# it restarted by each byte, the trickler would never be cut off.
tcp_open
trickle=$FD
(
	trap '' PIPE
	i=0
	printf '{"op":"status","pad":"' >&"$trickle" || exit 0
	for ((i = 0; i < 200; i++)); do
		sleep 0.3
		printf x >&"$trickle" || break
	done
	echo "$i" > "$tmp/trickled"
) 2> /dev/null &
trickler=$!
at_exit "kill $trickler 2> /dev/null"

# Not held up: the status is answered before the server cut off any of the
# stalled clients (each cut-off counts an error), i.e. not behind them.
status_answers
rc=$?
is "$rc/$(($(jq .counters.errors "$tmp/status.json") - errors0))" 0/0 \
	"idle, stalled and trickling clients do not hold up status: answered before any was cut off"
run_ok "  nor a reserve" "$CTL" reserve 3 --nodes 'node[5-8]' --groups 2
run_ok "  nor a wait" "$CTL" wait 3 --timeout-ms 10000

# Closed, at the earliest, after request_timeout_ms: a lower bound, which
# a loaded machine cannot break (it only makes things later).
read_reply "$idle" 10
el=$(($(now_ms) - t0))
is "$READ_RC/$REPLY" "1/" "an idle TCP client is closed without a reply"
ok "$([ "$el" -ge $((TIMEOUT_MS - 100)) ]; echo $?)" \
	"  not before request_timeout_ms ($el ms)"
read_reply "${IDLE[0]}" 10
is "$READ_RC/$REPLY" "1/" "an idle Unix client is closed without a reply"
wait "$idle_pid" 2> /dev/null

read_reply "$half" 10
el=$(($(now_ms) - t0))
like "$REPLY" '"error":"bad_request","detail":"request not completed within 1000 ms"' \
	"half a line, then nothing: bad_request after the timeout ($el ms)"
read_reply "$half" 10
is "$READ_RC" 1 "  and the connection is closed"
read_reply "$trickle" 10
like "$REPLY" '"error":"bad_request","detail":"request not completed within 1000 ms"' \
	"a client trickling a byte every 300 ms: bad_request"
# Its writes fail once the server closed on it: it stops well short of
# the 200 bytes of its minute-long line (bounded wait for it to notice).
i=0
while [ ! -s "$tmp/trickled" ] && [ "$i" -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
ok "$([ "$(cat "$tmp/trickled" 2> /dev/null || echo 200)" -lt 200 ]; echo $?)" \
	"  cut off while still trickling its minute-long line ($(cat "$tmp/trickled" 2> /dev/null || echo '?') of 200 bytes sent)"
read_reply "$trickle" 10
is "$READ_RC" 1 "  and the connection is closed"
exec {idle}>&- {half}>&- {trickle}>&-
wait "$trickler" 2> /dev/null
serving "after idle and stalled clients"

# --- many connections at once ----------------------------------------------
# open_wave N [LINE]: opens N TCP connections (appended to conns) and sends
# LINE on each.  With SYNC=1 it then waits until the server has accepted
# them all: a probe connected after them is answered only then, as the
# accept queue is first in, first out.  (A burst beyond the kernel's listen
# backlog would otherwise stall for seconds in SYN-ACK retransmissions.)
SYNC=1
open_wave() {
	local n=$1 line=${2:-} i probe
	for ((i = 0; i < n; i++)); do
		tcp_open
		conns+=("$FD")
		[ -z "$line" ] || printf '%s\n' "$line" >&"$FD"
	done
	[ "$SYNC" = 1 ] || return 0
	tcp_open
	probe=$FD
	printf '{"op":"status"}\n' >&"$probe"
	read_reply "$probe" 10
	[ -n "$REPLY" ] || diag "the probe after $n connections got no reply"
	exec {probe}>&-
}

# Below max_clients: 150 clients, each with a signed status request.
conns=()
for ((w = 0; w < 3; w++)); do
	for ((i = 0; i < 50; i++)); do
		tcp_open
		conns+=("$FD")
		c=$(munge --socket="$IBMCAST_MUNGE_SOCKET" --string='{"op":"status","job":1}')
		printf '{"munge":"%s"}\n' "$c" >&"$FD"
	done
	open_wave 0
done
good=0
for fd in "${conns[@]}"; do
	read_reply "$fd" 10
	[[ $REPLY == '{"ok":true,'* ]] && good=$((good + 1))
	exec {fd}>&-
done
is "$good" 150 "150 concurrent TCP clients (below max_clients $MAX_CLIENTS) each get their status"

# Above max_clients: 300 clients each send a request; the server takes
# $MAX_CLIENTS (199 and the probe, then the first of the last 101), the
# others wait in the backlog until slots free up.
t0=$(now_ms)
conns=()
open_wave 100 '{"op":"status"}'
open_wave 99 '{"op":"status"}'
SYNC=0 open_wave 101 '{"op":"status"}'
status_answers
ok $? "with 300 clients (over max_clients), a new client is served"
answered=0
for fd in "${conns[@]}"; do
	read_reply "$fd" 10
	[[ $REPLY == *'"error":"unauthorized"'* ]] && answered=$((answered + 1))
done
is "$answered" 300 "all 300 get their answer (plain JSON over TCP: unauthorized)"
closed=0
for fd in "${conns[@]}"; do
	read_reply "$fd" 10
	[ "$READ_RC" = 1 ] && closed=$((closed + 1))
	exec {fd}>&-
done
is "$closed" 300 "  and the server closes every one of them once idle"
diag "300 clients over max_clients served and closed in $(($(now_ms) - t0)) ms"

# closed_silently: sets CLOSED to how many of conns the server closed
# without a reply, and closes them all on our side too (in this shell, not
# a subshell, so the descriptors really go).
closed_silently() {
	local fd
	CLOSED=0
	for fd in "${conns[@]}"; do
		read_reply "$fd" 10
		[ "$READ_RC/$REPLY" = "1/" ] && CLOSED=$((CLOSED + 1))
		exec {fd}>&-
	done
}

# 300 idle connections hold every slot: the server reaps them.
t0=$(now_ms)
conns=()
open_wave 100
open_wave 99
SYNC=0 open_wave 101
status_answers
ok $? "with 300 idle clients holding the slots, status is served"
closed_silently
is "$CLOSED" 300 "all 300 idle clients are closed by the server, without a reply"
diag "300 idle clients reaped in $(($(now_ms) - t0)) ms"
serving "after 750 connections"

# --- thousands of connections ---------------------------------------------
# 2,000 idle TCP connections, ten times max_clients, opened as fast as the
# kernel's accept queue lets them in: the server keeps accepting as it
# reaps the idle ones, stays responsive, and ends up holding none of them.
ulimit -n 8192 2> /dev/null || true
if [ "$(ulimit -n)" -ge 4200 ]; then
	t0=$(now_ms)
	conns=()
	SYNC=0 open_wave 1000
	status_answers
	rc=$?
	SYNC=0 open_wave 1000
	ok $rc "2,000 connections at once: the server keeps serving status"
	closed_silently
	is "$CLOSED" 2000 "  and closes every one of them once idle"
	diag "2000 connections opened and reaped in $(($(now_ms) - t0)) ms"
else
	skip "cannot raise the open-file limit to 4200 here ($(ulimit -n))"
	skip "cannot raise the open-file limit to 4200 here ($(ulimit -n))"
fi

# --- a client that never reads its replies ----------------------------------
# 40,000 status requests (about 16 MB of replies) on one Unix connection that
# is never read: the server buffers at most a few MiB for it, then drops it,
# and serves everyone else meanwhile.
for ((i = 0; i < 40000; i++)); do echo '{"op":"status"}'; done > "$tmp/flood"
# (Bounded at 60 s: the sanitizer build on a loaded machine needs more
# than 30 s to answer 40,000 requests; the client stays 90 s.)
mkfifo "$tmp/nonreader"
socat -u - "UNIX-CONNECT:$SIM_DIR/ibmcast.sock" < "$tmp/nonreader" 2> /dev/null &
nonreader=$!
( cat "$tmp/flood"; exec sleep 90 ) > "$tmp/nonreader" &
feeder=$!
at_exit "kill $nonreader $feeder 2> /dev/null"
ok "$(wait_until 60 grep -q 'does not read its replies; closing' "$SIM_DIR/opensm.log"; echo $?)" \
	"a client that never reads its replies is dropped"
status_answers
ok $? "  and others are served"
kill "$nonreader" 2> /dev/null
wait "$nonreader" 2> /dev/null

# --- afterwards ---------------------------------------------------------------
ok "$(osm_alive; echo $?)" "OpenSM (pid $OSM_PID) survived everything"
run_ok "a reserve after all that" "$CTL" reserve 2 --nodes 'node[1-16]' --groups 8
out=$("$CTL" wait 2 --timeout-ms 20000 2>&1)
like "$out" 'state ready' "  and its wait reaches ready"
run_ok "job 1 is still ready" "$CTL" wait 1 --timeout-ms 0
fds_after=
for ((i = 0; i < 50; i++)); do
	fds_after=$(osm_fds)
	[ "$fds_after" -le "$fds_before" ] && break
	sleep 0.1
done
ok "$([ "$fds_after" -le "$fds_before" ]; echo $?)" \
	"OpenSM holds no more file descriptors than at the start ($fds_after vs $fds_before)"
