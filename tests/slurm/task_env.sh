#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run as a Slurm task by the slurm_*.sh tests: records the task's IBMCAST_*
# variables in DIR/env.RANK, then, if DIR/hold exists, waits until it is
# removed (so the test can look at the live reservation).
#   task_env.sh DIR [crash]   (crash: rank 0 dies of SIGSEGV once every
#                              task of the step has written its record)
dir=$1
rank=${SLURM_PROCID:-x}
{
	echo "NODENAME=$SLURMD_NODENAME"
	echo "STEP=$SLURM_JOB_ID.$SLURM_STEP_ID"
	env | grep '^IBMCAST_' | sort
} > "$dir/.env.$rank.tmp"
# Published by rename, under a name the tests' env.* globs only match once
# complete (they count and read these files while tasks still run).
mv "$dir/.env.$rank.tmp" "$dir/env.$rank"
n=0
while [ -e "$dir/hold" ] && [ $n -lt 600 ]; do
	sleep 0.2
	n=$((n + 1))
done
if [ "${2:-}" = crash ] && [ "$rank" = 0 ]; then
	# Crash only once every task of the step has published its record:
	# Slurm kills the others when one dies of a signal.
	n=0
	while [ "$(ls "$dir"/env.* 2> /dev/null | wc -l)" -lt "${SLURM_NTASKS:-1}" ] &&
	      [ $n -lt 300 ]; do
		sleep 0.2
		n=$((n + 1))
	done
	kill -SEGV $$
fi
exit 0
