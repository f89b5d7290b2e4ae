# SPDX-License-Identifier: BSD-3-Clause
# mca_coll_ibmcast: the Open MPI 4.1 collective component over libibmcast,
# installed where Open MPI looks for components (included from Makefile.am).

if BUILD_OMPI_COLL
ompicomp_LTLIBRARIES = ompi/mca_coll_ibmcast.la
ompi_mca_coll_ibmcast_la_SOURCES = ompi/coll_ibmcast.h libjob/mpi_map.h \
	ompi/coll_ibmcast_component.c ompi/coll_ibmcast_module.c \
	ompi/coll_ibmcast_ops.c
ompi_mca_coll_ibmcast_la_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_INTERNAL_CPPFLAGS)
# Open MPI finds the component by this one symbol; libibmcast stays
# behind its own map.
ompi_mca_coll_ibmcast_la_LDFLAGS = -module -avoid-version -shared \
	-export-symbols-regex '^mca_coll_ibmcast_component$$'
ompi_mca_coll_ibmcast_la_LIBADD = libjob/libibmcast.la $(OMPI_LIBS)
dist_man_MANS += man/mca_coll_ibmcast.7

# MPI programs that know nothing of ibmcast, built as mpicc.openmpi
# builds them; ompi_coll.sh runs them under mpirun.openmpi with the
# component and without.
check_PROGRAMS += tests/mpi/bcast_ompi tests/mpi/barrier_ompi \
	tests/mpi/comms_ompi tests/mpi/allgather_ompi tests/mpi/allreduce_ompi \
	tests/mpi/semantics_ompi
tests_mpi_bcast_ompi_SOURCES = tests/mpi/bcast_mpi.c
tests_mpi_bcast_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_bcast_ompi_LDADD = $(OMPI_MPI_LIBS)
tests_mpi_barrier_ompi_SOURCES = tests/mpi/barrier_mpi.c
tests_mpi_barrier_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_barrier_ompi_LDADD = $(OMPI_MPI_LIBS)
tests_mpi_comms_ompi_SOURCES = tests/mpi/comms_mpi.c
tests_mpi_comms_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_comms_ompi_LDADD = $(OMPI_MPI_LIBS)
tests_mpi_allgather_ompi_SOURCES = tests/mpi/allgather_mpi.c
tests_mpi_allgather_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_allgather_ompi_LDADD = $(OMPI_MPI_LIBS)
tests_mpi_allreduce_ompi_SOURCES = tests/mpi/allreduce_mpi.c
tests_mpi_allreduce_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_allreduce_ompi_LDADD = $(OMPI_MPI_LIBS) -lm
tests_mpi_semantics_ompi_SOURCES = tests/mpi/semantics_mpi.c
tests_mpi_semantics_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_semantics_ompi_LDADD = $(OMPI_MPI_LIBS)
check_PROGRAMS += tests/mpi/comm_kinds_ompi
tests_mpi_comm_kinds_ompi_SOURCES = tests/mpi/comm_kinds_mpi.c
tests_mpi_comm_kinds_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_comm_kinds_ompi_LDADD = $(OMPI_MPI_LIBS)
check_PROGRAMS += tests/mpi/progress_ompi tests/mpi/late_ompi
tests_mpi_late_ompi_SOURCES = tests/mpi/late_mpi.c
tests_mpi_late_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_late_ompi_LDADD = $(OMPI_MPI_LIBS)
check_PROGRAMS += tests/soak/soak_ompi
tests_soak_soak_ompi_SOURCES = tests/soak/soak_mpi.c
tests_soak_soak_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_soak_soak_ompi_LDADD = $(OMPI_MPI_LIBS)
tests_mpi_progress_ompi_SOURCES = tests/mpi/progress_mpi.c
tests_mpi_progress_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_progress_ompi_LDADD = $(OMPI_MPI_LIBS)
# MPI_THREAD_MULTIPLE: communicators created by threads at once, and
# collectives from several threads on different communicators at once.
check_PROGRAMS += tests/mpi/threads_ompi tests/mpi/threads_coll_ompi
tests_mpi_threads_ompi_SOURCES = tests/mpi/threads_mpi.c
tests_mpi_threads_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_threads_ompi_LDADD = $(OMPI_MPI_LIBS) -lpthread
tests_mpi_threads_coll_ompi_SOURCES = tests/mpi/threads_coll_mpi.c
tests_mpi_threads_coll_ompi_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_MPI_CFLAGS)
tests_mpi_threads_coll_ompi_LDADD = $(OMPI_MPI_LIBS) -lpthread
# (the Fortran program is built by ompi_coll.sh when mpifort.openmpi exists)
EXTRA_DIST += tests/mpi/bcast_f.f90 tests/mpi/coll_f.f90
if BUILD_OSM_PLUGIN
TESTS += tests/integration/ompi_coll.sh
endif
endif
