#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Only root and the Slurm user may reserve, release and renew, on the Unix
# socket (SO_PEERCRED) and over TCP (MUNGE); refusals change nothing.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd munged munge
need_cmd munge munge
need_cmd jq jq
need_cmd setpriv util-linux
need_file "$top_builddir/tools/ibmcastctl" "tools/ibmcastctl"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

plan 87

NOBODY=$(id -u nobody)

# The build tree may sit where nobody cannot reach: give the unprivileged
# users their own copy of ibmcastctl.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-auth.XXXXXX")
at_exit "rm -rf '$tmp'"
install_for_others "$top_builddir/tools/ibmcastctl" "$tmp"
CTL=$tmp/ibmcastctl

# snapshot: what a refused request must not change.
snapshot() {
	"$CTL" --json --server "$IBMCAST_SERVER" status |
		jq -c '{used: .mlids.used, reserves: .counters.reserves,
			releases: .counters.releases,
			jobs: [.jobs[] | {job, uid, nodes, lease_s,
				mlids: [.groups[].mlid]}]}'
}

# tcp_send LINE...: sends the lines on one TCP connection to the plugin
# and prints one reply line for each.
tcp_send() {
	local hp=${IBMCAST_SERVER_TCP#tcp:} fd line reply
	exec {fd}<> "/dev/tcp/${hp%:*}/${hp##*:}" || return 1
	for line; do
		printf '%s\n' "$line" >&"$fd"
		reply=
		IFS= read -r -t 10 reply <&"$fd"
		printf '%s\n' "$reply"
	done
	exec {fd}>&-
}

# cred [munge options] PAYLOAD: a MUNGE credential for PAYLOAD from the
# fabric's munged.
cred() {
	local payload=${*: -1}
	munge --socket="$IBMCAST_MUNGE_SOCKET" "${@:1:$#-1}" --string="$payload"
}

wrap() {
	jq -cn --arg c "$1" '{munge: $c}'
}

error_of() {
	jq -r 'if .ok then "ok" else .error end' <<< "$1" 2>&1
}

# refused_ctl WHAT CODE [as USER] ARGS...: ibmcastctl is refused with CODE
# (exit 2, code on stderr) and the server's state does not change.
refused_ctl() {
	local what=$1 code=$2 before
	shift 2
	before=$(snapshot)
	run_ctl "$@"
	is "$RC" 2 "$what: exit 2" || diag "stdout: $OUT" "stderr: $ERR"
	like "$ERR" "^ibmcastctl: [a-z]+: $code: " "$what: $code on stderr"
	is "$(snapshot)" "$before" "$what: nothing changed"
}

# refused_tcp WHAT CODE DETAIL-ERE LINE: LINE sent over TCP is refused with
# CODE and a detail matching DETAIL-ERE, and nothing changes.
refused_tcp() {
	local what=$1 code=$2 re=$3 before reply
	before=$(snapshot)
	reply=$(tcp_send "$4")
	is "$(error_of "$reply")" "$code" "$what: $code" || diag "reply: $reply"
	like "$(jq -r .detail <<< "$reply" 2>&1)" "$re" "$what: the detail says why"
	is "$(snapshot)" "$before" "$what: nothing changed"
}

# --- fabric A: default Slurm user (absent here), so root alone ----------
diag "fabric A: 16 hosts, slurm_user left at its default"
sim_up --hosts 16 || bail_out "fabric A did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
export IBMCAST_SERVER IBMCAST_MUNGE_SOCKET

run_ctl reserve 1 --nodes 'node[1-8]' --groups 2 --lease 600
is "$RC" 0 "root reserves job 1 on the Unix socket" || diag "$ERR"

refused_ctl "nobody: reserve" unauthorized as nobody reserve 2 --nodes 'node[9-12]'
like "$ERR" "uid $NOBODY is neither" "  the detail names the uid"
like "$(grep 'refused: not root' "$SIM_DIR/opensm.log" | tail -n 1)" \
	"reserve of job 2 by uid $NOBODY refused" "  and OpenSM's log records who tried"
refused_ctl "nobody: release" unauthorized as nobody release 1
refused_ctl "nobody: renew" unauthorized as nobody renew 1 --lease 60
refused_ctl "daemon (not the Slurm user here): reserve" unauthorized \
	as daemon reserve 2 --nodes 'node[9-12]'

run_ctl as nobody status
is "$RC" 0 "nobody may read status" || diag "$ERR"
like "$OUT" 'job 1: ' "  and sees job 1"
run_ctl as nobody wait 1 --timeout-ms 20000
is "$RC" 0 "nobody may wait for job 1" || diag "$ERR"
like "$OUT" 'state ready' "  and hears it is ready"

run_ctl renew 1 --lease 900
is "$RC" 0 "root renews job 1" || diag "$ERR"
is "$("$CTL" --json status 1 | jq -r .jobs[0].lease_s)" 900 "  its lease is 900 s"

# --- TCP ----------------------------------------------------------------
diag "TCP: $IBMCAST_SERVER_TCP, munged $IBMCAST_MUNGE_SOCKET"
run_ctl --server "$IBMCAST_SERVER_TCP" reserve 3 --nodes 'node[9-12]' --groups 2
is "$RC" 0 "root reserves job 3 over TCP (MUNGE-wrapped)" || diag "$ERR"
run_ctl --server "$IBMCAST_SERVER_TCP" wait 3 --timeout-ms 20000
is "$RC" 0 "root waits for job 3 over TCP" || diag "$ERR"
run_ctl --server "$IBMCAST_SERVER_TCP" --json status 3
is "$(jq -r .jobs[0].uid <<< "$OUT")" 0 "job 3's owner is root, from the credential"

refused_tcp "a plain request over TCP" unauthorized 'MUNGE credential' \
	'{"op":"reserve","job":4,"nodes":"node[13-16]"}'
refused_tcp "a plain status over TCP" unauthorized 'MUNGE credential' \
	'{"op":"status"}'

# A credential is good once: replaying one that reserved a job, after the
# job was released, must not bring the job back.
c=$(cred '{"op":"reserve","job":4,"nodes":"node[13-16]","groups":1}')
r=$(tcp_send "$(wrap "$c")")
is "$(error_of "$r")/$(jq -r .created <<< "$r")" "ok/true" \
	"a root credential reserves job 4 over TCP" || diag "$r"
run_ctl release 4
is "$RC" 0 "release job 4"
refused_tcp "the same credential replayed" unauthorized '[Rr]eplayed' "$(wrap "$c")"
run_ctl status 4
is "$RC" 2 "job 4 stays released"

c=$(cred '{"op":"status"}')
r=$(tcp_send "$(wrap "$c")" "$(wrap "$c")")
is "$(error_of "$(sed -n 1p <<< "$r")")" ok "a status credential works once"
is "$(error_of "$(sed -n 2p <<< "$r")")" unauthorized \
	"  and is refused when sent again on the same connection"

# A credential outlives its time-to-live only in an attacker's hands.
c=$(cred --ttl=1 '{"op":"reserve","job":5,"nodes":"node[13-16]","groups":1}')
sleep 2
refused_tcp "an expired credential" unauthorized '[Ee]xpired' "$(wrap "$c")"
like "$(grep 'MUNGE credential refused' "$SIM_DIR/opensm.log" | tail -n 1)" \
	'[Ee]xpired' "the refusal is in OpenSM's log"

refused_tcp "a garbage credential" unauthorized 'munge: decode' \
	'{"munge":"MUNGE:AwQFAABgarbagegarbagegarbage:"}'
refused_tcp "a credential that is not MUNGE at all" unauthorized 'munge: decode' \
	'{"munge":"hello"}'
refused_tcp "a credential that is a number" bad_request 'munge: expected' \
	'{"munge":42}'
c=$(cred '{"op":"release","job":1}')
refused_tcp "a credential beside other keys" bad_request 'nothing else' \
	"$(jq -cn --arg c "$c" '{munge: $c, op: "status"}')"
# The credential was never decoded, so it is still good; it must not be
# spent on job 1 here: tamper with it instead.
# (Flip one character to a different one: writing a fixed letter left
# the credential intact whenever that letter was already there.)
flip=A
[ "${c:20:1}" != A ] || flip=B
refused_tcp "a tampered credential" unauthorized 'munge: decode' \
	"$(wrap "${c:0:20}$flip${c:21}")"

c=$(cred --uid=nobody '{"op":"release","job":1}')
refused_tcp "nobody's credential: release" unauthorized "uid $NOBODY is neither" \
	"$(wrap "$c")"
c=$(cred --uid=nobody '{"op":"reserve","job":5,"nodes":"node[13-16]"}')
refused_tcp "nobody's credential: reserve" unauthorized "uid $NOBODY is neither" \
	"$(wrap "$c")"
c=$(cred --uid=nobody '{"op":"status","job":1}')
r=$(tcp_send "$(wrap "$c")")
is "$(error_of "$r")/$(jq -r .jobs[0].job <<< "$r")" "ok/1" \
	"nobody's credential may read status"

refused_ctl "nobody's ibmcastctl over TCP: reserve" unauthorized \
	as nobody --server "$IBMCAST_SERVER_TCP" reserve 5 --nodes 'node[13-16]'
refused_ctl "nobody's ibmcastctl over TCP: renew" unauthorized \
	as nobody --server "$IBMCAST_SERVER_TCP" renew 3
run_ctl as nobody --server "$IBMCAST_SERVER_TCP" wait 3 --timeout-ms 5000
is "$RC" 0 "nobody's ibmcastctl over TCP may wait" || diag "$ERR"

run_ctl --server "$IBMCAST_SERVER_TCP" release 3
is "$RC" 0 "root releases job 3 over TCP" || diag "$ERR"
run_ctl status 3
is "$RC" 2 "job 3 is gone"

# --- fabric B: slurm_user=daemon --------------------------------------------
diag "fabric B: 16 hosts, slurm_user=daemon"
sim_up --hosts 16 --plugin-opt slurm_user=daemon || bail_out "fabric B did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"

run_ctl as daemon reserve 7 --nodes 'node[1-4]' --groups 2
is "$RC" 0 "the Slurm user (daemon) reserves on the Unix socket" || diag "$ERR"
run_ctl --json status 7
is "$(jq -r .jobs[0].uid <<< "$OUT")" "$(id -u daemon)" "  and owns the job"
run_ctl as daemon reserve 8 --nodes 'node[5-8]' --uid 1234
is "$RC" 0 "the Slurm user reserves a job for uid 1234" || diag "$ERR"
run_ctl --json status 8
is "$(jq -r .jobs[0].uid <<< "$OUT")" 1234 "  owned by uid 1234"
run_ctl as daemon renew 7 --lease 300
is "$RC" 0 "the Slurm user renews" || diag "$ERR"
run_ctl as daemon --server "$IBMCAST_SERVER_TCP" wait 7 --timeout-ms 20000
is "$RC" 0 "the Slurm user waits over TCP" || diag "$ERR"
run_ctl as daemon --server "$IBMCAST_SERVER_TCP" release 7
is "$RC" 0 "the Slurm user releases over TCP" || diag "$ERR"
refused_ctl "nobody, with a Slurm user set: reserve" unauthorized \
	as nobody reserve 9 --nodes 'node[9-12]'
refused_ctl "nobody, with a Slurm user set: release" unauthorized \
	as nobody release 8
run_ctl release 8
is "$RC" 0 "root still may release" || diag "$ERR"
