# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# The options every benchmark (tests/bench/*.sh) takes, sourced before it
# parses its own, so that each says only what is its own:
#
#	while [ $# -gt 0 ]; do
#		case $1 in
#		--mine) ... ;;
#		*) bench_option "$@"; shift "$BENCH_SHIFT"; continue ;;
#		esac
#		shift
#	done
#
# bench_option ARGS...: takes $1 (and its value) if it is --out DIR (only
# for a benchmark that set OUT, its default), --builddir DIR, --keep or
# --help, and sets BENCH_SHIFT to the words used; prints the benchmark's
# usage and exits 64 on anything else.
# shellcheck disable=SC2034  # BENCH_SHIFT is the caller's
bench_option() {
	case $1 in
	--out)
		[ -n "${OUT+set}" ] || { usage >&2; exit 64; }
		OUT=${2:?--out needs a directory}
		BENCH_SHIFT=2 ;;
	--builddir)
		export IBMCAST_BUILDDIR=${2:?--builddir needs a directory}
		BENCH_SHIFT=2 ;;
	--keep) export IBMCAST_KEEP_TMP=1; BENCH_SHIFT=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 64 ;;
	esac
}
