#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The plugin never says ready while an independent poller of the switches'
# MFTs still sees a route missing, with MFT readback on and off: a ready
# before the last SMP read that still returned an entry other than the
# final one was sent fails (mftwatch's resolution is one SMP round trip).
# The positive control: for most jobs the poller did see entries not yet
# final, so the comparison is made close to where programming ended. For
# that ibsim is stopped (SIGSTOP) from before each reserve until the job's
# watcher has queued its first reads, so that they are not all answered
# after OpenSM's writes however slowly the client side runs (the sanitizer
# build), and OpenSM sends one SMP at a time (max_wire_smps=1).

# shellcheck disable=SC1091
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

plugin_built || skip_all "osm-plugin/.libs/libibmcast_osm.so not built"
need_cmd ibsim ibsim-utils
need_cmd opensm opensm
need_cmd jq jq
CTL=$top_builddir/tools/ibmcastctl
WATCH=$top_builddir/sim-fabric/ibmcast-mftwatch
need_file "$CTL" "tools/ibmcastctl"
need_file "$WATCH" "sim-fabric/ibmcast-mftwatch"
need_file "$IBMCAST_FATTREE" "ibmcast-fattree"

HOSTS=648
# job hostlist groups: sizes from two nodes to the whole fabric, pools up
# to 64 groups (mftwatch's limit), run three at a time so that each SM
# pass has other jobs' routes to program too.
JOBS_A=(
	1 'node[1-2]' 8		2 'node[1-18]' 16	3 'node[18-19]' 32
	4 'node[1-648]' 64	5 'node[100-163]' 8	6 'node[5,77,300,647]' 48
	7 'node[1-324]' 32	8 'node[325-648]' 32	9 'node[10-500]' 64
	10 'node[1-648]' 16	11 'node[200-217]' 64	12 'node[1,648]' 64
	13 'node[37-72]' 32	14 'node[1-100,500-600]' 48	15 'node[2-647]' 64
	16 'node[400-403]' 8	17 'node[1-648]' 32	18 'node[50-250]' 64
	19 'node[1-648]' 64	20 'node[9,99,199,299,399,499,599]' 32
	21 'node[300-350]' 16
)
JOBS_B=(
	31 'node[1-648]' 64	32 'node[1-50]' 32	33 'node[600-648]' 48
	34 'node[1-648]' 32	35 'node[3,333,633]' 64	36 'node[100-400]' 64
)
NA=$((${#JOBS_A[@]} / 3))
NB=$((${#JOBS_B[@]} / 3))
plan $((1 + 2 * NA + 1 + 1 + 2 * NB + 1 + 1))

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibmcast-rnb.XXXXXX")
at_exit "rm -rf '$tmp'"
cd "$tmp" || bail_out "cd $tmp"

# Watchers are stopped with SIGTERM, never SIGKILL: a killed ibsim client
# keeps its slot.
WATCHERS=()
stop_watchers() {
	local p
	for p in "${WATCHERS[@]}"; do
		kill -TERM "$p" 2> /dev/null && wait "$p" 2> /dev/null
	done
	WATCHERS=()
}
at_exit stop_watchers

# mlids_of REPLY: the comma list of a reserve reply's MLIDs, without a
# fork: the watcher should start polling as soon as the reply is in.
mlids_of() {
	local s=$1 out= re='"mlid":"(0x[0-9a-f]+)"'
	while [[ $s =~ $re ]]; do
		out+=${out:+,}${BASH_REMATCH[1]}
		s=${s#*"${BASH_REMATCH[0]}"}
	done
	printf '%s\n' "$out"
}

# start_watcher K HOSTLIST: a watcher on fifo K that discovers now and
# reads its MLIDs later; sets WFD[K] to the fifo's write end. Its first
# reads wait out the hold on ibsim: 1 s before a try is sent again.
declare -A WFD WPID
start_watcher() {
	local k=$1 fd
	rm -f "$tmp/fifo.$k" "$tmp/w.$k" "$tmp/w.$k.err"
	mkfifo "$tmp/fifo.$k"
	on_fabric "$WATCH" watch --mlids-from-stdin --interval-us 0 \
		--smp-timeout-ms 1000 --timeout-ms 30000 \
		--nodes "$(hostlist_expand "$2" | paste -sd,)" \
		< "$tmp/fifo.$k" > "$tmp/w.$k" 2> "$tmp/w.$k.err" &
	WPID[$k]=$!
	WATCHERS+=($!)
	exec {fd}> "$tmp/fifo.$k"
	WFD[$k]=$fd
}

# discovered K...: every watcher has finished discovery (30 s at most).
discovered() {
	local k i left
	for ((i = 0; i < 300; i++)); do
		left=
		for k in "$@"; do
			grep -q 'reading MLIDs' "$tmp/w.$k.err" 2> /dev/null ||
				left+=" $k"
		done
		[ -n "$left" ] || return 0
		sleep 0.1
	done
	diag "watchers$left did not finish discovery: $(cat "$tmp"/w.*.err)"
	return 1
}

# hold_ibsim / release_ibsim: stop ibsim, and let it run again. Bounded:
# the caller releases as soon as the watcher's reads are queued, and the
# fabric's cleanup never finds it stopped.
IBSIM_HELD=
hold_ibsim() {
	local pid
	read -r pid _ < "$SIM_DIR/pids/ibsim" && kill -STOP "$pid" &&
		IBSIM_HELD=$pid
}
release_ibsim() {
	[ -z "$IBSIM_HELD" ] || kill -CONT "$IBSIM_HELD"
	IBSIM_HELD=
}
at_exit release_ibsim

# reads_sent K: watcher K has sent its first reads (30 s at most).
reads_sent() {
	wait_until 30 grep -q 'first reads sent' "$tmp/w.$1.err" ||
		diag "watcher $1 sent no reads: $(cat "$tmp/w.$1.err")"
}

SEEN_BUILDING=0
# run_jobs TRIPLES...: batches of three jobs, each with its watcher; two
# assertions per job.
run_jobs() {
	local a=("$@") i k job hl ng r w fd st ready after wj
	for ((i = 0; i < ${#a[@]}; i += 9)); do
		for ((k = i; k < i + 9 && k < ${#a[@]}; k += 3)); do
			start_watcher "${a[k]}" "${a[k + 1]}"
		done
		discovered $(for ((k = i; k < i + 9 && k < ${#a[@]}; k += 3)); do
			echo "${a[k]}"; done)
		for ((k = i; k < i + 9 && k < ${#a[@]}; k += 3)); do
			job=${a[k]} hl=${a[k + 1]} ng=${a[k + 2]}
			hold_ibsim
			r=$("$CTL" --json reserve "$job" --nodes "$hl" \
				--groups "$ng" 2> "$tmp/err.$job")
			fd=${WFD[$job]}
			mlids_of "$r" >&"$fd"
			exec {fd}>&-
			reads_sent "$job"
			release_ibsim
			echo "$r" > "$tmp/r.$job"
		done
		for ((k = i; k < i + 9 && k < ${#a[@]}; k += 3)); do
			job=${a[k]} hl=${a[k + 1]} ng=${a[k + 2]}
			w=$("$CTL" --json wait "$job" --timeout-ms 30000 \
				2>> "$tmp/err.$job")
			wait "${WPID[$job]}"
			wj=$(cat "$tmp/w.$job")
			st=$(jq -r .job.state <<< "$w" 2>&1)
			ready=$(jq -r '.job.ready_mono_ns // 0' <<< "$w" 2>&1)
			after=$(jq -r '.complete_after_mono_ns // "none"' \
				<<< "$wj" 2>&1)
			is "$st/$(jq -r .complete <<< "$wj" 2>&1)" "ready/true" \
				"job $job ($hl, $ng groups): ready, and mftwatch saw every route complete" ||
				diag "reserve: $(head -c 600 "$tmp/r.$job")" \
					"wait: $(head -c 600 <<< "$w")" \
					"errors: $(cat "$tmp/err.$job" "$tmp/w.$job.err")" \
					"watch: $(head -c 1500 <<< "$wj")"
			ok "$([[ $after =~ ^[0-9]+$ ]] && [ "$ready" -ge "$after" ]
				echo $?)" \
				"job $job: ready_mono_ns $ready >= complete_after_mono_ns $after" ||
				diag "ready $(( (after - ready) / 1000 )) us before a read that still returned an entry other than the final one was sent" \
					"watch: $wj"
			diag "job $job: ready after $(jq -r .job.reserve_to_ready_us <<< "$w") us; watcher: $(jq -c '{polls, last_poll_us, smps, smp_errors}' <<< "$wj" 2>&1), saw building: $([[ $after =~ ^[1-9] ]] && echo yes || echo no)"
			[[ $after =~ ^[1-9] ]] && SEEN_BUILDING=$((SEEN_BUILDING + 1))
		done
		WATCHERS=()
		for ((k = i; k < i + 9 && k < ${#a[@]}; k += 3)); do
			"$CTL" release "${a[k]}" > /dev/null 2>&1 ||
				diag "release ${a[k]} failed"
		done
	done
}

# --- mode 1: the default plugin (readback on) ----------------------------
diag "fabric A: $HOSTS hosts, default radix, readback on"
sim_up --hosts "$HOSTS" --opensm-opt max_wire_smps=1
ok $? "fabric A ($HOSTS hosts) is up" || bail_out "fabric A did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
run_jobs "${JOBS_A[@]}"
# Without this the comparison could hold only because every watcher started
# too late to see anything but finished routes.
majority_seen_building() {
	ok "$([ $((2 * SEEN_BUILDING)) -gt "$1" ]; echo $?)" \
		"$2: mftwatch caught entries still being programmed for $SEEN_BUILDING of $1 jobs (a majority)"
}
majority_seen_building "$NA" "readback on"

# --- mode 2: readback=0 (OpenSM's completed MADs alone) -------------------
stop_watchers
diag "fabric B: $HOSTS hosts, readback=0"
sim_up --hosts "$HOSTS" --plugin-opt readback=0 --opensm-opt max_wire_smps=1
ok $? "fabric B ($HOSTS hosts, readback=0) is up" || bail_out "fabric B did not come up"
# shellcheck disable=SC1091
. "$SIM_DIR/env"
is "$("$CTL" --json status | jq -r .server.readback)" false \
	"fabric B: the plugin reports readback off"
SEEN_BUILDING=0
run_jobs "${JOBS_B[@]}"
majority_seen_building "$NB" "readback=0"
