# SPDX-License-Identifier: BSD-3-Clause
# Sourced after tests/lib.sh: a real Slurm cluster on one machine (munged,
# slurmctld and one `slurmd -N nodeK` per node, all on loopback with free
# ports and their own slurm.conf), stopped at exit even when a test fails.
#
# Usage:  slurm_need              skip unless Slurm's daemons are installed
#         slurm_up N [spank ARGS]  start node[1-N]; with "spank" our plugin
#                                 is in plugstack.conf (spank_line). Uses the
#                                 fabric's munged when IBMCAST_MUNGE_SOCKET
#                                 is set (. $SIM_DIR/env first), else its own.
#         slurm_down              stop everything slurm_up started
#         slurm_plugstack TEXT    rewrite plugstack.conf (read by each new
#                                 srun/sbatch and slurmstepd)
#         slurm_job_state JOBID   COMPLETED, FAILED, ... (scontrol)
#         slurm_wait_job JOBID S  wait up to S seconds for the job to end
#         slurm_logs              every daemon log, for diag
#         pool_json ID | pool_is ID STATE | pool_gone ID   (control server)
# Sets SLURM_DIR and exports SLURM_CONF for srun, sbatch, squeue, scontrol.

# shellcheck shell=bash disable=SC2034

SLURM_DIR=
_slurm_pids=()

# The SPANK plugin the tests load. Slurm runs the plugin's job prolog and
# epilog in a fresh `slurmstepd spank prolog` whose environment slurmd
# builds from scratch, so nothing can preload the ASan runtime there and an
# ASan-instrumented plugin cannot load. The sanitizer suite
# (IBMCAST_SANITIZE set by scripts/test --asan) therefore runs Slurm with
# the plain suite's plugin (IBMCAST_PLAIN_BUILDDIR), while the tasks, tools
# and the rest of ibmcast are its instrumented builds.
SPANK_SO=$top_builddir/spank/.libs/ibmcast_spank.so
if [[ ${IBMCAST_SANITIZE:-} == *address* ]]; then
	SPANK_SO=${IBMCAST_PLAIN_BUILDDIR:+$IBMCAST_PLAIN_BUILDDIR/spank/.libs/ibmcast_spank.so}
	[ -n "$SPANK_SO" ] && [ -e "$SPANK_SO" ] ||
		skip_all "sanitizer build: Slurm's prolog cannot load an ASan-instrumented SPANK plugin, and no plain build (IBMCAST_PLAIN_BUILDDIR) provides one"
fi

# The task every slurm_*.sh test runs (records its IBMCAST_* variables).
TASK=$top_srcdir/tests/slurm/task_env.sh

# Skips unless Slurm can run here as root; fails if our plugin is not built.
slurm_need() {
	local c
	for c in slurmctld slurmd srun sbatch squeue scontrol munged; do
		command -v "$c" > /dev/null 2>&1 ||
			skip_all "$c not installed (Debian packages slurmctld slurmd slurm-client munge)"
	done
	[ "$(id -u)" = 0 ] ||
		skip_all "slurmd must run as root to launch tasks"
	need_file "$SPANK_SO" ibmcast_spank.so
}

# Ports for the daemons are picked outside the kernel's ephemeral range
# (ip_local_port_range), so that no client socket, ours or anyone's, is
# handed one by connect() between our choosing it and slurmd binding it;
# and each is held by a lock file in IBMCAST_PORT_LOCKS (one directory for
# every test on this machine, whatever its build or worktree) until this
# test exits, so that two tests running at once never pick the same one.
IBMCAST_PORT_LOCKS=${IBMCAST_PORT_LOCKS:-/tmp/ibmcast-test-ports}

# _port_candidate LO HI: a random port in 10000..LO-1 or HI+1..65535.
_port_candidate() {
	local lo=$1 hi=$2 a=0 b=0 r
	[ "$lo" -gt 10000 ] && a=$((lo - 10000))
	[ "$hi" -lt 65535 ] && b=$((65535 - hi))
	[ $((a + b)) -gt 0 ] || return 1
	r=$(((RANDOM << 15 | RANDOM) % (a + b)))
	if [ "$r" -lt "$a" ]; then
		echo $((10000 + r))
	else
		echo $((hi + 1 + r - a))
	fi
}

