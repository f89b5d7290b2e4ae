# SPDX-License-Identifier: BSD-3-Clause
# libjob transports and bootstraps (included from libjob/local.mk).

# sim: an endpoint of the simulated fabric's data plane daemon.
libjob_libibmcast_la_SOURCES += libjob/tr_sim.c sim-fabric/dp_client.c \
	sim-fabric/dp_client.h

# Bootstraps: ibmcast-run's rendezvous socket, Slurm's PMI2 ($(PMI2_LIBS),
# in local.mk's LIBADD; -ENOSYS without it) and the default chooser.
libjob_libibmcast_la_SOURCES += libjob/bootstrap.c libjob/bootstrap.h \
	libjob/bootstrap_sock.c libjob/bootstrap_wire.h \
	libjob/bootstrap_pmi2.c
