#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark (not a test): allreduce time and link bytes of every
# libibmcast algorithm beside MPICH's MPI_Allreduce; the same runs and
# table as tests/bench/allgather.sh (see its --help) for the other
# collective, with the target for the multicast result.
IBMCAST_BENCH_COLL=allreduce exec "$(dirname "${BASH_SOURCE[0]}")/allgather.sh" "$@"
