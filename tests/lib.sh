# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the shell integration tests: TAP output for automake's
# tap-driver, locating the build, and simulated fabrics that never outlive
# the test.
#
# Usage:  . "$top_srcdir/tests/lib.sh"   (bash only)
#
# TAP:      plan N | ok STATUS MSG | is GOT WANT MSG | like GOT ERE MSG
#           run_ok MSG CMD... | run_fails MSG CMD... | skip MSG
#           diag MSG... | skip_all REASON | bail_out REASON
# Needs:    need_cmd CMD [PACKAGE] | need_file PATH [WHAT] | plugin_built
# Fabrics:  sim_up [ibmcast-sim up options]   sets SIM_DIR; EXIT trap runs
#           down and removes the directory unless IBMCAST_KEEP_TMP is set;
#           a sanitizer report of its OpenSMs (DIR/sanitizer.log) fails
#           the test
#           sim_down DIR | sim_diag DIR CMD... | fabric_procs DIR
#           at_exit CMD-STRING  (run at exit, last registered first)
# Waiting:  wait_until SECONDS CMD...  (retry CMD every 0.2 s until it
#           succeeds or SECONDS pass) | count_matches FILE ERE
# MFTs:     fabric_topology DIR | fabric_mft_rows DIR TOPO | on_fabric CMD...
#           mft_entries MLID... | mft_wipe MLID...  (the fabric's env sourced)

# shellcheck shell=bash disable=SC2034 # variables are for the tests

# automake exports both (AM_TESTS_ENVIRONMENT); by hand, default to the
# source tree this file lives in, built in place.
if [ -z "${top_srcdir:-}" ]; then
	top_srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fi
if [ -z "${top_builddir:-}" ]; then
	top_builddir=${IBMCAST_BUILDDIR:-$top_srcdir}
fi
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
export top_srcdir top_builddir
# ibmcast-sim lives in the source tree; tell it where the build is.
export IBMCAST_BUILDDIR=$top_builddir
IBMCAST_SIM=$top_srcdir/sim-fabric/ibmcast-sim
IBMCAST_FATTREE=$top_builddir/sim-fabric/ibmcast-fattree
# The simulator and OpenSM install into sbin.
PATH=$PATH:/usr/sbin:/sbin

_tap_n=0
_tap_failed=0
_tap_planned=
_at_exit=()
_sanitizer_failed=0

plan() {
	_tap_planned=$1
	echo "1..$1"
}

diag() {
	local line
	# Each line becomes a TAP comment, whatever the message holds.
	printf '%s\n' "$*" | while IFS= read -r line; do
		printf '# %s\n' "$line"
	done
}

# ok STATUS MSG: passes when STATUS (an exit status) is 0.
ok() {
	local status=$1
	shift
	_tap_n=$((_tap_n + 1))
	if [ "$status" = 0 ]; then
		echo "ok $_tap_n - $*"
		return 0
	fi
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n - $*"
	return 1
}

is() {
	local got=$1 want=$2
	shift 2
	if [ "$got" = "$want" ]; then
		ok 0 "$@"
	else
		ok 1 "$@" || true
		diag "  got:  '$got'" "  want: '$want'"
		return 1
	fi
}

like() {
	local got=$1 re=$2
	shift 2
	if [[ $got =~ $re ]]; then
		ok 0 "$@"
	else
		ok 1 "$@" || true
		diag "  got:  '$got'" "  want match of: $re"
		return 1
	fi
}

# run_ok MSG CMD...: passes when CMD succeeds; shows its output if not.
run_ok() {
	local msg=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then
		ok 0 "$msg"
	else
		ok 1 "$msg" || true
		diag "command failed (exit $rc): $*" "$out"
		return 1
	fi
}

# run_fails MSG CMD...: passes when CMD exits non-zero (and not by signal).
run_fails() {
	local msg=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if [ "$rc" != 0 ] && [ "$rc" -lt 128 ]; then
		ok 0 "$msg"
	else
		ok 1 "$msg" || true
		diag "expected failure, got exit $rc: $*" "$out"
		return 1
	fi
}

skip() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n # SKIP $*"
}

skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

bail_out() {
	echo "Bail out! $*"
	exit 99
}

