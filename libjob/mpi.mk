# SPDX-License-Identifier: BSD-3-Clause
# libibmcast_mpi: the PMPI shim that LD_PRELOAD (or -libmcast_mpi) puts
# under unmodified MPI programs (included from Makefile.am).

mpi_shim_sources = libjob/mpi_shim.c libjob/mpi_map.h \
	libjob/mpi_shim_abi.c libjob/mpi_shim_abi.h
# Only the MPI entry points it wraps: libibmcast stays behind its own map
# (a version script: libtool's -export-symbols-regex does not see
# indirect functions).
mpi_shim_ldflags = -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/libjob/mpi_shim.map
EXTRA_DIST += libjob/mpi_shim.map

# The same shim against Open MPI's mpi.h (configure --with-openmpi-shim).
if BUILD_OMPI_SHIM
lib_LTLIBRARIES += libjob/libibmcast_ompi.la
libjob_libibmcast_ompi_la_SOURCES = $(mpi_shim_sources)
libjob_libibmcast_ompi_la_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_SHIM_CFLAGS)
libjob_libibmcast_ompi_la_LDFLAGS = $(mpi_shim_ldflags)
libjob_libibmcast_ompi_la_LIBADD = libjob/libibmcast.la $(OMPI_SHIM_LIBS) -ldl
endif

if BUILD_MPI_SHIM
lib_LTLIBRARIES += libjob/libibmcast_mpi.la
libjob_libibmcast_mpi_la_SOURCES = $(mpi_shim_sources)
libjob_libibmcast_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
libjob_libibmcast_mpi_la_LDFLAGS = $(mpi_shim_ldflags)
libjob_libibmcast_mpi_la_LIBADD = libjob/libibmcast.la $(MPI_LIBS) -ldl
dist_man_MANS += man/libibmcast_mpi.7

# MPI programs that know nothing of ibmcast; mpi_shim.sh runs them with
# and without the shim preloaded on the simulated fabric.
check_PROGRAMS += tests/mpi/bcast_mpi
tests_mpi_bcast_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_bcast_mpi_LDADD = $(MPI_LIBS)
check_PROGRAMS += tests/mpi/barrier_mpi
tests_mpi_barrier_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_barrier_mpi_LDADD = $(MPI_LIBS)
check_PROGRAMS += tests/mpi/allgather_mpi tests/mpi/allreduce_mpi
tests_mpi_allgather_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_allgather_mpi_LDADD = $(MPI_LIBS)
tests_mpi_allreduce_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_allreduce_mpi_LDADD = $(MPI_LIBS) -lm
check_PROGRAMS += tests/mpi/semantics_mpi
tests_mpi_semantics_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_semantics_mpi_LDADD = $(MPI_LIBS)
check_PROGRAMS += tests/mpi/threads_mpi
tests_mpi_threads_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_threads_mpi_LDADD = $(MPI_LIBS) -lpthread
check_PROGRAMS += tests/mpi/progress_mpi
tests_mpi_progress_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_progress_mpi_LDADD = $(MPI_LIBS)
check_PROGRAMS += tests/mpi/threads_coll_mpi
check_PROGRAMS += tests/mpi/comm_kinds_mpi
tests_mpi_comm_kinds_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_comm_kinds_mpi_LDADD = $(MPI_LIBS)
tests_mpi_threads_coll_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_threads_coll_mpi_LDADD = $(MPI_LIBS) -lpthread
check_PROGRAMS += tests/mpi/prune_mpi
# One rank late before each collective, or dying (mpi_shim.sh).
check_PROGRAMS += tests/mpi/late_mpi
tests_mpi_late_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_late_mpi_LDADD = $(MPI_LIBS)
# The chaos soak's program (tests/soak/soak.sh runs it; its short variant
# is tests/integration/soak_short.sh).
check_PROGRAMS += tests/soak/soak_mpi
tests_soak_soak_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_soak_soak_mpi_LDADD = $(MPI_LIBS)
tests_mpi_prune_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_prune_mpi_LDADD = $(MPI_LIBS)
if BUILD_OSM_PLUGIN
TESTS += tests/integration/mpi_shim.sh tests/integration/mpi_prune.sh
if BUILD_OMPI_COLL
TESTS += tests/integration/soak_short.sh
endif
if BUILD_SPANK
if BUILD_OMPI_COLL
TESTS += tests/integration/slurm_mpi_launch.sh
endif
endif
endif
# The MPI library's own MPI_Barrier, timed like barrier_check --timing;
# tests/bench/barrier.sh sets it beside libibmcast's barriers.
check_PROGRAMS += tests/mpi/barrier_time_mpi
tests_mpi_barrier_time_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_barrier_time_mpi_LDADD = $(MPI_LIBS)
endif
EXTRA_DIST += tests/soak/soak.sh
