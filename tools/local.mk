# SPDX-License-Identifier: BSD-3-Clause
# tools added after the foundation (included from Makefile.am).

# ibmcast-run: the launcher of jobs on the simulated fabric without Slurm;
# its rendezvous server speaks libjob/bootstrap_wire.h.
bin_PROGRAMS += tools/ibmcast-run
tools_ibmcast_run_SOURCES = tools/ibmcast-run.c libjob/bootstrap_wire.h
tools_ibmcast_run_LDADD = common/libibmcast_common.la
dist_man_MANS += man/ibmcast-run.1

# bcast_check: broadcasts from every root and verifies every byte, through
# the installed library's public API only; the libjob_* integration tests
# and tests/bench/bcast_links.sh run it under ibmcast-run.
check_PROGRAMS += tests/libjob/bcast_check
tests_libjob_bcast_check_SOURCES = tests/libjob/bcast_check.c \
	tests/libjob/check_util.c tests/libjob/check_util.h
tests_libjob_bcast_check_LDADD = libjob/libibmcast.la -lpthread
# early_exit_check: a member leaves right after its broadcast returned
# (finalize or vanish); run by libjob_early_exit.sh.
check_PROGRAMS += tests/libjob/early_exit_check
tests_libjob_early_exit_check_LDADD = libjob/libibmcast.la
EXTRA_DIST += tests/lib-libjob.sh tests/lib-pool-keep.sh
# live_check: a late member is waited for, a dead one reported (live.h);
# run by libjob_liveness.sh.
check_PROGRAMS += tests/libjob/live_check
tests_libjob_live_check_SOURCES = tests/libjob/live_check.c \
	tests/libjob/check_util.c tests/libjob/check_util.h
tests_libjob_live_check_LDADD = libjob/libibmcast.la

# bcast_skew: the time ranks spend inside ibmc_bcast when they call it at
# random times after a barrier (seed 001's process skew); a benchmark
# program for tests/bench/bcast_skew.sh, not a test.
check_PROGRAMS += tests/libjob/bcast_skew
tests_libjob_bcast_skew_SOURCES = tests/libjob/bcast_skew.c \
	tests/libjob/check_util.c tests/libjob/check_util.h
tests_libjob_bcast_skew_LDADD = libjob/libibmcast.la
if BUILD_OSM_PLUGIN
TESTS += tests/integration/libjob_bcast.sh
TESTS += tests/integration/libjob_early_exit.sh
TESTS += tests/integration/libjob_liveness.sh
# Modeled time (README, "Modeled time on the simulated fabric").
TESTS += tests/integration/model_closed_forms.sh \
	tests/integration/model_host_independent.sh \
	tests/integration/model_order_independent.sh \
	tests/integration/model_contention.sh
if BUILD_SPANK
TESTS += tests/integration/libjob_pmi2.sh
endif
endif

# barrier_check: barriers whose entries and exits every rank records on
# the host's one clock, checked by rank 0 (max(enter) <= min(leave)); run
# by libjob_barrier.sh and tests/bench/barrier.sh under ibmcast-run.
check_PROGRAMS += tests/libjob/barrier_check
tests_libjob_barrier_check_SOURCES = tests/libjob/barrier_check.c \
	tests/libjob/check_util.c tests/libjob/check_util.h
tests_libjob_barrier_check_LDADD = libjob/libibmcast.la
if BUILD_OSM_PLUGIN
TESTS += tests/integration/libjob_barrier.sh
endif

# coll_check: allgathers and allreduces on several communicators at once,
# every block and every element verified, results compared across ranks;
# run by libjob_allgather.sh and tests/bench/allgather.sh, allreduce.sh.
check_PROGRAMS += tests/libjob/coll_check
tests_libjob_coll_check_SOURCES = tests/libjob/coll_check.c \
	tests/libjob/check_util.c tests/libjob/check_util.h
tests_libjob_coll_check_LDADD = libjob/libibmcast.la -lpthread -lm
if BUILD_OSM_PLUGIN
TESTS += tests/integration/libjob_allgather.sh
TESTS += tests/integration/libjob_bcast_node.sh
endif

# modes_check: one communicator of a given mode (sm, pool, lazy, basic,
# p2p), broadcasts verified, multicast state and testing counters per rank;
# run by libjob_modes.sh and tests/bench/comm_modes.sh.
check_PROGRAMS += tests/libjob/modes_check
tests_libjob_modes_check_SOURCES = tests/libjob/modes_check.c \
	tests/libjob/check_util.c tests/libjob/check_util.h
tests_libjob_modes_check_LDADD = libjob/libibmcast.la
if BUILD_OSM_PLUGIN
TESTS += tests/integration/libjob_modes.sh
TESTS += tests/integration/libjob_grow.sh
TESTS += tests/integration/libjob_prune.sh
endif

# pool_keep_check: mode pool's keeper step by step (a communicator takes
# the pool's group, its other nodes leave it, the slot is replaced, the
# next communicator takes the replacement, the one after finds the pool
# empty; --stop-rank: a rank silent during the replacement); run by
# libjob_pool_keep.sh, libjob_pool_keep_retry.sh and
# libjob_pool_keep_silent.sh.
check_PROGRAMS += tests/libjob/pool_keep_check
tests_libjob_pool_keep_check_SOURCES = tests/libjob/pool_keep_check.c \
	tests/libjob/check_util.c tests/libjob/check_util.h
tests_libjob_pool_keep_check_LDADD = libjob/libibmcast.la
if BUILD_OSM_PLUGIN
TESTS += tests/integration/libjob_pool_keep.sh \
	tests/integration/libjob_pool_keep_retry.sh \
	tests/integration/libjob_pool_keep_silent.sh
endif

# bootstrap_check: the bootstraps alone (ibmcast-run's socket, PMI2 under
# srun), several allgather rounds verified; run by libjob_run.sh.
check_PROGRAMS += tests/libjob/bootstrap_check
tests_libjob_bootstrap_check_LDADD = libjob/libibmcast.la
TESTS += tests/integration/libjob_run.sh
dist_man_MANS += man/ibmc_bootstrap.3

# shm_crash_check: node shared-memory allgathers until a rank the test
# kills -9 makes them fail; run by libjob_shm_crash.sh.
check_PROGRAMS += tests/libjob/shm_crash_check
tests_libjob_shm_crash_check_SOURCES = tests/libjob/shm_crash_check.c \
	tests/libjob/check_util.c tests/libjob/check_util.h
tests_libjob_shm_crash_check_LDADD = libjob/libibmcast.la
if BUILD_OSM_PLUGIN
TESTS += tests/integration/libjob_shm_crash.sh
endif
