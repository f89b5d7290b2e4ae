# SPDX-License-Identifier: BSD-3-Clause
# libjob transports and bootstraps (included from libjob/local.mk).

# sim: an endpoint of the simulated fabric's data plane daemon.
libjob_libibmcast_la_SOURCES += libjob/tr_sim.c libjob/ud_addr.h \
	libjob/ud_peers.h sim-fabric/dp_client.c sim-fabric/dp_client.h

# Bootstraps: ibmcast-run's rendezvous socket, Slurm's PMI2 ($(PMI2_LIBS),
# in local.mk's LIBADD; -ENOSYS without it) and the default chooser.
libjob_libibmcast_la_SOURCES += libjob/bootstrap.c libjob/bootstrap.h \
	libjob/bootstrap_sock.c libjob/bootstrap_wire.h \
	libjob/bootstrap_pmi2.c

# verbs: real hardware (UD QP, ibv_attach_mcast, AHs on the MLID).
if BUILD_VERBS
libjob_libibmcast_la_SOURCES += libjob/tr_verbs.c libjob/sa_join_umad.c \
	libjob/sa_join_umad.h
# Its test builds the transport in: the installed library hides it.
check_PROGRAMS += tests/libjob/test_verbs
TESTS += tests/libjob/test_verbs
tests_libjob_test_verbs_SOURCES = tests/libjob/test_verbs.c libjob/tr_verbs.c \
	libjob/sa_join_umad.c libjob/strerror.c
# (own CPPFLAGS: its objects get their own names, apart from libtool's)
tests_libjob_test_verbs_CPPFLAGS = $(AM_CPPFLAGS)
tests_libjob_test_verbs_LDADD = libjob/libibmcast_core.la \
	common/libibmcast_common.la $(VERBS_LIBS) -lpthread
endif