# Skip the whole test only for a dependency that cannot be installed here;
# a missing build output of our own is a failure, not a skip.
need_cmd() {
	command -v "$1" > /dev/null 2>&1 ||
		skip_all "$1 not installed${2:+ (Debian package $2)}"
}

need_file() {
	[ -e "$1" ] || bail_out "${2:-$1} missing: $1 (run make first)"
}

plugin_built() {
	[ -e "$top_builddir/osm-plugin/.libs/libibmcast_osm.so" ]
}

# Skips unless a simulated fabric with our OpenSM plugin can run here
# (and be inspected with jq).
fabric_need() {
	plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
	need_cmd ibsim ibsim-utils
	need_cmd opensm opensm
	need_cmd jq jq
}

at_exit() {
	_at_exit+=("$1")
}

_lib_exit() {
	local rc=$? i
	trap - EXIT
	for ((i = ${#_at_exit[@]} - 1; i >= 0; i--)); do
		eval "${_at_exit[i]}" || true
	done
	if [ -n "$_tap_planned" ] && [ "$_tap_n" != "$_tap_planned" ] &&
	   [ "$rc" = 0 ]; then
		diag "planned $_tap_planned tests but ran $_tap_n"
		rc=1
	fi
	[ "$_tap_failed" = 0 ] || [ "$rc" != 0 ] || rc=1
	[ "$_sanitizer_failed" = 0 ] || [ "$rc" != 0 ] || rc=1
	exit "$rc"
}
trap _lib_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- a busy host ---------------------------------------------------------

# cpu_hogs_start [N]: N busy loops (default one per core), named
# ibmcast-cpu-hog, stopped by PID by cpu_hogs_stop or on any exit: a compute
# node running an application beside the ranks.
CPU_HOGS=()
cpu_hogs_start() {
	local i n=${1:-$(nproc)}
	[ "${#CPU_HOGS[@]}" -gt 0 ] || at_exit cpu_hogs_stop
	for ((i = 0; i < n; i++)); do
		(exec -a ibmcast-cpu-hog bash -c 'while :; do :; done') &
		CPU_HOGS+=($!)
	done
}

cpu_hogs_stop() {
	[ "${#CPU_HOGS[@]}" -gt 0 ] || return 0
	kill "${CPU_HOGS[@]}" 2> /dev/null
	wait "${CPU_HOGS[@]}" 2> /dev/null
	CPU_HOGS=()
}

# ---- simulated fabrics ---------------------------------------------------

SIM_DIR=
SIM_DIRS=()

sim_down() {
	"$IBMCAST_SIM" down --dir "$1" 2>&1 | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
}

_sim_cleanup() {
	local dir=$1
	[ -d "$dir" ] || return 0
	sim_down "$dir" || true
	# In the sanitizer build every OpenSM checks for leaks (its plugin's,
	# its smpd's) as it exits; ibmcast-sim keeps what it reported, or
	# that it had to be killed before it could check.
	if [ -s "$dir/sanitizer.log" ]; then
		diag "OpenSM's sanitizer check failed ($dir/sanitizer.log):"
		sed 's/^/#   /' "$dir/sanitizer.log"
		_sanitizer_failed=1
	fi
	if [ -n "${IBMCAST_KEEP_TMP:-}" ]; then
		diag "kept $dir (IBMCAST_KEEP_TMP is set)"
	else
		rm -rf "$dir"
	fi
}

# sim_up [ibmcast-sim up options]: brings a fabric up in a fresh temporary
# directory (SIM_DIR) and returns up's exit status; its progress shows as
# TAP comments.
sim_up() {
	local dir rc
	dir=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-test.XXXXXX") ||
		bail_out "mktemp failed"
	SIM_DIR=$dir
	SIM_DIRS+=("$dir")
	at_exit "_sim_cleanup '$dir'"
	"$IBMCAST_SIM" up --dir "$dir" "$@" 2>&1 | sed 's/^/# /'
	rc=${PIPESTATUS[0]}
	return "$rc"
}

sim_diag() {
	local dir=$1
	shift
	"$IBMCAST_SIM" diag --dir "$dir" -- "$@"
}

# fabric_procs DIR: pids of live processes that belong to the fabric in
# DIR: those naming DIR on their command line or attached to its ibsim
# socket (as the plugin's helpers are).  Only looks, never signals.
fabric_procs() {
	local dir=$1 sock p cmd
	sock=$(sed -n 's/^IBSIM_SOCKNAME=//p' "$dir/sim.state" 2>/dev/null)
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" != "$$" ] || continue
		[ "${p#/proc/}" != "$BASHPID" ] || continue
		grep -q '^State:[[:space:]]*Z' "$p/status" 2>/dev/null && continue
		cmd=$(tr '\0' ' ' 2>/dev/null < "$p/cmdline") || continue
		[ -n "$cmd" ] || continue
		if [[ $cmd == *"$dir"* ]] ||
		   { [ -n "$sock" ] &&
		     tr '\0' '\n' 2>/dev/null < "$p/environ" |
			grep -qx "IBSIM_SOCKNAME=$sock"; }; then
			echo "${p#/proc/} $cmd"
		fi
	done
}

# wait_until SECONDS CMD...: succeeds as soon as CMD does, fails when it
# has not within SECONDS.
wait_until() {
	local limit=$1 end
	shift
	end=$((SECONDS + limit))
	while :; do
		"$@" > /dev/null 2>&1 && return 0
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# count_matches FILE ERE: how many lines of FILE match ERE (0 if none or
# no such file).
count_matches() {
	local n
	n=$(grep -cE "$2" "$1" 2>/dev/null) || true
	printf '%s\n' "${n:-0}"
}

# fabric_topology DIR: the fabric as ibnetdiscover sees it, one line each:
# "SWLID desc DESC", "SWLID PORT H NAME" (an HCA on that switch port) and
# "SWLID PORT S PEERLID PEERPORT" (a switch-to-switch link).
fabric_topology() {
	sim_diag "$1" ibnetdiscover 2> /dev/null | awk '
		/^Switch/ {
			lid = $0; sub(/.* lid /, "", lid); sub(/ .*/, "", lid)
			d = $0; sub(/^[^#]*# "/, "", d); sub(/".*/, "", d)
			print lid, "desc", d; sw = 1; next
		}
		/^(Ca|Rt)/ { sw = 0; next }
		sw && /^\[/ {
			p = $1; gsub(/[^0-9]/, "", p)
			d = $0; sub(/^[^#]*# "/, "", d); sub(/".*/, "", d)
			if ($2 ~ /^"H-/) { print lid, p, "H", d; next }
			pp = $2; sub(/.*\[/, "", pp); sub(/\].*/, "", pp)
			pl = $0; sub(/.* lid /, "", pl); sub(/ .*/, "", pl)
			print lid, p, "S", pl, pp
		}'
}

# fabric_smp_errors SWLID RATE [ATTR]: ibsim (the fabric of $SIM_DIR)
# drops RATE % of the SMPs of attribute ATTR (default 0x1b,
# MulticastForwardingTable) to and from switch SWLID: at 100 the switch
# stops answering them, at 0 it answers again.
fabric_smp_errors() {
	local desc
	desc=$(fabric_topology "$SIM_DIR" |
		awk -v l="$1" '$1 == l && $2 == "desc" { print $3; exit }')
	[ -n "$desc" ] || { diag "fabric_smp_errors: no switch LID $1"; return 1; }
	"$IBMCAST_SIM" console --dir "$SIM_DIR" -- Error "\"S-$desc\"" "$2" \
		"${3:-0x1b}"
}

# fabric_leaf_of NODE: the LID of the switch NODE's HCA hangs off.
fabric_leaf_of() {
	fabric_topology "$SIM_DIR" |
		awk -v n="$1" '$3 == "H" && $4 == n { print $1; exit }'
}

# fabric_mft_rows DIR TOPOFILE: "MLID SWLID PORT" for every port set in any
# switch's MFT, as ibroute -M reads it (switches from fabric_topology).
fabric_mft_rows() {
	local l
	for l in $(awk '$2 == "desc" { print $1 }' "$2"); do
		sim_diag "$1" ibroute -M "$l" 2> /dev/null |
			awk -v lid="$l" '
			/Ports: / { c0 = index($0, "Ports: ") + 7; next }
			/^0x[cCdDeEfF]/ {
				m = tolower($1)
				for (p = 0; c0 + 2 * p <= length($0); p++)
					if (substr($0, c0 + 2 * p, 1) == "x")
						print m, lid, p
			}'
	done
}

# hostlist_expand EXPR: one name a line for a simple Slurm hostlist
# ("node[1-4,9]" or a single name), for comparing with what tools print.
hostlist_expand() {
	local h=$1 r a b pre parts
	if [[ $h =~ ^([a-z]+)\[([0-9,-]+)\]$ ]]; then
		pre=${BASH_REMATCH[1]}
		IFS=, read -ra parts <<< "${BASH_REMATCH[2]}"
		for r in "${parts[@]}"; do
			a=${r%-*} b=${r#*-}
			seq -f "$pre%g" "$a" "$b"
		done
	else
		echo "$h"
	fi
}

# mft_entries MLID...: member HCAs plus switches holding any port of the
# MLIDs, summed, as the switches' MFTs say (mftwatch; the fabric's env
# sourced). A route left only on a spine switch counts too.
mft_entries() {
	# shellcheck disable=SC2046
	on_fabric "$top_builddir/sim-fabric/ibmcast-mftwatch" reach \
		$(printf -- '--mlid %s ' "$@") 2> /dev/null |
		jq '[.mlids[] | (.members | length) + (.switches | length)] |
			add // 0'
}

# mft_wipe MLID...: clears the MLIDs at every position of every switch
# holding them (ibmcast-mftcorrupt --wipe), as if no SM had ever written
# them; fails if a write did not take. Only a new SM's writes can then
# bring them back, where ibsim would otherwise keep the old SM's.
mft_wipe() {
	local m l rc=0
	for m in "$@"; do
		for l in $(on_fabric "$top_builddir/sim-fabric/ibmcast-mftwatch" \
			reach --mlid "$m" 2> /dev/null | jq -r '.mlids[0].switches[]'); do
			on_fabric "$top_builddir/sim-fabric/ibmcast-mftcorrupt" \
				--lid "$l" --mlid "$m" --wipe > /dev/null || rc=1
		done
	done
	return "$rc"
}

# install_for_others PROG DIR: a copy of PROG, DIR/$(basename PROG), that
# unprivileged users can run where the build tree is out of their reach
# (DIR is made world-readable). Not in a subshell: under scripts/test --asan the sanitizer's
# suppression files are copied there too and the *_OPTIONS point at the
# copies: an instrumented program that cannot read them refuses to run.
install_for_others() {
	local prog=$1 dir=$2 v supp
	chmod 755 "$dir"
	install -m 755 "$prog" "$dir/${prog##*/}"
	for v in ASAN_OPTIONS LSAN_OPTIONS; do
		supp=$(sed -n 's/.*suppressions=\([^:]*\).*/\1/p' <<< "${!v:-}")
		[ -n "$supp" ] && [ -f "$supp" ] || continue
		[ "$supp" = "$dir/$v.supp" ] && continue
		install -m 644 "$supp" "$dir/$v.supp"
		export "$v=${!v//$supp/$dir/$v.supp}"
	done
}

# as USER CMD...: runs CMD as USER, with no supplementary groups.
as() {
	local user=$1 group
	shift
	group=$(id -gn "$user")
	setpriv --reuid="$user" --regid="$group" --clear-groups "$@"
}

# run_ctl [as USER] ARGS...: runs $CTL (an ibmcastctl, for another USER
# one from install_for_others) with ARGS; sets OUT, ERR and RC (its
# standard error passes through $tmp/err).
run_ctl() {
	local pre=()
	if [ "$1" = as ]; then
		pre=(as "$2")
		shift 2
	fi
	RC=0
	OUT=$("${pre[@]}" "$CTL" "$@" 2> "$tmp/err") || RC=$?
	ERR=$(cat "$tmp/err")
}

# on_fabric CMD...: runs CMD attached to the fabric whose DIR/env is
# sourced, as the SM's HCA: like ibmcast-sim diag without the launcher in
# between (which matters when a watcher must start polling at once).
on_fabric() {
	LD_PRELOAD=$IBMCAST_SIM_PRELOAD SIM_HOST=$IBMCAST_SIM_HOST \
		IBSIM_SOCKNAME=$IBSIM_SOCKNAME "$@"
}
