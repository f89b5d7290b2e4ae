# SPDX-License-Identifier: BSD-3-Clause
# libibmcast_mpi: the PMPI shim that LD_PRELOAD (or -libmcast_mpi) puts
# under unmodified MPI programs (included from Makefile.am).

if BUILD_MPI_SHIM
lib_LTLIBRARIES += libjob/libibmcast_mpi.la
libjob_libibmcast_mpi_la_SOURCES = libjob/mpi_shim.c libjob/mpi_map.h
libjob_libibmcast_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
# Only the MPI entry points it wraps: libibmcast stays behind its own map.
libjob_libibmcast_mpi_la_LDFLAGS = -version-info 0:0:0 \
	-export-symbols-regex '^MPI_'
libjob_libibmcast_mpi_la_LIBADD = libjob/libibmcast.la $(MPI_LIBS)
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
if BUILD_OSM_PLUGIN
TESTS += tests/integration/mpi_shim.sh
endif
# The MPI library's own MPI_Barrier, timed like barrier_check --timing;
# tests/bench/barrier.sh sets it beside libibmcast's barriers.
check_PROGRAMS += tests/mpi/barrier_time_mpi
tests_mpi_barrier_time_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_barrier_time_mpi_LDADD = $(MPI_LIBS)
endif