# _slurm_free_port: a TCP port outside the ephemeral range that no socket
# uses (/proc/net/tcp{,6}) and no live test holds, now locked for this
# test (lock files name the owning test shell, $$, also from a subshell).
_slurm_free_port() {
	local lo hi p hex i fd owner
	read -r lo hi < /proc/sys/net/ipv4/ip_local_port_range || return 1
	mkdir -p "$IBMCAST_PORT_LOCKS" || return 1
	exec {fd}>> "$IBMCAST_PORT_LOCKS/.lock" || return 1
	if ! flock -w 30 "$fd"; then
		exec {fd}>&-
		return 1
	fi
	for ((i = 0; i < 500; i++)); do
		p=$(_port_candidate "$lo" "$hi") || break
		if [ -e "$IBMCAST_PORT_LOCKS/$p" ]; then
			# Held by a live test (this one included): skip it.
			# A dead test's lock is taken over.
			owner=$(cat "$IBMCAST_PORT_LOCKS/$p" 2> /dev/null)
			[ -n "$owner" ] && kill -0 "$owner" 2> /dev/null &&
				continue
		fi
		hex=$(printf ':%04X ' "$p")
		grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2> /dev/null &&
			continue
		echo $$ > "$IBMCAST_PORT_LOCKS/$p" || break
		exec {fd}>&-
		echo "$p"
		return 0
	done
	exec {fd}>&-
	return 1
}

# Registered before slurm_up's slurm_down, so it runs after it: the ports
# are given back once nothing of ours listens on them any more.
_slurm_release_ports() {
	local f
	for f in "$IBMCAST_PORT_LOCKS"/[0-9]*; do
		[ "$(cat "$f" 2> /dev/null)" = "$$" ] && rm -f "$f"
	done
	return 0
}
at_exit _slurm_release_ports

_slurm_start_munged() {
	local m=$SLURM_DIR/munge
	mkdir -p "$m" && chmod 755 "$m"
	if command -v mungekey > /dev/null 2>&1; then
		mungekey --create --keyfile="$m/munge.key" 2> /dev/null
	else
		(umask 077 && head -c 1024 /dev/urandom > "$m/munge.key")
	fi
	chmod 600 "$m/munge.key"
	munged --socket="$m/munge.sock" --key-file="$m/munge.key" \
		--pid-file="$m/munged.pid" --seed-file="$m/munged.seed" \
		--log-file="$m/munged.log" 2> "$m/munged.err" ||
		{ diag "munged failed: $(cat "$m/munged.err")"; return 1; }
	wait_until 10 test -s "$m/munged.pid" || return 1
	_slurm_pids+=("munged:$(cat "$m/munged.pid")")
	SLURM_MUNGE_SOCKET=$m/munge.sock
}

