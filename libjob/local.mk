# SPDX-License-Identifier: BSD-3-Clause
# Included by Makefile.am (one fragment per part, so parts are edited apart).

# --- libjob: libibmcast, the job library --------------------------------
# The protocol lives in a convenience library so the unit tests link the
# internals (loopback fault injection) that the installed library hides;
# libibmcast.la adds the transports and bootstraps (transports.mk) and
# exports only the public API (libibmcast.map).
noinst_LTLIBRARIES += libjob/libibmcast_core.la
libjob_libibmcast_core_la_SOURCES = \
	libjob/transport.h \
	libjob/wire.c libjob/wire.h \
	libjob/env.c libjob/env.h \
	libjob/tree.c libjob/tree.h \
	libjob/context.c libjob/context.h \
	libjob/comm.c libjob/comm.h \
	libjob/send.c libjob/send.h \
	libjob/dispatch.c libjob/dispatch.h \
	libjob/model.c libjob/model.h \
	libjob/rtt.c libjob/rtt.h \
	libjob/task.c libjob/task.h \
	libjob/live.c libjob/live.h \
	libjob/stages.c libjob/stages.h \
	libjob/request.c \
	libjob/progress.c \
	libjob/msg.c libjob/msg.h \
	libjob/bcast_op.c libjob/bcast_op.h \
	libjob/coll/coll.c libjob/coll/coll.h \
	libjob/coll/bcast.c libjob/coll/bcast.h \
	libjob/coll/bcast_node.c \
	libjob/coll/bcast_mcast.c \
	libjob/coll/bcast_binomial.c \
	libjob/coll/bcast_postal.c \
	libjob/coll/barrier.c libjob/coll/barrier.h \
	libjob/coll/barrier_nway.c \
	libjob/coll/barrier_mcast.c \
	libjob/xfer.c libjob/xfer.h \
	libjob/reduce.c libjob/reduce.h \
	libjob/coll/allgather.c libjob/coll/allgather.h \
	libjob/coll/allgather_ring.c \
	libjob/coll/allgather_rd.c libjob/coll/allgather_mcast.c \
	libjob/coll/allgather_shm.c \
	libjob/topo.c libjob/topo.h \
	libjob/shm.c libjob/shm.h \
	libjob/coll/allreduce.c libjob/coll/allreduce.h \
	libjob/coll/allreduce_rd.c libjob/coll/allreduce_rab.c \
	libjob/coll/allreduce_tree.c \
	libjob/coll/allreduce_shm.c \
	libjob/tr_registry.c \
	libjob/tr_loopback.c \
	libjob/mode.c libjob/mode.h \
	libjob/pool_keep.c libjob/pool_keep.h \
	libjob/mcast_test.c libjob/mcast_test.h \
	libjob/mcast_switch.c libjob/mcast_switch.h \
	libjob/grow.c libjob/grow.h \
	libjob/prune.c libjob/prune.h \
	libjob/prune_keep.c libjob/prune_keep.h \
	libjob/reshape_req.c libjob/reshape_req.h \
	libjob/sa_mcmr.c libjob/sa_mcmr.h
libjob_libibmcast_core_la_LIBADD = common/libibmcast_common.la -lpthread

lib_LTLIBRARIES = libjob/libibmcast.la
libjob_libibmcast_la_SOURCES = libjob/strerror.c
libjob_libibmcast_la_LDFLAGS = -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/libjob/libibmcast.map
libjob_libibmcast_la_LIBADD = libjob/libibmcast_core.la \
	$(VERBS_LIBS) $(PMI2_LIBS) -lpthread
libjob_libibmcast_la_DEPENDENCIES = libjob/libibmcast_core.la \
	$(srcdir)/libjob/libibmcast.map
include_ibmcastdir = $(includedir)/ibmcast
include_ibmcast_HEADERS = include/ibmcast/ibmcast.h include/ibmcast/sim.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = libjob/ibmcast.pc
EXTRA_DIST += libjob/libibmcast.map libjob/ibmcast.pc.in

