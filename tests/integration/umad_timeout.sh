#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# On the simulated fabric a request MAD that nobody answers comes back
# through umad_recv() with status ETIMEDOUT, as with the kernel's MAD
# layer (libibmcast_umadtimeout.so before libumad2sim.so), answers still
# pass, and OpenSM keeps sweeping with an SM on the fabric that never
# answers its SMInfo queries.

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_cmd ibsim ibsim-utils
need_cmd opensm opensm
PROBE=$top_builddir/tests/unit/umad_probe
SHIM=$top_builddir/sim-fabric/.libs/libibmcast_umadtimeout.so
[ -e "$PROBE" ] || skip_all "tests/unit/umad_probe not built (needs libibumad, as the OpenSM plugin)"
need_file "$SHIM" "sim-fabric/libibmcast_umadtimeout.la"

plan 9

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-umadto.XXXXXX")
at_exit "rm -rf '$tmp'"
# umad2sim writes its fake sysfs into the working directory.
cd "$tmp" || bail_out "cd $tmp"

sim_up --hosts 4 --no-plugin || bail_out "fabric did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
like "$IBMCAST_SIM_PRELOAD" "^$SHIM:.*libumad2sim\.so$" \
	"the fabric's clients preload the shim before umad2sim"

# An SM on H-node4 that never answers: ibsim forwards SMInfo queries for
# that port to it and nothing ever comes back.
SIM_HOST=H-node4 LD_PRELOAD=$IBMCAST_SIM_PRELOAD "$PROBE" silent \
	> "$tmp/silent.out" 2> "$tmp/silent.err" &
silent=$!
at_exit "kill $silent 2>/dev/null; wait $silent 2>/dev/null"
wait_until 30 grep -q '^lid=[1-9]' "$tmp/silent.out" ||
	bail_out "the silent SM did not start: $(cat "$tmp/silent.err")"
lid=$(sed -n 's/^lid=//p' "$tmp/silent.out")
diag "silent SM on H-node4, lid $lid"

# probe PRELOAD ATTR WAIT_MS: one SMP Get to the silent port, 100 ms
# timeout, 2 retries, a 200 ms floor: due back after 600 ms.
probe() {
	SIM_HOST=H-node3 LD_PRELOAD=$1 IBMCAST_UMAD_TIMEOUT_FLOOR_MS=200 \
		"$PROBE" get "$lid" "$2" 100 2 "$3" 2> "$tmp/probe.err"
}

out=$(probe "$IBMCAST_SIM_PRELOAD" 0x11 30000)
like "$out" '^result=got agent_ok=1 status=0 method=0x81 .*mad_status=0x0000' \
	"an answered Get (NodeInfo, answered by ibsim) passes as before"

out=$(probe "$IBMCAST_SIM_PRELOAD" 0x20 30000)
like "$out" '^result=got agent_ok=1 status=110 method=0x01 len=24 ' \
	"an unanswered Get (SMInfo) comes back as the kernel returns it: status ETIMEDOUT, its agent, its TID, the MAD header"
ms=${out##*ms=}
ok "$([ "${ms:-0}" -ge 600 ]; echo $?)" \
	"not before max(timeout, floor) x (retries + 1) = 600 ms (took $ms ms)"
like "$(cat "$tmp/probe.err")" \
	'ibmcast-umadtimeout\[[0-9]+\]: no response.*class 0x01 method 0x01 attr 0x0020 .*lid '"$lid"' after 600 ms' \
	"the timeout is logged with class, attribute, TID and destination"

# What the shim is for: without it the same query never comes back.
out=$(probe "${IBMCAST_SIM_PRELOAD#*:}" 0x20 2000)
like "$out" '^result=recv-failed err=110 ' \
	"without the shim the unanswered Get never comes back (umad_recv only times out)"

# OpenSM queries every SM it finds; the silent one answers none of its
# SMInfo Gets. OpenSM must get them back as timeouts and finish sweeps.
sweeps() { count_matches "$SIM_DIR/opensm.log" 'SUBNET UP'; }
before=$(sweeps)
read -r pid _ < "$SIM_DIR/pids/opensm" || bail_out "no OpenSM pid"
kill -HUP "$pid"
ok "$(wait_until 60 eval '[ "$(sweeps)" -gt "$before" ]'; echo $?)" \
	"OpenSM completes a sweep with an SM on the fabric that never answers"
like "$(cat "$SIM_DIR/opensm.out")" 'no response.*class 0x81 .*attr 0x0020 ' \
	"OpenSM's lost SMInfo Gets were timed out by the shim"
ok "$(kill -0 "$pid"; echo $?)" "OpenSM is still running"