_slurm_write_conf() {
	local n=$1 ctl=$2 k
	cat > "$SLURM_DIR/slurm.conf" <<EOF
# Written by tests/lib-slurm.sh for one test.
ClusterName=ibmctest$$
# Job ids of their own: Slurm's PMIx plugin names a step's namespace
# slurm.pmix.JOB.STEP and Open MPI derives its process names and session
# directories from it; two tests' clusters on one host must not both run
# job 10 under the same names.
FirstJobId=$((($$ % 60000) * 1000 + 1))
SlurmctldHost=localhost
SlurmctldPort=$ctl
SlurmdPort=${_slurm_node_port[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/spool/slurmd.%n.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.%n.log
PlugStackConfig=$SLURM_DIR/plugstack.conf
# Per node: srun --mpi=pmix makes its client directory under TmpFS, and
# the nodes of one host would collide in one /tmp.
TmpFS=$SLURM_DIR/tmpfs/%n
PrologFlags=Alloc
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
ReturnToService=2
KillWait=2
MessageTimeout=20
SlurmctldDebug=info
SlurmdDebug=debug
EOF
	for ((k = 1; k <= n; k++)); do
		echo "NodeName=node$k NodeHostname=localhost Port=${_slurm_node_port[k]} CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1"
	done >> "$SLURM_DIR/slurm.conf"
	echo "PartitionName=test Nodes=node[1-$n] Default=YES MaxTime=INFINITE State=UP" \
		>> "$SLURM_DIR/slurm.conf"
	# The PMIx plugin's fence between nodes as a ring: with the default
	# one, whose nodes here all share one host, Open MPI 4.1 tasks under
	# srun --mpi=pmix now and then got a peer's first message while
	# still in MPI_Init's modex fence, before their PML had registered
	# for it, and died of SIGSEGV at address 0 (about 1 run in 25 of
	# 4 tasks, with or without coll/ibmcast loaded; 0 in 150 with the
	# ring).
	echo "PMIxCollFence=ring" > "$SLURM_DIR/mpi.conf"
}

slurm_plugstack() {
	printf '%s\n' "$1" > "$SLURM_DIR/plugstack.conf"
}

slurm_logs() {
	local f
	for f in "$SLURM_DIR"/log/*.log; do
		[ -e "$f" ] || continue
		echo "==== $f"
		grep -E "ibmcast|error" "$f" | grep -v "pmix\|MailProg\|state file\|Trying backup" | tail -n 25
	done
}

_slurm_alive() {
	kill -0 "$1" 2> /dev/null &&
		! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2> /dev/null
}

slurm_down() {
	local i e name pid
	[ -n "$SLURM_DIR" ] || return 0
	# Last started first: slurmds, then slurmctld, then munged.
	for ((i = ${#_slurm_pids[@]} - 1; i >= 0; i--)); do
		e=${_slurm_pids[i]}
		name=${e%%:*} pid=${e#*:}
		_slurm_alive "$pid" || continue
		kill "$pid" 2> /dev/null
		wait_until 15 eval "! _slurm_alive $pid" ||
			{ diag "$name ($pid) ignored SIGTERM; killing"; kill -9 "$pid" 2> /dev/null; }
	done
	_slurm_pids=()
	# slurmstepds outlive a killed slurmd; they name our spool dir.
	for pid in $(pgrep -f "slurmstepd" 2> /dev/null); do
		tr '\0' '\n' 2> /dev/null < "/proc/$pid/environ" |
			grep -qx "SLURM_CONF=$SLURM_DIR/slurm.conf" &&
			kill -9 "$pid" 2> /dev/null
	done
	if [ -n "${IBMCAST_KEEP_TMP:-}" ]; then
		diag "kept $SLURM_DIR (IBMCAST_KEEP_TMP is set)"
	else
		rm -rf "$SLURM_DIR"
	fi
	SLURM_DIR=
}

# slurm_up N [spank ARGS...]: node[1-N] up and idle, or returns 1 with the
# logs as diag. With "spank", plugstack.conf loads our plugin (spank_line
# ARGS): it must exist before slurmd starts, which runs the SPANK prolog
# and epilog only if its own stack has them.
slurm_up() {
	local n=$1 ctl k pid
	shift
	SLURM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-slurm.XXXXXX") ||
		bail_out "mktemp failed"
	chmod 755 "$SLURM_DIR"
	at_exit slurm_down
	mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/log" "$SLURM_DIR/spool"
	export SLURM_CONF=$SLURM_DIR/slurm.conf
	SLURM_MUNGE_SOCKET=${IBMCAST_MUNGE_SOCKET:-}
	if [ -z "$SLURM_MUNGE_SOCKET" ]; then
		_slurm_start_munged || return 1
	fi
	slurm_plugstack ""
	if [ "${1:-}" = spank ]; then
		shift
		slurm_plugstack "$(spank_line "$@")"
	fi
	ctl=$(_slurm_free_port) || return 1
	declare -ga _slurm_node_port=()
	for ((k = 1; k <= n; k++)); do
		_slurm_node_port[k]=$(_slurm_free_port) || return 1
	done
	_slurm_write_conf "$n" "$ctl"
	diag "slurm: slurmctld on port $ctl, node[1-$n] on ports ${_slurm_node_port[*]}"
	slurmctld -c -i -f "$SLURM_CONF" 2> "$SLURM_DIR/log/slurmctld.err" ||
		{ diag "slurmctld failed: $(cat "$SLURM_DIR/log/slurmctld.err")"; return 1; }
	wait_until 20 test -s "$SLURM_DIR/slurmctld.pid" ||
		{ diag "slurmctld wrote no pid file"; slurm_logs | diag; return 1; }
	_slurm_pids+=("slurmctld:$(cat "$SLURM_DIR/slurmctld.pid")")
	for ((k = 1; k <= n; k++)); do
		mkdir -p "$SLURM_DIR/spool/node$k" "$SLURM_DIR/tmpfs/node$k"
		slurmd -f "$SLURM_CONF" -N "node$k" \
			2> "$SLURM_DIR/log/slurmd.node$k.err" ||
			{ diag "slurmd -N node$k failed: $(cat "$SLURM_DIR/log/slurmd.node$k.err")"; return 1; }
		wait_until 20 test -s "$SLURM_DIR/spool/slurmd.node$k.pid" ||
			{ diag "slurmd node$k wrote no pid file"; return 1; }
		pid=$(cat "$SLURM_DIR/spool/slurmd.node$k.pid")
		_slurm_pids+=("slurmd-node$k:$pid")
	done
	# Every node idle (not unknown, down or drained) before any job.
	if ! wait_until 60 _slurm_all_idle "$n"; then
		diag "nodes not idle after 60 s: $(sinfo -h -N -o '%N %T' 2>&1 | paste -sd' ')"
		slurm_logs | diag
		return 1
	fi
}

_slurm_all_idle() {
	[ "$(sinfo -h -N -t idle -o '%N' 2> /dev/null | sort -u | wc -l)" = "$1" ]
}

slurm_job_state() {
	scontrol show job "$1" 2> /dev/null |
		sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

_slurm_job_done() {
	case $(slurm_job_state "$1") in
	PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | "") return 1 ;;
	esac
}

slurm_wait_job() {
	wait_until "$2" _slurm_job_done "$1"
}

# Slurm commands in a clean environment, as a user would type them: the
# test's own IBMCAST_* variables must not leak into the tasks.
slurm_cmd() {
	env -i PATH="$PATH" HOME="${HOME:-/root}" SLURM_CONF="$SLURM_CONF" \
		TMPDIR="${TMPDIR:-/tmp}" "$@"
}

# pool_json ID: the control server's view of reservation ID (the test has
# sourced the fabric's env), or an error object.
pool_json() {
	"$top_builddir/tools/ibmcastctl" --json status "$1" 2> /dev/null
}

# pool_is ID STATE: the control server holds pool ID in STATE. Also notes
# (in $SLURM_DIR/pools.seen) that ID was seen reserved, which pool_gone
# requires.
pool_is() {
	[ "$(pool_json "$1" | jq -r '.jobs[0].state // empty')" = "$2" ] ||
		return 1
	grep -qx "$1" "$SLURM_DIR/pools.seen" 2> /dev/null ||
		echo "$1" >> "$SLURM_DIR/pools.seen"
}

# pool_gone ID: the control server no longer knows pool ID, which an
# earlier pool_is saw reserved. A pool never seen fails: "gone" must not
# pass for one that never existed.
pool_gone() {
	if ! grep -qx "$1" "$SLURM_DIR/pools.seen" 2> /dev/null; then
		echo "pool_gone: pool $1 was never seen reserved" >&2
		return 1
	fi
	[ "$(pool_json "$1" | jq -r '.error // .jobs[0].state')" = unknown_job ]
}

# The id of a step-only pool (spank/pool.h): job << 5 | step % 32, top
# bit set.
step_pool_id() {
	echo $((0x80000000 | ($1 << 5) | ($2 % 32)))
}

# The plugstack.conf line for the fabric sourced from $SIM_DIR/env.
spank_line() {
	echo "required $SPANK_SO" \
		"server=$IBMCAST_SERVER_TCP munge_socket=$SLURM_MUNGE_SOCKET" \
		"statedir=$SLURM_DIR/ibmcast $*"
}