dist_man_MANS += man/ibmcast.7 man/ibmc_init.3 man/ibmc_comm_create.3 \
	man/ibmc_bcast.3 man/ibmc_comm_get_stats.3 man/ibmc_barrier.3 \
	man/ibmc_test.3 man/ibmc_set_wait_hook.3 man/ibmc_comm_set_algo.3 man/ibmc_allgather.3 \
	man/ibmc_allreduce.3 man/ibmc_sim_clock_ns.3 man/ibmc_sim_compute.3 \
	man/ibmc_sim_return_ns.3 man/ibmc_sim_settle.3

# --- libjob unit tests: ranks are threads on the loopback transport -----
libjob_tests = \
	tests/libjob/test_wire \
	tests/libjob/test_tree \
	tests/libjob/test_env \
	tests/libjob/test_exports \
	tests/libjob/test_bcast \
	tests/libjob/test_bcast_loss \
	tests/libjob/test_bcast_fallback \
	tests/libjob/test_barrier \
	tests/libjob/test_early_return \
	tests/libjob/test_late_create \
	tests/libjob/test_late_root \
	tests/libjob/test_allgather \
	tests/libjob/test_node_shm \
	tests/libjob/test_bcast_node \
	tests/libjob/test_sa_mcmr \
	tests/libjob/test_modes
check_PROGRAMS += $(libjob_tests)
TESTS += $(libjob_tests)
libjob_test_ldadd = libjob/libibmcast_core.la common/libibmcast_common.la \
	-lpthread
libjob_test_helpers = tests/libjob/lbjob.c tests/libjob/lbjob.h
tests_libjob_test_wire_LDADD = $(libjob_test_ldadd)
tests_libjob_test_tree_LDADD = $(libjob_test_ldadd)
tests_libjob_test_env_LDADD = $(libjob_test_ldadd)
# The installed library: only the public API is exported.
tests_libjob_test_exports_LDADD = libjob/libibmcast.la -ldl
tests_libjob_test_bcast_SOURCES = tests/libjob/test_bcast.c \
	$(libjob_test_helpers)
tests_libjob_test_bcast_LDADD = $(libjob_test_ldadd)
tests_libjob_test_bcast_loss_SOURCES = tests/libjob/test_bcast_loss.c \
	$(libjob_test_helpers)
tests_libjob_test_bcast_loss_LDADD = $(libjob_test_ldadd)
tests_libjob_test_bcast_fallback_SOURCES = \
	tests/libjob/test_bcast_fallback.c $(libjob_test_helpers)
tests_libjob_test_bcast_fallback_LDADD = $(libjob_test_ldadd)
tests_libjob_test_barrier_SOURCES = tests/libjob/test_barrier.c \
	$(libjob_test_helpers)
tests_libjob_test_barrier_LDADD = $(libjob_test_ldadd)
tests_libjob_test_early_return_SOURCES = tests/libjob/test_early_return.c \
	$(libjob_test_helpers)
tests_libjob_test_early_return_LDADD = $(libjob_test_ldadd)
tests_libjob_test_late_create_SOURCES = tests/libjob/test_late_create.c \
	$(libjob_test_helpers)
tests_libjob_test_late_create_LDADD = $(libjob_test_ldadd)
tests_libjob_test_late_root_SOURCES = tests/libjob/test_late_root.c \
	$(libjob_test_helpers)
tests_libjob_test_late_root_LDADD = $(libjob_test_ldadd)
tests_libjob_test_allgather_SOURCES = tests/libjob/test_allgather.c \
	$(libjob_test_helpers)
tests_libjob_test_allgather_LDADD = $(libjob_test_ldadd)
tests_libjob_test_node_shm_SOURCES = tests/libjob/test_node_shm.c \
	$(libjob_test_helpers)
tests_libjob_test_node_shm_LDADD = $(libjob_test_ldadd)
tests_libjob_test_bcast_node_SOURCES = tests/libjob/test_bcast_node.c \
	$(libjob_test_helpers)
tests_libjob_test_bcast_node_LDADD = $(libjob_test_ldadd)
# libibmad reads the MADs back with its own field tables.
tests_libjob_test_sa_mcmr_LDADD = $(libjob_test_ldadd) -libmad -libumad
tests_libjob_test_modes_SOURCES = tests/libjob/test_modes.c \
	$(libjob_test_helpers)
tests_libjob_test_modes_LDADD = $(libjob_test_ldadd)

include $(srcdir)/libjob/transports.mk
